"""Distances between the rows of in-memory blocks, and the metric names bigdr knows."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

KDTREE_METRICS = {"euclidean": 2, "l2": 2, "manhattan": 1, "cityblock": 1, "l1": 1, "chebyshev": np.inf, "cosine": 2}
CDIST_NAMES = {"manhattan": "cityblock", "l1": "cityblock", "l2": "euclidean"}
CDIST_METRICS = {
    "l1",
    "l2",
    "euclidean",
    "sqeuclidean",
    "manhattan",
    "cityblock",
    "chebyshev",
    "cosine",
    "correlation",
    "minkowski",
    "canberra",
    "braycurtis",
    "hamming",
    "jaccard",
}

#: Bytes of gathered candidate rows :func:`paired_distances` holds at a time.
PAIRED_BYTES = 64 * 2**20


def pairwise_distances(
    A: np.ndarray, B: np.ndarray, metric: Any = "euclidean", metric_params: dict | None = None
) -> np.ndarray:
    """Distances between the rows of two in-memory blocks, ``(len(A), len(B))``.

    ``metric`` is a name of ``scipy.spatial.distance.cdist`` (``manhattan``
    and ``l1``/``l2`` accepted) or a callable ``f(A, B) -> (len(A), len(B))``
    array. Euclidean distances in more than 32 dimensions go through a gemm
    (``|a|^2 + |b|^2 - 2 a.b``, clipped at 0), 20-50x faster than ``cdist``.
    """
    A = np.asarray(A)
    B = np.asarray(B)
    if callable(metric):
        D = np.asarray(metric(A, B, **(metric_params or {})), dtype=np.float64)
        if D.shape != (len(A), len(B)):
            raise ValueError(
                f"The metric function returned shape {D.shape} for blocks of {len(A)} and {len(B)} "
                f"rows; it must return ({len(A)}, {len(B)})."
            )
        return D
    if metric in ("euclidean", "l2", "sqeuclidean") and A.shape[1] > 32:
        sq = np.einsum("ij,ij->i", A, A)[:, None] + np.einsum("ij,ij->i", B, B)[None, :] - 2.0 * (A @ B.T)
        sq = np.maximum(sq, 0.0, out=sq)
        return sq if metric == "sqeuclidean" else np.sqrt(sq, out=sq)
    from scipy.spatial.distance import cdist

    return cdist(A, B, metric=CDIST_NAMES.get(metric, metric), **(metric_params or {}))


def paired_distances(q: np.ndarray, reference: np.ndarray, cand: np.ndarray, metric: Any = "euclidean") -> np.ndarray:
    """Distance of each row ``q[b]`` to each of its candidate reference rows ``reference[cand[b]]``, ``(len(q), c)``.

    Computed from the differences, not by the gemm identity, so rows that
    coincide come out exactly 0 and near rows keep their digits. Euclidean
    distances come from one compiled pass that sums in float64 and never
    gathers the candidate rows into a (rows, c, p) array (that gather was a
    sixth of a brute-force query's time on 20,000 x 50 reference rows).
    """
    if metric in ("euclidean", "l2", "sqeuclidean"):
        out = np.empty(cand.shape)
        _paired_sq(np.ascontiguousarray(q), np.ascontiguousarray(reference), np.ascontiguousarray(cand), out)
        return out if metric == "sqeuclidean" else np.sqrt(out, out=out)
    if metric != "cosine":
        return np.stack([pairwise_distances(q[i : i + 1], reference[c], metric)[0] for i, c in enumerate(cand)])
    out = np.empty(cand.shape)
    step = max(1, PAIRED_BYTES // max(1, cand.shape[1] * q.shape[1] * q.itemsize))  # bounds the gathered rows
    for s in range(0, len(q), step):
        qs, cs = q[s : s + step], cand[s : s + step]
        out[s : s + step] = 1.0 - np.einsum("bp,bkp->bk", unit_rows(qs), unit_rows(reference[cs]))
    return out


@numba.njit(nogil=True, cache=True)
def _paired_sq(q, reference, cand, out):  # pragma: no cover (compiled)
    n, c = cand.shape
    p = q.shape[1]
    for b in range(n):
        for j in range(c):
            r = reference[cand[b, j]]
            acc = 0.0
            for t in range(p):
                d = np.float64(q[b, t]) - np.float64(r[t])
                acc += d * d
            out[b, j] = acc


def check_distance_metric(metric: Any) -> None:
    """Raise a clear error for a metric :func:`pairwise_distances` cannot compute."""
    if callable(metric):
        return
    if not isinstance(metric, str) or metric not in CDIST_METRICS:
        raise ValueError(
            f"metric={metric!r} is not supported; use one of {sorted(CDIST_METRICS)} "
            f"or a function f(A, B) returning the distance matrix."
        )


def unit_rows(a: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(a, axis=-1, keepdims=True)
    return a / np.where(norms > 0, norms, 1)
