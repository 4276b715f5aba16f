# Training: one job per model, (recipe, strategy, depth, seed); a train-once arm (recipe key
# train_once) trains once per seed, at the deepest depth. Its params are exactly what changes
# the model (the recipe's settings, a train-once arm's loss settings, the base model); the
# recipe's seed list, how often trainer state is saved and what reports the training (report_to)
# are not, so adding a seed, turning on checkpoints or TensorBoard retrains nothing. The learning curve's snapshots (recipe key eval_steps) are
# outputs: a folder steps/ with one weights folder per snapshot step (empty without), its step
# list a param.

rule train:
    input:
        triples=paths.TRAIN_DATA.format(train_data=PLAN.train_data),
        code=code("biencoder.train"),
    output:
        model=f"{PATHS.MODEL_DIR}/model.safetensors",
        steps=directory(f"{PATHS.MODEL_DIR}/steps"),
        summary=f"{PATHS.MODEL_DIR}/train_summary.json",
    log:
        PATHS.log("train/{recipe}/{strategy}{depth}/seed{seed}"),
    # Trainings (and their triples) first: they head the longest chains (train, evaluate,
    # curves); the short jobs of the ladder and of evaluation then fill the cores at the end
    # instead of one long training running alone.
    priority: 1
    conda:
        CONDA_ENV
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=1,
        # A resource, not a param: it sets how often trainer state is saved (for resuming),
        # which does not change the model, so it must not be a rerun trigger.
        checkpoint_every=lambda wc: PLAN.recipes[wc.recipe]["checkpoint_every"],
        # Likewise what reports the training while it runs (recipe key report_to): a view
        # of the training, not part of it.
        report_to=lambda wc: ",".join(PLAN.recipes[wc.recipe]["report_to"]) or "none",
    params:
        base=config.get("base_model"),
        settings=lambda wc: stage_settings.train_settings(wc.strategy)
        .from_config(config, recipe=wc.recipe)
        .to_json(),
        eval_steps=lambda wc: " ".join(map(str, PLAN.snapshot_steps(wc.recipe))),
        out=lambda wc, output: os.path.dirname(output.model),
        # TensorBoard's event files: a folder beside the job's log, of its name.
        report_dir=PATHS.log("train/{recipe}/{strategy}{depth}/seed{seed}").removesuffix(
            ".log"
        ),
    shell:
        run_stage(
            "biencoder.train --base {params.base:q} --strategy {wildcards.strategy} --depth"
            " {wildcards.depth} --seed {wildcards.seed} --settings-json {params.settings:q}"
            " --triples {input.triples} --checkpoint-every {resources.checkpoint_every}"
            " --eval-steps {params.eval_steps} --threads {threads} --out {params.out}"
            " --report-to {resources.report_to} --report-dir {params.report_dir}",
            preloaded=True,
        )
