"""Training: deterministic on CPU for a seed, bad triples named, model saved as safetensors."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from safetensors.numpy import load_file

from workflow_scripts.biencoder import train
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import Train

SETTINGS = Train.from_json('{"batch_size": 4, "steps": 3, "lr": 1e-3, "warmup": 0, '
                           '"max_seq_length": 16}')


@pytest.fixture(scope="module")
def triples(tmp_path_factory):
    words = ["mean", "sum", "sort", "merge", "plot", "fit", "scale", "split", "join", "read"]
    rows = [{"query": f"how to {w} values {i}", "positive": f"{w} the values of an array {i}",
             "negative": f"{words[(j + 1) % 10]} something else {i}"}
            for i in range(3) for j, w in enumerate(words)]
    p = tmp_path_factory.mktemp("triples") / "t.parquet"
    pd.DataFrame(rows).to_parquet(p)
    return p


def _train(tiny_model, triples, out, seed):
    return train.train(base=str(tiny_model), strategy="top", depth=2, seed=seed,
                       settings=SETTINGS, triples=triples, out_dir=out, threads=1)


def test_same_seed_same_weights_other_seed_differs(tiny_model, triples, tmp_path):
    s1 = _train(tiny_model, triples, tmp_path / "a", 7)
    _train(tiny_model, triples, tmp_path / "b", 7)
    _train(tiny_model, triples, tmp_path / "c", 8)
    wa, wb, wc = (load_file(tmp_path / x / "model.safetensors") for x in "abc")
    assert wa.keys() == wb.keys()
    assert all((wa[k] == wb[k]).all() for k in wa)  # bitwise
    assert any((wa[k] != wc[k]).any() for k in wa)
    assert s1["steps"] == 3 and s1["device"] == "cpu"
    assert s1["settings"]["lr"] == 1e-3 and s1["settings"]["scale"] == 20.0  # schema default
    assert not any(k.startswith("encoder.layer.2.") for k in wa)  # depth 2 of 3 kept


def test_empty_text_is_named(tmp_path):
    p = tmp_path / "bad.parquet"
    pd.DataFrame({"query": ["q", "  "], "positive": ["p", "p2"], "negative": ["n", "n2"]}
                 ).to_parquet(p)
    with pytest.raises(contracts.DataError, match=r"bad\.parquet: row 1 has an empty text"):
        train.load_triples(p)
    pd.DataFrame({"query": ["q"], "negative": ["n"]}).to_parquet(p)
    with pytest.raises(contracts.DataError, match=r"missing column\(s\) positive"):
        train.load_triples(p)
    # No negative column: (query, positive) pairs, in-batch negatives (a beir-train source)
    pd.DataFrame({"query": ["q"], "positive": ["p"], "doc_id": ["d"]}).to_parquet(p)
    assert list(train.load_triples(p).columns) == ["query", "positive"]
    pd.DataFrame({"query": ["q"], "positive": [" "]}).to_parquet(p)
    with pytest.raises(contracts.DataError, match="row 0 has an empty text"):
        train.load_triples(p)


def test_eval_steps_snapshot_the_weights_and_change_no_model(tiny_model, triples, tmp_path):
    plain = _train(tiny_model, triples, tmp_path / "plain", 7)
    curve = train.train(base=str(tiny_model), strategy="top", depth=2, seed=7,
                        settings=SETTINGS, triples=triples, out_dir=tmp_path / "curve",
                        eval_steps=[1, 2, 3])
    assert plain["snapshot_steps"] == [] and curve["snapshot_steps"] == [1, 2]
    assert not any((tmp_path / "plain" / "steps").iterdir())  # declared, empty
    steps = tmp_path / "curve" / "steps"
    assert sorted(p.name for p in steps.iterdir()) == ["step1", "step2"]  # 3: the model
    final = load_file(tmp_path / "curve" / "model.safetensors")
    w = {n: load_file(steps / f"step{n}" / "model.safetensors") for n in (1, 2)}
    assert all((final[k] == v).all() for k, v in
               load_file(tmp_path / "plain" / "model.safetensors").items())
    assert all(any((w[n][k] != final[k]).any() for k in final) for n in (1, 2))
    assert any((w[1][k] != w[2][k]).any() for k in final)
    assert (steps / "step1" / "modules.json").exists()  # loads like the final model
    assert not list(steps.rglob("optimizer*"))  # weights only
    assert not (tmp_path / "curve.trainer").exists()


def test_several_seeds_in_one_process_equal_separate_trainings(tiny_model, triples, tmp_path):
    # batch_seeds: one job trains its seeds in turn; the second seed's model must not depend
    # on the first having been trained in the same process.
    alone = tmp_path / "alone"
    _train(tiny_model, triples, alone, 7)
    batch = [tmp_path / "b8", tmp_path / "b7"]
    train.main(["--base", str(tiny_model), "--strategy", "top", "--depth", "2",
                "--seed", "8", "7", "--settings-json", SETTINGS.to_json(),
                "--triples", str(triples), "--out", *map(str, batch)])
    w_alone, w7, w8 = (load_file(p / "model.safetensors") for p in (alone, batch[1], batch[0]))
    assert all((w_alone[k] == w7[k]).all() for k in w_alone)  # bitwise
    assert any((w7[k] != w8[k]).any() for k in w7)
    summaries = [json.loads((p / "train_summary.json").read_text()) for p in batch]
    assert [s["seed"] for s in summaries] == [8, 7]
    with pytest.raises(SystemExit):  # a folder per seed
        train.main(["--base", str(tiny_model), "--strategy", "top", "--depth", "2",
                    "--seed", "8", "7", "--triples", str(triples), "--out", str(alone)])


def test_pairs_train_with_in_batch_negatives(tiny_model, triples, tmp_path):
    """A beir-train source writes (query, positive) pairs: MNRL trains on them with the
    batch's other documents as negatives."""
    pairs = tmp_path / "pairs.parquet"
    pd.read_parquet(triples).drop(columns="negative").to_parquet(pairs)
    summary = _train(tiny_model, pairs, tmp_path / "m", 1)
    assert summary["steps"] == 3 and summary["train_data"]["rows"] == 30
    assert all(h["loss"] > 0 for h in summary["loss_history"])


def test_a_cached_loss_recipe_trains_and_records_its_loss(tiny_model, triples, tmp_path):
    """loss cached_mnrl: the trainer runs GradCache's loss (its backward hook inside the
    trainer's step), and the model's provenance names the loss and its mini-batch."""
    settings = Train.from_json(json.dumps({**json.loads(SETTINGS.to_json()),
                                           "loss": "cached_mnrl", "mini_batch_size": 3}))
    s = train.train(base=str(tiny_model), strategy="top", depth=2, seed=7, settings=settings,
                    triples=triples, out_dir=tmp_path / "cached", threads=1)
    assert s["loss"]["name"] == "CachedMultipleNegativesRankingLoss"
    assert s["loss"]["mini_batch_size"] == 3 and s["loss"]["scale"] == 20.0
    assert (s["settings"]["loss"], s["settings"]["mini_batch_size"]) == ("cached_mnrl", 3)
    assert s["steps"] == 3 and s["final_loss"] > 0
    saved = json.loads((tmp_path / "cached" / "train_summary.json").read_text())
    assert saved["loss"] == json.loads(json.dumps(s["loss"]))  # tuples as lists
    plain = _train(tiny_model, triples, tmp_path / "plain", 7)
    assert plain["loss"]["name"] == "MultipleNegativesRankingLoss"
    assert plain["settings"]["mini_batch_size"] is None
