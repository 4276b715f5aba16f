# Seeds on demand: the looks' input functions (rules/looks.smk has the rules).


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
        previous = [PATHS.LOOK.format(k=k - 1)]
    evals = [str(p) for p in claim_inputs(PATHS.results, CLAIM_GRID, claims, arms)]
    return {"evals": evals, "previous": previous}


def looks_done(wc=None):
    """Every look's document, first to last (the last one says stop)."""
    k = 0
    while not read_look(k)["stop"]:
        k += 1
    return [PATHS.LOOK.format(k=i) for i in range(k + 1)]


def looks_evals(wc):
    """The evaluations at the seeds where the looks left each driving claim."""
    last = read_look(len(looks_done()) - 1)
    files = []
    for c in LOOK0_CLAIMS:
        arms = claim_adaptive.arms_of(last["claims"][c.id]["arms"])
        files += [str(p) for p in claim_inputs(PATHS.results, CLAIM_GRID, [c], arms)]
    return list(dict.fromkeys(files))
