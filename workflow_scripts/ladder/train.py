"""Ladder runs (methods, k, seeds) or standalone reference runs -> one parquet per run.

Ladder: methods.Ladder (per-group optimizers, frozen bottom blocks, BP/FA/DFA).
Standalone (the cross-check): a separate, ordinary training path -- one AdamW over the
parameters that require grad, loss.backward() -- for "frozen" (all blocks frozen, only
embedding + out_ln + out_head trained) and "full" (everything trained). BP at k=0 / k=L
must agree with them.

CLI: python -m workflow_scripts.ladder.train ladder --data D.npz --config NAME --d 32 \
        --blocks 4 --method bp --k 2 --seeds 42 123 --settings-json '{"epochs": 40}' \
        [--threads 1] --out R42.parquet R123.parquet
        (--method bp fa ... --out: every method's seeds, method-major)
     python -m workflow_scripts.ladder.train standalone --kind frozen|full ... \
        --seeds 42 123 --out S42.parquet S123.parquet   (no --method/--k)
--settings-json is core/settings.py's LadderTrain (epochs, batch_size, lr, weight_decay,
device); absent keys take config/ladder.schema.yaml's defaults (epochs has none).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from workflow_scripts.core.runtime import set_threads
from workflow_scripts.core.settings import LadderTrain
from workflow_scripts.ladder import KINDS, METHODS, methods, model, runs
from workflow_scripts.ladder import data as ladder_data


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def steps_per_epoch(n: int, batch_size: int) -> int:
    return -(-n // batch_size)  # the last, partial batch is kept


def fit(step, x, y, *, epochs: int, batch_size: int, seed: int) -> float:
    """Call step(xb, yb) on shuffled batches; returns the last epoch's mean loss. The
    shuffle comes from the run's own generator, so it is the same for every method and k."""
    gen = methods.generator(seed, methods._SHUFFLE_STREAM)
    n, losses = len(y), []
    for _ in range(epochs):
        perm = torch.randperm(n, generator=gen).to(y.device)
        losses = []
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            losses.append(step(x[idx], y[idx]))
    return sum(losses) / max(len(losses), 1)


@torch.no_grad()
def predict(net, x, batch_size: int = 4096) -> torch.Tensor:
    return torch.cat([net(x[i:i + batch_size]).argmax(-1) for i in range(0, len(x), batch_size)])


class Plain:
    """Ordinary training: one optimizer over what requires grad, plain backprop."""

    def __init__(self, net, *, kind: str, lr: float, weight_decay: float, total_steps: int):
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
        self.model = net
        if kind == "frozen":
            net.blocks.requires_grad_(False)
        self.opt = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad],
                                     lr=lr, weight_decay=weight_decay)
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda t: methods.cosine_factor(t, total_steps))

    def step(self, x, y) -> float:
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        self.sched.step()
        return float(loss.detach())


def run(arrays, settings: LadderTrain, *, d: int, blocks: int, seed: int,
        method: str | None = None, k: int | None = None, kind: str = "ladder") -> dict:
    """Train one model; returns labels, preds and a summary. kind="ladder" needs method and
    k; kind="frozen"/"full" is the standalone path (BP)."""
    epochs, batch_size = settings.epochs, settings.batch_size
    lr, weight_decay = settings.lr, settings.weight_decay
    device = resolve_device(settings.device)
    x_tr, y_tr, x_te, y_te = model.tensors(arrays, device)
    n_classes = int(max(y_tr.max(), y_te.max())) + 1
    net = model.build(x_tr.shape[1], d, blocks, n_classes, seed).to(device)
    total = epochs * steps_per_epoch(len(y_tr), batch_size)
    hp = dict(lr=lr, weight_decay=weight_decay, total_steps=total)
    if kind == "ladder":
        trainer = methods.Ladder(net, method=method, k=k, seed=seed, **hp).to(device)
    else:
        trainer = Plain(net, kind=kind, **hp)
    t0 = time.perf_counter()
    train_loss = fit(trainer.step, x_tr, y_tr, epochs=epochs, batch_size=batch_size, seed=seed)
    seconds = time.perf_counter() - t0
    preds = predict(trainer.model, x_te)
    summary = {
        "accuracy": float((preds == y_te).float().mean()),
        "train_accuracy": float((predict(trainer.model, x_tr) == y_tr).float().mean()),
        "train_loss": train_loss, "train_seconds": seconds, "epochs": epochs, "steps": total,
        "batch_size": batch_size, "lr": lr, "weight_decay": weight_decay, "d": d,
        "blocks": blocks, "n_train": len(y_tr), "n_test": len(y_te), "device": device,
        "threads": torch.get_num_threads(), "torch": torch.__version__,
    }
    if kind == "ladder" and k == 0:
        # the frozen stack as this run leaves it: random blocks on the trained embedding
        summary["identity_trained_embedding"] = model.stack_identity(trainer.model, x_te)
    return {"labels": y_te.cpu().numpy(), "preds": preds.cpu().numpy(), "summary": summary,
            "model": trainer.model}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m workflow_scripts.ladder.train")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("ladder", "standalone"):
        q = sub.add_parser(name)
        q.add_argument("--data", required=True, help="dataset npz (ladder.data prepare)")
        q.add_argument("--config", required=True, help="config name, recorded in the output")
        q.add_argument("--d", type=int, required=True)
        q.add_argument("--blocks", type=int, required=True, help="L")
        if name == "ladder":
            q.add_argument("--method", nargs="+", required=True, choices=METHODS,
                           help="one method, or several in turn (--out: method-major)")
            q.add_argument("--k", type=int, required=True)
        else:
            q.add_argument("--kind", required=True, choices=KINDS)
        # several seeds per process when runs are cheap and imports are not
        q.add_argument("--seeds", type=int, nargs="+", required=True)
        q.add_argument("--settings-json", default="{}",
                       help="core/settings.py LadderTrain as JSON; absent keys take "
                            "config/ladder.schema.yaml's defaults")
        q.add_argument("--threads", type=int, default=1)
        q.add_argument("--out", nargs="+", required=True,
                       help="one file per run: every seed of the first method, then the next")
    a = p.parse_args(argv)
    if a.cmd == "ladder":
        kind, methods, k = "ladder", a.method, a.k
    else:
        kind, methods, k = a.kind, ["bp"], 0 if a.kind == "frozen" else a.blocks
    todo = [(m, seed) for m in methods for seed in a.seeds]
    if len(a.out) != len(todo):
        p.error(f"{len(methods)} method(s) x {len(a.seeds)} seed(s) but {len(a.out)} --out "
                "files")
    settings = LadderTrain.from_json(a.settings_json)
    set_threads(a.threads)
    arrays = ladder_data.load(a.data)
    for (method, seed), out in zip(todo, a.out, strict=True):
        res = run(arrays, settings, d=a.d, blocks=a.blocks, seed=seed, method=method, k=k,
                  kind=kind)
        keys = {"config": a.config, "method": method, "k": k, "seed": seed, "kind": kind}
        runs.write_run(out, labels=res["labels"], preds=res["preds"], keys=keys,
                       meta=res["summary"])
        s = res["summary"]
        print(f"{keys}: accuracy {s['accuracy']:.4f} (train {s['train_accuracy']:.4f}), "
              f"{s['train_seconds']:.1f} s", flush=True)


if __name__ == "__main__":
    main()
