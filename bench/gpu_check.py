"""The GPU checks behind bench/gpu_check.sh (see there)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

# The tiny random-init models are test scaffolding: they live under tests/.
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests" / "helpers")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--allow-cpu", action="store_true", help="run without CUDA (smoke test)")
    ap.add_argument("--small", action="store_true", help="a 4-layer, hidden-128 model")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    a = ap.parse_args()
    cuda = torch.cuda.is_available()
    if not cuda and not a.allow_cpu:
        raise SystemExit("no CUDA device: run on a GPU machine (or pass --allow-cpu --small)")
    device = "cuda" if cuda else "cpu"
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name() if cuda else 'cpu'}")

    from sentence_transformers import SentenceTransformer
    from tiny_models import make_tiny_model

    shape = (dict(layers=4, hidden=128, heads=2, intermediate=512) if a.small
             else dict(layers=12, hidden=768, heads=12, intermediate=3072))
    with tempfile.TemporaryDirectory() as d:
        path = make_tiny_model(f"{d}/bert", seed=0, **shape)
        model = SentenceTransformer(str(path), device=device)
        model.max_seq_length = a.seq_len
        texts = [f"query number {i} about retrieval with dense encoders " * 12 for i in range(
            a.batch_size * 3)]

        # 1. One bf16 MNRL training step (autocast, as the Trainer does with bf16=True).
        from sentence_transformers.sentence_transformer.losses import (
            MultipleNegativesRankingLoss,
        )

        loss_fn = MultipleNegativesRankingLoss(model)
        opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
        feats = [model.tokenize(texts[i * a.batch_size:(i + 1) * a.batch_size]) for i in range(3)]
        feats = [{k: v.to(device) for k, v in f.items() if hasattr(v, "to")} for f in feats]
        for _ in range(4):  # the first steps warm up kernels
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast(device, dtype=torch.bfloat16, enabled=True):
                loss = loss_fn(feats, None)
            loss.backward()
            opt.step()
            opt.zero_grad()
            if cuda:
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
        print(f"bf16 MNRL step (batch {a.batch_size} triples, seq {a.seq_len}): "
              f"{dt * 1e3:.1f} ms, {a.batch_size / dt:.1f} triples/s, loss {loss.item():.3f}")

        # 2. fp32 evaluation encode.
        model.eval()
        with torch.inference_mode():
            model.encode(texts[:a.batch_size], batch_size=a.batch_size)
            if cuda:
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            emb = model.encode(texts * 4, batch_size=a.batch_size, convert_to_numpy=True)
            if cuda:
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
        print(f"fp32 encode: {len(emb) / dt:.1f} texts/s (dtype {emb.dtype})")

        # 3. The latency ladder through the workflow's own protocol.
        import dataclasses

        from workflow_scripts.biencoder.latency import protocol as latency_protocol
        from workflow_scripts.biencoder.latency import summary as latency_summary
        from workflow_scripts.biencoder.model.truncation import load_truncated
        from workflow_scripts.core.settings import LatencyProfile, LatencySummary

        depths = [3, 6, 9, 12] if not a.small else [1, 2, 3, 4]
        models = {n: load_truncated(str(path), "top", n, device=device).eval() for n in depths}
        batch = {k: v.to(device) for k, v in latency_protocol.fixed_batch(
            models[depths[0]].tokenizer, a.batch_size, a.seq_len).items()}
        calls = {n: (lambda b, m=m: m(dict(b))) for n, m in models.items()}
        protocol = dataclasses.replace(
            LatencyProfile.from_json("{}"), warmup_calls=20, warmup_window=0, rounds=48,
            calls_per_round=1, discard_calls=1, encode_calls=0)
        df = latency_protocol.profile(calls, batch, protocol, run=0, device=device)
        summary = latency_summary.summarize(df, LatencySummary.from_json("{}"))
        print(summary[["depth", "p50_ms", "iqr_ms", "q", "q_ci_low", "q_ci_high",
                       "resid_iqr", "drift_range", "switch_cost_first"]].to_string(index=False))


if __name__ == "__main__":
    main()
