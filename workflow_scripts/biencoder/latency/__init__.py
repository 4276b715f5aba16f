"""Latency profiling of the truncated encoders: the profiling stage (profile: the CLI, one
run of interleaved balanced rounds), its measuring protocol (protocol) and machine
readings (host); the summary stage (summary) with the relative ladder (relative) and the
coherence verdicts (coherence, checks).

May import: core, biencoder.model (to load the models it times). Never imports training,
evaluation, stats or the report."""
