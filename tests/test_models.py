"""Depth strategies (Poor Man's BERT names) on a tiny model."""

from __future__ import annotations

import pytest
import torch

from workflow_scripts.biencoder import models


def test_kept_layers():
    assert models.kept_layers("top", 3, 12) == [0, 1, 2]
    assert models.kept_layers("bottom", 3, 12) == [9, 10, 11]
    assert models.kept_layers("alternate", 6, 12) == [1, 3, 5, 7, 9, 11]
    assert models.kept_layers("alternate", 3, 12) == [3, 7, 11]
    assert models.kept_layers("freeze", 4, 12) == list(range(12))
    with pytest.raises(ValueError, match="depth 13"):
        models.kept_layers("top", 13, 12)
    with pytest.raises(ValueError, match="strategy 'middle'"):
        models.kept_layers("middle", 2, 12)


@pytest.mark.parametrize("strategy", ["top", "bottom", "alternate"])
def test_truncated_layers_are_the_kept_ones(tiny_model, strategy):
    full = models._bert(models.load_truncated(str(tiny_model), "freeze", 3))
    cut = models._bert(models.load_truncated(str(tiny_model), strategy, 2))
    keep = models.kept_layers(strategy, 2, 3)
    assert len(cut.encoder.layer) == 2 and cut.config.num_hidden_layers == 2
    for mine, theirs in zip(cut.encoder.layer, (full.encoder.layer[i] for i in keep),
                            strict=True):
        for a, b in zip(mine.parameters(), theirs.parameters(), strict=True):
            assert torch.equal(a, b)


def test_freeze_trains_only_the_last_k(tiny_model):
    model = models.load_truncated(str(tiny_model), "freeze", 1)
    models.freeze_all_but_last(model, 1)
    bert = models._bert(model)
    assert not any(p.requires_grad for p in bert.embeddings.parameters())
    assert not any(p.requires_grad for p in bert.encoder.layer[0].parameters())
    assert all(p.requires_grad for p in bert.encoder.layer[2].parameters())
