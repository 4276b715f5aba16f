"""Large-batch recipes (recipe keys loss: cached_mnrl, mini_batch_size): GradCache's
CachedMultipleNegativesRankingLoss gives plain MNRL's gradient on the same batch, the
training builds it from the recipe's settings, and the settings it cannot honour are refused
naming the config key."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from conftest import ROOT

from workflow_scripts.core import configcheck
from workflow_scripts.core.settings import SettingsError, Train, TrainAdaptive

BATCH, MINI = 6, 4  # triples; each column embedded 4 + 2
WORDS = ["array", "frame", "tensor", "index", "merge", "sparse"]
TRIPLES = [(f"how to {a} a {b}", f"{a} the {b} along axis {i}", f"{b} of the {a} number {i}")
           for i, (a, b) in enumerate(zip(WORDS, WORDS[1:] + WORDS[:1], strict=True))]
SETTINGS = {"batch_size": BATCH, "steps": 1, "lr": 1e-3, "max_seq_length": 16}


def _gradients(model, settings: dict) -> tuple[float, dict, object]:
    """The loss and every parameter's gradient of one backward pass over TRIPLES, with the
    loss train.build_loss makes of these settings (a per-depth arm, strategy top)."""
    from workflow_scripts.biencoder.train import build_loss

    model.zero_grad(set_to_none=True)
    loss = build_loss(model, "top", Train.from_json(json.dumps({**SETTINGS, **settings})))
    features = [model.preprocess([t[i] for t in TRIPLES]) for i in range(3)]
    value = loss(features, None)
    value.backward()  # the cached loss re-embeds its mini-batches here (a hook)
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return value.item(), grads, loss


def test_cached_mnrl_step_gradient_equals_mnrl(tiny_model):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_model), device="cpu")
    model.max_seq_length = 16
    # No dropout: the two losses draw their masks for different batch shapes, so only the
    # deterministic forward pass can give the same gradient (the cached loss replays its
    # own draws exactly between its two passes).
    model.eval()
    plain_loss, plain, plain_fn = _gradients(model, {})
    cached_loss, cached, cached_fn = _gradients(
        model, {"loss": "cached_mnrl", "mini_batch_size": MINI})
    assert type(plain_fn).__name__ == "MultipleNegativesRankingLoss"
    assert type(cached_fn).__name__ == "CachedMultipleNegativesRankingLoss"
    # What train_summary.json records of the loss (train.train: name and config dict).
    assert cached_fn.get_config_dict()["mini_batch_size"] == MINI
    assert cached.keys() == plain.keys() and len(plain) > 10
    diff = max((cached[n] - plain[n]).abs().max().item() for n in plain)
    scale = max(g.abs().max().item() for g in plain.values())
    print(f"cached MNRL (mini-batch {MINI} of {BATCH}) vs MNRL: loss {cached_loss:.8f} vs "
          f"{plain_loss:.8f}; max |grad difference| {diff:.3e} (max |grad| {scale:.3e}) "
          f"over {len(plain)} parameter tensors")
    # fp32 sums in another order (mini-batches, trimmed padding): ~10 ulps of the largest.
    assert cached_loss == pytest.approx(plain_loss, rel=1e-6)
    assert scale > 1e-3 and diff <= 1e-5 * scale


# --- settings the training cannot honour, refused naming the key ----------------------------

@pytest.mark.parametrize("bad", [0, -4])
def test_a_mini_batch_below_one_is_refused(bad):
    with pytest.raises(SettingsError, match=r"config key recipes\.\*\.mini_batch_size\): "
                                            rf"{bad} is less than the minimum of 1"):
        Train.from_json(json.dumps({**SETTINGS, "loss": "cached_mnrl", "mini_batch_size": bad}))
    cfg = _default_config()
    cfg["recipes"]["long"].update(loss="cached_mnrl", mini_batch_size=bad)
    with pytest.raises(ValueError, match=r"config key recipes\.long\.mini_batch_size: "
                                         rf"{bad} is less than the minimum of 1"):
        configcheck.check_config(cfg)


def test_a_cached_loss_needs_a_mini_batch_of_at_most_the_batch():
    cfg = _default_config()
    long = cfg["recipes"]["long"]  # batch_size 16, no train-once arm
    long.update(loss="cached_mnrl", mini_batch_size=17)
    _refused(cfg, "config key recipes.long.mini_batch_size: 17 is more than the batch_size 16")
    del long["mini_batch_size"]
    _refused(cfg, "config key recipes.long.mini_batch_size: loss cached_mnrl needs it")
    long.update(loss="mnrl", mini_batch_size=4)
    _refused(cfg, "config key recipes.long.mini_batch_size: 4 is for a cached loss")
    long.update(loss="cached_mnrl", mini_batch_size=16)  # one mini-batch: allowed
    configcheck.check_config(copy.deepcopy(cfg))
    with pytest.raises(ValueError, match=r"recipes\.\*\.mini_batch_size: 17 is more than"):
        from workflow_scripts.biencoder.train import build_loss

        build_loss(None, "top", Train.from_json(json.dumps(
            {**SETTINGS, "batch_size": 16, "loss": "cached_mnrl", "mini_batch_size": 17})))


def test_the_train_once_arms_cannot_wrap_a_cached_loss():
    cfg = _default_config()
    cfg["recipes"]["short"].update(loss="cached_mnrl", mini_batch_size=4)  # train_once: adaptive
    _refused(cfg, "config key recipes.short.loss: cached_mnrl cannot be wrapped by the "
                  "train-once arms (recipes.short.train_once: adaptive)")
    from workflow_scripts.biencoder.train import build_loss

    with pytest.raises(ValueError, match=r"config key recipes\.\*\.loss: cached_mnrl cannot be "
                                         r"wrapped by the train-once arms"):
        build_loss(None, "adaptive", TrainAdaptive.from_json(json.dumps(
            {**SETTINGS, "loss": "cached_mnrl", "mini_batch_size": 4})))


def test_the_loss_is_a_training_setting():
    """Its keys reach every training job's settings (the rerun trigger, the trainer state's
    fingerprint, train_summary.json) and the claims' deciding keys, and the default is
    plain MNRL with no mini-batch."""
    from workflow_scripts.core.deciding_keys import DECIDING_KEYS

    cfg = _default_config()
    configcheck.check_config(cfg)
    before = Train.from_config(cfg, recipe="long")
    assert (before.loss, before.mini_batch_size) == ("mnrl", None)
    cfg["recipes"]["long"].update(loss="cached_mnrl", mini_batch_size=4)
    assert Train.from_config(cfg, recipe="long").to_json() != before.to_json()
    for key in ("recipes.*.loss", "recipes.*.mini_batch_size"):
        assert key in DECIDING_KEYS["biencoder"] and key in DECIDING_KEYS["curves"]


def _default_config() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))


def _refused(cfg: dict, message: str) -> None:
    with pytest.raises(ValueError) as e:
        configcheck.check_config(copy.deepcopy(cfg))
    assert message in str(e.value)
