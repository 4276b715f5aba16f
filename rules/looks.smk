# Seeds on demand (config adaptive_seeds, docs/adaptive_seeds.md): a Snakemake checkpoint per
# look k reads the per-query evaluations of the claims still open at the seeds look k-1 gave
# them (its document's `next`), decides them with the look's boundary and writes
# results/looks/look{k}.json: the decisions and the seeds of the next look. Only those seeds'
# models are new jobs (rule train, one job per model), so no finished model is touched. The
# claims rule walks the looks until one says stop (IncompleteCheckpointException in between:
# Snakemake runs that look, then plans again).
from workflow_scripts.claims.looks import arms as claim_adaptive

ADAPTIVE = config["adaptive_seeds"]
# Look 0: the driving claims' trained arms at their recipes' seeds.
LOOK0_CLAIMS = claim_adaptive.driving(CLAIMS, ADAPTIVE)
LOOK0_ARMS = {
    key: PLAN.recipes[key[0]]["seeds"]
    for c in LOOK0_CLAIMS
    for key in claim_adaptive.trained_arms(c)
}


include: "looks_plan.smk"


checkpoint claims_look:
    input:
        unpack(look_inputs),
        code=code("claims.looks"),
    output:
        paths.LOOK,
    log:
        "logs/claims_look/look{k}.log",
    localrule: True
    conda:
        CONDA_ENV
    params:
        settings=settings_json("Claims"),
        grid=CLAIM_GRID_JSON,
        adaptive=settings_json("Looks"),
        previous=lambda wc, input: option("--previous", input.previous),
    shell:
        run_stage(
            "claims.looks --settings-json {params.settings:q} --grid-json {params.grid:q}"
            " --adaptive-json {params.adaptive:q} --look {wildcards.k} {params.previous}"
            " --results results --out {output} --threads {threads}",
        )


rule claims_looks:
    input:
        looks=looks_done,
        code=code("claims.looks"),
    output:
        paths.LOOKS_TABLE,
    log:
        "logs/claims_looks.log",
    localrule: True
    conda:
        CONDA_ENV
    shell:
        run_stage(
            "claims.looks --gather {input.looks} --out {output}",
        )
