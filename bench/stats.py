"""Small statistics over timing samples: nearest-rank percentiles, spreads and ratios."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["percentile", "ratio", "spread"]


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile of ``values``.

    Args:
        values: at least one sample, in any order.
        q: the percentile, 0 < q <= 100 (50 is the median rank, 99 the p99).

    Returns:
        The smallest sample such that at least ``q`` percent of the samples are at or
        below it (so the p99 of 1,000 samples is the 990th smallest).

    Raises:
        ValueError: ``values`` is empty or ``q`` is outside (0, 100].
    """
    if not values:
        raise ValueError("percentile of no samples")
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} is outside (0, 100]")
    ordered = sorted(values)
    rank = math.ceil(q / 100 * len(ordered))
    return ordered[rank - 1]


def spread(values: Sequence[float]) -> dict[str, float | int] | None:
    """Median, minimum and maximum of repeated runs.

    Args:
        values: the figure from each run; may be empty.

    Returns:
        ``{"median": float, "min": float, "max": float, "n": int}``, or None when there
        are no values.
    """
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator
