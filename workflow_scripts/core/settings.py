"""Stage settings: one frozen dataclass per stage, built from the validated config.

Each field names the config key it comes from (`SECTION` + field name, or its own `key`).
Defaults live in config/schema.yaml and config/ladder.schema.yaml only: a key missing from
the config (or from a standalone CLI's `--settings-json`) takes the schema's default, and
the classes declare none of their own (tests/unit/core/test_settings.py holds both sides together).

Rules pass a stage its settings as one JSON argument, which is also the job's rerun
trigger: each class holds exactly the keys its stage reads, so changing a setting reruns
only the stages that read it. Config keys that only shape the workflow (which jobs exist,
where files go) are listed in WORKFLOW_KEYS; they reach no stage as settings.

Imports yaml and jsonschema only: the Snakefile builds these objects at parse time.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILES = {"": ROOT / "config/schema.yaml", "ladder": ROOT / "config/ladder.schema.yaml"}

# Config keys that reach no stage as settings: they decide which jobs exist and what they
# are called (the grid, the data registry's sources), or how a job runs (seeds, threads,
# checkpointing, figure formats). Rules pass them as wildcards or plain arguments.
WORKFLOW_KEYS = frozenset({
    "study", "depths", "strategies", "train_data", "benchmarks", "preload",
    "recipes.*.seeds",
    "recipes.*.checkpoint_every", "recipes.*.report_to", "recipes.*.eval_steps",
    "recipes.*.train_once",
    "recipes.*.truncated",
    "datasets.*.source", "datasets.*.url", "datasets.*.md5", "datasets.*.path",
    "datasets.*.expect_lines", "datasets.*.repo", "datasets.*.revision", "datasets.*.split",
    "eval.dims", "latency.runs", "latency.threads", "figures.budget_pair",
    "figures.formats", "ladder.dataset.name", "ladder.dataset.url", "ladder.dataset.md5",
    "ladder.configs", "ladder.methods", "ladder.seeds",
    "ladder.crosscheck",
})


class SettingsError(ValueError):
    """A settings document that does not fit its class; the message names the key."""


@functools.cache
def schema(name: str = "") -> dict:
    # libyaml's safe loader where PyYAML has it (the same documents, 10 times faster): every
    # job and every Snakemake call reads the schemas, and pure-Python parsing took 45 ms.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(SCHEMA_FILES[name].read_text(encoding="utf-8"), Loader=loader)


def resolve_ref(node: dict, root: dict) -> dict:
    """A schema node with its `$ref` (to the root's $defs) followed."""
    while "$ref" in node:
        ref = node["$ref"]
        node = {**root["$defs"][ref.rsplit("/", 1)[1]], **{k: v for k, v in node.items()
                                                           if k != "$ref"}}
    return node


def schema_node(key: str) -> tuple[dict, bool]:
    """(sub-schema, required) of a dotted config key; `*` stands for a mapping's entries
    (e.g. recipes.*.lr); keys under `ladder.` are looked up in the ladder's schema. A key
    another key requires (dependentRequired: base_model with recipes) counts as required:
    the stages that read it belong to that key's study."""
    parts = key.split(".")
    name = "ladder" if parts[0] == "ladder" and len(parts) > 1 else ""
    root = schema(name)
    node, required = root, False
    for part in parts[1:] if name else parts:
        node = resolve_ref(node, root)
        if part == "*":
            node, required = node["additionalProperties"], True
            continue
        props = node.get("properties", {})
        if part not in props:
            raise KeyError(f"config key {key}: not in {SCHEMA_FILES[name].name}")
        required = part in node.get("required", ()) or any(
            part in keys for keys in node.get("dependentRequired", {}).values())
        node = props[part]
    return resolve_ref(node, root), required


def setting(key: str):
    """A field read from config key `key` instead of SECTION.<field name>."""
    return dataclasses.field(metadata={"key": key})


@dataclasses.dataclass(frozen=True)
class Settings:
    """Base class: SECTION is the dotted config key the fields live under; placeholders in
    braces ({recipe}, {benchmark}) are filled by `from_config`'s keyword arguments."""

    SECTION: ClassVar[str] = ""

    @classmethod
    def keys(cls) -> dict[str, str]:
        """field name -> dotted config key, with mapping entries as `*`."""
        out = {}
        for f in dataclasses.fields(cls):
            key = f.metadata.get("key") or f"{cls.SECTION}.{f.name}".lstrip(".")
            out[f.name] = _star(key)
        return out

    @classmethod
    def from_config(cls, config: Mapping, **names: str):
        """The stage's settings from a whole config (validated, defaults filled or not)."""
        values = {}
        for f in dataclasses.fields(cls):
            key = (f.metadata.get("key") or f"{cls.SECTION}.{f.name}".lstrip(".")).format(**names)
            node: Any = config
            for part in key.split("."):
                node = node.get(part, _MISSING) if isinstance(node, Mapping) else _MISSING
            values[f.name] = node
        return cls._build(values)

    @classmethod
    def from_json(cls, text: str):
        """Settings from a JSON object (a CLI's --settings-json); absent keys take the
        schema's defaults, unknown keys and values the schema rejects are errors."""
        try:
            given = json.loads(text or "{}")
        except json.JSONDecodeError as e:
            raise SettingsError(f"--settings-json: not valid JSON ({e.msg})") from None
        if not isinstance(given, dict):
            raise SettingsError("--settings-json: expected a JSON object")
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise SettingsError(f"{cls.__name__}: unknown setting(s) {', '.join(unknown)}; "
                                f"expected some of {', '.join(sorted(names))}")
        return cls._build({n: given.get(n, _MISSING) for n in names}, validate=True)

    @classmethod
    def _build(cls, values: dict, validate: bool = False):
        import jsonschema

        keys = cls.keys()
        for name, value in list(values.items()):
            node, required = schema_node(keys[name])
            if value is _MISSING:
                if "default" not in node:
                    raise SettingsError(f"config key {keys[name]}: required"
                                        + ("" if required else " (and has no default)"))
                values[name] = node["default"]
            elif validate:
                # The root's $defs go along: a sub-schema may refer to them (claims do).
                root = schema("ladder" if keys[name].startswith("ladder.") else "")
                # A validator object, not jsonschema.validate: that one first checks the
                # schema against the metaschema, $defs included (~0.2 s per setting, paid
                # by every job); tests/unit/core/test_settings.py checks the schemas once.
                sub = {**node, "$defs": root.get("$defs", {})}
                validator = jsonschema.Draft202012Validator(sub)
                try:
                    validator.validate(value)
                except jsonschema.ValidationError as e:
                    raise SettingsError(f"setting {name} (config key {keys[name]}): "
                                        f"{e.message}") from None
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


def rerun_params(name: str, document: dict, depth: int = 2) -> dict[str, str]:
    """A JSON document as Snakemake params, one per part, so that a job reruns exactly when
    the document changes and Snakemake's rerun reason (every param that changed, before and
    now) names the part, not the whole document: `{name}0` -> 'name.key value', the value
    itself where short, else a digest of it; parts to `depth` levels of mappings, and a list
    of mappings with ids entry by entry ('claims[0]:an-id')."""
    parts = []

    def walk(label, value, depth):
        if depth and isinstance(value, dict) and value:
            for k, v in value.items():
                walk(f"{label}.{k}", v, depth - 1)
        elif depth and isinstance(value, list) and value and all(
                isinstance(x, dict) and "id" in x for x in value):
            for i, x in enumerate(value):
                walk(f"{label}[{i}]:{x['id']}", x, 0)
        else:
            text = json.dumps(value, sort_keys=True)
            short = text if len(text) <= 40 else hashlib.sha256(text.encode()).hexdigest()[:12]
            parts.append(f"{label} {short}")

    walk(name, document, depth)
    return {f"{name}{i}": part for i, part in enumerate(parts)}


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


def _star(key: str) -> str:
    return ".".join("*" if p.startswith("{") else p for p in key.split("."))


_TYPES = {"integer": int, "number": float, "string": str, "boolean": bool, "array": list}


def _field_type(node: dict):
    """A field's type: its schema type's, Any where the schema allows several (a list of
    types: an optional value's null)."""
    kind = node.get("type")
    return _TYPES.get(kind, Any) if isinstance(kind, str) else Any


def stage(name: str, section: str, keys: str, doc: str = "", **elsewhere: str):
    """A frozen settings dataclass: the fields `keys` (space-separated) read from
    SECTION.<field>, and each of `elsewhere` (field=config key) from its own key. Each
    field's type is its schema type (Any where the schema allows several)."""
    fields = []
    for f in keys.split():
        node, _ = schema_node(_star(f"{section}.{f}"))
        fields.append((f, _field_type(node)))
    for f, key in elsewhere.items():
        node, _ = schema_node(_star(key))
        fields.append((f, _field_type(node), setting(key)))
    cls = dataclasses.make_dataclass(name, fields, bases=(Settings,), frozen=True,
                                     namespace={"SECTION": section, "__doc__": doc or None,
                                                "__module__": __name__})
    return cls


# ---------------------------------------------------------------------------------------
# One class per stage: exactly the config keys the stage reads.
# ---------------------------------------------------------------------------------------
_TRAIN = ("batch_size steps lr warmup weight_decay scheduler scale loss mini_batch_size "
          "precision")
Train = stage("Train", "recipes.{recipe}", _TRAIN,
              "What changes a trained model: the recipe without its seed list and "
              "checkpointing, and the sequence length.", max_seq_length="max_seq_length")
# The train-once arms read their loss's settings too; a per-depth training does not, so
# changing them retrains only the arms that use them.
_LOSS = "recipes.{recipe}.train_once_loss."
_LAYER_LOSS = {k: _LOSS + k for k in ("n_layers_per_step", "fixed_depths", "layer_weighting",
                                      "last_layer_weight", "prior_layers_weight",
                                      "kl_div_weight", "kl_temperature")}
TrainAdaptive = stage("TrainAdaptive", "recipes.{recipe}", _TRAIN,
                      "Train plus AdaptiveLayerLoss's settings (train-once arm adaptive).",
                      max_seq_length="max_seq_length", **_LAYER_LOSS)
TrainMatryoshka2d = stage("TrainMatryoshka2d", "recipes.{recipe}", _TRAIN,
                          "Train plus Matryoshka2dLoss's settings (train-once arm "
                          "matryoshka2d).", max_seq_length="max_seq_length", **_LAYER_LOSS,
                          **{k: _LOSS + k for k in ("matryoshka_dims", "n_dims_per_step",
                                                     "pairs")})
# The settings class of a training job, by its strategy (per-depth strategies: Train).
TRAIN_ONCE_SETTINGS = {"adaptive": TrainAdaptive, "matryoshka2d": TrainMatryoshka2d}


def train_settings(strategy: str) -> type[Settings]:
    return TRAIN_ONCE_SETTINGS.get(strategy, Train)


Evaluate = stage("Evaluate", "eval", "top_k batch_size", max_seq_length="max_seq_length",
                 ignore_identical_ids="datasets.{benchmark}.ignore_identical_ids")
# The docstring generators keep pairs distinct as the encoder sees them (the base model's
# tokenizer, the first max_seq_length tokens): both reach them as settings.
DocstringBenchmark = stage("DocstringBenchmark", "datasets.{benchmark}",
                           "packages max_queries max_docs seed",
                           min_queries="eval.min_queries", base_model="base_model",
                           max_seq_length="max_seq_length")
DocstringTriples = stage("DocstringTriples", "datasets.{train_data}",
                         "packages max_triples seed", base_model="base_model",
                         max_seq_length="max_seq_length")
LatencyProfile = stage("LatencyProfile", "latency",
                       "batch_size seq_len warmup_calls warmup_max_calls warmup_window "
                       "warmup_tolerance rounds target_half_width max_rounds max_seconds "
                       "calls_per_round discard_calls encode_calls dtype seed nboot ci "
                       "reference_depth",
                       "One profiling run: the protocol and its stopping rule (the rounds "
                       "go on until the CI of every Q is narrow enough: the bootstrap and "
                       "the reference depth are the summary's).")
LatencySummary = stage("LatencySummary", "latency",
                       "nboot ci seed reference_depth target_half_width",
                       "The runs' analysis: bootstrap, reference depth and the coherence "
                       "checks' limits (latency.checks.*).",
                       **{k: f"latency.checks.{k}" for k in (
                           "intercept_floor", "max_residual", "max_slope_ratio",
                           "max_loo_error", "timer_slack", "max_timer_ratio_spread",
                           "split_half_tolerance",
                           "max_q_run_deviation",
                           "max_drift_range", "max_iqr_ratio", "max_run_deviation")})
Stats = stage("Stats", "stats", "metric interval nboot ci seed equivalence_epsilon "
              "target_half_width detect_delta")
Curves = stage("Curves", "stats", "metric interval nboot ci seed onset_epsilon",
               "The learning curves' statistics (biencoder/curves.py).")
DimsStats = stage("DimsStats", "stats", "metric interval nboot ci seed",
                  "The layer x dimension table's intervals (biencoder/dims_stats.py).")
LadderData = stage("LadderData", "ladder.dataset", "n_train n_test split_seed")
LadderTrain = stage("LadderTrain", "ladder.train", "epochs batch_size lr weight_decay device")
LadderStats = stage("LadderStats", "ladder.stats", "interval nboot ci seed")
Claims = stage("Claims", "stats", "interval nboot ci seed study_wide",
               "The claims (docs/claims.md) and the intervals that decide them: stats.* for "
               "the bi-encoder's, ladder.stats.* for the ladder's, latency.* for the latency "
               "ratio's bootstrap; stats.study_wide, the control across them.", claims="claims",
               ladder_interval="ladder.stats.interval",
               ladder_nboot="ladder.stats.nboot", ladder_ci="ladder.stats.ci",
               ladder_seed="ladder.stats.seed", latency_nboot="latency.nboot",
               latency_seed="latency.seed")
Looks = stage("Looks", "adaptive_seeds", "claims max_seeds step looks spending",
              "Seeds on demand (claims/looks/): the driving claims, the budget, the step "
              "or the explicit looks, and the boundaries' spending function.")

STAGES: tuple[type[Settings], ...] = (
    Train, TrainAdaptive, TrainMatryoshka2d, Evaluate, DocstringBenchmark, DocstringTriples,
    LatencyProfile, LatencySummary, Stats, Curves, DimsStats, LadderData, LadderTrain,
    LadderStats, Claims, Looks,
)
