"""Which end of a text a saved Hugging Face tokenizer cuts and pads, as transformers (hence
sentence-transformers, which trains the models) resolves it: `truncation_side` and
`padding_side` in the folder's tokenizer_config.json, else the direction tokenizer.json
itself stores, else right.

Why here: the readers of tokenizer.json through the light `tokenizers` library (the lean
BERT encoder, biencoder/model/encoder.py; the docstrings' encoder view,
biencoder/data/encoder_view.py) do not see tokenizer_config.json, and would otherwise cut
and pad on the right whatever the model was saved with. Both studies' layers may import
core; this imports nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

SIDES = ("left", "right")


def saved_sides(folder, tokenizer) -> tuple[str, str]:
    """(truncation side, padding side) of the tokenizer saved in `folder`, `tokenizer` being
    its tokenizer.json read by `tokenizers.Tokenizer.from_file`. ValueError, naming the file
    and key, for a side other than left or right."""
    path = Path(folder) / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    own = {"truncation_side": tokenizer.truncation, "padding_side": tokenizer.padding}
    sides = []
    for key, stored in own.items():
        side = config.get(key) or (stored or {}).get("direction") or "right"
        if str(side).lower() not in SIDES:
            where = path if config.get(key) else Path(folder) / "tokenizer.json"
            raise ValueError(f"{where}: {key} {side!r}; a tokenizer cuts and pads 'left' or "
                             "'right'")
        sides.append(str(side).lower())
    return sides[0], sides[1]


def configure(tokenizer, folder, max_length: int, pad_id: int | None = None):
    """`tokenizer` (tokenizer.json of `folder`) set to truncate to `max_length` tokens and,
    given `pad_id`, to pad a batch to its longest text, each on the side the folder's
    tokenizer was saved with; padding off without `pad_id`. Returns the tokenizer."""
    truncation_side, padding_side = saved_sides(folder, tokenizer)
    tokenizer.enable_truncation(max_length=max_length, direction=truncation_side)
    if pad_id is None:
        tokenizer.no_padding()
    else:
        tokenizer.enable_padding(pad_id=pad_id, direction=padding_side)
    return tokenizer
