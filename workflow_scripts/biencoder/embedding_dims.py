"""Embeddings at a smaller dimension: the first `dim` coordinates, L2-normalised.

What sentence-transformers does (6.2.0, SentenceTransformer.encode with truncate_dim): the
model's whole pipeline runs (Pooling, then Normalize where the folder has it), the
sentence embedding is cut to its first truncate_dim coordinates (util.truncate_embeddings:
embeddings[..., :truncate_dim]), and only then normalised if encode() is asked to
(normalize_embeddings=True); its retrieval evaluators score with cos_sim, which normalises.
depthlab cuts the pipeline's output (the lean encoders pool, and normalise where the folder
says, exactly as encode() does) and L2-normalises the cut: the same vectors as
encode(truncate_dim=dim, normalize_embeddings=True), and the same cosine scores as
encode(truncate_dim=dim) under cos_sim. Normalising before the cut scales a vector's first
coordinates by one number, so a pipeline with or without Normalize gives the same result.
One encoding serves every dimension: the evaluation cuts the full-dimension embeddings.
"""

from __future__ import annotations

import numpy as np


def truncate_normalise(emb, dim: int) -> np.ndarray:
    """The first `dim` coordinates of each row of `emb`, L2-normalised (float32). A row that
    is zero there stays zero, as torch's normalize leaves it."""
    emb = np.asarray(emb, dtype=np.float32)
    if not 1 <= int(dim) < emb.shape[1]:
        raise ValueError(f"dimension {dim}: the embeddings have {emb.shape[1]}; a truncation "
                         "keeps 1 to one less than that")
    cut = emb[:, :int(dim)]
    norm = np.linalg.norm(cut, axis=1, keepdims=True)
    return cut / np.maximum(norm, 1e-12)  # torch.nn.functional.normalize's eps
