"""A recipe's loss (config keys recipes.NAME.loss and .mini_batch_size, and the train-once
arms' fixed layers, .train_once_loss.fixed_depths and .pairs): the one check of what the
training can honour, run by the config check (core/configcheck.py) on every recipe and by
the training stage (biencoder/train.py) on its settings. Its own module, not configcheck's:
a training's code is its import closure, so the training reruns when this check changes,
and not when the rest of the config check does.

Standard library and core/settings.py only.
"""

from __future__ import annotations

from workflow_scripts.core.settings import schema_node

# The recipe losses whose gradient is cached (GradCache): they embed mini_batch_size rows at
# a time and back-propagate from a hook on the loss they return.
CACHED_LOSSES = ("cached_mnrl",)


def loss_errors(name: str, recipe: dict) -> list[str]:
    """A recipe's loss and mini-batch (config keys recipes.NAME.loss, .mini_batch_size; a
    training CLI's settings check with NAME `*`): a cached loss needs a mini-batch of at
    most the batch, plain MNRL takes none, and no train-once arm wraps a cached loss:
    sentence-transformers' AdaptiveLayerLoss (Matryoshka2dLoss is one) reads each layer's
    embeddings by patching the model's forward for the forward pass, after which a cached
    loss re-embeds its mini-batches in the backward pass without it (6.2 only warns)."""
    key = f"config key recipes.{name}"
    loss, mini = (recipe.get(k, schema_node(f"recipes.*.{k}")[0]["default"])
                  for k in ("loss", "mini_batch_size"))
    if loss not in CACHED_LOSSES:
        return [] if mini is None else [
            f"{key}.mini_batch_size: {mini} is for a cached loss (loss: "
            f"{', '.join(CACHED_LOSSES)}), and the recipe's loss is {loss}: remove it, or set "
            f"recipes.{name}.loss to a cached one"]
    msgs = []
    if mini is None:
        msgs.append(f"{key}.mini_batch_size: loss {loss} needs it (the rows embedded per "
                    f"pass, which bound the memory; 1 to batch_size)")
    elif mini > recipe["batch_size"]:
        msgs.append(f"{key}.mini_batch_size: {mini} is more than the batch_size "
                    f"{recipe['batch_size']}; give 1 to {recipe['batch_size']}")
    if recipe.get("train_once"):
        msgs.append(f"{key}.loss: {loss} cannot be wrapped by the train-once arms "
                    f"(recipes.{name}.train_once: {', '.join(recipe['train_once'])}): "
                    "sentence-transformers' AdaptiveLayerLoss and Matryoshka2dLoss do not "
                    "support a gradient-cached loss; give the arms a recipe with loss mnrl")
    return msgs


def fixed_layer_errors(name: str, loss: dict, depths: list[int] | None,
                       arms: list[str]) -> list[str]:
    """A train-once loss's fixed layers (config keys recipes.NAME.train_once_loss.fixed_depths
    and, for the matryoshka2d arm among `arms`, .pairs; `loss` that mapping, defaults left
    out or not). They replace the sampled layers (and pairs the sampled dimensions too), so
    the sampling counts stay at their defaults, and pairs, which name matryoshka2d's depths
    and dimensions, take neither fixed_depths nor matryoshka_dims besides; a pair's depth
    comes once. Each depth is one of the configured `depths` below the deepest, the one the
    arm trains at (the training, which knows only its own depth, checks that against the
    model: depths None)."""
    key = f"config key recipes.{name}.train_once_loss"

    def get(k):
        return loss.get(k, _DEFAULTS[k])

    fixed, pairs = get("fixed_depths"), get("pairs") if "matryoshka2d" in arms else []
    msgs, named = [], {"fixed_depths": fixed, "pairs": [d for d, _ in pairs]}
    if fixed and get("n_layers_per_step") != _DEFAULTS["n_layers_per_step"]:
        msgs.append(f"{key}.n_layers_per_step: {get('n_layers_per_step')} prior layers sampled "
                    f"per step, and fixed_depths {fixed} are trained every step instead: "
                    "remove one")
    if pairs:
        for k in ("fixed_depths", "matryoshka_dims", "n_layers_per_step", "n_dims_per_step"):
            if get(k) != _DEFAULTS[k]:
                msgs.append(f"{key}.{k}: {get(k)} besides pairs {pairs}, which name every "
                            "depth and dimension matryoshka2d trains, each step: remove one")
        twice = sorted({d for d in named["pairs"] if named["pairs"].count(d) > 1})
        if twice:
            msgs.append(f"{key}.pairs: depths {twice} come more than once; give each depth "
                        "one dimension")
    if depths is not None:
        shallower = sorted(d for d in depths if d < max(depths))
        for k, given in named.items():
            bad = sorted({d for d in given if d not in shallower})
            if bad:
                msgs.append(f"{key}.{k}: {bad} are not depths below the deepest "
                            f"({max(depths)}, the layers the arm trains): give some of "
                            f"{shallower}")
    return msgs


_DEFAULTS = {k: schema_node(f"recipes.*.train_once_loss.{k}")[0]["default"]
             for k in ("fixed_depths", "pairs", "matryoshka_dims", "n_layers_per_step",
                       "n_dims_per_step")}
