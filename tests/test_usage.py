"""Snakemake benchmark files summed per rule (results/usage.parquet)."""

from __future__ import annotations

import pytest

from workflow_scripts.core import contracts, usage

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _bench(path, seconds, rss, cpu):
    path.write_text(HEADER + f"{seconds}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")
    return path


def test_usage_sums_jobs_per_rule_in_first_seen_order(tmp_path):
    files = [_bench(tmp_path / "a.tsv", 2.0, 100.5, 1.5), _bench(tmp_path / "b.tsv", 3.0, 80, 2),
             _bench(tmp_path / "c.tsv", 1.0, "NA", 0.5)]
    table = usage.usage_table(files, ["train", "train", "stats"])
    assert list(table.columns) == list(contracts.USAGE_COLUMNS)
    assert table["rule"].tolist() == ["train", "stats"]
    train = table.iloc[0]
    assert (train.jobs, train.seconds_total, train.seconds_max) == (2, 5.0, 3.0)
    assert train.max_rss_mb == 100.5 and train.cpu_seconds == 3.5
    assert table.iloc[1].max_rss_mb != table.iloc[1].max_rss_mb  # NA stays missing (NaN)
    out = tmp_path / "usage.parquet"
    usage.main(["--files", *map(str, files), "--rules", "train", "train", "stats",
                "--out", str(out)])
    assert contracts.read_usage(out).equals(table)


def test_a_file_and_rule_count_mismatch_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="2 benchmark files but 1 rule"):
        usage.usage_table([_bench(tmp_path / "a.tsv", 1, 1, 1)] * 2, ["train"])
    (tmp_path / "bad.tsv").write_text("s\tfoo\n1\t2\n")
    with pytest.raises(contracts.DataError, match=r"bad\.tsv: missing column"):
        usage.usage_table([tmp_path / "bad.tsv"], ["train"])
