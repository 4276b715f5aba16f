"""Compute stage: what each trained arm's training cost, from its trainings'
train_summary.json, into results/<study>/stats/compute.parquet (contracts.COMPUTE_TABLES).

The unit is optimizer steps x layers trained ("layer-steps") of one training, beside the
measured training seconds (train_summary.json's train_seconds: the trainer's run, without
imports and model loading). A per-depth arm trains one model per depth and seed; a train-once
arm one per seed, at the deepest depth, which serves every configured depth. A
fine-tuned-then-truncated arm trains nothing of its own: its cost is the trainings it cuts,
its strategy's per-depth models at the deepest depth (one per seed), counted in full for it
as for the per-depth arm they also serve; like a train-once arm's, they serve every depth
(`train_once` true). Each row is an arm at one depth with the training(s) behind it; the
arm_* columns total the whole arm (every depth and seed), so that the arms compare at a glance.

CLI: python -m workflow_scripts.biencoder.compute --summaries S1.json S2.json ... \
        --models-json '[[recipe, strategy, trained depth, seed], ...]' --depths 1 2 3 \
        [--truncated-json '[[recipe, truncated arm], ...]'] \
        --out results/<study>/stats/compute.parquet
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from workflow_scripts.core import contracts


def read_summaries(paths, models) -> pd.DataFrame:
    """One row per training: its (recipe, strategy, trained depth, seed) and its cost, each
    summary checked against the model it should describe."""
    if len(paths) != len(models):
        raise ValueError(f"{len(paths)} summaries but {len(models)} models")
    rows = []
    for path, (recipe, strategy, depth, seed) in zip(paths, models, strict=True):
        s = json.loads(Path(path).read_text(encoding="utf-8"))
        missing = [k for k in ("strategy", "depth", "seed", "steps", "layers_trained",
                               "train_seconds") if k not in s]
        if missing:
            raise contracts.DataError(f"{path}: missing key(s) {', '.join(missing)}")
        if (s["strategy"], int(s["depth"]), int(s["seed"])) != (strategy, int(depth), int(seed)):
            raise contracts.DataError(
                f"{path}: a training of {s['strategy']}{s['depth']} seed {s['seed']}, expected "
                f"{strategy}{depth} seed {seed}")
        rows.append({"recipe": recipe, "strategy": strategy, "trained_depth": int(depth),
                     "seed": int(seed), "steps": int(s["steps"]),
                     "layers_trained": int(s["layers_trained"]),
                     "train_seconds": float(s["train_seconds"])})
    df = pd.DataFrame(rows)
    df["layer_steps"] = df["steps"] * df["layers_trained"]
    return df


def truncated_trainings(trainings: pd.DataFrame, truncated, depths) -> pd.DataFrame:
    """The trainings each fine-tuned-then-truncated arm (recipe, arm strategy) cuts: its
    strategy's per-depth models at the deepest depth, as rows of that arm."""
    frames = []
    for recipe, strategy in truncated:
        cut = contracts.truncated_cut(strategy)
        rows = trainings[(trainings.recipe == recipe) & (trainings.strategy == cut)
                         & (trainings.trained_depth == max(depths))]
        if rows.empty:
            raise contracts.DataError(f"{recipe}/{strategy}: no training summary of "
                                      f"{recipe}/{cut}{max(depths)}, the model it cuts")
        frames.append(rows.assign(strategy=strategy))
    return pd.concat(frames, ignore_index=True) if frames else trainings.iloc[:0]


def compute_table(trainings: pd.DataFrame, depths, truncated=()) -> pd.DataFrame:
    """Per (recipe, strategy, depth): the trainings behind it and the arm's totals;
    `truncated`: (recipe, strategy) of the fine-tuned-then-truncated arms, at every depth
    but the deepest."""
    rows = []
    cuts = truncated_trainings(trainings, truncated, depths)
    for (recipe, strategy), arm in pd.concat([trainings, cuts]).groupby(["recipe", "strategy"],
                                                                        sort=False):
        cut = contracts.truncated_cut(strategy) is not None
        once = strategy in contracts.TRAIN_ONCE or cut
        totals = {"arm_trainings": len(arm), "arm_layer_steps": int(arm["layer_steps"].sum()),
                  "arm_train_seconds": float(arm["train_seconds"].sum())}
        for depth in sorted(depths)[:-1] if cut else sorted(depths):
            behind = arm if once else arm[arm["trained_depth"] == depth]
            if behind.empty:
                raise contracts.DataError(f"{recipe}/{strategy}{depth}: no training summary")
            for col in ("steps", "layers_trained", "trained_depth"):
                if behind[col].nunique() != 1:
                    raise contracts.DataError(f"{recipe}/{strategy}{depth}: the seeds' "
                                              f"trainings differ in {col}")
            first = behind.iloc[0]
            rows.append({"recipe": recipe, "strategy": strategy, "depth": int(depth),
                         "train_once": once, "trained_depth": int(first["trained_depth"]),
                         "seeds": len(behind), "steps": int(first["steps"]),
                         "layers_trained": int(first["layers_trained"]),
                         "layer_steps": int(first["layer_steps"]),
                         "train_seconds_mean": float(behind["train_seconds"].mean()),
                         "train_seconds_sum": float(behind["train_seconds"].sum()),
                         "depths_served": len(depths) if once else 1, **totals})
    return pd.DataFrame(rows, columns=list(contracts.COMPUTE_TABLES["compute"]))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Each trained arm's training cost.")
    ap.add_argument("--summaries", nargs="+", required=True,
                    help="every training's train_summary.json")
    ap.add_argument("--models-json", required=True,
                    help="[[recipe, strategy, trained depth, seed], ...], one per summary")
    ap.add_argument("--depths", nargs="+", type=int, required=True,
                    help="the configured depths (a train-once training serves them all)")
    ap.add_argument("--truncated-json", default="[]",
                    help="[[recipe, truncated arm strategy], ...]: the fine-tuned-then-"
                         "truncated arms, costed by the deepest per-depth trainings they cut")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    table = compute_table(read_summaries(a.summaries, json.loads(a.models_json)), a.depths,
                          [tuple(x) for x in json.loads(a.truncated_json)])
    contracts.write_parquet(a.out, table)
    print(f"{a.out}: {len(table)} rows")


if __name__ == "__main__":
    main()
