"""A training's resumable state (OUT.trainer/) and what it belongs to.

The state folder holds the trainer's checkpoints, the learning curve's snapshots made so far
and fingerprint.json: everything that determines the model (the stage's settings, the base
model's identity, strategy, depth, seed, the training data's checksum, the snapshot steps).
A rerun resumes only from state with the same fingerprint; state made with other settings is
removed, and the log says which settings differ. Each checkpoint also records the seconds
trained up to it, so a resumed run's train_seconds covers the whole run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import shutil
from pathlib import Path

from workflow_scripts.core.download import file_digests

FINGERPRINT = "fingerprint.json"
ELAPSED = "depthlab_elapsed.json"  # in each checkpoint: seconds trained up to it


def file_sha256(path) -> str:
    """A file's sha256, once per process while it is unchanged (an evaluation records its
    base's and its weights' in every file it writes)."""
    p = Path(path).resolve()
    st = p.stat()
    return _sha256(p, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


@functools.cache
def _sha256(path: Path, _version: tuple) -> str:
    return file_digests(path, ("sha256",))["sha256"]


def data_identity(path, rows: int) -> dict:
    """The training data as recorded: path, rows read, sha256 of the file."""
    return {"path": str(path), "rows": int(rows), "sha256": file_sha256(path)}


def base_identity(spec: str) -> dict:
    """What the base model spec named when it ran: for a package spec the package's version;
    for a folder (a package's too) a sha256 over its files; for a hub id the commit of the
    snapshot in the Hugging Face cache (what loaded it, after loading) and the sha256 of
    that snapshot."""
    from workflow_scripts.biencoder.model import hub

    out = {"spec": spec}
    if spec.startswith("package:"):
        from importlib import metadata

        module = spec.split(":", 1)[1]
        dists = metadata.packages_distributions().get(module.split(".")[0], [module])
        out["package"] = {"name": dists[0], "version": metadata.version(dists[0])}
    folder = model_folder(spec)
    if hub.is_hub_id(spec) and folder.is_dir():
        out["revision"] = folder.name
    if folder.is_dir():
        h = hashlib.sha256()
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(f.relative_to(folder).as_posix().encode() + b"\0")
            h.update(file_sha256(f).encode())
        out["sha256"] = h.hexdigest()
    return out


def model_folder(spec: str) -> Path:
    """The folder a model spec loads from: a package's or a local folder, or for a hub id
    the snapshot in the Hugging Face cache (a path that does not exist when none is)."""
    from workflow_scripts.biencoder.model import hub
    from workflow_scripts.biencoder.model.truncation import resolve_model_path

    if hub.is_hub_id(spec):
        return hub.cached_config_folder(spec) or Path(spec)
    return Path(resolve_model_path(spec))


def differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """'key old -> new' for every leaf that differs, e.g. 'lr 0.0002 -> 0.0005'."""
    out = []
    for k in sorted(set(old) | set(new), key=str):
        a, b = old.get(k, "absent"), new.get(k, "absent")
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k} {_short(a)} -> {_short(b)}")
    return out


def _short(v) -> str:
    s = json.dumps(v) if not isinstance(v, str) else v
    return s if len(s) <= 24 else s[:12] + "..."


def claim_state(state_dir: Path, fingerprint: dict) -> None:
    """Keep the state folder only if it was made for this fingerprint; else remove it and say
    why. Then record the fingerprint (a fresh folder gets it before the first checkpoint)."""
    recorded = state_dir / FINGERPRINT
    if state_dir.is_dir():
        try:
            old = json.loads(recorded.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if old != fingerprint:
            why = ", ".join(differences(old, fingerprint)) if old else "it records none"
            print(f"trainer state was made with other settings ({why}): training from the "
                  "start", flush=True)
            shutil.rmtree(state_dir)
    if not recorded.exists():
        from workflow_scripts.core import contracts

        state_dir.mkdir(parents=True, exist_ok=True)
        contracts.write_text(recorded, json.dumps(fingerprint, indent=2) + "\n")


def remove_leftovers(out_dir, state_dir: Path, snapshot_dirs) -> None:
    """Remove what killed atomic writes of this training left (core/files.py orphans): of
    the model folder, the state folder's removal, its fingerprint and snapshots."""
    from workflow_scripts.core import contracts

    for target in (Path(out_dir), state_dir, state_dir / FINGERPRINT, *snapshot_dirs):
        for p in contracts.remove_orphans(target):
            print(f"removed {p}, left by a killed write", flush=True)


def checkpoint_step(ckpt: Path) -> int:
    return int(Path(ckpt).name.split("-")[1])


def load_finished(trainer, ckpt: Path) -> None:
    """Give `trainer` the weights and the state (its log history) of `ckpt`, a checkpoint
    of the last step, as training up to it would have left them."""
    from transformers import TrainerState

    trainer._load_from_checkpoint(str(ckpt))
    trainer.state = TrainerState.load_from_json(str(Path(ckpt) / "trainer_state.json"))


@contextlib.contextmanager
def disk_full_errors(trainer, state_dir: Path):
    """A full disk while the trainer saves a checkpoint as core/files.py DiskFull, naming
    the checkpoint (torch's writer says only "unexpected pos N vs M")."""
    from workflow_scripts.core.files import disk_full_errors

    try:
        yield
    except Exception:
        ckpt = state_dir / f"checkpoint-{trainer.state.global_step}"
        with disk_full_errors(ckpt if ckpt.exists() else state_dir):
            raise


def elapsed_callback(state_dir: Path, seconds_so_far):
    """A trainer callback writing, into each checkpoint it saves, the seconds trained up to
    it (seconds_so_far() at the save)."""
    from transformers import TrainerCallback

    from workflow_scripts.core import contracts

    class Elapsed(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            ckpt = state_dir / f"checkpoint-{state.global_step}"
            if ckpt.is_dir():
                contracts.write_text(ckpt / ELAPSED,
                                     json.dumps({"seconds": seconds_so_far()}) + "\n")
            return control

    return Elapsed()


def elapsed_before(ckpt: Path | None) -> float:
    """Seconds the run had trained when checkpoint `ckpt` was saved (0 without one)."""
    if ckpt is None:
        return 0.0
    return float(json.loads((ckpt / ELAPSED).read_text(encoding="utf-8"))["seconds"])


def last_checkpoint(state_dir) -> Path | None:
    """The newest trainer checkpoint that loads: trainer_state.json (written last) parses and
    every weights file has a whole safetensors header and data. Newer ones that do not (a
    crash or a full disk mid-write) are said, removed, and the next older one is tried, so a
    job never fails forever on a bad checkpoint; None when none is left."""
    state_dir = Path(state_dir)
    if not state_dir.is_dir():
        return None
    found = sorted(state_dir.glob("checkpoint-*"), key=checkpoint_step, reverse=True)
    for ckpt in found:
        why = checkpoint_problem(ckpt)
        if not why:
            return ckpt
        print(f"skipping {ckpt}: {why}; removing it", flush=True)
        shutil.rmtree(ckpt, ignore_errors=True)
    if found:
        print(f"no loadable checkpoint left in {state_dir}: training from the start", flush=True)
    return None


def missing_snapshots(stage_dir: Path, steps: list[int], resume: Path | None) -> list[int]:
    """Snapshot steps a resume from `resume` would not write again and that are not there
    (removed by hand): such a resume cannot give them."""
    if resume is None:
        return []
    done = checkpoint_step(resume)
    return [n for n in steps if n <= done and checkpoint_problem(stage_dir / f"step{n}",
                                                                 state=False)]


def checkpoint_problem(ckpt: Path, state: bool = True) -> str:
    """Why a trainer checkpoint (state=False: a weights folder) cannot be resumed from or
    loaded ('' when it can)."""
    from safetensors import SafetensorError, safe_open

    try:
        if state:
            json.loads((ckpt / "trainer_state.json").read_text(encoding="utf-8"))
            float(json.loads((ckpt / ELAPSED).read_text(encoding="utf-8"))["seconds"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"trainer_state.json or {ELAPSED} unreadable ({e.__class__.__name__})"
    weights = sorted(ckpt.rglob("*.safetensors"))
    if not weights:
        return "no *.safetensors weights"
    for path in weights:
        try:
            with safe_open(str(path), framework="numpy"):
                pass
        except (OSError, SafetensorError) as e:
            return f"{path.relative_to(ckpt)}: {e}"
    return ""
