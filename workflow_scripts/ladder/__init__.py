"""The depth-ladder study: does a credit-assignment method use depth?

Train the last k of L residual blocks of a ResMLP (the first L-k frozen at random init)
with backprop (BP), feedback alignment (FA) or direct feedback alignment (DFA), and see
whether test accuracy climbs with k. See docs/ladder.md.

Stages (each a `python -m` CLI): data (datasets -> npz), train (runs -> one parquet per
seed), identity (frozen-stack check), stats (table, comparisons, cross-check), report
(figure, markdown). Libraries they share: model (ResMLP), methods (BP/FA/DFA steps), runs
(the run file contract). A stage imports libraries, never another stage; stats, report,
runs and data never import torch.

The names below are the study's vocabularies, imported by the Snakefile at parse time (this
module imports nothing); config/ladder.schema.yaml's enums match them
(tests/unit/ladder/test_ladder.py).
"""

DATASETS = ("digits", "cifar10")
METHODS = ("bp", "fa", "dfa")
KINDS = ("frozen", "full")  # the standalone cross-check runs: all blocks frozen, or none
# CIFAR-10's binary tarball: the folder inside it and its batch files.
CIFAR_DIR = "cifar-10-batches-bin"
CIFAR_TRAIN = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
CIFAR_TEST = "test_batch.bin"
