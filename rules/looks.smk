# Seeds on demand (config adaptive_seeds, docs/adaptive_seeds.md): a Snakemake checkpoint per
# look k reads the per-query evaluations of the claims still open at the seeds look k-1 gave
# them (its document's `next`), decides them with the look's boundary and writes
# results/<study>/looks/look{k}.json: the decisions and the seeds of the next look. Only those seeds'
# models are new jobs (rule train, one job per model), so no finished model is touched. The
# claims rule walks the looks until one says stop (IncompleteCheckpointException in between:
# Snakemake runs that look, then plans again).
from workflow_scripts.claims.looks import arms as claim_adaptive
from workflow_scripts.claims.looks import pending as looks_pending

ADAPTIVE = config["adaptive_seeds"]
# Look 0: the driving claims' trained arms at their recipes' seeds.
LOOK0_CLAIMS = claim_adaptive.driving(CLAIMS, ADAPTIVE)
LOOK0_ARMS = {
    key: PLAN.recipes[key[0]]["seeds"]
    for c in LOOK0_CLAIMS
    for key in claim_adaptive.trained_arms(c)
}


# The look documents already written (claims/looks/pending.py): their files are targets of
# rule `all`, so that a deleted look document or look evaluation is rebuilt by a plain run
# (a checkpoint's dependants are re-read after it, not re-planned); and the next look's cost
# is said before it runs (its jobs are planned only once Snakemake has read the document).
def _look_on_disk(k):
    try:
        with open(PATHS.LOOK.format(k=k), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


LOOKS_ON_DISK = looks_pending.chain(_look_on_disk)
LOOKS_PROMISED = [
    *looks_pending.looks_files(LOOKS_ON_DISK, PATHS.results),
    *looks_pending.evaluations(LOOKS_ON_DISK, CLAIMS, CLAIM_GRID, PATHS.results),
]
if workflow.is_main_process:
    _note = looks_pending.note(
        looks_pending.next_look_cost(LOOKS_ON_DISK, PLAN, os.path.exists)
    )
    if _note:
        print(_note, file=sys.stderr)


include: "looks_plan.smk"


checkpoint claims_look:
    input:
        unpack(look_inputs),
        code=code("claims.looks"),
    output:
        PATHS.LOOK,
    log:
        PATHS.log("claims_look/look{k}"),
    localrule: True
    conda:
        CONDA_ENV
    params:
        **CLAIM_PARAMS,
        adaptive=settings_json("Looks"),
        # Until look k-1 is read (a first pass, look k a target of all), no named inputs.
        previous=lambda wc, input: option("--previous", getattr(input, "previous", [])),
    shell:
        run_stage(
            f"claims.looks --settings-json {literal(CLAIM_SETTINGS_JSON)}"
            f" --grid-json {literal(CLAIM_GRID_JSON)}"
            " --adaptive-json {params.adaptive:q} --look {wildcards.k} {params.previous}"
            f" --results {PATHS.results} --out {{output}} --threads {{threads}}",
        )


rule claims_looks:
    input:
        looks=looks_done,
        code=code("claims.looks"),
    output:
        PATHS.LOOKS_TABLE,
    log:
        PATHS.log("claims_looks"),
    localrule: True
    conda:
        CONDA_ENV
    shell:
        run_stage(
            "claims.looks --gather {input.looks} --out {output}",
        )
