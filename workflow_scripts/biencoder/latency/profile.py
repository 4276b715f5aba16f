"""Latency profiling stage: encode latency per depth, all depths in one process.

Latency depends on the architecture, not on trained weights, so it runs on the truncated
base and needs no training upstream.

`profile`: one profiling run in one process (one job per run): every depth loaded, in eval
mode, with an explicit dtype; the torch thread count set before any torch work; then the
protocol of protocol.py (interleaved warm-up, balanced rounds until the relative ladder
is precise enough or a cap, encode() and tokenization in rounds of their own) on one fixed
batch, with the host's state around the timed rounds (host.py: torch version, device
name, threads, dtype, load average, other work on the host and on CUDA the GPU clocks)
added to every row; and what the stopping rule did (rounds, seconds, why it stopped, the
reached CI half-width of Q per depth).

The runs' statistics, coherence verdicts and canonical ladder are a stage of their own
(latency_summary.py), so that changing the analysis does not rerun the profiling.

Settings come as one JSON object (`--settings-json`); keys it leaves out take
config/schema.yaml's defaults (workflow_scripts.core.settings.LatencyProfile).

CLI: python -m workflow_scripts.biencoder.latency.profile --base SPEC --strategy top --depths 1 2 3
            --run 0 --threads 1 --settings-json '{...}' --out run0.parquet
"""

from __future__ import annotations

import argparse

from workflow_scripts.biencoder.latency import host as latency_host
from workflow_scripts.biencoder.latency import protocol as latency_protocol
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import LatencyProfile, SettingsError


def profile_run(a, settings: LatencyProfile) -> None:
    from workflow_scripts.core.runtime import set_threads

    set_threads(a.threads)  # before any torch work
    import torch

    from workflow_scripts.biencoder.model.truncation import load_truncated

    s = settings
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = getattr(torch, s.dtype)
    models = {}
    for d in sorted(a.depths):
        m = load_truncated(a.base, a.strategy, d, device=device).to(dtype).eval()
        m.max_seq_length = s.seq_len  # encode() truncates to the fixed length too
        models[d] = m
    tokenizer = models[min(models)].tokenizer
    texts = [latency_protocol.long_text(s.seq_len)] * s.batch_size
    batch = {k: v.to(device) for k, v in
             latency_protocol.fixed_batch(tokenizer, s.batch_size, s.seq_len).items()}
    # A fresh dict per call: SentenceTransformer.forward adds its outputs to the dict.
    calls = {d: (lambda b, m=m: m(dict(b))) for d, m in models.items()}

    def tokenize():
        latency_protocol.fixed_batch(tokenizer, s.batch_size, s.seq_len)

    aux = {"encode": {d: (lambda m=m: m.encode(texts, batch_size=s.batch_size,
                                               show_progress_bar=False))
                      for d, m in models.items()},
           "tokenize": dict.fromkeys(models, tokenize)}
    env, before = latency_host.environment(device, s.dtype), {}
    df, warmup = latency_protocol.profile_protocol(
        calls, batch, s, run=a.run, device=device, aux=aux,
        after_warmup=lambda: before.update(latency_host.snapshot(device, "before")))
    after = latency_host.snapshot(device, "after")
    for k, v in {**env, **before, **after}.items():
        df[k] = v
    df["warmup_calls"] = df["depth"].map({d: w["calls"] for d, w in warmup.items()})
    df["warmup_converged"] = df["depth"].map({d: w["converged"] for d, w in warmup.items()})
    contracts.write_parquet(a.out, df)
    print("environment:", {**env, **before, **after})
    print("warm-up:", warmup)
    first = df.iloc[0]
    print(f"rounds: {first['rounds_used']} in {first['rounds_seconds']:.1f} s, stopped at "
          f"{first['stop_reason']}; CI half-width of Q per depth:",
          df.groupby("depth")["half_width"].first().round(4).to_dict())
    fwd = df[(df["stage"] == "forward") & df["timed"]]
    print("p50 ms per depth:", (fwd.groupby("depth")["seconds"].median() * 1e3).round(3).to_dict())


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="One latency profiling run: all depths in this "
                                            "process.")
    p.add_argument("--base", required=True)
    p.add_argument("--strategy", required=True)
    p.add_argument("--depths", type=int, nargs="+", required=True)
    p.add_argument("--run", type=int, required=True, help="run r draws its orders with seed + r")
    p.add_argument("--threads", type=int, required=True, help="torch's CPU threads")
    p.add_argument("--settings-json", help="LatencyProfile settings (absent keys: defaults)")
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    try:
        settings = LatencyProfile.from_json(a.settings_json)
    except SettingsError as e:
        p.error(str(e))
    profile_run(a, settings)


if __name__ == "__main__":
    main()
