# Claims (docs/claims.md): the config's findings, decided on the per-query evaluations, the
# ladder's runs and the latency runs they name. The claims and their grid are this rule's
# params, so editing one claim reruns exactly this rule, its figure and the report.
import functools

from workflow_scripts.claims import analysis as claim_analysis
from workflow_scripts.claims import registration as claim_registration
from workflow_scripts.claims import spec as claim_spec
from workflow_scripts.claims.layout import input_files as claim_inputs

CLAIM_GRID = claim_spec.Grid.from_dict(PLAN.claims_grid())
CLAIMS = claim_spec.parse(config["claims"], CLAIM_GRID)
# The claims' settings and their grid (with only the settings some claim reads), the
# arguments of the claims jobs. Their params are the two part by part (a digest per claim):
# a job reruns when either changes, and the rerun reason names the part, not the documents.
CLAIM_SETTINGS_JSON = settings_json("Claims")
CLAIM_GRID_JSON = json.dumps(
    {
        **CLAIM_GRID.to_dict(),
        "settings": claim_analysis.read_settings(CLAIMS, CLAIM_GRID),
    },
    sort_keys=True,
)
CLAIM_PARAMS = {
    **stage_settings.rerun_params("settings", json.loads(CLAIM_SETTINGS_JSON)),
    **stage_settings.rerun_params("grid", json.loads(CLAIM_GRID_JSON)),
}
# Claims follow the grid: one naming what an edited grid lacks is not-applicable, said here.
for _warning in claim_spec.not_applicable_warnings(CLAIMS):
    print(_warning, file=sys.stderr)
# Seeds on demand: looks over the driving claims (rules/looks.smk).
ADAPTIVE_SEEDS = bool(config.get("adaptive_seeds")) and PLAN.has_biencoder
# When a run starts: record each new or edited claim, what decides it (its seeds, grid,
# models' settings, metric, interval) and the look plan, and whether their data existed then
# (claims/registration.py): one added, edited or reanalysed after its data is post hoc. A
# dry run says the same, read only.
REGISTER_CLAIMS = functools.partial(
    claim_registration.register_study,
    PATHS.CLAIMS_REGISTRY,
    stage_settings.Claims.from_config(config),
    CLAIMS,
    PATHS.results,
    CLAIM_GRID,
    stage_settings.Looks.from_config(config) if ADAPTIVE_SEEDS else None,
)
ONSTART.append(REGISTER_CLAIMS)
if workflow.is_main_process and not runlock.runs_jobs(sys.argv):
    REGISTER_CLAIMS(dry=True)
if ADAPTIVE_SEEDS:

    include: "looks.smk"


rule claims:
    input:
        results=[str(p) for p in claim_inputs(PATHS.results, CLAIM_GRID, CLAIMS)],
        looks=looks_done if ADAPTIVE_SEEDS else [],
        looks_evals=looks_evals if ADAPTIVE_SEEDS else [],
        code=code("claims.__main__"),
    output:
        table=PATHS.CLAIMS_TABLE,
        md=PATHS.CLAIMS_MD,
    log:
        PATHS.log("claims"),
    localrule: True
    conda:
        CONDA_ENV
    params:
        **CLAIM_PARAMS,
        looks=lambda wc, input: option("--looks", input.looks),
    shell:
        run_stage(
            f"claims --settings-json {literal(CLAIM_SETTINGS_JSON)}"
            f" --grid-json {literal(CLAIM_GRID_JSON)} --results {PATHS.results}"
            " --table {output.table} --markdown {output.md}"
            " {params.looks} --threads {threads}",
        )


rule claims_figure:
    input:
        table=PATHS.CLAIMS_TABLE,
        code=code("claims.render"),
    output:
        [
            report(p, caption="../docs/report/claims.rst", category="Claims")
            for p in PLAN.claim_figures()
        ],
    log:
        PATHS.log("claims_figure"),
    localrule: True
    conda:
        CONDA_ENV
    shell:
        run_stage(
            "claims.render --table {input.table} --figure {output}",
        )
