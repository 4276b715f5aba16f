"""The ladder's statistics: table, paired comparisons against k=0, cross-check.

- table: per (config, method, k) test accuracy, mean +- std (ddof 1) over seeds, and the CI
  over seeds x test examples with `ladder.stats.interval` (stats/intervals.py: calibrated by
  default), the Multi-Bootstrap's beside it (mb_ci_low, mb_ci_high).
- comparisons: per (config, method), each k against k=0, paired by seed (same seeds, same
  test examples): delta = acc(k) - acc(0), CI, one-sided p = P(delta <= 0). `full` marks
  k = L against k = 0.
- crosscheck: BP's ladder k=0 / k=L against the standalone frozen / full runs, per seed.

CLI: python -m workflow_scripts.ladder.stats --runs R.parquet ... --standalone S.parquet ... \
        --table T.parquet --comparisons C.parquet --crosscheck X.parquet \
        [--settings-json '{"nboot": 2000, "ci": 0.95, "seed": 0}'] [--threads 2]
--settings-json is core/settings.py's LadderStats; absent keys take
config/ladder.schema.yaml's defaults. --threads only sets how many groups of bootstrap
samples are computed at once (default: usable CPUs), never the numbers.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from workflow_scripts.core.contracts import DataError, write_parquet
from workflow_scripts.core.settings import LadderStats
from workflow_scripts.ladder import METHODS
from workflow_scripts.ladder.runs import collect, scores
from workflow_scripts.stats import intervals

KEYS = ["config", "method", "k"]
METHOD_ORDER = {m: i for i, m in enumerate(METHODS)}


def _order(df: pd.DataFrame, by: str) -> pd.DataFrame:
    """Rows by config, then bp/fa/dfa, then `by`."""
    return (df.assign(_m=df["method"].map(METHOD_ORDER).fillna(99))
            .sort_values(["config", "_m", by]).drop(columns="_m").reset_index(drop=True))


def ladder_table(rows, metas, *, interval: str, nboot: int, ci: float, seed: int,
                 threads: int | None = None) -> pd.DataFrame:
    out = []
    for (config, method, k), grp in rows.groupby(KEYS, sort=False):
        x, seeds = scores(grp)
        acc = x.mean(1)
        meta = metas[(metas.config == config) & (metas.method == method) & (metas.k == k)]
        r = intervals.mean(x, method=interval, ci=ci, resample=intervals.axes_for(len(seeds))[0],
                           nboot=nboot, seed=seed, threads=threads)
        out.append({
            "config": config, "method": method, "k": int(k), "blocks": int(meta.blocks.iloc[0]),
            "n_seeds": len(seeds), "seeds": ",".join(map(str, seeds)), "n_examples": x.shape[1],
            "mean": float(acc.mean()), "std": float(acc.std(ddof=1)) if len(acc) > 1 else np.nan,
            **{c: r[c] for c in ("ci_low", "ci_high", "ci", "nboot", "resample", "design",
                                 "mb_ci_low", "mb_ci_high")},
            "interval": r["interval"],
            "train_accuracy": float(meta.train_accuracy.mean()),
            "train_seconds": float(meta.train_seconds.mean()),
        })
    return _order(pd.DataFrame(out), "k")


def comparisons(rows, metas, *, interval: str, nboot: int, ci: float, seed: int,
                threads: int | None = None) -> pd.DataFrame:
    out = []
    for (config, method), grp in rows.groupby(["config", "method"], sort=False):
        blocks = int(metas[metas.config == config].blocks.iloc[0])
        base = grp[grp.k == 0]
        if base.empty:
            raise DataError(f"{config}/{method}: no k=0 runs to compare against")
        a, seeds_a = scores(base)
        for k in sorted(set(grp.k) - {0}):
            b, seeds_b = scores(grp[grp.k == k])
            r = intervals.compare(a, b, method=interval, design="paired",
                                  alternative="greater", ci=ci,
                                  resample=intervals.axes_for(len(seeds_a))[0], nboot=nboot,
                                  seed=seed, threads=threads, seeds_a=seeds_a, seeds_b=seeds_b)
            out.append({
                "config": config, "method": method, "blocks": blocks, "k_a": 0, "k_b": int(k),
                "contrast": f"k={k} vs k=0", "full": int(k) == blocks,
                "mean_a": float(a.mean()), "mean_b": float(b.mean()),
                **{c: r[c] for c in ("estimate", "ci_low", "ci_high", "p_value", "ci", "nboot",
                                     "design", "resample", "alternative", "threshold",
                                     "mb_ci_low", "mb_ci_high", "mb_p_value")},
                "interval": r["interval"],
            })
    return _order(pd.DataFrame(out), "k_b")


def crosscheck(rows, metas, st_rows, st_metas) -> pd.DataFrame:
    """Per (config, kind, seed): ladder BP at k=0 (frozen) / k=L (full) vs standalone."""
    out = []
    for _, m in st_metas.iterrows():
        k = 0 if m.kind == "frozen" else int(m.blocks)
        key = dict(config=m.config, method="bp", k=k, seed=m.seed)
        lad = rows[(rows.config == m.config) & (rows.method == "bp") & (rows.k == k)
                   & (rows.seed == m.seed)].sort_values("example_id")
        if lad.empty:
            raise DataError(f"no ladder run for the standalone {m.kind} run {key}")
        st = st_rows[(st_rows.config == m.config) & (st_rows.kind == m.kind)
                     & (st_rows.seed == m.seed)].sort_values("example_id")
        out.append({
            "config": m.config, "kind": m.kind, "k": k, "seed": int(m.seed),
            "ladder_accuracy": float(lad.correct.mean()),
            "standalone_accuracy": float(st.correct.mean()),
            "difference": float(lad.correct.mean() - st.correct.mean()),
            "same_predictions": float((lad.pred.to_numpy() == st.pred.to_numpy()).mean()),
        })
    return pd.DataFrame(out).sort_values(["config", "kind", "seed"]).reset_index(drop=True)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m workflow_scripts.ladder.stats")
    p.add_argument("--runs", nargs="+", required=True)
    p.add_argument("--standalone", nargs="*", default=[])
    p.add_argument("--settings-json", default="{}",
                   help="core/settings.py LadderStats as JSON; absent keys take "
                        "config/ladder.schema.yaml's defaults")
    p.add_argument("--threads", type=int, help="bootstrap threads (default: usable CPUs)")
    p.add_argument("--table", required=True)
    p.add_argument("--comparisons", required=True)
    p.add_argument("--crosscheck", required=True)
    a = p.parse_args(argv)
    settings = LadderStats.from_json(a.settings_json)
    rows, metas = collect(a.runs)
    opts = dict(interval=settings.interval, nboot=settings.nboot, ci=settings.ci,
                seed=settings.seed, threads=a.threads)
    table = ladder_table(rows, metas, **opts)
    write_parquet(a.table, table)
    write_parquet(a.comparisons, comparisons(rows, metas, **opts))
    cross = (crosscheck(rows, metas, *collect(a.standalone)) if a.standalone else
             pd.DataFrame(columns=["config", "kind", "k", "seed", "ladder_accuracy",
                                   "standalone_accuracy", "difference", "same_predictions"]))
    write_parquet(a.crosscheck, cross)
    print(table[["config", "method", "k", "mean", "std", "ci_low", "ci_high"]]
          .to_string(index=False))


if __name__ == "__main__":
    main()
