"""Train-once arms: one training at the deepest depth whose every depth is evaluated by
truncation, from one forward pass; their settings, and the evaluations they share."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, docstring_study_data
from safetensors.numpy import load_file

from workflow_scripts.biencoder import evaluate, train
from workflow_scripts.biencoder.model.encoder import encode_at_depths
from workflow_scripts.biencoder.model.truncation import load_trained, load_truncated
from workflow_scripts.core import contracts, settings
from workflow_scripts.study_config import check_config

BASE = {"batch_size": 4, "steps": 3, "lr": 1e-3, "warmup": 0, "max_seq_length": 16}
TEXTS = ["Compute the mean of an array.", "Return a new DataFrame sorted by a column " * 4,
         "x", "Fit the model according to the given training data."]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return docstring_study_data(tmp_path_factory.mktemp("train_once"), triples=40,
                                queries=20, docs=40)


@pytest.fixture(scope="module")
def adaptive_model(tiny_model, data):
    """An adaptive arm of the 3-layer tiny BERT, trained 3 steps, a snapshot at step 1."""
    out = data / "adaptive3"
    summary = train.train(base=str(tiny_model), strategy="adaptive", depth=3, seed=1,
                          settings=settings.TrainAdaptive.from_json(json.dumps(BASE)),
                          triples=data / "t.parquet", out_dir=out, eval_steps=[1, 3])
    return out, summary


def _st(model, texts):
    model.max_seq_length = 16
    return model.encode(texts, batch_size=2, convert_to_numpy=True)


def test_the_summary_records_the_loss_and_its_version(adaptive_model):
    import sentence_transformers

    _, summary = adaptive_model
    assert summary["loss"]["name"] == "AdaptiveLayerLoss"
    assert summary["loss"]["loss"] == "MultipleNegativesRankingLoss"
    assert summary["loss"]["kl_temperature"] == 0.3  # the schema's default
    assert summary["sentence_transformers"] == sentence_transformers.__version__
    assert summary["layers_trained"] == 3 and summary["strategy"] == "adaptive"


def test_every_depth_of_the_arm_equals_truncating_the_saved_model(adaptive_model, data):
    """One pass over the trained model gives, at every depth, the embeddings and metrics of
    the saved full model truncated to that depth."""
    folder, _ = adaptive_model
    one_pass = encode_at_depths(str(folder), [TEXTS], [1, 2, 3], max_seq_length=16,
                                batch_size=2)[0]
    for d in (1, 2, 3):
        np.testing.assert_allclose(one_pass[d], _st(load_truncated(str(folder), "top", d),
                                                    TEXTS), atol=1e-6, err_msg=f"depth {d}")
    outs = [data / f"eval-d{d}.parquet" for d in (1, 2, 3)]
    evaluate.main(["--model", str(folder), "--strategy", "adaptive", "--depths", "1", "2", "3",
                   "--benchmark-dir", str(data / "bench"), "--benchmark", "b", "--recipe", "r",
                   "--seed", "1", "--settings-json", '{"max_seq_length": 16}',
                   "--out", *map(str, outs)])
    for d, out in zip((1, 2, 3), outs, strict=True):
        got = contracts.read_eval(out)
        assert set(got.depth) == {d} and set(got.strategy) == {"adaptive"}
        ref, _ = evaluate.evaluate_model(_Truncated(folder, d), data / "bench", top_k=100)
        pd.testing.assert_frame_equal(got[list(ref.columns)], ref, atol=1e-6)


class _Truncated:
    """The saved model truncated to `depth` by sentence-transformers, as an encoder."""

    def __init__(self, folder, depth):
        self.model = load_truncated(str(folder), "top", depth)
        self.model.max_seq_length = 16

    def encode(self, texts, batch_size=64, **_):
        return self.model.encode(texts, batch_size=batch_size, convert_to_numpy=True)


def test_snapshots_give_every_depth_from_one_pass(adaptive_model, data):
    folder, _ = adaptive_model
    snaps = {1: folder / "steps" / "step1", 3: folder}
    frames, _ = evaluate.evaluate_snapshots(snaps, data / "bench", max_seq_length=16,
                                            depths=[1, 2, 3])
    assert sorted(frames) == [1, 2, 3]
    for d, df in frames.items():
        assert sorted(df.step.unique()) == [1, 3]
        for step, path in snaps.items():
            ref, _ = evaluate.evaluate_model(_Truncated(path, d), data / "bench", top_k=100)
            got = df[df.step == step].drop(columns="step").reset_index(drop=True)
            pd.testing.assert_frame_equal(got, ref, atol=1e-6)


def test_one_job_writes_every_depths_curve_and_final_metrics(adaptive_model, data, tmp_path):
    """The workflow's job for a train-once model with a learning curve: its snapshots and its
    final weights, every depth, in one process; the final files equal the normal path's."""
    folder, _ = adaptive_model
    common = ["--strategy", "adaptive", "--depths", "1", "2", "3", "--benchmark-dir",
              str(data / "bench"), "--benchmark", "b", "--recipe", "r", "--seed", "1",
              "--settings-json", '{"max_seq_length": 16}']
    steps, finals, refs = ([tmp_path / f"{kind}{d}.parquet" for d in (1, 2, 3)]
                           for kind in ("steps", "final", "ref"))
    evaluate.main(["--snapshots", str(folder / "steps"), "--steps", "1", "--final",
                   str(folder), "--final-out", *map(str, finals), "--out", *map(str, steps),
                   *common])
    evaluate.main(["--model", str(folder), "--out", *map(str, refs), *common])
    for d, step, final, ref in zip((1, 2, 3), steps, finals, refs, strict=True):
        pd.testing.assert_frame_equal(pd.read_parquet(final), pd.read_parquet(ref),
                                      check_exact=True)
        curve = pd.read_parquet(step)
        assert set(curve.step) == {1} and set(curve.depth) == {d}
    with pytest.raises(SystemExit):  # one final file per depth
        evaluate.main(["--snapshots", str(folder / "steps"), "--steps", "1", "--final",
                       str(folder), "--final-out", str(finals[0]), "--out", *map(str, steps),
                       *common])


def test_a_model_without_a_lean_encoder_is_encoded_per_depth(adaptive_model, tmp_path):
    """Max pooling only sentence-transformers reproduces: no one pass, the same numbers."""
    folder, _ = adaptive_model
    other = tmp_path / "max"
    shutil.copytree(folder, other)
    (other / "1_Pooling" / "config.json").write_text(json.dumps(
        {"embedding_dimension": 32, "pooling_mode": "max"}))
    got = encode_at_depths(str(other), [TEXTS], [1, 3], max_seq_length=16, batch_size=2)[0]
    for d in (1, 3):
        np.testing.assert_allclose(got[d], _st(load_truncated(str(other), "top", d), TEXTS),
                                   atol=1e-6)


def test_matryoshka2d_trains_the_full_dimension_and_the_configured_ones(tiny_model, data):
    s = settings.TrainMatryoshka2d.from_json(json.dumps({**BASE, "matryoshka_dims": [8, 16]}))
    summary = train.train(base=str(tiny_model), strategy="matryoshka2d", depth=2, seed=1,
                          settings=s, triples=data / "t.parquet", out_dir=data / "m2d")
    assert summary["loss"]["name"] == "Matryoshka2dLoss"
    assert list(summary["loss"]["matryoshka_dims"]) == [32, 16, 8]  # the full one: evaluated
    weights = load_file(data / "m2d" / "model.safetensors")
    assert not any(k.startswith("encoder.layer.2.") for k in weights)  # top's 2 layers
    assert load_trained(data / "m2d").get_embedding_dimension() == 32
    too_wide = settings.TrainMatryoshka2d.from_json(json.dumps({**BASE,
                                                                "matryoshka_dims": [64]}))
    with pytest.raises(ValueError, match=r"train_once_loss\.matryoshka_dims: \[64\] exceed"):
        train.train(base=str(tiny_model), strategy="matryoshka2d", depth=2, seed=1,
                    settings=too_wide, triples=data / "t.parquet", out_dir=data / "m2d-x")


@pytest.mark.parametrize(("loss", "name"), [
    ({"fixed_depths": [1, 2], "matryoshka_dims": [8], "n_dims_per_step": -1},
     "FixedLayersMatryoshka2dLoss"),
    ({"pairs": [[1, 8], [2, 16]]}, "FixedPairsLoss"),
])
def test_a_fixed_layers_arm_trains_through_the_trainer(tiny_model, data, loss, name):
    """train_once_loss.fixed_depths or .pairs: the trainer steps the fixed-layers loss (its
    backward through every fixed depth) and train_summary.json records the depths it
    trained."""
    s = settings.TrainMatryoshka2d.from_json(json.dumps({**BASE, **loss}))
    summary = train.train(base=str(tiny_model), strategy="matryoshka2d", depth=3, seed=1,
                          settings=s, triples=data / "t.parquet", out_dir=data / name)
    assert summary["loss"]["name"] == name and summary["loss"]["fixed_depths"] == [1, 2]
    assert np.isfinite(summary["final_loss"]) and summary["steps"] == BASE["steps"]


# --- settings: each arm's job reads exactly its keys ---------------------------------------

def _default_config() -> dict:
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    check_config(cfg)
    return cfg


def test_loss_settings_reach_only_the_train_once_jobs():
    cfg = _default_config()
    before = {cls: cls.from_config(cfg, recipe="short").to_json()
              for cls in (settings.Train, settings.TrainAdaptive, settings.TrainMatryoshka2d)}
    cfg["recipes"]["short"]["train_once_loss"]["kl_temperature"] = 0.5
    assert settings.Train.from_config(cfg, recipe="short").to_json() == before[settings.Train]
    for cls in (settings.TrainAdaptive, settings.TrainMatryoshka2d):
        assert cls.from_config(cfg, recipe="short").to_json() != before[cls]
    cfg["recipes"]["short"]["train_once_loss"]["matryoshka_dims"] = [64]
    assert (settings.TrainAdaptive.from_config(cfg, recipe="short").kl_temperature == 0.5
            and "matryoshka_dims" not in json.loads(
                settings.TrainAdaptive.from_config(cfg, recipe="short").to_json()))
    assert settings.train_settings("top") is settings.Train
    assert settings.train_settings("adaptive") is settings.TrainAdaptive


def test_the_arms_are_named_alike_in_the_schema_the_settings_and_the_contracts():
    node, _ = settings.schema_node("recipes.*.train_once")
    assert tuple(node["items"]["enum"]) == contracts.TRAIN_ONCE
    assert tuple(settings.TRAIN_ONCE_SETTINGS) == contracts.TRAIN_ONCE
    assert contracts.base_strategy("adaptive") == "top"
    assert contracts.base_strategy("freeze") == "freeze"


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c.update(strategies=["bottom"]),
     "config key recipes.short.train_once: a train-once arm is compared with per-depth "
     "training of strategy top"),
    (lambda c: c["recipes"]["short"].update(train_once=["nope"]),
     "config key recipes.short.train_once[0]: 'nope' is not one of"),
    (lambda c: c["recipes"]["short"].update(train_once_loss={"n_layers_per_step": 0}),
     "config key recipes.short.train_once_loss.n_layers_per_step"),
    (lambda c: c["recipes"]["short"].update(train_once_loss={"layer_weighting": "cubic"}),
     "config key recipes.short.train_once_loss.layer_weighting: 'cubic' is not one of"),
])
def test_bad_train_once_keys_are_named(change, message):
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["recipes"]["short"]["train_once"] = ["adaptive"]
    cfg["claims"] = []
    change(cfg)
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("[", r"\[")):
        check_config(cfg)


# --- stats, compute, report and figure on synthetic results -------------------------------

def _summary(path, strategy, depth, seed, steps=6, seconds=2.0):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"strategy": strategy, "depth": depth, "seed": seed,
                                "steps": steps, "layers_trained": depth,
                                "train_seconds": seconds * depth}))
    return path


def _compute(tmp_path, depths=(1, 2, 3), seeds=(1, 2, 3)):
    from workflow_scripts.biencoder import compute

    models = [["short", "top", d, s] for d in depths for s in seeds]
    models += [["short", "adaptive", max(depths), s] for s in seeds]
    paths = [_summary(tmp_path / f"ck/{r}/{st}{d}/seed{s}/train_summary.json", st, d, s)
             for r, st, d, s in models]
    return compute.compute_table(compute.read_summaries(paths, models), depths)


def test_one_training_serves_every_depth_of_a_train_once_arm(tmp_path):
    table = _compute(tmp_path).set_index(["recipe", "strategy", "depth"]).sort_index()
    once, top = table.loc[("short", "adaptive")], table.loc[("short", "top")]
    assert list(once.trained_depth) == [3, 3, 3] and list(once.depths_served) == [3, 3, 3]
    assert list(once.layer_steps) == [18, 18, 18] and list(top.layer_steps) == [6, 12, 18]
    assert list(top.trained_depth) == [1, 2, 3] and (top.depths_served == 1).all()
    # The arms' totals over depths and seeds: 3 trainings of 18 against 9 of 6, 12 and 18.
    assert (once.arm_trainings == 3).all() and (once.arm_layer_steps == 3 * 18).all()
    assert (top.arm_trainings == 9).all() and (top.arm_layer_steps == 3 * (6 + 12 + 18)).all()
    assert once.train_seconds_mean.iloc[0] == pytest.approx(6.0)
    assert top.train_seconds_sum.loc[2] == pytest.approx(3 * 4.0)


def test_a_summary_of_another_model_is_named(tmp_path):
    from workflow_scripts.biencoder import compute

    path = _summary(tmp_path / "s.json", "top", 2, 1)
    with pytest.raises(contracts.DataError, match=r"s\.json: a training of top2 seed 1, "
                                                  r"expected adaptive3 seed 1"):
        compute.read_summaries([path], [["short", "adaptive", 3, 1]])


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """Per-query evaluations of the base (top), per-depth top and an adaptive arm 0.05
    below it, through the stats stage; and a compute table."""
    from workflow_scripts.biencoder import stats

    d = tmp_path_factory.mktemp("synthetic")
    rng = np.random.default_rng(3)
    paths = []
    for bench in ("b1", "b2"):
        hard = rng.uniform(0, 0.5, 60)
        for depth in (1, 2, 3):
            arms = [("base", "top", -1, 0.0)] + [
                ("short", s, seed, 0.2 - (0.05 if s == "adaptive" else 0.0))
                for s in ("top", "adaptive") for seed in (1, 2, 3)]
            for recipe, strategy, seed, shift in arms:
                score = np.clip(hard + shift + 0.01 * depth + rng.normal(0, 0.05, 60), 0, 1)
                df = pd.DataFrame({"query_id": [f"q{i}" for i in range(60)],
                                   **{m: score for m in contracts.METRICS}}).assign(
                    recipe=recipe, strategy=strategy, depth=depth, seed=seed, benchmark=bench)
                paths.append(d / f"{recipe}-{strategy}{depth}-{seed}-{bench}.parquet")
                df.to_parquet(paths[-1])
    out = d / "stats"
    tables = stats.run(paths, out, settings.Stats.from_json('{"nboot": 200}'),
                       budget_order=["short"])
    contracts.write_parquet(out / "compute.parquet", _compute(d))
    return out, tables


def test_stats_compare_train_once_with_per_depth_training_and_tops_base(synthetic):
    _, tables = synthetic
    comp = tables["comparisons"]
    once = comp[(comp.kind == "train_once") & (comp.benchmark == "all")
                & (comp["resample"] == "seeds,examples")].sort_values("depth_a")
    assert list(once.a) == ["short/top1", "short/top2", "short/top3"]
    assert list(once.b) == ["short/adaptive1", "short/adaptive2", "short/adaptive3"]
    assert (once.design == "paired").all() and (once.strategy_b == "adaptive").all()
    assert once.estimate.to_numpy() == pytest.approx(-0.05, abs=0.015)  # b - a
    assert (once.ci_high < 0).all()
    base = comp[(comp.kind == "trained_vs_base") & (comp.strategy_b == "adaptive")]
    assert set(base.a) == {"base/top1", "base/top2", "base/top3"}
    assert not (comp.kind == "strategy").any()  # top vs adaptive is train_once only


def test_report_section_and_figure_compare_the_arms(synthetic, tmp_path):
    from workflow_scripts.biencoder.report import figures
    from workflow_scripts.biencoder.report import results as report
    from workflow_scripts.biencoder.report.compute_section import compute_section

    out, tables = synthetic
    text = compute_section(tables["ci"], tables["comparisons"],
                           contracts.read_stats(out, "compute"))
    assert text.startswith("## Train once vs per depth")
    rows = [line for line in text.splitlines() if re.match(r"\| short \| adaptive \| \d \|", line)]
    assert len(rows) == 3  # one per depth, with δ, both intervals and each side's cost
    assert "6 steps × 3 layers = 18 layer-steps" in rows[0]
    assert "adaptive trains 3 models (54 layer-steps" in text
    assert "0.50× the layer-steps" in text  # 54 of 108
    full = report.build(out, compute=True)
    assert "## Train once vs per depth" in full
    fig = figures.quality_vs_compute(figures.load_stats(out, ("ci", "compute")), ["short"])
    figures.save(fig, [tmp_path / "q.png"])
    assert (tmp_path / "q.png").stat().st_size > 10_000
