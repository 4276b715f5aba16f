"""ResMLP: embedding -> L pre-LN residual MLP blocks -> out_ln -> out_head; and a dataset's
arrays as the model's input tensors."""

from __future__ import annotations

import torch
from torch import nn

from workflow_scripts.ladder import data as ladder_data


def tensors(arrays, device="cpu"):
    """Standardised float32 inputs and int64 labels as torch tensors on `device`:
    (x_train, y_train, x_test, y_test)."""
    x_tr, x_te = ladder_data.standardize(arrays)
    as_t = lambda a, dt: torch.as_tensor(a, dtype=dt, device=device)  # noqa: E731
    return (as_t(x_tr, torch.float32), as_t(arrays["y_train"], torch.int64),
            as_t(x_te, torch.float32), as_t(arrays["y_test"], torch.int64))


class Block(nn.Module):
    """h <- h + f(LN(h)), f = Linear(d, 4d) -> GELU -> Linear(4d, d)."""

    def __init__(self, d: int):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * d, d)

    def branch(self, h: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(self.ln(h))))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.branch(h)


class ResMLP(nn.Module):
    def __init__(self, in_dim: int, d: int, n_blocks: int, n_classes: int):
        super().__init__()
        self.embed = nn.Linear(in_dim, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(n_blocks))
        self.out_ln = nn.LayerNorm(d)
        self.out_head = nn.Linear(d, n_classes)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return self.out_head(self.out_ln(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def build(in_dim: int, d: int, n_blocks: int, n_classes: int, seed: int) -> ResMLP:
    """The model of a seed: PyTorch's default init under torch.manual_seed(seed), so every
    method and every k starts from the same weights (runs are paired by seed)."""
    torch.manual_seed(seed)
    return ResMLP(in_dim, d, n_blocks, n_classes)


def stack_identity(net: ResMLP, x: torch.Tensor) -> dict:
    """Per block ||f_l(h_l)|| / ||h_l||; whole stack ||h_L - h_0|| / ||h_0|| and cos(h_L, h_0):
    each per example, then averaged over examples (docs/ladder.md, identity check)."""
    with torch.no_grad():
        h0 = h = net.embed(x)
        ratios = []
        for block in net.blocks:
            branch = block.branch(h)
            ratios.append(float((branch.norm(dim=-1) / h.norm(dim=-1)).mean()))
            h = h + branch
        rel = (h - h0).norm(dim=-1) / h0.norm(dim=-1)
        cos = torch.nn.functional.cosine_similarity(h, h0, dim=-1)
    return {"block_ratio": ratios, "stack_rel_change": float(rel.mean()),
            "stack_cos": float(cos.mean())}
