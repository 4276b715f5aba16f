# Seeds on demand (config adaptive_seeds, docs/adaptive_seeds.md): the looks' inputs; the
# rules are in rules/looks.smk. A Snakemake checkpoint per look k reads the per-query
# evaluations of the claims still open at the seeds look k-1 gave them (its document's
# `next`), decides them with the look's boundary and writes results/looks/look{k}.json: the
# decisions and the seeds of the next look. Only those seeds' models are new jobs (rule
# train, one job per model: batch_seeds' jobs are planned at parse time for the configured
# seeds only), so no finished model is touched. The claims rule walks the looks until one
# says stop (IncompleteCheckpointException in between: Snakemake runs that look, then plans
# again).
from workflow_scripts.claims import adaptive as claim_adaptive

ADAPTIVE = config["adaptive_seeds"]
LOOK = "results/looks/look{k}.json"
LOOKS_TABLE = "results/claims_looks.parquet"
# Look 0: the driving claims' trained arms at their recipes' seeds.
LOOK0_ARMS = {
    key: RECIPES[key[0]]["seeds"]
    for c in claim_adaptive.driving(CLAIMS, ADAPTIVE)
    for key in claim_adaptive.trained_arms(c)
}
LOOK0_CLAIMS = claim_adaptive.driving(CLAIMS, ADAPTIVE)


def read_look(k):
    """Look k's document; raises Snakemake's IncompleteCheckpointException until it ran."""
    with open(checkpoints.claims_look.get(k=k).output[0], encoding="utf-8") as f:
        return json.load(f)


def look_inputs(wc):
    """Look k's inputs: the previous look's document and the evaluations it asks for."""
    k = int(wc.k)
    if k == 0:
        arms, claims, previous = LOOK0_ARMS, LOOK0_CLAIMS, []
    else:
        doc = read_look(k - 1)
        arms = claim_adaptive.arms_of(doc["next"])
        claims = [
            c for c in CLAIMS if doc["claims"].get(c.id, {}).get("status") == "open"
        ]
        previous = [LOOK.format(k=k - 1)]
    evals = [str(p) for p in claim_inputs("results", CLAIM_GRID, claims, arms)]
    return {"evals": evals, "previous": previous}


def looks_done(wc=None):
    """Every look's document, first to last (the last one says stop)."""
    k = 0
    while not read_look(k)["stop"]:
        k += 1
    return [LOOK.format(k=i) for i in range(k + 1)]


def looks_evals(wc):
    """The evaluations at the seeds where the looks left each driving claim."""
    last = read_look(len(looks_done()) - 1)
    files = []
    for c in LOOK0_CLAIMS:
        arms = claim_adaptive.arms_of(last["claims"][c.id]["arms"])
        files += [str(p) for p in claim_inputs("results", CLAIM_GRID, [c], arms)]
    return list(dict.fromkeys(files))
