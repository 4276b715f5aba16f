"""The workflow end to end on the tiny study (tests/helpers/tiny_study.py): its outputs, and what
an edit reruns. Dry runs of the shipped configs and config errors:
tests/workflow/test_config_dry_runs.py."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import ROOT, job_counts, planned_jobs, snakemake, trained_models
from tiny_study import TINY_BENCHMARKS, TINY_CLAIMS

from workflow_scripts.biencoder.eval_origin import sha256 as provenance_sha256
from workflow_scripts.core import contracts, paths, provenance


def test_tiny_study_runs_end_to_end(tiny_run):
    wd, cfg, proc = tiny_run
    counts = job_counts(proc.stdout + proc.stderr)
    # recipes x depths x seeds, r4's adaptive seeds...
    assert len(set(trained_models(proc.stdout + proc.stderr))) == 2 * 2 * 2 + 2
    # ...one job per model
    assert {r: n for r, n in counts.items() if r.startswith("train")} == {"train": 10}
    assert counts["evaluate_trained"] == 4 * len(TINY_BENCHMARKS)  # r1's models
    # One job per benchmark for every depth of the base, and of each adaptive model
    assert "evaluate_base" not in counts
    assert counts["evaluate_base_one_pass"] == len(TINY_BENCHMARKS)
    # r4 has a learning curve: its final models are evaluated in their snapshots' jobs
    assert "evaluate_train_once" not in counts
    assert counts["evaluate_steps"] == 4 * len(TINY_BENCHMARKS)
    assert counts["evaluate_steps_train_once"] == 2 * len(TINY_BENCHMARKS)
    # r4's top2 models cut to depth 1, one job per model and benchmark; r1 has the arm off
    assert counts["evaluate_truncated_one_pass"] == 2 * len(TINY_BENCHMARKS)
    assert "evaluate_truncated" not in counts
    assert counts["curves"] == 1 and counts["figure_learning_curves"] == 1
    assert counts["compute"] == 1 and counts["figure_quality_vs_compute"] == 1
    for recipe in ("r1", "r4"):
        for depth in (1, 2):
            model = wd / f"checkpoints/default/{recipe}/top{depth}/seed1"
            assert (model / "model.safetensors").exists()
            summary = json.loads((model / "train_summary.json").read_text())
            assert summary["steps"] == {"r1": 2, "r4": 8}[recipe]
            # what made it: the code's version and every package that shapes the numbers
            assert len(summary["code"]["modules_sha256"]) == 64
            assert summary["packages"]["numpy"]
            snapshots = sorted(p.name for p in (model / "steps").glob("step*"))
            assert snapshots == (["step2", "step4"] if recipe == "r4" else [])
    snaps = contracts.read_eval(wd / "results/default/eval/r4/top2/seed1/steps/tiny-a.parquet")
    assert sorted(snaps.step.unique()) == [2, 4] and len(snaps) == 2 * 12
    _check_train_once_arm(wd)
    _check_truncated_arm(wd)
    _check_dims(wd)
    _check_runs(wd)
    cur = pd.read_parquet(wd / "results/default/stats/curves.parquet")
    assert set(cur.recipe) == {"r4"} and sorted(cur.step.unique()) == [0, 2, 4, 8]
    assert set(cur.strategy) == {"top", "adaptive"}
    onset = contracts.read_stats(wd / "results/default/stats", "curves_onset")
    assert len(onset) == 2 * 2 * 3  # strategies x depths x (2 benchmarks + all)
    assert (wd / "results/default/figures/learning_curves.png").stat().st_size > 10_000
    # Every test query appears in every evaluation, also those scoring 0.
    n_queries = {b: len(contracts.load_queries(wd / f"data/beir/{b}/queries.jsonl"))
                 for b in TINY_BENCHMARKS}
    df = contracts.read_eval(wd / "results/default/eval/r4/top2/seed2/tiny-b.parquet")
    assert len(df) == n_queries["tiny-b"] == 12
    assert set(df.columns) >= {"query_id", *contracts.METRICS, *contracts.RUN_KEYS}
    assert df["recipe"].eq("r4").all() and df["seed"].eq(2).all()
    made = df.attrs["provenance"]
    # the study runs in a copy of the workflow (no .git there: no commit), the same code
    assert made["code"] == {"git_commit": None,
                            "modules_sha256": provenance.code_sha256("biencoder.evaluate")}
    assert made["trained_with"]["packages"]["tokenizers"] and made["packages"]["pyarrow"]
    base = contracts.read_eval(wd / "results/default/eval/base/top1/tiny-a.parquet")
    assert base["seed"].eq(-1).all() and len(base) == n_queries["tiny-a"]
    ci = pd.read_parquet(wd / "results/default/stats/ci.parquet")
    assert set(ci.benchmark) == {*TINY_BENCHMARKS, "all"}
    assert (ci.ci_low <= ci.estimate).all() and (ci.estimate <= ci.ci_high).all()
    comp = pd.read_parquet(wd / "results/default/stats/comparisons.parquet")
    assert set(comp.kind) == {"trained_vs_base", "depth", "recipe", "train_once", "strategy",
                              "truncated"}
    once = comp[comp.kind == "train_once"]
    assert set(zip(once.a, once.b, strict=True)) == {("r4/top1", "r4/adaptive1"),
                                                     ("r4/top2", "r4/adaptive2")}
    assert set(once.design) == {"paired"}
    vs_base = comp[(comp.kind == "trained_vs_base") & (comp.strategy_b == "adaptive")]
    assert set(vs_base.a) == {"base/top1", "base/top2"}  # the weights it starts from
    lat = contracts.read_latency(wd / "results/default/latency/run0.parquet")
    assert set(lat.depth) == {1, 2}
    doc = json.loads((wd / "results/default/latency/coherence.json").read_text())
    assert doc["runs"][0]["relative_ladder"]["q"][0] == 1.0 and "q" in doc["how_to_read"]
    assert isinstance(doc["absolute_verified"], bool)
    for name in ("depth_vs_budget", "per_benchmark_change", "seed_variance", "pareto",
                 "quality_vs_compute"):
        assert (wd / f"results/default/figures/{name}.png").stat().st_size > 10_000
    results = (wd / "results/default/RESULTS.md").read_text()
    for heading in ("Mean ndcg@10 with 95% calibrated CI", "Training vs the untrained",
                    "Latency ladder", "Data", "Learning curves of ndcg@10",
                    "Onset of the decline", "Train once vs per depth", "Training compute"):
        assert heading in results
    assert (ci["interval"] == "calibrated").all() and ci.mb_ci_low.notna().all()
    assert "Multi-Bootstrap CI" in results and "p (MB)" in results
    usage = results.split("## Measured time and memory per rule", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"results/default/benchmarks/[\w./]+\.json", usage)
    assert len(named) == 2 and all((wd / f).exists() for f in named)  # the records it names
    assert (wd / "results/default/figures/depth_ladder.png").exists()
    assert list((wd / "logs/default/train").rglob("*.log"))


def _check_dims(wd) -> None:
    """eval.dims [8, 16]: every evaluation job also wrote each depth's files at 8 and 16
    dimensions (no job of their own: the counts above), each saying its dimension; their
    table holds every arm at each dimension, drawn in the layer x dimension figure and
    reported."""
    for folder in ("r1/top1/seed1", "r4/top2/seed2", "r4/adaptive1/seed1",
                   "r4/truncated1/seed1", "base/top2"):
        for m in (8, 16):
            df = contracts.read_eval(wd / f"results/default/eval/{folder}/dim{m}/tiny-a.parquet")
            assert set(df["dim"]) == {m} and df.attrs["provenance"]["dim"] == m
            assert len(df) == 12
    dims = contracts.read_stats(wd / "results/default/stats", "dims")
    ci = contracts.read_stats(wd / "results/default/stats", "ci")
    assert sorted(dims["dim"].unique()) == [8, 16]
    key = ["recipe", "strategy", "depth", "benchmark"]
    for m in (8, 16):
        assert sorted(map(tuple, dims[dims["dim"] == m][key].to_numpy())) == sorted(
            map(tuple, ci[key].to_numpy()))
    assert (wd / "results/default/figures/depth_by_dim.png").stat().st_size > 10_000
    assert "ndcg@10 by layers and embedding dimension" in (
        wd / "results/default/RESULTS.md").read_text()


def _check_runs(wd) -> None:
    """Every per-query file but the snapshots' has its run and sidecar, and each run
    re-scored by ir_measures gives its file's values on every query (bench/rescore_runs.py:
    RR@10 orders ties otherwise, so mrr@10 is checked against trec_eval's RR cut at 10)."""
    import sys
    from contextlib import chdir

    sys.path.insert(0, str(ROOT / "bench"))
    from rescore_runs import TREC_RR, agreement

    files = [f for f in (wd / "results/default/eval").rglob("*.parquet") if "steps" not in f.parts]
    runs = sorted((wd / "results/default/eval").rglob("*.run.gz"))
    assert sorted(paths.run_files(str(f))[0] for f in files) == sorted(map(str, runs))
    assert all((wd / paths.TREC_QRELS.format(benchmark=b)).exists() for b in TINY_BENCHMARKS)
    with chdir(wd):
        table = pd.concat([agreement(r) for r in runs], ignore_index=True)
    checked = table[table.metric.isin(["ndcg@10", "recall@100", "map@100", TREC_RR])]
    assert (checked.equal == checked.queries).all(), checked[checked.equal < checked.queries]


def _check_train_once_arm(wd) -> None:
    """r4's adaptive arm: one model per seed at depth 2, evaluated at depths 1 and 2; the
    compute table says that one training serves both depths."""
    assert not (wd / "checkpoints/default/r4/adaptive1").exists()
    summary = json.loads(
        (wd / "checkpoints/default/r4/adaptive2/seed1/train_summary.json").read_text())
    assert summary["loss"]["name"] == "AdaptiveLayerLoss" and summary["sentence_transformers"]
    for depth in (1, 2):
        df = contracts.read_eval(
            wd / f"results/default/eval/r4/adaptive{depth}/seed2/tiny-b.parquet")
        assert set(df.depth) == {depth} and set(df.strategy) == {"adaptive"} and len(df) == 12
        steps = contracts.read_eval(wd / f"results/default/eval/r4/adaptive{depth}/seed1/steps/"
                                    "tiny-a.parquet")
        assert sorted(steps.step.unique()) == [2, 4]
    compute = contracts.read_stats(wd / "results/default/stats", "compute").set_index(
        ["recipe", "strategy", "depth"])
    once, top = compute.loc[("r4", "adaptive", 1)], compute.loc[("r4", "top", 1)]
    assert (once.trained_depth, once.depths_served, once.layer_steps) == (2, 2, 8 * 2)
    assert (top.trained_depth, top.depths_served, top.layer_steps) == (1, 1, 8 * 1)
    assert (once.arm_trainings, top.arm_trainings) == (2, 4)  # seeds, seeds x depths
    assert once.arm_layer_steps == 2 * 16 and top.arm_layer_steps == 2 * (8 + 16)


def _check_truncated_arm(wd) -> None:
    """r4's fine-tuned-then-truncated arm: its top2 models cut to depth 1 (no training of its
    own, no row at depth 2), its files naming the model cut; in the statistics, the compute
    table (the top2 trainings, counted in full) and the claims."""
    assert not list((wd / "checkpoints/default").glob("*/truncated*"))
    assert not (wd / "results/default/eval/r4/truncated2").exists()
    assert not (wd / "results/default/eval/r1/truncated1").exists()  # r1: truncated off
    df = contracts.read_eval(wd / "results/default/eval/r4/truncated1/seed2/tiny-b.parquet")
    assert set(df.strategy) == {"truncated"} and set(df.depth) == {1} and len(df) == 12
    cut = df.attrs["provenance"]["truncated_from"]
    assert cut["model"] == "checkpoints/default/r4/top2/seed2"
    assert cut["summary"] == "checkpoints/default/r4/top2/seed2/train_summary.json"
    assert (cut["trained_strategy"], cut["trained_depth"], cut["seed"]) == ("top", 2, 2)
    assert (cut["cut"], cut["depth"], cut["kept_layers"]) == ("top", 1, [0])
    ci = pd.read_parquet(wd / "results/default/stats/ci.parquet")
    arm = ci[ci.strategy == "truncated"]
    assert set(zip(arm.recipe, arm.depth, strict=True)) == {("r4", 1)}
    assert set(arm.benchmark) == {*TINY_BENCHMARKS, "all"} and set(arm.n_seeds) == {2}
    comp = pd.read_parquet(wd / "results/default/stats/comparisons.parquet")
    vs = comp[comp.kind == "truncated"]
    assert set(zip(vs.a, vs.b, strict=True)) == {("r4/top1", "r4/truncated1")}
    assert set(vs.design) == {"paired"}
    vs_base = comp[(comp.kind == "trained_vs_base") & (comp.strategy_b == "truncated")]
    assert set(vs_base.a) == {"base/top1"}
    compute = contracts.read_stats(wd / "results/default/stats", "compute").set_index(
        ["recipe", "strategy", "depth"])
    t = compute.loc[("r4", "truncated", 1)]
    assert (t.trained_depth, t.depths_served, t.layer_steps, t.train_once) == (2, 2, 16, True)
    assert (t.arm_trainings, t.arm_layer_steps) == (2, 2 * 16)  # r4/top2's, one per seed
    assert ("r4", "truncated", 2) not in compute.index
    table = pd.read_parquet(wd / "results/default/claims.parquet")
    members = table[(table.claim == "per-depth-beats-truncated") & (table.row == "member")]
    assert list(members.member) == ["r4/top1 − r4/truncated1 [all]"]
    results = (wd / "results/default/RESULTS.md").read_text()
    assert "Per depth vs fine-tuned then truncated" in results
    assert "fine-tuned top, truncated" in results  # the compute table's kind


def test_rerun_has_nothing_to_do(tiny_run):
    wd, cfg, _ = tiny_run
    proc = snakemake(wd, "--configfile", str(cfg), "--cores", "1", "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def _dry(wd, cfg, *extra):
    proc = snakemake(wd, "--configfile", str(cfg), "--cores", "1", "-n", *extra)
    return proc.stdout + proc.stderr


def _dry_edited(wd, cfg, tmp_path, edit) -> str:
    """The dry run of the finished tiny study under its config as `edit(conf)` changes it."""
    conf = yaml.safe_load(cfg.read_text())
    edit(conf)
    changed = tmp_path / "edited.yaml"
    changed.write_text(yaml.safe_dump(conf))
    return _dry(wd, changed)


def test_moved_study_has_nothing_to_do(tiny_run_copy):
    """Code inputs are relative to the workflow folder: a moved clone (the finished study
    copied to another folder) reruns nothing."""
    moved, cfg = tiny_run_copy
    assert "Nothing to be done" in _dry(moved, cfg)


# Rules whose command's import closure holds the module (an independent list, by hand).
IMPORTERS = {
    # (the tiny study's train-once arm has a curve: evaluate_steps_train_once evaluates it)
    "workflow_scripts/biencoder/model/truncation.py": {"train", "evaluate_trained",
                                             "evaluate_base_one_pass",
                                             "evaluate_steps", "evaluate_steps_train_once",
                                             "evaluate_truncated_one_pass", "latency_run"},
    "workflow_scripts/stats/multibootstrap.py": {"stats", "curves", "ladder_stats", "claims",
                                                 "stats_dims"},
    "workflow_scripts/claims/render.py": {"claims", "claims_figure"},
    "workflow_scripts/biencoder/report/figures.py": {"figure_depth_vs_budget", "figure_pareto",
                                              "figure_per_benchmark_change",
                                              "figure_seed_variance",
                                              "figure_learning_curves",
                                              "figure_quality_vs_compute",
                                              "figure_depth_by_dim"},
}


@pytest.mark.parametrize("module", sorted(IMPORTERS))
def test_code_change_reruns_exactly_the_stages_that_import_it(tiny_run_copy, module):
    wd, cfg = tiny_run_copy
    path = wd / module
    original = path.read_text()
    path.write_text(original + "\n# changed\n")
    jobs = planned_jobs(_dry(wd, cfg))
    path.write_text(original)
    # The rules whose jobs list the module as an input are exactly those that import it...
    assert {rule for rule, _, inputs in jobs if module in inputs} == IMPORTERS[module]
    # ...and every other planned job only consumes what those jobs rewrite.
    for rule, reason, inputs in jobs:
        assert module in inputs or reason.startswith("Input files updated by another job"), (
            rule, reason)
    if module == min(IMPORTERS):  # same content: up to date again (one module shows it)
        assert "Nothing to be done" in _dry(wd, cfg)


def test_added_seed_trains_only_the_new_seed(tiny_run, tmp_path):
    wd, cfg, _ = tiny_run

    def edit(conf):
        conf["recipes"]["r1"]["seeds"].append(3)
        conf["recipes"]["r4"]["checkpoint_every"] = 2  # changes no model: retrains nothing

    jobs = planned_jobs(_dry_edited(wd, cfg, tmp_path, edit))
    counts = {}
    for rule, _, _ in jobs:
        counts[rule] = counts.get(rule, 0) + 1
    assert counts["train"] == 2  # the new seed at both depths
    assert counts["evaluate_trained"] == 2 * len(TINY_BENCHMARKS)
    assert "evaluate_base_one_pass" not in counts and "latency_run" not in counts
    assert "evaluate_train_once" not in counts  # r4's arm
    assert "evaluate_steps" not in counts and "curves" not in counts  # r1 has no curve
    assert {"stats", "report", "usage"} <= set(counts)  # the aggregates
    assert not any(r.startswith("ladder") for r in counts)


def test_training_reports_retrain_nothing(tiny_run, tmp_path):
    """report_to (TensorBoard) is a view of a training, not part of it: turning it on for
    every recipe plans no job."""
    wd, cfg, _ = tiny_run

    def edit(conf):
        for recipe in conf["recipes"].values():
            recipe["report_to"] = ["tensorboard"]

    out = _dry_edited(wd, cfg, tmp_path, edit)
    assert "Nothing to be done" in out, out[-2000:]


def test_export_completes_cards_and_writes_mteb_results(tiny_run_copy):
    """`snakemake export` on a finished study: every trained model's folder with its card
    completed (model-index of its own arm), every evaluated arm's MTEB files with the mean of
    its per-query file; it trains and evaluates nothing and leaves the study up to date."""
    from huggingface_hub import ModelCard
    from sentence_transformers import SentenceTransformer

    wd, cfg = tiny_run_copy
    out = snakemake(wd, "export", "--configfile", str(cfg), "--cores", "1")
    counts = job_counts(out.stdout + out.stderr)
    assert not {"train", "evaluate_trained", "evaluate_train_once"} & set(counts), counts
    models = sorted((wd / "results/default/export/models").glob("*/*/seed*"))
    assert len(models) == len(trained_models(_dry(wd, cfg, "--forceall")))
    exported = wd / "results/default/export/models/r4/top2/seed1"
    same = [SentenceTransformer(str(f), device="cpu").encode(["merge two frames"])
            for f in (exported, wd / "checkpoints/default/r4/top2/seed1")]
    assert (same[0] == same[1]).all()  # the exported folder loads as the model
    card = ModelCard.load(exported / "README.md")
    assert card.data.model_name == "depthlab default: r4 top2 seed 1"
    own = pd.read_parquet(wd / "results/default/eval/r4/top2/seed1/tiny-a.parquet")
    ndcg = {e.dataset_name: e.metric_value for e in card.data.eval_results
            if e.metric_type == "ndcg_at_10"}
    assert ndcg["tiny-a"] == pytest.approx(own["ndcg@10"].mean(), abs=1e-6)
    assert "| truncated | 1 | tiny-a |" in card.text  # the cut of this model, too
    mteb = wd / "results/default/export/mteb/depthlab__default-r4-truncated1-seed2"
    doc = json.loads((mteb / "no_revision_available/tiny-b.json").read_text())
    cut = pd.read_parquet(wd / "results/default/eval/r4/truncated1/seed2/tiny-b.parquet")
    assert doc["scores"]["test"][0]["main_score"] == pytest.approx(cut["ndcg@10"].mean())
    assert "Nothing to be done" in _dry(wd, cfg)


def test_changed_setting_reruns_only_the_stages_that_read_it(tiny_run, tmp_path):
    wd, cfg, _ = tiny_run
    jobs = planned_jobs(_dry_edited(
        wd, cfg, tmp_path, lambda conf: conf["stats"].update(equivalence_epsilon=0.02)))
    by_params = {rule for rule, reason, _ in jobs if "Params have changed" in reason}
    assert by_params == {"stats"}
    assert not {"train", "evaluate_trained", "evaluate_base", "latency_run"} & {
        rule for rule, _, _ in jobs}


def test_changed_curve_settings_rerun_only_their_recipe_and_stage(tiny_run, tmp_path):
    wd, cfg, _ = tiny_run
    jobs = planned_jobs(_dry_edited(
        wd, cfg, tmp_path, lambda conf: conf["stats"].update(onset_epsilon=0.02)))
    assert {rule for rule, reason, _ in jobs if "Params have changed" in reason} == {"curves"}
    assert {rule for rule, _, _ in jobs} == {"curves", "figure_learning_curves", "report",
                                             "usage", "all"}
    # One snapshot fewer: r4's curve only.
    out = _dry_edited(wd, cfg, tmp_path,
                      lambda conf: conf["recipes"]["r4"].update(eval_steps=[4, 8]))
    counts = job_counts(out)
    assert len(trained_models(out)) == 4 + 2
    assert counts["evaluate_steps"] == 4 * len(TINY_BENCHMARKS)
    assert counts["evaluate_steps_train_once"] == 2 * len(TINY_BENCHMARKS)
    assert set(re.findall(r"wildcards: recipe=(\w+)", out)) == {"r4"}
    assert "stats" in counts  # r4's final models are retrained (identical, but new files)


def test_changed_loss_setting_retrains_only_the_train_once_arm(tiny_run, tmp_path):
    """A train-once loss setting is a param of the arm's trainings only: the per-depth
    trainings of the same recipe stay."""
    wd, cfg, _ = tiny_run
    out = _dry_edited(wd, cfg, tmp_path, lambda conf: conf["recipes"]["r4"].update(
        train_once_loss={"kl_temperature": 0.5}))
    trains = [(rule, reason) for rule, reason, _ in planned_jobs(out)
              if rule.startswith("train")]
    assert sorted(trained_models(out)) == [
        f"checkpoints/default/r4/adaptive2/seed{s}/model.safetensors" for s in (1, 2)]
    assert trains and all("Params have changed" in r for _, r in trains)
    assert set(re.findall(r"output: checkpoints/default/r4/(\w+?)\d/seed\d/model", out)) == {
        "adaptive"}
    counts = job_counts(out)
    assert counts["evaluate_steps_train_once"] == 2 * len(TINY_BENCHMARKS)
    assert not {"evaluate_trained", "evaluate_steps", "evaluate_base_one_pass"} & set(counts)


def test_edited_claim_reruns_only_the_claims_their_figure_and_the_report(tiny_run, tmp_path):
    wd, cfg, _ = tiny_run
    table = pd.read_parquet(wd / "results/default/claims.parquet")
    heads = table[table.row == "claim"]
    assert list(heads.claim) == [c["id"] for c in TINY_CLAIMS]
    assert "not-applicable" not in set(heads.verdict)
    assert (wd / "results/default/figures/claims.png").stat().st_size > 10_000
    results = (wd / "results/default/RESULTS.md").read_text()
    assert results.index("## Claims") < results.index("## Mean")
    # Registered when the first run started, before any evaluation existed
    n = len(TINY_CLAIMS)
    assert f"Registered before their data: {n} of {n} decided claims" in results
    assert set(heads.registration) == {"registered"}
    edited = _dry_edited(wd, cfg, tmp_path,
                         lambda conf: conf["claims"][1].update(threshold=0.01))
    assert {rule for rule, _, _ in planned_jobs(edited)} == {  # usage: the claims' benchmarks
        "claims", "claims_figure", "usage", "report", "all"}
    # The rerun reason names the claim edited, not the claims' whole settings
    reason = next(r for rule, r, _ in planned_jobs(edited) if rule == "claims")
    assert "'settings.claims[1]:per-depth-beats-train-once " in reason and len(reason) < 300


def test_a_claim_edited_after_its_data_is_post_hoc(tiny_run_copy):
    """docs/claims.md, "Registered before their data": the edit is recorded when the run
    starts, the claims rerun, and the report marks that claim post hoc, the rest not."""
    wd, cfg = tiny_run_copy
    conf = yaml.safe_load(cfg.read_text())
    conf["claims"][1]["threshold"] = 0.01
    cfg.write_text(yaml.safe_dump(conf))
    proc = snakemake(wd, "--configfile", str(cfg), "--cores", "1", "results/default/claims.md")
    assert proc.returncode == 0, proc.stderr[-3000:]
    cid = conf["claims"][1]["id"]
    assert (f"claims: edited claim {cid!r} registered after its data existed: it will be "
            "decided as post hoc") in proc.stderr
    record = json.loads((wd / "results/default/claims_registration.json").read_text())
    assert len(record["claims"][cid]["history"]) == 1
    heads = pd.read_parquet(wd / "results/default/claims.parquet").query("row == 'claim'")
    assert heads.set_index("claim").registration.to_dict() == {
        c["id"]: "post hoc" if c["id"] == cid else "registered" for c in conf["claims"]}
    md = (wd / "results/default/claims.md").read_text()
    assert f"not covered by the error rate): {cid}." in md


def test_changed_benchmark_reruns_only_its_evaluations(tiny_run_copy):
    wd, cfg = tiny_run_copy
    queries = wd / "data/beir/tiny-a/queries.jsonl"
    rows = [json.loads(line) for line in queries.read_text().splitlines()]
    rows[0]["text"] = "Compute the arithmetic mean of the values"  # new content, same ids
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = contracts.read_eval(wd / "results/default/eval/r1/top1/seed1/tiny-b.parquet")
    written = {p: p.stat().st_mtime_ns
               for p in (wd / "results/default/eval").rglob("tiny-b.parquet")}

    dry = snakemake(wd, "--configfile", str(cfg), "--cores", "1", "-n")
    counts = job_counts(dry.stdout + dry.stderr)
    assert not trained_models(dry.stdout) and counts.get("docstring_benchmark", 0) == 0
    assert not {r for r in counts if r.startswith("train")}
    assert counts["evaluate_trained"] == 4  # r1's models, on tiny-a only
    assert counts["evaluate_base_one_pass"] == 1  # both depths of the base
    assert counts["evaluate_steps"] == 4  # r4's models and their snapshots, on tiny-a only
    assert counts["evaluate_steps_train_once"] == 2  # both depths of each adaptive model
    assert counts["evaluate_truncated_one_pass"] == 2  # r4's top2 models cut to depth 1
    assert {"stats", "report", "curves"} <= set(counts)
    planned = [f for line in re.findall(r"output: (.*)", dry.stdout)
               for f in line.split(", ") if f.startswith("results/default/eval/")]
    runs = [f for f in planned if f.endswith(paths.RUN_SUFFIXES)]
    planned = [f for f in planned if f not in runs]
    # each rewritten per-query file but the snapshots' with its run and sidecar
    assert sorted(runs) == sorted(r for f in planned if "/steps/" not in f
                                  for r in paths.run_files(f))
    full = [p for p in planned if "/dim" not in p]
    assert len(full) == 4 + 2 + 4 * 2 + 2 * 2 * 2 + 2  # final, snapshot, truncated tables
    # eval.dims: a final model's tables at both dimensions, beside its full-dimension one
    at_dims = {re.sub(r"/dim\d+/", "/", p) for p in planned if "/dim" in p}
    assert at_dims <= set(full) and len(planned) - len(full) == 2 * len(at_dims)
    assert all(p.endswith("/tiny-a.parquet") for p in planned)

    # One job of each evaluation rule the change reruns (the plan above has all of them; the
    # rest are the same rules on other models): each rewrites its tiny-a tables only.
    rerun = ["results/default/eval/r1/top1/seed1/tiny-a.parquet",  # evaluate_trained
             "results/default/eval/base/top1/tiny-a.parquet",  # evaluate_base_one_pass
             "results/default/eval/r4/top1/seed1/steps/tiny-a.parquet",  # evaluate_steps
             "results/default/eval/r4/adaptive1/seed1/steps/tiny-a.parquet"]  # ..._train_once
    old = {f: (wd / f).stat().st_mtime_ns for f in rerun}
    base = wd / "results/default/eval/base/top1/tiny-a.parquet"
    old_origin = pd.read_parquet(base).attrs["provenance"]["data"]["sha256"]
    proc = snakemake(wd, "--configfile", str(cfg), "--cores", "2", *rerun)
    assert job_counts(proc.stdout + proc.stderr) == {
        "evaluate_trained": 1, "evaluate_base_one_pass": 1, "evaluate_steps": 1,
        "evaluate_steps_train_once": 1}
    assert all((wd / f).stat().st_mtime_ns != t for f, t in old.items())
    after = contracts.read_eval(wd / "results/default/eval/r1/top1/seed1/tiny-b.parquet")
    pd.testing.assert_frame_equal(before, after)  # the other benchmark was not redone
    # The rebuilt file's record names the edited data, as does its run's sidecar.
    origin = pd.read_parquet(base).attrs["provenance"]["data"]["sha256"]
    assert origin["queries.jsonl"] == provenance_sha256(queries) != old_origin["queries.jsonl"]
    assert origin["corpus.jsonl"] == old_origin["corpus.jsonl"]
    sidecar = json.loads(Path(paths.run_files(str(base))[1]).read_text())
    assert sidecar["provenance"]["data"]["sha256"] == origin
    assert len(written) == len(planned) and all(  # none of its tables was rewritten
        p.stat().st_mtime_ns == t for p, t in written.items())


def test_html_report_builds(tiny_run_copy):
    wd, cfg = tiny_run_copy
    snakemake(wd, "--configfile", str(cfg), "--report", "results/default/report.html")
    assert (wd / "results/default/report.html").stat().st_size > 100_000


def test_a_missing_artifact_is_rebuilt_with_what_is_made_from_it(tiny_run):
    """Every artifact the study promises is a target (study_plan.promised): deleting a
    per-query file, a stats table or a ladder run plans its rebuild and the aggregates after
    it, never "Nothing to be done" with RESULTS.md standing on a missing input."""
    wd, cfg, _ = tiny_run
    cases = {
        "results/default/eval/r1/top1/seed1/tiny-a.parquet": {"evaluate_trained", "stats",
                                                              "report"},
        "results/default/stats/ci.parquet": {"stats", "figure_depth_vs_budget", "report"},
        "results/default/ladder/runs/t/bp/k1/seed2.parquet": {"ladder_train", "ladder_stats",
                                                       "ladder_summary", "report"},
    }
    for path, rules in cases.items():
        f = wd / path
        kept, stat = f.read_bytes(), f.stat()
        f.unlink()
        try:
            planned = planned_jobs(_dry(wd, cfg))
        finally:  # the shared study stays finished: the same bytes and times
            f.write_bytes(kept)
            os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert rules <= {rule for rule, _, _ in planned}, (path, planned)
        assert not {"train", "latency_run"} & {rule for rule, _, _ in planned}
        print(f"\nrm {path}: snakemake -n plans "
              + ", ".join(sorted({rule for rule, _, _ in planned})))  # pytest -s shows it


def test_the_nan_remedy_as_written_gives_back_a_complete_study(tiny_run_copy):
    """docs/guide.md, "NaN or inf in a per-query file": the stats job stops naming the file
    (and Snakemake removes the stats tables); `rm FILE`, then `snakemake --cores 2`, gives
    back the evaluation, every stats table and a RESULTS.md made after it; nothing is left
    to do."""
    wd, cfg = tiny_run_copy
    rel = "results/default/eval/r1/top1/seed1/tiny-a.parquet"
    f = wd / rel
    df = pd.read_parquet(f)
    df.loc[0, "ndcg@10"] = float("nan")
    df.to_parquet(f)
    failed = snakemake(wd, "--configfile", str(cfg), "--cores", "2", check=False)
    said = failed.stdout + failed.stderr
    assert failed.returncode != 0
    assert (f"{rel}: column 'ndcg@10' holds 1 non-finite value(s) (NaN or inf), first at "
            "row(s) 0") in said, said[-3000:]
    assert not (wd / "results/default/stats/ci.parquet").exists()  # removed with the failed job
    f.unlink()  # the remedy, as written
    fixed = snakemake(wd, "--configfile", str(cfg), "--cores", "2")
    counts = job_counts(fixed.stdout + fixed.stderr)
    print(f"\nrm {rel}; snakemake --cores 2 ran " + ", ".join(f"{r} {n}" for r, n in
                                                             counts.items()))
    assert {"evaluate_trained", "stats", "claims", "report"} <= set(counts)
    assert contracts.read_parquet(f)["ndcg@10"].notna().all()
    results = wd / "results/default/RESULTS.md"
    for table in ("ci", "seeds", "comparisons", "variance", "seeds_needed", "agreement"):
        t = wd / f"results/default/stats/{table}.parquet"
        assert t.stat().st_mtime > f.stat().st_mtime, table
        assert results.stat().st_mtime >= t.stat().st_mtime
    assert (wd / "results/default/claims.md").stat().st_mtime > f.stat().st_mtime
    assert "Nothing to be done" in _dry(wd, cfg)
