"""Seeds on demand, what the look documents already written promise (config `adaptive_seeds`,
docs/adaptive_seeds.md): the looks' documents and evaluations, as targets of rule `all`, and
what the next look costs before it runs.

Snakemake plans a look's trainings only once it has read the previous look's document (a
checkpoint), so `snakemake -n` cannot list them before that look ran, and a file that only a
look's input function names is not rebuilt by a plain run when deleted (the checkpoint's
dependants are re-read, not re-planned). The Snakefile therefore reads the documents on disk
at parse time (`chain`) and names their files as targets of `all` (`looks_files`,
`evaluations`), and prints the next look's cost (`next_look_cost`, `note`). Standard library
only, pure: the reading and the file checks are passed in.
"""

from __future__ import annotations

from collections.abc import Callable

from workflow_scripts.claims.layout import input_files
from workflow_scripts.claims.looks.arms import arms_of
from workflow_scripts.core import paths


def chain(read: Callable[[int], dict | None]) -> list[dict]:
    """The look documents, first to last, as far as they exist: read(k) is look k's document
    or None; the chain ends at the first missing one or at the one that says stop."""
    docs = []
    while (doc := read(len(docs))) is not None:
        docs.append(doc)
        if doc["stop"]:
            break
    return docs


def looks_files(docs: list[dict], results: str) -> list[str]:
    """The look documents a finished study has in its results folder: those on disk, and the
    next one where the last asks for more seeds (look 0 where none is there yet)."""
    n = len(docs) + (0 if docs and docs[-1]["stop"] else 1)
    return [f"{results}/{paths.LOOK.format(k=k)}" for k in range(n)]


def evaluations(docs: list[dict], claims: list, grid, results: str) -> list[str]:
    """Every per-query file the looks read: each driving claim's at the seeds each look
    left it, and the open claims' at the seeds the last look asks for next. Claims and arms
    the config no longer has are left out."""
    by_id = {c.id: c for c in claims}
    files = []
    for doc in docs:
        for cid, state in doc["claims"].items():
            if cid in by_id:
                files += input_files(results, grid, [by_id[cid]], arms_of(state["arms"]))
        still = [by_id[cid] for cid, s in doc["claims"].items()
                 if s["status"] == "open" and cid in by_id]
        files += input_files(results, grid, still, arms_of(doc["next"]))
    return list(dict.fromkeys(str(f) for f in files))


def next_look_cost(docs: list[dict], plan, exists: Callable[[str], bool] = lambda p: False,
                   ) -> dict | None:
    """What the next look runs before it decides, where the last document asks for more
    seeds (else None): {look, seeds (per arm), trainings, evaluations (jobs)}. plan: the
    StudyPlan, whose paths are the study's (a train-once model serves every depth: one
    training per seed, one evaluation
    job per seed and benchmark; a per-depth arm one of each per depth; a truncated arm the
    per-depth model it cuts, one evaluation job per depth or, of top, per seed and
    benchmark: the plan's evaluation rule says which). Models and
    evaluations for which `exists` holds (written by an earlier, interrupted run) are not
    counted."""
    if not docs or docs[-1]["stop"]:
        return None
    last = docs[-1]
    k = last["look"] + 1
    models, jobs = set(), set()
    for (recipe, strategy, depth), seeds in arms_of(last["next"]).items():
        one_pass = plan.evaluation_rule(strategy, recipe).endswith(
            ("train_once", "one_pass"))
        for seed in seeds:
            model = plan.model_file(recipe, strategy, depth, seed)
            if not exists(model):
                models.add(model)
            for b in plan.benchmarks:
                out = plan.paths.EVAL.format(recipe=recipe, strategy=strategy, depth=depth,
                                        seed=seed, benchmark=b)
                if not exists(out):
                    jobs.add((recipe, strategy, None if one_pass else depth, seed, b))
    return {"look": k, "seeds": last["plan"]["seeds"][k], "trainings": len(models),
            "evaluations": len(jobs)}


def note(cost: dict | None) -> str:
    """The line the Snakefile prints at parse time ('' where no look asks for seeds)."""
    if not cost or not (cost["trainings"] or cost["evaluations"]):
        return ""
    return (f"seeds on demand: look {cost['look']} ({cost['seeds']} seeds per arm) runs "
            f"{cost['trainings']} trainings and {cost['evaluations']} evaluation jobs next "
            f"(look {cost['look'] - 1}'s document asks for them)")
