"""The ladder's figure (accuracy vs k, CI bands, one panel per config) and its markdown
summary (the fragment the report rule pastes into results/<study>/RESULTS.md).

Accuracy is a fraction (0.904), as in the claims and the rest of the report
(core/notation.py).

CLI: python -m workflow_scripts.ladder.report figure --table T.parquet --out F.png [F.pdf ...]
     python -m workflow_scripts.ladder.report summary --table T --comparisons C \
        --crosscheck X --identity I.json --out summary.md
"""

from __future__ import annotations

import argparse
import json

import pandas as pd

from workflow_scripts.core import notation
from workflow_scripts.core.contracts import (
    WHY_THEY_DIFFER,
    ci_level,
    interval_name,
    read_parquet,
    shows_reference,
    write_figure,
    write_text,
)

LABELS = {"bp": "BP", "fa": "FA", "dfa": "DFA"}
COLORS = {"bp": "C0", "fa": "C1", "dfa": "C2"}


def figure(table: pd.DataFrame, outs) -> None:
    """Draw the ladder and save it to every path in `outs` (format from the suffix)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = list(dict.fromkeys(table.config))
    height = 3.9  # 0.5 in below the panels for the legend, off the bands
    fig, axes = plt.subplots(1, len(configs), figsize=(4.2 * len(configs), height),
                             squeeze=False, sharey=True)
    for ax, config in zip(axes[0], configs, strict=True):
        sub = table[table.config == config]
        for method, g in sub.groupby("method", sort=False):
            g = g.sort_values("k")
            c = COLORS.get(method)
            ax.plot(g.k, g["mean"], "o-", color=c, label=LABELS.get(method, method))
            ax.fill_between(g.k, g.ci_low, g.ci_high, color=c, alpha=0.2, linewidth=0)
        blocks = int(sub.blocks.iloc[0])
        ax.set(title=f"{config} (L={blocks})", xlabel="trainable top blocks k",
               xticks=range(blocks + 1))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("test accuracy")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(f"Depth ladder: mean over seeds, {ci_level(table)} {interval_name(table)} CI",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.5 / height, 1, 1))
    write_figure(fig, outs)


def _num(x) -> str:
    return notation.num(x, 4)


_ci = notation.ci_cell


def _md(df: pd.DataFrame) -> str:
    return notation.pipe_table(df.itertuples(index=False), list(df.columns))


def summary(table, comps, cross, identity: dict) -> str:
    ci = ci_level(table)
    nboot = int(table.nboot.iloc[0])
    t = pd.DataFrame({
        "config": table.config, "method": table.method.map(LABELS), "k": table.k,
        "accuracy (mean ± std)": [f"{_num(m)} ± {_num(s)}" for m, s in
                                  zip(table["mean"], table["std"], strict=True)],
        f"{ci} {interval_name(table)} CI": [
            _ci(lo, hi) for lo, hi in zip(table.ci_low, table.ci_high, strict=True)],
        "Multi-Bootstrap": [_ci(lo, hi) for lo, hi in
                            zip(table.mb_ci_low, table.mb_ci_high, strict=True)],
        "train accuracy": table.train_accuracy.map(_num), "seeds": table.n_seeds,
    })
    c = pd.DataFrame({
        "config": comps.config, "method": comps.method.map(LABELS),
        "contrast": [f"**{x}** (k=L)" if f else x for x, f in
                     zip(comps.contrast, comps.full, strict=True)],
        "Δ accuracy": comps.estimate.map(_num),
        f"{ci} {interval_name(comps)} CI": [
            _ci(lo, hi) for lo, hi in zip(comps.ci_low, comps.ci_high, strict=True)],
        "p (Δ ≤ 0)": comps.p_value.map(_num),
        "Multi-Bootstrap": [_ci(lo, hi) for lo, hi in
                            zip(comps.mb_ci_low, comps.mb_ci_high, strict=True)],
    })
    if not shows_reference(table):  # the main interval is the Multi-Bootstrap already
        t, c = t.drop(columns="Multi-Bootstrap"), c.drop(columns="Multi-Bootstrap")
    parts = [
        "## Depth ladder",
        "",
        "Last k of L residual blocks trainable (the rest frozen at random init; embedding, "
        "out_ln and out_head always trained). Test accuracy (a fraction), mean ± std (ddof 1) over "
        f"seeds; CIs are {ci} {interval_name(table)} intervals over seeds × test examples"
        + (", with the Multi-Bootstrap percentile interval "
           f"({nboot} draws) beside them. {WHY_THEY_DIFFER}" if shows_reference(table) else
           f" ({nboot} draws).") + " Design choices: docs/ladder.md.",
        "", "### Accuracy by k", "", _md(t), "",
        "### Paired comparisons against k = 0 (paired by seed and test example)", "",
        f"Δ = acc(k) − acc(0); p is the one-sided {interval_name(comps)} p-value of Δ ≤ 0.",
        "", _md(c), "",
        "### Frozen-stack identity check", "",
        "Per block ‖f_l(h_l)‖/‖h_l‖ and, for the whole frozen stack, ‖h_L − h_0‖/‖h_0‖ and "
        "cos(h_L, h_0) on the test inputs, averaged over examples, mean ± std over seeds; "
        "*init* = the model at initialization, *trained emb.* = the same frozen blocks on "
        "the embedding a k = 0 run learned.", "", _md(identity_table(identity)), "",
        "### Cross-check against standalone training (BP)", "",
        "*frozen* = ordinary training of embedding + out_ln + out_head with every block "
        "frozen, vs the ladder's k = 0; *full* = ordinary training of everything, vs k = L.",
        "", _md(crosscheck_table(cross)), "",
    ]
    return "\n".join(parts)


def _pm(stat: dict) -> str:
    """'0.840 ± 0.012' from {"mean": ..., "std": ...}."""
    return f"{notation.num(stat['mean'], 3)} ± {notation.num(stat['std'], 3)}"


def identity_table(identity: dict) -> pd.DataFrame:
    rows = []
    for config, r in identity.items():
        trained = sorted(r["trained_embedding"].items(),  # JSON keys come back sorted
                         key=lambda mv: list(LABELS).index(mv[0]) if mv[0] in LABELS else 99)
        sources = [("init", r["init"])] + [(f"trained emb. ({LABELS.get(m, m)})", v)
                                          for m, v in trained]
        for source, s in sources:
            ratios = ", ".join(f"{notation.num(m, 2)}±{notation.num(sd, 2)}" for m, sd in
                               zip(s["block_ratio"]["mean"], s["block_ratio"]["std"],
                                   strict=True))
            rows.append({
                "config": config, "embedding": source, "‖f_l‖/‖h_l‖ per block": ratios,
                "‖h_L−h_0‖/‖h_0‖": _pm(s["stack_rel_change"]),
                "cos(h_L, h_0)": _pm(s["stack_cos"]),
            })
    return pd.DataFrame(rows)


def crosscheck_table(cross: pd.DataFrame) -> pd.DataFrame:
    if cross.empty:
        return pd.DataFrame({"note": ["no standalone runs"]})
    g = cross.groupby(["config", "kind"], sort=False)
    return pd.DataFrame({
        "ladder accuracy": g.ladder_accuracy.mean().map(_num),
        "standalone accuracy": g.standalone_accuracy.mean().map(_num),
        "max abs Δ": g.difference.apply(lambda d: _num(d.abs().max())),
        "same predictions (min over seeds)": g.same_predictions.min().map(
            lambda x: notation.num(x, 3)),
        "seeds": g.seed.count(),
    }).reset_index()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m workflow_scripts.ladder.report")
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("figure")
    f.add_argument("--table", required=True)
    f.add_argument("--out", nargs="+", required=True, help="one file per format (png/pdf/svg)")
    s = sub.add_parser("summary")
    for name in ("table", "comparisons", "crosscheck", "identity", "out"):
        s.add_argument(f"--{name}", required=True)
    a = p.parse_args(argv)
    if a.cmd == "figure":
        figure(read_parquet(a.table), a.out)
    else:
        with open(a.identity, encoding="utf-8") as fh:
            identity = json.load(fh)
        write_text(a.out, summary(read_parquet(a.table), read_parquet(a.comparisons),
                                  read_parquet(a.crosscheck), identity))


if __name__ == "__main__":
    main()
