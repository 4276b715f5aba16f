"""The bi-encoder depth study: data, training, evaluation, latency, stats, figures, report."""
