# Claims (docs/claims.md): the config's findings, decided on the per-query evaluations, the
# ladder's runs and the latency runs they name. The claims and their grid are this rule's
# params, so editing one claim reruns exactly this rule, its figure and the report.
import json

from workflow_scripts.claims import spec as claim_spec
from workflow_scripts.claims.layout import input_files as claim_inputs

CLAIM_GRID = claim_spec.grid_from_config(config)
CLAIMS = claim_spec.parse(config["claims"], CLAIM_GRID)
# Claims follow the grid: one naming what an edited grid lacks is not-applicable, said here.
for _warning in claim_spec.not_applicable_warnings(CLAIMS):
    print(_warning, file=sys.stderr)
CLAIM_FIGURES = [
    f"results/figures/claims.{fmt}" for fmt in config["figures"]["formats"]
]
CLAIM_OUTPUTS = ["results/claims.parquet", "results/claims.md", *CLAIM_FIGURES]
# Seeds on demand: looks over the driving claims (rules/looks.smk).
ADAPTIVE_SEEDS = bool(config.get("adaptive_seeds")) and HAS_BIENCODER
if ADAPTIVE_SEEDS:

    include: "looks_plan.smk"
    include: "looks.smk"

    CLAIM_OUTPUTS.append(LOOKS_TABLE)


# Rule -> its job's benchmark, for the usage table (rules/report.smk).
CLAIMS_BENCHMARKS = {
    "claims": [bench("results/claims.parquet")],
    "claims_figure": [bench(CLAIM_FIGURES[0])],
}


localrules:
    claims,
    claims_figure,


rule claims:
    input:
        results=[str(p) for p in claim_inputs("results", CLAIM_GRID, CLAIMS)],
        looks=looks_done if ADAPTIVE_SEEDS else [],
        looks_evals=looks_evals if ADAPTIVE_SEEDS else [],
        code=code("claims.__main__"),
    output:
        table="results/claims.parquet",
        md="results/claims.md",
    log:
        "logs/claims/claims.log",
    benchmark:
        CLAIMS_BENCHMARKS["claims"][0]
    conda:
        CONDA_ENV
    params:
        settings=settings_json("Claims"),
        grid=json.dumps(CLAIM_GRID.to_dict(), sort_keys=True),
        looks=lambda wc, input: (
            "--looks " + " ".join(input.looks) if input.looks else ""
        ),
    shell:
        "python -m workflow_scripts.claims --settings-json {params.settings:q}"
        " --grid-json {params.grid:q} --results results --table {output.table}"
        " --markdown {output.md} {params.looks} --threads {threads} > {log} 2>&1"


rule claims_figure:
    input:
        table="results/claims.parquet",
        code=code("claims.render"),
    output:
        [
            report(p, caption="../docs/report/claims.rst", category="Claims")
            for p in CLAIM_FIGURES
        ],
    log:
        "logs/claims/figure.log",
    benchmark:
        CLAIMS_BENCHMARKS["claims_figure"][0]
    conda:
        CONDA_ENV
    shell:
        "python -m workflow_scripts.claims.render --table {input.table} --figure {output}"
        " > {log} 2>&1"
