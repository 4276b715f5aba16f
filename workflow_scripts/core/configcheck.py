"""The core of the config check: the JSON schemas (config/schema.yaml,
config/ladder.schema.yaml), then what a schema cannot express (names that must exist in the
data registry, keys a data source needs), then the schemas' defaults filled in. Every message
names the config key. The studies' own checks (a base model's layer count, the claims
against the grid) live with the studies; workflow_scripts/study_config.py runs them all.

jsonschema and yaml only, so `snakemake -n` stays fast.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from collections.abc import Callable, Iterable

import jsonschema

from workflow_scripts.core.contracts import PER_DEPTH_REFERENCE
from workflow_scripts.core.recipe_loss import fixed_layer_errors, loss_errors
from workflow_scripts.core.settings import SCHEMA_FILES, resolve_ref, schema

# Keys each data source needs, as a training set and as a benchmark. The BEIR sources need
# url and md5, or path (location_errors).
SOURCE_NEEDS = {
    ("docstrings", "train"): ["packages", "max_triples"],
    ("docstrings", "benchmark"): ["packages", "max_queries", "max_docs"],
    ("triples-jsonl-gz", "train"): ["url"],
    ("beir", "benchmark"): [],
    ("beir-train", "train"): [],
    ("hub", "benchmark"): ["repo", "revision"],
}
HUB_KEYS = ("repo", "revision", "split")
BEIR_SOURCES = ("beir", "beir-train")


def _key(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def schema_errors(data: dict, name: str = "") -> list[str]:
    """Every schema violation as 'config key K: message', most specific first. An unknown key
    near a known one is named as a typo, with the key it meant; the errors that typo explains
    (the meant key missing) are left out."""
    validator = jsonschema.Draft202012Validator(schema(name))
    errors = sorted(validator.iter_errors(data), key=lambda e: (-len(e.absolute_path), e.message))
    prefix = [name] if name else []
    typos = {(*e.absolute_path, key): meant for e in errors
             for key, meant in misspelt_keys(e, schema(name)).items()}
    errors = [e for e in errors if not _explained_by(e, typos)]
    msgs = [f"config key {_claim_key(data, path, prefix)}: unknown key; did you mean "
            f"{_claim_key(data, (*path[:-1], meant), prefix)}?" for path, meant in typos.items()]
    msgs += [f"config key {_claim_key(data, e.absolute_path, prefix) or '(top level)'}: "
             + (no_study_message(data) if not name and _is_no_study(e) else e.message)
             for e in errors if not (_unknown(e) and {(*e.absolute_path, k)
                                                      for k in _unknown(e)} <= typos.keys())]
    if not name and any(not e.absolute_path and e.validator in TOP_LEVEL_GAPS for e in errors):
        msgs.append(STACK_HINT)
    return msgs


def _unknown(error) -> list[str]:
    """The keys an `additionalProperties: false` error found unexpected."""
    if error.validator != "additionalProperties" or error.validator_value is not False:
        return []
    known = error.schema.get("properties", {})
    patterns = error.schema.get("patternProperties", {})
    return [k for k in error.instance if k not in known
            and not any(re.search(p, str(k)) for p in patterns)]


def misspelt_keys(error, root: dict) -> dict[str, str]:
    """Unknown key -> the key it most likely meant: the nearest key at its own level, else
    (an unknown top-level key) a close key nested anywhere, as its dotted path."""
    out = {}
    here = list(error.schema.get("properties", {}))
    for key in _unknown(error):
        near = difflib.get_close_matches(str(key), here, n=1)
        if not near and not error.absolute_path:
            nested = {path.rsplit(".", 1)[-1]: path for path in nested_keys(root)}
            near = [nested[k] for k in difflib.get_close_matches(str(key), list(nested), n=1,
                                                                cutoff=0.8)]
        if near:
            out[key] = near[0]
    return out


def nested_keys(root: dict, node: dict | None = None, prefix: str = "",
                depth: int = 3) -> list[str]:
    """The dotted paths of the keys a schema names below its top level (`*` for a mapping's
    entries), to `depth` levels."""
    node = resolve_ref(root if node is None else node, root)
    out = []
    for key, sub in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        if prefix:
            out.append(path)
        if depth > 1 and isinstance(sub, dict):
            out += nested_keys(root, sub, f"{path}.", depth - 1)
            entries = resolve_ref(sub, root).get("additionalProperties")
            if isinstance(entries, dict):
                out += nested_keys(root, entries, f"{path}.*.", depth - 1)
    return out


def _explained_by(error, typos: dict) -> bool:
    """Whether a missing-key error names the key a typo meant, at the typo's level (one of
    anyOf's alternatives: `recipe:` for `recipes:` is not a config of neither study)."""
    if error.validator == "anyOf":
        return any(_explained_by(e, typos) for e in error.context)
    if error.validator not in ("required", "dependentRequired"):
        return False
    path = tuple(error.absolute_path)
    meant = {m for p, m in typos.items() if p[:-1] == path}
    missing = re.findall(r"'([^']+)' is a (?:required property|dependency)", error.message)
    return bool(missing) and set(missing) <= meant


def _claim_key(data: dict, path, prefix: list) -> str:
    """The key, with a claim's id where the error lies inside one ("claims[0] (id x).test",
    as the claims' own checks write it): a reader looks for the claim, not its index."""
    path = list(path)
    key = _key([*prefix, *path])
    if not prefix and len(path) >= 2 and path[0] == "claims" and isinstance(path[1], int):
        claims = data.get("claims")
        claim = claims[path[1]] if isinstance(claims, list) and path[1] < len(claims) else None
        if isinstance(claim, dict) and isinstance(claim.get("id"), str):
            head = f"claims[{path[1]}]"
            key = f"{head} (id {claim['id']})" + key[len(head):]
    return key


# A top-level key or study missing: most often a file of overrides given alone.
TOP_LEVEL_GAPS = ("anyOf", "required", "dependentRequired")
STACK_HINT = ("a config file replaces the default config/config.yaml, it is not added to it: "
              "to override a few keys, stack your file on the default, "
              "`snakemake --configfile config/config.yaml YOURS.yaml` (the claims CLI: "
              "`--config config/config.yaml YOURS.yaml`), or set single keys with "
              "`--config key=value`")


def _is_no_study(error) -> bool:
    return not error.absolute_path and error.validator == "anyOf"


def no_study_message(config: dict) -> str:
    keys = ", ".join(map(str, config)) or "no key at all"
    return (f"the config holds neither study (no `recipes:` for the bi-encoder study, no "
            f"`ladder:`), only {keys}")


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
    if "recipes" not in config:
        return msgs
    msgs += eval_step_errors(config["recipes"]) + train_once_errors(config)
    msgs += [m for name, recipe in config["recipes"].items() for m in loss_errors(name, recipe)]
    msgs += [m for name, recipe in config["recipes"].items() if recipe.get("train_once")
             for m in fixed_layer_errors(name, recipe.get("train_once_loss", {}),
                                         config["depths"], recipe["train_once"])]
    ref = config.get("latency", {}).get("reference_depth")
    if ref is not None and ref not in config["depths"]:
        msgs.append(f"config key latency.reference_depth: {ref} is not one of depths "
                    f"{config['depths']}")
    datasets = config["datasets"]
    roles = [("train_data", config["train_data"], "train")] + [
        (f"benchmarks[{i}]", b, "benchmark") for i, b in enumerate(config["benchmarks"])]
    for key, name, role in roles:
        if name not in datasets:
            msgs.append(f"config key {key}: {name!r} is not in the datasets registry "
                        f"(datasets:){_datasets_hint(name, datasets)}")
            continue
        source = datasets[name]["source"]
        if (source, role) not in SOURCE_NEEDS:
            msgs.append(f"config key datasets.{name}.source: {source!r} cannot serve as a {role}")
            continue
        msgs += [f"config key datasets.{name}: a {source} {role} needs {k}"
                 for k in SOURCE_NEEDS[(source, role)] if k not in datasets[name]]
    for name, spec in datasets.items():
        msgs += location_errors(name, spec)
    for i, r in enumerate(config.get("figures", {}).get("budget_pair", [])):
        if r not in config["recipes"]:
            msgs.append(f"config key figures.budget_pair[{i}]: {r!r} is not a recipe")
    return msgs


def _datasets_hint(name: str, names) -> str:
    """', which has A, B; did you mean X?' (else '; add it under datasets:'): every name and
    the closest."""
    near = difflib.get_close_matches(str(name), list(names), n=1)
    return (f", which has {', '.join(map(str, names))}" if names else ", which is empty") + \
        (f"; did you mean {near[0]!r}?" if near else "; add it under datasets:")


def location_errors(name: str, spec: dict) -> list[str]:
    """Where a downloaded dataset comes from: a BEIR source from url + md5 or a local folder
    (path), exactly one; a triples file's first max_triples lines, or the whole file
    checked against expect_lines, not both."""
    key, source = f"config key datasets.{name}", spec["source"]
    if source in BEIR_SOURCES:
        if ("url" in spec) == ("path" in spec):
            return [f"{key}: a {source} dataset needs exactly one of url (with md5) and path "
                    "(a local folder in BEIR's layout)"]
        if "url" in spec and "md5" not in spec:
            return [f"{key}.md5: a {source} url needs the zip's md5 (BEIR publishes them)"]
        if "path" in spec and "md5" in spec:
            return [f"{key}.md5: checks a url's zip; a path's files are recorded by sha256 "
                    "in the data card: remove md5"]
    elif "path" in spec:
        return [f"{key}.path: only a beir or beir-train dataset reads a local folder"]
    if source == "hub" and {"url", "md5"} & spec.keys():
        return [f"{key}: a hub dataset is pinned by repo and revision (a commit, which pins "
                "every file's hash): remove url and md5"]
    if source != "hub" and (given := [k for k in HUB_KEYS if k in spec]):
        return [f"{key}.{given[0]}: only a hub dataset reads a repository (repo, revision, "
                "split)"]
    if source == "triples-jsonl-gz" and {"max_triples", "expect_lines"} <= spec.keys():
        return [f"{key}.expect_lines: counts the whole file's lines, which max_triples never "
                "downloads; give one of expect_lines and max_triples"]
    return []


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


def typed_overrides(config: dict, overrides: dict) -> None:
    """Give `--config key=value` values their types in `config`, in place. Snakemake types a
    top-level value (int, float, True/False, but not YAML's true/false) but reads a list or
    mapping with YAML's base loader, every item a string: `depths=[1,2]` would give
    ['1', '2'] and `stats={nboot: 100}` nboot '100'. Each string that `overrides`
    (Snakemake's parsed --config) holds, at the top or inside such a value, is typed as
    Snakemake types a top-level one, true/false included, at the same place in `config`
    (where the files' values were merged with it)."""

    def scalar(x):
        if not isinstance(x, str):
            return x
        for parse in (int, float):
            try:
                if math.isfinite(y := parse(x)):  # not 'nan' or 'inf', which may be names
                    return y
            except ValueError:
                pass
        return {"true": True, "false": False}.get(x.lower(), x)

    def walk(here, given):
        if isinstance(given, dict) and isinstance(here, dict):
            for k, v in given.items():
                if k in here:
                    here[k] = walk(here[k], v)
            return here
        if isinstance(given, list) and given == here:  # lists are replaced, not merged
            return [walk(h, g) for h, g in zip(here, given, strict=True)]
        return scalar(here) if isinstance(given, str) and here == given else here

    for key, value in overrides.items():
        if isinstance(value, dict | list | str) and key in config:
            config[key] = walk(config[key], value)


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


# Keys of earlier versions, with what replaced them.
REMOVED = {
    ("batch_seeds",): "every training is its own job",
    ("ladder", "batch_seeds"): "every ladder run is its own job",
    ("ladder", "batch_methods"): "every ladder run is its own job",
}


def removed_keys(config: dict) -> list[str]:
    out = []
    for key, why in REMOVED.items():
        node = config
        for part in key[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and key[-1] in node:
            out.append(f"config key {'.'.join(key)}: removed ({why}, and a local run's jobs "
                       "share one preloaded interpreter: config key preload); delete it")
    return out


def error_text(msgs: list[str], schema_checked: bool) -> str:
    """The config check's error: the schemas are named where they found the problems; a
    problem found past them (a claim, a registry name) is said by itself."""
    if all(m.startswith("config key claims[") for m in msgs):  # the claim names itself
        schema_checked = False
    if schema_checked:
        files = ", ".join(str(p.relative_to(p.parents[1])) for p in SCHEMA_FILES.values())
        return f"invalid configuration (checked against {files}):\n  " + "\n  ".join(msgs)
    return "invalid configuration:\n  " + "\n  ".join(msgs)


def check_config(config: dict, wing_checks: Iterable[Callable[[dict], list[str]]] = ()) -> None:
    """Raise ValueError listing every problem; on success fill in the defaults.
    `wing_checks` are the studies' own checks of a schema-valid config (each returns its
    messages): core knows no wing, so workflow_scripts/study_config.py passes them."""
    msgs = removed_keys(config) or schema_errors(config)
    if not msgs and "ladder" in config:
        msgs = schema_errors(config["ladder"], "ladder")
    later = not msgs
    if later:
        msgs = cross_errors(config) + [m for check in wing_checks for m in check(config)]
    if msgs:
        raise ValueError(error_text(msgs, schema_checked=not later))
    fill_defaults(config)
    if "ladder" in config:
        fill_defaults(config["ladder"], "ladder")
