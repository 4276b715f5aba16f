"""What the encoder sees of a text: the ids of the `max_seq_length` tokens it keeps under the
base model's tokenizer, as training and evaluation truncate it: the first ones, or the last
for a tokenizer saved with `truncation_side: left` (core/tokenizer_sides.py, which
biencoder/model/encoder.py reads the same tokenizer.json with). Two docstrings that differ
only in what that cut drops are one input to the model: as documents of one benchmark they
tie on every query, and the tie is broken by the document id; as training texts a hard
negative can be its own positive.

The base model's folder is resolved here as biencoder/model/truncation.py does (a data
stage imports no other biencoder subpackage): `package:MODULE` is the module's
get_model_path(), anything else a folder or a Hugging Face id.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

Tokenize = Callable[[Sequence[str]], list[tuple[int, ...]]]


class TextPair(Protocol):
    summary: str
    body: str


def model_folder(base_model: str) -> str:
    if base_model.startswith("package:"):
        return str(importlib.import_module(base_model.split(":", 1)[1]).get_model_path())
    return base_model


def tokenizer(base_model: str, max_seq_length: int) -> Tokenize:
    """texts -> the token ids the encoder sees of each (special tokens included). The
    function's `kept` says which tokens of a long text those are: "first", or "last" for a
    tokenizer saved with truncation_side left."""
    folder = Path(model_folder(base_model))
    if (folder / "tokenizer.json").exists():  # the lean encoders' tokenizer, a light import
        from tokenizers import Tokenizer

        from workflow_scripts.core import tokenizer_sides

        tok = tokenizer_sides.configure(Tokenizer.from_file(str(folder / "tokenizer.json")),
                                        folder, max_seq_length)  # no padding

        def view(texts):
            return [tuple(e.ids) for e in tok.encode_batch(list(texts))]

        side = tok.truncation["direction"]
    else:
        from transformers import AutoTokenizer

        auto = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)

        def view(texts):
            return [tuple(ids) for ids in auto(list(texts), truncation=True,
                                               max_length=max_seq_length)["input_ids"]]

        side = auto.truncation_side
    view.kept = "last" if side == "left" else "first"
    return view


def distinct(pairs: Sequence[TextPair], keys: Callable[[Sequence[str]], list]) -> list:
    """Keep the first pair of each summary and of each body, two texts being the same when
    `keys` maps them to the same key: the truncated token ids (`tokenizer`: as the encoder
    sees them) or a normalized full text (docstrings.dedupe)."""
    summaries, bodies, out = set(), set(), []
    for p, s, b in zip(pairs, keys([p.summary for p in pairs]),
                       keys([p.body for p in pairs]), strict=True):
        if s in summaries or b in bodies:
            continue
        summaries.add(s)
        bodies.add(b)
        out.append(p)
    return out
