"""What an evaluation was run on, for its files' provenance: the benchmark files read and the
weights encoded, each by sha256, and the base model the weights come from.

Once a result leaves depthlab its provenance is all a reader has, so it names the data and
the weights themselves, not only the settings that would make them again: the sha256 of each
benchmark file as the evaluation read it (the data card beside them is rewritten with the
data, so its origin line is copied in too), the sha256 of the weights file, and the base
model's identity as trainer_state.base_identity records it (spec, package version or hub
revision, sha256 over its folder). Each file is hashed once per process.
"""

from __future__ import annotations

from pathlib import Path

from workflow_scripts.biencoder import trainer_state
from workflow_scripts.core import paths

sha256 = trainer_state.file_sha256  # once per process while the file is unchanged
# A sentence-transformers folder's weights, in the order transformers prefers them.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def card_origin(card: Path) -> str | None:
    """The data card's first paragraph after its title: where the data came from (a URL, a
    local folder, a Hub repository and revision, the docstrings of installed packages)."""
    if not card.is_file():
        return None
    lines = card.read_text(encoding="utf-8").splitlines()
    para: list[str] = []
    for line in lines[1:]:
        if line.strip():
            para.append(line.strip())
        elif para:
            break
    return " ".join(para) or None


def benchmark_origin(folder) -> dict:
    """The benchmark files evaluated: {"folder", "sha256": {file: sha256}, "card": the data
    card's origin line}."""
    folder = Path(folder)
    return {"folder": str(folder),
            "sha256": {f: sha256(folder / f) for f in paths.BEIR_FILES},
            "card": card_origin(folder / paths.DATACARD)}


def weights_origin(folder) -> dict:
    """The weights file of a model folder and its sha256 ({} for a folder without one)."""
    folder = Path(folder)
    found = next((folder / f for f in WEIGHT_FILES if (folder / f).is_file()), None)
    return {} if found is None else {"file": str(found), "sha256": sha256(found)}


def base_origin(spec: str) -> dict:
    """An untrained base's identity (trainer_state.base_identity) and its weights."""
    return {"base_model": trainer_state.base_identity(spec),
            "weights": weights_origin(trainer_state.model_folder(spec))}
