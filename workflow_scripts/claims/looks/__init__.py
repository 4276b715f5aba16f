"""Seeds on demand, the claims' side (config `adaptive_seeds`, docs/adaptive_seeds.md): arms
(the driving claims, their trained arms, the seeds an arm has at a look, the config check;
standard library only: the Snakefile plans the looks' inputs with it) and run (one look:
decide the open claims at the look's level, say which arms get the next seeds; the looks'
table and section of claims.md). `python -m workflow_scripts.claims.looks` runs a look.

The statistics they use are workflow_scripts.stats': look_plan (the seed counts of the
looks, pure Python) and sequential (each look's level). This __init__ imports nothing, so
that importing `arms` at parse time stays light.
"""
