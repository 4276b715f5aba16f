"""Statistics stage: intervals and tests over seeds x queries.

Every interval, p-value and equivalence test uses the configured `stats.interval` method
(stats/intervals.py: "calibrated" by default, or "multibootstrap"); every row also holds the
Multi-Bootstrap's interval (mb_ci_low, mb_ci_high, mb_p_value) beside it.

Reads every per-query evaluation parquet and writes results/<study>/stats/*.parquet:
  ci.parquet           CI of the mean metric per (recipe, strategy, depth), per benchmark and
                       across benchmarks ("all": stratified, unweighted mean of benchmarks)
  seeds.parquet        per-seed means (for the seed-variance figure)
  comparisons.parquet  trained vs untrained base (single-baseline; a train-once arm against
                       the base of strategy top, whose layers it starts from), depth vs depth
                       within a recipe (paired by seed), strategy vs strategy at each depth,
                       train once vs per depth (a train-once arm against strategy top of its
                       recipe at each depth, delta = train-once - per-depth, paired by seed),
                       fine-tuned-then-truncated vs per depth (the arm against the
                       per-depth strategy it cuts, delta = truncated - per-depth, paired by
                       seed: kind "truncated"),
                       recipe vs recipe at each depth (paired where the seeds are shared,
                       single-baseline where one side has one seed, a trained one's seed
                       noise borrowed from the multi-seed arms and named in `seed_noise`,
                       else unpaired); each with
                       joint, seed-only and example-only resampling, and a TOST equivalence
                       verdict |delta| < epsilon
  variance.parquet     share of the variance of the estimate from seeds vs from queries
  seeds_needed.parquet seeds for a target CI half-width and, against the arm's hardest
                       comparison partner, to detect a given delta
  agreement.parquet    instance-level agreement between seeds (top-1 hit; Spearman of metric)

CLI: python -m workflow_scripts.biencoder.stats --evals FILE... --out-dir results/<study>/stats \
        --settings-json '{"nboot": 2000, ...}' --budget-order short long --threads 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import pandas as pd

from workflow_scripts.biencoder.arm_intervals import ci_table, groups, seed_means
from workflow_scripts.core import contracts
from workflow_scripts.core.arms import Arm, build_arms, check_aligned, grid_gaps, load_evals
from workflow_scripts.core.contracts import (
    BASE,
    PER_DEPTH_REFERENCE,
    TRAIN_ONCE,
    base_strategy,
    truncated_cut,
)
from workflow_scripts.core.settings import Stats
from workflow_scripts.stats import borrowed_seeds, design, intervals
from workflow_scripts.stats import multibootstrap as mb


def seed_table(arms: dict) -> pd.DataFrame:
    rows = []
    for arm in arms.values():
        for bench, scores in groups(arm.scores):
            for s, m in zip(arm.seeds, seed_means(scores), strict=True):
                rows.append({"recipe": arm.recipe, "strategy": arm.strategy,
                             "depth": arm.depth, "benchmark": bench, "seed": s, "mean": m})
    return pd.DataFrame(rows)


def comparison_pairs(arms: dict, budget_order: list[str]) -> list[tuple[str, tuple, tuple]]:
    """(kind, key_a, key_b) for every comparison the report shows; delta = b - a."""
    pairs = []
    for key in arms:
        recipe, strategy, depth = key
        base = (BASE, base_strategy(strategy), depth)
        if recipe != BASE and base in arms:
            pairs.append(("trained_vs_base", base, key))
    recipes = contracts.order_recipes({k[0] for k in arms}, budget_order)
    strategies = sorted({k[1] for k in arms})
    # Depth vs depth within each recipe, and within the untrained base (one model per depth:
    # paired over the same queries, examples resampled).
    for recipe, strategy in itertools.product([*recipes, BASE], strategies):
        depths = sorted(d for r, s, d in arms if r == recipe and s == strategy)
        for shallow, deep in itertools.combinations(depths, 2):
            pairs.append(("depth", (recipe, strategy, shallow), (recipe, strategy, deep)))
    for recipe in recipes:  # depth strategies against each other at the same depth
        for pair in itertools.combinations(strategies, 2):
            kind, s_a, s_b = strategy_kind(*pair)
            for d in sorted({k[2] for k in arms}):
                if (recipe, s_a, d) in arms and (recipe, s_b, d) in arms:
                    pairs.append((kind, (recipe, s_a, d), (recipe, s_b, d)))
    for strategy in strategies:
        for r_a, r_b in itertools.combinations(recipes, 2):
            for d in sorted({k[2] for k in arms}):
                if (r_a, strategy, d) in arms and (r_b, strategy, d) in arms:
                    pairs.append(("recipe", (r_a, strategy, d), (r_b, strategy, d)))
    return pairs


def strategy_kind(s_a: str, s_b: str) -> tuple[str, str, str]:
    """(kind, a, b) of two strategies at equal depth: a train-once arm against per-depth
    training of `top` (the same layers) is "train_once" with b the train-once arm, so that
    delta = train-once - per-depth; a fine-tuned-then-truncated arm against the per-depth
    strategy it cuts is "truncated", b the truncated arm; any other pair is "strategy"."""
    once = [x for x in (s_a, s_b) if x in TRAIN_ONCE]
    if len(once) == 1 and PER_DEPTH_REFERENCE in (s_a, s_b):
        return "train_once", PER_DEPTH_REFERENCE, once[0]
    for per_depth, cut in ((s_a, s_b), (s_b, s_a)):
        if truncated_cut(cut) == per_depth:
            return "truncated", per_depth, cut
    return "strategy", s_a, s_b


def compare_arms(kind: str, a: Arm, b: Arm, s: Stats, threads: int | None = None,
                 study: dict | None = None) -> list[dict]:
    """The comparison rows of b - a, designed by stats/design.py as the claims' are. A
    trained one-seed arm against a multi-seed one is single-baseline with that arm fixed
    and, given the `study`'s arms, its seed noise borrowed from the others
    (design.borrowed_pool); `seed_noise` names the assumption, or says the noise is unknown
    or that a row is conditional on the one seed (the examples-only ablation)."""
    check_aligned(a, b)
    d = design.choose(a.seeds, b.seeds, (a.recipe != BASE, b.recipe != BASE))
    alternative = "two-sided"  # the p matches the two-sided CI beside it (also vs the base)
    one = [x for x in (a, b) if len(x.seeds) == 1 and x.recipe != BASE]
    study = study or {}
    counts = {k: len(x.seeds) for k, x in study.items()}
    compared = [(x.recipe, x.strategy, x.depth) for x in (a, b)]  # the study's keys
    rows = []
    for (bench, sa), (_, sb) in zip(groups(a.scores), groups(b.scores), strict=True):

        def layout(key, bench=bench):
            return dict(groups(study[key].scores))[bench]

        terms = design.borrowed_pool(counts, compared, layout) if one else []
        sa, sb = d.sides(sa, sb)
        for resample in d.axes:
            common = dict(method=s.interval, design=d.name, resample=resample, nboot=s.nboot,
                          seed=s.seed, threads=threads, **d.seeds_kw(a.seeds, b.seeds))
            borrowed = terms if d.borrow and "seeds" in resample else []
            row = {"kind": kind, "a": a.label, "b": b.label, "recipe_a": a.recipe,
                   "recipe_b": b.recipe, "strategy": a.strategy, "strategy_b": b.strategy,
                   "depth_a": a.depth,
                   "depth_b": b.depth, "benchmark": bench,
                   **intervals.compare(sa, sb, alternative=alternative, ci=s.ci,
                                       borrowed=borrowed, **common)}
            if one:
                row["seed_noise"] = borrowed_seeds.caveat(", ".join(x.label for x in one),
                                                          terms, bool(borrowed))
            if resample == d.axes[0]:  # the widest also gets the TOST
                row.update(intervals.equivalence(sa, sb, epsilon=s.equivalence_epsilon,
                                                 alpha=intervals.alpha_of(s.ci),
                                                 borrowed=borrowed, **common))
            rows.append(row)
    return rows


def comparison_rows(arms: dict, pairs, s: Stats, threads: int | None = None) -> list[dict]:
    """The rows of every comparison in `pairs` (comparison_pairs) of the study's `arms`."""
    return [row for kind, ka, kb in pairs
            for row in compare_arms(kind, arms[ka], arms[kb], s, threads, arms)]


def variance_table(arms: dict, s: Stats, threads: int | None = None) -> pd.DataFrame:
    rows = []
    for arm in arms.values():
        if len(arm.seeds) < 2:
            continue
        scores = arm.scores if len(arm.scores) > 1 else next(iter(arm.scores.values()))
        for part in mb.variance_parts(scores, nboot=s.nboot, seed=s.seed, threads=threads):
            rows.append({"recipe": arm.recipe, "strategy": arm.strategy, "depth": arm.depth,
                         "benchmark": part.pop("group"), **part})
    return pd.DataFrame(rows)


def seeds_needed_table(arms: dict, s: Stats, pairs=()) -> pd.DataFrame:
    """Per arm and benchmark (the planner works on [seeds, queries] matrices). The seeds to
    detect stats.detect_delta belong to a pair of arms (the arm x query interaction counts,
    and one arm cannot show it): planned against every arm it is compared with in `pairs`
    (comparison_pairs; both of >= 2 seeds), the most seeds any of them needs, `delta_versus`
    naming that arm and `arm_example_sd` the pair's interaction sd; none without such a
    partner (`delta_versus` empty)."""
    partners: dict = {}
    for _, ka, kb in pairs:
        if min(len(arms[ka].seeds), len(arms[kb].seeds)) >= 2:
            partners.setdefault(ka, []).append(kb)
            partners.setdefault(kb, []).append(ka)
    rows = []
    for key, arm in arms.items():
        if len(arm.seeds) < 2:
            continue
        for bench, scores in arm.scores.items():
            plan = {"versus": None, "delta": None}
            need = -1.0
            for other in partners.get(key, []):
                n = intervals.seeds_needed(scores, method=s.interval, delta=s.detect_delta,
                                           versus=arms[other].scores[bench],
                                           ci=s.ci)["seeds_for_delta"]
                n = math.inf if n is None else n  # unreachable: the hardest partner
                if n > need:
                    need, plan = n, {"versus": arms[other].scores[bench],
                                     "delta": s.detect_delta, "label": arms[other].label}
            row = intervals.seeds_needed(scores, method=s.interval,
                                         half_width=s.target_half_width, delta=plan["delta"],
                                         versus=plan["versus"], ci=s.ci)
            rows.append({"recipe": arm.recipe, "strategy": arm.strategy, "depth": arm.depth,
                         "benchmark": bench, "target_half_width": s.target_half_width,
                         "target_delta": s.detect_delta, "ci": s.ci, "interval": s.interval,
                         **row, "delta_versus": plan.get("label", "")})
    return pd.DataFrame(rows)


def agreement_table(arms: dict, hits: dict) -> pd.DataFrame:
    rows = []
    for key, arm in arms.items():
        if len(arm.seeds) < 2:
            continue
        for bench, scores in arm.scores.items():
            agree = mb.instance_agreement(hits[key][bench], seeds=arm.seeds)
            rho = mb.instance_agreement(scores, seeds=arm.seeds)
            for ag, rh in zip(agree, rho, strict=True):
                rows.append({"recipe": arm.recipe, "strategy": arm.strategy,
                             "depth": arm.depth, "benchmark": bench,
                             "seed_a": ag["seed_a"], "seed_b": ag["seed_b"],
                             "top1_agreement": ag["agreement"], "spearman": rh["spearman"]})
    return pd.DataFrame(rows)


def run(eval_paths, out_dir, s: Stats, *, budget_order=(), threads: int | None = None,
        expected: dict | None = None) -> dict[str, pd.DataFrame]:
    """All statistics tables; with `expected` (core/arms.py grid_gaps) a grid with any
    configured arm, seed or benchmark missing is an error, not a smaller study."""
    df = load_evals(eval_paths)
    arms = build_arms(df, s.metric)
    gaps = grid_gaps(arms, expected) if expected else []
    if gaps:
        raise contracts.DataError("the evaluations lack part of the configured grid:\n  "
                                  + "\n  ".join(gaps))
    df_hit = df.assign(top1=(df["mrr@10"] >= 1.0))
    hits = {k: {b: x.astype(bool) for b, x in a.scores.items()}
            for k, a in build_arms(df_hit, "top1").items()}
    pairs = comparison_pairs(arms, list(budget_order))
    comparisons = comparison_rows(arms, pairs, s, threads)
    tables = {
        "ci": ci_table(arms, s, threads),
        "seeds": seed_table(arms),
        "comparisons": pd.DataFrame(comparisons),
        "variance": variance_table(arms, s, threads),
        "seeds_needed": seeds_needed_table(arms, s, pairs),
        "agreement": agreement_table(arms, hits),
    }
    for name, table in tables.items():
        table.insert(0, "metric", s.metric)
        contracts.write_parquet(Path(out_dir) / f"{name}.parquet", table)
    return tables


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Multi-Bootstrap statistics over evaluations.")
    ap.add_argument("--evals", nargs="+", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--settings-json", default="{}",
                    help="core/settings.py Stats as JSON; absent keys take config/schema.yaml's "
                         "defaults")
    ap.add_argument("--budget-order", nargs="*", default=[],
                    help="recipes, smallest training budget first")
    ap.add_argument("--threads", type=int, help="bootstrap threads (default: usable CPUs)")
    ap.add_argument("--expect-json",
                    help='the configured grid, checked: {"benchmarks": [..], "arms": '
                         '[[recipe, strategy, depth, [seeds]], ..]}')
    a = ap.parse_args(argv)
    tables = run(a.evals, a.out_dir, Stats.from_json(a.settings_json),
                 budget_order=a.budget_order, threads=a.threads,
                 expected=json.loads(a.expect_json) if a.expect_json else None)
    print(", ".join(f"{k}: {len(v)} rows" for k, v in tables.items()))


if __name__ == "__main__":
    main()
