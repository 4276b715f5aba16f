"""What a training records is what made it: trainer state resumes only for the settings that
made it (issue #28: a killed lr 2e-4 run resumed under lr 5e-4 and was labelled 5e-4), and
train_summary.json / a snapshot's snapshot.json record what actually ran."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from crash_injection import Crash, crash_after
from safetensors.numpy import load_file
from tiny_triples import write_triples

from workflow_scripts.biencoder import trainer_state
from workflow_scripts.core.settings import Train

SETTINGS = {"batch_size": 4, "steps": 8, "lr": 1e-3, "warmup": 1, "max_seq_length": 16,
            "precision": "bf16"}
EVAL_STEPS = (3, 5, 8)


@pytest.fixture(scope="module")
def triples(tmp_path_factory):
    return write_triples(tmp_path_factory.mktemp("prov") / "t.parquet")


def _kw(tiny_model, triples, **settings):
    return dict(base=str(tiny_model), strategy="top", depth=2, seed=5,
                settings=Train.from_json(json.dumps({**SETTINGS, **settings})),
                triples=triples, checkpoint_every=2, eval_steps=EVAL_STEPS)


def _same_weights(a, b) -> bool:
    for rel in ("model.safetensors", "steps/step3/model.safetensors",
                "steps/step5/model.safetensors"):
        wa, wb = load_file(a / rel), load_file(b / rel)
        if wa.keys() != wb.keys() or not all((wa[k] == wb[k]).all() for k in wa):
            return False
    return True


@pytest.mark.workflow
def test_killed_run_rerun_with_another_lr_trains_from_step_0(tiny_model, triples, tmp_path,
                                                            capsys):
    from workflow_scripts.biencoder.train import train

    ref, out = tmp_path / "ref", tmp_path / "out"
    reference = train(out_dir=ref, **_kw(tiny_model, triples, lr=2e-3))
    with pytest.raises(Crash):
        train(out_dir=out, callbacks=[crash_after(4)], **_kw(tiny_model, triples))
    assert (tmp_path / "out.trainer" / "checkpoint-4").is_dir()
    capsys.readouterr()
    summary = train(out_dir=out, **_kw(tiny_model, triples, lr=2e-3))
    said = capsys.readouterr().out
    assert ("trainer state was made with other settings (lr 0.001 -> 0.002): training from "
            "the start") in said
    assert "resuming" not in said and summary["resumed_from"] is None
    assert _same_weights(ref, out)  # bitwise: the new lr's uninterrupted run, snapshots too
    assert summary["loss_history"] == reference["loss_history"]
    assert summary["settings"]["lr"] == 0.002
    for step in (3, 5):  # the snapshots say what made them
        snap = json.loads((out / "steps" / f"step{step}" / "snapshot.json").read_text())
        assert (snap["step"], snap["lr"], snap["seed"]) == (step, 0.002, 5)
    assert not (tmp_path / "out.trainer").exists()
    # The per-query files of the final model and of the snapshots say what made the model.
    from workflow_scripts.biencoder import evaluate
    from workflow_scripts.core import contracts

    contracts.write_beir(tmp_path / "bench", {f"d{i}": {"text": f"doc {i} {w}"} for i, w in
                                              enumerate(["array", "frame", "plot", "solve"])},
                         {"q1": "an array", "q2": "a plot"}, {"q1": {"d0": 1}, "q2": {"d2": 1}})
    common = ["--strategy", "top", "--depth", "2", "--benchmark-dir", str(tmp_path / "bench"),
              "--benchmark", "b", "--recipe", "r", "--seed", "5",
              "--settings-json", '{"max_seq_length": 16}']
    evaluate.main(["--snapshots", str(out / "steps"), "--steps", "3", "5", "--final", str(out),
                   "--final-out", str(tmp_path / "final.parquet"),
                   "--out", str(tmp_path / "steps.parquet"), *common])
    for f in ("final.parquet", "steps.parquet"):
        prov = pd.read_parquet(tmp_path / f).attrs["provenance"]
        assert prov["trained_with"]["settings"]["lr"] == 0.002, f
        assert prov["trained_with"]["seed"] == 5 and prov["evaluate"]["max_seq_length"] == 16


@pytest.mark.workflow
def test_summary_records_what_ran_and_the_whole_runs_seconds(tiny_model, triples, tmp_path):
    """fp32 on CPU (not the recipe's bf16), the data's identity, versions, the parameters
    trained (no pooler), and train_seconds over both parts of a resumed run."""
    import sentence_transformers
    import torch
    import transformers

    from workflow_scripts.biencoder.model.truncation import load_truncated
    from workflow_scripts.biencoder.train import train

    out = tmp_path / "out"
    with pytest.raises(Crash):  # 4 steps of >= 0.4 s, then killed
        train(out_dir=out, callbacks=[crash_after(4, delay=0.4)], **_kw(tiny_model, triples))
    summary = train(out_dir=out, **_kw(tiny_model, triples))
    assert summary["resumed_from"].endswith("checkpoint-4")
    assert summary["train_seconds"] >= 1.6
    assert summary["device"] == "cpu" and summary["precision"] == "fp32"
    assert summary["settings"]["precision"] == "bf16"  # configured, applies on CUDA only
    assert summary["train_data"] == {"path": str(triples), "rows": 40,
                                     "sha256": trainer_state.file_sha256(triples)}
    assert summary["base_model"]["spec"] == str(tiny_model)
    assert len(summary["base_model"]["sha256"]) == 64
    assert (summary["sentence_transformers"], summary["transformers"], summary["torch"]) == (
        sentence_transformers.__version__, transformers.__version__, torch.__version__)
    model = load_truncated(str(tiny_model), "top", 2)
    params = dict(model.named_parameters())
    pooler = sum(p.numel() for n, p in params.items() if ".pooler." in n)
    assert pooler > 0  # the tiny BERT has one, never used by mean pooling
    assert summary["trainable_parameters"] == sum(p.numel() for p in params.values()) - pooler
    written = json.loads((out / "train_summary.json").read_text())
    assert {k: written[k] for k in ("precision", "train_data", "base_model", "train_seconds",
                                    "transformers", "trainable_parameters")} == {
        k: summary[k] for k in ("precision", "train_data", "base_model", "train_seconds",
                                "transformers", "trainable_parameters")}


def test_state_made_for_other_settings_is_removed_and_said(tmp_path, capsys):
    state = tmp_path / "seed1.trainer"
    trainer_state.claim_state(state, {"lr": 1e-3, "snapshot_steps": [3, 5], "seed": 1})
    (state / "checkpoint-2").mkdir()
    trainer_state.claim_state(state, {"lr": 1e-3, "snapshot_steps": [3, 5], "seed": 1})
    assert (state / "checkpoint-2").is_dir() and not capsys.readouterr().out  # same: kept
    trainer_state.claim_state(state, {"lr": 1e-3, "snapshot_steps": [5], "seed": 1})
    assert capsys.readouterr().out == ("trainer state was made with other settings "
                                       "(snapshot_steps [3, 5] -> [5]): training from the "
                                       "start\n")
    assert not (state / "checkpoint-2").exists()
    assert json.loads((state / "fingerprint.json").read_text())["snapshot_steps"] == [5]
    (state / "fingerprint.json").unlink()  # state of an older depthlab: no fingerprint
    trainer_state.claim_state(state, {"lr": 1e-3})
    assert "(it records none)" in capsys.readouterr().out


def test_stats_tables_record_the_settings_of_the_run_that_wrote_them(tmp_path):
    """A stats rerun with other settings (after a kill: the tables are written atomically,
    so a killed run leaves the old ones) replaces every table's recorded settings."""
    from test_stats_stage import _write_evals

    from workflow_scripts.biencoder import stats
    from workflow_scripts.core import contracts
    from workflow_scripts.core.settings import Stats

    paths = _write_evals(tmp_path, seeds=(1, 2), recipes=("short",))
    for setting in ('{"nboot": 100, "ci": 0.9}', '{"nboot": 120, "ci": 0.95}'):
        s = Stats.from_json(setting)
        stats.run(paths, tmp_path / "out", s, budget_order=["short"])
        for name in ("ci", "comparisons"):
            t = contracts.read_stats(tmp_path / "out", name)
            assert set(t["nboot"]) == {s.nboot} and set(t["ci"]) == {s.ci}, (name, setting)
            assert set(t["interval"]) == {s.interval}
