"""The config keys whose values decide a claim (docs/claims.md, "Registered before their
data"): one list, by the study a claim's members read, and `config_values`, their values in a
config. The study plan puts those values in the claims grid at parse time and the
registration (claims/registration.py) records each claim's share of them; both read this
module, so the key list lives in core. Standard library and core/settings.py only.
"""

from __future__ import annotations

from workflow_scripts.core import settings as stage_settings

# The keys of every training stage (core/settings.py: what changes a trained model), read
# for each recipe a claim's trained arms name, each with its strategy's keys only
# (train_settings: a train-once arm's loss settings too).
_TRAINING = tuple(dict.fromkeys(
    k for cls in (stage_settings.Train, *stage_settings.TRAIN_ONCE_SETTINGS.values())
    for k in cls.keys().values()))
# The one list of config keys whose values decide a claim, by the study its members read
# (docs/claims.md, "Registered before their data"). `recipes.*`: each recipe its trained
# arms name; `datasets.*`: the training data and each benchmark it reads (the whole entry).
# A (key, interval key) pair counts only where that interval method draws bootstrap samples
# (the calibrated t draws none). The grid the claim ranges over is recorded apart, as the
# values its members take on each axis (AXIS_KEYS).
_BI_STATS = ("stats.metric", "stats.interval", "stats.ci",
             ("stats.nboot", "stats.interval"), ("stats.seed", "stats.interval"))
# Study-wide control decides every claim at its step's level in one family (claims/decide.py
# `study_wide`): a key of every study's claims.
_STUDY_WIDE = "stats.study_wide"
DECIDING_KEYS: dict[str, tuple] = {
    "biencoder": ("base_model", "train_data", "datasets.*", *_TRAINING, "eval.top_k",
                  *_BI_STATS, _STUDY_WIDE),
    # The onset's p-value is a bootstrap's whatever the interval method.
    "curves": ("base_model", "train_data", "datasets.*", *_TRAINING, "recipes.*.eval_steps",
               "eval.top_k", "stats.metric", "stats.interval", "stats.ci", "stats.nboot",
               "stats.seed", "stats.onset_epsilon", _STUDY_WIDE),
    "ladder": ("ladder.dataset.name", *stage_settings.LadderData.keys().values(),
               *stage_settings.LadderTrain.keys().values(), "ladder.stats.interval",
               "ladder.stats.ci", ("ladder.stats.nboot", "ladder.stats.interval"),
               ("ladder.stats.seed", "ladder.stats.interval"), _STUDY_WIDE),
    # The latency ratio's bootstrap, its protocol and coherence checks; the Holm level is
    # stats.ci's.
    "latency": ("base_model", "latency.runs", *dict.fromkeys(
        [*stage_settings.LatencyProfile.keys().values(),
         *stage_settings.LatencySummary.keys().values()]), "stats.ci", _STUDY_WIDE),
}
# The grid: each axis a claim's members range over, by the config key that sets it. A
# ladder config is recorded with its shape (d, L: its rungs k); latency members read every
# depth (the canonical ladder is fitted over all of them).
AXIS_KEYS = {"recipe": "recipes", "strategy": "strategies", "depth": "depths",
             "benchmark": "benchmarks", "config": "ladder.configs", "method": "ladder.methods"}
BOOTSTRAP = "multibootstrap"  # config/schema.yaml's interval methods: the other is calibrated


def split_entry(entry) -> tuple[str, str | None]:
    return (entry, None) if isinstance(entry, str) else entry


def config_values(config: dict) -> dict:
    """Every value DECIDING_KEYS names in `config`, by concrete key (`recipes.short.lr`;
    `ladder.configs`: {name: entry}), the schemas' defaults where the config leaves a key
    out; a key neither gives is left out. The claims grid holds it (study_plan.claims_grid):
    the registration and the claims stage read the same values."""
    names = {"recipes": list(config.get("recipes") or {}),
             "datasets": list(config.get("datasets") or {})}
    out = {}
    for entry in dict.fromkeys(e for entries in DECIDING_KEYS.values() for e in entries):
        key = split_entry(entry)[0]
        head, _, tail = key.partition(".*")
        for concrete in ([f"{head}.{n}{tail}" for n in names.get(head, ())] if tail or
                         key.endswith(".*") else [key]):
            value = _lookup(config, concrete, key)
            if value is not ABSENT:
                out[concrete] = value
    if "ladder" in config:
        out["ladder.configs"] = {c["name"]: c for c in config["ladder"].get("configs", [])}
    return out


ABSENT = object()  # a key neither the config nor the schema gives


def _lookup(config: dict, concrete: str, key: str):
    node = config
    for part in concrete.split("."):
        if not isinstance(node, dict) or part not in node:
            try:
                node = stage_settings.schema_node(key)[0]
            except KeyError:
                return ABSENT
            return node.get("default", ABSENT)
        node = node[part]
    return node
