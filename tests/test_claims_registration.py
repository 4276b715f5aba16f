"""Claims registered before their data (claims/registration.py): the record a run writes
when it starts, and the status the claims stage reads from it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from workflow_scripts.claims import registration as reg
from workflow_scripts.claims import render
from workflow_scripts.core import contracts

A = {"id": "a", "statement": "L1 matches L2", "pairs": {"depth": "all"}, "test": "equivalent",
     "epsilon": 0.01}
B = {"id": "b", "statement": "long degrades", "a": {"recipe": "short"},
     "b": {"recipe": "long"}, "test": "less"}


def test_registered_before_the_data_and_post_hoc_after():
    record, said = reg.update({}, [A], has_data=lambda c: False, now="t0")
    assert said == ["claims: new claim 'a' registered before its data"]
    assert reg.status(record, A) == reg.REGISTERED
    # B added once the data existed; A untouched keeps its entry
    record, said = reg.update(record, [A, B], has_data=lambda c: True, now="t1")
    assert said == ["claims: new claim 'b' registered after its data existed: it will be "
                    "decided as post hoc"]
    assert reg.status(record, A) == reg.REGISTERED and reg.status(record, B) == reg.POST_HOC
    assert record["claims"]["a"]["registered_at"] == "t0"


def test_an_edit_after_the_data_is_post_hoc_even_edited_back():
    record, _ = reg.update({}, [A], has_data=lambda c: False, now="t0")
    edited = {**A, "epsilon": 0.02}
    assert reg.status(record, edited) == reg.POST_HOC  # not the registered claim
    record, said = reg.update(record, [edited], has_data=lambda c: True, now="t1")
    assert said[0].startswith("claims: edited claim 'a' registered after its data")
    assert [h["registered_at"] for h in record["claims"]["a"]["history"]] == ["t0"]
    record, _ = reg.update(record, [A], has_data=lambda c: True, now="t2")
    assert reg.status(record, A) == reg.POST_HOC  # chosen again after seeing the data
    assert len(record["claims"]["a"]["history"]) == 2


def test_a_claim_missing_from_the_record_is_post_hoc():
    assert reg.status({"claims": {}}, A) == reg.POST_HOC


def test_register_writes_once_and_a_broken_record_names_its_file(tmp_path):
    path = tmp_path / "results" / "claims_registration.json"
    assert reg.register(path, [A], lambda c: False)
    stamp = path.stat().st_mtime_ns
    assert reg.register(path, [A], lambda c: True) == []  # nothing new: not rewritten
    assert path.stat().st_mtime_ns == stamp
    assert reg.status(reg.read(path), A) == reg.REGISTERED
    path.write_text("{not json")
    with pytest.raises(contracts.DataError, match="claims_registration.json: not valid JSON"):
        reg.register(path, [A], lambda c: False)
    assert path.read_text() == "{not json"  # left as it was
    path.write_text(json.dumps({"other": 1}))
    with pytest.raises(contracts.DataError, match="no 'claims' mapping"):
        reg.read(path)


def test_the_report_says_which_claims_are_post_hoc():
    base = {"row": "claim", "statement": "s", "member": "", "test": "greater",
            "threshold": 0.0, "epsilon": float("nan"), "estimate": 0.1, "ci_low": 0.05,
            "ci_high": 0.15, "ci": 0.95, "interval": "calibrated", "verdict": "supported",
            "p_support_holm": 0.001, "p_refute_holm": 0.9, "seeds_needed": float("nan"),
            "alpha": 0.025, "caveats": "", "note": ""}
    table = pd.DataFrame([{**base, "claim": "a", "registration": reg.REGISTERED},
                          {**base, "claim": "b", "registration": reg.POST_HOC}])
    md = render.markdown(table)
    assert "Registered before their data: 1 of 2 decided claims" in md
    assert "not covered by the error rate): b." in md
    rows = [line for line in md.splitlines() if line.startswith(("| a |", "| b |"))]
    assert "| **supported** |" in rows[0] and "| **supported** (post hoc) |" in rows[1]
