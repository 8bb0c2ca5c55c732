"""Bootstrap confidence intervals for the report: deterministic, percentile, paired over seeds.

A seed here is one ``(world_seed, seed)`` pair: one world faced by every condition from the same
start poses. Warm and cold runs of a seed are therefore paired, and the interval of a warm-minus-cold
figure resamples whole pairs (the paired bootstrap, Efron & Tibshirani 1993, ch. 13), so the
variation between worlds that both conditions share does not widen it.

Records of one world are not independent (later tasks of one sequence share the world and what the
robot learnt in it), so the suite passes each pair's world as its cluster: a resample then draws
whole worlds with replacement and keeps every pair of each drawn world (the cluster bootstrap,
Davison & Hinkley 1997, sec. 3.8), which does not understate the interval as resampling episodes
would.

Every interval is a 95% percentile interval from 2,000 resamples of the seed indices drawn with
``numpy.random.default_rng(0)``: the same numbers give the same interval on every machine and run.
The resampling is written out here rather than taken from ``scipy.stats.bootstrap`` because a
normalised gain is undefined on resamples whose reference is perfect; those resamples are left out
(scipy would turn the whole interval into NaN), and the share left out is small unless the
reference is nearly always perfect.

Example:
    >>> warm = [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    >>> cold = [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    >>> lo, hi = paired_ci(warm, cold, difference_of_means)
    >>> bool(lo <= difference_of_means(warm, cold) <= hi), bool(hi <= 1.0)
    (True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

#: Resamples per interval, the confidence level and the RNG seed (fixed: intervals are reproducible).
N_RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0

Sample = Sequence[float] | np.ndarray
PairedStatistic = Callable[..., "np.ndarray | float"]
"""``f(warm, cold, axis=-1)``: one number per resample from the paired per-seed values."""


def difference_of_means(warm: Sample, cold: Sample, axis: int = -1) -> np.ndarray:
    """``mean(warm) - mean(cold)``: the warm-minus-cold gain (Continual World's un-normalised ft).

    Example:
        >>> float(difference_of_means([1.0, 0.5], [0.0, 0.5]))
        0.5
    """
    return np.mean(warm, axis=axis) - np.mean(cold, axis=axis)


def ratio_of_means(warm: Sample, cold: Sample, axis: int = -1) -> np.ndarray:
    """``mean(cold) / mean(warm)``: the steps ratio (above 1: warm needed fewer steps).

    Example:
        >>> float(ratio_of_means([50.0, 150.0], [200.0, 200.0]))
        2.0
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mean(cold, axis=axis) / np.mean(warm, axis=axis)


def normalised_gain(warm: Sample, cold: Sample, axis: int = -1) -> np.ndarray:
    """``(mean(warm) - mean(cold)) / (1 - mean(cold))``: Continual World's normalised ft.

    The gain as a share of what the reference left to gain; NaN when the reference is perfect
    (nothing left to gain). Meant for metrics bounded by 1 (success, SPL).

    Example:
        >>> float(normalised_gain([1.0, 1.0], [0.5, 0.5]))
        1.0
    """
    c = np.mean(cold, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(c < 1.0, (np.mean(warm, axis=axis) - c) / (1.0 - c), np.nan)


def resample_indices(n: int, *, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """``(n_resamples, n)`` seed indices drawn with replacement; the same for the same ``n``.

    Example:
        >>> resample_indices(3, n_resamples=2).shape
        (2, 3)
    """
    return np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))


def cluster_resamples(
    clusters: Sequence[object] | np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> list[np.ndarray]:
    """Element indices of each resample that draws whole clusters with replacement (every element
    of a drawn cluster, as often as the cluster was drawn); the same for the same clusters.

    Example:
        >>> [sorted(r.tolist()) for r in cluster_resamples(["a", "a", "b"], n_resamples=3)]
        [[2, 2], [0, 1, 2], [0, 0, 1, 1]]
    """
    _, labels = np.unique(np.asarray(clusters), return_inverse=True)
    members = [np.nonzero(labels == c)[0] for c in range(int(labels.max()) + 1)]
    picks = resample_indices(len(members), n_resamples=n_resamples, seed=seed)
    return [np.concatenate([members[c] for c in row]) for row in picks]


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of the defined (non-NaN) resampled values."""
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return (math.nan, math.nan)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(defined, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def paired_ci(
    warm: Sequence[float] | np.ndarray,
    cold: Sequence[float] | np.ndarray,
    statistic: PairedStatistic,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
    clusters: Sequence[object] | np.ndarray | None = None,
) -> tuple[float, float]:
    """Paired percentile bootstrap interval of ``statistic(warm, cold)``; ``warm[i]`` and
    ``cold[i]`` belong to the same seed, and each resample draws seeds, keeping pairs together.
    With ``clusters`` (one label per pair, e.g. its world) a resample draws whole clusters.

    Returns ``(nan, nan)`` with fewer than two pairs (nothing to resample) or when the statistic is
    undefined on every resample; resamples where it is undefined (NaN) are left out otherwise.

    Raises:
        ValueError: if ``warm`` and ``cold`` are not 1-D samples of equal length.
    """
    w = np.asarray(warm, dtype=float)
    c = np.asarray(cold, dtype=float)
    if w.shape != c.shape or w.ndim != 1:
        raise ValueError(f"paired_ci needs two 1-D samples of equal length, got {w.shape} and {c.shape}")
    if len(w) < 2:
        return (math.nan, math.nan)
    if clusters is not None:
        _check_clusters(clusters, len(w))
        draws = cluster_resamples(clusters, n_resamples=n_resamples, seed=seed)
        values = np.array([float(statistic(w[i], c[i], axis=-1)) for i in draws])
        return _percentile_interval(values, confidence)
    idx = resample_indices(len(w), n_resamples=n_resamples, seed=seed)
    values = np.asarray(statistic(w[idx], c[idx], axis=-1), dtype=float)
    return _percentile_interval(values, confidence)


def _check_clusters(clusters: Sequence[object] | np.ndarray, n: int) -> None:
    if len(clusters) != n:
        raise ValueError(f"clusters: {len(clusters)} labels for {n} values; allowed: one label per value")


def mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = N_RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
    clusters: Sequence[object] | np.ndarray | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of one sample (one value per seed; with
    ``clusters``, one label per value, a resample draws whole clusters).

    ``(nan, nan)`` with fewer than two values.

    Example:
        >>> mean_ci([0.5, 0.5, 0.5])
        (0.5, 0.5)
    """
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return (math.nan, math.nan)
    if clusters is not None:
        _check_clusters(clusters, len(v))
        draws = cluster_resamples(clusters, n_resamples=n_resamples, seed=seed)
        return _percentile_interval(np.array([v[i].mean() for i in draws]), confidence)
    idx = resample_indices(len(v), n_resamples=n_resamples, seed=seed)
    return _percentile_interval(v[idx].mean(axis=-1), confidence)
