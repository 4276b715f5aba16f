# Seeds on demand: a checkpoint per look and the table of every look's decisions
# (docs/adaptive_seeds.md; their inputs: rules/looks_plan.smk).


localrules:
    claims_look,
    claims_looks,


checkpoint claims_look:
    input:
        unpack(look_inputs),
        code=code("claims.looks"),
    output:
        LOOK,
    log:
        "logs/claims/look{k}.log",
    wildcard_constraints:
        k="[0-9]+",
    conda:
        CONDA_ENV
    params:
        settings=settings_json("Claims"),
        grid=json.dumps(CLAIM_GRID.to_dict(), sort_keys=True),
        adaptive=settings_json("Looks"),
        previous=lambda wc, input: (
            "--previous " + " ".join(input.previous) if input.previous else ""
        ),
    shell:
        "python -m workflow_scripts.claims.looks --settings-json {params.settings:q}"
        " --grid-json {params.grid:q} --adaptive-json {params.adaptive:q} --look {wildcards.k}"
        " {params.previous} --results results --out {output} --threads {threads}"
        " > {log} 2>&1"


rule claims_looks:
    input:
        looks=looks_done,
        code=code("claims.looks"),
    output:
        LOOKS_TABLE,
    log:
        "logs/claims/looks.log",
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.claims.looks --gather {input.looks} --out {output}"
        " > {log} 2>&1"
