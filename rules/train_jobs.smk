# The training jobs' shared parts (rules/train.smk): which models are still to train, the
# params of rule train and of the batched train_seeds rules, their benchmark files.
import types

from workflow_scripts.core.batching import (
    group_by_todo,
    job_benchmarks,
    model_is_current,
)


def train_arms():
    """{(recipe, strategy, trained depth): [seeds]} of every model to train."""
    arms = {}
    for r, s, d, seed in trained_model_keys():
        arms.setdefault((r, s, d), []).append(seed)
    return arms


def train_todo():
    """{arm: its seeds whose model is missing or records other settings}: what a batched
    training job may take (core/batching.py); every other model is left to Snakemake."""
    todo = {}
    for (r, s, d), seeds in train_arms().items():
        wc = types.SimpleNamespace(recipe=r, strategy=s)
        expected = {
            "settings": json.loads(train_settings_json(wc)),
            "snapshot_steps": snapshot_steps(r),
            "base": config["base_model"],
        }
        todo[(r, s, d)] = [
            seed
            for seed in seeds
            if not model_is_current(f"checkpoints/{r}/{s}{d}/seed{seed}", expected)
        ]
    return todo


def train_arm(wc):
    """(recipe, strategy, trained depth) of a training job: rule train's wildcards, or a
    train_seeds job's arm (recipe/strategy+depth)."""
    if "arm" not in wc.keys():
        return wc.recipe, wc.strategy, int(wc.depth)
    recipe, sd = wc.arm.split("/")
    strategy, depth = re.fullmatch(r"([a-z](?:[a-z0-9]*[a-z])?)([0-9]+)", sd).groups()
    return recipe, strategy, int(depth)


def _trained(output):
    """The model files of a training job (one for rule train, a list for train_seeds)."""
    return [output.model] if isinstance(output.model, str) else list(output.model)


def _train_seeds(wc, output):
    return " ".join(re.search(r"seed([0-9]+)/model", p)[1] for p in _trained(output))


# The params of train and train_seeds (rules/train.smk): the same values for one model
# whichever rule trains it. seeds and out derive from the outputs, which Snakemake does not
# count as params: a model's params never name the other seeds of its job.
TRAIN_PARAMS = {
    "base": config.get("base_model"),
    "settings": lambda wc: train_settings_json(
        types.SimpleNamespace(recipe=train_arm(wc)[0], strategy=train_arm(wc)[1])
    ),
    "strategy": lambda wc: train_arm(wc)[1],
    "depth": lambda wc: train_arm(wc)[2],
    "eval_steps": lambda wc: " ".join(map(str, snapshot_steps(train_arm(wc)[0]))),
    "seeds": _train_seeds,
    "out": lambda wc, output: " ".join(map(os.path.dirname, _trained(output))),
}


def train_benchmarks():
    """Every training job's benchmark file (core/batching.py job_benchmarks)."""
    return job_benchmarks(
        [(*arm, seed) for arm, seeds in train_arms().items() for seed in seeds],
        [
            [(*arm, seed) for seed in seeds]
            for seeds, arms in TRAIN_BATCHES
            for arm in arms
        ],
        {(*arm, seed) for arm, seeds in TRAIN_TODO.items() for seed in seeds},
        lambda k: bench("checkpoints/{}/{}{}/seed{}/model.safetensors".format(*k)),
    )
