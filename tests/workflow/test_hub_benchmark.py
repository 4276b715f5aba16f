"""Issue #59: the same benchmark from a BEIR zip and from a Hub dataset repository (MTEB's
parquet layout, served by the local server as the Hub, HF_ENDPOINT) gives identical
per-query files: the untrained base's at every depth and embedding dimension, each a
Snakemake run of the tiny study."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from beir_fixtures import hub_files, make_beir_zip, md5
from conftest import copy_workflow, snakemake

REPO, REV = "mteb/scifact", "d56462d0e63a25450459c4f213e49ffdb866f7f9"


@pytest.mark.workflow
def test_zip_and_hub_give_identical_per_query_files(tiny_model, http_server, tmp_path):
    from tiny_study import tiny_config

    data = make_beir_zip("scifact", docs=60, test_queries=14, train_queries=0)
    url = http_server.put("scifact.zip", data)
    http_server.put_hub_dataset(REPO, REV, hub_files(data, "scifact"))
    sources = {"zip": {"source": "beir", "url": url, "md5": md5(data)},
               "hub": {"source": "hub", "repo": REPO, "revision": REV}}
    config = tiny_config(tiny_model)
    dims = config["eval"]["dims"]
    targets = [f"results/default/eval/base/top{d}/{sub}scifact.parquet"
               for d in config["depths"] for sub in ["", *(f"dim{n}/" for n in dims)]]
    tables = {}
    for name, spec in sources.items():
        wd = copy_workflow(tmp_path / name)
        cfg = {**config, "benchmarks": ["scifact"],
               "datasets": {**config["datasets"], "scifact": spec}}
        (wd / "c.yaml").write_text(yaml.safe_dump(cfg))
        snakemake(wd, "--configfile", str(wd / "c.yaml"), "--cores", "1", *targets,
                  env={"HF_ENDPOINT": http_server.base})
        tables[name] = [pd.read_parquet(wd / t) for t in targets]
    rows = 0
    for zipped, hubbed in zip(tables["zip"], tables["hub"], strict=True):
        pd.testing.assert_frame_equal(zipped, hubbed)
        rows += len(zipped)
    print(f"\n{len(targets)} per-query files, {rows} rows: identical from the zip and the Hub")
    assert rows == 14 * len(targets)
