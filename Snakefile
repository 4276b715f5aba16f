# depthlab: depth-ablation studies of neural encoders, end to end.
# README.md: quick start, figures, cluster; docs/architecture.md: the DAG, contracts, layout.
import os
import sys

from snakemake.utils import min_version

min_version("9.0")
sys.path.insert(0, workflow.basedir)
from workflow_scripts.study_config import check_config

# The embedded default, unless `--configfile` names the config(s) to run: those replace it
# (Snakemake would otherwise merge mappings such as `recipes:` key by key into the default's).
# Stack files to combine them: --configfile config/config.yaml mine.yaml
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config/config.yaml")


# One check, before any job: messages name the key; then the schemas' defaults are filled in.
try:
    check_config(config)
except ValueError as e:
    raise WorkflowError(str(e)) from None
# A config holds one or both studies: the bi-encoder depth study (`recipes:` and its keys)
# and the depth-utility ladder (`ladder:`).
HAS_BIENCODER = "recipes" in config
HAS_LADDER = "ladder" in config
HAS_CLAIMS = bool(config["claims"])


include: "rules/common.smk"


if HAS_CLAIMS:

    include: "rules/claims.smk"


if HAS_LADDER:

    include: "rules/ladder.smk"
    include: "rules/ladder_batch.smk"


if HAS_BIENCODER:

    include: "rules/data.smk"
    include: "rules/train_jobs.smk"
    include: "rules/train.smk"
    include: "rules/evaluate.smk"
    include: "rules/latency.smk"
    include: "rules/stats.smk"
    include: "rules/figures.smk"
    include: "rules/report.smk"

    localrules:
        docstring_benchmark,
        docstring_triples,
        beir_download,
        beir_train,
        triples_download,
        stats,
        latency_summary,
        figure_depth_vs_budget,
        figure_per_benchmark_degradation,
        figure_seed_variance,
        figure_pareto,
        figure_learning_curves,
        figure_quality_vs_compute,
        curves,
        compute,
        usage,
        report,


localrules:
    all,


rule all:
    default_target: True
    input:
        BIENCODER_OUTPUTS,
        LADDER_OUTPUTS if HAS_LADDER else [],
        CLAIM_OUTPUTS if HAS_CLAIMS else [],
