"""Fixed-layers training for the train-once arms (config keys
recipes.NAME.train_once_loss.fixed_depths and, for matryoshka2d, .pairs):
sentence-transformers' AdaptiveLayerLoss (and Matryoshka2dLoss, which is one) with its prior
layers fixed to the configured depths, every step, instead of sampled; with pairs, each
depth at its own dimension, as Starbucks (arXiv 2410.13230) trains.

Why a subclass: the library's forward draws its prior layers itself, `random.sample` over
every layer below the last, and its one other choice, n_layers_per_step -1, takes all of
them, layer 0 (the embeddings' output) and the depths nobody evaluates included, and
averages over that count. No argument names the layers. `FixedLayersLoss.forward` is
sentence-transformers 6.2's AdaptiveLayerLoss.forward (its decorators, weighting and KL
term) with that draw replaced by the fixed list; everything else is the library's.

Imported by the training stage only (it imports torch and sentence-transformers).
"""

from __future__ import annotations

import logging

from sentence_transformers.base.losses.merged_forward import column_merging_disabled
from sentence_transformers.sentence_transformer.losses import (
    AdaptiveLayerLoss,
    Matryoshka2dLoss,
    MatryoshkaLoss,
)
from sentence_transformers.sentence_transformer.losses.adaptive_layer import (
    ForwardDecorator,
    TransformerDecorator,
)
from torch.nn import functional as F

from workflow_scripts.biencoder.model.architectures import num_layers


class _FixedLayers:
    """The forward of AdaptiveLayerLoss with fixed prior layers (hidden-state indices: the
    output of that many transformer layers), each with its loss (the wrapped one, or a
    pair's), mixed into the library's classes so their constructors, weights and config
    stay the library's."""

    fixed: tuple[tuple[int, object], ...]

    def _fix(self, depths, losses=None, key="fixed_depths") -> None:
        layers = num_layers(self.model[0].auto_model.config)
        bad = sorted(d for d in depths if not 1 <= d < layers)
        if bad:
            raise ValueError(f"config key recipes.*.train_once_loss.{key}: depths {bad} are "
                             f"not below the trained model's {layers} layers")
        self.fixed = tuple(sorted(zip(depths, losses or [self.loss] * len(depths),
                                      strict=True), key=lambda p: p[0]))
        # What train_summary.json records (get_config_dict): the layers every step trains.
        self.n_layers_per_step = len(self.fixed)

    def forward(self, sentence_features, labels):
        model = self.model  # one process, no DDP or compile wrapper (biencoder/train.py)
        transformer_forward, model_forward = model[0].forward, model.forward
        layers = TransformerDecorator(model[0], transformer_forward)
        embeddings = ForwardDecorator(model_forward)
        model[0].forward, model.forward = layers, embeddings
        t = self.kl_temperature
        try:
            with column_merging_disabled():
                # The last layer (the trained depth), then each fixed layer from the cached
                # hidden states, as the library does for its sampled ones.
                loss = self.loss(sentence_features, labels) * self.last_layer_weight
                if t > 0:
                    teacher = F.softmax(embeddings.get_embeddings() / t, dim=-1).detach()
                for idx, layer_loss in self.fixed:
                    layers.set_layer_idx(idx)
                    loss = loss + (layer_loss(sentence_features, labels)
                                   * self.get_layer_weight(idx) / len(self.fixed)
                                   * self.prior_layers_weight)
                    if t > 0:  # the layer's full-dimension embeddings, as the library's
                        student = F.log_softmax(embeddings.get_embeddings() / t, dim=-1)
                        loss = loss + (F.kl_div(student, teacher, reduction="batchmean")
                                       * t * self.kl_div_weight)
        finally:
            model[0].forward, model.forward = transformer_forward, model_forward
        return loss

    def get_config_dict(self) -> dict:
        return {**super().get_config_dict(), "fixed_depths": [d for d, _ in self.fixed]}


class FixedLayersLoss(_FixedLayers, AdaptiveLayerLoss):
    """AdaptiveLayerLoss training the last layer and every one of `fixed_depths` each step."""

    def __init__(self, model, loss, fixed_depths, **kwargs) -> None:
        super().__init__(model, loss, **kwargs)
        self._fix(fixed_depths)


class FixedLayersMatryoshka2dLoss(_FixedLayers, Matryoshka2dLoss):
    """Matryoshka2dLoss training the last layer and every one of `fixed_depths` each step,
    each at n_dims_per_step of the dimensions (-1: all of them, the full grid)."""

    def __init__(self, model, loss, matryoshka_dims, fixed_depths, **kwargs) -> None:
        super().__init__(model, loss, matryoshka_dims, **kwargs)
        self._fix(fixed_depths)


class FixedPairsLoss(_FixedLayers, AdaptiveLayerLoss):
    """Starbucks' pairs (config key train_once_loss.pairs): every step the last layer at the
    full dimension and each pair's depth at its dimension only (MatryoshkaLoss at that one
    dimension: the embedding truncated and normalised)."""

    def __init__(self, model, loss, pairs, **kwargs) -> None:
        full = model.get_embedding_dimension()
        wide = sorted({dim for _, dim in pairs if dim > full})
        if wide:
            raise ValueError(f"config key recipes.*.train_once_loss.pairs: dimensions {wide} "
                             f"exceed the model's embedding dimension {full}")
        super().__init__(model, loss, **kwargs)
        # MatryoshkaLoss warns when its dimensions leave out the full one: here the last
        # layer trains it.
        quiet = logging.getLogger(MatryoshkaLoss.__module__)
        level, _ = quiet.level, quiet.setLevel(logging.ERROR)
        try:
            per_depth = [MatryoshkaLoss(model, loss, [dim]) for _, dim in pairs]
        finally:
            quiet.setLevel(level)
        self._fix([d for d, _ in pairs], per_depth, key="pairs")
        self.pairs = sorted(map(tuple, pairs))

    def get_config_dict(self) -> dict:
        return {**super().get_config_dict(), "pairs": [list(p) for p in self.pairs]}
