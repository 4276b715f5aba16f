"""BEIR I/O (against beir's own loader), validation messages and atomic writes."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from workflow_scripts.core import contracts


def _beir_folder(tmp_path):
    corpus = {"d1": {"title": "T1", "text": "first doc"}, "d2": {"title": "", "text": "second"},
              "d3": {"title": "T3", "text": "third"}}
    queries = {"q1": "what is first", "q2": "second one", "q3": "no judgments here"}
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 2, "d3": 1}}
    contracts.write_beir(tmp_path, corpus, queries, qrels)
    return corpus, queries, qrels


def test_reader_agrees_with_beir_generic_data_loader(tmp_path):
    from beir.datasets.data_loader import GenericDataLoader

    _beir_folder(tmp_path)
    ours = contracts.load_beir(tmp_path)
    theirs = GenericDataLoader(data_folder=str(tmp_path)).load(split="test")
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]  # queries without qrels dropped, as beir does
    assert ours[2] == theirs[2]


def test_bad_json_names_file_and_line(tmp_path):
    _beir_folder(tmp_path)
    p = tmp_path / "queries.jsonl"
    p.write_text(p.read_text() + "{not json\n")
    with pytest.raises(contracts.DataError, match=r"queries\.jsonl:4: not valid JSON"):
        contracts.load_beir(tmp_path)


def test_missing_key_and_unknown_document_are_named(tmp_path):
    _beir_folder(tmp_path)
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "txt": "x"}) + "\n")
    with pytest.raises(contracts.DataError, match=r"corpus\.jsonl:1: missing key\(s\) text"):
        contracts.load_beir(tmp_path)
    _beir_folder(tmp_path)
    (tmp_path / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tdX\t1\n")
    with pytest.raises(contracts.DataError, match=r"test\.tsv: document id 'dX'"):
        contracts.load_beir(tmp_path)
    (tmp_path / "qrels/test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\tx\n")
    with pytest.raises(contracts.DataError, match=r"test\.tsv:2: score 'x'"):
        contracts.load_beir(tmp_path)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError), contracts.atomic_path(target) as tmp:
        pd.DataFrame({"a": [1]}).to_parquet(tmp)
        raise RuntimeError("crash mid-write")
    assert list(tmp_path.iterdir()) == []
    contracts.write_parquet(target, pd.DataFrame({"a": [1]}))
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_atomic_dir_replaces_only_on_success(tmp_path):
    target = tmp_path / "model"
    with contracts.atomic_dir(target) as tmp:
        (tmp / "w").write_text("v1")
    with pytest.raises(RuntimeError), contracts.atomic_dir(target) as tmp:
        (tmp / "w").write_text("half")
        raise RuntimeError
    assert (target / "w").read_text() == "v1"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_read_eval_checks_the_contract(tmp_path):
    p = tmp_path / "e.parquet"
    pd.DataFrame({"query_id": ["q"], "ndcg@10": [0.5]}).to_parquet(p)
    with pytest.raises(contracts.DataError, match="missing column"):
        contracts.read_eval(p)


# ---- issue #17: inputs that used to pass silently ----------------------------------------
def test_benchmark_without_judged_queries_is_an_error_naming_it(tmp_path):
    """Used to load as 0 queries, so every evaluation wrote 0 rows and the benchmark dropped
    out of the mean silently."""
    folder = tmp_path / "empty-bench"
    contracts.write_beir(folder, {"d1": {"title": "", "text": "x"}}, {"q1": "y"}, {"q1": {"d1": 1}})
    qrels = folder / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text().splitlines()[0] + "\n")  # the header only
    with pytest.raises(contracts.DataError, match=r"empty-bench.*no test query has a judged"):
        contracts.load_beir(folder)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_metric_names_file_column_and_row(tmp_path, value):
    """Used to surface in the stats stage as 'seeds do not share one query set'."""
    df = pd.DataFrame({"query_id": ["a", "b", "c"], "recipe": "r", "strategy": "top", "depth": 1,
                       "seed": 1, "benchmark": "b",
                       **{m: [0.1, 0.2, 0.3] for m in contracts.METRICS}})
    df.loc[2, "ndcg@10"] = value
    path = tmp_path / "e.parquet"
    df.to_parquet(path)
    with pytest.raises(contracts.DataError, match=r"e\.parquet: column 'ndcg@10' holds 1 non-finite"
                                                  r".*row\(s\) 2"):
        contracts.read_eval(path)
