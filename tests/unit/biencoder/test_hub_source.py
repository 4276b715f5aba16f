"""Issue #59's Hub source (biencoder/data/hub.py) against the local server answering as the
Hub (local_http.put_hub_dataset): MTEB's and NanoBEIR-en's layouts give the zip's benchmark
and its per-query metrics; a cut transfer resumes; a file that does not match the commit's
tree, a corrupt parquet file and a kill while writing leave no benchmark behind; a rerun
needs no network."""

from __future__ import annotations

import copy
import hashlib
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from beir_fixtures import hub_files, make_beir_zip, md5
from conftest import ROOT
from local_http import git_blob_sha1

from workflow_scripts.biencoder.data import hub, prepare_data
from workflow_scripts.core import contracts
from workflow_scripts.core.download import DownloadError
from workflow_scripts.study_config import check_config

REPO, REV = "mteb/scifact", "d56462d0e63a25450459c4f213e49ffdb866f7f9"
ZIP = make_beir_zip("scifact", docs=40, test_queries=12, train_queries=4)
CORPUS = "corpus/corpus-00000-of-00001.parquet"


def _hub(server, tmp_path, repo=REPO, split="test", **kw):
    return hub.prepare_hub("scifact", repo, REV, split, tmp_path / "dl", tmp_path / "out",
                           endpoint=server.base, **kw)


def _resolve(path, repo=REPO):
    return f"/datasets/{repo}/resolve/{REV}/{path}"


def test_the_server_answers_as_the_hub(http_server):
    """huggingface_hub's own metadata call reads the commit, LFS sha256 and size."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    files = hub_files(ZIP, "scifact")
    http_server.put_hub_dataset(REPO, REV, files)
    for path in (CORPUS, "README.md"):
        meta = get_hf_file_metadata(hf_hub_url(REPO, path, repo_type="dataset", revision=REV,
                                               endpoint=http_server.base))
        sha = (hashlib.sha256(files[path]).hexdigest() if path.endswith(".parquet")
               else git_blob_sha1(files[path]))
        assert (meta.commit_hash, meta.etag, meta.size) == (REV, sha, len(files[path]))


@pytest.mark.parametrize("nano", [None, "NanoSciFact"])
def test_hub_and_zip_give_the_same_benchmark_and_metrics(http_server, tmp_path, tiny_model,
                                                         nano):
    from workflow_scripts.biencoder.evaluate import evaluate_depths

    http_server.put_hub_dataset(REPO, REV, hub_files(ZIP, "scifact", nano=nano))
    counts = _hub(http_server, tmp_path, split=nano or "test")
    url = http_server.put("scifact.zip", ZIP)
    prepare_data.prepare_beir("scifact", url, md5(ZIP), tmp_path / "zdl", tmp_path / "zip")
    assert contracts.load_beir(tmp_path / "out") == contracts.load_beir(tmp_path / "zip")
    assert counts["test queries"] == 12 and counts["corpus documents"] == 40
    card = (tmp_path / "out" / "DATACARD.md").read_text()
    assert f"`{REPO}` at commit `{REV}`" in card and "| sha256 written corpus.jsonl |" in card
    assert f"| endpoint | {http_server.base} |" in card
    assert f"(commit's tree, checked) {CORPUS if not nano else 'qrels/'}" in card
    frames = [evaluate_depths(str(tiny_model), [1, 3], tmp_path / d, max_seq_length=32)[0]
              for d in ("out", "zip")]
    for depth in (1, 3):
        pd.testing.assert_frame_equal(frames[0][depth], frames[1][depth])
        assert len(frames[0][depth]) == 12


def test_a_cut_transfer_is_asked_again(http_server, tmp_path, monkeypatch):
    from huggingface_hub import file_download

    monkeypatch.setattr(file_download.time, "sleep", lambda s: None)  # its 1 s before a retry
    routes = http_server.put_hub_dataset(REPO, REV, hub_files(ZIP, "scifact"))
    routes[CORPUS].truncate_first = True
    _hub(http_server, tmp_path)
    # huggingface_hub asks again (from the last whole chunk it kept: here the start)
    assert http_server.hits[_resolve(CORPUS)] == 2
    assert len(contracts.load_beir(tmp_path / "out")[0]) == 40


def test_a_file_unlike_the_commits_tree_fails_and_is_downloaded_again(http_server, tmp_path):
    routes = http_server.put_hub_dataset(REPO, REV, hub_files(ZIP, "scifact"))
    good = routes[CORPUS].body
    routes[CORPUS].body = good[:-1] + bytes([good[-1] ^ 1])  # same size, one bit off
    with pytest.raises(DownloadError, match=f"{REPO}@{REV}: {CORPUS}: checksum mismatch: "
                       "the commit's tree says sha256 "):
        _hub(http_server, tmp_path)
    assert not (tmp_path / "out").exists()
    routes[CORPUS].body = good
    _hub(http_server, tmp_path)  # the bad copy left the cache: downloaded again
    assert http_server.hits[_resolve(CORPUS)] == 2


def test_a_corrupt_parquet_file_names_itself(http_server, tmp_path):
    files = hub_files(ZIP, "scifact")
    files[CORPUS] = b"PAR1 not a parquet file"
    http_server.put_hub_dataset(REPO, REV, files)
    with pytest.raises(contracts.DataError, match=f"{REPO}@{REV}: {CORPUS} .*not a readable "
                       "table"):
        _hub(http_server, tmp_path)
    assert not (tmp_path / "out").exists()


def test_the_split_and_revision_are_checked(http_server, tmp_path):
    http_server.put_hub_dataset(REPO, REV, hub_files(ZIP, "scifact"))
    with pytest.raises(contracts.DataError, match="config 'default' has no split 'dev' "
                       r"\(its splits: \['test'\]\); set config key split"):
        _hub(http_server, tmp_path, split="dev")
    with pytest.raises(DownloadError, match="revision 'main' is not a commit"):
        hub.prepare_hub("scifact", REPO, "main", "test", tmp_path / "dl", tmp_path / "out")


KILL = """
import os, signal, sys
from workflow_scripts.biencoder.data import hub
write = hub._write_jsonl
def dying(path, rows):
    if path.name == "queries.jsonl":
        path.write_text("{\\"_id\\": ")  # a half-written line, then SIGKILL
        os.kill(os.getpid(), signal.SIGKILL)
    write(path, rows)
hub._write_jsonl = dying
hub.prepare_hub("scifact", sys.argv[1], sys.argv[2], "test", sys.argv[3], sys.argv[4])
"""


@pytest.mark.workflow  # two Python processes: seconds
def test_a_kill_mid_write_leaves_no_benchmark_and_the_rerun_needs_no_network(http_server,
                                                                             tmp_path):
    http_server.put_hub_dataset(REPO, REV, hub_files(ZIP, "scifact"))
    env = {**os.environ, "HF_ENDPOINT": http_server.base, "PYTHONPATH": str(ROOT)}
    args = [REPO, REV, str(tmp_path / "dl"), str(tmp_path / "out")]
    proc = subprocess.run([sys.executable, "-c", KILL, *args], env=env, cwd=ROOT)
    assert proc.returncode == -9 and not (tmp_path / "out").exists()
    served = len(http_server.requests)
    # Offline, and nothing listens: the record and the cache serve the rerun.
    env |= {"HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
    subprocess.run([sys.executable, "-c", KILL.replace("hub._write_jsonl = dying", ""), *args],
                   env=env, cwd=ROOT, check=True)
    assert len(http_server.requests) == served
    assert len(contracts.load_beir(tmp_path / "out")[1]) == 12


LAPTOP = yaml.safe_load((ROOT / "config/laptop.yaml").read_text())


@pytest.mark.parametrize("spec, message", [
    ({"source": "hub", "repo": REPO}, "datasets.scifact: a hub benchmark needs revision"),
    ({"source": "hub", "repo": REPO, "revision": REV, "url": "https://x/s.zip"},
     "datasets.scifact: a hub dataset is pinned by repo and revision"),
    ({"source": "beir", "url": "https://x/s.zip", "md5": "0" * 32, "split": "test"},
     "datasets.scifact.split: only a hub dataset reads a repository"),
    ({"source": "hub", "repo": REPO, "revision": "main"},
     "datasets.scifact.revision: 'main' does not match"),
])
def test_hub_config_errors_name_the_key(spec, message):
    config = copy.deepcopy(LAPTOP)
    config["datasets"]["scifact"] = spec
    with pytest.raises(ValueError, match="config key " + message):
        check_config(config)
    config["datasets"]["scifact"] = {"source": "hub", "repo": REPO, "revision": REV}
    check_config(config)


def test_card_configs_and_rows_in_the_layouts_mteb_reads():
    card = ("---\nconfigs:\n- config_name: corpus\n  data_files: corpus.parquet\n"
            "- config_name: queries\n  data_files:\n  - split: dev\n    path: [q/a-*, q/b-*]\n"
            "  - split: test\n    path: q/t.parquet\n- config_name: default\n"
            "  data_files:\n  - split: test\n    path: qrels/test.jsonl\n  - split: dev\n"
            "    path: qrels/dev.tsv\n---\n# card\n")
    configs = hub.card_configs(card, "card")
    assert configs == {"corpus": {"train": ["corpus.parquet"]},
                       "queries": {"dev": ["q/a-*", "q/b-*"], "test": ["q/t.parquet"]},
                       "default": {"test": ["qrels/test.jsonl"], "dev": ["qrels/dev.tsv"]}}
    files = ["corpus.parquet", "q/a-0.parquet", "q/b-0.parquet", "q/t.parquet",
             "qrels/test.jsonl", "qrels/dev.tsv"]
    assert hub.pick_files(configs, "dev", files, "w") == {
        "corpus": ["corpus.parquet"], "queries": ["q/a-0.parquet", "q/b-0.parquet"],
        "qrels": ["qrels/dev.tsv"]}
    assert hub.pick_files(configs, "test", files, "w") == {
        "corpus": ["corpus.parquet"], "queries": ["q/t.parquet"], "qrels": ["qrels/test.jsonl"]}
    assert hub.card_configs("# no header\n", "card") is None
    # `id` columns, integer ids, a list of judged documents without a score
    corpus, queries, qrels = hub.beir_rows({
        "corpus": [("c", pd.DataFrame({"id": [1, 2], "text": ["a", None]}))],
        "queries": [("q", pd.DataFrame({"id": [7], "text": ["x"]}))],
        "qrels": [("r", pd.DataFrame({"query-id": [7], "corpus-id": [[1, 2]]}))]})
    assert corpus == [{"_id": "1", "title": "", "text": "a"}, {"_id": "2", "title": "",
                                                               "text": ""}]
    assert queries == [{"_id": "7", "text": "x"}] and qrels == [("7", "1", 1), ("7", "2", 1)]
    with pytest.raises(contracts.DataError, match="c: no column _id or id"):
        hub.beir_rows({"corpus": [("c", pd.DataFrame({"text": ["a"]}))], "queries": [],
                       "qrels": []})
