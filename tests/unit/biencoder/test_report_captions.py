"""The HTML report's captions (docs/report/*.rst) say the interval method and level of the
tables their figures draw: each caption is rendered as `snakemake --report` renders it
(Jinja with `snakemake.config`, then docutils), for two settings, against the tables the
stages write under those settings and the figures drawn from them."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace

import matplotlib
import pytest
import yaml
from conftest import ROOT
from docutils.core import publish_parts
from jinja2 import Environment
from synthetic_scores import ladder_runs
from test_curves import _grid as curve_grid
from test_curves import _write as write_curve
from test_stats_stage import _write_evals

from workflow_scripts.biencoder import curves, stats
from workflow_scripts.biencoder.report import figures
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import Curves, Stats
from workflow_scripts.ladder import report as ladder_report
from workflow_scripts.ladder import stats as ladder_stats
from workflow_scripts.study_config import check_config

CAPTIONS = ROOT / "docs/report"
METHODS = set(contracts.INTERVAL_NAMES.values())
# Caption -> the stats table its figure draws the intervals of.
FIGURE_TABLES = {"depth_vs_budget": "ci", "seed_variance": "ci", "pareto": "ci",
                 "quality_vs_compute": "ci", "per_benchmark_change": "comparisons",
                 "learning_curves": "curves", "claims": "ci", "depth_ladder": "ladder",
                 "depth_by_dim": "ci"}  # its dims table: the same stats settings as ci


def render(name: str, config: dict) -> str:
    """The caption's text as the report shows it (Snakemake's Jinja environment; docutils
    stops at any rst warning rather than printing it into the page)."""
    source = (CAPTIONS / f"{name}.rst").read_text(encoding="utf-8")
    rst = Environment(trim_blocks=True, lstrip_blocks=True).from_string(source).render(
        snakemake=SimpleNamespace(config=config))
    body = publish_parts(rst, writer="html",
                         settings_overrides={"halt_level": 2, "report_level": 2})["body"]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def study(tmp_path, interval: str, level: float) -> tuple[dict, dict]:
    """The default config with the intervals set, and the tables the stages write under it
    (stats, curves, ladder stats) on synthetic evaluations."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))
    for st in (config["stats"], config["ladder"]["stats"]):
        st.update(interval=interval, ci=level, nboot=200)
    check_config(config)
    (tmp_path / "evals").mkdir()
    tables = stats.run(_write_evals(tmp_path / "evals"), tmp_path / "stats",
                       Stats.from_config(config), budget_order=["short", "long"])
    (tmp_path / "curves").mkdir()
    tables.update(curves.run(write_curve(tmp_path / "curves", (0.2, 0.3, 0.35, 0.3, 0.3, 0.3,
                                                               0.3)),
                             tmp_path / "curve_stats", Curves.from_config(config), curve_grid(),
                             threads=1))
    paths, _ = ladder_runs(tmp_path)
    rows, metas = ladder_stats.collect(paths)
    tables["ladder"] = ladder_stats.ladder_table(rows, metas, seed=0,
                                                 **{k: config["ladder"]["stats"][k]
                                                    for k in ("interval", "nboot", "ci")})
    return config, tables


@pytest.mark.parametrize(("interval", "level"), [("calibrated", 0.95),
                                                 ("multibootstrap", 0.9)])
def test_every_caption_names_the_method_and_level_of_its_figure(tmp_path, interval, level):
    config, tables = study(tmp_path, interval, level)
    figures_with_captions = {p.stem for p in CAPTIONS.glob("*.rst")} - {"results"}
    assert figures_with_captions == set(FIGURE_TABLES)  # a new caption gets checked here
    for name, table in FIGURE_TABLES.items():
        t = tables[table]
        method, said = contracts.interval_name(t), contracts.ci_level(t)
        assert (method, said) == (contracts.INTERVAL_NAMES[interval], contracts.ci_label(level))
        text = render(name, config)
        assert f"{said} {method} confidence interval" in text or (
            name == "claims" and f"{said} {method} for the bi-encoder's claims" in text), name
        # No other method is named, but the onset's interval, a Multi-Bootstrap by design.
        others = METHODS - {method}
        assert not [m for m in others if m in text.replace(
            f"{said} Multi-Bootstrap interval over the step grid", "")], (name, text)
        assert "%" in text and re.findall(r"\d+(?:\.\d+)?%", text) == [said] * len(
            re.findall(r"\d+(?:\.\d+)?%", text)), (name, text)


def test_the_figures_say_what_their_captions_say(tmp_path):
    """The same method and level in the caption, the figure and the table it reads."""
    config, tables = study(tmp_path, "multibootstrap", 0.9)
    said = "90% Multi-Bootstrap"
    fig = figures.depth_vs_budget(tables, order=["short", "long"])
    assert fig.legends[0].get_title().get_text().startswith(f"band: {said} CI")
    fig = figures.per_benchmark_change(tables, None, ["short", "long"])
    assert f"({said} CI)" in fig.axes[0].get_title()
    assert f"mean, {said} CI" in figures.seed_variance(
        tables, order=["short", "long"]).axes[0].get_legend_handles_labels()[1]
    fig = figures.learning_curves(tables)
    assert f"bands: {said} CI" in fig.texts[0].get_text()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text in the SVG
        ladder_report.figure(tables["ladder"], [tmp_path / "ladder.png", tmp_path / "ladder.svg"])
    assert f"{said} CI" in (tmp_path / "ladder.svg").read_text(encoding="utf-8")
    assert (tmp_path / "ladder.png").read_bytes()[:4] == b"\x89PNG"  # every format written
    for name in ("depth_vs_budget", "per_benchmark_change", "seed_variance",
                 "learning_curves", "depth_ladder"):
        assert f"{said} confidence interval" in render(name, config)


def test_an_edited_setting_changes_the_caption():
    """The caption follows the config it is rendered with (the check above can fail)."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text(encoding="utf-8"))
    check_config(config)
    assert "95% calibrated confidence interval" in render("pareto", config)
    config["stats"].update(interval="multibootstrap", ci=0.995)
    text = render("pareto", config)
    assert "99.5% Multi-Bootstrap confidence interval" in text and "calibrated" not in text
