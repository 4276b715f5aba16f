"""The numbers docs/ladder.md, docs/methods.md and docs/adaptive_seeds.md quote from the
default study, made from a finished run's results folder, and checked against the docs.

    .venv/bin/python bench/doc_numbers.py [--results DIR]          # print them
    .venv/bin/python bench/doc_numbers.py [--results DIR] --check  # exit 1 if a doc differs
    .venv/bin/python bench/doc_numbers.py [--results DIR] --write  # rewrite marked blocks

ladder and statistics (`--part`): `make study`'s results (about 5 minutes of a quiet 2-core
machine), in results/default. adaptive: the outcome of the looks of the adaptive_demo study
(config/adaptive_demo.yaml stacked on the default; its own folder, so the look plan is
registered before its data), from results/adaptive_demo's claims_looks.parquet, look
documents and registration; it is the
whole block between docs/adaptive_seeds.md's `<!-- doc_numbers: adaptive-outcome -->` and
`<!-- /doc_numbers -->`, compared exactly and replaced by --write. Not a test: the test suite
runs none of these studies (tests/docs/test_doc_numbers.py checks the formatter on synthetic
looks).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the project's modules from its root
    sys.path.insert(0, str(ROOT))

from workflow_scripts.claims import registration  # noqa: E402
from workflow_scripts.claims.looks import pending  # noqa: E402
from workflow_scripts.core import contracts, notation, paths  # noqa: E402

BLOCK = "<!-- doc_numbers: {name} -->\n{body}\n<!-- /doc_numbers -->"


def signed(x: float) -> str:
    return f"{'+' if x >= 0 else '−'}{abs(x):.3f}"


def ladder_rows(results: Path) -> list[str]:
    """docs/ladder.md's table rows: mean test accuracy at each k and Δ(k=L − k=0) with its CI."""
    table = pd.read_parquet(results / "ladder/table.parquet")
    comp = pd.read_parquet(results / "ladder/comparisons.parquet")
    width = int(table["k"].max()) + 1
    rows = []
    for (config, method), g in table.groupby(["config", "method"], sort=False):
        means = [f"{g.loc[g['k'] == k, 'mean'].iloc[0]:.3f}" if k in set(g["k"]) else ""
                 for k in range(width)]
        full = comp[(comp["config"] == config) & (comp["method"] == method) & comp["full"]]
        d = full.iloc[0]
        rows.append(f"| {config} | {method.upper()} | {' | '.join(means)} | "
                    f"{signed(d['estimate'])} [{signed(d['ci_low'])}, {signed(d['ci_high'])}] |")
    return rows


def seeds_sentence(results: Path) -> str:
    """docs/methods.md's seeds per arm to detect detect_delta: over the arm and benchmark
    cells with a comparison partner, how many no seed count reaches, the others' range, and
    the arm x query interaction's sd that decides it."""
    d = pd.read_parquet(results / "stats/seeds_needed.parquet")
    d = d[d["delta_versus"] != ""]
    s, sd = d["seeds_for_delta"].dropna(), d["arm_example_sd"]
    others = (f"; the others take {int(s.min())} to {int(s.max())} seeds per arm (median "
              f"{int(s.median())})" if len(s) else "")
    return (f"out of reach in {len(d) - len(s)} of {len(d)} arm and benchmark cells (the arm "
            f"× query interaction's sd {sd.min():.2f}–{sd.max():.2f}){others}")


def _in(results: Path, path: str) -> Path:
    """A study's path (core/paths.py, relative to a results folder) in the folder `results`."""
    return results / path


def _p(p) -> str:
    return notation.MISSING if p is None or not math.isfinite(p) else f"{p:.2g}"


def look_cell(rows: pd.DataFrame) -> str:
    """One claim at one look: its verdict there, the member that decided it (a refuted one,
    else the weakest: the largest p_support, as claims.md's looks table), its δ and interval,
    the p against the look's boundary, and what the look did with it."""
    verdict, status = rows["claim_verdict"].iloc[0], rows["status"].iloc[0]
    if verdict == "refuted":
        m = rows.loc[rows["p_refute"].fillna(2.0).idxmin()]
    else:
        m = rows.loc[rows["p_support"].fillna(-1.0).idxmax()]
    member = (f"{'member' if verdict == 'refuted' else 'weakest member'} {m['member']}, "
              if len(rows) > 1 else "")
    delta = f"δ {notation.interval(m['estimate'], m['ci_low'], m['ci_high'])}"
    b = f"{m['boundary']:.3g}"
    if verdict == "supported":
        return f"**supported**: {member}{delta}, p_support {_p(m['p_support'])} ≤ {b}"
    if verdict == "refuted":
        return f"**refuted**: {member}{delta}, p_refute {_p(m['p_refute'])} ≤ {b}"
    then = {"open": "open", "examples limit": "the examples limit it, no seeds",
            "budget spent": "the budget is spent"}.get(status, f"{status}, no seeds")
    return (f"{verdict}: {member}{delta}, p_support {_p(m['p_support'])}, p_refute "
            f"{_p(m['p_refute'])} > {b}: {then}")


def adaptive_outcome(results: Path) -> str:
    """docs/adaptive_seeds.md's outcome block: the plan and whether it was registered
    before its data, one row per driving claim with a cell per planned look, and what the
    looks spent."""
    table_path = _in(results, paths.LOOKS_TABLE)
    if not table_path.exists():
        raise contracts.DataError(f"{table_path}: missing; the adaptive part needs the default "
                                  "study run with config/adaptive_demo.yaml (or leave it out: "
                                  "--part ladder statistics)")
    table = contracts.read_parquet(table_path)

    def read(k: int):
        path = _in(results, paths.LOOK.format(k=k))
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    docs = pending.chain(read)
    if not docs or not docs[-1]["stop"]:
        raise contracts.DataError(f"{_in(results, paths.LOOK.format(k=len(docs)))}: missing; "
                                  "the looks have not finished")
    last = docs[-1]
    plan = {"claims": list(last["claims"]), **last["plan"]}
    seeds = plan["seeds"]
    record = registration.read(_in(results, paths.CLAIMS_REGISTRY))
    if registration.plan_status(record, plan) == registration.REGISTERED:
        said = (f"registered before its driving claims' data "
                f"({record['looks']['registered_at']}), so the {seeds[0]}-seed report is "
                f"look 0, decided at {plan['alphas'][0]:.3g}")
    else:
        said = ("**post hoc**: not registered before its driving claims' data (their "
                "verdicts are not covered by the error rate; claims.md says why)")
    head = f"Look plan: {registration.describe_plan(plan)}; {said}."
    rows = []
    for cid in last["claims"]:
        cells = []
        for k in range(len(seeds)):
            at = table[(table["look"] == k) & (table["claim"] == cid)]
            cells.append(look_cell(at) if len(at) else "—")
        rows.append([cid, *cells])
    columns = ["claim", *(f"look {k} ({n} seeds)" for k, n in enumerate(seeds))]
    ran, top = len(docs), seeds[len(docs) - 1]
    arms = sorted({f"{r}/{s}{d}" for doc in docs for r, s, d, _ in doc["next"]})
    added = sorted({x for doc in docs for *_, got in doc["next"] for x in got[seeds[0]:]})
    spent = (f"{ran} of {len(seeds)} looks ran: up to {top} of the {plan['max_seeds']} "
             "budgeted seeds per arm; "
             + (f"seeds {', '.join(map(str, added))} added only to {', '.join(arms)}."
                if arms else "no seeds added."))
    return "\n\n".join([head, notation.pipe_table(rows, columns), spent])


def doc_block(text: str, name: str) -> str | None:
    """The marked block `name` of a doc's text (markers included), or None."""
    start = BLOCK.split("{body}")[0].format(name=name)
    i = text.find(start)
    j = text.find("<!-- /doc_numbers -->", i)
    return None if i < 0 or j < 0 else text[i:j + len("<!-- /doc_numbers -->")]


PARTS = ("ladder", "statistics", "adaptive")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, help="the study's results folder (default: "
                    "results/default; the adaptive part's results/adaptive_demo)")
    ap.add_argument("--part", nargs="+", choices=PARTS, default=list(PARTS))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true",
                      help="replace each doc's marked blocks with the run's (docs/*.md)")
    a = ap.parse_args()
    default, demo = (a.results or ROOT / paths.Study(name).results
                     for name in ("default", "adaptive_demo"))
    try:
        want = {"ladder": ("docs/ladder.md", lambda: ladder_rows(default), None),
                "statistics": ("docs/methods.md", lambda: [seeds_sentence(default)], None),
                "adaptive": ("docs/adaptive_seeds.md",
                             lambda: [adaptive_outcome(demo)], "adaptive-outcome")}
        pieces = [(doc, name, piece) for part in a.part
                  for doc, make, name in [want[part]] for piece in make()]
    except contracts.DataError as e:
        sys.exit(f"error: {e}")
    bad = 0
    for doc, name, piece in pieces:
        text = (ROOT / doc).read_text(encoding="utf-8")
        if name is None:
            ok = piece in text
        else:
            found, piece = doc_block(text, name), BLOCK.format(name=name, body=piece)
            if found is None:
                sys.exit(f"error: {doc}: no block marked <!-- doc_numbers: {name} --> ... "
                         "<!-- /doc_numbers -->")
            ok = found == piece
            if a.write and not ok:
                contracts.write_text(ROOT / doc, text.replace(found, piece))
                print(f"{doc}: rewrote its {name} block")
                continue
        bad += not ok
        if not a.check or not ok:
            print(f"{doc}: {'ok' if ok else 'MISSING'}: {piece}")
    if a.check:
        print(f"{len(pieces) - bad} of {len(pieces)} quoted numbers match the run")
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
