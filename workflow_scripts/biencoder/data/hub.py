"""A BEIR benchmark from a Hugging Face Hub dataset repository at a pinned commit (config
`source: hub`, `repo`, `revision`, `split`), written in the zip source's BEIR layout with
the same validation and data card (prepare_data.finish_beir).

The layout is MTEB's retrieval one, read as MTEB's loader reads it: the dataset card's
(README.md) YAML `configs:` name a `corpus` config (`_id` or `id`, `title`, `text`), a
`queries` config (`_id` or `id`, `text`) and the relevance judgments in `qrels` or, where
there is none, `default` (`query-id`, `corpus-id`, `score`; a missing score is 1 and a list
of corpus ids judges each, as NanoBEIR's judgments are). Each config's `data_files` maps a
split to paths or glob patterns of parquet, jsonl or tsv files. The judgments are those of
`split`; a corpus or queries config with one split serves every split, one with several is
read at `split` too (sentence-transformers/NanoBEIR-en: split NanoSciFact of each). A card
without `configs:` is read as a BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).

Downloads go through huggingface_hub (HF_ENDPOINT and HF_HUB_OFFLINE honoured) into its
cache under the download folder. The revision must be a commit (40 hex digits): a commit
pins its tree, and the tree pins every file by its hash, so the files need no checksums of
their own in the config. The commit's tree listing is recorded on the first run
(`<download dir>/<owner>--<name>@<revision>.json`: each file's size and LFS sha256, or git
blob sha1 for a file not in LFS) and every file read is checked against it, offline too.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from workflow_scripts.biencoder.data.prepare_data import finish_beir
from workflow_scripts.core import contracts
from workflow_scripts.core.download import DownloadError, file_digests

COMMIT = re.compile(r"[0-9a-f]{40}")
QRELS_CONFIGS = ("qrels", "default")  # NanoBEIR-en names it qrels, MTEB default


def record_path(download_dir, repo: str, revision: str) -> Path:
    return Path(download_dir) / f"{repo.replace('/', '--')}@{revision}.json"


def listing(repo: str, revision: str, download_dir, endpoint: str | None = None) -> dict:
    """{path: {"size", "sha256" (LFS) or "git_sha1"}} of the commit's files, from the record
    or, without one, from the Hub's tree listing (then recorded)."""
    record = record_path(download_dir, repo, revision)
    if record.exists():
        return json.loads(record.read_text(encoding="utf-8"))["files"]
    from huggingface_hub import HfApi

    try:
        tree = list(HfApi(endpoint=endpoint).list_repo_tree(
            repo, recursive=True, revision=revision, repo_type="dataset"))
    except Exception as e:  # noqa: BLE001 - huggingface_hub's many errors, named here
        raise DownloadError(f"dataset {repo}@{revision}: listing its files failed: "
                            f"{type(e).__name__}: {e}") from None
    files = {f.path: ({"size": f.size, "sha256": f.lfs.sha256} if f.lfs is not None
                      else {"size": f.size, "git_sha1": f.blob_id})
             for f in tree if hasattr(f, "blob_id")}
    contracts.write_json(record, {"repo": repo, "revision": revision, "files": files})
    return files


def git_blob_sha1(path) -> str:
    """`git hash-object` of a file: the id git (and the Hub's tree) gives its content."""
    h = hashlib.sha1(b"blob %d\0" % Path(path).stat().st_size)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def fetch_file(repo: str, revision: str, path: str, expected: dict, cache_dir,
               endpoint: str | None = None) -> Path:
    """One file of the commit through huggingface_hub's cache, checked against the tree's
    hash; a file that does not match is removed from the cache (a rerun downloads it
    again) and the download fails naming both hashes."""
    from huggingface_hub import hf_hub_download

    where = f"dataset {repo}@{revision}: {path}"
    try:
        local = Path(hf_hub_download(repo, path, repo_type="dataset", revision=revision,
                                     cache_dir=cache_dir, endpoint=endpoint))
    except Exception as e:  # noqa: BLE001 - huggingface_hub's many errors, named here
        raise DownloadError(f"{where}: download failed: {type(e).__name__}: {e}") from None
    kind = "sha256" if "sha256" in expected else "git_sha1"
    got = (file_digests(local, ["sha256"])["sha256"] if kind == "sha256"
           else git_blob_sha1(local))
    if got != expected[kind]:
        blob = Path(os.path.realpath(local))
        local.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)
        raise DownloadError(f"{where}: checksum mismatch: the commit's tree says {kind} "
                            f"{expected[kind]}, the file downloaded has {got} (removed from "
                            f"the cache {cache_dir})")
    return local


def card_configs(readme: str, where: str) -> dict[str, dict[str, list[str]]] | None:
    """{config name: {split: [path patterns]}} of a dataset card's YAML `configs:`; None
    for a card without them."""
    m = re.match(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", readme, re.S)
    try:
        meta = yaml.safe_load(m[1]) if m else None
    except yaml.YAMLError as e:
        raise contracts.DataError(f"{where}: the card's YAML header does not parse: {e}") \
            from None
    if not isinstance(meta, dict) or not meta.get("configs"):
        return None
    configs = {}
    for c in meta["configs"]:
        files = c.get("data_files", [])
        if isinstance(files, str):
            files = [files]
        splits = {}
        for f in files:
            split, paths = (f["split"], f["path"]) if isinstance(f, dict) else ("train", f)
            splits.setdefault(split, []).extend([paths] if isinstance(paths, str) else paths)
        configs[c["config_name"]] = splits
    return configs


def beir_configs(split: str) -> dict[str, dict[str, list[str]]]:
    """A card without `configs:`: the repository holds a BEIR folder."""
    return {"corpus": {"corpus": ["corpus.jsonl"]}, "queries": {"queries": ["queries.jsonl"]},
            "qrels": {split: [f"qrels/{split}.tsv"]}}


def pick_files(configs: dict, split: str, files, where: str) -> dict[str, list[str]]:
    """{corpus, queries, qrels: [paths in the repo]}: the configs' data files at `split`."""
    qrels = next((c for c in QRELS_CONFIGS if c in configs), None)
    picked = {}
    for role, name in (("corpus", "corpus"), ("queries", "queries"), ("qrels", qrels)):
        if name not in configs:
            raise contracts.DataError(f"{where}: the card has no {role} config (configs: "
                                      f"{sorted(configs)})")
        splits = configs[name]
        if split in splits:
            patterns = splits[split]
        elif len(splits) == 1 and role != "qrels":
            patterns = next(iter(splits.values()))
        else:
            raise contracts.DataError(f"{where}: config {name!r} has no split {split!r} "
                                      f"(its splits: {sorted(splits)}); set config key split")
        paths = sorted(f for f in files if any(fnmatch.fnmatchcase(f, p) for p in patterns))
        if not paths:
            raise contracts.DataError(f"{where}: no file of the commit matches config "
                                      f"{name!r} split's data files {patterns}")
        picked[role] = paths
    return picked


def read_table(local: Path, source: str) -> pd.DataFrame:
    """A data file by its suffix: parquet, jsonl (gzipped too) or tsv; every value kept as
    written (ids stay strings)."""
    name = source.lower()
    try:
        if name.endswith(".parquet"):
            return pd.read_parquet(local)
        if name.endswith((".jsonl", ".jsonl.gz", ".json")):
            return pd.read_json(local, lines=True, dtype=False)
        if name.endswith(".tsv"):
            return pd.read_csv(local, sep="\t", dtype=str, keep_default_na=False)
    except Exception as e:  # noqa: BLE001 - pyarrow's and pandas' parse errors, named here
        raise contracts.DataError(f"{source} ({local}): not a readable table: "
                                  f"{type(e).__name__}: {e}") from None
    raise contracts.DataError(f"{source}: unknown data file type (parquet, jsonl, tsv)")


def _column(df: pd.DataFrame, names: tuple[str, ...], source: str) -> pd.Series:
    for n in names:
        if n in df.columns:
            return df[n]
    raise contracts.DataError(f"{source}: no column {' or '.join(names)} (columns: "
                              f"{list(df.columns)})")


def _text(values) -> list[str]:
    return ["" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)
            for v in values]


def beir_rows(tables: dict[str, list[tuple[str, pd.DataFrame]]]):
    """(corpus rows, query rows, qrels rows) in BEIR's fields from each role's tables."""
    corpus, queries, qrels = [], [], []
    for source, df in tables["corpus"]:
        ids, texts = _column(df, ("_id", "id"), source), _column(df, ("text",), source)
        titles = df["title"] if "title" in df.columns else [""] * len(df)
        corpus += [{"_id": i, "title": t, "text": x}
                   for i, t, x in zip(_text(ids), _text(titles), _text(texts), strict=True)]
    for source, df in tables["queries"]:
        ids, texts = _column(df, ("_id", "id"), source), _column(df, ("text",), source)
        queries += [{"_id": i, "text": x}
                    for i, x in zip(_text(ids), _text(texts), strict=True)]
    for source, df in tables["qrels"]:
        qids, dids = (_column(df, ("query-id",), source), _column(df, ("corpus-id",), source))
        scores = df["score"] if "score" in df.columns else [1] * len(df)
        for q, d, s in zip(qids, dids, scores, strict=True):
            for doc in (d if isinstance(d, list | tuple | np.ndarray) else [d]):
                try:
                    qrels.append((str(q), str(doc), int(s)))
                except (TypeError, ValueError):
                    raise contracts.DataError(f"{source}: score {s!r} of query {q!r} is not "
                                              "an integer") from None
    return corpus, queries, qrels


def _write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_beir(out_dir, corpus, queries, qrels) -> None:
    """The BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv), whole or not at all."""
    with contracts.atomic_dir(out_dir) as tmp:
        _write_jsonl(tmp / "corpus.jsonl", corpus)
        _write_jsonl(tmp / "queries.jsonl", queries)
        (tmp / "qrels").mkdir()
        with open(tmp / "qrels" / "test.tsv", "w", encoding="utf-8", newline="") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            f.writelines(f"{q}\t{d}\t{s}\n" for q, d, s in qrels)


def prepare_hub(name: str, repo: str, revision: str, split: str, download_dir, out_dir, *,
                min_queries: int = 1, endpoint: str | None = None) -> dict:
    """Download the benchmark's files of `repo` at commit `revision` (judgments of `split`),
    check them, write the BEIR folder and its data card; returns the counts."""
    if not COMMIT.fullmatch(revision):
        raise DownloadError(f"dataset {repo}: revision {revision!r} is not a commit (40 hex "
                            "digits); a branch or tag may move")
    where = f"dataset {repo}@{revision}"
    files = listing(repo, revision, download_dir, endpoint)
    cache = Path(download_dir) / "cache"

    fetched = []

    def fetch(path):
        if path not in files:
            raise contracts.DataError(f"{where}: no file {path} in the commit")
        fetched.append(path)
        return fetch_file(repo, revision, path, files[path], cache, endpoint)

    configs = None
    if "README.md" in files:
        configs = card_configs(fetch("README.md").read_text(encoding="utf-8"),
                               f"{where}: README.md")
    picked = pick_files(configs or beir_configs(split), split, files, where)
    tables = {role: [(f"{where}: {p}", read_table(fetch(p), f"{where}: {p}")) for p in paths]
              for role, paths in picked.items()}
    write_beir(out_dir, *beir_rows(tables))
    from huggingface_hub import constants

    checks = {"repository": repo, "revision (commit)": revision, "split": split,
              "endpoint": endpoint or constants.ENDPOINT}
    for p in fetched:
        kind = "sha256" if "sha256" in files[p] else "git_sha1"
        checks[f"{kind} (commit's tree, checked) {p}"] = files[p][kind]
    origin = f"Downloaded from the Hugging Face Hub dataset `{repo}` at commit `{revision}`."
    return finish_beir(name, out_dir, origin, checks, min_queries)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="A BEIR benchmark from a Hub dataset repository.")
    ap.add_argument("--name", required=True)
    ap.add_argument("--repo", required=True, help="owner/name of the dataset repository")
    ap.add_argument("--revision", required=True, help="a commit: 40 hex digits")
    ap.add_argument("--split", default="test", help="the judgments' split")
    ap.add_argument("--min-queries", type=int, default=1,
                    help="fewest test queries with a judged document (eval.min_queries)")
    ap.add_argument("--download-dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    counts = prepare_hub(a.name, a.repo, a.revision, a.split, a.download_dir, a.out,
                         min_queries=a.min_queries)
    print(f"{a.out}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
