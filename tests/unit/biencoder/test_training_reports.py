"""Watching a training: recipe key report_to passes tensorboard to the trainer, whose event
files land in the folder given (logs/ in a study), and the model is the one a training
without reports makes."""

from __future__ import annotations

import json

import pytest
from tiny_triples import write_triples

from workflow_scripts.biencoder import train
from workflow_scripts.core.settings import Train

SETTINGS = {"batch_size": 4, "steps": 4, "lr": 1e-3, "max_seq_length": 16}


@pytest.fixture(scope="module")
def triples(tmp_path_factory):
    return write_triples(tmp_path_factory.mktemp("reports") / "t.parquet")


@pytest.mark.workflow
def test_tensorboard_events_are_read_back_and_change_no_model(tiny_model, triples, tmp_path,
                                                               monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    kw = dict(base=str(tiny_model), strategy="top", depth=2, seed=3,
              settings=Train.from_json(json.dumps(SETTINGS)), triples=triples)
    events = tmp_path / "logs" / "seed3"
    summary = train.train(out_dir=tmp_path / "watched", report_to=["tensorboard"],
                          report_dir=events, **kw)
    train.train(out_dir=tmp_path / "plain", **kw)

    acc = EventAccumulator(str(events))
    acc.Reload()
    losses = acc.Scalars("train/loss")
    assert [e.step for e in losses] == [h["step"] for h in summary["loss_history"]]
    assert [e.value for e in losses] == pytest.approx(
        [h["loss"] for h in summary["loss_history"]], rel=1e-6)
    assert "TENSORBOARD_LOGGING_DIR" not in __import__("os").environ  # restored
    assert not list((tmp_path / "plain").rglob("events.out.tfevents.*"))
    for name in ("model.safetensors",):
        assert ((tmp_path / "watched" / name).read_bytes()
                == (tmp_path / "plain" / name).read_bytes())


def test_report_dirs_match_the_seeds():
    with pytest.raises(SystemExit):
        train.main(["--base", "x", "--strategy", "top", "--depth", "1", "--seed", "1", "2",
                    "--triples", "t", "--out", "a", "b", "--report-to", "tensorboard",
                    "--report-dir", "only-one"])
