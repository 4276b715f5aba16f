# The ladder's batched training rules (rules/ladder.smk: LADDER_BATCHES, LADDER_SHELL): the
# same command and params per run as ladder_train and ladder_standalone, several runs still
# to do in one process.

# Batched runs (LADDER_BATCHES, LADDER_STANDALONE_BATCHES): one rule per config and shape,
# its k (or kind) a wildcard matching exactly the jobs of that shape.
for _i, ((_a, _ms, _ss), _ks) in enumerate(LADDER_BATCHES.items()):
    _out = [
        f"results/ladder/runs/{_a}/{m}/k{{k}}/seed{s}.parquet" for m in _ms for s in _ss
    ]

    rule:
        name:
            f"ladder_train_batch{_i}"
        input:
            data=LADDER_DATA,
            code=code("ladder.train"),
        output:
            _out,
        log:
            f"logs/ladder/train/{_a}/k{{k}}/{'-'.join(_ms)}.{'-'.join(map(str, _ss))}.log",
        benchmark:
            bench(_out[0])
        wildcard_constraints:
            k=regex(map(str, _ks)),
        conda:
            CONDA_ENV
        threads: 1
        resources:
            mem_mb=LADDER_RES["train_mb"],
            runtime=LADDER_RES["run_min"] * len(_out),
            gpu=0,
        params:
            run=lambda wc, output: ladder_cli(output)["run"],
            arch=lambda wc, output: ladder_cli(output)["arch"],
            seeds=lambda wc, output: ladder_cli(output)["seeds"],
            d=LADDER_ARCHS[_a]["d"],
            L=LADDER_ARCHS[_a]["L"],
            settings=settings_json("LadderTrain"),
        shell:
            LADDER_SHELL

    workflow.ruleorder(f"ladder_train_batch{_i}", "ladder_train")


for _i, ((_a, _ss), _kinds) in enumerate(LADDER_STANDALONE_BATCHES.items()):
    _out = [f"results/ladder/standalone/{_a}/{{kind}}/seed{s}.parquet" for s in _ss]

    rule:
        name:
            f"ladder_standalone_batch{_i}"
        input:
            data=LADDER_DATA,
            code=code("ladder.train"),
        output:
            _out,
        log:
            f"logs/ladder/standalone/{_a}/{{kind}}/seeds{'-'.join(map(str, _ss))}.log",
        benchmark:
            bench(_out[0])
        wildcard_constraints:
            kind=regex(_kinds),
        conda:
            CONDA_ENV
        threads: 1
        resources:
            mem_mb=LADDER_RES["train_mb"],
            runtime=LADDER_RES["run_min"] * len(_out),
            gpu=0,
        params:
            run=lambda wc, output: ladder_cli(output)["run"],
            arch=lambda wc, output: ladder_cli(output)["arch"],
            seeds=lambda wc, output: ladder_cli(output)["seeds"],
            d=LADDER_ARCHS[_a]["d"],
            L=LADDER_ARCHS[_a]["L"],
            settings=settings_json("LadderTrain"),
        shell:
            LADDER_SHELL

    workflow.ruleorder(f"ladder_standalone_batch{_i}", "ladder_standalone")
