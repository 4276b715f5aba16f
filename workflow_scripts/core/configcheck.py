"""The one config check: the JSON schemas (config/schema.yaml, config/ladder.schema.yaml),
then what a schema cannot express (names that must exist in the data registry, keys a data
source needs), then the schemas' defaults filled in. Every message names the config key.

Imported by the Snakefile: jsonschema and yaml only, so `snakemake -n` stays fast.
"""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path

import jsonschema

from workflow_scripts.biencoder import architectures
from workflow_scripts.core.contracts import PER_DEPTH_REFERENCE
from workflow_scripts.core.settings import SCHEMA_FILES, schema

# Keys each data source needs, as a training set and as a benchmark.
SOURCE_NEEDS = {
    ("docstrings", "train"): ["packages", "max_triples"],
    ("docstrings", "benchmark"): ["packages", "max_queries", "max_docs"],
    ("triples-jsonl-gz", "train"): ["url"],
    ("beir", "benchmark"): ["url", "md5"],
}


def _key(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def schema_errors(data: dict, name: str = "") -> list[str]:
    """Every schema violation as 'config key K: message', most specific first."""
    validator = jsonschema.Draft202012Validator(schema(name))
    errors = sorted(validator.iter_errors(data), key=lambda e: (-len(e.absolute_path), e.message))
    prefix = [name] if name else []
    return [f"config key {_key([*prefix, *e.absolute_path]) or '(top level)'}: {e.message}"
            for e in errors]


def cross_errors(config: dict) -> list[str]:
    """What the schema cannot check: registry names, keys per data source, unique names."""
    msgs = []
    names = [c["name"] for c in config.get("ladder", {}).get("configs", [])]
    for i, name in enumerate(names):
        if name in names[:i]:
            msgs.append(f"config key ladder.configs[{i}].name: {name!r} is used twice; "
                        "config names must be unique")
    if "base" in config.get("recipes", {}):
        return msgs + ["config key recipes.base: the recipe name 'base' is reserved for the "
                       "untrained model; rename the recipe"]
    msgs += claim_errors(config)
    if "recipes" not in config:
        return msgs
    msgs += (depth_errors(config) + eval_step_errors(config["recipes"])
             + train_once_errors(config))
    if config.get("batch_seeds"):
        # one job's outputs are one list of seed folders, whatever the recipe
        seeds = {name: r["seeds"] for name, r in sorted(config["recipes"].items())}
        if len({tuple(v) for v in seeds.values()}) > 1:
            msgs.append("config key batch_seeds: true needs every recipe to list the same "
                        "seeds (" + "; ".join(f"recipes.{name}.seeds: {v}"
                                               for name, v in seeds.items()) + ")")
    ref = config.get("latency", {}).get("reference_depth")
    if ref is not None and ref not in config["depths"]:
        msgs.append(f"config key latency.reference_depth: {ref} is not one of depths "
                    f"{config['depths']}")
    datasets = config["datasets"]
    roles = [("train_data", config["train_data"], "train")] + [
        (f"benchmarks[{i}]", b, "benchmark") for i, b in enumerate(config["benchmarks"])]
    for key, name, role in roles:
        if name not in datasets:
            msgs.append(f"config key {key}: {name!r} is not in the datasets registry (datasets:)")
            continue
        source = datasets[name]["source"]
        if (source, role) not in SOURCE_NEEDS:
            msgs.append(f"config key datasets.{name}.source: {source!r} cannot serve as a {role}")
            continue
        msgs += [f"config key datasets.{name}: a {source} {role} needs {k}"
                 for k in SOURCE_NEEDS[(source, role)] if k not in datasets[name]]
    for i, r in enumerate(config.get("figures", {}).get("budget_pair", [])):
        if r not in config["recipes"]:
            msgs.append(f"config key figures.budget_pair[{i}]: {r!r} is not a recipe")
    return msgs


def depth_errors(config: dict) -> list[str]:
    """Depths beyond the base model's layer count, and an architecture outside the layer
    registry, where its config.json is on disk (a `package:` model or a local folder); a
    hub id is checked by its first job."""
    spec = str(config["base_model"])
    folder = Path(spec)
    if spec.startswith("package:"):
        try:  # the packages ship a model folder and import nothing heavy
            folder = Path(importlib.import_module(spec.split(":", 1)[1]).get_model_path())
        except (ImportError, AttributeError):
            return []  # the jobs say what is wrong with the package
    path = folder / "config.json"
    try:
        model_config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    try:  # each architecture names its layer count differently
        n_layers = architectures.num_layers(model_config)
    except architectures.UnsupportedArchitecture as e:
        return [f"config key base_model: {spec} ({path}): {e}"]
    return [f"config key depths[{i}]: {d} is more than the {n_layers} layers of base_model "
            f"{spec} ({path})" for i, d in enumerate(config["depths"]) if d > n_layers]


def eval_step_errors(recipes: dict) -> list[str]:
    """A learning curve's steps must increase strictly and lie within the recipe's steps."""
    msgs = []
    for name, recipe in recipes.items():
        grid = recipe.get("eval_steps", [])
        for i, step in enumerate(grid):
            key = f"config key recipes.{name}.eval_steps[{i}]"
            if i and step <= grid[i - 1]:
                msgs.append(f"{key}: {step} does not follow {grid[i - 1]}; the steps must "
                            "increase strictly")
            elif step > recipe["steps"]:
                msgs.append(f"{key}: {step} is beyond the recipe's {recipe['steps']} steps")
    return msgs


def train_once_errors(config: dict) -> list[str]:
    """A train-once arm is compared with per-depth training of strategy top (the same bottom
    layers) and starts from top's untrained base: both must be in the grid."""
    return [f"config key recipes.{name}.train_once: a train-once arm is compared with "
            f"per-depth training of strategy {PER_DEPTH_REFERENCE} (the same bottom layers); "
            f"add {PER_DEPTH_REFERENCE} to strategies"
            for name, recipe in config["recipes"].items()
            if recipe.get("train_once") and PER_DEPTH_REFERENCE not in config["strategies"]]


def claim_errors(config: dict) -> list[str]:
    """The first problem of the claims against this config's grid (unknown arms, benchmarks
    or metrics, missing margins, empty families), naming the claim id and key."""
    from workflow_scripts.claims import spec

    try:
        spec.parse(config.get("claims", []), spec.grid_from_config(config))
    except spec.ClaimError as e:
        return [str(e)]
    return []


def fill_defaults(data: dict, name: str = "") -> None:
    """Set every absent key that has a schema default, recursively (what Snakemake's
    validate(set_default=True) does)."""

    def set_defaults(validator, properties, instance, sch):
        for prop, sub in properties.items():
            if isinstance(instance, dict) and "default" in sub and prop not in instance:
                instance[prop] = copy.deepcopy(sub["default"])
        yield from jsonschema.Draft202012Validator.VALIDATORS["properties"](
            validator, properties, instance, sch)

    filler = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                          {"properties": set_defaults})
    for _ in filler(schema(name)).iter_errors(data):
        pass  # checked before; iterating applies the defaults


def check_config(config: dict) -> None:
    """Raise ValueError listing every problem; on success fill in the defaults."""
    msgs = schema_errors(config)
    if not msgs and "ladder" in config:
        msgs = schema_errors(config["ladder"], "ladder")
    if not msgs:
        msgs = cross_errors(config)
    if msgs:
        files = ", ".join(str(p.relative_to(p.parents[1])) for p in SCHEMA_FILES.values())
        raise ValueError(f"invalid configuration (checked against {files}):\n  "
                         + "\n  ".join(msgs))
    fill_defaults(config)
    if "ladder" in config:
        fill_defaults(config["ladder"], "ladder")
