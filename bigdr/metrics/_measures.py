"""Per-query quality measures from neighbour ranks, and pairwise-distance measures on query pairs.

Every rank measure is a mean over query rows of a per-query value, so the
mean over a uniform sample of queries is an unbiased estimate of the
all-rows value, with the standard error of a mean.
"""

from __future__ import annotations

import numpy as np

from ._ranks import Ranks

#: The rank measures, in the order reports list them; higher is better for all but ``b_nx``.
RANK_MEASURES = (
    "trustworthiness",
    "continuity",
    "knn_jaccard",
    "mrre_false",
    "mrre_missing",
    "q_nx",
    "b_nx",
    "lcmc",
    "r_nx",
)


def mean_error(values: np.ndarray, n: int) -> tuple[float, float]:
    """Mean and its standard error for a sample without replacement from ``n`` (0 when all are in)."""
    m = len(values)
    if m < 2 or m >= n:
        return float(values.mean()), 0.0
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(m) * np.sqrt(1 - m / n))


def per_query(r: Ranks, K: int) -> dict[str, np.ndarray]:
    """Each rank measure at neighbourhood size ``K`` for every query (arrays of length m).

    With ``a`` running over a query's ``K`` nearest rows in one space and
    ``r`` their ranks in the other, ``n`` rows in all:

    - trustworthiness ``1 - 2 / (K (2n - 3K - 1)) sum (r_X(j) - K)`` over the
      embedding's neighbours ``j`` outside the data's ``K`` (Venna & Kaski
      2001); continuity the same with the spaces swapped;
    - ``knn_jaccard``: ``|N_X ∩ N_Y| / |N_X ∪ N_Y|``;
    - ``mrre_false``, ``mrre_missing``: ``1 - sum |r_X(j) - r_Y(j)| / r(j) / c_K``
      over the embedding's (resp. data's) neighbours, ``r`` their rank in that
      space and ``c_K = sum_{k<=K} |n - 2k + 1| / k`` (Lee & Verleysen 2007, as
      ZADU normalises it: 1 is no error);
    - ``q_nx = |N_X ∩ N_Y| / K``; ``b_nx``: (intrusions - extrusions) / K among
      the rows in both (positive: rows brought closer); ``lcmc = q_nx - K / (n - 1)``;
      ``r_nx = ((n - 1) q_nx - K) / (n - 1 - K)`` (Lee & Verleysen 2009).
    """
    n = r.n
    own = np.arange(1, K + 1)
    rx = r.rank_x_of_y[:, :K]  # data ranks of the embedding's neighbours
    ry = r.rank_y_of_x[:, :K]  # embedding ranks of the data's neighbours
    both = ry <= K
    inter = both.sum(axis=1)
    c = float(np.sum(np.abs(n - 2 * own + 1) / own))
    q_nx = inter / K
    return {
        "trustworthiness": 1 - 2.0 / (K * (2 * n - 3 * K - 1)) * np.maximum(rx - K, 0).sum(axis=1),
        "continuity": 1 - 2.0 / (K * (2 * n - 3 * K - 1)) * np.maximum(ry - K, 0).sum(axis=1),
        "knn_jaccard": inter / (2 * K - inter),
        "mrre_false": 1 - (np.abs(rx - own) / own).sum(axis=1) / c,
        "mrre_missing": 1 - (np.abs(ry - own) / own).sum(axis=1) / c,
        "q_nx": q_nx,
        "b_nx": (np.sign(own - ry) * both).sum(axis=1) / K,
        "lcmc": q_nx - K / (n - 1),
        "r_nx": ((n - 1) * q_nx - K) / (n - 1 - K),
    }


def r_nx_curve(r: Ranks) -> np.ndarray:
    """``R_NX(K)`` for K = 1 .. K_max (columns) for every query (rows)."""
    n, m, K_max = r.n, r.rank_y_of_x.shape[0], r.rank_y_of_x.shape[1]
    # A data neighbour of rank a + 1 is in both K-neighbourhoods from K = max(a + 1, its embedding rank).
    enters = np.maximum(np.arange(1, K_max + 1), r.rank_y_of_x)
    hist = np.zeros((m, K_max + 2), dtype=np.int64)
    np.add.at(hist, (np.repeat(np.arange(m), K_max), np.minimum(enters, K_max + 1).ravel()), 1)
    inter = np.cumsum(hist, axis=1)[:, 1 : K_max + 1]
    Ks = np.arange(1, K_max + 1)
    keep = Ks < n - 1
    return ((n - 1) * inter[:, keep] / Ks[keep] - Ks[keep]) / (n - 1 - Ks[keep])


def coranking_block(r: Ranks) -> np.ndarray:
    """The co-ranking matrix's upper-left K_max x K_max block, summed over the queries.

    ``Q[k - 1, l - 1]`` counts the (query, row) pairs whose row is the query's k-th nearest in the
    data and l-th nearest in the embedding (Lee & Verleysen 2009): mass on the diagonal is kept
    rank, below it intrusions (brought closer), above it extrusions.
    """
    m, K = r.rank_y_of_x.shape
    a = np.broadcast_to(np.arange(K), (m, K))
    inside = r.rank_y_of_x <= K
    Q = np.zeros((K, K), dtype=np.int64)
    np.add.at(Q, (a[inside], r.rank_y_of_x[inside] - 1), 1)
    return Q


def auc_log_k(curve: np.ndarray) -> np.ndarray:
    """Area under ``R_NX(K)`` with a log scale for K: ``sum R_NX(K) / K / sum 1 / K`` (per row)."""
    w = 1.0 / np.arange(1, curve.shape[1] + 1)
    return curve @ w / w.sum()


def pair_measures(xq: np.ndarray, yq: np.ndarray, groups: int) -> dict[str, np.ndarray]:
    """Normalised stress and the Spearman correlation of distances (Shepard) on pairs of queries.

    The queries are split into ``groups`` disjoint groups; each group's pairs
    give one value, so the values are independent and their spread gives a
    standard error. Stress is ``sqrt(sum (d_X - d_Y)^2 / sum d_X^2)``, unscaled
    (as ZADU's). ``distances``: the pairs' two distances (2 x pairs), a Shepard diagram's points.
    """
    from scipy.stats import spearmanr

    from ..core.distances import pairwise_distances

    out: dict[str, list] = {"stress": [], "shepard_spearman": [], "dx": [], "dy": []}
    for idx in np.array_split(np.arange(len(xq)), groups):
        if len(idx) < 3:
            continue
        upper = np.triu_indices(len(idx), 1)
        dx = pairwise_distances(xq[idx], xq[idx])[upper]
        dy = pairwise_distances(yq[idx], yq[idx])[upper]
        out["stress"].append(float(np.sqrt(np.sum((dx - dy) ** 2) / np.sum(dx**2))))
        out["shepard_spearman"].append(float(spearmanr(dx, dy)[0]))
        out["dx"].append(dx)
        out["dy"].append(dy)
    pairs = {k: np.asarray(out[k]) for k in ("stress", "shepard_spearman")}
    pairs["distances"] = np.vstack(
        [np.concatenate(out["dx"] or [np.zeros(0)]), np.concatenate(out["dy"] or [np.zeros(0)])]
    )
    return pairs
