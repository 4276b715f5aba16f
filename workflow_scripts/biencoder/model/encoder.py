"""Lean inference-only encoders for sentence-transformers folders (Transformer, Pooling by
mean or CLS token, optional Normalize) that do not import sentence-transformers.

Why: every evaluation job would otherwise import sentence-transformers to encode a few
hundred texts, and the default study runs ~60 such jobs. Imports measured on these cores:
torch + tokenizers + safetensors ~1.5 s, transformers' AutoModel ~4.5 s,
sentence-transformers ~6.5 s (more on busy cores). Two paths, tried in this order:

- BertEncoder: BERT (absolute positions, erf-GELU) in plain torch with the `tokenizers`
  library, the cheapest import; a truncated base loads only the kept layers' tensors.
  MiniLM, and the BERT retrievers (bge, e5, gte), take it.
- AutoModelEncoder: every architecture of the layer registry (biencoder/model/architectures.py)
  through transformers' AutoModel forward and the folder's tokenizer, cut by any strategy.

Both cut and pad texts on the sides the folder's tokenizer was saved with
(tokenizer_config.json's truncation_side, padding_side), as sentence-transformers does, and
pool as the folder's Pooling config says. Both give every depth of a model whose weights
do not depend on depth (the untrained base, a model trained once for all depths) from one
forward pass: encode_depths(texts, depths). `load_encoder` falls back to
sentence-transformers for anything else (other pooling or modules, a default prompt,
lower-casing by sentence-transformers). tests/unit/biencoder/test_encoder.py checks them against
SentenceTransformer.encode on every architecture.
"""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import numpy as np

POOLING_MODES = ("mean", "cls")
# sentence-transformers < 6 stored the pooling mode as booleans, in this order.
_LEGACY_POOLING = (("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
                   ("pooling_mode_mean_tokens", "mean"),
                   ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
                   ("pooling_mode_weightedmean_tokens", "weightedmean"),
                   ("pooling_mode_lasttoken", "lasttoken"))


class UnsupportedModel(Exception):
    pass


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def folder_pooling(folder) -> tuple[str, bool]:
    """(pooling mode, normalize) of a sentence-transformers folder whose encode() the lean
    encoders reproduce exactly; UnsupportedModel, saying why, for any other."""
    folder = Path(folder)
    if not (folder / "modules.json").exists():
        raise UnsupportedModel(f"{folder}: not a sentence-transformers folder (no modules.json)")
    modules = json.loads((folder / "modules.json").read_text())
    kinds = [m["type"].rsplit(".", 1)[-1].lower() for m in modules]
    if (kinds[:2] != ["transformer", "pooling"] or kinds[2:] not in ([], ["normalize"])
            or modules[0].get("path", "") != ""):
        raise UnsupportedModel(f"{folder}: modules {kinds}, not Transformer, Pooling "
                               "[, Normalize]")
    pool = _json(folder / modules[1]["path"] / "config.json")
    mode = pool.get("pooling_mode")
    modes = ([mode] if isinstance(mode, str) else list(mode)) if mode is not None else (
        [m for key, m in _LEGACY_POOLING if pool.get(key)] or ["mean"])
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise UnsupportedModel(f"{folder}: pooling {modes}, not one of {POOLING_MODES}")
    if _json(folder / "sentence_bert_config.json").get("do_lower_case"):
        raise UnsupportedModel(f"{folder}: sentence-transformers lower-cases its input")
    if _json(folder / "config_sentence_transformers.json").get("default_prompt_name"):
        raise UnsupportedModel(f"{folder}: encode() prepends a default prompt")
    return modes[0], kinds[2:] == ["normalize"]


class _LeanEncoder:
    """Batching, the per-depth loop and pooling, shared by both paths. Subclasses set
    torch, hidden_size, depth (layers held), prefix (True when those are the base's bottom
    layers, so that depth d is hidden state d), pooling, normalize, device, and implement
    _batch(texts) -> model inputs and _hidden(inputs, depths) -> {depth: last hidden}."""

    def encode(self, texts: list[str], batch_size: int = 64, show_progress_bar: bool = False,
               **_) -> np.ndarray:
        return self.encode_batches(self.tokenize(texts, batch_size), len(texts),
                                   show_progress_bar=show_progress_bar)

    def encode_depths(self, texts: list[str], depths, batch_size: int = 64,
                      show_progress_bar: bool = False) -> dict[int, np.ndarray]:
        """{depth: embeddings} of every depth from one forward pass: each depth's hidden
        state, with what a model truncated there applies after its last layer, pooled as
        the folder says. Equal to truncating to each depth (strategy top) and encoding;
        only valid where the weights do not depend on depth."""
        return self._encode(self.tokenize(texts, batch_size), len(texts), depths,
                            show_progress_bar)

    def tokenize(self, texts: list[str], batch_size: int = 64) -> list[tuple]:
        """The padded batches encode() runs: (positions in `texts`, model inputs) each,
        sorted by length so batches pad little, as sentence-transformers does. On the CPU:
        a large corpus's tokens need not fit on the device."""
        order = np.argsort([-len(t) for t in texts], kind="stable")
        return [(idx, self._batch([texts[i] for i in idx]))
                for idx in (order[s:s + batch_size] for s in range(0, len(texts), batch_size))]

    def encode_batches(self, batches: list[tuple], n: int,
                       show_progress_bar: bool = False) -> np.ndarray:
        """Embeddings of `n` texts from their tokenize() batches, with the current weights."""
        return self._encode(batches, n, [self.depth], show_progress_bar)[self.depth]

    def encode_batches_depths(self, batches: list[tuple], n: int, depths,
                              show_progress_bar: bool = False) -> dict[int, np.ndarray]:
        """encode_depths() of `n` texts from their tokenize() batches."""
        return self._encode(batches, n, depths, show_progress_bar)

    def _encode(self, batches, n, depths, show_progress_bar) -> dict[int, np.ndarray]:
        depths = sorted({int(d) for d in depths})
        if not depths or depths[0] < 1 or depths[-1] > self.depth:
            raise ValueError(f"depths {depths}: this encoder holds layers 1..{self.depth}")
        if not self.prefix and depths != [self.depth]:
            raise ValueError(f"depths {depths}: one pass gives shallower depths only of a "
                             "model holding the base's bottom layers (strategy top)")
        out = {d: np.zeros((n, self.hidden_size), dtype=np.float32) for d in depths}
        if show_progress_bar:
            from tqdm import tqdm

            batches = tqdm(batches, desc="encode", unit="batch")
        with self.torch.inference_mode():
            for idx, cpu_inputs in batches:
                inputs = {k: v.to(self.device) for k, v in cpu_inputs.items()}
                for d, h in self._hidden(inputs, depths).items():
                    out[d][idx] = self._pool(h, inputs["attention_mask"]).cpu().numpy()
        return out

    def _pool(self, h, mask):
        torch = self.torch
        if self.pooling == "cls":  # the first unmasked token, as sentence-transformers takes
            pooled = h[torch.arange(h.shape[0], device=h.device), mask.int().argmax(dim=1)]
        else:
            m = mask[..., None].to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1) if self.normalize else pooled


class BertEncoder(_LeanEncoder):
    """BERT forward pass in plain torch (torch, tokenizers, safetensors only)."""

    def __init__(self, folder, *, depth: int | None = None, strategy: str = "top",
                 max_seq_length: int = 128, device: str = "cpu"):
        import torch
        from safetensors import safe_open
        from tokenizers import Tokenizer

        from workflow_scripts.biencoder.model.truncation import kept_layers
        from workflow_scripts.core import tokenizer_sides

        folder = Path(folder)
        self.pooling, self.normalize = folder_pooling(folder)
        cfg = json.loads((folder / "config.json").read_text())
        if (cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu"
                or cfg.get("position_embedding_type", "absolute") != "absolute"
                or not (folder / "tokenizer.json").exists()):
            raise UnsupportedModel(f"{folder}: not a BERT the plain-torch encoder reproduces")
        self.cfg = cfg
        keep = kept_layers(strategy, depth or cfg["num_hidden_layers"], cfg["num_hidden_layers"])
        if keep != list(range(len(keep))):
            raise UnsupportedModel(f"strategy {strategy}: the plain-torch encoder runs the "
                                   "bottom layers only")
        self.depth = len(keep)
        self.prefix = True
        self.hidden_size = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.max_seq_length = max_seq_length
        # Cut and padded on the sides the tokenizer was saved with (tokenizer_config.json),
        # as sentence-transformers does: a left-truncating model sees a text's end.
        self.tokenizer = tokenizer_sides.configure(
            Tokenizer.from_file(str(folder / "tokenizer.json")), folder, max_seq_length,
            pad_id=cfg.get("pad_token_id", 0))
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
        for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
            if _bytes(folder / name) != _bytes(self.folder / name):
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

    def _batch(self, texts):
        enc = self.tokenizer.encode_batch(texts)
        return {"input_ids": self.torch.tensor([e.ids for e in enc]),
                "attention_mask": self.torch.tensor([e.attention_mask for e in enc])}

    def _hidden(self, inputs, depths):
        torch, w = self.torch, self.w
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        n, L = ids.shape
        pos = torch.arange(L, device=ids.device)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][pos][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._ln(x, "embeddings.LayerNorm")
        add_mask = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        hd = x.shape[-1] // self.heads
        out = {}
        for i in range(max(depths)):
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
            if i + 1 in depths:
                out[i + 1] = x
        return out


class AutoModelEncoder(_LeanEncoder):
    """transformers' AutoModel forward for any architecture of the layer registry, cut to
    `depth` layers by `strategy` (biencoder/model/truncation.py), fp32."""

    def __init__(self, folder, *, depth: int | None = None, strategy: str = "top",
                 max_seq_length: int = 128, device: str = "cpu"):
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        from workflow_scripts.biencoder.model import architectures
        from workflow_scripts.biencoder.model.truncation import kept_layers

        folder = Path(folder)
        self.pooling, self.normalize = folder_pooling(folder)
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
        try:
            n_layers = architectures.num_layers(config)
        except architectures.UnsupportedArchitecture as e:
            raise UnsupportedModel(f"{folder}: {e}") from None
        keep = kept_layers(strategy, depth or n_layers, n_layers)
        if len(keep) < n_layers:
            architectures.check_cut(config, keep)
        load = {"dtype": torch.float32, "trust_remote_code": False}
        if strategy == "top":  # only the kept layers' weights are read
            model = AutoModel.from_pretrained(
                folder, **load, **architectures.truncation_kwargs(config, len(keep)))
        else:
            model = AutoModel.from_pretrained(folder, **load)
            if len(keep) < n_layers:
                architectures.keep_layers(model, keep)
        self.model = model.eval().to(device)
        self.final_norm = architectures.final_norm(self.model)
        self.depth = len(keep)
        self.prefix = keep == list(range(len(keep)))
        self.hidden_size = config.hidden_size
        # transformers applies the saved truncation and padding sides itself.
        self.tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
        self.max_seq_length = max_seq_length
        # What sentence-transformers passes: the tokenizer's outputs the forward declares.
        self.inputs = set(inspect.signature(self.model.forward).parameters)
        self.device = device
        self.torch = torch

    def _batch(self, texts):
        enc = self.tokenizer(texts, padding=True, truncation="longest_first",
                             max_length=self.max_seq_length, return_tensors="pt")
        return {k: v for k, v in enc.items() if k in self.inputs}

    def _hidden(self, inputs, depths):
        out = self.model(**inputs, output_hidden_states=depths != [self.depth])
        # hidden_states[d] is layer d's output; the model's own output (depth self.depth)
        # already went through the final norm, a shallower state gets it here.
        return {d: out.last_hidden_state if d == self.depth
                else self.final_norm(out.hidden_states[d]) if self.final_norm is not None
                else out.hidden_states[d] for d in depths}


class _STAdapter:
    """sentence-transformers behind the same encode() signature (the fallback)."""

    def __init__(self, model):
        self.model = model

    def encode(self, texts, batch_size=64, show_progress_bar=False, **_):
        return self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                 show_progress_bar=show_progress_bar,
                                 normalize_embeddings=True)

    def encode_depths(self, texts, depths, **_):
        raise UnsupportedModel("encode_depths needs a lean encoder (a local folder of the "
                               "layer registry's architectures, Pooling mean or cls); this "
                               "model runs in sentence-transformers: encode each depth")


def load_encoder(folder_or_spec: str, *, depth: int | None = None, strategy: str = "top",
                 max_seq_length: int = 128, device: str | None = None):
    """The cheapest encoder that reproduces the model: plain-torch BERT, then transformers'
    AutoModel, else sentence-transformers; fp32, on CUDA when present (device None)."""
    import torch

    from workflow_scripts.biencoder.model.truncation import resolve_model_path

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    path = Path(resolve_model_path(folder_or_spec))
    if path.is_dir():
        for lean in (BertEncoder, AutoModelEncoder):
            try:
                return lean(path, depth=depth, strategy=strategy,
                            max_seq_length=max_seq_length, device=device)
            except UnsupportedModel:
                pass
    from workflow_scripts.biencoder.model.truncation import load_trained, load_truncated

    model = (load_truncated(folder_or_spec, strategy, depth, device=device) if depth
             else load_trained(path, device=device))
    model.max_seq_length = max_seq_length
    return _STAdapter(model)


def encode_at_depths(source: str, texts: list[list[str]], depths, *, max_seq_length: int,
                     batch_size: int = 64, device: str | None = None, encoder=None
                     ) -> list[dict[int, np.ndarray]]:
    """Each list of texts' {depth: embeddings} for a model whose weights do not depend on
    depth (the untrained base, a train-once model: strategy top), from one forward pass at
    the deepest depth. A model only sentence-transformers runs (a hub id, other pooling) is
    truncated and encoded once per depth instead: the same embeddings, more passes.
    `encoder`: load_encoder(source) at the deepest depth, when the caller has it."""
    deepest = max(depths)
    encoder = encoder or load_encoder(source, depth=deepest, max_seq_length=max_seq_length,
                                      device=device)
    if not isinstance(encoder, _STAdapter):
        return [encoder.encode_depths(t, depths, batch_size=batch_size, show_progress_bar=True)
                for t in texts]
    print(f"{source}: no lean encoder, so no one-pass depths; encoding each depth",
          flush=True)
    out = [{} for _ in texts]
    for d in sorted(depths):
        enc = encoder if d == deepest else load_encoder(
            source, depth=d, max_seq_length=max_seq_length, device=device)
        for emb, t in zip(out, texts, strict=True):
            emb[d] = enc.encode(t, batch_size=batch_size, show_progress_bar=True)
    return out
