"""How faithful an embedding is: neighbourhood and distance measures, exact or estimated out of core.

:func:`evaluate` compares the rows of the data ``X`` with their embedding
``Y`` through each row's neighbours: which of its ``K`` nearest rows in one
space are among its ``K`` nearest in the other, and the ranks of those that
are not. Exact mode takes every row as a query; sampled mode draws ``m``
query rows uniformly and ranks each among **all** ``n`` rows of both stores,
in two streaming passes (the ``K`` nearest, then the rows closer than each),
so every rank measure is an unbiased estimate of its all-rows value, given
with its standard error. The passes are dask tree reductions over row
blocks: numpy, dask, zarr, AnnData and a cluster's workers alike. Cost: two
passes of ``m x n`` distance pairs in each space (10,000 queries among 10M
rows: 2 x 10^11 pairs).

Measures, for each ``K`` (see :func:`bigdr.metrics._measures.per_query`):
trustworthiness and continuity (Venna & Kaski 2001), the mean Jaccard
overlap of the two neighbour sets, the mean relative rank errors (Lee &
Verleysen 2007), the co-ranking quantities ``Q_NX``, ``B_NX``, LCMC and
``R_NX`` (Lee & Verleysen 2009), and the area under ``R_NX(K)`` for
``K = 1 .. max K`` on a log scale (Lee, Peluffo-Ordóñez & Verleysen 2015);
on pairs of query rows, normalised stress and the Spearman correlation of
the two distances (a Shepard diagram's). Chance level (a random embedding):
trustworthiness and continuity about 0.5, ``Q_NX`` about ``K / (n - 1)``,
LCMC and ``R_NX`` about 0.

References
----------
Venna, J. & Kaski, S. (2001). Neighborhood preservation in nonlinear
projection methods: an experimental study. ICANN 2001, LNCS 2130, 485-491.

Lee, J. A. & Verleysen, M. (2007). Nonlinear Dimensionality Reduction.
Springer (mean relative rank errors, section 4.4).

Lee, J. A. & Verleysen, M. (2009). Quality assessment of dimensionality
reduction: rank-based criteria. Neurocomputing 72(7-9), 1431-1443.

Lee, J. A., Peluffo-Ordóñez, D. H. & Verleysen, M. (2015). Multi-scale
similarities in stochastic neighbour embedding: reducing dimensionality
while preserving both local and global structure. Neurocomputing 169,
246-261.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._measures import RANK_MEASURES, auc_log_k, coranking_block, mean_error, pair_measures, per_query, r_nx_curve
from ._ranks import RANK_METRICS, check_pair, neighbour_ranks

__all__ = ["QualityReport", "assess", "continuity", "evaluate", "trustworthiness"]

#: Rows up to which ``n_queries="auto"`` takes every row as a query (exact mode).
EXACT_MAX = 20_000
#: Queries ``n_queries="auto"`` draws above :data:`EXACT_MAX` rows.
AUTO_QUERIES = 10_000
#: Queries whose pairs give stress and the Shepard correlation, split into groups for the error.
PAIR_QUERIES = 2_000
PAIR_GROUPS = 20


@dataclass
class QualityReport:
    """Quality measures of one embedding, each with its standard error (0 in exact mode).

    ``values[name][K]`` and ``errors[name][K]`` for the rank measures;
    ``auc``/``auc_error``: area under ``R_NX(K)`` (log K); ``pairs`` and
    ``pair_errors``: ``stress`` and ``shepard_spearman``; ``r_nx``: the mean
    ``R_NX(K)`` curve for K = 1, 2, ...; ``coranking``: the co-ranking matrix's
    block of ranks up to the largest K, summed over the queries
    (:func:`bigdr.metrics._measures.coranking_block`); ``shepard``: the query
    pairs' distances in the data and in the embedding (2 x pairs; not in
    :meth:`to_dict`). :func:`bigdr.plot.quality` draws the curve, the block and
    the Shepard diagram.
    """

    n_rows: int
    n_queries: int
    exact: bool
    n_neighbors: tuple[int, ...]
    values: dict[str, dict[int, float]]
    errors: dict[str, dict[int, float]]
    auc: float
    auc_error: float
    pairs: dict[str, float] = field(default_factory=dict)
    pair_errors: dict[str, float] = field(default_factory=dict)
    r_nx: list[float] = field(default_factory=list)
    coranking: list[list[int]] = field(default_factory=list)
    shepard: np.ndarray = field(default_factory=lambda: np.zeros((2, 0)), repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain types, for JSON."""
        return {
            "n_rows": self.n_rows,
            "n_queries": self.n_queries,
            "exact": self.exact,
            "n_neighbors": list(self.n_neighbors),
            "values": {m: {str(k): v for k, v in d.items()} for m, d in self.values.items()},
            "errors": {m: {str(k): v for k, v in d.items()} for m, d in self.errors.items()},
            "auc_r_nx": self.auc,
            "auc_r_nx_error": self.auc_error,
            "pairs": self.pairs,
            "pair_errors": self.pair_errors,
            "r_nx_curve": self.r_nx,
            "coranking_block": self.coranking,
        }

    def to_json(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)

    def __str__(self) -> str:
        mode = "exact" if self.exact else f"{self.n_queries:,} sampled queries"
        head = f"Embedding quality, {self.n_rows:,} rows ({mode}); value ± standard error"
        cols = " | ".join(f"K = {k}" for k in self.n_neighbors)
        lines = [head, f"| measure | {cols} |", "| --- |" + " --- |" * len(self.n_neighbors)]
        for m in RANK_MEASURES:
            cells = " | ".join(f"{self.values[m][k]:.4f} ± {self.errors[m][k]:.4f}" for k in self.n_neighbors)
            lines.append(f"| {m} | {cells} |")
        lines.append(f"\nAUC of R_NX(K), K = 1..{len(self.r_nx)} (log K): {self.auc:.4f} ± {self.auc_error:.4f}")
        for m, v in self.pairs.items():
            lines.append(f"{m} (pairs of queries): {v:.4f} ± {self.pair_errors[m]:.4f}")
        return "\n".join(lines)


def _check_neighbors(n_neighbors: Any, n: int) -> tuple[int, ...]:
    ks = (n_neighbors,) if isinstance(n_neighbors, (int, np.integer)) else tuple(n_neighbors)
    if not ks or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
        raise ValueError(f"n_neighbors must be positive integers; got {n_neighbors!r}.")
    if max(ks) >= n / 2:
        raise ValueError(
            f"n_neighbors={max(ks)} must be less than half the {n} rows (trustworthiness's normalisation); "
            f"use at most {max((n - 1) // 2, 1)}."
        )
    return tuple(sorted(int(k) for k in set(ks)))


def evaluate(
    X: Any,
    Y: Any,
    n_neighbors: Any = (10, 30, 100),
    *,
    n_queries: int | str | None = "auto",
    metric: str = "euclidean",
    random_state: int | None = 0,
    distances: bool = True,
) -> QualityReport:
    """Neighbourhood and distance measures of the embedding ``Y`` of ``X``, in exact or sampled mode.

    Parameters
    ----------
    X : array-like, dask array, path of a store or AnnData
        The data (n x p).
    Y : array-like, dask array or path of a store
        Its embedding (n x d), rows in the same order.
    n_neighbors : int or sequence of int
        Neighbourhood sizes K, all from one pair of passes; each less than n / 2.
    n_queries : int, None or "auto"
        Query rows: None takes every row (exact); an int draws that many
        uniformly (sampled, with standard errors); "auto" is exact up to
        20,000 rows and 10,000 queries above.
    metric : {"euclidean", "sqeuclidean", "cosine"}
        Distance in ``X`` (the embedding's is euclidean).
    random_state : int or None
        Seeds the queries.
    distances : bool
        Also normalised stress and the Shepard (Spearman) correlation of the
        distances, on the pairs among up to 2,000 of the queries.

    Returns
    -------
    QualityReport
        ``values`` and ``errors`` of every measure (module docstring) at every K.

    Notes
    -----
    With ``r_X(i, j)`` the rank of row ``j`` by distance to query ``i`` in
    ``X`` and ``N_Y(i)`` the query's K nearest rows in ``Y``, trustworthiness
    is ``1 - 2 / (K (2n - 3K - 1)) sum_{j in N_Y(i) \\ N_X(i)} (r_X(i, j) - K)``
    averaged over queries; every other rank measure is likewise a mean of a
    per-query value (:func:`bigdr.metrics._measures.per_query`), so a uniform
    sample of queries estimates it without bias, with the standard error of a
    mean of a sample drawn without replacement.

    References
    ----------
    Venna, J. & Kaski, S. (2001). Neighborhood preservation in nonlinear
    projection methods: an experimental study. ICANN 2001, 485-491.

    Lee, J. A. & Verleysen, M. (2009). Quality assessment of dimensionality
    reduction: rank-based criteria. Neurocomputing 72(7-9), 1431-1443.

    Examples
    --------
    >>> import numpy as np, bigdr
    >>> X = np.random.default_rng(0).standard_normal((500, 5))
    >>> report = bigdr.metrics.evaluate(X, X[:, :2], n_neighbors=10)
    >>> 0.5 < report.values["trustworthiness"][10] < 1
    True
    """
    if metric not in RANK_METRICS:
        raise ValueError(f"metric must be one of {RANK_METRICS}; got {metric!r}.")
    Xd, Yd = check_pair(X, Y)
    n = int(Xd.shape[0])
    ks = _check_neighbors(n_neighbors, n)
    if n_queries == "auto":
        n_queries = None if n <= EXACT_MAX else AUTO_QUERIES
    if n_queries is None or (isinstance(n_queries, (int, np.integer)) and n_queries >= n):
        queries = np.arange(n)
    elif isinstance(n_queries, (int, np.integer)) and not isinstance(n_queries, bool) and n_queries >= 2:
        queries = np.sort(np.random.default_rng(random_state).choice(n, int(n_queries), replace=False))
    else:
        raise ValueError(f"n_queries must be None, 'auto' or an int of at least 2; got {n_queries!r}.")
    ranks = neighbour_ranks(Xd, Yd, queries, max(ks), metric)
    values: dict[str, dict[int, float]] = {m: {} for m in RANK_MEASURES}
    errors: dict[str, dict[int, float]] = {m: {} for m in RANK_MEASURES}
    for k in ks:
        for m, v in per_query(ranks, k).items():
            values[m][k], errors[m][k] = mean_error(v, n)
    curve = r_nx_curve(ranks)
    auc, auc_error = mean_error(auc_log_k(curve), n)
    report = QualityReport(n, len(queries), len(queries) == n, ks, values, errors, auc, auc_error)
    report.r_nx = [float(v) for v in curve.mean(axis=0)]
    report.coranking = coranking_block(ranks).tolist()
    if distances:
        report.pairs, report.pair_errors, report.shepard = _pairs(ranks, random_state)
    return report


def _pairs(ranks: Any, seed: int | None) -> tuple[dict, dict, np.ndarray]:
    # The queries' rows came with the ranks: no further read of the stores.
    rng = np.random.default_rng([0 if seed is None else seed, 1])
    chosen = np.sort(rng.choice(len(ranks.xq), min(PAIR_QUERIES, len(ranks.xq)), replace=False))
    xq, yq = ranks.xq[chosen], ranks.yq[chosen]
    perm = rng.permutation(len(xq))  # the groups: random sets of queries
    got = pair_measures(xq[perm], yq[perm], PAIR_GROUPS)
    shepard = got.pop("distances")
    out = {m: float(v.mean()) for m, v in got.items()}
    err = {m: float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0 for m, v in got.items()}
    return out, err, shepard


def assess(
    model: Any, X: Any, n_neighbors: Any = (10, 30), *, n_queries: int | str | None = 2_000, **kwargs: Any
) -> QualityReport:
    """The quality of a fitted model's embedding of ``X``: :func:`evaluate` of ``X`` against ``model.transform(X)``.

    The embedding (n x n_components, small beside ``X``) is computed once and kept in memory, or
    on the cluster's workers, for the two passes. 2,000 queries by default give standard errors
    of a few thousandths on trustworthiness; pass more for finer ones.

    Examples
    --------
    >>> import numpy as np, bigdr
    >>> X = np.random.default_rng(0).standard_normal((2000, 6))
    >>> report = bigdr.metrics.assess(bigdr.PCA(2).fit(X), X, 10, n_queries=500)
    >>> report.n_queries
    500
    """
    import dask

    from ..io import as_array

    Y = as_array(model.transform(X), name="the embedding")
    (Y,) = dask.persist(Y)
    return evaluate(X, Y, n_neighbors, n_queries=n_queries, **kwargs)


def trustworthiness(X: Any, X_embedded: Any, *, n_neighbors: int = 5, metric: str = "euclidean") -> float:
    """Trustworthiness of ``X_embedded`` (scikit-learn's function, streamed: every row a query).

    ``1 - 2 / (n K (2n - 3K - 1)) sum_i sum_{j in U_K(i)} (r(i, j) - K)``, ``U_K(i)``
    the embedding's K nearest rows of ``i`` that are not among its K nearest in
    ``X`` and ``r(i, j)`` the rank of ``j`` by distance to ``i`` in ``X``. The
    same value as ``sklearn.manifold.trustworthiness`` without its n x n
    matrices; time grows as n². For many rows, :func:`evaluate` with
    ``n_queries`` estimates it.

    References
    ----------
    Venna, J. & Kaski, S. (2001). Neighborhood preservation in nonlinear
    projection methods: an experimental study. ICANN 2001, 485-491.
    """
    report = evaluate(X, X_embedded, n_neighbors, n_queries=None, metric=metric, distances=False)
    return report.values["trustworthiness"][int(n_neighbors)]


def continuity(X: Any, X_embedded: Any, *, n_neighbors: int = 5, metric: str = "euclidean") -> float:
    """Continuity of ``X_embedded``: trustworthiness with the two spaces' roles swapped (every row a query)."""
    report = evaluate(X, X_embedded, n_neighbors, n_queries=None, metric=metric, distances=False)
    return report.values["continuity"][int(n_neighbors)]
