"""A lean inference-only encoder for BERT sentence-transformers folders (mean pooling +
Normalize), in plain torch with the `tokenizers` library.

Why: every evaluation job would otherwise import sentence-transformers (~9.5 s on these
cores) to encode a few hundred texts; the default study runs ~60 such jobs. This module
imports torch, tokenizers and safetensors only (~2.9 s). It supports exactly the
architecture it checks for (BertModel, absolute positions, erf-GELU, mean pooling) and
`load_encoder` falls back to sentence-transformers for anything else.
tests/test_encoder.py checks it against SentenceTransformer.encode.
Truncated bases load only the kept layers' tensors from the safetensors file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np


class UnsupportedModel(Exception):
    pass


def _pooling_is_mean(folder: Path) -> bool:
    modules = json.loads((folder / "modules.json").read_text())
    kinds = [m["type"].rsplit(".", 1)[-1].lower() for m in modules]
    if kinds[:2] != ["transformer", "pooling"] or kinds[2:] not in ([], ["normalize"]):
        return False
    pool = json.loads((folder / modules[1]["path"] / "config.json").read_text())
    return pool.get("pooling_mode") == "mean" or (
        pool.get("pooling_mode_mean_tokens") is True
        and not any(pool.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                          "pooling_mode_mean_sqrt_len_tokens")))


class BertMeanEncoder:
    """BERT forward pass + attention-masked mean pooling + L2 normalisation."""

    def __init__(self, folder, *, depth: int | None = None, max_seq_length: int = 128,
                 device: str = "cpu"):
        import torch
        from safetensors import safe_open
        from tokenizers import Tokenizer

        folder = Path(folder)
        if not (folder / "modules.json").exists() or not _pooling_is_mean(folder):
            raise UnsupportedModel(f"{folder}: not a mean-pooling sentence-transformers model")
        cfg = json.loads((folder / "config.json").read_text())
        if (cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu"
                or cfg.get("position_embedding_type", "absolute") != "absolute"):
            raise UnsupportedModel(f"{folder}: architecture outside the lean encoder")
        self.cfg = cfg
        self.depth = depth or cfg["num_hidden_layers"]
        if not 1 <= self.depth <= cfg["num_hidden_layers"]:
            raise ValueError(f"depth {self.depth}: {folder} has {cfg['num_hidden_layers']} layers")
        self.heads = cfg["num_attention_heads"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.max_seq_length = max_seq_length
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.enable_truncation(max_length=max_seq_length)
        tok.enable_padding(pad_id=cfg.get("pad_token_id", 0))
        self.tokenizer = tok
        self.folder = folder
        self.device = device
        self.torch = torch
        self._safe_open = safe_open
        self.load_weights(folder)

    def load_weights(self, folder) -> None:
        """Take the weights of another folder of the same architecture and tokenizer (a
        learning-curve snapshot of the same training), keeping the tokenizer: pre-tokenized
        batches (tokenize()) stay valid."""
        folder = Path(folder)
        for name in ("config.json", "tokenizer.json"):
            if (folder / name).read_bytes() != (self.folder / name).read_bytes():
                raise UnsupportedModel(f"{folder}: {name} differs from {self.folder}'s")
        w = {}
        with self._safe_open(folder / "model.safetensors", framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 - safe_open has keys(), not __iter__
                name = key.removeprefix("bert.")
                if name.startswith("encoder.layer.") and int(name.split(".")[2]) >= self.depth:
                    continue  # dropped layers are never read
                w[name] = f.get_tensor(key).float().to(self.device)  # fp32 always (ties)
        self.w = w

    def _ln(self, x, prefix):
        return self.torch.nn.functional.layer_norm(
            x, x.shape[-1:], self.w[prefix + ".weight"], self.w[prefix + ".bias"], self.eps)

    def _lin(self, x, prefix):
        return self.torch.nn.functional.linear(x, self.w[prefix + ".weight"],
                                               self.w[prefix + ".bias"])

    def forward(self, ids, mask):
        torch, w = self.torch, self.w
        n, L = ids.shape
        pos = torch.arange(L, device=ids.device)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][pos][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._ln(x, "embeddings.LayerNorm")
        add_mask = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        hd = x.shape[-1] // self.heads
        for i in range(self.depth):
            p = f"encoder.layer.{i}"

            def split(t):
                return t.view(n, L, self.heads, hd).transpose(1, 2)

            q = split(self._lin(x, f"{p}.attention.self.query"))
            k = split(self._lin(x, f"{p}.attention.self.key"))
            v = split(self._lin(x, f"{p}.attention.self.value"))
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + add_mask, dim=-1)
            ctx = (att @ v).transpose(1, 2).reshape(n, L, -1)
            x = self._ln(x + self._lin(ctx, f"{p}.attention.output.dense"),
                         f"{p}.attention.output.LayerNorm")
            h = torch.nn.functional.gelu(self._lin(x, f"{p}.intermediate.dense"))
            x = self._ln(x + self._lin(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
        m = mask[..., None].float()
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1)

    def tokenize(self, texts: list[str], batch_size: int = 64) -> list[tuple]:
        """The padded batches encode() runs: (positions in `texts`, ids, mask) each, sorted
        by length so batches pad little, as sentence-transformers does."""
        torch = self.torch
        order = np.argsort([-len(t) for t in texts], kind="stable")
        batches = []
        for s in range(0, len(texts), batch_size):
            idx = order[s:s + batch_size]
            enc = self.tokenizer.encode_batch([texts[i] for i in idx])
            batches.append((idx, torch.tensor([e.ids for e in enc]),
                            torch.tensor([e.attention_mask for e in enc])))
        return batches  # on the CPU: a large corpus's tokens need not fit on the device

    def encode_batches(self, batches: list[tuple], n: int,
                       show_progress_bar: bool = False) -> np.ndarray:
        """Embeddings of `n` texts from their tokenize() batches, with the current weights."""
        out = np.zeros((n, self.cfg["hidden_size"]), dtype=np.float32)
        if show_progress_bar:
            from tqdm import tqdm

            batches = tqdm(batches, desc="encode", unit="batch")
        with self.torch.inference_mode():
            for idx, ids, mask in batches:
                out[idx] = self.forward(ids.to(self.device), mask.to(self.device)).cpu().numpy()
        return out

    def encode(self, texts: list[str], batch_size: int = 64, show_progress_bar: bool = False,
               **_) -> np.ndarray:
        return self.encode_batches(self.tokenize(texts, batch_size), len(texts),
                                   show_progress_bar)


class _STAdapter:
    """sentence-transformers behind the same encode() signature (the fallback)."""

    def __init__(self, model):
        self.model = model

    def encode(self, texts, batch_size=64, show_progress_bar=False, **_):
        return self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                 show_progress_bar=show_progress_bar,
                                 normalize_embeddings=True)


def load_encoder(folder_or_spec: str, *, depth: int | None = None, strategy: str = "top",
                 max_seq_length: int = 128, device: str | None = None):
    """The lean encoder where it applies, else sentence-transformers; fp32 on CUDA when
    present (device None), else CPU."""
    import torch

    from workflow_scripts.biencoder.models import resolve_model_path

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    path = Path(resolve_model_path(folder_or_spec))
    if strategy == "top" and path.is_dir():
        try:
            return BertMeanEncoder(path, depth=depth, max_seq_length=max_seq_length,
                                   device=device)
        except UnsupportedModel:
            pass
    from workflow_scripts.biencoder.models import load_trained, load_truncated

    model = (load_truncated(folder_or_spec, strategy, depth, device=device) if depth
             else load_trained(path, device=device))
    model.max_seq_length = max_seq_length
    return _STAdapter(model)
