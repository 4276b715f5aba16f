# Figures: one rule and one target per figure of the study plan's registry
# (study_plan.BIENCODER_FIGURES: what each reads, its options), registered for
# `snakemake --report` with its caption (docs/report/<name>.rst). Each rule's inputs and
# params are its own figure's, so a table's change reruns only the figures drawn from it.

for _fig in PLAN.figures():

    rule:
        name:
            f"figure_{_fig}"
        input:
            **PLAN.figure_inputs(_fig),
            code=code("biencoder.report.figures"),
        output:
            figure_outputs(_fig),
        log:
            PATHS.log(f"figure_{_fig}"),
        localrule: True
        conda:
            CONDA_ENV
        params:
            name=_fig,
            args=PLAN.figure_args(_fig),
        shell:
            run_stage(
                "biencoder.report.figures {params.name} --stats {input.stats} {params.args}"
                " --out {output}",
            )
