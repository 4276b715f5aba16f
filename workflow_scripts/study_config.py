"""The config check the Snakefile runs: core's schemas, cross-key rules and defaults
(core/configcheck.py), plus each study's checks of the config against what it names: the base
model's layer count (the bi-encoder's layer registry) and the claims against the grid; and,
for the Snakefile, whether a hub base model is cached or the hub reachable (job_environment).

The one module above core and the studies: core imports no study, so the composition lives
here. Light imports only (json, importlib; the layer registry and the claims parser import
nothing heavy; huggingface_hub only for a hub id), so `snakemake -n` stays fast.
"""

from __future__ import annotations

import functools
import importlib
import json
from pathlib import Path

from workflow_scripts.biencoder.model import architectures, hub
from workflow_scripts.core import configcheck


def _model_config(config: dict) -> tuple[str, Path, dict | None]:
    """base_model, its config.json's path and contents where on disk (a `package:` model, a
    local folder, a hub id in the Hugging Face cache; None for another hub id, or a package
    that does not import)."""
    spec = str(config["base_model"])
    return (spec, *_read_model_config(spec))


@functools.cache  # both checks read it: once per spec and process
def _read_model_config(spec: str) -> tuple[Path, dict | None]:
    folder = Path(spec)
    if spec.startswith("package:"):
        try:  # the packages ship a model folder and import nothing heavy
            folder = Path(importlib.import_module(spec.split(":", 1)[1]).get_model_path())
        except (ImportError, AttributeError):
            return folder, None  # the jobs say what is wrong with the package
    elif hub.is_hub_id(spec):
        folder = hub.cached_config_folder(spec) or folder
    path = folder / "config.json"
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return path, None


def base_layers(config: dict) -> int:
    """The base model's layer count where its config.json is on disk and its architecture
    in the layer registry; 0 otherwise."""
    _, _, model_config = _model_config(config)
    try:
        return architectures.num_layers(model_config) if model_config else 0
    except architectures.UnsupportedArchitecture:
        return 0


def depth_errors(config: dict) -> list[str]:
    """Depths beyond the base model's layer count, and an architecture outside the layer
    registry, where its config.json is on disk (a `package:` model, a local folder, a hub
    id in the cache); a hub id the jobs download is checked by its first job."""
    spec, path, model_config = _model_config(config)
    if model_config is None:
        return []
    try:  # each architecture names its layer count differently
        n_layers = architectures.num_layers(model_config)
    except architectures.UnsupportedArchitecture as e:
        return [f"config key base_model: {spec} ({path}): {e}"]
    return [f"config key depths[{i}]: {d} is more than the {n_layers} layers of base_model "
            f"{spec} ({path})" for i, d in enumerate(config["depths"]) if d > n_layers]


def claim_errors(config: dict) -> list[str]:
    """The first problem of the claims against this config's grid (unknown arms, benchmarks
    or metrics, missing margins, empty families), naming the claim id and key. A value the
    grid lacks but an edit of it could give (up to the base model's layers) is no problem:
    its claim is not-applicable."""
    from workflow_scripts.claims import spec
    from workflow_scripts.claims.looks import arms as look_arms
    from workflow_scripts.core.settings import Claims

    layers = base_layers(config) if "recipes" in config else 0
    try:
        grid = spec.grid_from_config(config, layers=layers)
        claims = spec.parse(config.get("claims", []), grid)
    except spec.ClaimError as e:
        return [str(e)]
    return look_arms.errors(config.get("adaptive_seeds"), claims, grid.recipe_seeds,
                            Claims.from_config(config).study_wide)


def biencoder_errors(config: dict) -> list[str]:
    return depth_errors(config) if "recipes" in config else []


def check_config(config: dict) -> None:
    """Raise ValueError listing every problem of `config` (each naming its key); on success
    fill in the schemas' defaults."""
    configcheck.check_config(config, wing_checks=(claim_errors, biencoder_errors))


def configfile_study(path) -> str:
    """The study a config file names: its own `study` key, else the file's name without its
    extension (mine.yaml: mine). Of stacked files the last decides (the Snakefile), so that a
    file stacked on the embedded default is its own study, not the default's."""
    import yaml  # only where a config file is given

    with open(path, encoding="utf-8") as f:
        own = yaml.safe_load(f) or {}
    study = own.get("study") if isinstance(own, dict) else None
    return str(study) if study is not None else Path(path).stem


def job_environment(config: dict) -> dict[str, str]:
    """What the jobs' environment needs for the base model, checked before any job (the
    Snakefile sets it): HF_HUB_OFFLINE=1 for a hub id in the Hugging Face cache, so that no
    job tries the network. A hub id neither cached nor reachable raises ValueError, one
    message saying how to get it (biencoder/model/hub.py)."""
    return hub.job_environment(str(config["base_model"])) if "recipes" in config else {}
