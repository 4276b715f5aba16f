"""Coverage of the nominal 95% interval: calibrated vs Satterthwaite vs Multi-Bootstrap.

Per cell, fresh data with a known truth are drawn trial after trial, and each method's interval
is checked for covering it. Methods: `calibrated` (workflow_scripts/stats/calibrated.py: t with
the seed df divided by the seed share), `satterthwaite` (the plug-in t interval on the same
result's terms: estimate +- t_{df} sqrt(variance), vt.satterthwaite) and `multibootstrap`
(workflow_scripts/stats/multibootstrap.py, percentile, one thread). --theory prints instead the
df rules' coverage in the model they are about, by exact integration (seconds).

Synthetic cells: score[s, q] = mean + query[q] (sd 0.2) + arm x query (sd 0.02 or 0)
+ seed[s] (sd seed_sd, one per seed per arm) + noise[s, q] (sd 0.05); true delta 0.01.
  single           mean of one arm (bootstrap_mean / mean_interval); truth = its mean
  paired           two arms, same queries, seed s of a paired with seed s of b
  unpaired         the same data, analysed as independent seeds (design="unpaired")
  single-baseline  a = one fixed model (one seed): truth = delta - a's own seed effect
  stratified       3 benchmarks, `queries` each, seed effects shared by the benchmarks;
                   paired; estimate = unweighted mean of the per-benchmark deltas
Real cells: validation/data/ndcg_per_query.csv (per-query NDCG@10 of this workflow's models) is the
query population; per trial Q queries are drawn with replacement (pairs kept together), seed
effects (sd 0, 0.01, 0.02) and noise (sd 0.05) added and the scores clipped to [0, 1]; the truth
is exact (expected_clip). single: the mean of depth 3; paired: depth 3 - depth 1 (recipe
short, seed 42).

Headline cells (3 seeds, and every real cell) run --mb-trials Multi-Bootstrap trials, the
others --mb-trials-other; the cheap methods run --cal-trials everywhere, on the same draws (the
first trials of a cell are the same whatever the counts). Each cell has its own generator,
seeded from its parameters, so a cell's numbers do not depend on which other cells run.
--trials is another name for --mb-trials; --quick sets every count to 200.

    .venv/bin/python -m validation.coverage --theory
    .venv/bin/python -m validation.coverage [--quick] [--seeds 3] [--designs paired single]
        [--scenarios synthetic real] [--queries 100] [--out coverage.md] [--workers 2]
    .venv/bin/python -m validation.coverage --extract-from /path/to/results/eval   # rewrite the CSV
"""

from __future__ import annotations

import argparse
import csv
import math
import multiprocessing
import sys
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
from scipy import optimize, special, stats
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from validation import model
from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import multibootstrap as mb
from workflow_scripts.stats import variance_terms as vt

MEAN, DELTA = 0.5, 0.01
QUERY_SD, INTERACTION_SD, NOISE_SD = 0.2, 0.02, 0.05
BENCH_MEANS = (0.4, 0.5, 0.6)  # stratified: each benchmark its own level (cancels in delta)
SEEDS, SEED_SDS, QUERIES = (3, 5, 10), (0.0, 0.005, 0.01, 0.02), (100, 300)
INTERACTIONS = (INTERACTION_SD, 0.0)
DESIGNS = ("single", "paired", "unpaired", "single-baseline", "stratified")
REAL_DESIGNS, REAL_SEED_SDS, REAL_SEEDS = ("single", "paired"), (0.0, 0.01, 0.02), 3
METHODS = ("calibrated", "satterthwaite", "multibootstrap")
FLAG_LOW, FLAG_HIGH = 93.0, 97.0  # calibrated coverage outside this range is flagged

DATA = Path(__file__).resolve().parent / "data" / "ndcg_per_query.csv"
# The extract: one recipe and seed at every depth; the real cells compare depth 1 with depth 3.
EXTRACT_RECIPE, EXTRACT_SEED, QUERIES_PER_BENCH = "short", 42, 100
REAL_A, REAL_B = "short-top1-seed42", "short-top3-seed42"


@dataclass(frozen=True)
class Cell:
    design: str
    scenario: str  # "synthetic" or "real"
    seeds: int
    queries: int  # per benchmark for "stratified"
    interaction: float | None  # None for real cells: the data bring their own
    seed_sd: float

    def rng(self) -> np.random.Generator:
        """The cell's own generator, from its parameters only (not from its place in a run)."""
        return model.rng_for(*astuple(self))


# ---------------------------------------------------------------------------------------
# Scenarios: each trial returns (a, b, truth); a is None for the single design
# ---------------------------------------------------------------------------------------
def _arm(rng, mean, query, inter_sd, seed_effects) -> np.ndarray:
    """[seeds, queries] scores of one arm on the given query effects [1, 1, queries]."""
    return model.scores(rng, seed_effects, query, level=mean, interaction_sd=inter_sd,
                        noise_sd=NOISE_SD)[0]


def synthetic(rng, cell: Cell):
    s, q, inter, sd = cell.seeds, cell.queries, cell.interaction, cell.seed_sd

    def seeds(k=s):
        return model.seed_effects(rng, 1, k, sd)

    if cell.design == "stratified":
        # One seed effect per seed and arm, used in all benchmarks: one seed axis for all.
        seeds_a, seeds_b = seeds(), seeds()
        a, b = {}, {}
        for k, level in enumerate(BENCH_MEANS):
            query = model.example_effects(rng, 1, q, QUERY_SD)
            a[f"bench{k}"] = _arm(rng, level, query, inter, seeds_a)
            b[f"bench{k}"] = _arm(rng, level + DELTA, query, inter, seeds_b)
        return a, b, DELTA
    query = model.example_effects(rng, 1, q, QUERY_SD)
    if cell.design == "single":
        return None, _arm(rng, MEAN, query, inter, seeds()), MEAN
    b = _arm(rng, MEAN + DELTA, query, inter, seeds())
    if cell.design == "single-baseline":
        # The baseline is one fixed model: its seed effect is part of what is compared.
        seed_a = seeds(1)
        return _arm(rng, MEAN, query, inter, seed_a)[0], b, DELTA - float(seed_a[0, 0, 0])
    # paired and unpaired: the same data (independent seed effects per arm), other analyses.
    return _arm(rng, MEAN, query, inter, seeds()), b, DELTA


def expected_clip(m: np.ndarray, s: float) -> np.ndarray:
    """E[clip(Y, 0, 1)] for Y ~ N(m, s^2): E[Y+] - E[(Y-1)+],
    with E[(Y-c)+] = (m-c) Phi((m-c)/s) + s phi((m-c)/s)."""
    def excess(c):
        z = (m - c) / s
        return (m - c) * special.ndtr(z) + s * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    return excess(0.0) - excess(1.0)


def real(rng, cell: Cell, pool: dict[str, np.ndarray]):
    """Real per-query scores as the query population, synthetic seeds and noise, clipped."""
    s, sd = cell.seeds, cell.seed_sd
    idx = rng.integers(0, len(pool[REAL_B]), cell.queries)  # one draw: pairs kept together

    def arm(values):
        noisy = model.scores(rng, model.seed_effects(rng, 1, s, sd), values[idx][None, None, :],
                             noise_sd=NOISE_SD)[0]
        return np.clip(noisy, 0.0, 1.0)

    # Seed effect + noise is N(0, sd^2 + noise^2) per score: the exact expected clipped score.
    spread = math.hypot(sd, NOISE_SD)
    true_b = float(np.mean(expected_clip(pool[REAL_B], spread)))
    if cell.design == "single":
        return None, arm(pool[REAL_B]), true_b
    true_a = float(np.mean(expected_clip(pool[REAL_A], spread)))
    return arm(pool[REAL_A]), arm(pool[REAL_B]), true_b - true_a


# ---------------------------------------------------------------------------------------
# Methods and cells
# ---------------------------------------------------------------------------------------
def _api_design(design: str) -> str:
    return "paired" if design == "stratified" else design


def calibrated_pair(a, b, design, ci) -> tuple[tuple[float, float], tuple[float, float]]:
    """The calibrated interval and the plug-in Satterthwaite t interval on its terms."""
    if a is None:
        res = cal.mean_interval(b, ci=ci)
    else:
        res = cal.compare(a, b, design=_api_design(design), ci=ci)
    var, df = vt.satterthwaite(res.terms)
    h = float(stats.t.ppf((1 + ci) / 2, df)) * math.sqrt(var)
    return (res.ci_low, res.ci_high), (res.estimate - h, res.estimate + h)


def multibootstrap(a, b, design, ci, nboot, seed) -> tuple[float, float]:
    if a is None:
        res = mb.bootstrap_mean(b, nboot=nboot, seed=seed, ci=ci, threads=1)
    else:
        res = mb.compare(a, b, design=_api_design(design), nboot=nboot, seed=seed, ci=ci,
                         threads=1)
    return res.ci_low, res.ci_high


def run_cell(task) -> tuple[Cell, dict]:
    """Coverage (%) and mean width per method; the Multi-Bootstrap on the first mb_trials
    draws, the others on the first cal_trials."""
    cell, cal_trials, mb_trials, nboot, ci, pool = task
    rng = cell.rng()
    hits = {m: [] for m in METHODS}
    widths = {m: [] for m in METHODS}
    for i in range(max(cal_trials, mb_trials)):
        a, b, truth = real(rng, cell, pool) if cell.scenario == "real" else synthetic(rng, cell)
        found = {}
        if i < cal_trials:
            found["calibrated"], found["satterthwaite"] = calibrated_pair(a, b, cell.design, ci)
        if i < mb_trials:
            found["multibootstrap"] = multibootstrap(a, b, cell.design, ci, nboot, seed=i)
        for m, (lo, hi) in found.items():
            hits[m].append(lo <= truth <= hi)
            widths[m].append(hi - lo)
    return cell, {m: (len(hits[m]), 100 * float(np.mean(hits[m])), float(np.mean(widths[m])))
                  for m in METHODS if hits[m]}


_LIMITS = None  # kept alive: the limit holds as long as its object does


def _worker_init() -> None:
    """One BLAS thread per process: the workers already share the cores between them."""
    global _LIMITS
    _LIMITS = threadpool_limits(limits=1)


# ---------------------------------------------------------------------------------------
# Data: the real per-query scores
# ---------------------------------------------------------------------------------------
def extract(eval_dir: Path, out: Path = DATA) -> None:
    """Write QUERIES_PER_BENCH queries per benchmark of EXTRACT_RECIPE / EXTRACT_SEED at every
    depth from a finished study's evaluation parquets (query_id, benchmark, model, ndcg@10)."""
    import pandas as pd

    from workflow_scripts.core.contracts import read_eval

    paths = sorted(eval_dir.rglob("*.parquet"))
    df = pd.concat([read_eval(p) for p in paths], ignore_index=True)
    df = df[(df["recipe"] == EXTRACT_RECIPE) & (df["seed"] == EXTRACT_SEED)].copy()
    if df.empty:
        raise SystemExit(f"{eval_dir}: no evaluation of recipe {EXTRACT_RECIPE!r}, "
                         f"seed {EXTRACT_SEED}")
    df["model"] = (df["recipe"] + "-" + df["strategy"] + df["depth"].astype(str)
                   + "-seed" + df["seed"].astype(str))
    missing = {REAL_A, REAL_B} - set(df["model"])
    if missing:
        raise SystemExit(f"{eval_dir}: models {sorted(missing)} not found")
    n_models = df["model"].nunique()
    rng = np.random.default_rng(0)
    keep = []
    for _, group in df.groupby("benchmark", sort=True):
        # Queries every model scored, a fixed random subset of them.
        counts = group.groupby("query_id")["model"].nunique()
        ids = np.sort(counts.index[counts == n_models].to_numpy())
        keep.extend(rng.choice(ids, min(QUERIES_PER_BENCH, len(ids)), replace=False))
    rows = df[df["query_id"].isin(keep)].sort_values(["benchmark", "query_id", "model"])
    out.parent.mkdir(parents=True, exist_ok=True)
    rows[["query_id", "benchmark", "model", "ndcg@10"]].to_csv(out, index=False,
                                                              float_format="%.6g")
    print(f"wrote {out}: {len(keep)} queries x {n_models} models from {len(paths)} parquets "
          f"({out.stat().st_size / 1024:.0f} KiB)")


def load_pool(path: Path = DATA) -> dict[str, np.ndarray]:
    """model -> NDCG@10 per query, aligned on (benchmark, query_id)."""
    scores: dict[str, dict[tuple[str, str], float]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["benchmark"], row["query_id"])
            scores.setdefault(row["model"], {})[key] = float(row["ndcg@10"])
    keys = sorted(set(scores[REAL_A]) & set(scores[REAL_B]))
    return {m: np.array([scores[m][k] for k in keys]) for m in (REAL_A, REAL_B)}


# ---------------------------------------------------------------------------------------
# Theory: the df rules in the model they are about (exact integration, no simulation)
# ---------------------------------------------------------------------------------------
def _chi2_points(df: int, n: int) -> np.ndarray:
    """n equal-probability points of chi2_df / df (midpoint quantiles)."""
    return stats.chi2.ppf((np.arange(n) + 0.5) / n, df) / df


def _covers(q, v_hat) -> float:
    """Coverage (%) of estimate +- q sqrt(V_hat) when the estimate ~ N(truth, 1): the mean
    over the points of P(|Z| <= q sqrt(V_hat))."""
    return 100 * float(np.mean(2 * special.ndtr(q * np.sqrt(v_hat)) - 1))


def theory_single(nu: int, share: float, ci: float = 0.95) -> dict[str, float]:
    """One seed term (nu df) carrying `share` of the variance, the rest known: V_hat =
    share * u + 1 - share with u ~ chi2_nu / nu. Coverage of the three df rules."""
    u = _chi2_points(nu, 2000)
    v_hat = share * u + 1 - share
    a = share * u / v_hat  # the estimated seed share
    with np.errstate(divide="ignore"):
        out = {"satterthwaite": _covers(special.stdtrit(nu / a**2, (1 + ci) / 2), v_hat),
               "calibrated": _covers(special.stdtrit(nu / a, (1 + ci) / 2), v_hat)}
    # The generalized pivot (fiducial): per data point, the seed term redrawn as
    # observed * nu / chi2_nu, the half-width h with P(|Z| sqrt(V) > h) = 1 - ci.
    draws = 1 / _chi2_points(nu, 4096)
    u_sub = _chi2_points(nu, 400)
    q = []
    for x in u_sub:
        sd = np.sqrt(share * x * draws + 1 - share)
        h = optimize.brentq(lambda h, sd=sd: np.mean(special.ndtr(-h / sd)) - (1 - ci) / 2,
                            0.0, 100 * sd.max())
        q.append(h / math.sqrt(share * x + 1 - share))
    out["generalized pivot"] = _covers(np.array(q), share * u_sub + 1 - share)
    return out


def theory_unpaired(w: float, share: float, ci: float = 0.95) -> dict[str, float]:
    """Two arms' seed terms (2 df each, 3 seeds) carrying w and 1 - w of the seed part, the
    seed part `share` of the variance: calibrated df on Welch's 1938 and 1947 merges."""
    u = _chi2_points(2, 300)
    s1, s2 = np.meshgrid(share * w * u, share * (1 - w) * u)
    seed = s1 + s2
    v_hat = seed + 1 - share
    out = {}
    for name, plus, minus in (("Welch 1938", 0, 0), ("Welch 1947", 2, 2)):
        merged = seed**2 / ((s1**2 + s2**2) / (2 + plus)) - minus
        out[name] = _covers(special.stdtrit(merged * v_hat / seed, (1 + ci) / 2), v_hat)
    return out


def theory() -> list[str]:
    shares = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0)
    lines = ["Coverage (%) of the nominal 95% interval, exact integration: one seed term with nu "
             "df carrying `share` of the variance, the example part known.", "",
             "| seeds | df rule | " + " | ".join(f"share {s:g}" for s in shares) + " | range |",
             "|---|---|" + "---|" * (len(shares) + 1)]
    for nu in (2, 4, 9):
        rows = [theory_single(nu, s) if s > 0 else None for s in shares]
        for rule in ("calibrated", "satterthwaite", "generalized pivot"):
            cov = [r[rule] if r else 95.0 for r in rows]  # share 0: no seed term, z exact
            lines.append(f"| {nu + 1} | {rule} | " + " | ".join(f"{c:.1f}" for c in cov)
                         + f" | {min(cov):.1f}-{max(cov):.1f} |")
    ws, ss = (0.5, 0.7, 0.9, 1.0), (0.2, 0.5, 0.8, 1.0)
    lines += ["", "Unpaired, 3 seeds per arm: arm a's seed term carries w of the seed part "
              "(w = 0.5: equal seed variances), the seed part `share` of the variance.", "",
              "| merge | w | " + " | ".join(f"share {s:g}" for s in ss) + " |",
              "|---|---|" + "---|" * len(ss)]
    for rule in ("Welch 1947", "Welch 1938"):
        for w in ws:
            cov = [theory_unpaired(w, s)[rule] for s in ss]
            lines.append(f"| {rule} | {w:g} | " + " | ".join(f"{c:.1f}" for c in cov) + " |")
    return lines


# ---------------------------------------------------------------------------------------
# Grid, table, main
# ---------------------------------------------------------------------------------------
def grid(args) -> list[Cell]:
    cells = []
    if "synthetic" in args.scenarios:
        for design in args.designs:
            for seeds in args.seeds:
                for queries in args.queries:
                    for inter in INTERACTIONS:
                        cells += [Cell(design, "synthetic", seeds, queries, inter, sd)
                                  for sd in SEED_SDS]
    if "real" in args.scenarios and REAL_SEEDS in args.seeds:
        for design in (d for d in DESIGNS if d in REAL_DESIGNS and d in args.designs):
            for queries in args.queries:
                cells += [Cell(design, "real", REAL_SEEDS, queries, None, sd)
                          for sd in REAL_SEED_SDS]
    return cells


def table(results: dict[Cell, dict]) -> list[str]:
    head = ["design", "scenario", "seeds", "queries", "interaction", "seed_sd", "trials"]
    for m in METHODS:
        head += [f"{m} cov %", f"{m} width"]
    lines = ["| " + " | ".join(head + ["flag"]) + " |", "|" + "---|" * (len(head) + 1)]
    for cell, res in results.items():
        inter = "-" if cell.interaction is None else f"{cell.interaction:g}"
        trials = "/".join(str(res[m][0]) for m in ("calibrated", "multibootstrap") if m in res)
        row = [cell.design, cell.scenario, str(cell.seeds), str(cell.queries), inter,
               f"{cell.seed_sd:g}", trials]
        for m in METHODS:
            row += [f"{res[m][1]:.1f}", _width(res[m][2])] if m in res else ["-", "-"]
        cov = res.get("calibrated", (0, math.nan))[1]
        row.append("" if FLAG_LOW <= cov <= FLAG_HIGH else "**outside**")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _width(w: float) -> str:
    # A plug-in Satterthwaite df near 0 in one trial can make the mean width astronomical.
    return f"{w:.4f}" if w < 1000 else f"{w:.1e}"


def summary(results: dict[Cell, dict]) -> list[str]:
    lines = []
    for m in METHODS:
        covs = [(res[m][1], cell) for cell, res in results.items() if cell.seeds >= 3 and m in res]
        if not covs:
            continue
        (lo, c_lo), (hi, c_hi) = min(covs, key=lambda x: x[0]), max(covs, key=lambda x: x[0])
        lines.append(f"{m}: coverage over {len(covs)} cells with >= 3 seeds: min {lo:.1f}% "
                     f"({_name(c_lo)}), max {hi:.1f}% ({_name(c_hi)})")
    flagged = [c for c, res in results.items()
               if not FLAG_LOW <= res.get("calibrated", (0, math.nan))[1] <= FLAG_HIGH]
    lines.append(f"calibrated cells outside [{FLAG_LOW:g}, {FLAG_HIGH:g}]: {len(flagged)}"
                 + "".join(f"\n  {_name(c)}: {results[c]['calibrated'][1]:.1f}% of "
                           f"{results[c]['calibrated'][0]} trials" for c in flagged))
    return lines


def by_design(results: dict[Cell, dict]) -> list[str]:
    """Per design, scenario and seed count: each method's coverage range over the cells, and
    the median ratio of the calibrated width to the Multi-Bootstrap's."""
    groups: dict[tuple, list[dict]] = {}
    for cell, res in results.items():
        groups.setdefault((cell.design, cell.scenario, cell.seeds), []).append(res)
    lines = ["| design | scenario | seeds | cells | " + " | ".join(f"{m} cov %" for m in METHODS)
             + " | width calibrated / multibootstrap (median) |", "|" + "---|" * 8]
    for (design, scenario, seeds), rows in groups.items():
        spans = []
        for m in METHODS:
            cov = [r[m][1] for r in rows if m in r]
            spans.append(f"{min(cov):.1f}-{max(cov):.1f}" if cov else "-")
        ratios = [r["calibrated"][2] / r["multibootstrap"][2] for r in rows
                  if "calibrated" in r and "multibootstrap" in r]
        ratio = f"{np.median(ratios):.2f}" if ratios else "-"
        lines.append(f"| {design} | {scenario} | {seeds} | {len(rows)} | " + " | ".join(spans)
                     + f" | {ratio} |")
    return lines


def _name(cell: Cell) -> str:
    inter = "" if cell.interaction is None else f", interaction {cell.interaction:g}"
    return (f"{cell.design}/{cell.scenario}, {cell.seeds} seeds, {cell.queries} queries"
            f"{inter}, seed sd {cell.seed_sd:g}")


def parse_args(argv: list[str] | None = None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cal-trials", type=int, default=10000,
                    help="trials of calibrated and satterthwaite, every cell")
    ap.add_argument("--mb-trials", "--trials", type=int, default=1000,
                    help="Multi-Bootstrap trials of the headline cells (3 seeds)")
    ap.add_argument("--mb-trials-other", type=int, default=300,
                    help="Multi-Bootstrap trials of the other cells (5 and 10 seeds)")
    ap.add_argument("--nboot", type=int, default=1000)
    ap.add_argument("--ci", type=float, default=0.95)
    ap.add_argument("--quick", action="store_true", help="200 trials everywhere (smoke run)")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
    ap.add_argument("--scenarios", nargs="+", choices=("synthetic", "real"),
                    default=["synthetic", "real"])
    ap.add_argument("--queries", type=int, nargs="+", default=list(QUERIES))
    ap.add_argument("--workers", type=int, default=2, help="processes over cells")
    ap.add_argument("--out", type=Path, help="also write the table as markdown here")
    ap.add_argument("--summary", action="store_true",
                    help="print the per-design ranges and the summary, not every cell")
    ap.add_argument("--theory", action="store_true",
                    help="print the df rules' coverage by exact integration (seconds) and exit")
    ap.add_argument("--extract-from", type=Path, metavar="DIR",
                    help=f"rewrite {DATA.relative_to(DATA.parents[2])} from DIR/**/*.parquet "
                         "and exit")
    args = ap.parse_args(argv)
    if args.quick:
        args.cal_trials = args.mb_trials = args.mb_trials_other = 200
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.theory:
        print("\n".join(theory()))
        return
    if args.extract_from:
        extract(args.extract_from)
        return
    pool = load_pool() if "real" in args.scenarios else {}
    cells = grid(args)
    tasks = [(c, args.cal_trials, args.mb_trials if c.seeds == 3 else args.mb_trials_other,
              args.nboot, args.ci, pool) for c in cells]
    # Longest cells first, so that the last ones to finish are short.
    tasks.sort(key=lambda t: -(t[1] + 3 * t[2]) * t[0].queries
               * (len(BENCH_MEANS) if t[0].design == "stratified" else 1))
    print(f"{len(cells)} cells on {args.workers} workers: calibrated/satterthwaite "
          f"{args.cal_trials} trials, multibootstrap {args.mb_trials} (3 seeds) / "
          f"{args.mb_trials_other} (more seeds), nboot {args.nboot}, ci {args.ci:g}",
          file=sys.stderr)
    t0 = time.perf_counter()
    found = {}
    with tqdm(total=len(tasks), file=sys.stderr, unit="cell") as bar:
        if args.workers > 1:
            with multiprocessing.Pool(args.workers, initializer=_worker_init) as procs:
                for cell, res in procs.imap_unordered(run_cell, tasks):
                    found[cell] = res
                    bar.update()
        else:
            _worker_init()
            for task in tasks:
                cell, res = run_cell(task)
                found[cell] = res
                bar.update()
    wall = time.perf_counter() - t0
    results = {c: found[c] for c in cells}  # grid order
    lines = [] if args.summary else table(results) + [""]
    lines += by_design(results) + [""] + summary(results)
    lines.append(f"wall time {wall / 60:.1f} min on {args.workers} workers")
    print("\n".join(lines))
    if args.out:
        command = "python -m validation.coverage " + " ".join(
            sys.argv[1:] if argv is None else argv)
        args.out.write_text(f"Coverage of the nominal {100 * args.ci:g}% interval "
                            f"(`{command.strip()}`)\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
