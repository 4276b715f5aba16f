"""A trained model as others load it: the model's folder with sentence-transformers' model
card completed by the study's evaluation of that model.

The training job saves sentence-transformers' own card (README.md: base model, training
data statistics, loss, hyperparameters, training logs, framework versions), made by its
trainer's callbacks, which only a training has. The export leaves the trained folder as it
is (a training stays cached) and writes a copy: the model's files hard-linked (no second
copy of the weights; the learning-curve snapshots left out) and the card completed, through
huggingface_hub's ModelCard, the class sentence-transformers' card data extends:

- metadata: model_name, the tags depthlab and depth-<N>, base_model where the base is a Hub
  model (with the revision the training loaded), and model-index: the model's own arm's mean
  NDCG@10, Recall@100, MAP@100 and MRR@10 per benchmark (huggingface_hub's EvalResult, as
  sentence-transformers' evaluators fill it), each with the data's revision;
- a section "depthlab" after the title: study, recipe, arm, depth, seed, base model and
  training data with their sha256, the weights' sha256, and a table of every evaluation of
  these weights (for the deepest per-depth model also its cuts to shallower depths, the
  fine-tuned-then-truncated arm; for a train-once model every depth), with the data revision.

CLI: python -m workflow_scripts.biencoder.export.model_card --model DIR --study S \
        --evals EVAL.parquet ... --benchmarks-json '{...}' --out EXPORT_DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from workflow_scripts.biencoder.export import results
from workflow_scripts.core import contracts
from workflow_scripts.core.files import link_or_copy

CARD = "README.md"
LEFT_OUT = {CARD, "steps"}  # the card is rewritten; the snapshots are not the model
METRIC_LABELS = {"ndcg@10": "NDCG@10", "recall@100": "Recall@100", "map@100": "MAP@100",
                 "mrr@10": "MRR@10"}
SECTION = "## depthlab"


def card_text(model_dir, *, study: str, rows: list[dict], info: dict) -> str:
    """The completed card of a trained model folder (its README.md and train_summary.json)
    and the summarised evaluations of its weights (results.summarise)."""
    from huggingface_hub import ModelCard, ModelCardData

    model_dir = Path(model_dir)
    summary = json.loads((model_dir / "train_summary.json").read_text(encoding="utf-8"))
    readme = model_dir / CARD
    card = (ModelCard.load(readme) if readme.exists() else ModelCard(
        "---\n" + ModelCardData(library_name="sentence-transformers",
                                pipeline_tag="sentence-similarity").to_yaml()
        + "\n---\n\n# SentenceTransformer\n"))
    revisions = {b: results.data_revision(spec["dir"]) for b, spec in info.items()}
    weights = results.file_sha256(model_dir / "model.safetensors")
    strategy, depth, seed = summary["strategy"], int(summary["depth"]), summary["seed"]
    own = [r for r in rows if r["strategy"] == strategy and r["depth"] == depth]
    name = f"depthlab {study}: {summary_recipe(rows)} {strategy}{depth} seed {seed}"

    data = card.data
    data.model_name = name
    data.tags = list(dict.fromkeys([*(data.tags or []), "depthlab", f"depth-{depth}"]))
    base = summary.get("base_model") or {}
    if base.get("revision"):  # a Hub model, at the commit the training loaded
        data.base_model = base["spec"]
        data.base_model_revision = base["revision"]
    data.eval_results = [e for r in own for e in eval_results(r, info, revisions)]
    section = depthlab_section(summary, study, rows, revisions, weights)
    return f"---\n{data.to_yaml()}\n---\n" + insert_section(retitle(card.text, name), section)


def summary_recipe(rows: list[dict]) -> str:
    recipes = {r["recipe"] for r in rows}
    if len(recipes) != 1:
        raise contracts.DataError(f"the evaluations name {len(recipes)} recipes "
                                  f"({sorted(recipes)}): one model's are of one recipe")
    return recipes.pop()


def eval_results(row: dict, info: dict, revisions: dict) -> list:
    """huggingface_hub EvalResults of one evaluation: the four metrics, one each."""
    from huggingface_hub import EvalResult

    b = row["benchmark"]
    return [EvalResult(task_type="retrieval", task_name="Retrieval",
                       dataset_type=results.task_name(b, info[b]["source"]), dataset_name=b,
                       dataset_split="test", dataset_revision=revisions[b],
                       metric_type=results.MTEB_METRICS[m], metric_name=label,
                       metric_value=round(row[m], 6))
            for m, label in METRIC_LABELS.items()]


def depthlab_section(summary: dict, study: str, rows: list[dict], revisions: dict,
                     weights: str) -> str:
    base = summary.get("base_model") or {}
    data = summary.get("train_data") or {}
    lines = [
        SECTION, "",
        f"Trained by the depthlab study `{study}`: recipe `{summary_recipe(rows)}`, arm "
        f"`{summary['strategy']}`, {summary['depth']} layer(s) of the base model kept, seed "
        f"{summary['seed']}, {summary['steps']} steps.",
        "",
        f"- Base model: `{base.get('spec', summary.get('base'))}`"
        + (f" (revision {base['revision']})" if base.get("revision") else "")
        + (f", package {base['package']['name']} {base['package']['version']}"
           if base.get("package") else "")
        + (f", sha256 {base['sha256']}" if base.get("sha256") else ""),
        f"- Training data: `{data.get('path')}`, {data.get('rows')} rows, sha256 "
        f"{data.get('sha256')}",
        f"- Weights (model.safetensors): sha256 {weights}",
        "",
        "Zero-shot evaluations of these weights (exact cosine search, trec_eval's metrics, "
        "means over the test queries; docs/evaluation.md):",
        "",
        "| arm | layers | benchmark | queries | " + " | ".join(METRIC_LABELS.values())
        + " | data revision |",
        "|---|---|---|---|" + "---|" * len(METRIC_LABELS) + "---|",
    ]
    for r in sorted(rows, key=lambda r: (r["strategy"] != summary["strategy"], -r["depth"],
                                         r["benchmark"])):
        lines.append(f"| {r['strategy']} | {r['depth']} | {r['benchmark']} | {r['queries']} | "
                     + " | ".join(f"{r[m]:.4f}" for m in METRIC_LABELS)
                     + f" | {revisions[r['benchmark']]} |")
    return "\n".join(lines) + "\n"


def retitle(text: str, name: str) -> str:
    """The body with its first title "# ..." as `name` (sentence-transformers' template
    titles a card with its model_name)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("# "):
            lines[i] = f"# {name}"
            break
    return "\n".join(lines)


def insert_section(text: str, section: str) -> str:
    """The card's body with `section` after its title's paragraph (before the first "##")."""
    at = text.find("\n## ")
    return (text.rstrip() + "\n\n" + section if at < 0
            else text[:at + 1] + section + "\n" + text[at + 1:])


def export_model(model_dir, out_dir, card: str) -> None:
    """`out_dir`, atomically: the model's files hard-linked (snapshots and card left out),
    and `card` as its README.md."""
    model_dir = Path(model_dir)
    results.remove_leftovers(out_dir)
    with contracts.atomic_dir(out_dir) as tmp:
        for item in sorted(model_dir.iterdir()):
            if item.name in LEFT_OUT:
                continue
            if item.is_dir():
                shutil.copytree(item, tmp / item.name, copy_function=link_or_copy)
            else:
                link_or_copy(item, tmp / item.name)
        (tmp / CARD).write_text(card, encoding="utf-8")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="A trained model's folder with its model card "
                                             "completed by the study's evaluation.")
    ap.add_argument("--model", required=True, help="the trained model's folder")
    ap.add_argument("--study", required=True)
    ap.add_argument("--evals", nargs="+", required=True,
                    help="every per-query file of these weights")
    ap.add_argument("--benchmarks-json", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    info = results.benchmark_info(a.benchmarks_json)
    card = card_text(a.model, study=a.study, rows=results.summarise(a.evals), info=info)
    export_model(a.model, a.out, card)
    print(f"{a.out}: {card.count(chr(10))} card lines")


if __name__ == "__main__":
    main()
