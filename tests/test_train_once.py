"""Train-once arms: one training at the deepest depth whose every depth is evaluated by
truncation, from one forward pass; their settings, and the evaluations they share."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT
from safetensors.numpy import load_file

from workflow_scripts.biencoder import docstrings, evaluate, train
from workflow_scripts.biencoder.encoder import encode_at_depths
from workflow_scripts.biencoder.models import load_trained, load_truncated
from workflow_scripts.core import contracts, settings
from workflow_scripts.core.configcheck import check_config

BASE = {"batch_size": 4, "steps": 3, "lr": 1e-3, "warmup": 0, "max_seq_length": 16}
TEXTS = ["Compute the mean of an array.", "Return a new DataFrame sorted by a column " * 4,
         "x", "Fit the model according to the given training data."]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("train_once")
    pairs = docstrings.collect_pairs("pandas")
    docstrings.build_triples(pairs[:120], max_triples=40, seed=0).to_parquet(d / "t.parquet")
    corpus, queries, qrels = docstrings.build_beir(pairs[120:], max_queries=20, max_docs=40,
                                                   seed=0)
    contracts.write_beir(d / "bench", corpus, queries, qrels)
    return d


@pytest.fixture(scope="module")
def adaptive_model(tiny_model, data):
    """An adaptive arm of the 3-layer tiny BERT, trained 3 steps, a snapshot at step 1."""
    out = data / "adaptive3"
    summary = train.train(base=str(tiny_model), strategy="adaptive", depth=3, seed=1,
                          settings=settings.TrainAdaptive.from_json(json.dumps(BASE)),
                          triples=data / "t.parquet", out_dir=out, eval_steps=[1, 3])
    return out, summary


def _st(model, texts):
    model.max_seq_length = 16
    return model.encode(texts, batch_size=2, convert_to_numpy=True)


def test_the_summary_records_the_loss_and_its_version(adaptive_model):
    import sentence_transformers

    _, summary = adaptive_model
    assert summary["loss"]["name"] == "AdaptiveLayerLoss"
    assert summary["loss"]["loss"] == "MultipleNegativesRankingLoss"
    assert summary["loss"]["kl_temperature"] == 0.3  # the schema's default
    assert summary["sentence_transformers"] == sentence_transformers.__version__
    assert summary["layers_trained"] == 3 and summary["strategy"] == "adaptive"


def test_every_depth_of_the_arm_equals_truncating_the_saved_model(adaptive_model, data):
    """One pass over the trained model gives, at every depth, the embeddings and metrics of
    the saved full model truncated to that depth."""
    folder, _ = adaptive_model
    one_pass = encode_at_depths(str(folder), [TEXTS], [1, 2, 3], max_seq_length=16,
                                batch_size=2)[0]
    for d in (1, 2, 3):
        np.testing.assert_allclose(one_pass[d], _st(load_truncated(str(folder), "top", d),
                                                    TEXTS), atol=1e-6, err_msg=f"depth {d}")
    outs = [data / f"eval-d{d}.parquet" for d in (1, 2, 3)]
    evaluate.main(["--model", str(folder), "--strategy", "adaptive", "--depths", "1", "2", "3",
                   "--benchmark-dir", str(data / "bench"), "--benchmark", "b", "--recipe", "r",
                   "--seed", "1", "--settings-json", '{"max_seq_length": 16}',
                   "--out", *map(str, outs)])
    for d, out in zip((1, 2, 3), outs, strict=True):
        got = contracts.read_eval(out)
        assert set(got.depth) == {d} and set(got.strategy) == {"adaptive"}
        ref, _ = evaluate.evaluate_model(_Truncated(folder, d), data / "bench", top_k=100)
        pd.testing.assert_frame_equal(got[list(ref.columns)], ref, atol=1e-6)


class _Truncated:
    """The saved model truncated to `depth` by sentence-transformers, as an encoder."""

    def __init__(self, folder, depth):
        self.model = load_truncated(str(folder), "top", depth)
        self.model.max_seq_length = 16

    def encode(self, texts, batch_size=64, **_):
        return self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True)


def test_snapshots_give_every_depth_from_one_pass(adaptive_model, data):
    folder, _ = adaptive_model
    snaps = {1: folder / "steps" / "step1", 3: folder}
    frames, _ = evaluate.evaluate_snapshots(snaps, data / "bench", max_seq_length=16,
                                            depths=[1, 2, 3])
    assert sorted(frames) == [1, 2, 3]
    for d, df in frames.items():
        assert sorted(df.step.unique()) == [1, 3]
        for step, path in snaps.items():
            ref, _ = evaluate.evaluate_model(_Truncated(path, d), data / "bench", top_k=100)
            got = df[df.step == step].drop(columns="step").reset_index(drop=True)
            pd.testing.assert_frame_equal(got, ref, atol=1e-6)


def test_a_model_without_a_lean_encoder_is_encoded_per_depth(adaptive_model, tmp_path):
    """Max pooling only sentence-transformers reproduces: no one pass, the same numbers."""
    folder, _ = adaptive_model
    other = tmp_path / "max"
    shutil.copytree(folder, other)
    (other / "1_Pooling" / "config.json").write_text(json.dumps(
        {"embedding_dimension": 32, "pooling_mode": "max"}))
    got = encode_at_depths(str(other), [TEXTS], [1, 3], max_seq_length=16, batch_size=2)[0]
    for d in (1, 3):
        np.testing.assert_allclose(got[d], _st(load_truncated(str(other), "top", d), TEXTS),
                                   atol=1e-6)


def test_matryoshka2d_trains_the_full_dimension_and_the_configured_ones(tiny_model, data):
    s = settings.TrainMatryoshka2d.from_json(json.dumps({**BASE, "matryoshka_dims": [8, 16]}))
    summary = train.train(base=str(tiny_model), strategy="matryoshka2d", depth=2, seed=1,
                          settings=s, triples=data / "t.parquet", out_dir=data / "m2d")
    assert summary["loss"]["name"] == "Matryoshka2dLoss"
    assert list(summary["loss"]["matryoshka_dims"]) == [32, 16, 8]  # the full one: evaluated
    weights = load_file(data / "m2d" / "model.safetensors")
    assert not any(k.startswith("encoder.layer.2.") for k in weights)  # top's 2 layers
    assert load_trained(data / "m2d").get_embedding_dimension() == 32
    too_wide = settings.TrainMatryoshka2d.from_json(json.dumps({**BASE,
                                                                "matryoshka_dims": [64]}))
    with pytest.raises(ValueError, match=r"train_once_loss\.matryoshka_dims: \[64\] exceed"):
        train.train(base=str(tiny_model), strategy="matryoshka2d", depth=2, seed=1,
                    settings=too_wide, triples=data / "t.parquet", out_dir=data / "m2d-x")


# --- settings: each arm's job reads exactly its keys ---------------------------------------

def _default_config() -> dict:
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    check_config(cfg)
    return cfg


def test_loss_settings_reach_only_the_train_once_jobs():
    cfg = _default_config()
    before = {cls: cls.from_config(cfg, recipe="short").to_json()
              for cls in (settings.Train, settings.TrainAdaptive, settings.TrainMatryoshka2d)}
    cfg["recipes"]["short"]["train_once_loss"]["kl_temperature"] = 0.5
    assert settings.Train.from_config(cfg, recipe="short").to_json() == before[settings.Train]
    for cls in (settings.TrainAdaptive, settings.TrainMatryoshka2d):
        assert cls.from_config(cfg, recipe="short").to_json() != before[cls]
    cfg["recipes"]["short"]["train_once_loss"]["matryoshka_dims"] = [64]
    assert (settings.TrainAdaptive.from_config(cfg, recipe="short").kl_temperature == 0.5
            and "matryoshka_dims" not in json.loads(
                settings.TrainAdaptive.from_config(cfg, recipe="short").to_json()))
    assert settings.train_settings("top") is settings.Train
    assert settings.train_settings("adaptive") is settings.TrainAdaptive


def test_the_arms_are_named_alike_in_the_schema_the_settings_and_the_contracts():
    node, _ = settings.schema_node("recipes.*.train_once")
    assert tuple(node["items"]["enum"]) == contracts.TRAIN_ONCE
    assert tuple(settings.TRAIN_ONCE_SETTINGS) == contracts.TRAIN_ONCE
    assert contracts.base_strategy("adaptive") == "top"
    assert contracts.base_strategy("freeze") == "freeze"


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c.update(strategies=["bottom"]),
     "config key recipes.short.train_once: a train-once arm is compared with per-depth "
     "training of strategy top"),
    (lambda c: c["recipes"]["short"].update(train_once=["nope"]),
     "config key recipes.short.train_once[0]: 'nope' is not one of"),
    (lambda c: c["recipes"]["short"].update(train_once_loss={"n_layers_per_step": 0}),
     "config key recipes.short.train_once_loss.n_layers_per_step"),
    (lambda c: c["recipes"]["short"].update(train_once_loss={"layer_weighting": "cubic"}),
     "config key recipes.short.train_once_loss.layer_weighting: 'cubic' is not one of"),
])
def test_bad_train_once_keys_are_named(change, message):
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["recipes"]["short"]["train_once"] = ["adaptive"]
    cfg["claims"] = []
    change(cfg)
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("[", r"\[")):
        check_config(cfg)
