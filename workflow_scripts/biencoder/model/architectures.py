"""Where each encoder architecture keeps its layers: the one registry that layer surgery
(truncation by a depth strategy, freezing, pooling every depth from one forward pass) goes
through, so that no other module spells a model's attribute paths.

Every architecture here is checked on a tiny random-init model (tests/helpers/tiny_models.py): the
kept layers per strategy and a saved cut reloading as itself (tests/unit/biencoder/test_models.py),
the lean encoders equal to SentenceTransformer.encode and every depth from one pass equal to
truncating (tests/unit/biencoder/test_encoder.py). Anything else is refused with an error naming its
model_type (docs/architecture.md says how to add one).

Imports nothing heavy: the config check reads layer counts through it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    """Paths are attribute chains inside the transformers base model (what AutoModel loads
    and a SentenceTransformer's first module holds)."""

    model_type: str  # transformers' config.model_type
    families: str  # the models researchers know it by (messages, docs)
    layers: str  # the nn.ModuleList of layers, bottom first
    n_layers_key: str  # the config key of the layer count
    embeddings: str  # the embeddings module (frozen by strategy `freeze`)
    # Applied to the last layer's output at every depth (ModernBERT's final LayerNorm): a
    # truncated model keeps it, and a depth read from the hidden states needs it.
    final_norm: str | None = None
    # Config lists with one entry per layer (ModernBERT's attention type per layer): cut
    # with the layers, so that a saved truncated model rebuilds the layers it kept.
    per_layer_config: tuple[str, ...] = ()
    # (module, config key that builds it) run after layer 0 only (DeBERTa-v2's convolution
    # mixing the embeddings into layer 0's output): part of layer 0, so dropped with it.
    first_layer_only: tuple[tuple[str, str], ...] = ()
    # Why layer 0 is built unlike the others, where it is (ModernBERT's has no attention
    # norm): a cut without it would not reload as itself from a saved folder, so it is
    # refused.
    layer0_differs: str = ""


_BERT_LIKE = {"layers": "encoder.layer", "n_layers_key": "num_hidden_layers",
              "embeddings": "embeddings"}
REGISTRY = {a.model_type: a for a in (
    Architecture("bert", "BERT (bge, e5, gte, MiniLM)", **_BERT_LIKE),
    Architecture("roberta", "RoBERTa", **_BERT_LIKE),
    Architecture("xlm-roberta", "XLM-RoBERTa (multilingual-e5)", **_BERT_LIKE),
    Architecture("mpnet", "MPNet (all-mpnet-base-v2)", **_BERT_LIKE),
    Architecture("distilbert", "DistilBERT", layers="transformer.layer",
                 n_layers_key="n_layers", embeddings="embeddings"),
    Architecture("deberta-v2", "DeBERTa-v2/v3", **_BERT_LIKE,
                 first_layer_only=(("encoder.conv", "conv_kernel_size"),)),
    Architecture("modernbert", "ModernBERT", layers="layers", n_layers_key="num_hidden_layers",
                 embeddings="embeddings", final_norm="final_norm",
                 per_layer_config=("layer_types",),
                 layer0_differs="transformers builds its layer 0 without the attention norm "
                                "the other layers have"),
)}


class UnsupportedArchitecture(ValueError):
    pass


def _get(obj, key: str):
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def architecture(config) -> Architecture:
    """The registry entry of a transformers config (object or config.json dict)."""
    model_type = _get(config, "model_type")
    if model_type not in REGISTRY:
        known = "; ".join(f"{a.model_type} ({a.families})" for a in REGISTRY.values())
        raise UnsupportedArchitecture(
            f"model_type {model_type!r} is not in the layer registry "
            f"(workflow_scripts/biencoder/model/architectures.py), so its layers cannot be cut or "
            f"frozen; supported: {known}. docs/architecture.md says how to add one.")
    return REGISTRY[model_type]


def num_layers(config) -> int:
    arch = architecture(config)
    n = _get(config, arch.n_layers_key)
    if not isinstance(n, int):
        raise UnsupportedArchitecture(f"{arch.model_type} config has no integer "
                                      f"{arch.n_layers_key!r} (its layer count)")
    return n


def truncation_kwargs(config, depth: int) -> dict:
    """Config overrides under which transformers builds, and loads the weights of, only the
    bottom `depth` layers (strategy top): for AutoModel.from_pretrained(**kwargs) and
    SentenceTransformer(config_kwargs=...)."""
    arch = architecture(config)
    kwargs = {arch.n_layers_key: depth}
    for key in arch.per_layer_config:
        if _get(config, key) is not None:
            kwargs[key] = list(_get(config, key))[:depth]
    return kwargs


def check_cut(config, keep: list[int]) -> None:
    """Refuse a cut the architecture cannot represent in a saved folder."""
    arch = architecture(config)
    if arch.layer0_differs and 0 not in keep:
        raise UnsupportedArchitecture(
            f"{arch.model_type}: a cut without layer 0 (layers {keep}) cannot be saved and "
            f"reloaded as itself: {arch.layer0_differs}; use strategy top or freeze")


def module(model, path: str):
    for name in path.split("."):
        model = getattr(model, name)
    return model


def layers(model):
    """The layer list of a transformers base model."""
    return module(model, architecture(model.config).layers)


def final_norm(model):
    """The module applied after the last layer at any depth, or None."""
    arch = architecture(model.config)
    return module(model, arch.final_norm) if arch.final_norm else None


def keep_layers(model, keep: list[int]) -> None:
    """Reduce a transformers base model, in place, to its layers `keep` (0-based, in order),
    with the config saying so, so that a saved copy reloads as the same model."""
    import torch

    arch = architecture(model.config)
    check_cut(model.config, keep)
    full = layers(model)
    parent_path, _, name = arch.layers.rpartition(".")
    parent = module(model, parent_path) if parent_path else model
    setattr(parent, name, torch.nn.ModuleList(full[i] for i in keep))
    setattr(model.config, arch.n_layers_key, len(keep))
    for key in arch.per_layer_config:
        if getattr(model.config, key, None) is not None:
            setattr(model.config, key, [getattr(model.config, key)[i] for i in keep])
    if 0 not in keep:
        for path, key in arch.first_layer_only:
            owner_path, _, attr = path.rpartition(".")
            if getattr(module(model, owner_path), attr, None) is not None:
                setattr(module(model, owner_path), attr, None)
                setattr(model.config, key, 0)


def freeze_all_but_last(model, k: int) -> int:
    """Freeze the embeddings and all but the last k layers of a transformers base model; the
    final norm, which acts on the last layer's output, trains with them. Returns the number
    of trainable parameters."""
    for p in model.parameters():
        p.requires_grad = False
    stack = layers(model)
    trained = [stack[i] for i in range(len(stack) - k, len(stack))]
    trained += [m for m in [final_norm(model)] if m is not None]
    for m in trained:
        for p in m.parameters():
            p.requires_grad = True
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
