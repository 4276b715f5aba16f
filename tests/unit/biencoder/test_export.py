"""Exports: a trained model's folder with sentence-transformers' card completed by the
study's evaluation, and MTEB-shaped results that mteb's own TaskResult loads back."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.biencoder.export import model_card, mteb_results, results
from workflow_scripts.core import contracts

# The head of a card as sentence-transformers' trainer saves it (metadata, title, sections).
ST_CARD = """---
tags:
- sentence-transformers
- generated_from_trainer
pipeline_tag: sentence-similarity
library_name: sentence-transformers
---

# SentenceTransformer

This is a [sentence-transformers](https://www.SBERT.net) model trained.

## Model Details

- **Maximum Sequence Length:** 16 tokens

## Training Details

### Training Logs
| Epoch | Step | Training Loss |
"""


@pytest.fixture
def study(tmp_path):
    """A trained model folder (deepest depth 3, with a snapshot), its evaluations (its own
    and a cut to depth 1) on two benchmarks, and the benchmarks' files."""
    model = tmp_path / "ckpt" / "r" / "top3" / "seed7"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "steps" / "step2").mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "1_Pooling" / "config.json").write_text("{}")
    (model / "steps" / "step2" / "model.safetensors").write_bytes(b"snapshot")
    (model / "README.md").write_text(ST_CARD)
    (model / "train_summary.json").write_text(json.dumps({
        "base": "org/base", "strategy": "top", "depth": 3, "seed": 7, "steps": 8,
        "base_model": {"spec": "org/base", "revision": "abc123", "sha256": "b" * 64},
        "train_data": {"path": "data/train/t.parquet", "rows": 40, "sha256": "c" * 64}}))
    info, evals, rng = {}, [], np.random.default_rng(0)
    for bench, source in (("scifact", "beir"), ("pandas-docs", "docstrings")):
        folder = tmp_path / "data" / bench
        contracts.write_beir(folder, {"d1": {"text": "x"}}, {"q1": "y"}, {"q1": {"d1": 1}})
        info[bench] = {"source": source, "dir": str(folder)}
        for strategy, depth in (("top", 3), ("truncated", 1)):
            df = pd.DataFrame({"query_id": [f"q{i}" for i in range(6)],
                               **{m: rng.random(6) for m in contracts.METRICS}})
            df = df.assign(recipe="r", strategy=strategy, depth=depth, seed=7, benchmark=bench)
            path = tmp_path / "eval" / f"{strategy}{depth}" / f"{bench}.parquet"
            contracts.write_parquet(path, df)
            evals.append(str(path))
    return model, evals, info


def _card(study, tmp_path, out="export"):
    model, evals, info = study
    model_card.main(["--model", str(model), "--study", "demo", "--evals", *evals,
                     "--benchmarks-json", json.dumps(info), "--out", str(tmp_path / out)])
    return tmp_path / out


def test_model_folder_is_linked_and_its_card_completed(study, tmp_path):
    from huggingface_hub import ModelCard

    model, evals, info = study
    out = _card(study, tmp_path)
    # The model's files, hard-linked; the snapshots left out; the trained folder untouched.
    assert os.path.samefile(out / "model.safetensors", model / "model.safetensors")
    assert (out / "1_Pooling" / "config.json").exists() and not (out / "steps").exists()
    assert (model / "README.md").read_text() == ST_CARD
    card = ModelCard.load(out / "README.md")
    assert card.data.model_name == "depthlab demo: r top3 seed 7"
    assert {"sentence-transformers", "generated_from_trainer", "depthlab",
            "depth-3"} <= set(card.data.tags)
    assert card.data.base_model == "org/base"
    # model-index: the model's own arm (top, 3 layers), every metric of every benchmark.
    got = {(e.dataset_name, e.metric_type): e.metric_value for e in card.data.eval_results}
    assert len(got) == 2 * 4
    for path in evals[::2]:
        df = pd.read_parquet(path)
        for metric, name in results.MTEB_METRICS.items():
            assert got[(df.benchmark[0], name)] == pytest.approx(df[metric].mean(), abs=1e-6)
    scifact = next(e for e in card.data.eval_results if e.dataset_name == "scifact")
    assert scifact.dataset_type == "SciFact"
    assert scifact.dataset_revision == results.data_revision(info["scifact"]["dir"])
    # The depthlab section: after the title, before sentence-transformers' own sections, a
    # row per evaluation (the cut to 1 layer too), the weights' sha256.
    text = card.text
    assert text.index("# depthlab demo") < text.index("## depthlab") < text.index(
        "## Model Details") < text.index("### Training Logs")
    assert results.file_sha256(model / "model.safetensors") in text
    assert text.count("| truncated | 1 |") == 2 and text.count("| top | 3 |") == 2


# Importing mteb alone takes about 9 s: these run in make test, not in make check.
@pytest.mark.workflow
def test_mteb_results_load_back_with_mteb(study, tmp_path):
    from mteb.results.task_result import TaskResult

    model, evals, info = study
    out = tmp_path / "mteb" / "depthlab__demo-r-top3-seed7"
    mteb_results.main(["--study", "demo", "--evals", *evals[::2], "--weights",
                       str(model / "model.safetensors"), "--benchmarks-json", json.dumps(info),
                       "--out", str(out)])
    files = sorted(p.name for p in (out / mteb_results.NO_REVISION).iterdir())
    assert files == ["SciFact.json", "pandas-docs.json"]
    for path in evals[::2]:
        df = pd.read_parquet(path)
        task = "SciFact" if df.benchmark[0] == "scifact" else "pandas-docs"
        res = TaskResult.from_disk(out / mteb_results.NO_REVISION / f"{task}.json")
        assert res.task_name == task
        assert res.dataset_revision == results.data_revision(info[df.benchmark[0]]["dir"])
        assert res.get_score() == pytest.approx(df["ndcg@10"].mean())
        (scores,) = res.scores["test"]
        assert scores["hf_subset"] == "default" and scores["languages"] == ["eng-Latn"]
        for metric, name in results.MTEB_METRICS.items():
            assert scores[name] == pytest.approx(df[metric].mean())


@pytest.mark.workflow
def test_mteb_task_names_are_mteb_tasks():
    import mteb

    for beir_name, task in results.MTEB_TASKS.items():
        meta = mteb.get_task(task).metadata
        assert meta.main_score == "ndcg_at_10", beir_name
    assert results.task_name("scifact", "docstrings") == "scifact"  # a name, not MTEB's data


def test_a_bad_evaluation_stops_the_export_and_leaves_nothing(study, tmp_path):
    model, evals, info = study
    with open(evals[0], "r+b") as f:  # a per-query file cut short
        f.truncate(40)
    with pytest.raises(Exception, match=os.path.basename(evals[0])):
        _card(study, tmp_path)
    with pytest.raises(Exception, match=os.path.basename(evals[0])):
        mteb_results.main(["--study", "demo", "--evals", *evals, "--weights",
                           str(model / "model.safetensors"), "--benchmarks-json",
                           json.dumps(info), "--out", str(tmp_path / "mteb")])
    assert not (tmp_path / "export").exists() and not (tmp_path / "mteb").exists()
    assert not list(tmp_path.glob(".export.*")) and not list(tmp_path.glob(".mteb.*"))


def test_evaluations_of_another_recipe_are_refused(study, tmp_path):
    model, evals, info = study
    df = pd.read_parquet(evals[1]).assign(recipe="other")
    contracts.write_parquet(evals[1], df)
    with pytest.raises(contracts.DataError, match="2 recipes"):
        _card(study, tmp_path)


def test_an_export_killed_mid_write_leaves_no_folder_and_reruns_whole(study, tmp_path):
    """SIGKILL (no cleanup runs) after the first file is linked: the target folder does not
    exist, so the job is rerun, and the rerun writes it whole and removes the leftover."""
    import signal

    pid = os.fork()
    if pid == 0:  # the child: killed as it links its second file
        linked = []

        def link_then_die(src, dst):
            if linked:
                os.kill(os.getpid(), signal.SIGKILL)
            linked.append(src)
            os.link(src, dst)

        model_card.link_or_copy = link_then_die
        try:
            _card(study, tmp_path)
        finally:
            os._exit(3)  # not reached: the kill comes first
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert not (tmp_path / "export").exists()
    assert list(tmp_path.glob(".export.*.tmp"))  # the killed write's leftover, beside it
    out = _card(study, tmp_path)
    assert (out / "README.md").exists() and (out / "model.safetensors").exists()
    assert not list(tmp_path.glob(".export.*.tmp"))
