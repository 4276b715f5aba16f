"""What a reader sees: the figures stage (figures, figure_*), RESULTS.md (results and its
sections), the markdown helpers (markdown). Reads artifacts (results/<study>/stats/*.parquet,
results/<study>/latency/*), never another stage's code.

May import: core, and itself."""
