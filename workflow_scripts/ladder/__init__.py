"""The depth-ladder study: does a credit-assignment method use depth?

Train the last k of L residual blocks of a ResMLP (the first L-k frozen at random init)
with backprop (BP), feedback alignment (FA) or direct feedback alignment (DFA), and see
whether test accuracy climbs with k. See docs/ladder.md.

Modules: data (datasets -> npz), model (ResMLP), methods (BP/FA/DFA steps), train (one
run -> one parquet), identity (frozen-stack check), stats (table, comparisons,
cross-check), report (figure, markdown). stats/report/runs/data never import torch.
"""
