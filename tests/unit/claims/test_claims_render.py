"""claims/render: the report's "## Claims" section and the forest plot, on a synthetic table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workflow_scripts.claims import advice, forest, render

NAN, INF = math.nan, math.inf
BASE = {"part": 1, "study": "biencoder", "estimand": "difference", "threshold": NAN,
        "epsilon": NAN, "benchmark": "fiqa", "metric": "ndcg@10", "estimate": NAN,
        "ci_low": NAN, "ci_high": NAN, "ci": 0.95, "interval": "calibrated",
        "mb_ci_low": NAN, "mb_ci_high": NAN, "p_support": NAN, "p_refute": NAN,
        "p_support_holm": NAN, "p_refute_holm": NAN, "alpha": 0.025, "design": "paired",
        "resample": "seeds,examples", "caveats": "", "seeds_needed": NAN, "note": "",
        "n_members": 1}


def claim(cid, statement, members=(), **kw):
    """A claim row (deciding member's numbers) followed by its member rows."""
    first = {**BASE, "claim": cid, "statement": statement, "row": "claim",
             "member": members[0]["member"] if members else "", **kw,
             "n_members": max(len(members), 1)}
    rows = [first]
    for m in members:
        rows.append({**first, "row": "member", **m})
    return rows


def synthetic() -> pd.DataFrame:
    fam = [{"member": f"b32_80k/top{d} − b32_20k/top{d} [fiqa]", "estimate": e,
            "ci_low": e - 0.01, "ci_high": e + 0.01, "p_support_holm": p, "p_refute_holm": 0.9,
            "verdict": v}
           for d, e, p, v in ((12, 0.02, 0.001, "supported"), (6, 0.015, 0.004, "supported"),
                              (3, 0.004, 0.2, "inconclusive"))]
    fam[2]["caveats"] = "one seed | base"  # a pipe must be escaped in the members table
    rows = [
        *claim("budget-helps", "A longer budget improves NDCG@10 on fiqa at every depth",
               fam, member=fam[2]["member"], test="greater", threshold=0.0, estimate=0.004,
               ci_low=-0.006, ci_high=0.014, verdict="inconclusive", p_support_holm=0.2,
               p_refute_holm=0.9, seeds_needed=14.0, note="CI straddles 0"),
        *claim("ratio-drop", "Keeping 6 layers loses less than 10% of NDCG@10",
               [{"member": "top6 / top12 [fiqa]"}], estimand="ratio", test="less",
               threshold=1.0, estimate=1.2, ci_low=1.05, ci_high=INF, verdict="refuted",
               p_support_holm=0.99, p_refute_holm=0.003),
        *claim("depth-equiv", "Depth 10 and depth 12 are equivalent within 0.01",
               [{"member": "top10 − top12 [all]"}], test="equivalent", epsilon=0.01,
               estimate=0.001, ci_low=-0.004, ci_high=0.006, verdict="supported",
               p_support_holm=0.01, caveats="two seeds"),
        *claim("published", "MiniLM scores 0.35 on scifact as published",
               [{"member": "minilm [scifact]"}], study="ladder", estimand="mean",
               test="consistent", threshold=0.35, estimate=0.34, ci_low=0.32, ci_high=0.36,
               verdict="supported"),
        *claim("not-here", "Depth 2 beats the base", test="greater", threshold=0.0,
               verdict="not-applicable", note="no depth 2 in this config"),
        *claim("latency-ok", "Latency falls with depth as the ladder predicts",
               [{"member": "ladder"}], study="latency", estimand="latency_coherent",
               test="coherent", interval="bootstrap", verdict="supported"),
    ]
    return pd.DataFrame(rows)


def test_markdown_lists_every_claim_and_its_members():
    table = synthetic()
    md = render.markdown(table)
    assert md.startswith("## Claims\n")
    assert "6 claims: 3 supported, 1 refuted, 1 inconclusive, 1 not-applicable" in md
    claims = table[table.row == "claim"]
    for cid, statement in zip(claims.claim, claims.statement, strict=True):
        assert f"| {cid} | {statement} |" in md
    assert "**refuted**" in md and "**not-applicable**" in md
    assert "1.2000 [1.0500, ∞]" in md  # the unbounded ratio interval
    assert "> 0.0000" in md and "< 1.0000" in md and "\\|δ\\| < 0.0100" in md
    assert "= 0.3500 (published)" in md and "coherence checks" in md
    assert "0.0030 (refute)" in md
    assert "CI straddles 0" in md  # the note (decide.py writes the seed plan's sentence there)
    # ...and the rules say what a count promises (claims/advice.py), where a row has one
    assert advice.MEANING in md
    assert advice.MEANING not in render.markdown(table.assign(seeds_needed=float("nan")))
    assert "no depth 2 in this config" in md
    assert "<details><summary>budget-helps: members</summary>" in md
    assert md.count("<details>") == 1  # single-member claims have no members block
    assert "one seed \\| base" in md
    assert "| **inconclusive** | b32_80k/top3 − b32_20k/top3 [fiqa] |" in md  # the decider


def test_members_table_has_a_threshold_column():
    """A member's '0.0040 [-0.0060, 0.0140] inconclusive' reads against its threshold: the
    members table shows it beside the interval."""
    md = render.markdown(synthetic())
    block = md.split("<summary>budget-helps: members</summary>")[1].split("</details>")[0]
    header, _, *rows = [line for line in block.splitlines() if line.startswith("|")]
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert cols[:4] == ["member", "estimate [CI]", "CI", "threshold"]
    assert len(rows) == 3
    assert all(r.strip("|").split("|")[3].strip() == "> 0.0000" for r in rows)


def test_forest_plot_writes_deterministic_files(tmp_path):
    table = synthetic()
    outs = [tmp_path / "a" / "claims.png", tmp_path / "claims.pdf"]
    forest.forest_plot(table, [str(p) for p in outs])
    for p in outs:
        assert p.stat().st_size > 1000
    assert outs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert outs[1].read_bytes()[:5] == b"%PDF-"
    again = [tmp_path / "b.png", tmp_path / "b.pdf"]
    forest.forest_plot(table, [str(p) for p in again])
    assert again[0].read_bytes() == outs[0].read_bytes()
    assert again[1].read_bytes() == outs[1].read_bytes()
    assert not list(tmp_path.glob("**/*.tmp"))  # atomic writes leave no temporaries


@pytest.mark.parametrize("n", [1, 12])
def test_forest_figure_sizes(n):
    rows = []
    for i in range(n):
        rows += claim(f"claim-{i}", f"statement {i}", test="greater", threshold=0.0,
                      estimate=0.01 * i, ci_low=0.01 * i - 0.005, ci_high=0.01 * i + 0.005,
                      verdict=("supported", "refuted", "inconclusive", "not-applicable")[i % 4])
    fig = forest.forest_figure(pd.DataFrame(rows))
    assert len(fig.axes) == n
    assert fig.get_size_inches()[1] == pytest.approx(
        forest.HEADER_IN + forest.STRIP_IN * n + forest.FOOTER_IN)
    assert [ax.get_ylabel() for ax in fig.axes] == [f"claim-{i}" for i in range(n)]
    forest.plt.close(fig)


def test_cli_writes_markdown_and_figures(tmp_path, capsys):
    table_path = tmp_path / "claims.parquet"
    synthetic().to_parquet(table_path, index=False)
    md, png, svg = tmp_path / "claims.md", tmp_path / "f" / "claims.png", tmp_path / "c.svg"
    render.main(["--table", str(table_path), "--figure", str(png), str(svg),
                 "--markdown", str(md)])
    assert md.read_text(encoding="utf-8") == render.markdown(synthetic())
    assert png.stat().st_size > 1000 and "<svg" in svg.read_text(encoding="utf-8")
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        render.main(["--table", str(table_path)])
