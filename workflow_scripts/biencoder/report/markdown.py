"""Markdown helpers of the report stage (biencoder/report/results.py and its sections). Every
number goes through core/notation.py, the notation the claims and the ladder's summary share."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.core import notation

fmt = notation.cell  # a table cell: floats with the precision that shows them
interval = notation.interval  # '0.1234 [0.1000, 0.1500]'


def md_table(df: pd.DataFrame, digits: int = 4) -> str:
    return notation.pipe_table(([fmt(v, digits) for v in row]
                                for row in df.itertuples(index=False)), list(df.columns))


def p_fmt(p) -> str:
    return notation.num(p, 4)


ci_cell = notation.ci_cell  # '[0.1000, 0.1500]': an interval without its estimate
