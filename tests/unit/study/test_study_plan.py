"""The study plan (workflow_scripts/study_plan.py) of every shipped config: the models,
evaluations, runs, outputs and claims grid it plans, without Snakemake. The wiring (the rules
make exactly what the plan says) is checked by one dry run per config in
tests/workflow/test_config_dry_runs.py, and end to end by the tiny study."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from conftest import ROOT
from snakemake.utils import update_config

from workflow_scripts.claims import spec
from workflow_scripts.core import paths
from workflow_scripts.study_config import check_config
from workflow_scripts.study_plan import StudyPlan

# Each shipped config as users run it (the adaptive demo stacks on the default).
CONFIGS = {"default": ["config/config.yaml"], "laptop": ["config/laptop.yaml"],
           "paper": ["config/paper.yaml"], "ladder": ["config/ladder.yaml"],
           "adaptive_demo": ["config/config.yaml", "config/adaptive_demo.yaml"],
           "nanobeir": ["config/laptop.yaml", "config/nanobeir.yaml"]}


def load(files) -> dict:
    """A config as Snakemake merges stacked --configfile files, checked and filled."""
    cfg: dict = {}
    for f in files:
        update_config(cfg, yaml.safe_load((ROOT / f).read_text()))
    check_config(cfg)
    return cfg


@pytest.fixture(scope="module")
def plans() -> dict[str, StudyPlan]:
    return {name: StudyPlan(load(files)) for name, files in CONFIGS.items()}


def expected_jobs(plan: StudyPlan) -> dict[str, int]:
    """Jobs per rule, from the plan alone: one per model, evaluation job, ladder run, latency
    run; one of each aggregate. What a dry run of the config must list."""
    counts: dict[str, int] = {}
    for rule, _ in plan.evaluation_jobs():
        counts[rule] = counts.get(rule, 0) + 1
    if plan.has_biencoder:
        data = {"docstrings": "docstring_benchmark", "beir": "beir_download",
                "hub": "hub_download"}
        for b in plan.benchmarks:
            rule = data[plan.config["datasets"][b]["source"]]
            counts[rule] = counts.get(rule, 0) + 1
        counts["trec_qrels"] = len(plan.benchmarks)
        train_rule = {"docstrings": "docstring_triples", "triples-jsonl-gz": "triples_download",
                      "beir-train": "beir_train"}
        counts[train_rule[plan.config["datasets"][plan.train_data]["source"]]] = 1
        counts.update(train=len(plan.models()), latency_run=len(plan.latency_runs()),
                      latency_summary=1, stats=1, compute=1, usage=1, report=1)
        if plan.dims:
            counts["stats_dims"] = 1
        counts.update({f"figure_{name}": 1 for name in plan.figures()})
        if plan.curve_recipes:
            counts["curves"] = 1
    if plan.has_ladder:
        counts.update(ladder_prepare=1, ladder_train=len(plan.ladder_runs()),
                      ladder_identity=1, ladder_stats=1, ladder_figure=1, ladder_summary=1)
        if plan.ladder_standalone():
            counts["ladder_standalone"] = len(plan.ladder_standalone())
        if plan.ladder["dataset"]["name"] == "cifar10":
            counts["ladder_download_cifar10"] = 1
    if plan.has_claims:
        counts.update(claims=1, claims_figure=1)
        if plan.config.get("adaptive_seeds"):
            counts.update(claims_look=1, claims_looks=1)  # look 0; the others after it ran
    counts["all"] = 1
    return counts


# The jobs of each shipped config (fresh folder), as the plan counts them (the default's
# eval.dims: the same evaluation jobs, plus stats_dims and figure_depth_by_dim).
EXPECTED_TOTALS = {"default": 221, "laptop": 57, "paper": 149, "ladder": 93,
                   "adaptive_demo": 223, "nanobeir": 57}


def per_query(outs) -> list[str]:
    """An evaluation job's outputs but its run files (paths.run_files)."""
    return [f for f in outs if not f.endswith(paths.RUN_SUFFIXES)]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_each_config_plans_its_jobs(plans, name):
    assert sum(expected_jobs(plans[name]).values()) == EXPECTED_TOTALS[name]


def test_paper_plan(plans):
    p = plans["paper"]
    # A: 1 seed, B-D: 3 seeds, E: 1 seed; x 4 depths; B-D's two train-once arms: 3 each
    assert len(p.models()) == 20 + 2 * 3
    assert {d for _, _, d, _ in p.models()} == {3, 6, 9, 12}
    counts = expected_jobs(p)
    # Every recipe has a learning curve: a model's snapshots and final weights in one job
    assert counts["evaluate_steps"] == 20 * 3 and counts["evaluate_steps_train_once"] == 18
    assert "evaluate_trained" not in counts and counts["evaluate_base_one_pass"] == 3
    # Each 12-layer top model cut to 3, 6, 9 layers: 5 models x 3 benchmarks, one pass each
    assert counts["evaluate_truncated_one_pass"] == 5 * 3
    assert not p.has_ladder and p.has_claims


def test_default_plan_paths(plans):
    p = plans["default"]
    assert "checkpoints/default/long/top3/seed44/model.safetensors" in p.model_files()
    # a train-once arm trains once per seed, at the deepest depth, and is evaluated at all
    assert "checkpoints/default/short/adaptive3/seed42/model.safetensors" in p.model_files()
    assert "checkpoints/default/short/adaptive1/seed42/model.safetensors" not in p.model_files()
    once = [o for r, o in p.evaluation_jobs() if r == "evaluate_train_once"]
    b0 = p.benchmarks[0]
    assert per_query(once[0]) == [f"results/default/eval/short/adaptive{d}/seed42/{b0}.parquet"
                       for d in (1, 2, 3)] + [  # and each depth at eval.dims [64, 128]
        f"results/default/eval/short/adaptive{d}/seed42/dim{m}/{b0}.parquet"
        for d in (1, 2, 3) for m in (64, 128)]
    steps = [o for r, o in p.evaluation_jobs() if r == "evaluate_steps"]
    w = dict(recipe="long", strategy="top", depth=1, seed=42, benchmark=b0)
    final = [p.paths.EVAL.format(**w), *(p.paths.EVAL_DIM.format(**w, dim=m) for m in (64, 128))]
    # the snapshots' file, the final model's, then the runs of the latter (none of the former)
    assert steps[0] == [p.paths.EVAL_STEPS.format(**w), *final, *p.runs_of(final)]
    assert p.runs_of(final[:1]) == [f"results/default/eval/long/top1/seed42/{b0}.run.gz",
                                    f"results/default/eval/long/top1/seed42/{b0}.run.json"]
    # Every evaluation file is planned once, by one job.
    files = [f for _, outs in p.evaluation_jobs() for f in outs]
    assert len(files) == len(set(files))
    assert set(files) == set(p.trained_eval_files() + p.base_eval_files()
                             + p.curve_eval_files() + p.dim_eval_files() + p.run_files())


def test_promised_outputs_include_what_the_aggregates_are_made_from(plans):
    p = plans["default"]
    promised = set(p.promised())
    assert set(p.trained_eval_files()) <= promised and set(p.ladder_runs()) <= promised
    assert set(p.latency_runs()) <= promised
    # every evaluation's run file and sidecar, each benchmark's trec_eval qrels
    assert set(p.run_files()) <= promised and set(p.trec_qrels_files()) <= promised
    assert len(p.run_files()) == 2 * len(p.trained_eval_files() + p.base_eval_files()
                                         + p.dim_eval_files())
    assert {p.paths.STATS_TABLE.format(table="ci"), p.paths.CLAIMS_TABLE,
            p.paths.RESULTS} <= promised
    assert "results/default/figures/depth_ladder.png" in promised
    # ...and the usage table sums every job's record but its own and the report's
    assert set(p.measured()) >= set(p.model_files()) | set(p.data_files())
    assert p.paths.USAGE not in p.measured() and p.paths.RESULTS not in p.measured()


def test_each_shipped_study_has_its_own_folders(plans):
    """Each shipped config names its own study; every file its plan writes lies in that
    study's results/ or checkpoints/ folder, or in the shared data/."""
    assert {name: p.paths.name for name, p in plans.items()} == {n: n for n in CONFIGS}
    for p in plans.values():
        own = (f"{p.paths.results}/", f"{p.paths.checkpoints}/", "data/")
        assert all(f.startswith(own) for f in p.measured() + p.promised()), p.paths.name


@pytest.mark.parametrize("other", ["laptop", "paper", "adaptive_demo"])
def test_two_studies_write_no_file_in_common_but_data(plans, other):
    """The default study and another in one clone: the other's plan writes none of the
    default's files (models, evaluations, tables, figures, report); only data/ is shared."""
    def written(p):
        return set(p.measured()) | set(p.promised())

    common = written(plans["default"]) & written(plans[other])
    assert all(f.startswith("data/") for f in common), sorted(common)[:5]


def test_the_plan_is_a_function_of_the_config_alone(plans, tmp_path, monkeypatch):
    """No disk reads: the plan of a config is the same wherever (and whenever) it is made."""
    monkeypatch.chdir(tmp_path)
    again = StudyPlan(load(CONFIGS["default"]))
    for method in ("models", "evaluation_jobs", "promised", "measured", "ladder_runs"):
        assert getattr(again, method)() == getattr(plans["default"], method)()


def test_the_claims_grid_is_the_plans(plans):
    p = plans["default"]
    grid = spec.Grid.from_dict(p.claims_grid())
    assert grid == spec.grid_from_config(p.config)
    assert grid.recipe_seeds == {r: list(s["seeds"]) for r, s in p.recipes.items()}
    assert grid.latency_runs == p.config["latency"]["runs"]
    assert {(a["recipe"], a["strategy"], a["depth"]) for a in grid.biencoder} == {
        *p.evaluated_arms(), *(("base", s, d) for s in p.strategies for d in p.depths)}
    # the truncated arms have no learning curve
    assert not [a for a in grid.curves if a["strategy"] == "truncated"]
    lad = plans["ladder"]
    assert len(spec.Grid.from_dict(lad.claims_grid()).ladder) == len(
        {(w["arch"], w["method"], w["k"]) for w in lad.ladder_run_keys()})


def test_a_partial_config_takes_the_schemas_default_latency_runs():
    cfg = {"recipes": {"r": {"seeds": [1]}}, "depths": [1], "strategies": ["top"],
           "benchmarks": ["b"]}
    assert spec.grid_from_config(copy.deepcopy(cfg)).latency_runs == 3  # config/schema.yaml


def _without_truncated(cfg: dict) -> dict:
    cfg = copy.deepcopy(cfg)
    for recipe in cfg["recipes"].values():
        recipe["truncated"] = False
    return cfg


@pytest.mark.parametrize("name", ["default", "laptop", "paper"])
def test_the_truncated_arm_adds_evaluations_and_no_training(plans, name):
    """The fine-tuned-then-truncated arm (recipe key truncated, on by default) cuts each
    recipe's deepest per-depth model: the same trainings as without it, and one evaluation
    job per model and benchmark (strategy top: every shallower depth from one pass)."""
    p, off = plans[name], StudyPlan(_without_truncated(plans[name].config))
    assert p.models() == off.models() and p.summaries() == off.summaries()
    dims = set(p.dim_eval_files())  # eval.dims: the same jobs' files at smaller dimensions
    added = [(r, [f for f in per_query(o) if f not in dims]) for r, o in p.evaluation_jobs()
             if (r, o) not in off.evaluation_jobs()]
    assert {r for r, _ in added} == {"evaluate_truncated_one_pass"}
    assert len(added) == sum(len(s["seeds"]) for s in p.recipes.values()) * len(p.benchmarks)
    shallower = p.depths[:-1]
    for recipe, recipe_spec in p.recipes.items():
        for seed in recipe_spec["seeds"]:
            source = p.truncation_source(recipe, "truncated", seed)
            assert source == p.paths.MODEL_DIR.format(
                recipe=recipe, strategy="top", depth=p.max_depth, seed=seed) + "/model.safetensors"
            assert source in p.model_files()  # the per-depth arm's own deepest model
            for b in p.benchmarks:
                assert ("evaluate_truncated_one_pass", [p.paths.EVAL.format(
                    recipe=recipe, strategy="truncated", depth=d, seed=seed, benchmark=b)
                    for d in shallower]) in added
    # No row at the deepest depth (there the arm is the per-depth model), none of the base
    arms = {(r, s, d) for r, s, d, _ in json.loads(p.expected_grid())["arms"]}
    assert {(r, d) for r, s, d in arms if s == "truncated"} == {
        (r, d) for r in p.recipes for d in shallower}
    assert set(p.trained_eval_files()) - set(off.trained_eval_files()) == {
        f for _, outs in added for f in outs}


def test_a_layer_dropping_strategy_is_cut_per_depth_by_its_rule():
    """Strategies other than top keep other than the bottom layers: one job per shallower
    depth (rule evaluate_truncated), cutting that strategy's deepest model; freeze keeps
    every layer and has no truncated arm."""
    cfg = load(CONFIGS["default"])
    cfg["strategies"] = ["top", "bottom", "freeze"]
    p = StudyPlan(cfg)
    assert p.truncated_strategies("short") == ["truncated", "truncatedbottom"]
    per_depth = [o for r, o in p.evaluation_jobs() if r == "evaluate_truncated"]
    assert len(per_depth) == 2 * 3 * 3 * 2  # recipes x seeds x benchmarks x depths 1, 2
    assert all("/truncatedbottom" in o[0] for o in per_depth)
    assert p.truncation_source("long", "truncatedbottom", 43) == (
        "checkpoints/default/long/bottom3/seed43/model.safetensors")
    assert p.evaluation_constraints("evaluate_truncated") == {
        "recipe": "short|long", "strategy": "truncatedbottom", "depth": "1|2"}
    assert p.evaluation_rule("truncatedbottom", "short") == "evaluate_truncated"
    assert p.evaluation_rule("truncated", "long") == "evaluate_truncated_one_pass"
    assert StudyPlan({**cfg, "depths": [3]}).truncated_arms() == []  # no shallower depth


@pytest.mark.parametrize("name", ["default", "laptop", "paper"])
def test_dimensions_add_files_to_the_same_evaluation_jobs(plans, name):
    """eval.dims: every evaluation job also writes one file per depth it writes and per
    dimension (dim<N>/ beside the full-dimension file, in its --dim-out order), with no job
    of its own; the full-dimension files and every job's rule are those without dims; the
    dimension table and the layer x dimension figure join the stats and figures."""
    cfg = copy.deepcopy(plans[name].config)
    cfg["eval"]["dims"] = [16, 8]
    p, off = StudyPlan(cfg), StudyPlan({**cfg, "eval": {**cfg["eval"], "dims": []}})
    assert p.dims == [8, 16] and off.dims == []
    dims = set(p.dim_eval_files())
    assert len(dims) == 2 * (len(p.trained_eval_files()) + len(p.base_eval_files()))
    jobs, jobs_off = p.evaluation_jobs(), off.evaluation_jobs()
    with_runs = dims | set(p.runs_of(dims))
    assert [(r, [f for f in o if f not in with_runs]) for r, o in jobs] == jobs_off
    assert {f for _, o in jobs for f in o if f in dims} == dims
    for rule, outs in jobs:
        full = [f for f in per_query(outs) if f not in dims and "/steps/" not in f]
        folder_file = [f.rsplit("/", 1) for f in full]
        assert [f for f in outs if f in dims] == [
            f"{folder}/dim{m}/{file}" for folder, file in folder_file for m in (8, 16)], rule
    assert p.paths.STATS_TABLE.format(table="dims") in p.stats_tables()
    assert "depth_by_dim" in p.figures() and "depth_by_dim" not in off.figures()
    assert dims <= set(p.promised()) and not dims & set(off.promised())
