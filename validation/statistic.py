"""The calibrated paired statistic over many studies at once: the mean squares of each
study's [seeds, examples] differences, then the library's vectorised df rule
(tail_calibration.plug_in) and tail calibration (calibrated_p), so that the simulation studies
test the claims' statistic and not a copy of it. check() holds it to calibrated.compare."""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from workflow_scripts.stats import calibrated as cal
from workflow_scripts.stats import tail_calibration as tc
from workflow_scripts.stats.df_rule import DEFAULT_RULE

RULES = DEFAULT_RULE


def mean_squares(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per study of x [studies, S, Q]: the seed term M (variance of the seed means / S), the
    example term X (variance of the example means / Q) and the residual term r (the seed x
    example mean square / (S Q))."""
    _, s, q = x.shape
    rows, cols = x.mean(axis=2), x.mean(axis=1)
    resid = x - rows[:, :, None] - cols[:, None, :] + x.mean(axis=(1, 2))[:, None, None]
    m = rows.var(axis=1, ddof=1) / s
    ex = cols.var(axis=1, ddof=1) / q
    r = np.einsum("ijk,ijk->i", resid, resid) / ((s - 1) * (q - 1)) / (q * s)
    return m, ex, r


def reduced(seed_df: float, q: int, x: float, r: float) -> tc.Reduced | None:
    """calibrated.reduced for one seed term of seed_df df over q examples (None: the plain t,
    from 20 seeds or without a residual or example part)."""
    if not (r > 0 and x > 0) or seed_df >= cal.PLAIN_FROM_SEED_DF:
        return None
    return tc.Reduced(seed_df, q - 1, q - 1, (x - r) / r, RULES)


def paired(d: np.ndarray) -> dict[str, np.ndarray]:
    """calibrated.compare(zeros, d, design="paired")'s estimate, variance and df per study of
    d [studies, S, Q] (S >= 3: the 2-seed rule needs the library's scalar path), with M, X, r."""
    _, s, q = d.shape
    if s < 3:
        raise ValueError("the vectorised statistic covers >= 3 seeds")
    m, x, r = mean_squares(d)
    var, df = tc.plug_in(m, x, r, tc.Reduced(s - 1, q - 1, q - 1, 1.0, RULES))
    return {"estimate": d.mean(axis=(1, 2)), "v": var, "df": df, "m": m, "x": x, "r": r,
            "seeds": s, "examples": q}


def t_sides(st: dict) -> tuple[np.ndarray, np.ndarray]:
    """The plug-in one-sided p of H0 delta <= 0 ("greater") and of delta >= 0 ("less"), each
    from the t tail itself (1 - p loses a tiny p's digits)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tx = st["estimate"] / np.sqrt(st["v"])
    pos = st["v"] > 0
    return (np.where(pos, special.stdtr(st["df"], -tx), (st["estimate"] <= 0) * 1.0),
            np.where(pos, special.stdtr(st["df"], tx), (st["estimate"] >= 0) * 1.0))


def reported(p: np.ndarray, st: dict, below: float) -> np.ndarray:
    """The reported (tail calibrated) p where the plug-in p is under `below`; above it the
    plug-in stays, a lower bound of the reported p (max(p, G(p)) >= p) that decides nothing
    at the levels below."""
    out = np.array(p, dtype=float)
    for i in np.flatnonzero((p < below) & (st["v"] > 0)):
        red = reduced(st["seeds"] - 1, st["examples"], st["x"][i], st["r"][i])
        out[i] = tc.calibrated_p(float(p[i]), red)
    return out


def check(d: np.ndarray, st: dict, studies: int = 20) -> None:
    """The vectorised statistic is calibrated.compare's, study by study (both sides)."""
    greater, less = (reported(p, st, 1.0) for p in t_sides(st))
    for i in range(min(studies, len(d))):
        zeros = np.zeros_like(d[i])
        res = cal.compare(zeros, d[i], design="paired")
        p_less = cal.compare(zeros, d[i], design="paired", alternative="less").p_value
        assert math.isclose(res.df, st["df"][i], rel_tol=1e-9), (i, res.df, st["df"][i])
        assert math.isclose(res.p_value, greater[i], rel_tol=1e-9, abs_tol=1e-15), i
        assert math.isclose(p_less, less[i], rel_tol=1e-9, abs_tol=1e-15), i
