"""Benchmark: the laptop study's per-job costs, measured here, and its predicted total.

Plans the config (`snakemake -n`, bench/laptop_plan.py), then measures on data of the same
shape, generated here (words of the base model's vocabulary, one token each; no download):
- encoding one benchmark (corpus + queries) with the lean encoder at every depth a job
  encodes: a sample of documents and queries with the benchmark's lengths, scaled to its
  size (SciFact: 5,183 documents, 300 queries; NFCorpus: 3,633 and 323; mean lengths of the
  BEIR paper, Thakur et al. 2021, Table 1, at 1.3 tokens a word, documents up to 256 tokens
  before the config's max_seq_length cuts them);
- one training step (the training stage's own `train`, MS MARCO-shaped triples, the
  recipe's batch size and the config's max_seq_length) per strategy and depth trained, and
  each training's fixed cost (loading, trainer set-up, saving);
- the exact search with the metrics at each benchmark's size, a model's load, a latency
  call per depth, and the start of each kind of job (a new Python process importing what
  the job's module imports).
Each figure is repeated until its median's 95% interval (order statistics, no bootstrap)
is within --target of it, or a cap; the median and that interval are printed.
One torch thread, as the workflow's jobs. A busy machine inflates every figure: the load
average is printed before and after.

    .venv/bin/python bench/laptop_sizing.py [--quick] [--config config/laptop.yaml] \
        [--usage results/laptop/usage.parquet [--usage-config CONFIG_OF_THAT_RUN]]

--usage: the prediction again, each rule's jobs scaled by what a real run's jobs of that
rule measured (its usage table) over what the model predicts for them (bench/laptop_plan.py,
calibrate): real texts' token counts and the jobs' own overheads, which synthetic data
misses.

--quick: small samples and few repeats (about 2 minutes on a quiet machine, to check the
script); the full mode about 5 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import laptop_plan as plan  # noqa: E402
import numpy as np  # noqa: E402

# Benchmarks by size: (documents, queries, mean words per document, per query).
SHAPES = {"scifact": (5183, 300, 213.63, 12.37), "nfcorpus": (3633, 323, 232.26, 3.30),
          # NanoBEIR's (config/nanobeir.yaml): documents and queries of mteb's descriptive
          # statistics of NanoSciFactRetrieval and NanoNFCorpusRetrieval, words from their
          # mean characters at the full benchmark's words per character
          "nanoscifact": (2919, 50, 203.9, 13.1), "nanonfcorpus": (2953, 50, 220.9, 3.19)}
# Training data by source: mean words per query and per passage (MS MARCO, BEIR Table 1).
TRAIN_SHAPES = {"triples-jsonl-gz": (5.96, 55.98)}
TOKENS_PER_WORD, DOC_TOKEN_CAP = 1.3, 256
MODES = {  # documents sampled per benchmark, repeats (min, max), training steps (min, max)
    "quick": {"docs": 32, "rounds": (2, 3), "steps": (2, 3), "starts": 1, "seconds": 60},
    "full": {"docs": 64, "rounds": (6, 10), "steps": (6, 10), "starts": 3, "seconds": 120},
}


class Words:
    """Texts of whole-word tokens of the base model's vocabulary (one token a word)."""

    def __init__(self, model_path: str, seed: int = 0):
        vocab = json.loads((Path(model_path) / "tokenizer.json").read_text())["model"]["vocab"]
        self.words = sorted(w for w in vocab if w.isalpha() and w.isascii() and len(w) > 2)
        self.rng = random.Random(seed)

    def text(self, mean_tokens: float, cap: int = DOC_TOKEN_CAP) -> str:
        n = min(cap, max(1, round(self.rng.gammavariate(4.0, mean_tokens / 4.0))))
        return " ".join(self.rng.choice(self.words) for _ in range(n))

    def texts(self, n: int, mean_words: float) -> list[str]:
        return [self.text(mean_words * TOKENS_PER_WORD) for _ in range(n)]


# What the figures are timed with: the wall clock (on a quiet machine, what a job takes), or
# with --clock cpu the CPU time of this process (of the child, for a job's start): on a
# machine shared with other work, an estimate of the quiet machine's wall clock, as every
# job runs one thread (it leaves out waiting for the disk, and other work still slows the
# caches).
CLOCK = {"name": "wall", "now": time.perf_counter}


def clock() -> float:
    return CLOCK["now"]()


def use_clock(name: str) -> None:
    CLOCK.update(name=name, now=time.process_time if name == "cpu" else time.perf_counter)


def subprocess_seconds(code: str) -> float:
    def children() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    t0, c0 = time.perf_counter(), children()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return children() - c0 if CLOCK["name"] == "cpu" else time.perf_counter() - t0


def measure_starts(repeats: int, base: str, tmp: Path) -> dict:
    """Each kind of job's start: an evaluation job as the workflow runs it on a tiny
    benchmark (imports, a load, search, writing); the others a new process importing what
    their module imports before its work (a training's own fixed cost is measured apart)."""
    from workflow_scripts.core import contracts

    words = Words(__import__("workflow_scripts.biencoder.model.truncation", fromlist=["x"])
                  .resolve_model_path(base), seed=2)
    tiny = tmp / "tiny"
    contracts.write_beir(tiny, {f"d{i}": {"text": words.text(8, 8)} for i in range(120)},
                         {f"q{i}": words.text(4, 4) for i in range(8)},
                         {f"q{i}": {f"d{i}": 1} for i in range(8)})
    settings = json.dumps({"batch_size": 64, "max_seq_length": 32, "top_k": 100})
    evaluate = (f"import sys; from workflow_scripts.biencoder import evaluate; evaluate.main("
                f"['--base', {base!r}, '--strategy', 'top', '--depth', '1', '--benchmark-dir', "
                f"{str(tiny)!r}, '--benchmark', 'tiny', '--recipe', 'bench', '--seed', '0', "
                f"'--settings-json', {settings!r}, '--threads', '1', '--out', "
                f"{str(tmp / 'tiny.parquet')!r}])")
    codes = {
        "train_job_start": "import pandas, datasets, sentence_transformers; "
                           "from sentence_transformers import SentenceTransformerTrainer; "
                           "import workflow_scripts.biencoder.train",
        "eval_job_start": evaluate,
        "latency_job_start": "import torch, tokenizers, pandas; "
                             "import workflow_scripts.biencoder.latency.profile",
        "tail_job_start": "import pandas, pyarrow, scipy.stats, matplotlib; "
                          "matplotlib.use('Agg'); import matplotlib.pyplot; "
                          "import workflow_scripts.biencoder.report.figures",
    }
    return {k: [subprocess_seconds(c) for _ in range(repeats)] for k, c in codes.items()}


def measure_encoding(path, needs, words, cfg, mode, target) -> tuple[dict, dict, dict]:
    """Per (benchmark, depth): seconds to encode the benchmark, scaled from a sample; rounds
    visit the depths in random order until every median is precise or the cap. Also a
    model's load and a latency call per depth."""
    from workflow_scripts.biencoder.model.encoder import BertEncoder

    seq, batch = cfg["max_seq_length"], cfg["eval"]["batch_size"]
    depths = sorted({d for _, d in needs} | set(cfg["depths"]))
    samples = {}
    for bench in sorted({b for b, _ in needs}):
        docs, queries, doc_words, query_words = SHAPES[bench]
        n_docs = mode["docs"]
        n_q = max(8, round(n_docs * queries / docs))
        samples[bench] = (words.texts(n_docs, doc_words), words.texts(n_q, query_words),
                          docs / n_docs, queries / n_q)
    lat = cfg["latency"]
    lat_texts = [words.text(lat["seq_len"], cap=lat["seq_len"])
                 for _ in range(lat["batch_size"])]
    encoders, load = {}, []
    for d in depths:
        t0 = clock()
        encoders[d] = BertEncoder(path, depth=d, max_seq_length=seq)
        load.append(clock() - t0)
        encoders[d].encode(lat_texts[:2])  # first call outside the timings
    times = {key: [] for key in needs}
    calls = {d: [] for d in depths}
    rng, t_start, rounds = random.Random(1), time.perf_counter(), 0
    lo_rounds, hi_rounds = mode["rounds"]
    while rounds < hi_rounds:
        for d in rng.sample(depths, len(depths)):
            t0 = clock()
            encoders[d].encode(lat_texts, batch_size=len(lat_texts))
            calls[d].append(clock() - t0)
            for bench, (docs, qs, scale_d, scale_q) in samples.items():
                if (bench, d) not in times:
                    continue
                t0 = clock()
                encoders[d].encode(qs, batch_size=batch)
                t1 = clock()
                encoders[d].encode(docs, batch_size=batch)
                t2 = clock()
                times[bench, d].append((t1 - t0) * scale_q + (t2 - t1) * scale_d)
        rounds += 1
        print(f"  encoding round {rounds}: " + ", ".join(
            f"{b} L{d} {np.median(v):.0f} s" for (b, d), v in sorted(times.items()))
            + f"; load average {os.getloadavg()[0]:.1f}", flush=True)
        if rounds >= lo_rounds and (all(plan.precise(v, target) for v in times.values())
                                    or time.perf_counter() - t_start > mode["seconds"]):
            break
    return times, {"model_load": load}, calls


def measure_search(needs, repeats: int) -> dict:
    """Exact search and metrics at each benchmark's size, on random unit embeddings."""
    from workflow_scripts.biencoder.retrieval import evaluate_embeddings

    rng, out = np.random.default_rng(0), {}
    for bench in sorted({b for b, _ in needs}):
        docs, queries, _, _ = SHAPES[bench]
        q = rng.standard_normal((queries, 384)).astype(np.float32)
        d = rng.standard_normal((docs, 384)).astype(np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        qids, dids = [f"q{i}" for i in range(queries)], [f"d{i}" for i in range(docs)]
        qrels = {qi: {dids[j]: 1 for j in rng.choice(docs, 3, replace=False)} for qi in qids}
        out[bench] = []
        for _ in range(repeats):
            t0 = clock()
            evaluate_embeddings(q, d, qids, dids, qrels, top_k=100)
            out[bench].append(clock() - t0)
    return out


def measure_training(kinds, words, cfg, recipe, mode, target, tmp) -> tuple[dict, list]:
    """Per (strategy, depth): seconds of each optimizer step after a run's first (the
    stage's `train`, timed by a callback; a second run up to the cap when the median is not
    yet precise), and each run's fixed cost: its total less its steps (loading, set-up,
    saving)."""
    import pandas as pd
    from transformers import TrainerCallback

    from workflow_scripts.biencoder import train as stage
    from workflow_scripts.core.settings import train_settings

    source = cfg["datasets"][cfg["train_data"]]["source"]
    if source not in TRAIN_SHAPES:
        raise SystemExit(f"bench/laptop_sizing.py: no training-data shape for source "
                         f"{source!r}; add it to TRAIN_SHAPES")
    q_words, p_words = TRAIN_SHAPES[source]
    lo, hi = mode["steps"]
    n = (hi + 2) * recipe["batch_size"]
    triples = Path(tmp) / "triples.parquet"
    pd.DataFrame({"query": words.texts(n, q_words), "positive": words.texts(n, p_words),
                  "negative": words.texts(n, p_words)}).to_parquet(triples)

    class Steps(TrainerCallback):
        """Seconds from one step's end to the next (the batch's loading included)."""

        def __init__(self):
            self.ends = []

        def on_train_begin(self, args, state, control, **kw):
            self.last = clock()

        def on_step_end(self, args, state, control, **kw):
            now = clock()
            self.ends.append(now - self.last)
            self.last = now
            return control

    steps, fixed = {}, []
    for strategy, depth in kinds:
        key = steps[f"{strategy}{depth}"] = []
        # A run of lo steps after the first; a second of the rest of the cap if that is not
        # precise (a run cannot stop early: its loss log must reach its last step).
        for n in (lo, hi - lo):
            if n <= 0:
                break
            settings = train_settings(strategy).from_json(json.dumps({
                **{k: recipe[k] for k in ("batch_size", "lr", "warmup") if k in recipe},
                "steps": n + 1, "max_seq_length": cfg["max_seq_length"]}))
            cb = Steps()
            t0 = clock()
            stage.train(base=cfg["base_model"], strategy=strategy, depth=depth, seed=0,
                        settings=settings, triples=triples,
                        out_dir=Path(tmp) / f"{strategy}{depth}-{n}", callbacks=[cb])
            fixed.append(clock() - t0 - sum(cb.ends))
            key += cb.ends[1:]
            if plan.precise(key, target):
                break
        med, low, high, _ = plan.median_ci(key)
        print(f"  training {strategy}{depth}: {med:.2f} s a step [{low:.2f}, {high:.2f}], "
              f"{len(key)} steps timed; fixed {fixed[-1]:.1f} s; load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    return steps, fixed


def show(name: str, values, unit: str = "s") -> None:
    med, lo, hi, cov = plan.median_ci(values)
    print(f"  {name:<34}{med:>9.2f} {unit}  [{lo:.2f}, {hi:.2f}] ({len(values)} values, "
          f"{cov:.0%} interval)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", nargs="+", default=[str(ROOT / "config/laptop.yaml")],
                    help="the config, or files stacked as --configfile stacks them")
    ap.add_argument("--quick", action="store_true", help="small samples, few repeats")
    ap.add_argument("--target", type=float, default=0.05,
                    help="stop repeating once the median's 95%% interval is within this")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall: on a quiet machine; cpu: this process's CPU time, an estimate "
                         "of a quiet machine's wall clock where other work shares the CPUs")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--budget-minutes", type=float, default=60)
    ap.add_argument("--usage", help="a run's usage table (results/<study>/usage.parquet): "
                    "calibrate the prediction on what that run's jobs measured")
    ap.add_argument("--usage-config", nargs="+",
                    help="the config that run used (default --config)")
    a = ap.parse_args(argv)
    from workflow_scripts.biencoder.model.truncation import resolve_model_path
    from workflow_scripts.core.runtime import set_threads

    set_threads(1)
    use_clock(a.clock)
    mode = MODES["quick" if a.quick else "full"]
    cfg = plan.load_config(a.config)
    name = " ".join(a.config)
    from workflow_scripts.core.configcheck import fill_defaults

    fill_defaults(cfg)  # the schema's defaults, as the workflow's config check does
    t_start, load0 = time.perf_counter(), os.getloadavg()
    print(f"{name}: planning (snakemake -n); load average {load0[0]:.1f} {load0[1]:.1f} "
          f"{load0[2]:.1f}, {os.cpu_count()} CPUs", flush=True)
    jobs = plan.parse_jobs(plan.dry_run(a.config))
    train_jobs = [j for j in jobs if j.module == plan.TRAIN]
    eval_jobs = [j for j in jobs if j.module == plan.EVALUATE]
    needs = sorted({plan.evaluation_work(j)[:2] for j in eval_jobs})
    kinds = sorted({plan.training_work(j)[:2] for j in train_jobs}, key=lambda k: (k[1], k[0]))
    unknown = sorted({b for b, _ in needs} - set(SHAPES))
    if unknown:
        raise SystemExit(f"bench/laptop_sizing.py: no shape for benchmark(s) {unknown}; add "
                         "their sizes to SHAPES")
    batches = {json.loads(j.args["settings-json"][0])["batch_size"] for j in train_jobs}
    if len(batches) > 1:
        raise SystemExit(f"recipes with batch sizes {sorted(batches)}: this bench measures "
                         "one batch size")
    recipe = next(iter(cfg["recipes"].values()))
    print(f"{len(jobs)} jobs besides `all`: {len(train_jobs)} training, "
          f"{len(eval_jobs)} evaluation; "
          f"max_seq_length {cfg['max_seq_length']}, batch {recipe['batch_size']}; "
          f"{'quick' if a.quick else 'full'} mode, {a.clock} clock", flush=True)
    path = resolve_model_path(cfg["base_model"])
    words = Words(path)
    with tempfile.TemporaryDirectory() as tmp:
        starts = measure_starts(mode["starts"], cfg["base_model"], Path(tmp))
        times, loads, calls = measure_encoding(path, needs, words, cfg, mode, a.target)
        search = measure_search(needs, mode["starts"])
        steps, fixed = measure_training(kinds, words, cfg, recipe, mode, a.target, tmp)
    med = {k: plan.median_ci(v)[0] for k, v in starts.items()}
    load = plan.median_ci(loads["model_load"])[0]
    lat_quiet, lat_cap = plan.latency_run_seconds(cfg, med["latency_job_start"], load, calls)
    figures = {
        **{k: med[k] for k in ("train_job_start", "eval_job_start", "tail_job_start")},
        "model_load": load, "training_fixed": plan.median_ci(fixed)[0],
        "train_step": {k: plan.median_ci(v)[0] for k, v in steps.items()},
        "encode": {}, "search": {b: plan.median_ci(v)[0] for b, v in search.items()},
        "latency_run": lat_quiet,
    }
    for (bench, depth), v in times.items():
        figures["encode"].setdefault(bench, {})[depth] = plan.median_ci(v)[0]

    print(f"\nper-job figures (median [95% interval]; {a.clock}-clock seconds on one core)")
    for k, v in starts.items():
        show(k.replace("_", " "), v)
    show("model load", loads["model_load"])
    show("training fixed (load, set-up, save)", fixed)
    for k, v in steps.items():
        show(f"training step {k} (batch {recipe['batch_size']})", v)
    for (bench, depth), v in sorted(times.items()):
        show(f"encode {bench} at L{depth}", v)
    for bench, v in search.items():
        show(f"search + metrics {bench}", v)
    for d, v in calls.items():
        show(f"latency call L{d}", v)
    print(f"  {'latency run (quiet; at its cap)':<34}{lat_quiet:>9.1f} s  ({lat_cap:.1f} s)")

    total = plan.predict(jobs, figures, cores=a.cores)
    print(f"\npredicted for {name} on {a.cores} cores ({total['jobs']} jobs):")
    for rule, (n, sec) in total["per_rule"].items():
        print(f"  {rule:<34}{n:>4} jobs {sec:>8.0f} core-s")
    print(f"  {'latency_run (every core)':<34}{'':>4}      {total['latency_seconds']:>8.0f} s")
    extra = cfg["latency"]["runs"] * (lat_cap - lat_quiet)
    wall = total["wall_seconds"]
    print(f"one-core jobs {total['core_seconds']:.0f} core-s (/{a.cores} = "
          f"{total['core_seconds'] / a.cores / 60:.1f} min; longest chain of a training job "
          f"and an evaluation {total['chain'] / 60:.1f} min) + latency "
          f"{total['latency_seconds'] / 60:.1f} min")
    print(f"PREDICTED TOTAL {wall / 60:.1f} min (latency runs at their caps: "
          f"{(wall + extra) / 60:.1f} min); budget {a.budget_minutes:.0f} min: "
          f"{'fits' if wall <= a.budget_minutes * 60 else 'DOES NOT FIT'}")
    per_step = sum(plan.training_work(j)[2] * figures["train_step"][
        "".join(map(str, plan.training_work(j)[:2]))] for j in train_jobs) / a.cores
    print(f"each training step more in every recipe: +{per_step:.1f} s of wall time")
    if a.usage:
        ran = a.usage_config or a.config
        jobs_run = jobs if ran == a.config else plan.parse_jobs(plan.dry_run(ran))
        scale = plan.calibrate(jobs_run, plan.read_usage(a.usage), figures)
        cal = plan.predict(jobs, figures, cores=a.cores, scale=scale)
        print(f"\ncalibrated on {a.usage} ({' '.join(ran)}'s run): measured / model "
              "seconds per rule")
        for rule, (n, sec) in cal["per_rule"].items():
            factor = f"x {scale[rule]:.2f}" if rule in scale else "(not in the table: x 1)"
            print(f"  {rule:<34}{n:>4} jobs {sec:>8.0f} core-s  {factor}")
        print(f"PREDICTED FROM THE USAGE TABLE {cal['wall_seconds'] / 60:.1f} min "
              f"(one-core jobs {cal['core_seconds']:.0f} core-s, latency "
              f"{cal['latency_seconds'] / 60:.1f} min); budget {a.budget_minutes:.0f} min: "
              f"{'fits' if cal['wall_seconds'] <= a.budget_minutes * 60 else 'DOES NOT FIT'}")
    load1 = os.getloadavg()
    print(f"measured in {time.perf_counter() - t_start:.0f} s; load average now {load1[0]:.1f}"
          f" {load1[1]:.1f} {load1[2]:.1f}")


if __name__ == "__main__":
    main()
