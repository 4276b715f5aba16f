"""The jobs' records (core/launch.py) summed per rule (results/usage.parquet)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflow_scripts.core import contracts, paths, usage


def _record(records, log, output, wall, cpu, rss):
    f = records / f"{log}.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps({"wall_s": wall, "cpu_s": cpu, "max_rss_mb": rss,
                             "mode": "fresh", "outputs": [output]}))
    return output


def test_usage_sums_jobs_per_rule(tmp_path):
    rec = tmp_path / "benchmarks"
    planned = [_record(rec, "train/a.log", "checkpoints/a/model.safetensors", 10, 8, 900),
               _record(rec, "train/b.log", "checkpoints/b/model.safetensors", 30, 20, 1100),
               _record(rec, "stats.log", "results/stats/ci.parquet", 2, 1.5, 300)]
    # a look's document: planned at run time, always counted
    _record(rec, "claims_look/look0.log", str(tmp_path / paths.LOOK.format(k=0)), 1, 0.5, 200)
    # a job the plan no longer has (an edited config): left out
    _record(rec, "train/old.log", "checkpoints/old/model.safetensors", 99, 99, 9999)
    table = usage.usage_table(usage.read_records(rec, planned))
    assert table.to_dict("list") == {
        "rule": ["claims_look", "stats", "train"], "jobs": [1, 1, 2],
        "seconds_total": [1.0, 2.0, 40.0], "seconds_max": [1.0, 2.0, 30.0],
        "max_rss_mb": [200.0, 300.0, 1100.0], "cpu_seconds": [0.5, 1.5, 28.0]}
    out = tmp_path / "usage.parquet"
    usage.main(["--records", str(rec), "--planned", *planned, "--out", str(out)])
    assert contracts.read_usage(out).equals(table)


def test_a_broken_record_is_named(tmp_path):
    f = tmp_path / "train" / "m.log.json"
    f.parent.mkdir()
    f.write_text("{}")
    with pytest.raises(ValueError, match=r"train/m.log.json: not a job record"):
        usage.read_records(tmp_path, ["m"])


def test_every_rules_log_is_named_after_it():
    """The usage table reads a job's rule from its log's name (logs/<study>/<rule>.log or
    logs/<study>/<rule>/...): every rule of every shipped config keeps to it (a rule named
    in a loop, as the figures', by its name's template)."""
    import re

    from conftest import ROOT

    text = "\n".join(p.read_text() for p in sorted((ROOT / "rules").glob("*.smk")))
    rule, logs = None, {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*(?:rule|checkpoint) (\w+):|\s*use rule \w+ as (\w+) with:", line)
        if m:
            rule = m.group(1) or m.group(2)
        elif line.strip() == "name:":
            rule = lines[i + 1].strip().lstrip("f").strip('"')
        elif line.strip() == "log:":
            after = "\n".join(lines[i + 1:i + 3])  # snakefmt may break the call
            logs[rule] = re.match(r'\s*PATHS\.log\(\s*f?"([^"]*)"', after)[1]
    assert len(logs) > 30
    study = paths.Study("s")
    for rule, log in logs.items():
        record = Path(paths.record_of(study.log(log)))
        assert paths.rule_of(record.relative_to(study.records)) == rule, log
