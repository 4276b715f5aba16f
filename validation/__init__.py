"""The statistics library's validation: simulation studies of workflow_scripts/stats on one
generative model (model.py); `python -m validation` regenerates every table the docs quote."""
