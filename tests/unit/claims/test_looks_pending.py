"""Seeds on demand before a look runs (claims/looks/pending.py): the look documents on disk
and their evaluations as targets of rule `all`, the next look's cost said at parse time;
and the shell arguments of one file (core/shellargs.py), never spelled out character by
character (issue #39)."""

from __future__ import annotations

from pathlib import Path

import yaml

from workflow_scripts.claims import spec
from workflow_scripts.claims.looks import pending
from workflow_scripts.core.shellargs import option, spaced
from workflow_scripts.study_config import check_config
from workflow_scripts.study_plan import StudyPlan

ROOT = Path(__file__).resolve().parents[3]


def _demo_plan() -> StudyPlan:
    """The embedded default with config/adaptive_demo.yaml stacked on it."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config.update(yaml.safe_load((ROOT / "config/adaptive_demo.yaml").read_text()))
    check_config(config)
    return StudyPlan(config)


def _look0(plan: StudyPlan) -> dict:
    """Look 0 of the demo with every driving claim open: 6 seeds per arm next."""
    seeds = plan.recipes["short"]["seeds"]
    nxt = [[r, s, d, [*seeds, *range(max(seeds) + 1, max(seeds) + 4)]]
           for r, s, d in [("short", "top", 1), ("short", "top", 2), ("short", "top", 3),
                           ("short", "adaptive", 1), ("short", "adaptive", 2),
                           ("short", "adaptive", 3)]]
    return {"look": 0, "plan": {"seeds": [3, 6, 10], "alphas": [0.001, 0.01, 0.02]},
            "claims": {}, "rows": [], "next": nxt, "stop": False}


def test_the_next_looks_cost_counts_one_training_per_model_and_a_job_per_model_benchmark():
    plan = _demo_plan()
    doc = _look0(plan)
    seeds = plan.recipes["short"]["seeds"]

    def configured(path):  # the configured seeds' models and evaluations are on disk
        return any(f"/seed{s}/" in path for s in seeds)

    cost = pending.next_look_cost([doc], plan, configured)
    # short/top at 3 depths and the adaptive model (every depth from one training), 3 seeds
    # more each: 3 x 4 trainings; 3 benchmarks: 3 x 3 x 3 + 3 x 3 evaluation jobs
    assert cost == {"look": 1, "seeds": 6, "trainings": 12, "evaluations": 36}
    assert pending.note(cost).startswith(
        "seeds on demand: look 1 (6 seeds per arm) runs 12 trainings and 36 evaluation jobs "
        "next")
    # nothing on disk: the configured seeds' jobs are counted too
    assert pending.next_look_cost([doc], plan) == {**cost, "trainings": 24, "evaluations": 72}
    # after an interrupted run, what it wrote is not counted either
    new1 = f"top1/seed{max(seeds) + 1}/"
    part = pending.next_look_cost([doc], plan, lambda p: configured(p) or new1 in p)
    assert (part["trainings"], part["evaluations"]) == (11, 33)
    assert pending.next_look_cost([{**doc, "stop": True}], plan) is None
    assert pending.next_look_cost([], plan) is None and pending.note(None) == ""


def test_the_chain_and_its_files_are_the_looks_on_disk_and_the_next_one():
    docs = {0: {"look": 0, "stop": False}, 1: {"look": 1, "stop": True}, 2: {"look": 2}}
    assert pending.chain(docs.get) == [docs[0], docs[1]]  # stops at the one saying stop
    results = "results/demo"
    assert pending.looks_files([docs[0], docs[1]], results) == [
        "results/demo/looks/look0.json", "results/demo/looks/look1.json"]
    assert pending.chain({0: docs[0]}.get) == [docs[0]]  # look 1 not written yet
    assert pending.looks_files([docs[0]], results) == ["results/demo/looks/look0.json",
                                                       "results/demo/looks/look1.json"]
    assert pending.looks_files([], results) == ["results/demo/looks/look0.json"]


def test_the_looks_evaluations_are_every_seed_a_look_read_or_asks_for():
    plan = _demo_plan()
    grid = spec.Grid.from_dict(plan.claims_grid())
    claims = spec.parse(plan.config["claims"], grid)
    doc = _look0(plan)
    doc["claims"] = {"per-depth-beats-train-once": {"status": "open", "arms": doc["next"]},
                     "gone-from-config": {"status": "open", "arms": doc["next"]}}
    files = pending.evaluations([doc], claims, grid, plan.paths.results)
    assert (f"{plan.paths.results}/eval/short/top1/seed47/beir-nfcorpus-docstrings.parquet"
            not in files)
    seeds = {f.split("/seed")[1].split("/")[0] for f in files if "/short/" in f}
    assert seeds == {str(s) for s in doc["next"][0][3]}
    assert len(files) == len(set(files))
    assert all(f.startswith(f"{plan.paths.results}/eval/") for f in files)


def test_one_file_is_one_argument_never_its_characters():
    look = "results/looks/look1.json"
    # the claims rule's input.looks after an interrupt: the checkpoint's one file, a str
    assert option("--looks", look) == f"--looks {look}"
    assert option("--looks", [look, "results/looks/look2.json"]) == (
        f"--looks {look} results/looks/look2.json")
    assert option("--looks", (Path(look),)) == f"--looks {look}"
    assert spaced(Path(look)) == look
    assert option("--previous", []) == "" and option("--previous", "") == ""
    assert " r e s u l t s" not in option("--looks", look)
