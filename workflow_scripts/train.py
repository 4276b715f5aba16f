"""Training stage: one truncated encoder, one recipe, one seed.

sentence-transformers' SentenceTransformerTrainer with MultipleNegativesRankingLoss over
(query, positive, negative) triples, NO_DUPLICATES batches (a duplicate text in a batch
would be a false in-batch negative). The final model is saved as safetensors.

CLI: python -m workflow_scripts.train --base SPEC --strategy top --depth 3 --seed 42 \
        --recipe-json '{...}' --triples data/train/X.parquet --out checkpoints/...
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from workflow_scripts import contracts

TRIPLE_COLUMNS = ("query", "positive", "negative")


def load_triples(path):
    import pandas as pd

    df = pd.read_parquet(path)
    contracts.check_columns(df, TRIPLE_COLUMNS, path)
    empty = df[list(TRIPLE_COLUMNS)].isna().any(axis=1) | (
        df[list(TRIPLE_COLUMNS)].apply(lambda c: c.str.strip().str.len() == 0).any(axis=1))
    if empty.any():
        raise contracts.DataError(f"{path}: row {int(empty.idxmax())} has an empty text")
    return df[list(TRIPLE_COLUMNS)].reset_index(drop=True)


def device_and_precision(precision: str) -> tuple[str, dict]:
    """CUDA with the recipe's precision when present; fp32 on CPU (bf16 on CPU is slow and
    changes numbers between machines)."""
    import torch

    if torch.cuda.is_available():
        return "cuda", {"bf16": precision == "bf16", "fp16": precision == "fp16"}
    return "cpu", {"use_cpu": True}


def last_checkpoint(state_dir) -> Path | None:
    """The newest complete trainer checkpoint (trainer_state.json is written last)."""
    state_dir = Path(state_dir)
    if not state_dir.is_dir():
        return None
    done = [p for p in state_dir.glob("checkpoint-*") if (p / "trainer_state.json").exists()]
    return max(done, key=lambda p: int(p.name.split("-")[1]), default=None)


def _step_delay_callback():
    """Test hook: DEPTHLAB_TEST_STEP_DELAY=seconds slows every step so that a test can kill
    the job mid-run (tiny models train too fast to catch otherwise)."""
    import os

    from transformers import TrainerCallback

    delay = float(os.environ.get("DEPTHLAB_TEST_STEP_DELAY", "0"))

    class StepDelay(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            time.sleep(delay)

    return [StepDelay()] if delay > 0 else []


def train(*, base: str, strategy: str, depth: int, seed: int, recipe: dict, triples,
          out_dir, threads: int = 1, max_seq_length: int = 128, state_dir=None) -> dict:
    """Train and save the model to `out_dir` (atomically); return a training summary.

    With recipe["checkpoint_every"] = K > 0 the trainer state is saved every K steps in
    `state_dir` (default: OUT_DIR.trainer, the last 2 kept); a rerun after a crash resumes
    from the newest complete one, and the state is removed once the model is saved."""
    import shutil

    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from workflow_scripts.models import freeze_all_but_last, load_truncated, set_threads

    set_threads(threads)
    torch.manual_seed(seed)
    device, precision_args = device_and_precision(recipe.get("precision", "fp32"))
    model = load_truncated(base, strategy, depth, device=device)
    if strategy == "freeze":
        freeze_all_but_last(model, depth)
    model.max_seq_length = max_seq_length
    df = load_triples(triples)
    dataset = Dataset.from_pandas(df, preserve_index=False)
    loss = MultipleNegativesRankingLoss(model, scale=recipe.get("scale", 20.0))
    steps = int(recipe["steps"])
    every = int(recipe.get("checkpoint_every", 0))
    state_dir = Path(state_dir or f"{Path(out_dir)}.trainer")
    resume = last_checkpoint(state_dir) if every else None
    t0 = time.perf_counter()
    args = SentenceTransformerTrainingArguments(
        output_dir=str(state_dir),
        max_steps=steps,
        per_device_train_batch_size=int(recipe["batch_size"]),
        learning_rate=float(recipe["lr"]),
        warmup_steps=int(recipe.get("warmup", 0)),
        weight_decay=float(recipe.get("weight_decay", 0.01)),
        lr_scheduler_type=recipe.get("scheduler", "linear"),
        seed=seed,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        save_strategy="steps" if every else "no",
        save_steps=every or 500,
        save_total_limit=2,
        logging_steps=max(1, steps // 20),
        report_to="none",
        dataloader_num_workers=0,
        disable_tqdm=False,
        **precision_args,
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset,
                                         loss=loss, callbacks=_step_delay_callback())
    if resume:
        print(f"resuming from {resume}", flush=True)
    result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    history = [h for h in trainer.state.log_history if "loss" in h]
    seconds = time.perf_counter() - t0
    summary = {
        "base": base, "strategy": strategy, "depth": depth, "seed": seed, "recipe": recipe,
        "device": device, "threads": threads, "max_seq_length": max_seq_length,
        "steps": steps, "train_seconds": round(seconds, 3),
        "resumed_from": str(resume) if resume else None,
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "final_loss": float(result.training_loss),
        "loss_history": [{"step": h["step"], "loss": h["loss"]} for h in history],
        "torch": torch.__version__,
    }
    with contracts.atomic_dir(out_dir) as tmp:
        model.save(str(tmp), safe_serialization=True)
        (tmp / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    shutil.rmtree(state_dir, ignore_errors=True)
    return summary


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Train one truncated bi-encoder with MNRL.")
    ap.add_argument("--base", required=True, help="model spec (see workflow_scripts.models)")
    ap.add_argument("--strategy", default="top")
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--recipe-json", required=True, help="the recipe's config entry as JSON")
    ap.add_argument("--triples", required=True)
    ap.add_argument("--max-seq-length", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--state-dir", help="resumable trainer state (default: OUT.trainer)")
    a = ap.parse_args(argv)
    summary = train(base=a.base, strategy=a.strategy, depth=a.depth, seed=a.seed,
                    recipe=json.loads(a.recipe_json), triples=a.triples, out_dir=Path(a.out),
                    threads=a.threads, max_seq_length=a.max_seq_length, state_dir=a.state_dir)
    print(f"{a.out}: {summary['steps']} steps in {summary['train_seconds']:.1f} s, "
          f"final loss {summary['final_loss']:.4f}")


if __name__ == "__main__":
    main()
