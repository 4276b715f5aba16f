"""Decide a config's claims on a results folder: a claims table and its markdown.

  python -m workflow_scripts.claims --config config/config.yaml [--results results/default]
  python -m workflow_scripts.claims --settings-json '{...}' --grid-json '{...}' \
      --results results/default --table results/default/claims.parquet \
      --markdown results/default/claims.md

--config reads YAML config files (stacked as with snakemake --configfile), checks them and
decides their claims on the config's study (its results folder, results/<study>, unless
--results names another); the workflow's claims rule passes the same as --settings-json
(core/settings.py Claims) and --grid-json (claims/spec.py Grid) instead. With --config the
table and markdown go to claims-cli/ (not into the results folder, whose claims.* are the
workflow's: a report must publish what the workflow made), and a --table or --markdown
inside the results folder is refused unless --into-results says so. Exit status 0 whatever
the verdicts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from workflow_scripts.claims import analysis, decide, registration, render, spec
from workflow_scripts.claims import data as claims_data
from workflow_scripts.claims.looks import run as looks
from workflow_scripts.core import contracts, paths
from workflow_scripts.core.settings import Claims, SettingsError

DEFAULT_DIR = "claims-cli"  # the --config form's outputs, beside (never in) results/


def read_config(files) -> dict:
    """YAML files merged as Snakemake merges --configfile files, then checked; the study is
    the last file's, as the Snakefile names it."""
    import yaml

    from workflow_scripts.study_config import check_config, configfile_study

    config: dict = {}
    for p in files:
        config = _merge(config, yaml.safe_load(Path(p).read_text(encoding="utf-8-sig")) or {})
    config["study"] = configfile_study(files[-1])
    check_config(config)
    return config


def _merge(base: dict, new: dict) -> dict:
    out = dict(base)
    for k, v in new.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def run(settings: Claims, grid: spec.Grid, results, table_path, md_path, threads=None,
        look_files=(), registry=None):
    """look_files: the looks of seeds on demand (claims/looks/run.py), first to last: each
    driving claim is decided at the seeds and level of the look that settled it. registry:
    the record of when each claim and look plan was registered (claims/registration.py;
    default the results folder's): a claim not registered before its data, or driven by a
    look plan that was not, is marked post hoc."""
    claims = spec.parse(settings.claims, grid)
    at_looks, plan = {}, None
    if look_files:
        last = json.loads(Path(look_files[-1]).read_text(encoding="utf-8"))
        # A look document made before plans named their claims: its claims are the looks'.
        plan = {"claims": list(last["claims"]), **last["plan"]}
        for c in claims:
            if c.id in last["claims"]:
                arms, alpha = looks.final_arms(last)[c.id]
                at_looks[c.id] = (claims_data.load(results, grid, [c], arms), alpha)
    rest = [c for c in claims if c.id not in at_looks]
    data = claims_data.load(results, grid, rest)
    table = decide.decide(claims, data, decide.Options(settings, threads), at_looks)
    record = registration.read(registry or Path(results) / paths.CLAIMS_REGISTRY)
    heads = (table["row"] == "claim") & (table["verdict"] != "not-applicable")  # decided
    by_id = {c.id: c for c in claims}
    status = {entry["id"]: registration.status(
        record, entry, plan, analysis.arm_seeds(by_id[entry["id"]], grid),
        analysis.analysis(by_id[entry["id"]], grid)) for entry in settings.claims}
    table.loc[heads, "registration"] = table.loc[heads, "claim"].map(status)
    contracts.write_parquet(table_path, table)
    md = render.markdown(table)
    if look_files:
        md += "\n" + looks.markdown(look_files, grid.recipe_seeds, record)
    contracts.write_text(md_path, md)
    return table


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m workflow_scripts.claims",
                                 description="Decide a config's claims on a results folder.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", nargs="+", help="config YAML file(s)")
    src.add_argument("--settings-json", help="core/settings.py Claims as JSON (with --grid-json)")
    ap.add_argument("--grid-json", help="claims/spec.py Grid as JSON (with --settings-json)")
    ap.add_argument("--results", help="the study's results folder (with --config, default "
                    "the config's: results/<study>)")
    ap.add_argument("--table", help=f"default: {DEFAULT_DIR}/claims.parquet")
    ap.add_argument("--markdown", help=f"default: {DEFAULT_DIR}/claims.md")
    ap.add_argument("--into-results", action="store_true",
                    help="with --config: allow --table/--markdown inside the results folder "
                         "(replacing what the workflow wrote there)")
    ap.add_argument("--threads", type=int, help="bootstrap threads (default: usable CPUs)")
    ap.add_argument("--registration", help="when each claim and look plan was registered "
                    "(default: claims_registration.json in the results folder); claims it "
                    "does not show registered before their data, or driven by a look plan "
                    "it does not, are post hoc")
    ap.add_argument("--looks", nargs="*", default=[],
                    help="the looks of seeds on demand (results/<study>/looks/look*.json), in "
                    "order")
    a = ap.parse_args(argv)
    try:
        if a.config:
            config = read_config(a.config)
            settings, grid = Claims.from_config(config), spec.grid_from_config(config)
        else:
            if not a.grid_json:
                ap.error("--settings-json needs --grid-json")
            if not a.results:
                ap.error("--settings-json needs --results")
            settings = Claims.from_json(a.settings_json)
            grid = spec.Grid.from_dict(json.loads(a.grid_json))
    except (ValueError, SettingsError) as e:
        sys.exit(f"error: {e}")
    results = Path(a.results or paths.Study(config["study"]).results)
    table_path = Path(a.table or f"{DEFAULT_DIR}/claims.parquet")
    md_path = Path(a.markdown or f"{DEFAULT_DIR}/claims.md")
    if a.config and not a.into_results:
        inside = [str(p) for p in (table_path, md_path) if _inside(p, results)]
        if inside:
            sys.exit(f"error: {', '.join(inside)} lies in the results folder {results}, whose "
                     "files are the workflow's outputs; write elsewhere, or pass "
                     "--into-results to replace them")
    try:
        table = run(settings, grid, results, table_path, md_path, a.threads, a.looks,
                    a.registration)
    except contracts.DataError as e:
        sys.exit(f"error: {e}")
    print(f"wrote {table_path} and {md_path}")
    heads = table[table["row"] == "claim"]
    for _, r in heads.iterrows():
        post = " (post hoc)" if r.get("registration") == registration.POST_HOC else ""
        print(f"{r['verdict']:>15}  {r['claim']}: {r['statement']}{post}")


if __name__ == "__main__":
    main()
