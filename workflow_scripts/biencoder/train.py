"""Training stage: one truncated encoder, one recipe, one seed (or several seeds in turn, one
process: batch_seeds, where importing sentence-transformers costs more than a training).

sentence-transformers' SentenceTransformerTrainer with MultipleNegativesRankingLoss over
(query, positive, negative) triples, or (query, positive) pairs (a beir-train source: the
batch's other documents are the only negatives), NO_DUPLICATES batches (a duplicate text in
a batch would be a false in-batch negative); recipe key loss cached_mnrl: its GradCache form,
CachedMultipleNegativesRankingLoss, embedding mini_batch_size rows at a time (a batch not
bounded by memory). The final model is saved as safetensors, with sentence-transformers'
model card (README.md); the export (rules/export.smk) completes a copy of it with the study's
evaluation. `--report-to tensorboard` (recipe key report_to) lets the trainer write TensorBoard
event files to `--report-dir` while it runs: a view of the training that changes no model.

A train-once arm (strategy adaptive or matryoshka2d, core/contracts.py TRAIN_ONCE) trains the
base's bottom `depth` layers (as strategy top) once for every shallower depth: MNRL wrapped in
AdaptiveLayerLoss, or in Matryoshka2dLoss, with the recipe's train_once_loss settings (with
fixed_depths: those depths every step instead of sampled ones). Both sample prior layers
(and dimensions) with Python's `random`, which the trainer seeds and saves in every
checkpoint, so a resumed run draws what an uninterrupted one draws.

CLI: python -m workflow_scripts.biencoder.train --base SPEC --strategy top --depth 3 --seed 42 \
        --settings-json '{...}' --triples data/train/X.parquet --out checkpoints/... \
        [--checkpoint-every N] [--eval-steps N ...]
     (--seed 42 43 44 --out A B C: the seeds in turn, each into its own folder)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

from workflow_scripts.biencoder import trainer_state
from workflow_scripts.biencoder.trainer_state import last_checkpoint, missing_snapshots
from workflow_scripts.core import contracts, provenance, recipe_loss
from workflow_scripts.core.files import link_or_copy
from workflow_scripts.core.runtime import set_threads
from workflow_scripts.core.settings import Train, train_settings

TRIPLE_COLUMNS = ("query", "positive", "negative")
PAIR_COLUMNS = ("query", "positive")  # no negative column: in-batch negatives only


def load_triples(path):
    """The training rows: triples, or pairs where the file has no `negative` column."""
    df = contracts.read_parquet(path)
    cols = list(TRIPLE_COLUMNS if "negative" in df.columns else PAIR_COLUMNS)
    contracts.check_columns(df, cols, path)
    empty = df[cols].isna().any(axis=1) | (
        df[cols].apply(lambda c: c.str.strip().str.len() == 0).any(axis=1))
    if empty.any():
        raise contracts.DataError(f"{path}: row {int(empty.idxmax())} has an empty text")
    return df[cols].reset_index(drop=True)


def device_and_precision(precision: str) -> tuple[str, str, dict]:
    """Device, the precision it trains in, and the trainer's arguments for it: CUDA with the
    recipe's precision when present; fp32 on CPU (bf16 on CPU is slow and changes numbers
    between machines)."""
    import torch

    if torch.cuda.is_available():
        return "cuda", precision, {"bf16": precision == "bf16", "fp16": precision == "fp16"}
    return "cpu", "fp32", {"use_cpu": True}


def trainable_parameters(model) -> int:
    """Parameters the training updates: those requiring a gradient, less the transformers
    pooler, which sentence-transformers' pooling never reads (so it gets no gradient)."""
    return sum(p.numel() for name, p in model.named_parameters()
               if p.requires_grad and "pooler" not in name.split("."))


def versions(base_identity: dict) -> dict:
    """The code's version and the versions of the packages that shape the model."""
    v = provenance.package_versions(provenance.TRAIN_PACKAGES)
    return {"sentence_transformers": v["sentence-transformers"],
            "transformers": v["transformers"], "torch": v["torch"],
            "packages": v, "code": provenance.code_version("biencoder.train"),
            **({"base_package": base_identity["package"]} if "package" in base_identity
               else {})}


def logging_interval(steps: int, checkpoint_every: int) -> int:
    """Steps between loss logs: about 20 logs a run, on a grid that divides the checkpoint
    interval, so that a resumed run logs exactly the intervals of an uninterrupted one."""
    target = max(1, steps // 20)
    if not checkpoint_every:
        return target
    return max(d for d in range(1, min(target, checkpoint_every) + 1)
               if checkpoint_every % d == 0)


def run_mean_loss(history: list[dict], steps: int) -> float:
    """Mean training loss over all `steps` from the logged interval means (the last step is
    always logged, see _log_last_step)."""
    total, last = 0.0, 0
    for h in history:
        total += h["loss"] * (h["step"] - last)
        last = h["step"]
    if last != steps:
        raise ValueError(f"loss log ends at step {last}, not at the last step {steps}")
    return total / steps


def _log_last_step():
    """A trainer callback that logs the loss at the last step as well, so the log history
    covers every step of the run."""
    from transformers import TrainerCallback

    class LogLastStep(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step >= state.max_steps:
                control.should_log = True
            return control

    return LogLastStep()


def _snapshots(model, stage_dir: Path, steps: list[int], fingerprint: dict):
    """A trainer callback that saves the model's weights (a sentence-transformers folder,
    safetensors, no optimizer state) at each of `steps`, atomically, into stage_dir/stepN,
    with snapshot.json: its step and the training's fingerprint (what made it).
    on_step_end runs after the optimizer step and before that step's checkpoint is saved, so
    a checkpoint at step K implies every snapshot up to K."""
    from transformers import TrainerCallback

    wanted = set(steps)

    class Snapshots(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step in wanted:
                with contracts.atomic_dir(stage_dir / f"step{state.global_step}") as tmp:
                    model.save(str(tmp), safe_serialization=True, create_model_card=False)
                    (tmp / "snapshot.json").write_text(json.dumps(
                        {"step": state.global_step, **fingerprint}, indent=2) + "\n")
            return control

    return Snapshots()


def build_loss(model, strategy: str, settings):
    """The recipe's loss (config key recipes.*.loss: MNRL, or cached_mnrl: GradCache's
    CachedMultipleNegativesRankingLoss with the recipe's mini_batch_size), wrapped for a
    train-once arm in AdaptiveLayerLoss (adaptive) or Matryoshka2dLoss (matryoshka2d) with
    the recipe's train_once_loss settings; with fixed_depths (or matryoshka2d's pairs),
    their fixed-layers form (biencoder/fixed_layers_loss.py: those depths every step, not
    sampled ones). Settings recipe_loss refuses (a cached loss in a train-once arm, a
    missing or too large mini-batch, fixed layers besides sampling counts) raise
    ValueError."""
    from sentence_transformers.sentence_transformer import losses

    train_once = [strategy] if strategy in contracts.TRAIN_ONCE else []
    errors = recipe_loss.loss_errors("*", {**dataclasses.asdict(settings),
                                           "train_once": train_once})
    if train_once:
        errors += recipe_loss.fixed_layer_errors("*", dataclasses.asdict(settings), None,
                                                 train_once)
    if errors:
        raise ValueError("; ".join(errors))
    if settings.loss in recipe_loss.CACHED_LOSSES:
        inner = losses.CachedMultipleNegativesRankingLoss(
            model, scale=settings.scale, mini_batch_size=settings.mini_batch_size)
    else:
        inner = losses.MultipleNegativesRankingLoss(model, scale=settings.scale)
    if not train_once:
        return inner
    layer = {k: getattr(settings, k) for k in (
        "n_layers_per_step", "layer_weighting", "last_layer_weight", "prior_layers_weight",
        "kl_div_weight", "kl_temperature")}
    if strategy == "matryoshka2d" and settings.pairs:
        from workflow_scripts.biencoder.fixed_layers_loss import FixedPairsLoss

        return FixedPairsLoss(model, inner, settings.pairs, **layer)
    dims = {} if strategy == "adaptive" else {
        "matryoshka_dims": matryoshka_dims(model, settings),
        "n_dims_per_step": settings.n_dims_per_step}
    if settings.fixed_depths:
        from workflow_scripts.biencoder import fixed_layers_loss

        fixed = (fixed_layers_loss.FixedLayersLoss if strategy == "adaptive" else
                 fixed_layers_loss.FixedLayersMatryoshka2dLoss)
        return fixed(model, inner, fixed_depths=settings.fixed_depths, **dims, **layer)
    if strategy == "adaptive":
        return losses.AdaptiveLayerLoss(model, inner, **layer)
    return losses.Matryoshka2dLoss(model, inner, **dims, **layer)


def matryoshka_dims(model, settings) -> list[int]:
    """The dimensions matryoshka2d trains, largest first: the full one (the one evaluated)
    and the recipe's matryoshka_dims."""
    full = model.get_embedding_dimension()
    over = [d for d in settings.matryoshka_dims if d > full]
    if over:
        raise ValueError(f"config key recipes.*.train_once_loss.matryoshka_dims: {over} "
                         f"exceed the model's embedding dimension {full}")
    return sorted({full, *settings.matryoshka_dims}, reverse=True)


def train(*, base: str, strategy: str, depth: int, seed: int, settings: Train, triples,
          out_dir, threads: int = 1, checkpoint_every: int = 0, state_dir=None,
          eval_steps=(), callbacks=(), report_to=(), report_dir=None) -> dict:
    """Train and save the model to `out_dir` (atomically); return a training summary.

    With checkpoint_every = K > 0 the trainer state is saved every K steps in `state_dir`
    (default: OUT_DIR.trainer, the last 2 kept); a rerun after a crash resumes from the
    newest complete one, and the state is removed once the model is saved. A run killed at
    any moment (a step, a checkpoint, a snapshot, the final save, the state's removal) is
    finished by the next with the same model: a checkpoint of the last step is saved as the
    model without training, and what the killed writes left (*.tmp) is removed. Checkpointing
    does not change the model. `eval_steps`: the learning curve's steps; each one before
    the last gets a snapshot of the weights in OUT_DIR/steps/stepN (written to the state
    folder during training, so a resumed run keeps those it made, and moved with the model;
    OUT_DIR/steps exists, empty, without them). Snapshots do not change the model either.
    `callbacks`: extra transformers TrainerCallbacks. `report_to`: the trainer's reporting
    integrations (tensorboard), writing to `report_dir`."""
    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.sampler import BatchSamplers

    from workflow_scripts.biencoder.model.truncation import freeze_all_but_last, load_truncated

    # A rerun's job lost model.safetensors (Snakemake removes its output first): drop the
    # rest of the old folder too, so that a failed retrain leaves all files or none.
    if Path(out_dir).is_dir() and not (Path(out_dir) / "model.safetensors").exists():
        shutil.rmtree(out_dir)
    set_threads(threads)
    torch.manual_seed(seed)
    device, precision, precision_args = device_and_precision(settings.precision)
    # A train-once arm holds the base's bottom `depth` layers, as strategy top does.
    model = load_truncated(base, contracts.base_strategy(strategy), depth, device=device)
    if strategy == "freeze":
        freeze_all_but_last(model, depth)
    model.max_seq_length = settings.max_seq_length
    df = load_triples(triples)
    dataset = Dataset.from_pandas(df, preserve_index=False)
    loss = build_loss(model, strategy, settings)
    steps = settings.steps
    every = int(checkpoint_every)
    snaps = contracts.snapshot_steps(eval_steps, steps)
    # Everything that determines the model: state made for anything else is not resumed.
    fingerprint = {**dataclasses.asdict(settings), "base_model": trainer_state.base_identity(base),
                   "strategy": strategy, "depth": depth, "seed": seed,
                   "train_data": trainer_state.data_identity(triples, len(df)),
                   "snapshot_steps": snaps}
    state_dir = Path(state_dir or f"{Path(out_dir)}.trainer")
    stage_dir = state_dir / "snapshots"
    trainer_state.remove_leftovers(out_dir, state_dir, [stage_dir / f"step{n}" for n in snaps])
    trainer_state.claim_state(state_dir, fingerprint)
    resume = last_checkpoint(state_dir) if every else None
    lost = missing_snapshots(stage_dir, snaps, resume)
    if lost:
        print(f"{resume} is past snapshot step(s) {', '.join(map(str, lost))} that "
              f"{stage_dir} lacks: training from the start", flush=True)
        shutil.rmtree(state_dir)
        trainer_state.claim_state(state_dir, fingerprint)
        resume = None
    # train_seconds covers the whole run: the seconds before the resumed checkpoint, plus
    # this process's.
    before, t0 = trainer_state.elapsed_before(resume), time.perf_counter()

    def seconds_so_far() -> float:
        return round(before + time.perf_counter() - t0, 3)

    args = SentenceTransformerTrainingArguments(
        output_dir=str(state_dir),
        max_steps=steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=float(settings.lr),
        warmup_steps=settings.warmup,
        weight_decay=float(settings.weight_decay),
        lr_scheduler_type=settings.scheduler,
        seed=seed,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        save_strategy="steps" if every else "no",
        save_steps=every or 500,
        save_total_limit=2,
        logging_steps=logging_interval(steps, every),
        report_to=list(report_to) or "none",
        dataloader_num_workers=0,
        disable_tqdm=False,
        **precision_args,
    )
    with reporting_dir(report_dir):  # the reporting callbacks read it as they are made
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=dataset, loss=loss,
            callbacks=[_log_last_step(), _snapshots(model, stage_dir, snaps, fingerprint),
                       trainer_state.elapsed_callback(state_dir, seconds_so_far), *callbacks])
    if resume:
        print(f"resuming from {resume}", flush=True)
    if resume and trainer_state.checkpoint_step(resume) >= steps:
        # Killed after the last step's checkpoint (saving the model, or cleaning up): the
        # training is done; its weights and log are the checkpoint's (a resumed trainer
        # would take one step more).
        print(f"{resume} is the last step's: saving the final model from it", flush=True)
        trainer_state.load_finished(trainer, resume)
    else:
        with trainer_state.disk_full_errors(trainer, state_dir):
            trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    history = [h for h in trainer.state.log_history if "loss" in h]
    summary = {
        "base": base, "strategy": strategy, "depth": depth, "seed": seed,
        "settings": dataclasses.asdict(settings), "device": device, "threads": threads,
        # What ran: the recipe's precision applies on CUDA only (device_and_precision).
        "precision": precision,
        "base_model": fingerprint["base_model"], "train_data": fingerprint["train_data"],
        "steps": steps, "snapshot_steps": snaps,
        # The whole run's seconds, resumes included (seconds_so_far).
        "train_seconds": seconds_so_far(),
        "resumed_from": str(resume) if resume else None,
        "trainable_parameters": trainable_parameters(model),
        # The compute accounting's unit is optimizer steps x layers trained (`freeze` trains
        # its last `depth` layers; every other strategy all `depth` it keeps).
        "layers_trained": depth,
        # The loss and its settings as sentence-transformers states them, with its version:
        # AdaptiveLayerLoss changed across releases, so results of different versions are
        # not comparable.
        "loss": {"name": type(loss).__name__, **loss.get_config_dict()},
        **versions(fingerprint["base_model"]),
        # The trainer's own training_loss covers only this process's steps (after a resume,
        # the resumed ones); the log history is restored with the checkpoint, so its
        # step-weighted mean is the whole run's mean loss, resumed or not.
        "final_loss": run_mean_loss(history, steps),
        "loss_history": [{"step": h["step"], "loss": h["loss"]} for h in history],
    }
    with contracts.atomic_dir(out_dir) as tmp:
        model.save(str(tmp), safe_serialization=True)
        (tmp / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        (tmp / "steps").mkdir()
        for n in snaps:  # hard links: the state keeps its snapshots until the model is in place
            shutil.copytree(stage_dir / f"step{n}", tmp / "steps" / f"step{n}",
                            copy_function=link_or_copy)  # --state-dir elsewhere: a copy
    contracts.remove_dir(state_dir)  # whole or gone, should a kill come midway
    return summary


@contextlib.contextmanager
def reporting_dir(folder):
    """transformers' TensorBoardCallback (5.x) takes its folder from TENSORBOARD_LOGGING_DIR
    only, when it is made (else a run folder under the trainer state, removed after
    training): set while the trainer is built, then restored."""
    old = os.environ.get("TENSORBOARD_LOGGING_DIR")
    if folder:
        os.environ["TENSORBOARD_LOGGING_DIR"] = str(folder)
    try:
        yield
    finally:
        if folder:
            if old is None:
                os.environ.pop("TENSORBOARD_LOGGING_DIR", None)
            else:
                os.environ["TENSORBOARD_LOGGING_DIR"] = old


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Train one truncated bi-encoder with MNRL (a "
                                 "train-once arm: wrapped in its layer-adaptive loss).")
    ap.add_argument("--base", required=True, help="model spec (see biencoder/model/truncation.py)")
    ap.add_argument("--strategy", required=True)
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--seed", type=int, nargs="+", required=True,
                    help="one seed, or several trained in turn (one --out folder each)")
    ap.add_argument("--settings-json", default="{}",
                    help="recipe settings as JSON (core/settings.py Train, or the train-once "
                         "arm's TrainAdaptive / TrainMatryoshka2d; absent keys take "
                         "config/schema.yaml's defaults)")
    ap.add_argument("--triples", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint-every", type=int, default=0,
                    help="save resumable trainer state every N steps (0: never)")
    ap.add_argument("--eval-steps", nargs="*", type=int, default=[],
                    help="learning-curve steps: a weights snapshot in OUT/steps/stepN at each "
                         "one before the last step")
    ap.add_argument("--out", nargs="+", required=True, help="one folder per seed")
    ap.add_argument("--state-dir", help="resumable trainer state (default: OUT.trainer; "
                                        "one seed only)")
    ap.add_argument("--report-to", default="none",
                    help="comma-separated reporting integrations of the trainer (tensorboard), "
                         "or none")
    ap.add_argument("--report-dir", nargs="+", default=[],
                    help="with --report-to: one folder per seed for the reports")
    a = ap.parse_args(argv)
    if len(a.out) != len(a.seed):
        ap.error(f"{len(a.seed)} seeds but {len(a.out)} --out folders")
    if a.state_dir and len(a.seed) > 1:
        ap.error("--state-dir takes one seed; several seeds keep their state in OUT.trainer")
    report_to = [r for r in a.report_to.split(",") if r and r != "none"]
    if report_to and len(a.report_dir) != len(a.seed):
        ap.error(f"--report-to {a.report_to}: {len(a.report_dir)} --report-dir folder(s) for "
                 f"{len(a.seed)} seed(s)")
    settings = train_settings(a.strategy).from_json(a.settings_json)
    report_dirs = a.report_dir if report_to else [None] * len(a.seed)
    for seed, out, report_dir in zip(a.seed, a.out, report_dirs, strict=True):
        summary = train(base=a.base, strategy=a.strategy, depth=a.depth, seed=seed,
                        settings=settings, triples=a.triples,
                        out_dir=Path(out), threads=a.threads,
                        checkpoint_every=a.checkpoint_every, state_dir=a.state_dir,
                        eval_steps=a.eval_steps, report_to=report_to,
                        report_dir=report_dir)
        print(f"{out}: {summary['steps']} steps in {summary['train_seconds']:.1f} s, "
              f"final loss {summary['final_loss']:.4f}", flush=True)


if __name__ == "__main__":
    main()
