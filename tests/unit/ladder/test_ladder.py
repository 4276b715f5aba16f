"""The ladder's modules: FA/DFA gradients, BP-ladder == ordinary training, determinism,
CIFAR binary parsing, stats/report on synthetic runs, the CLIs' settings, the config schema."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml
from conftest import ROOT
from synthetic_scores import ladder_runs

from workflow_scripts import ladder
from workflow_scripts.core.codedeps import direct_imports
from workflow_scripts.core.contracts import DataError
from workflow_scripts.core.runtime import set_threads
from workflow_scripts.core.settings import LadderData, LadderTrain, SettingsError, schema_node
from workflow_scripts.ladder import data, identity, methods, model, report, runs, stats, train

set_threads(1)


def tiny_arrays(n_train=64, n_test=40, dim=12, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.integers(0, 255, size=(classes, dim))
    def split(n):
        y = rng.integers(0, classes, n).astype(np.uint8)
        x = np.clip(centers[y] + rng.normal(0, 40, (n, dim)), 0, 255).astype(np.uint8)
        return x, y
    (xa, ya), (xb, yb) = split(n_train), split(n_test)
    return {"x_train": xa, "y_train": ya, "x_test": xb, "y_test": yb}


# ---------------------------------------------------------------------------------------
# FA
# ---------------------------------------------------------------------------------------
def test_fa_input_gradient_is_grad_out_times_B_and_weight_gradient_is_exact():
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 3)
    B = torch.randn(3, 5)
    fa = methods.FALinear(lin, B)
    x = torch.randn(4, 5, requires_grad=True)
    g = torch.randn(4, 3)
    fa(x).backward(g)
    assert torch.allclose(x.grad, g @ B)
    assert not torch.allclose(x.grad, g @ lin.weight.detach())
    # the weight/bias gradients are those of ordinary backprop
    x2 = x.detach().clone().requires_grad_(True)
    ref = torch.nn.Linear(5, 3)
    ref.load_state_dict(lin.state_dict())
    ref(x2).backward(g)
    assert torch.allclose(lin.weight.grad, ref.weight.grad)
    assert torch.allclose(lin.bias.grad, ref.bias.grad)


def test_fa_swaps_block_and_head_linears_sharing_parameters():
    net = model.build(6, 8, 2, 3, seed=1)
    params = {id(p) for p in net.parameters()}
    methods.to_fa(net, seed=1)
    fa = [m for m in net.modules() if isinstance(m, methods.FALinear)]
    assert len(fa) == 2 * 2 + 1  # fc1, fc2 per block + out_head; not the embedding
    assert {id(p) for p in net.parameters()} == params
    # B of block l does not depend on k: drawn in a fixed order from the seed
    again = methods.to_fa(model.build(6, 8, 2, 3, seed=1), seed=1)
    assert torch.equal(again.blocks[1].fc2.feedback, net.blocks[1].fc2.feedback)


# ---------------------------------------------------------------------------------------
# DFA
# ---------------------------------------------------------------------------------------
def test_dfa_block_gradient_equals_the_surrogate_gradient():
    net = model.build(6, 8, 3, 4, seed=3)
    fb = methods.DFAFeedback(4, 8, 3, seed=3)
    k = 2
    groups = methods.trainable_groups(net, k)
    x, y = torch.randn(5, 6), torch.tensor([0, 1, 2, 3, 1])
    loss, surrogate = methods.dfa_losses(net, fb, x, y, k)
    (loss + surrogate).backward()

    # reference: recompute the forward, the error and each local loss by hand
    with torch.no_grad():
        hs = [net.embed(x)]
        for block in net.blocks:
            hs.append(block(hs[-1]))
        logits = net.head(hs[-1])
        e = torch.softmax(logits, -1) - F.one_hot(y, 4).float()
    for i in (1, 2):  # the trainable blocks
        block = net.blocks[i]
        g = e @ fb.blocks[i]
        g_hat = g / g.pow(2).mean().sqrt()
        local = (g_hat * block(hs[i])).sum() / len(x)
        ref = torch.autograd.grad(local, list(block.parameters()))
        for p, r in zip(block.parameters(), ref, strict=True):
            assert torch.allclose(p.grad, r, atol=1e-6)
        # the last Linear's bias gets exactly the injected signal
        assert torch.allclose(block.fc2.bias.grad, g_hat.sum(0) / len(x), atol=1e-6)
    assert net.blocks[0].fc1.weight.grad is None  # frozen
    # the embedding learns from its own feedback matrix
    g = e @ fb.embed
    ref = torch.autograd.grad((g / g.pow(2).mean().sqrt() * net.embed(x)).sum() / len(x),
                              net.embed.weight)[0]
    assert torch.allclose(net.embed.weight.grad, ref, atol=1e-6)
    # the head learns from the exact loss on its detached input
    ref = torch.autograd.grad(F.cross_entropy(net.head(hs[-1]), y), net.out_head.weight)[0]
    assert torch.allclose(net.out_head.weight.grad, ref, atol=1e-6)
    assert set(groups) == {"embed", "block1", "block2", "head"}


# ---------------------------------------------------------------------------------------
# The ladder against ordinary training; determinism
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("k", "kind"), [(3, "full"), (0, "frozen")])
def test_bp_ladder_equals_ordinary_training_step_by_step(k, kind):
    """Per-group custom AdamW + freezing (ladder) vs one torch.optim.AdamW (standalone)."""
    arrays = tiny_arrays()
    x, y, _, _ = model.tensors(arrays)
    steps = 3 * train.steps_per_epoch(len(y), 16)
    a = model.build(x.shape[1], 8, 3, 4, seed=7)
    b = model.build(x.shape[1], 8, 3, 4, seed=7)
    ladder = methods.Ladder(a, method="bp", k=k, seed=7, lr=1e-3, weight_decay=0.01,
                            total_steps=steps)
    plain = train.Plain(b, kind=kind, lr=1e-3, weight_decay=0.01, total_steps=steps)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        idx = torch.randperm(len(y), generator=gen)[:16]
        assert ladder.step(x[idx], y[idx]) == plain.step(x[idx], y[idx])
        for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
            assert torch.equal(p, q), name
    assert plain.sched.get_last_lr()[0] == pytest.approx(0.0, abs=1e-12)


def test_run_is_deterministic_and_methods_share_the_init():
    arrays = tiny_arrays()
    settings = LadderTrain.from_json('{"epochs": 2, "batch_size": 16}')
    assert (settings.lr, settings.weight_decay, settings.device) == (1e-3, 0.01, "cpu")
    kw = dict(d=8, blocks=2, seed=5)
    r1 = train.run(arrays, settings, method="fa", k=1, **kw)
    r2 = train.run(arrays, settings, method="fa", k=1, **kw)
    assert np.array_equal(r1["preds"], r2["preds"])
    assert r1["summary"]["train_loss"] == r2["summary"]["train_loss"]
    other = train.run(arrays, settings, method="fa", k=1, **{**kw, "seed": 6})
    assert other["summary"]["train_loss"] != r1["summary"]["train_loss"]
    # frozen blocks keep their initial weights, identical under every method
    init = model.build(12, 8, 2, 4, seed=5)
    for method in methods.METHODS:
        net = train.run(arrays, settings, method=method, k=1, **kw)["model"]
        assert torch.equal(net.blocks[0].fc1.weight, init.blocks[0].fc1.weight)
        assert not torch.equal(net.blocks[1].fc1.weight, init.blocks[1].fc1.weight)
    with pytest.raises(ValueError, match="k must be in 0..2"):
        train.run(arrays, settings, method="bp", k=3, **kw)


def test_identity_of_a_zero_branch_stack():
    net = model.build(6, 8, 2, 3, seed=0)
    for block in net.blocks:
        torch.nn.init.zeros_(block.fc2.weight)
        torch.nn.init.zeros_(block.fc2.bias)
    s = model.stack_identity(net, torch.randn(10, 6))
    assert s["block_ratio"] == [0.0, 0.0]
    assert s["stack_rel_change"] == 0.0
    assert s["stack_cos"] == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------
def cifar_records(labels, seed=0):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8)
    raw = np.concatenate([np.array(labels, np.uint8)[:, None], pixels], axis=1)
    return raw.tobytes(), pixels


def test_cifar_binary_parser_reads_records_and_rejects_bad_files(tmp_path):
    raw, pixels = cifar_records([3, 0, 9])
    f = tmp_path / "b.bin"
    f.write_bytes(raw)
    x, y = data.parse_cifar_bin(f)
    assert y.tolist() == [3, 0, 9] and np.array_equal(x, pixels)
    # first pixel of record 1 is its red plane's (0, 0)
    assert x[1, 0] == raw[3073 + 1]
    f.write_bytes(raw[:-1])
    with pytest.raises(DataError, match="not a whole number"):
        data.parse_cifar_bin(f)
    bad, _ = cifar_records([1, 10])
    f.write_bytes(bad)
    with pytest.raises(DataError, match="record 1 has label 10"):
        data.parse_cifar_bin(f)


def test_cifar_download_extract_prepare_from_a_fake_tarball(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for i, name in enumerate([*ladder.CIFAR_TRAIN, ladder.CIFAR_TEST]):
            raw, _ = cifar_records([i % 10, (i + 1) % 10], seed=i)
            info = tarfile.TarInfo(f"{ladder.CIFAR_DIR}/{name}")
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
    tarball = tmp_path / "cifar-10-binary.tar.gz"
    tarball.write_bytes(buf.getvalue())
    out = tmp_path / "data" / "cifar10"
    md5 = hashlib.md5(buf.getvalue()).hexdigest()
    data.download(out, url=tarball.as_uri(), md5=md5)
    sizes = data.prepare("cifar10", tmp_path / "c.npz", LadderData.from_json('{"n_train": 7}'),
                         bin_dir=out / ladder.CIFAR_DIR)
    assert sizes == {"y_train": 7, "y_test": 2}
    arrays = data.load(tmp_path / "c.npz")
    assert arrays["x_train"].shape == (7, 3072) and arrays["y_test"].tolist() == [5, 6]


def test_digits_split_is_fixed_and_stratified(tmp_path):
    sizes = LadderData.from_json('{"n_train": 300}')  # n_test null: digits' 540
    data.prepare("digits", tmp_path / "a.npz", sizes)
    data.prepare("digits", tmp_path / "b.npz", sizes)
    a, b = data.load(tmp_path / "a.npz"), data.load(tmp_path / "b.npz")
    assert all(np.array_equal(a[k], b[k]) for k in data.ARRAYS)
    assert a["x_train"].shape == (300, 64) and len(a["y_test"]) == 540
    assert np.bincount(a["y_test"]).min() >= 50  # stratified: ~54 per class
    x_tr, x_te = data.standardize(a)
    assert np.allclose(x_tr.mean(0), 0, atol=1e-5) and np.isfinite(x_te).all()


# ---------------------------------------------------------------------------------------
# Stats and report on synthetic runs
# ---------------------------------------------------------------------------------------
def test_stats_table_comparisons_crosscheck_and_summary(tmp_path):
    paths, st = ladder_runs(tmp_path)
    rows, metas = stats.collect(paths)
    table = stats.ladder_table(rows, metas, interval="calibrated", nboot=300, ci=0.95, seed=0)
    assert list(table.method) == ["bp"] * 3 + ["dfa"] * 3
    r = table.iloc[2]
    per_seed = [rows[(rows.method == "bp") & (rows.k == 2) & (rows.seed == s)].correct.mean()
                for s in (1, 2, 3)]
    assert r["mean"] == pytest.approx(np.mean(per_seed))
    assert r["std"] == pytest.approx(np.std(per_seed, ddof=1))
    assert r.ci_low < r["mean"] < r.ci_high
    comps = stats.comparisons(rows, metas, interval="calibrated", nboot=300, ci=0.95, seed=0)
    bp_full = comps[(comps.method == "bp") & comps.full].iloc[0]
    assert bp_full.k_b == 2 and bp_full.estimate == pytest.approx(r["mean"] - table.iloc[0]["mean"])
    assert bp_full.ci_low > 0 and bp_full.p_value < 0.01
    dfa_full = comps[(comps.method == "dfa") & comps.full].iloc[0]
    assert dfa_full.ci_low < 0 < dfa_full.ci_high
    cross = stats.crosscheck(rows, metas, *stats.collect(st))
    assert (cross.difference == 0).all() and (cross.same_predictions == 1).all()
    assert sorted(set(cross.kind)) == ["frozen", "full"] and set(cross.k) == {0, 2}

    ident = {"c": {"d": 8, "blocks": 2, "init": {
        "block_ratio": {"mean": [0.4, 0.3], "std": [0.01, 0.02]},
        "stack_rel_change": {"mean": 0.5, "std": 0.1},
        "stack_cos": {"mean": 0.9, "std": 0.01}}, "trained_embedding": {}}}
    md = report.summary(table, comps, cross, ident)
    assert "## Depth ladder" in md and "**k=2 vs k=0** (k=L)" in md
    assert "0.40±0.01, 0.30±0.02" in md and "| c | full |" in md
    report.figure(table, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"


def test_run_file_round_trip_and_contract(tmp_path):
    p = tmp_path / "r.parquet"
    runs.write_run(p, labels=[1, 2], preds=[1, 0], keys=dict(config="c", method="bp", k=0,
                   seed=1, kind="ladder"), meta={"accuracy": 0.5})
    df, meta = runs.read_run(p)
    assert df.correct.tolist() == [True, False] and meta["accuracy"] == 0.5
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "x.parquet")
    with pytest.raises(DataError, match="not a ladder run file"):
        runs.read_run(tmp_path / "x.parquet")


# ---------------------------------------------------------------------------------------
# Config schema
# ---------------------------------------------------------------------------------------
def test_shipped_ladder_configs_validate_and_unknown_keys_fail_naming_them():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(ROOT / "config/ladder.schema.yaml")
    for path in ("config/config.yaml", "config/ladder.yaml"):
        block = yaml.safe_load((ROOT / path).read_text())["ladder"]
        validate(block, schema)
    block = yaml.safe_load((ROOT / "config/config.yaml").read_text())["ladder"]
    del block["stats"]
    validate(block, schema)
    assert block["stats"] == {"interval": "calibrated", "nboot": 2000, "ci": 0.95,
                              "seed": 0}  # defaults filled in
    for bad, name in ((dict(train={"epochs": 1, "epochz": 2}), "epochz"),
                      (dict(configs=[{"name": "a", "d": 4, "L": 1, "width": 2}]), "width"),
                      (dict(frobnicate=1), "frobnicate")):
        with pytest.raises(WorkflowError, match=name):
            validate({**block, **bad}, schema)
    assert json.dumps(block)  # plain data, as the rules expect
    assert tuple(schema_node("ladder.dataset.name")[0]["enum"]) == ladder.DATASETS
    assert tuple(schema_node("ladder.methods")[0]["items"]["enum"]) == ladder.METHODS


# ---------------------------------------------------------------------------------------
# Stage CLIs: settings as one JSON argument, schema defaults, no stage imports another
# ---------------------------------------------------------------------------------------
STAGES = ("data", "train", "identity", "stats", "report")


def test_a_stage_imports_the_ladder_libraries_never_another_stage():
    libraries = {f"workflow_scripts.ladder.{m}" for m in ("data", "model", "methods", "runs")}
    for stage in STAGES:
        name = f"workflow_scripts.ladder.{stage}"
        others = {f"workflow_scripts.ladder.{s}" for s in STAGES} - libraries - {name}
        assert not direct_imports(name) & others, stage


def test_train_cli_takes_its_settings_as_json_with_schema_defaults(tmp_path):
    npz = tmp_path / "d.npz"
    np.savez(npz, **tiny_arrays())
    outs = [str(tmp_path / f"s{s}.parquet") for s in (1, 2)]
    common = ["--data", str(npz), "--config", "t", "--d", "8", "--blocks", "1",
              "--seeds", "1", "2", "--out", *outs]
    train.main(["ladder", "--method", "bp", "--k", "1", *common,
                "--settings-json", '{"epochs": 1, "batch_size": 32}'])
    df, meta = runs.read_run(outs[1])
    assert (meta["epochs"], meta["batch_size"], meta["lr"], meta["weight_decay"]) == (
        1, 32, 1e-3, 0.01)
    assert (meta["seed"], meta["k"], meta["kind"], meta["device"]) == (2, 1, "ladder", "cpu")
    train.main(["standalone", "--kind", "full", *common, "--settings-json", '{"epochs": 1}'])
    _, meta = runs.read_run(outs[0])
    assert (meta["kind"], meta["k"], meta["method"], meta["batch_size"]) == ("full", 1, "bp", 128)
    with pytest.raises(SettingsError, match="ladder.train.epochs: required"):
        train.main(["standalone", "--kind", "full", *common])
    with pytest.raises(SettingsError, match="epochz"):
        train.main(["standalone", "--kind", "full", *common, "--settings-json",
                    '{"epochs": 1, "epochz": 2}'])


def test_data_cli_download_needs_the_configured_url_and_md5(tmp_path, capsys):
    with pytest.raises(SystemExit):
        data.main(["download", "--out-dir", str(tmp_path)])
    assert "--url" in capsys.readouterr().err
    out = tmp_path / "digits.npz"
    data.main(["prepare", "--name", "digits", "--out", str(out),
               "--settings-json", '{"n_train": 50, "n_test": 100}'])
    arrays = data.load(out)
    assert len(arrays["y_train"]) == 50 and len(arrays["y_test"]) == 100


def test_stats_cli_takes_its_settings_as_json(tmp_path):
    paths, st = ladder_runs(tmp_path)
    out = {n: tmp_path / f"{n}.parquet" for n in ("table", "comparisons", "crosscheck")}
    stats.main(["--runs", *map(str, paths), "--standalone", *map(str, st),
                "--settings-json", '{"nboot": 200}', "--threads", "1",
                *[a for n, p in out.items() for a in (f"--{n}", str(p))]])
    table = pd.read_parquet(out["table"])
    assert set(table.nboot) == {200} and set(table.ci) == {0.95}  # ci: the schema's default
    assert len(pd.read_parquet(out["crosscheck"])) == 6


def test_identity_check_of_the_init_and_the_k0_runs(tmp_path):
    arrays = tiny_arrays()
    res = train.run(arrays, LadderTrain.from_json('{"epochs": 1}'), d=8, blocks=2, seed=1,
                    method="dfa", k=0)
    path = tmp_path / "r.parquet"
    runs.write_run(path, labels=res["labels"], preds=res["preds"], keys=dict(
        config="t", method="dfa", k=0, seed=1, kind="ladder"), meta=res["summary"])
    out = identity.check(arrays, {"t": (8, 2)}, [1, 2], [path])["t"]
    assert out["init"]["seeds"] == [1, 2] and len(out["init"]["block_ratio"]["mean"]) == 2
    assert list(out["trained_embedding"]) == ["dfa"]
    assert np.isnan(out["trained_embedding"]["dfa"]["stack_cos"]["std"])  # one seed

