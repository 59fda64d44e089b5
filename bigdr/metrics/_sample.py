"""Whether an embedding fitted on a sample of rows would gain from more rows: a measured check.

A method that builds its geometry on a sample (Isomap's sampled graph) loses
structure when the sample is too sparse for the manifold. Whether it is
cannot be read off the fit alone, but it can be measured: fit the same
method on a random half of the sample, embed rows that neither fit has seen
(held out from the sample) with both, and compare ``R_NX(K)`` of the two
embeddings of those rows on the same query rows (a paired difference, so
its standard error is that of one mean). Where halving the sample costs
much of the structure, the sample is on the steep part of its learning
curve and more rows would likely keep more; where it costs little, they
would not.

What it finds is measured in ``benchmarks/results/sampling.md`` (section
check): halving the default 100,000-row sample of a 1M-row swiss roll costs
0.017 to 0.026 of R_NX(10) (the fine-scale gain of a denser graph, present
at every size); on a 4-D manifold halving 50,000 rows costs 0.10 (a broken
embedding: warned), 200,000 rows 0.01 to 0.04 (a good one), but 20,000 rows
only 0.04 though that embedding is worse still (every size below about
100,000 fits it poorly), and 100,000 rows 0.03 or 0.38 by the seed. Hence a
diagnostic, not a default warning.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

from ..blockwise.sampling import keys_of, uniform_sample
from ..exceptions import SparseGraphWarning
from ._measures import mean_error, per_query
from ._ranks import check_pair, neighbour_ranks

#: Rows held out from the sample on which the two fits are compared, and their query rows.
HELD_ROWS = 20_000
CHECK_QUERIES = 1_000
#: Halving the sample loses structure when R_NX falls by at least this much (a fraction of the
#: neighbours kept), and by more than SIGNIFICANCE standard errors.
MIN_GAIN = 0.05
SIGNIFICANCE = 3.0


class SampleCheck(NamedTuple):
    """``R_NX(K)`` of held-out rows embedded by a fit on the ``n_rows``-row sample and by one on half of it."""

    n_rows: int
    n_held: int
    n_neighbors: int
    n_queries: int
    full: float
    half: float
    gain: float  # full - half, the mean of the queries' paired differences
    error: float  # the standard error of ``gain``

    @property
    def rising(self) -> bool:
        """Whether halving the sample loses structure (a gain of at least MIN_GAIN, beyond SIGNIFICANCE errors)."""
        return self.gain > max(SIGNIFICANCE * self.error, MIN_GAIN)

    def report(self) -> dict[str, Any]:
        """The figures as plain types (a model keeps them as ``sample_check_``; saved models hold JSON)."""
        return {**self._asdict(), "rising": self.rising}

    def message(self, parameter: str) -> str:
        return (
            f"The sample of {self.n_rows:,} rows ({parameter}) is too small for this manifold: embedded by a fit "
            f"on half of it, {self.n_held:,} rows outside the sample keep R_NX({self.n_neighbors}) = "
            f"{self.half:.3f} of their neighbourhoods, by the fit on all of it {self.full:.3f} (a gain of "
            f"{self.gain:.3f} ± {self.error:.3f}), so more rows would likely keep more structure. Raise "
            f"{parameter} (None: all rows)."
        )


def sample_check(
    held: np.ndarray,
    embedding: np.ndarray,
    other: np.ndarray,
    n_neighbors: int,
    n_rows: int,
    *,
    n_queries: int = CHECK_QUERIES,
    random_state: int | None = 0,
) -> SampleCheck | None:
    """Compare two embeddings of the ``held`` rows: by the fit on the sample of ``n_rows`` and by the fit on half.

    Queries are drawn among the rows both embeddings place (finite
    coordinates); each query's ``R_NX(K)`` (Lee & Verleysen 2009) is computed
    among those rows in each embedding, and the gain is the mean of the
    differences. None when fewer than ``4 K`` rows are placed by both.

    References
    ----------
    Lee, J. A. & Verleysen, M. (2009). Quality assessment of dimensionality
    reduction: rank-based criteria. Neurocomputing 72(7-9), 1431-1443.
    """
    placed = np.isfinite(embedding).all(axis=1) & np.isfinite(other).all(axis=1)
    m = int(placed.sum())
    if m < 4 * n_neighbors:
        return None
    queries = np.sort(np.random.default_rng(random_state).choice(m, min(n_queries, m), replace=False))
    per = []
    for Y in (embedding[placed], other[placed]):
        Xd, Yd = check_pair(held[placed], Y)
        per.append(per_query(neighbour_ranks(Xd, Yd, queries, n_neighbors), n_neighbors)["r_nx"])
    gain, error = mean_error(per[0] - per[1], m)
    return SampleCheck(n_rows, m, n_neighbors, len(queries), float(per[0].mean()), float(per[1].mean()), gain, error)


def check_fitted_sample(
    model: Any, X: Any, sample: np.ndarray, keys: np.ndarray, parameter: str, stacklevel: int = 2
) -> dict[str, Any] | None:
    """:func:`sample_check` of an estimator fitted on ``sample``, rows of ``X`` drawn by key (``keys``; given
    rows have infinite keys) with its ``seed_``: rows held out from ``X`` by the same draw, the same
    estimator fitted on half the sample (``parameter``, its sample size, None; no check of its own), at
    ``K`` its ``n_neighbors`` (10 when None). Warns (``SparseGraphWarning``) when halving loses structure;
    returns :meth:`SampleCheck.report` (None when there is nothing to compare)."""
    seed = getattr(model, "seed_", 0)
    n_data = int(np.isfinite(keys).sum())
    n = int(model.n_samples_seen_)
    if n <= n_data:
        return None
    rows, index = uniform_sample(X, min(n, n_data + HELD_ROWS), seed)  # the sample again, then the next rows
    held = np.asarray(rows[~np.isin(keys_of(index, seed), keys)], dtype=np.float64)
    n_neighbors = getattr(model, "n_neighbors", None) or 10
    params = {**model.get_params(deep=False), parameter: None, "check_sample": False}
    rng = np.random.default_rng([seed, 7])
    half = sample[np.sort(rng.choice(len(sample), len(sample) // 2, replace=False))]
    with warnings.catch_warnings():  # the figures below are what the user needs from this fit
        warnings.simplefilter("ignore")
        try:
            other = np.asarray(type(model)(**params).fit(half).transform(held), dtype=np.float64)
        except ValueError:  # e.g. half the sample's graph is disconnected: nothing to compare
            return None
    full = np.asarray(model.transform(held), dtype=np.float64)
    check = sample_check(held, full, other, n_neighbors, n_data, random_state=seed)
    if check is None:
        return None
    if check.rising:
        warnings.warn(check.message(parameter), SparseGraphWarning, stacklevel=stacklevel + 1)
    return check.report()
