"""Claims registered before their data: a claim's error rate holds only if it was stated
before its evaluations existed, so the workflow records each claim (its id, statement and a
fingerprint of its whole config entry) the first time a run starts, with whether any of its
input files already existed then. The claims stage reads that record: a claim whose entry
matches its current fingerprint and predates its data is `registered`; one added or edited
after its data existed, or missing from the record, is `post hoc` and shown so (its verdict
is not covered by the error rate).

The record (paths.CLAIMS_REGISTRY) only grows: an edited claim gets a new entry, the old one
moves to its history: a claim edited after its data stays post hoc, even edited back.
Pure functions plus read and write; rules/claims.smk calls `register` when a run starts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from workflow_scripts.core import contracts

REGISTERED, POST_HOC = "registered", "post hoc"


def fingerprint(claim: dict) -> str:
    """Hash of the claim's config entry (every key: statement, arms, test, threshold ...)."""
    text = json.dumps(claim, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def update(record: dict, claims: Iterable[dict], has_data: Callable[[dict], bool],
           now: str) -> tuple[dict, list[str]]:
    """The record with an entry for every claim it lacks or whose fingerprint changed
    (before_data: has_data(claim) is false now), and one line per new entry."""
    entries = {k: dict(v) for k, v in record.get("claims", {}).items()}
    said = []
    for claim in claims:
        fp, old = fingerprint(claim), entries.get(claim["id"])
        if old is not None and old["fingerprint"] == fp:
            continue
        before = not has_data(claim)
        history = [*old.get("history", []), {k: old[k] for k in ("fingerprint", "statement",
                   "registered_at", "before_data")}] if old else []
        entries[claim["id"]] = {"fingerprint": fp, "statement": claim.get("statement", ""),
                                "registered_at": now, "before_data": before,
                                "history": history}
        what = "edited" if old else "new"
        said.append(f"claims: {what} claim {claim['id']!r} registered "
                    + ("before its data" if before else
                       "after its data existed: it will be decided as post hoc"))
    return {"claims": entries}, said


def status(record: dict, claim: dict) -> str:
    """registered: recorded with this fingerprint before any of its data existed."""
    entry = record.get("claims", {}).get(claim["id"])
    ok = entry is not None and entry["fingerprint"] == fingerprint(claim) and entry["before_data"]
    return REGISTERED if ok else POST_HOC


def read(path) -> dict:
    """The record, or an empty one where there is none yet."""
    path = Path(path)
    if not path.exists():
        return {"claims": {}}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise contracts.DataError(f"{path}: not valid JSON ({e}); it records when each claim "
                                  "was registered, so it is not rewritten") from e
    if not isinstance(record.get("claims"), dict):
        raise contracts.DataError(f"{path}: no 'claims' mapping")
    return record


def register_study(path, claims: Iterable[dict], parsed, results, grid) -> None:
    """`register` for a workflow run: a claim has data when any of its input files
    (claims/layout.py, from its parsed form in `parsed`) exists; the new entries' lines go
    to stderr."""
    import sys

    from workflow_scripts.claims.layout import input_files

    by_id = {c.id: c for c in parsed}

    def has_data(entry: dict) -> bool:
        return any(Path(p).exists() for p in input_files(results, grid, [by_id[entry["id"]]]))

    for line in register(path, claims, has_data):
        print(line, file=sys.stderr)


def register(path, claims: Iterable[dict], has_data: Callable[[dict], bool]) -> list[str]:
    """Add the claims the record at `path` lacks (written atomically); their lines."""
    record, said = update(read(path), claims, has_data,
                          datetime.now(UTC).isoformat(timespec="seconds"))
    if said:
        contracts.write_json(path, record)
    return said
