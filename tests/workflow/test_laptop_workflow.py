"""The laptop study's DAG end to end (issue #31): config/laptop.yaml with its datasets pointed
at a local HTTP server (BEIR-layout zips, an MS MARCO-layout triples file:
tests/helpers/beir_fixtures.py), the tests' tiny random-init model for the base and steps and sizes
scaled down, run by `snakemake --cores 2` through to the report. What the data cards
record (URL, N, sha256) is checked against the served files, and the triples file is
served only in part."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from beir_fixtures import make_beir_zip, make_triples_gz, md5, triple_lines
from conftest import ROOT, copy_workflow, planned_jobs, snakemake
from local_http import LocalServer

TRIPLES = 20_000  # lines in the served file; the study reads its first MAX_TRIPLES
MAX_TRIPLES = 64


@pytest.fixture(scope="module")
def six_layer_model(tmp_path_factory):
    """The tiny random-init BERT with MiniLM-L6's 6 layers, so laptop.yaml's depths and
    claims stand as written."""
    from tiny_models import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny6", layers=6, hidden=32,
                           heads=2, intermediate=64, seed=0)


def scaled_laptop_config(model_dir, server: LocalServer) -> dict:
    """config/laptop.yaml, its data served by `server`, its sizes cut to seconds."""
    config = yaml.safe_load((ROOT / "config/laptop.yaml").read_text())
    served = {}
    for spec in config["datasets"].values():
        if spec["source"] in ("beir", "beir-train"):
            top = Path(urlparse(spec["url"]).path).stem  # scifact.zip holds scifact/
            if top not in served:
                data = make_beir_zip(top, docs=120, test_queries=12, train_queries=16,
                                     seed=len(served))
                served[top] = (server.put(f"{top}.zip", data), md5(data))
            spec["url"], spec["md5"] = served[top]
        elif spec["source"] == "triples-jsonl-gz":
            spec["url"] = server.put("msmarco-triplets.jsonl.gz", make_triples_gz(TRIPLES))
            spec["max_triples"] = MAX_TRIPLES
    # The laptop study's training pairs of SciFact (beir-train), whichever data it trains on.
    config["datasets"].setdefault("scifact-train", {
        "source": "beir-train", "url": served["scifact"][0], "md5": served["scifact"][1]})
    config["base_model"] = str(model_dir)
    # The shallowest and the full depth, and the first benchmark (SciFact, whose zip also
    # gives the training pairs): every rule still runs, in fewer jobs.
    config["depths"] = [min(config["depths"]), max(config["depths"])]
    config["benchmarks"] = config["benchmarks"][:1]
    config["max_seq_length"] = 32
    for recipe in config["recipes"].values():
        recipe.update(batch_size=8, steps=4, warmup=0, seeds=recipe["seeds"][:2],
                      eval_steps=[2, 4] if recipe.get("eval_steps") else [])
        recipe.pop("checkpoint_every", None)
    # The dimension grid at 8 and 16 of the tiny model's 32 (the laptop's 64 and 128 of 384),
    # its claim at 16.
    config["eval"] = {"top_k": 100, "batch_size": 16, "min_queries": 10, "dims": [8, 16]}
    for claim in config["claims"]:
        if "dim" in claim:
            claim["dim"] = 16
    config["latency"] = {"runs": 1, "batch_size": 4, "seq_len": 16, "warmup_calls": 2,
                         "rounds": 2, "max_rounds": 2, "calls_per_round": 1,
                         "encode_calls": 0}
    config["stats"] = {**config.get("stats", {}), "nboot": 200}
    config["figures"] = {"formats": ["png"]}
    return config


def test_laptop_study_runs_end_to_end_on_served_data(six_layer_model, tmp_path):
    with LocalServer(tmp_path / "www") as server:
        config = scaled_laptop_config(six_layer_model, server)
        wd = copy_workflow(tmp_path / "study")
        cfg = wd / "laptop-test.yaml"
        cfg.write_text(yaml.safe_dump(config))
        # The whole DAG, and SciFact's training pairs through their rule (beir-train), which
        # the study trains on or not
        proc = snakemake(wd, "--configfile", str(cfg), "--cores", "2", "all",
                         "data/train/scifact-train.parquet")
        assert (wd / "results/laptop/RESULTS.md").exists(), proc.stderr[-3000:]

        datasets, train = config["datasets"], config["train_data"]
        # The triples file: streamed, stopped after N lines, never served whole
        gz = "/msmarco-triplets.jsonl.gz"
        if gz in server.hits:
            size = (tmp_path / "www" / gz[1:]).stat().st_size
            print(f"max_triples {MAX_TRIPLES} of {TRIPLES:,} lines: "
                  f"{server.bytes_served[gz]:,} bytes served of {size:,}")
            assert server.hits[gz] == 1 and server.bytes_served[gz] < size / 10
            name = next(n for n, s in datasets.items() if s["source"] == "triples-jsonl-gz")
            card = (wd / f"data/train/{name}.DATACARD.md").read_text()
            lines = "".join(f"{t}\n" for t in triple_lines(TRIPLES)[:MAX_TRIPLES])
            digest = hashlib.sha256(lines.encode()).hexdigest()
            assert datasets[name]["url"] in card and f"| {MAX_TRIPLES} |" in card
            assert digest in card
            record = json.loads((wd / f"data/downloads/{name}.head{MAX_TRIPLES}"
                                 ".jsonl.record.json").read_text())
            assert record["sha256"] == digest and record["bytes_read"] < size / 10
        # Every benchmark's card: the served URL and the md5 the test computed
        for b in config["benchmarks"]:
            card = (wd / f"data/beir/{b}/DATACARD.md").read_text()
            assert datasets[b]["url"] in card and datasets[b]["md5"] in card
        # RESULTS.md holds every card
        results = (wd / "results/laptop/RESULTS.md").read_text()
        cards = [f"data/train/{train}.DATACARD.md",
                 *(f"data/beir/{b}/DATACARD.md" for b in config["benchmarks"])]
        assert all(f"### {c}\n" in results for c in cards)
        assert (wd / cards[0]).read_text().split("\n", 1)[1].strip() in results
        # The fine-tuned-then-truncated arm: each seed's L6 model cut to L1-L3, decided
        import pandas as pd

        table = pd.read_parquet(wd / "results/laptop/claims.parquet")
        rows = table[table.claim == "per-depth-beats-truncated"]
        print(rows[["row", "member", "estimate", "ci_low", "ci_high", "verdict"]].to_string())
        bench = "all" if len(config["benchmarks"]) > 1 else config["benchmarks"][0]
        assert list(rows[rows.row == "member"].member) == [
            f"msmarco/top{d} − msmarco/truncated{d} [{bench}]"
            for d in sorted(config["depths"])[:-1]]
        assert rows[rows.row == "claim"].verdict.iloc[0] != "not-applicable"
        # The layer x dimension grid: its claim decided on the 16-dimension files, its figure
        rows = table[table.claim == "per-depth-beats-truncated-128d"]
        print(rows[["row", "member", "estimate", "ci_low", "ci_high", "verdict"]].to_string())
        assert list(rows[rows.row == "member"].member) == [
            f"msmarco/top{d} − msmarco/truncated{d} [{bench}, 16 dims]"
            for d in sorted(config["depths"])[:-1]]
        assert rows[rows.row == "claim"].verdict.iloc[0] != "not-applicable"
        assert (wd / "results/laptop/figures/depth_by_dim.png").exists()

        # SciFact's training pairs: the train split, test queries kept out, each file's sha256
        card = (wd / "data/train/scifact-train.DATACARD.md").read_text()
        assert "Split: **train**" in card and datasets["scifact-train"]["url"] in card
        assert "| pairs | 24 |" in card and "| sha256 read qrels/train.tsv |" in card

        # Nothing left to do, and no request for data already there
        before = sum(server.hits.values())
        dry = snakemake(wd, "--configfile", str(cfg), "-n")
        assert planned_jobs(dry.stdout) == []
        assert sum(server.hits.values()) == before
        # Another max_triples is a param of the triples' job: it reruns (and what reads it)
        name = next((n for n, s in datasets.items() if s["source"] == "triples-jsonl-gz"), None)
        if name == train:
            datasets[name]["max_triples"] = MAX_TRIPLES + 1
            cfg.write_text(yaml.safe_dump(config))
            jobs = planned_jobs(snakemake(wd, "--configfile", str(cfg), "-n").stdout)
            reason = next(reason for rule, reason, _ in jobs if rule == "triples_download")
            assert reason.startswith("Params have changed") and (
                f"before: '--max-triples {MAX_TRIPLES}' now: '--max-triples {MAX_TRIPLES + 1}'"
                in reason)
