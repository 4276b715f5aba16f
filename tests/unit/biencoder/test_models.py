"""Depth strategies (Poor Man's BERT names) and the layer registry, on tiny models of every
architecture the registry knows."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from tiny_models import ARCHITECTURES

from workflow_scripts.biencoder.model import architectures
from workflow_scripts.biencoder.model import truncation as models

TEXTS = ["Compute the mean of an array.", "", "Return a new DataFrame with the rows sorted " * 9,
         "x", "Fit the model according to the given training data and labels.", "héllo ☃"]
# (strategy, depth) on the 4-layer models: bottom 3 and alternate 2 drop layer 0 (DeBERTa-v2's
# convolution goes with it); alternate 3 keeps layers 0, 2, 3, whose attention types are not
# those of layers 0, 1, 2 (ModernBERT), so a cut that forgets either shows.
CUTS = [("top", 2), ("bottom", 3), ("alternate", 2), ("alternate", 3)]


def refused(model_type: str, strategy: str, depth: int) -> bool:
    """ModernBERT's layer 0 is built unlike the others: cuts without it are refused."""
    return model_type == "modernbert" and 0 not in models.kept_layers(strategy, depth, 4)


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
    full = models.hf_model(models.load_truncated(str(tiny_model), "freeze", 3))
    cut = models.hf_model(models.load_truncated(str(tiny_model), strategy, 2))
    keep = models.kept_layers(strategy, 2, 3)
    assert len(cut.encoder.layer) == 2 and cut.config.num_hidden_layers == 2
    for mine, theirs in zip(cut.encoder.layer, (full.encoder.layer[i] for i in keep),
                            strict=True):
        for a, b in zip(mine.parameters(), theirs.parameters(), strict=True):
            assert torch.equal(a, b)


def test_freeze_trains_only_the_last_k(tiny_model):
    model = models.load_truncated(str(tiny_model), "freeze", 1)
    models.freeze_all_but_last(model, 1)
    bert = models.hf_model(model)
    assert not any(p.requires_grad for p in bert.embeddings.parameters())
    assert not any(p.requires_grad for p in bert.encoder.layer[0].parameters())
    assert all(p.requires_grad for p in bert.encoder.layer[2].parameters())


def _encode(model, seq=16):
    model.max_seq_length = seq
    return model.encode(TEXTS, batch_size=2, convert_to_numpy=True)


def test_registry_covers_the_tiny_architectures():
    assert set(architectures.REGISTRY) == set(ARCHITECTURES)


@pytest.mark.parametrize("model_type", ARCHITECTURES)
@pytest.mark.parametrize("strategy,depth", CUTS)
def test_every_architecture_keeps_the_strategys_layers(arch_model, model_type, strategy,
                                                       depth):
    path = str(arch_model(model_type))
    if refused(model_type, strategy, depth):
        with pytest.raises(ValueError, match="modernbert: a cut without layer 0.*attention "
                                             "norm.*use strategy top or freeze"):
            models.load_truncated(path, strategy, depth)
        return
    full = models.hf_model(models.load_truncated(path, "freeze", 4))
    cut = models.hf_model(models.load_truncated(path, strategy, depth))
    keep = models.kept_layers(strategy, depth, 4)
    arch = architectures.architecture(cut.config)
    assert architectures.num_layers(cut.config) == depth
    assert len(architectures.layers(cut)) == depth
    for mine, i in zip(architectures.layers(cut), keep, strict=True):
        theirs = architectures.layers(full)[i]
        for a, b in zip(mine.parameters(), theirs.parameters(), strict=True):
            assert torch.equal(a, b)
    # Everything outside the layer list is the full model's (embeddings, final norm, ...),
    # except what belongs to a dropped layer 0.
    outside = {k: v for k, v in full.state_dict().items()
               if not k.startswith(arch.layers + ".")}
    dropped = {p for p, _ in arch.first_layer_only} if 0 not in keep else set()
    mine = cut.state_dict()
    for k, v in outside.items():
        if any(k.startswith(p + ".") for p in dropped):
            assert k not in mine
        else:
            assert torch.equal(mine[k], v), k
    for key in arch.per_layer_config:
        assert getattr(cut.config, key) == [getattr(full.config, key)[i] for i in keep]
    if model_type == "deberta-v2":  # its convolution runs after layer 0 only: part of it
        assert (cut.encoder.conv is None) == (cut.config.conv_kernel_size == 0) == (
            0 not in keep)


@pytest.mark.parametrize("model_type", ARCHITECTURES)
@pytest.mark.parametrize("strategy,depth", CUTS)
def test_a_saved_truncated_model_reloads_as_itself(arch_model, model_type, strategy, depth,
                                                   tmp_path):
    """What training does: cut, save, and evaluate the saved folder later."""
    from sentence_transformers import SentenceTransformer

    if refused(model_type, strategy, depth):
        pytest.skip("refused (test_every_architecture_keeps_the_strategys_layers)")
    model = models.load_truncated(str(arch_model(model_type)), strategy, depth)
    model.save(str(tmp_path / "m"))
    reloaded = SentenceTransformer(str(tmp_path / "m"), device="cpu")
    assert architectures.num_layers(models.hf_model(reloaded).config) == depth
    np.testing.assert_allclose(_encode(reloaded), _encode(model), atol=1e-6)


@pytest.mark.parametrize("model_type", ARCHITECTURES)
def test_top_equals_loading_fewer_layers(arch_model, model_type):
    """Strategy top is what a user writes by hand: num_hidden_layers=N in the config."""
    from sentence_transformers import SentenceTransformer

    path = str(arch_model(model_type))
    ref = SentenceTransformer(path, device="cpu", config_kwargs={"num_hidden_layers": 2})
    np.testing.assert_allclose(_encode(models.load_truncated(path, "top", 2)), _encode(ref),
                               atol=1e-6)


@pytest.mark.parametrize("model_type", ARCHITECTURES)
def test_freeze_trains_the_last_layers_of_every_architecture(arch_model, model_type):
    model = models.load_truncated(str(arch_model(model_type)), "freeze", 1)
    n = models.freeze_all_but_last(model, 1)
    hf = models.hf_model(model)
    arch = architectures.architecture(hf.config)
    trainable = {k for k, p in hf.named_parameters() if p.requires_grad}
    expected = {f"{arch.layers}.3.{k}" for k, _ in architectures.layers(hf)[3].named_parameters()}
    if arch.final_norm:
        expected |= {f"{arch.final_norm}.{k}" for k, _ in
                     architectures.final_norm(hf).named_parameters()}
    assert trainable == expected
    assert n == sum(p.numel() for p in hf.parameters() if p.requires_grad)
    assert not any(p.requires_grad for p in
                   architectures.module(hf, arch.embeddings).parameters())


def test_other_architectures_are_refused_by_name(tmp_path):
    from transformers import GPT2Config, GPT2Model

    with pytest.raises(architectures.UnsupportedArchitecture, match="model_type 'gpt2'.*bert"):
        architectures.architecture({"model_type": "gpt2"})
    GPT2Model(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50)).save_pretrained(
        tmp_path / "gpt2")
    with pytest.raises(ValueError, match=r"gpt2.*model_type 'gpt2' is not in the layer "
                                         "registry"):
        models.load_truncated(str(tmp_path / "gpt2"), "top", 1)


def test_the_config_check_reads_layer_counts_through_the_registry(arch_model, tmp_path):
    from workflow_scripts.study_config import depth_errors

    distil = arch_model("distilbert")  # its layer count is n_layers
    assert "n_layers" in json.loads((distil / "config.json").read_text())
    errors = depth_errors({"base_model": str(distil), "depths": [1, 4, 5]})
    assert errors == [f"config key depths[2]: 5 is more than the 4 layers of base_model "
                      f"{distil} ({distil / 'config.json'})"]
    other = tmp_path / "gpt2"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 2}))
    (error,) = depth_errors({"base_model": str(other), "depths": [1]})
    assert error.startswith(f"config key base_model: {other}") and "'gpt2'" in error
    # A hub id has no config on disk: its first job reads it (load_truncated).
    assert depth_errors({"base_model": "BAAI/bge-small-en-v1.5", "depths": [99]}) == []


def test_a_hub_id_is_read_at_job_time(tiny_model, tmp_path):
    """A hub id's job reads the model through the hub, here an offline hub cache holding the
    tiny model (tests/workflow/test_hub.py: what the config check does with it)."""
    import os
    import subprocess
    import sys

    from conftest import ROOT
    from tiny_models import hub_cache

    hub_cache(tmp_path / "hub", "depthlab/tiny-bert", tiny_model)
    code = ("from workflow_scripts.biencoder.model import architectures\n"
            "from workflow_scripts.biencoder.model import truncation as models\n"
            "m = models.hf_model(models.load_truncated('depthlab/tiny-bert', 'bottom', 2))\n"
            "print(len(architectures.layers(m)))\n"
            "models.load_truncated('depthlab/tiny-bert', 'top', 4)\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=600)
    assert proc.stdout.strip() == "2", proc.stderr[-2000:]
    assert ("'depthlab/tiny-bert': config key depths: depth 4 is outside 1..3"
            in proc.stderr), proc.stderr[-2000:]


def test_the_registry_keeps_the_config_check_light():
    """The Snakefile imports the config check, which reads layer counts via the registry."""
    import subprocess
    import sys

    from conftest import ROOT

    code = ("import sys, workflow_scripts.study_config; "
            "print([m for m in ('torch', 'transformers', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, text=True,
                         capture_output=True).stdout
    assert out.strip() == "[]"
