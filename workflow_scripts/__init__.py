"""depthlab stage modules: pure functions plus a thin CLI each (python -m workflow_scripts.X)."""
