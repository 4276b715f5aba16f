"""Credit assignment: BP, FA (Lillicrap et al. 2016), DFA (Nøkland 2016).

All three train the same parameter groups -- the embedding, each trainable block, and the
head (out_ln + out_head) -- each with its own AdamW and cosine schedule. They differ only
in the gradient each group receives:

- BP: the exact gradient of the cross-entropy.
- FA: every Linear in the blocks and the head sends the error backward through its own
  fixed random matrix B (shape of W) instead of W^T; its weight gradient stays exact.
  LayerNorm, GELU and the skips are exact. Frozen blocks keep their B too, so the
  embedding's error also crosses the frozen stack through B's.
- DFA: e = softmax - onehot goes straight to each trainable block's output h_out through
  the block's own B_l; the block minimises <stopgrad(g/rms(g)), h_out> / batch with exact
  backprop inside the block only (its input is detached). The embedding has its own B_emb;
  the head learns from the exact loss on its (detached) input.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from workflow_scripts.ladder import METHODS
from workflow_scripts.ladder.model import ResMLP

_FEEDBACK_STREAM, _SHUFFLE_STREAM = 1, 2


def derived_seed(seed: int, stream: int) -> int:
    """An independent seed for one random stream of a run (feedback, shuffling)."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])


def generator(seed: int, stream: int) -> torch.Generator:
    return torch.Generator().manual_seed(derived_seed(seed, stream))


# ---------------------------------------------------------------------------------------
# FA
# ---------------------------------------------------------------------------------------
class _FALinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, feedback):
        ctx.save_for_backward(x, feedback)
        return F.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad_out):
        x, feedback = ctx.saved_tensors
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_out @ feedback  # FA: B in place of W
        if ctx.needs_input_grad[1]:
            grad_w = grad_out.reshape(-1, grad_out.shape[-1]).T @ x.reshape(-1, x.shape[-1])
        if ctx.needs_input_grad[2]:
            grad_b = grad_out.reshape(-1, grad_out.shape[-1]).sum(0)
        return grad_x, grad_w, grad_b, None


class FALinear(nn.Module):
    """A Linear that shares `linear`'s parameters and propagates errors through B."""

    def __init__(self, linear: nn.Linear, feedback: torch.Tensor):
        super().__init__()
        assert feedback.shape == linear.weight.shape
        self.weight, self.bias = linear.weight, linear.bias
        self.register_buffer("feedback", feedback)

    def forward(self, x):
        return _FALinearFn.apply(x, self.weight, self.bias, self.feedback)


def fa_feedback(shape, gen: torch.Generator) -> torch.Tensor:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): the bound of PyTorch's default Linear init, so
    B has W's scale at init."""
    bound = 1 / math.sqrt(shape[1])
    return (torch.rand(shape, generator=gen) * 2 - 1) * bound


def to_fa(model: ResMLP, seed: int) -> ResMLP:
    """Swap every block Linear and out_head for an FALinear (in place). B's are drawn in a
    fixed order for all blocks, so block l's B does not depend on k."""
    gen = generator(seed, _FEEDBACK_STREAM)
    for block in model.blocks:
        block.fc1 = FALinear(block.fc1, fa_feedback(block.fc1.weight.shape, gen))
        block.fc2 = FALinear(block.fc2, fa_feedback(block.fc2.weight.shape, gen))
    model.out_head = FALinear(model.out_head, fa_feedback(model.out_head.weight.shape, gen))
    return model


# ---------------------------------------------------------------------------------------
# DFA
# ---------------------------------------------------------------------------------------
class DFAFeedback(nn.Module):
    """B_emb and one B_l per block, each [n_classes, d], N(0, 1) (the RMS normalisation of
    the projected error makes their scale irrelevant)."""

    def __init__(self, n_classes: int, d: int, n_blocks: int, seed: int):
        super().__init__()
        gen = generator(seed, _FEEDBACK_STREAM)
        self.register_buffer("embed", torch.randn(n_classes, d, generator=gen))
        self.register_buffer("blocks", torch.randn(n_blocks, n_classes, d, generator=gen))


def dfa_signal(e: torch.Tensor, feedback: torch.Tensor) -> torch.Tensor:
    """ĝ = g / rms(g), g = e @ B: one RMS over the whole batch x feature tensor."""
    g = e @ feedback
    return g / g.pow(2).mean().sqrt().clamp_min(1e-12)


def dfa_surrogate(e: torch.Tensor, feedback: torch.Tensor, h_out: torch.Tensor) -> torch.Tensor:
    """<stopgrad(ĝ), h_out> / batch: its gradient w.r.t. h_out is ĝ / batch."""
    return (dfa_signal(e, feedback).detach() * h_out).sum() / h_out.shape[0]


def dfa_losses(model: ResMLP, fb: DFAFeedback, x, y, k: int):
    """(cross-entropy, sum of the local surrogates). Groups never exchange gradients: each
    trainable block sees a detached input, frozen blocks run without a graph."""
    n_frozen = len(model.blocks) - k
    h0 = model.embed(x)
    outs = [(fb.embed, h0)]
    h = h0.detach()
    for i, block in enumerate(model.blocks):
        if i < n_frozen:
            with torch.no_grad():
                h = block(h)
        else:
            out = block(h)
            outs.append((fb.blocks[i], out))
            h = out.detach()
    logits = model.head(h)
    loss = F.cross_entropy(logits, y)
    e = torch.softmax(logits.detach(), -1) - F.one_hot(y, logits.shape[-1]).to(logits.dtype)
    return loss, sum(dfa_surrogate(e, B, out) for B, out in outs)


# ---------------------------------------------------------------------------------------
# The ladder: groups, optimizers, one step
# ---------------------------------------------------------------------------------------
def trainable_groups(model: ResMLP, k: int) -> dict[str, list[nn.Parameter]]:
    """Freeze blocks 0..L-k-1 and return the trained groups, bottom to top."""
    n_blocks = len(model.blocks)
    if not 0 <= k <= n_blocks:
        raise ValueError(f"k must be in 0..{n_blocks}; got {k}")
    groups = {"embed": list(model.embed.parameters())}
    for i, block in enumerate(model.blocks):
        block.requires_grad_(i >= n_blocks - k)
        if i >= n_blocks - k:
            groups[f"block{i}"] = list(block.parameters())
    groups["head"] = [*model.out_ln.parameters(), *model.out_head.parameters()]
    return groups


def cosine_factor(t: int, total_steps: int) -> float:
    """Cosine schedule from 1 at step 0 towards 0 at total_steps; no warmup."""
    return 0.5 * (1 + math.cos(math.pi * t / total_steps))


class AdamW:
    """torch.optim.AdamW's single-tensor update with the same op order (a test holds it to
    torch's, bit for bit) and the cosine schedule built in. Our own because the first use of
    torch.optim imports torch._dynamo: 1.8 s in every one of the ladder's many small jobs."""

    def __init__(self, params, *, lr: float, weight_decay: float, total_steps: int,
                 betas=(0.9, 0.999), eps: float = 1e-8):
        self.params = list(params)
        self.lr, self.weight_decay, self.total_steps = lr, weight_decay, total_steps
        self.betas, self.eps, self.t = betas, eps, 0
        self.moments = None  # created at the first step, on the params' device

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        if self.moments is None:
            self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]
        lr = self.lr * cosine_factor(self.t, self.total_steps)
        self.t += 1
        beta1, beta2 = self.betas
        step_size = lr / (1 - beta1**self.t)
        bias_correction2_sqrt = (1 - beta2**self.t) ** 0.5
        for p, (m, v) in zip(self.params, self.moments, strict=True):
            if p.grad is None:
                continue
            p.mul_(1 - lr * self.weight_decay)
            m.lerp_(p.grad, 1 - beta1)
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            denom = (v.sqrt() / bias_correction2_sqrt).add_(self.eps)
            p.addcdiv_(m, denom, value=-step_size)


def optimizers(groups, *, lr: float, weight_decay: float, total_steps: int) -> list[AdamW]:
    """One AdamW with its own cosine schedule per group."""
    return [AdamW(params, lr=lr, weight_decay=weight_decay, total_steps=total_steps)
            for params in groups.values()]


class Ladder:
    """A model prepared for one (method, k): call .step(x, y) per batch."""

    def __init__(self, model: ResMLP, *, method: str, k: int, seed: int, lr: float,
                 weight_decay: float, total_steps: int):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
        self.method, self.k = method, k
        self.model = to_fa(model, seed) if method == "fa" else model
        self.feedback = None
        if method == "dfa":
            d = model.embed.out_features
            self.feedback = DFAFeedback(model.out_head.out_features, d, len(model.blocks), seed)
        self.groups = trainable_groups(self.model, k)
        self.opts = optimizers(self.groups, lr=lr, weight_decay=weight_decay,
                               total_steps=total_steps)

    def to(self, device):
        self.model.to(device)
        if self.feedback is not None:
            self.feedback.to(device)
        return self

    def step(self, x, y) -> float:
        for opt in self.opts:
            opt.zero_grad()
        if self.method == "dfa":
            loss, surrogate = dfa_losses(self.model, self.feedback, x, y, self.k)
            (loss + surrogate).backward()
        else:
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
        for opt in self.opts:
            opt.step()
        return float(loss.detach())
