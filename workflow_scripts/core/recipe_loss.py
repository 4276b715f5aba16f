"""A recipe's loss (config keys recipes.NAME.loss and .mini_batch_size, and the train-once
arms' fixed layers, .train_once_loss.fixed_depths): the one check of what the training can
honour, run by the config check (core/configcheck.py) on every recipe and by the training
stage (biencoder/train.py) on its settings. Its own module, not
configcheck's: a training's code is its import closure, so the training reruns when this
check changes, and not when the rest of the config check does.

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


def fixed_depth_errors(name: str, loss: dict, depths: list[int] | None) -> list[str]:
    """A train-once loss's fixed layers (config key recipes.NAME.train_once_loss.fixed_depths,
    `loss` that mapping, defaults left out or not): they replace the sampled ones, so
    n_layers_per_step, which sets how many are drawn, must stay at its default; and each is
    one of the configured `depths` below the deepest, the one the arm trains at (the
    training, which knows only its own depth, checks that against the model: depths None)."""
    key = f"config key recipes.{name}.train_once_loss"
    fixed, n = (loss.get(k, schema_node(f"recipes.*.train_once_loss.{k}")[0]["default"])
                for k in ("fixed_depths", "n_layers_per_step"))
    if not fixed:
        return []
    msgs = []
    if n != schema_node("recipes.*.train_once_loss.n_layers_per_step")[0]["default"]:
        msgs.append(f"{key}.n_layers_per_step: {n} prior layers sampled per step, and "
                    f"fixed_depths {fixed} are trained every step instead: remove one")
    if depths is not None:
        shallower = sorted(d for d in depths if d < max(depths))
        bad = [d for d in fixed if d not in shallower]
        if bad:
            msgs.append(f"{key}.fixed_depths: {bad} are not depths below the deepest "
                        f"({max(depths)}, the layers the arm trains): give some of "
                        f"{shallower}")
    return msgs
