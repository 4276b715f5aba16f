"""A base model given as a Hugging Face hub id (`base_model: bert-base-uncased`): checked
before any job, so that a machine without the model and without the hub stops once, with
one message, instead of a traceback in every job.

- Its files in the local Hugging Face cache (huggingface_hub's cache lookup, no network):
  the jobs run offline (`HF_HUB_OFFLINE=1` in their environment), so none tries the hub.
- Not in the cache and the hub unreachable (`HF_HUB_OFFLINE` set, or one metadata request
  with a short timeout fails to connect): HubModelMissing, naming the model id, the cache
  folder looked in and how to fix it.
- Not in the cache, the hub reachable: the jobs download it; an id the hub does not know
  stops here too.

huggingface_hub is imported only for a hub id (the default's `package:` model never pays
for it); nothing heavier.
"""

from __future__ import annotations

from pathlib import Path

# What sentence-transformers loads of a hub model, each a choice of files; its own
# modules.json (pooling, normalisation) is optional: a plain transformers model has none.
NEEDED = (("config.json",),
          ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
           "pytorch_model.bin.index.json"),
          ("tokenizer.json", "tokenizer_config.json"))
PROBE_TIMEOUT_S = 3.0


class HubModelMissing(ValueError):
    pass


def is_hub_id(spec: str) -> bool:
    """Neither a `package:` model nor a path on this machine."""
    return not spec.startswith("package:") and not Path(spec).exists()


def cache_folder() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def cached_snapshot(repo_id: str) -> tuple[Path | None, list[str]]:
    """(the cached snapshot folder of the id's main revision, the needed files it lacks);
    the folder is None unless every needed file is cached. HubModelMissing for a string
    that cannot be a hub id (a mistyped local path)."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    folder, missing = None, []
    for names in NEEDED:
        try:
            found = [p for n in names if isinstance(p := try_to_load_from_cache(repo_id, n), str)]
        except HFValidationError as e:
            raise HubModelMissing(
                f"config key base_model: {repo_id!r} is no folder on this machine, no "
                f"`package:MODULE` and no Hugging Face id ({e})") from None
        if found:
            folder = Path(found[0]).parent
        else:
            missing.append(" or ".join(names))
    return (folder if not missing else None), missing


def cached_config_folder(spec: str) -> Path | None:
    """The cached snapshot folder holding a hub id's config.json; None when it is not
    cached or `spec` is no hub id."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        path = try_to_load_from_cache(spec, "config.json")
    except HFValidationError:
        return None
    return Path(path).parent if isinstance(path, str) else None


def unreachable(repo_id: str) -> str | None:
    """Why the hub cannot serve `repo_id` now (offline mode, or the request's error), None
    when it answers; HubModelMissing for an id the hub does not know."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    try:
        HfApi().model_info(repo_id, timeout=PROBE_TIMEOUT_S)
    except RepositoryNotFoundError:
        raise HubModelMissing(
            f"config key base_model: {repo_id!r} is not a model on {constants.ENDPOINT} (a "
            "typo? a private or gated model needs `hf auth login` or HF_TOKEN)") from None
    except HfHubHTTPError:
        return None  # it answered: the jobs' downloads say what is wrong
    except Exception as e:  # noqa: BLE001 - any failure to connect: DNS, refused, timeout
        return f"{constants.ENDPOINT}: {type(e).__name__}: {e}"
    return None


def job_environment(spec: str) -> dict[str, str]:
    """The environment the jobs need for base model `spec`: HF_HUB_OFFLINE=1 for a hub id
    whose files are cached, nothing for a local model or one the jobs can download.
    HubModelMissing, one message, when the jobs could not load it."""
    if not is_hub_id(spec):
        return {}
    folder, missing = cached_snapshot(spec)
    if folder is not None:
        return {"HF_HUB_OFFLINE": "1"}
    why = unreachable(spec)
    if why is None:
        return {}
    lacks = ("nothing of it is there" if len(missing) == len(NEEDED)
             else f"missing: {'; '.join(missing)}")
    raise HubModelMissing(
        f"config key base_model: {spec!r} is a Hugging Face hub id whose files are not in "
        f"the Hugging Face cache {cache_folder()} ({lacks}), and the "
        f"hub cannot be reached ({why}). No job was started. Either\n"
        "  - on a machine with internet, download it into its Hugging Face cache:\n"
        f"      python -c \"from sentence_transformers import SentenceTransformer; "
        f"SentenceTransformer('{spec}')\"\n"
        "    and copy that cache folder (~/.cache/huggingface/hub there) to the one above, "
        "or set HF_HOME here to a folder holding a copy of it as hub/; or\n"
        "  - set base_model to a local folder holding the model (on that machine: "
        f"SentenceTransformer('{spec}').save('FOLDER')).")
