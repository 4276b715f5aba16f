"""Fixed-layers training (config keys recipes.NAME.train_once_loss.fixed_depths and .pairs):
one step's loss of a train-once arm is the last layer's term plus every fixed depth's (a
pair's at its dimension), recomputed here from the model's hidden states; without the keys
the library samples as before; the combinations the training cannot honour are refused
naming the key."""

from __future__ import annotations

import copy
import json
import random

import pytest
import torch
import yaml
from conftest import ROOT
from torch.nn import functional as F

from workflow_scripts.core import configcheck
from workflow_scripts.core.settings import Train, TrainAdaptive, TrainMatryoshka2d

WORDS = ["array", "frame", "tensor", "index"]
TRIPLES = [(f"how to {a} a {b}", f"{a} the {b} along axis {i}", f"{b} of the {a} number {i}")
           for i, (a, b) in enumerate(zip(WORDS, WORDS[1:] + WORDS[:1], strict=True))]
SETTINGS = {"batch_size": 4, "steps": 1, "lr": 1e-3, "max_seq_length": 16}
T = 0.3  # the schema's kl_temperature


@pytest.fixture(scope="module")
def model(tiny_model):
    """The 3-layer tiny BERT, dropout off: the loss and the recomputation see one forward."""
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(str(tiny_model), device="cpu")
    m.max_seq_length = 16
    return m.eval()


def _features(model):
    return [model.preprocess([t[i] for t in TRIPLES]) for i in range(3)]


def _layer_embeddings(model, features) -> dict[int, list[torch.Tensor]]:
    """Each hidden state's sentence embedding, per column (query, positive, negative): the
    transformer's hidden_states[d] through the model's later modules (pooling)."""
    out = {}
    for f in features:
        inputs = {k: f[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in f}
        hidden = model[0].auto_model(**inputs, output_hidden_states=True).hidden_states
        for d, h in enumerate(hidden):
            x = {**f, "token_embeddings": h}
            for module in list(model)[1:]:
                x = module(x)
            out.setdefault(d, []).append(x["sentence_embedding"])
    return out


def _by_hand(model, layers, dims=(None,), pairs=None) -> float:
    """The last layer's MNRL (summed over `dims`, MatryoshkaLoss's truncate-and-normalise)
    plus the mean over `layers` of theirs (with `pairs`, {depth: dim}: each at its own
    dimension), plus each layer's KL divergence to the last (full-dimension embeddings,
    temperature T): AdaptiveLayerLoss's terms at weights 1."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    mnrl = MultipleNegativesRankingLoss(model)
    emb = _layer_embeddings(model, _features(model))
    last = max(emb)

    def term(d):
        return sum(mnrl.compute_loss_from_embeddings(
            [e if dim is None else F.normalize(e[:, :dim], dim=-1) for e in emb[d]], None)
            for dim in ([pairs[d]] if pairs and d in pairs else dims))

    def kl(d):
        teacher = F.softmax(torch.cat(emb[last]) / T, dim=-1)
        student = F.log_softmax(torch.cat(emb[d]) / T, dim=-1)
        return F.kl_div(student, teacher, reduction="batchmean") * T

    with torch.no_grad():
        return float(term(last) + sum(term(d) / len(layers) + kl(d) for d in layers))


def _loss(model, strategy, **settings):
    from workflow_scripts.biencoder.train import build_loss

    cls = {"adaptive": TrainAdaptive, "matryoshka2d": TrainMatryoshka2d}[strategy]
    fn = build_loss(model, strategy, cls.from_json(json.dumps({**SETTINGS, **settings})))
    with torch.no_grad():
        return fn, float(fn(_features(model), None))


def test_fixed_depths_train_every_one_of_them_every_step(model):
    fn, value = _loss(model, "adaptive", fixed_depths=[2, 1])
    assert type(fn).__name__ == "FixedLayersLoss"
    assert fn.get_config_dict()["fixed_depths"] == [1, 2]  # what train_summary.json records
    assert value == pytest.approx(_by_hand(model, [1, 2]), rel=1e-5)
    # Neither layer alone, nor the library's -1 (every prior layer, the embeddings' 0 too):
    # the random-init layers' terms differ by ~1e-3 of the loss, 100 times the tolerance.
    for other in ([1], [2], [0, 1, 2]):
        assert value != pytest.approx(_by_hand(model, other), rel=1e-5)
    for _ in range(3):  # nothing drawn: every step the same terms
        assert _loss(model, "adaptive", fixed_depths=[1, 2])[1] == value


def test_matryoshka2d_with_fixed_depths_and_every_dimension_trains_the_whole_grid(model):
    fn, value = _loss(model, "matryoshka2d", fixed_depths=[1, 2], matryoshka_dims=[8, 16],
                      n_dims_per_step=-1)
    assert type(fn).__name__ == "FixedLayersMatryoshka2dLoss"
    assert value == pytest.approx(_by_hand(model, [1, 2], dims=(32, 16, 8)), rel=1e-5)


def test_pairs_train_each_depth_at_its_dimension_and_the_last_layer_at_the_full_one(model):
    fn, value = _loss(model, "matryoshka2d", pairs=[[2, 16], [1, 8]])
    assert type(fn).__name__ == "FixedPairsLoss"
    assert fn.get_config_dict()["pairs"] == [[1, 8], [2, 16]]
    assert value == pytest.approx(_by_hand(model, [1, 2], pairs={1: 8, 2: 16}), rel=1e-5)
    # Not the grid: every depth at both dimensions and the full one.
    assert value != pytest.approx(_by_hand(model, [1, 2], dims=(32, 16, 8)), rel=1e-5)
    with pytest.raises(ValueError, match=r"train_once_loss\.pairs: dimensions \[64\] exceed "
                                         r"the model's embedding dimension 32"):
        _loss(model, "matryoshka2d", pairs=[[1, 64]])


def test_without_fixed_depths_the_library_samples_one_layer_as_before(model):
    from sentence_transformers.sentence_transformer.losses import AdaptiveLayerLoss

    random.seed(7)
    fn, value = _loss(model, "adaptive")
    assert type(fn) is AdaptiveLayerLoss and fn.n_layers_per_step == 1
    random.seed(7)
    drawn = random.sample(range(3), 1)  # the library's draw: any layer below the last
    assert value == pytest.approx(_by_hand(model, drawn), rel=1e-5)


def test_a_fixed_depth_the_model_lacks_is_refused(model):
    with pytest.raises(ValueError, match=r"train_once_loss\.fixed_depths: depths \[3\] are "
                                         r"not below the trained model's 3 layers"):
        _loss(model, "adaptive", fixed_depths=[1, 3])


def _default_config() -> dict:
    return yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("loss", "message"), [
    ({"fixed_depths": [1, 3]}, "config key recipes.short.train_once_loss.fixed_depths: [3] are "
                               "not depths below the deepest (3, the layers the arm trains): "
                               "give some of [1, 2]"),
    ({"fixed_depths": [4]}, "config key recipes.short.train_once_loss.fixed_depths: [4]"),
    ({"fixed_depths": [1], "n_layers_per_step": 2},
     "config key recipes.short.train_once_loss.n_layers_per_step: 2 prior layers sampled per "
     "step, and fixed_depths [1] are trained every step instead: remove one"),
])
def test_fixed_depths_the_arm_cannot_train_are_refused_naming_the_key(loss, message):
    cfg = _default_config()  # depths 1-3; short: train_once adaptive
    cfg["recipes"]["short"]["train_once_loss"] = loss
    with pytest.raises(ValueError) as e:
        configcheck.check_config(copy.deepcopy(cfg))
    assert message in str(e.value)
    cfg["recipes"]["short"]["train_once_loss"] = {"fixed_depths": [1, 2]}
    configcheck.check_config(cfg)


@pytest.mark.parametrize(("loss", "message"), [
    ({"pairs": [[1, 8]], "matryoshka_dims": [8]},
     "config key recipes.short.train_once_loss.matryoshka_dims: [8] besides pairs [[1, 8]], "
     "which name every depth and dimension matryoshka2d trains, each step: remove one"),
    ({"pairs": [[1, 8]], "fixed_depths": [1]},
     "config key recipes.short.train_once_loss.fixed_depths: [1] besides pairs"),
    ({"pairs": [[1, 8]], "n_dims_per_step": -1},
     "config key recipes.short.train_once_loss.n_dims_per_step: -1 besides pairs"),
    ({"pairs": [[1, 8], [1, 16]]},
     "config key recipes.short.train_once_loss.pairs: depths [1] come more than once"),
    ({"pairs": [[3, 8]]}, "config key recipes.short.train_once_loss.pairs: [3] are not depths "
                          "below the deepest"),
    ({"pairs": [[1, 8, 2]]}, "config key recipes.short.train_once_loss.pairs[0]"),
])
def test_pairs_matryoshka2d_cannot_train_are_refused_naming_the_key(loss, message):
    cfg = _default_config()
    cfg["recipes"]["short"].update(train_once=["matryoshka2d"], train_once_loss=loss)
    with pytest.raises(ValueError) as e:
        configcheck.check_config(copy.deepcopy(cfg))
    assert message in str(e.value)
    cfg["recipes"]["short"]["train_once_loss"] = {"pairs": [[1, 8], [2, 16]]}
    configcheck.check_config(cfg)


def test_fixed_depths_are_a_training_setting_of_the_arms_only():
    """The key reaches the train-once jobs' settings (rerun trigger, trainer state's
    fingerprint, train_summary.json) and the claims' deciding keys; per-depth training
    does not read it, and the default is sampling."""
    from workflow_scripts.core.deciding_keys import DECIDING_KEYS

    cfg = _default_config()
    configcheck.check_config(cfg)
    before = {cls: cls.from_config(cfg, recipe="short")
              for cls in (Train, TrainAdaptive, TrainMatryoshka2d)}
    assert before[TrainAdaptive].fixed_depths == [] == before[TrainMatryoshka2d].fixed_depths
    cfg["recipes"]["short"]["train_once_loss"]["fixed_depths"] = [1, 2]
    assert Train.from_config(cfg, recipe="short") == before[Train]
    for cls in (TrainAdaptive, TrainMatryoshka2d):
        assert cls.from_config(cfg, recipe="short").to_json() != before[cls].to_json()
    cfg["recipes"]["short"]["train_once_loss"]["pairs"] = [[1, 8]]  # matryoshka2d's only
    assert TrainAdaptive.from_config(cfg, recipe="short").to_json() == TrainAdaptive.from_config(
        _with(cfg, pairs=[]), recipe="short").to_json()
    assert TrainMatryoshka2d.from_config(cfg, recipe="short").pairs == [[1, 8]]
    for key in ("fixed_depths", "pairs"):
        key = f"recipes.*.train_once_loss.{key}"
        assert key in DECIDING_KEYS["biencoder"] and key in DECIDING_KEYS["curves"]


def _with(cfg: dict, **loss) -> dict:
    out = copy.deepcopy(cfg)
    out["recipes"]["short"]["train_once_loss"].update(loss)
    return out
