"""The bootstrap intervals of embodmem.stats against the percentile bootstrap written out as a loop:
every argument (resamples, seed, confidence, clusters) changes the interval as documented."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from embodmem.stats import (
    cluster_resamples,
    difference_of_means,
    mean_ci,
    normalised_gain,
    paired_ci,
    ratio_of_means,
    resample_indices,
)


def _loop_interval(
    draws: Sequence[Sequence[int]],
    statistic: Callable[[list[int]], float],
    confidence: float,
) -> tuple[float, float]:
    """Percentile interval of ``statistic`` over the given index draws, NaN values left out."""
    values = [v for v in (statistic(list(row)) for row in draws) if not math.isnan(v)]
    if not values:
        return (math.nan, math.nan)
    alpha = (1 - confidence) / 2
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1 - alpha))


def _plain_draws(n: int, n_resamples: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [[int(i) for i in rng.integers(0, n, n)] for _ in range(n_resamples)]


def _cluster_draws(labels: list[str], n_resamples: int, seed: int) -> list[list[int]]:
    """Whole clusters drawn with replacement (clusters in sorted label order), each bringing every member."""
    names = sorted(set(labels))
    members = {c: [i for i, lab in enumerate(labels) if lab == c] for c in names}
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_resamples):
        picks = rng.integers(0, len(names), len(names))
        out.append([i for p in picks for i in members[names[int(p)]]])
    return out


VALUES = [0.0, 1.0, 0.25, 0.75, 1.0, 0.5, 0.0, 1.0]
COLD = [0.5, 0.25, 0.0, 0.75, 0.5, 0.0, 0.25, 0.5]
WORLDS = ["b", "a", "a", "c", "b", "c", "d", "a"]


@pytest.mark.parametrize(("n_resamples", "seed", "confidence"), [(2000, 0, 0.95), (300, 7, 0.8), (150, 1, 0.5)])
def test_mean_ci_is_the_percentile_bootstrap(n_resamples: int, seed: int, confidence: float) -> None:
    kw = dict(n_resamples=n_resamples, seed=seed, confidence=confidence)
    mean = lambda rows: float(np.mean([VALUES[i] for i in rows]))
    assert mean_ci(VALUES, **kw) == pytest.approx(_loop_interval(_plain_draws(8, n_resamples, seed), mean, confidence))
    clustered = _loop_interval(_cluster_draws(WORLDS, n_resamples, seed), mean, confidence)
    assert mean_ci(VALUES, clusters=WORLDS, **kw) == pytest.approx(clustered)


@pytest.mark.parametrize(("n_resamples", "seed", "confidence"), [(2000, 0, 0.95), (300, 7, 0.8), (150, 1, 0.5)])
@pytest.mark.parametrize("statistic", [difference_of_means, normalised_gain])
def test_paired_ci_is_the_paired_percentile_bootstrap(
    statistic: Callable[..., np.ndarray], n_resamples: int, seed: int, confidence: float
) -> None:
    kw = dict(n_resamples=n_resamples, seed=seed, confidence=confidence)
    stat = lambda rows: float(statistic([VALUES[i] for i in rows], [COLD[i] for i in rows]))
    plain = _loop_interval(_plain_draws(8, n_resamples, seed), stat, confidence)
    assert paired_ci(VALUES, COLD, statistic, **kw) == pytest.approx(plain)
    clustered = _loop_interval(_cluster_draws(WORLDS, n_resamples, seed), stat, confidence)
    assert paired_ci(VALUES, COLD, statistic, clusters=WORLDS, **kw) == pytest.approx(clustered)


def test_defaults_are_2000_resamples_seed_0_and_95_percent() -> None:
    kw = dict(n_resamples=2000, seed=0, confidence=0.95)
    assert mean_ci(VALUES) == mean_ci(VALUES, **kw)
    assert mean_ci(VALUES, clusters=WORLDS) == mean_ci(VALUES, clusters=WORLDS, **kw)
    assert paired_ci(VALUES, COLD, difference_of_means) == paired_ci(VALUES, COLD, difference_of_means, **kw)
    assert paired_ci(VALUES, COLD, difference_of_means, clusters=WORLDS) == paired_ci(
        VALUES, COLD, difference_of_means, clusters=WORLDS, **kw
    )
    # and each of them matters
    assert mean_ci(VALUES, seed=1) != mean_ci(VALUES)
    assert mean_ci(VALUES, confidence=0.5) != mean_ci(VALUES)


def test_resample_indices_and_clusters() -> None:
    idx = resample_indices(5, n_resamples=400, seed=3)
    assert idx.shape == (400, 5) and idx.min() == 0 and idx.max() == 4
    np.testing.assert_array_equal(idx, np.random.default_rng(3).integers(0, 5, (400, 5)))
    draws = cluster_resamples(WORLDS, n_resamples=50, seed=2)
    assert [d.tolist() for d in draws] == _cluster_draws(WORLDS, 50, 2)
    assert len(cluster_resamples(WORLDS)) == 2000


def test_undefined_resamples_are_left_out_without_warnings() -> None:
    # Half the seeds have a perfect cold run: resamples drawing only those are undefined and dropped.
    warm, cold = [1.0, 0.5, 1.0, 1.0], [1.0, 1.0, 0.0, 0.5]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(float(normalised_gain([1.0, 0.5], [1.0, 1.0])))
        assert math.isnan(float(ratio_of_means([0.0], [0.0])))
        assert float(ratio_of_means([0.0], [5.0])) == math.inf
        lo, hi = paired_ci(warm, cold, normalised_gain)
    stat = lambda rows: float(normalised_gain([warm[i] for i in rows], [cold[i] for i in rows]))
    assert (lo, hi) == pytest.approx(_loop_interval(_plain_draws(4, 2000, 0), stat, 0.95))
    assert not math.isnan(lo) and hi <= 1.0


def test_one_sided_undefined_statistic_is_nan_not_minus_infinity() -> None:
    # Cold perfect, warm not: the gain is undefined (NaN), not (w - 1) / 0.
    value = normalised_gain([[0.5, 0.5], [1.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]])
    assert value.shape == (2,) and np.isnan(value).all()
    assert normalised_gain([[0.5, 1.0]], [[0.5, 0.5]]).tolist() == [0.5]


def test_bad_clusters_and_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="clusters: 2 labels for 3 values"):
        mean_ci([1.0, 2.0, 3.0], clusters=["a", "b"])
    with pytest.raises(ValueError, match="clusters: 2 labels for 3 values"):
        paired_ci([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], difference_of_means, clusters=["a", "b"])
    with pytest.raises(ValueError, match="1-D samples of equal length"):
        paired_ci([[1.0, 2.0]], [[1.0, 2.0]], difference_of_means)
    # fewer than two values: nothing to resample, whatever the clusters
    assert all(math.isnan(v) for v in mean_ci([1.0], clusters=["a"]))
    assert all(math.isnan(v) for v in paired_ci([1.0], [0.0], difference_of_means, clusters=["a"]))
