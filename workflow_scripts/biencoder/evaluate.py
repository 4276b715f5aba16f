"""Evaluation stage: zero-shot retrieval on one BEIR-format benchmark, metrics per query.

Encodes the benchmark's queries and documents with the model (fp32, the lean encoders of
biencoder/model/encoder.py) and ranks and scores them with biencoder/retrieval.py: exact cosine
search and trec_eval's metrics, equal to BEIR's (docs/evaluation.md). Every test query gets
a row, also those scoring 0.

Every depth from one pass: a model whose weights do not depend on depth (the untrained base
of strategy top, a train-once model) is evaluated at every configured depth by one job,
`--depths 1 2 3 --out F1 F2 F3`: one forward pass at the deepest depth, each depth pooled from
its hidden state (encoder.encode_at_depths), equal to truncating and encoding each depth.

The fine-tuned-then-truncated arm (--strategy truncated, truncatedbottom, truncatedalternate:
core/contracts.py TRUNCATED): --model names a per-depth model at the deepest depth, cut to
--depth by its strategy's rule (biencoder/model/truncation.py kept_layers, applied to the
model's own layers) or, strategy top, to every --depths from one pass. Its files' provenance
names the model cut, the depth it was trained at and the layers kept.

CLI: python -m workflow_scripts.biencoder.evaluate (--model DIR | --base SPEC) --strategy S \
        (--depth N | --depths N ...) --benchmark-dir data/beir/X --benchmark X --recipe R \
        --seed S --settings-json '{"top_k": 100, ...}' --out FILE.parquet [FILE ...]
     (--snapshots DIR/steps --steps 5000 10000 ...: a model's learning-curve snapshots, one
     file with a `step` column per depth; with --final DIR --final-out FILE ...: the final
     model too, the curve's last point, in the same process)
     [--dims 64 128 --dim-out FILE ...: also at these embedding dimensions, cuts of the same
     embeddings (biencoder/embedding_dims.py), one file per depth and dimension]

Run files: beside each file of --out (but a snapshots' file), --final-out and --dim-out, the
ranking its metrics were computed on, as a gzipped TREC run and its sidecar, named after it
(core/paths.py run_files; biencoder/trec_run.py). Every file's provenance names the benchmark
files and the weights evaluated, by sha256, and the base model (biencoder/eval_origin.py).

Embedding dimensions (--dims): each is scored from the embeddings the full dimension was
scored from, cut to their first `dim` coordinates and L2-normalised, as sentence-transformers'
truncate_dim does (biencoder/embedding_dims.py); its file has a `dim` column and its
provenance the dimension.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import pandas as pd

from workflow_scripts.biencoder import eval_origin, trec_run
from workflow_scripts.biencoder.embedding_dims import truncate_normalise
from workflow_scripts.biencoder.retrieval import DOC_CHUNK, doc_texts, evaluate_streamed
from workflow_scripts.core import contracts
from workflow_scripts.core import provenance as code_provenance
from workflow_scripts.core.settings import Evaluate


def score(q_emb, d_emb, query_ids, doc_ids, qrels: dict, key, dims=(), *, top_k: int = 100,
          ignore_identical_ids: bool = False, runs: dict | None = None) -> dict:
    """Per-query metrics of one encoding: {key: at the full dimension, (key, dim): at each of
    `dims`, the embeddings cut and normalised (biencoder/embedding_dims.py)}. The dimensions
    are cuts of the same embeddings: no second encoding. `runs`, where given, gets the
    ranking each frame was computed on under the frame's key (trec_run.Ranking)."""
    chunks = ({key: d_emb[s:s + DOC_CHUNK]} for s in range(0, len(d_emb), DOC_CHUNK))
    return score_chunks({key: q_emb}, chunks, query_ids, doc_ids, qrels, dims, top_k=top_k,
                        ignore_identical_ids=ignore_identical_ids, runs=runs)


def score_chunks(q_embs: dict, doc_chunks, query_ids, doc_ids, qrels: dict, dims=(), *,
                 top_k: int = 100, ignore_identical_ids: bool = False,
                 runs: dict | None = None) -> dict:
    """score() of several encodings {key: query embeddings}, the documents' embeddings
    given chunk by chunk ({key: the next chunk's}, retrieval.evaluate_streamed): each chunk
    is cut to every dimension and scored, then dropped, so no encoding holds the corpus."""
    def with_dims(embs: dict) -> dict:
        return {**embs, **{(k, dim): truncate_normalise(e, dim) for k, e in embs.items()
                           for dim in dims}}

    ranked = evaluate_streamed(with_dims(q_embs), (with_dims(c) for c in doc_chunks),
                               query_ids, doc_ids, qrels, top_k=top_k,
                               ignore_identical_ids=ignore_identical_ids)
    if runs is not None:
        runs.update({k: trec_run.Ranking(query_ids, doc_ids, scores, idx)
                     for k, (_, scores, idx) in ranked.items()})
    return {k: frame for k, (frame, _, _) in ranked.items()}


def encoded_chunks(encode, texts: list[str], clock: dict):
    """{key: embeddings} of DOC_CHUNK texts at a time, by `encode(texts)`, the seconds spent
    in it added to clock["encode"]: a corpus within one chunk is encoded as one list, as
    before the streaming (a chunk's batches are sorted by length within it)."""
    for s in range(0, len(texts), DOC_CHUNK):
        t0 = time.perf_counter()
        embs = encode(texts[s:s + DOC_CHUNK])
        clock["encode"] += time.perf_counter() - t0
        yield embs


def _timing(clock: dict, t0: float, queries, corpus) -> dict:
    return {"encode_seconds": clock["encode"],
            "search_metrics_seconds": time.perf_counter() - t0 - clock["encode"],
            "queries": len(queries), "documents": len(corpus)}


def evaluate_encoder(encoder, benchmark_dir, key=None, dims=(), *, top_k: int = 100,
                     batch_size: int = 64, ignore_identical_ids: bool = False,
                     runs: dict | None = None) -> tuple[dict, dict]:
    """score()'s frames of `encoder` (anything with encode(texts, batch_size=...) returning
    an array, e.g. workflow_scripts.biencoder.model.encoder's) on a BEIR folder, and
    timings, their rankings into `runs` where given. The corpus is encoded and scored
    DOC_CHUNK documents at a time."""
    corpus, queries, qrels = contracts.load_beir(benchmark_dir)
    t0 = time.perf_counter()
    q_emb = encoder.encode(list(queries.values()), batch_size=batch_size,
                           show_progress_bar=True)
    clock = {"encode": time.perf_counter() - t0}

    def encode(texts):
        return {key: encoder.encode(texts, batch_size=batch_size, show_progress_bar=True)}

    frames = score_chunks({key: q_emb}, encoded_chunks(encode, doc_texts(corpus), clock),
                          list(queries), list(corpus), qrels, dims, top_k=top_k,
                          ignore_identical_ids=ignore_identical_ids, runs=runs)
    return frames, _timing(clock, t0, queries, corpus)


def evaluate_model(encoder, benchmark_dir, *, top_k: int = 100, batch_size: int = 64,
                   ignore_identical_ids: bool = False) -> tuple[pd.DataFrame, dict]:
    """Per-query metrics of `encoder` on a BEIR folder at its full dimension, and timings."""
    frames, timing = evaluate_encoder(encoder, benchmark_dir, top_k=top_k,
                                      batch_size=batch_size,
                                      ignore_identical_ids=ignore_identical_ids)
    return frames[None], timing


def evaluate_depths(source: str, depths, benchmark_dir, *, max_seq_length: int,
                    top_k: int = 100, batch_size: int = 64, ignore_identical_ids: bool = False,
                    device: str | None = None, dims=(),
                    runs: dict | None = None) -> tuple[dict, dict]:
    """{depth: per-query metrics} of a model whose weights do not depend on depth (`source`:
    the base's spec, strategy top, or a train-once model's folder) at every one of `depths`,
    its texts encoded in one pass (encoder.encode_at_depths), the corpus DOC_CHUNK documents
    at a time; {(depth, dim): ..} too at each of `dims` (score()); their rankings
    into `runs` where given."""
    from workflow_scripts.biencoder.model.encoder import encode_at_depths, load_encoder

    corpus, queries, qrels = contracts.load_beir(benchmark_dir)
    t0 = time.perf_counter()
    encoder = load_encoder(source, depth=max(depths), max_seq_length=max_seq_length,
                           device=device)

    def encode(texts):
        return encode_at_depths(source, [texts], depths, max_seq_length=max_seq_length,
                                batch_size=batch_size, device=device, encoder=encoder)[0]

    q_embs = encode(list(queries.values()))
    clock = {"encode": time.perf_counter() - t0}
    out = score_chunks(q_embs, encoded_chunks(encode, doc_texts(corpus), clock), list(queries),
                       list(corpus), qrels, dims, top_k=top_k,
                       ignore_identical_ids=ignore_identical_ids, runs=runs)
    out = {k: out[k] for d in sorted(depths) for k in [d, *((d, m) for m in dims)]}
    return out, _timing(clock, t0, queries, corpus)


def evaluate_snapshots(folders: dict, benchmark_dir, *, max_seq_length: int, top_k: int = 100,
                       batch_size: int = 64, ignore_identical_ids: bool = False,
                       device: str | None = None, depths=None, dims=(),
                       dims_step=None, runs: dict | None = None) -> tuple[object, dict]:
    """Per-query metrics of several weight folders of one training (step -> a learning-curve
    snapshot), as evaluate_model gives for each, with a `step` column: the benchmark read
    once, its texts tokenized once where the corpus is one chunk (the lean encoder swaps
    weights, keeping its batches; a larger corpus is tokenized chunk by chunk for each
    folder, to hold no more than a chunk), one process for all. A folder the lean encoder
    cannot take is encoded on its own. `depths` (a train-once model's snapshots): {depth:
    metrics} of every depth, each snapshot in one pass. `dims`: the folder of step
    `dims_step` (the final model) also at these dimensions, keyed (depth or None, dim) as
    score() keys them; its rankings (full dimension and `dims`) into `runs` where given,
    keyed likewise."""
    from workflow_scripts.biencoder.model.encoder import (
        BertEncoder,
        UnsupportedModel,
        load_encoder,
    )

    corpus, queries, qrels = contracts.load_beir(benchmark_dir)
    q_texts, d_texts = list(queries.values()), doc_texts(corpus)
    one_chunk = len(d_texts) <= DOC_CHUNK
    timing = {"encode_seconds": 0.0, "search_metrics_seconds": 0.0, "queries": len(queries),
              "documents": len(corpus)}
    frames, lean, batches = {}, None, None
    for step, folder in sorted(folders.items()):
        t0 = time.perf_counter()
        try:
            if lean is None:
                raise UnsupportedModel(str(folder))
            lean.load_weights(folder)
        except UnsupportedModel:
            encoder = load_encoder(str(folder), depth=max(depths) if depths else None,
                                   max_seq_length=max_seq_length, device=device)
            lean = encoder if isinstance(encoder, BertEncoder) else None
            batches = None if lean is None else {
                "q": lean.tokenize(q_texts, batch_size),
                "d": lean.tokenize(d_texts, batch_size) if one_chunk else None}

        encode = _snapshot_encode(lean or encoder, str(folder), depths,
                                  max_seq_length=max_seq_length, batch_size=batch_size)
        q_embs = encode(q_texts, batches and batches["q"])
        clock = {"encode": time.perf_counter() - t0}
        d_encode = functools.partial(encode, batches=batches and batches["d"])
        scored = score_chunks(
            q_embs, encoded_chunks(d_encode, d_texts, clock),
            list(queries), list(corpus), qrels, dims if step == dims_step else (),
            top_k=top_k, ignore_identical_ids=ignore_identical_ids,
            runs=runs if step == dims_step else None)
        for k, df in scored.items():
            frames.setdefault(k, []).append(df.assign(step=int(step)))
        t = _timing(clock, t0, queries, corpus)
        timing["encode_seconds"] += t["encode_seconds"]
        timing["search_metrics_seconds"] += t["search_metrics_seconds"]
    out = {key: pd.concat(f, ignore_index=True) for key, f in frames.items()}
    return (out if depths or dims else out[None]), timing


def _snapshot_encode(encoder, folder: str, depths, *, max_seq_length: int, batch_size: int):
    """encode(texts, batches=None) -> {depth or None (the folder's own): embeddings} of one
    snapshot's encoder; `batches`: the lean encoder's tokenize() of `texts`, when kept."""
    from workflow_scripts.biencoder.model.encoder import BertEncoder, encode_at_depths

    def encode(texts, batches=None):
        if isinstance(encoder, BertEncoder):
            b = batches or encoder.tokenize(texts, batch_size)
            return (encoder.encode_batches_depths(b, len(texts), depths) if depths
                    else {None: encoder.encode_batches(b, len(texts))})
        if depths:
            return encode_at_depths(folder, [texts], depths, max_seq_length=max_seq_length,
                                    batch_size=batch_size, encoder=encoder)[0]
        return {None: encoder.encode(texts, batch_size=batch_size)}

    return encode


def final_model_step(folder, snapshot_steps) -> int:
    """The step of a training's final model (its train_summary.json), after every snapshot."""
    path = Path(folder) / "train_summary.json"
    try:
        step = int(json.loads(path.read_text(encoding="utf-8"))["steps"])
    except (OSError, ValueError, KeyError) as e:
        raise contracts.DataError(f"{path}: no readable 'steps' ({e.__class__.__name__})") from e
    if step <= max(snapshot_steps):
        raise contracts.DataError(f"{path}: the final step {step} is not after the snapshots "
                                  f"{sorted(snapshot_steps)}")
    return step


def split_final(frames: dict, final_step: int) -> tuple[dict, dict]:
    """({depth: the snapshots' rows}, {depth: the final model's rows without `step`})."""
    snaps = {d: df[df["step"] != final_step].reset_index(drop=True) for d, df in frames.items()}
    final = {d: df[df["step"] == final_step].drop(columns="step").reset_index(drop=True)
             for d, df in frames.items()}
    return snaps, final


def provenance(a, folder=None, depth=None, weights=None) -> dict:
    """What a per-query file was made with: the evaluation settings, the model given, and
    for a trained model what its train_summary.json records made it (settings, seed, base,
    steps, training data); for a fine-tuned-then-truncated arm's file (at `depth`), the cut
    (truncated_from). And what it was evaluated on (biencoder/eval_origin.py): `data`, the
    benchmark files' sha256 and its data card's origin; `weights`, the weights file's sha256
    (`weights` given: a snapshots file's {step: ...}); `base_model`, the base's identity
    (spec, version or revision, sha256), for a trained model as its train_summary.json
    records it. Stored in the parquet file (pandas attrs) and its run's sidecar."""
    model = folder or a.model
    prov = {"evaluate": json.loads(Evaluate.from_json(a.settings_json).to_json()),
            "model": str(a.model or a.snapshots or a.base),
            # No time in it: two runs of the same code and config write the same file.
            "code": code_provenance.code_version("biencoder.evaluate"),
            "packages": code_provenance.package_versions(
                code_provenance.EVALUATE_PACKAGES),
            "data": eval_origin.benchmark_origin(a.benchmark_dir)}
    if a.base:
        prov.update(eval_origin.base_origin(a.base))
    else:
        prov["weights"] = weights if weights is not None else eval_origin.weights_origin(model)
    summary = Path(model or "") / "train_summary.json"
    if model and summary.exists():
        made = json.loads(summary.read_text(encoding="utf-8"))
        prov["base_model"] = made.get("base_model")
        prov["trained_with"] = {k: made.get(k) for k in ("settings", "seed", "base", "steps",
                                                          "train_data", "code", "packages")}
        cut = contracts.truncated_cut(a.strategy)
        if cut and depth is not None:
            prov["truncated_from"] = truncated_from(a.model, made, cut, int(depth))
    return prov


def truncated_from(model, summary: dict, cut: str, depth: int) -> dict:
    """What a fine-tuned-then-truncated file cut: the model folder, the training it comes
    from (strategy, depth, seed of its train_summary.json), the depth cut to and the layers
    of that model kept (0-based)."""
    from workflow_scripts.biencoder.model.truncation import kept_layers

    trained = int(summary["depth"])
    return {"model": str(model), "summary": str(Path(model) / "train_summary.json"),
            "trained_strategy": summary.get("strategy"), "trained_depth": trained,
            "seed": summary.get("seed"), "cut": cut, "depth": depth,
            "kept_layers": kept_layers(cut, depth, trained)}


def at_depth(frames: dict, depth) -> dict:
    """Frames keyed by None (a model's own depth) or (None, dim), keyed by `depth` instead."""
    return {(depth if k is None else (depth, k[1]) if isinstance(k, tuple) and k[0] is None
             else k): df for k, df in frames.items()}


def write_frames(frames: dict, depths, outs, a, folder=None, runs=None,
                 weights=None) -> None:
    """Each depth's per-query metrics, with the run's identity columns and its provenance,
    to its file; with `runs` (keyed as frames), its ranking beside it (paths.run_files)."""
    for d, out in zip(depths, outs, strict=True):
        _write(frames[d], out, a, d, provenance(a, folder, d, weights),
               None if runs is None else runs[d])


def write_dim_frames(frames: dict, depths, dims, outs, a, folder=None, runs=None) -> None:
    """Each (depth, dimension)'s per-query metrics (frames keyed (depth, dim)) to its file,
    depth by depth, each depth's dimensions in `dims` order (outs' order); each file says
    its dimension (column `dim`, provenance `dim`, its run's tag)."""
    keys = [(d, m) for d in depths for m in dims]
    for (d, m), out in zip(keys, outs, strict=True):
        prov = {**provenance(a, folder, d), "dim": int(m),
                "truncation": "first dim coordinates of the full embedding, L2-normalised"}
        _write(frames[(d, m)].assign(dim=int(m)), out, a, d, prov,
               None if runs is None else runs[(d, m)], dim=int(m))


def _write(df, out, a, depth, prov: dict, ranking=None, dim=None) -> None:
    for key, value in (("recipe", a.recipe), ("strategy", a.strategy), ("depth", depth),
                       ("seed", a.seed), ("benchmark", a.benchmark)):
        df[key] = value
    df.attrs["provenance"] = prov
    contracts.write_parquet(out, df)
    if ranking is not None:
        tag = trec_run.run_tag(a.recipe, a.strategy, depth, a.seed, a.benchmark, dim)
        trec_run.write_beside(out, ranking, tag, prov)
    print(f"{out}: {len(df)} queries, NDCG@10 {df['ndcg@10'].mean():.4f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Zero-shot retrieval evaluation, per query.")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a trained sentence-transformers folder")
    src.add_argument("--base", help="an untrained base model spec (with --depth or --depths)")
    src.add_argument("--snapshots", help="a training's learning-curve folder (OUT/steps, "
                                         "with --steps): every snapshot, with a step column")
    ap.add_argument("--steps", nargs="+", type=int, help="the snapshot steps (stepN folders)")
    ap.add_argument("--final", help="with --snapshots: the training's final model folder, "
                                    "evaluated in the same process (its last step); its "
                                    "metrics go to --final-out, without a step column")
    ap.add_argument("--final-out", nargs="+", help="with --final: one file per depth")
    ap.add_argument("--strategy", required=True)
    depth = ap.add_mutually_exclusive_group(required=True)
    depth.add_argument("--depth", type=int)
    depth.add_argument("--depths", nargs="+", type=int,
                       help="every depth of a model whose weights do not depend on depth "
                            "(the base of strategy top, a train-once model) from one pass; "
                            "one --out file per depth, in this order")
    ap.add_argument("--benchmark-dir", required=True)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--recipe", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--settings-json", default="{}",
                    help="core/settings.py Evaluate as JSON (top_k, batch_size, "
                         "max_seq_length, ignore_identical_ids); absent keys take "
                         "config/schema.yaml's defaults")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", nargs="+", required=True)
    ap.add_argument("--dims", nargs="+", type=int, default=[],
                    help="embedding dimensions evaluated besides the full one, each a cut of "
                         "the same embeddings (biencoder/embedding_dims.py); with --snapshots, "
                         "of the final model only")
    ap.add_argument("--dim-out", nargs="+", default=[],
                    help="with --dims: one file per depth and dimension, depth by depth, each "
                         "depth's dimensions in --dims order")
    a = ap.parse_args(argv)
    s = Evaluate.from_json(a.settings_json)
    depths = a.depths or [a.depth]
    if len(a.out) != len(depths):
        ap.error(f"{len(a.out)} --out file(s) for {len(depths)} depth(s)")
    if bool(a.final) != bool(a.final_out) or (a.final and not a.snapshots):
        ap.error("--final and --final-out go together, with --snapshots")
    if a.final and len(a.final_out) != len(depths):
        ap.error(f"{len(a.final_out)} --final-out file(s) for {len(depths)} depth(s)")
    if a.depths and contracts.base_strategy(a.strategy) != contracts.PER_DEPTH_REFERENCE:
        ap.error(f"--depths: strategy {a.strategy} keeps other than the bottom layers; one "
                 "pass gives the depths of strategy top and the train-once arms only")
    if len(a.dim_out) != len(depths) * len(a.dims):
        ap.error(f"{len(a.dim_out)} --dim-out file(s) for {len(depths)} depth(s) x "
                 f"{len(a.dims)} dimension(s)")
    if a.dims and a.snapshots and not a.final:
        ap.error("--dims with --snapshots: the final model's (--final)")
    cut = contracts.truncated_cut(a.strategy)
    if cut and not a.model:
        ap.error(f"--strategy {a.strategy}: a fine-tuned-then-truncated arm cuts a trained "
                 "model (--model)")

    from workflow_scripts.biencoder.model.encoder import load_encoder
    from workflow_scripts.core.runtime import set_threads

    set_threads(a.threads)
    opts = dict(top_k=s.top_k, batch_size=s.batch_size,
                ignore_identical_ids=s.ignore_identical_ids)
    runs: dict = {}  # every ranking a file is written from, keyed as its frame
    if a.snapshots:
        if not a.steps:
            ap.error("--snapshots needs --steps")
        folders = {n: Path(a.snapshots) / f"step{n}" for n in a.steps}
        missing = [str(f) for f in folders.values() if not (f / "model.safetensors").exists()]
        if missing:
            sys.exit(f"error: no snapshot at {', '.join(missing)} (the training's eval_steps "
                     "do not include it: retrain)")
        final_step = None
        if a.final:  # the final model is the curve's last point: one more folder, same batches
            final_step = final_model_step(a.final, a.steps)
            folders[final_step] = Path(a.final)
        frames, timing = evaluate_snapshots(folders, a.benchmark_dir,
                                            max_seq_length=s.max_seq_length,
                                            depths=a.depths, dims=a.dims,
                                            dims_step=final_step, runs=runs, **opts)
        frames = at_depth(frames if isinstance(frames, dict) else {None: frames}, a.depth)
        runs = at_depth(runs, a.depth)
        if a.final:
            frames, finals = split_final(frames, final_step)
            write_frames(finals, depths, a.final_out, a, folder=a.final, runs=runs)
            write_dim_frames(finals, depths, a.dims, a.dim_out, a, folder=a.final, runs=runs)
        # The snapshots' file: no run (the curve's points), each step's weights named.
        steps = {str(n): eval_origin.weights_origin(f) for n, f in sorted(folders.items())
                 if n != final_step}
        write_frames(frames, depths, a.out, a, folder=a.final, weights=steps)
    else:
        if a.depths:
            frames, timing = evaluate_depths(a.model or a.base, a.depths, a.benchmark_dir,
                                             max_seq_length=s.max_seq_length, dims=a.dims,
                                             runs=runs, **opts)
        else:
            # A trained model as saved, or (a truncated arm) cut by its strategy's rule.
            encoder = (load_encoder(a.model, depth=a.depth, strategy=cut,
                                    max_seq_length=s.max_seq_length) if cut
                       else load_encoder(a.model, max_seq_length=s.max_seq_length) if a.model
                       else load_encoder(a.base, depth=a.depth, strategy=a.strategy,
                                         max_seq_length=s.max_seq_length))
            frames, timing = evaluate_encoder(encoder, a.benchmark_dir, a.depth, a.dims,
                                              runs=runs, **opts)
        write_frames(frames, depths, a.out, a, runs=runs)
        write_dim_frames(frames, depths, a.dims, a.dim_out, a, runs=runs)
    print(f"encode {timing['encode_seconds']:.1f} s, search+metrics "
          f"{timing['search_metrics_seconds']:.2f} s")


if __name__ == "__main__":
    main()
