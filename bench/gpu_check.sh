#!/usr/bin/env bash
# GPU checks of the paper path on a CUDA machine: a bf16 MNRL training step, an fp32
# evaluation encode and the latency ladder, on a BERT-base-sized random-init model with the
# MiniLM package's uncased vocabulary (no hub needed). Prints throughput and the ladder.
#   bash bench/gpu_check.sh            (on a GPU machine, after `make install`)
#   bash bench/gpu_check.sh --allow-cpu --small   (a smoke run of the script itself)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
PYTHONPATH=. exec "$PY" bench/gpu_check.py "$@"
