# depthlab: depth-ablation studies of neural encoders, end to end.
# README.md: what it is, the two commands; docs/guide.md: running, figures, cluster;
# docs/architecture.md: the DAG, contracts, layout.
import os
import sys

from snakemake.utils import min_version

min_version("9.0")
sys.path.insert(0, workflow.basedir)
from workflow_scripts.core import runlock
from workflow_scripts.core.configcheck import typed_overrides
from workflow_scripts.core.paths import elsewhere_note
from workflow_scripts.study_config import (
    check_config,
    configfile_study,
    job_environment,
)
from workflow_scripts.study_plan import StudyPlan

# The embedded default, unless `--configfile` names the config(s) to run: those replace it
# (Snakemake would otherwise merge mappings such as `recipes:` key by key into the default's).
# Stack files to combine them: --configfile config/config.yaml mine.yaml
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config/config.yaml")


# `--config key=[1, 2]` and `key={sub: 1}` hold strings as Snakemake reads them: typed first.
typed_overrides(config, dict(workflow.config_settings.config))
# Each study writes its own folders (results/<study>/, ...): the last config file's `study`,
# else its name, unless `--config study=...` names it.
if workflow.overwrite_configfiles and "study" not in workflow.config_settings.config:
    config["study"] = configfile_study(workflow.overwrite_configfiles[-1])
# One check, before any job: messages name the key; then the schemas' defaults are filled in.
try:
    check_config(config)
    # A hub base model: cached, the jobs run offline; neither cached nor reachable, stop.
    os.environ.update(job_environment(config))
except ValueError as e:
    raise WorkflowError(str(e)) from None
# Everything the rules need to know about the config (workflow_scripts/study_plan.py): a
# pure function of the config, never of what is on disk. PATHS: where its artifacts lie.
PLAN = StudyPlan(config)
PATHS = PLAN.paths
# Snakemake locks the folder only once its DAG is built; a second run of the same study
# building its DAG meanwhile reads the files the first's jobs replace. So one run per study,
# refused here.
if workflow.is_main_process:
    # `-s clone/Snakefile` from another folder starts a fresh study there: said.
    if _note := elsewhere_note(
        os.getcwd(), workflow.basedir, bool(workflow.overwrite_workdir)
    ):
        print(_note, file=sys.stderr)
    try:
        runlock.take(sys.argv, PATHS.name)
    except runlock.RunLocked as e:
        raise WorkflowError(str(e)) from None


include: "rules/common.smk"


if PLAN.has_biencoder:

    include: "rules/data.smk"
    include: "rules/train.smk"
    include: "rules/evaluate.smk"
    include: "rules/latency.smk"
    include: "rules/stats.smk"
    include: "rules/figures.smk"
    include: "rules/report.smk"
    include: "rules/export.smk"


if PLAN.has_ladder:

    include: "rules/ladder.smk"


if PLAN.has_claims:

    include: "rules/claims.smk"


rule all:
    default_target: True
    input:
        PLAN.promised(),
        LOOKS_PROMISED,
    localrule: True
