"""Exports of a study's models and results in the forms other tools read: a model folder with
sentence-transformers' model card completed by the study's evaluation (model_card.py), and
MTEB-shaped result files (mteb_results.py). results.py: what both read. Imports core only: the
exports read artifacts (per-query files, model folders), not other stages' code."""
