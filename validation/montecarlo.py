"""Monte Carlo error of a simulated rate: the Wilson interval and the standard error."""

from __future__ import annotations

import math

Z95 = 1.959964


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson interval of a binomial rate k / n."""
    p = k / n
    mid, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (mid - half) / (1 + z * z / n), (mid + half) / (1 + z * z / n)


def rate_se(rate: float, n: int) -> float:
    """The binomial standard error of a rate over n trials."""
    return math.sqrt(rate * (1 - rate) / n)
