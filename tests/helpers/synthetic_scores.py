"""Synthetic scores and result files of known shape, for the tests of the stages that read
them (stats, claims, report; test scaffolding, not a stage): one generator of a study's
per-query scores and one writer of each file kind, shared instead of rewritten per test."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workflow_scripts.core import contracts
from workflow_scripts.ladder import runs


def arm_scores(rng, mean, seeds=3, queries=300, seed_sd=0.01, query_sd=0.2, noise=0.05,
               query_effects=None):
    """An arm's scores, seeds x queries: its mean, a seed effect, a query effect (shared by the
    arms given the same `query_effects`: paired) and noise."""
    q = query_effects if query_effects is not None else rng.normal(0, query_sd, queries)
    return (mean + rng.normal(0, seed_sd, (seeds, 1)) + q[None, :]
            + rng.normal(0, noise, (seeds, len(q))))


def write_eval(path, recipe, depth, seed, bench, scores, qids, strategy="top", dim=None):
    """An evaluation's per-query file (every metric the scores, clipped to [0, 1]); with
    `dim`, a file of the dimension grid (its `dim` column; the path is the caller's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame({"query_id": qids, "recipe": recipe, "strategy": strategy, "depth": depth,
                       "seed": seed, "benchmark": bench,
                       **{m: np.clip(scores, 0, 1) for m in contracts.METRICS}})
    if dim is not None:
        df["dim"] = dim
    df.to_parquet(path)


def write_arm_evals(results, recipe, strategy, depth, seed, bench, scores, qids, dims=None):
    """An arm's per-query file at the full dimension and, for each {dim: shift} of `dims`,
    its dimension file (results/eval/.../dim<N>/), the scores shifted."""
    folder = f"{recipe}/{strategy}{depth}" + (f"/seed{seed}" if recipe != "base" else "")
    write_eval(results / f"eval/{folder}/{bench}.parquet", recipe, depth, seed, bench, scores,
               qids, strategy=strategy)
    for dim, shift in (dims or {}).items():
        write_eval(results / f"eval/{folder}/dim{dim}/{bench}.parquet", recipe, depth, seed,
                   bench, scores + shift, qids, strategy=strategy, dim=dim)


def ladder_runs(tmp_path):
    """BP climbs 0.6 -> 0.8 with k; DFA is flat; standalone runs copy BP's k=0/k=L."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, 200)
    paths, st = [], []
    for method, accs in (("bp", [0.6, 0.7, 0.8]), ("dfa", [0.5, 0.5, 0.5])):
        for k, acc in enumerate(accs):
            for seed in (1, 2, 3):
                correct = rng.random(200) < acc
                preds = np.where(correct, labels, (labels + 1) % 10)
                keys = dict(config="c", method=method, k=k, seed=seed, kind="ladder")
                p = tmp_path / f"{method}{k}{seed}.parquet"
                runs.write_run(p, labels=labels, preds=preds, keys=keys,
                               meta={"accuracy": correct.mean(), "blocks": 2,
                                     "train_accuracy": 1.0, "train_seconds": 0.1})
                paths.append(p)
                if method == "bp" and k in (0, 2):
                    kind = "frozen" if k == 0 else "full"
                    q = tmp_path / f"{kind}{seed}.parquet"
                    runs.write_run(q, labels=labels, preds=preds,
                                   keys={**keys, "kind": kind}, meta={"blocks": 2})
                    st.append(q)
    return paths, st
