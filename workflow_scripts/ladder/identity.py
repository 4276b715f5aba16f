"""Frozen-stack identity check: how close is the random residual stack to the identity?

Per block l: ||f_l(h_l)|| / ||h_l|| (branch output over block input); whole stack:
||h_L - h_0|| / ||h_0|| and cos(h_L, h_0), h_0 = embedding output. Each is computed per
test example and averaged over examples, then mean +- std (ddof 1) over seeds.
"init" uses the model at initialization (the blocks every k=0 run keeps); "trained
embedding" uses the same blocks on the embedding a k=0 run learned (from the runs' metadata).

CLI: python -m workflow_scripts.ladder.identity --data D.npz --config d32L4:32:4 [...] \
        --seeds 42 123 456 [--runs k0 run parquets ...] [--threads 1] --out identity.json
"""

from __future__ import annotations

import argparse

import numpy as np

from workflow_scripts.core.contracts import write_json
from workflow_scripts.core.runtime import set_threads
from workflow_scripts.ladder import data as ladder_data
from workflow_scripts.ladder import model
from workflow_scripts.ladder.runs import read_run

STATS = ("block_ratio", "stack_rel_change", "stack_cos")


def aggregate(per_seed: dict) -> dict:
    """{seed: model.stack_identity(...)} -> mean and std (ddof 1) over seeds of every statistic."""
    out = {"seeds": sorted(per_seed), "per_seed": {str(s): v for s, v in per_seed.items()}}
    for stat in STATS:
        vals = np.array([per_seed[s][stat] for s in sorted(per_seed)], dtype=float)
        std = vals.std(0, ddof=1) if len(vals) > 1 else np.full_like(vals[0], np.nan)
        out[stat] = {"mean": vals.mean(0).tolist(), "std": np.asarray(std).tolist()}
    return out


def check(arrays, configs: dict, seeds, runs=()) -> dict:
    """configs: name -> (d, blocks); runs: paths of k=0 ladder runs (optional)."""
    x_tr, y_tr, x_te, y_te = model.tensors(arrays)
    n_classes = int(max(y_tr.max(), y_te.max())) + 1
    trained: dict = {}
    for path in runs:
        _, meta = read_run(path)
        if meta.get("kind") == "ladder" and meta.get("k") == 0:
            trained.setdefault(meta["config"], {}).setdefault(meta["method"], {})[
                meta["seed"]] = meta["identity_trained_embedding"]
    result = {}
    for name, (d, blocks) in configs.items():
        init = {s: model.stack_identity(model.build(x_tr.shape[1], d, blocks, n_classes, s), x_te)
                for s in seeds}
        result[name] = {
            "d": d, "blocks": blocks, "init": aggregate(init),
            "trained_embedding": {m: aggregate(v) for m, v in trained.get(name, {}).items()},
        }
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m workflow_scripts.ladder.identity")
    p.add_argument("--data", required=True)
    p.add_argument("--config", action="append", required=True, metavar="NAME:D:L")
    p.add_argument("--seeds", type=int, nargs="+", required=True)
    p.add_argument("--runs", nargs="*", default=[], help="k=0 ladder run parquets")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    set_threads(a.threads)
    configs = {}
    for spec in a.config:
        name, d, blocks = spec.split(":")
        configs[name] = (int(d), int(blocks))
    result = check(ladder_data.load(a.data), configs, a.seeds, a.runs)
    write_json(a.out, result)
    for name, r in result.items():
        i = r["init"]
        print(f"{name}: init ||h_L-h_0||/||h_0|| {i['stack_rel_change']['mean']:.3f}, "
              f"cos {i['stack_cos']['mean']:.3f}")


if __name__ == "__main__":
    main()
