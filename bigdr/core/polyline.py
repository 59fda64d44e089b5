"""The Hastie-Stuetzle principal curve (1989): the numpy pieces.

The curve is a polyline through ``G`` vertices ``v_0 .. v_{G-1}``,
parametrised by arc length ``lambda`` in [0, L]. Each iteration projects
every row on it (the nearest point of every segment, :func:`project`), then
sets each vertex to a local linear kernel smoother of the rows against their
``lambda`` (the conditional expectation ``E[x | lambda_f(x) = lambda]``):

    f(l) = (s2 t0 - s1 t1) / (s0 s2 - s1^2),   s_k = sum_i w_i (lambda_i - l)^k,
                                               t_k = sum_i w_i (lambda_i - l)^k x_i,

with Gaussian weights ``w_i = exp(-(lambda_i - l)^2 / (2 h^2))``. Out of core
the rows enter through linearly binned sums (:class:`PolylineSums`: per bin
of an even grid on [0, L], the weight and weighted sum of the rows, each row
split between its two neighbouring bins), mergeable over blocks; the
smoother then runs on the bins (Wand 1994). The binning moves the smoother
by O(bin width^2).

References
----------
Hastie, T. & Stuetzle, W. (1989). Principal curves. Journal of the American
Statistical Association 84, 502-516.

Wand, M. P. (1994). Fast computation of multivariate kernel estimators.
Journal of Computational and Graphical Statistics 3, 433-445.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Rows projected at once: the row-by-segment matrices stay a few MiB whatever the block.
PIECE_ROWS = 4_096


class PolylineSums(NamedTuple):
    """Mergeable sums of one pass: linearly binned weights and row sums, and the squared distances."""

    n: int
    weight: np.ndarray  # (B,)
    total: np.ndarray  # (B, p)
    residual: float
    low: float  # the smallest arc length of the rows' projections
    high: float  # the largest


def merge_polyline_sums(a: PolylineSums, b: PolylineSums) -> PolylineSums:
    return PolylineSums(
        a.n + b.n,
        a.weight + b.weight,
        a.total + b.total,
        a.residual + b.residual,
        min(a.low, b.low),
        max(a.high, b.high),
    )


def arc_lengths(vertices: np.ndarray) -> np.ndarray:
    """Arc length at each vertex (G,), from 0 at the first."""
    steps = np.sqrt(np.einsum("ij,ij->i", np.diff(vertices, axis=0), np.diff(vertices, axis=0)))
    return np.concatenate([[0.0], np.cumsum(steps)])


class PolylineProjection(NamedTuple):
    """Rows projected on a polyline: arc length of the nearest point (b,) and squared distance (b,)."""

    arc: np.ndarray
    sq: np.ndarray


def extended(vertices: np.ndarray, reach: float) -> np.ndarray:
    """The polyline with a segment of length ``reach`` added at each end, along its end segments."""
    ends = [vertices[0] - vertices[1], vertices[-1] - vertices[-2]]
    units = [e / max(float(np.linalg.norm(e)), np.finfo(float).tiny) for e in ends]
    return np.vstack([vertices[0] + reach * units[0], vertices, vertices[-1] + reach * units[1]])


def project(X: np.ndarray, vertices: np.ndarray, reach: float = 0.0) -> PolylineProjection:
    """Each row's nearest point on the polyline: its arc length and squared distance.

    For every segment ``a + t d`` (t in [0, 1]) the nearest point has
    ``t = clip((x - a).d / |d|^2, 0, 1)``; the segment is chosen by the
    squared distances less ``|x|^2`` from products of the rows with the
    segments, and the chosen one's point recomputed from ``x - a``. With
    ``reach > 0`` the ends are first extended by ``reach`` (:func:`extended`),
    so rows beyond an end project past it: arc lengths from ``-reach`` to
    ``L + reach``, measured from the first vertex.
    """
    if len(X) > PIECE_ROWS:
        parts = [project(X[s : s + PIECE_ROWS], vertices, reach) for s in range(0, len(X), PIECE_ROWS)]
        return PolylineProjection(*(np.concatenate(a) for a in zip(*parts)))
    X = np.asarray(X, dtype=np.float64)
    line = extended(vertices, reach) if reach > 0 else vertices
    A, D = line[:-1], np.diff(line, axis=0)
    length2 = np.maximum(np.einsum("ij,ij->i", D, D), np.finfo(float).tiny)
    # Two products of [x, 1] give, per segment, u = (x - a).d / |d|^2 and |a|^2 - 2 x.a; then
    # |x - a - t d|^2 - |x|^2 = |a|^2 - 2 x.a + |d|^2 t (t - 2 u) with t = clip(u, 0, 1). In float64:
    # in float32 the rounding swapped segments whose distances nearly tie (inside a bend, two neighbours).
    Y = np.empty((len(X), X.shape[1] + 1))
    Y[:, :-1] = X
    Y[:, -1] = 1.0
    u = Y @ np.vstack([D.T / length2, -np.einsum("ij,ij->i", A, D) / length2])
    score = Y @ np.vstack([-2.0 * A.T, np.einsum("ij,ij->i", A, A)])
    t = np.clip(u, 0.0, 1.0)
    u *= -2.0
    u += t
    u *= t
    u *= length2
    score += u
    seg = np.argmin(score, axis=1)
    a, d = A[seg], D[seg]
    tt = np.clip(np.einsum("ij,ij->i", X - a, d) / length2[seg], 0.0, 1.0)
    r = X - a - tt[:, None] * d
    arc = arc_lengths(line) - reach
    return PolylineProjection(arc[seg] + tt * np.sqrt(length2[seg]), np.einsum("ij,ij->i", r, r))


def binned_sums(X: np.ndarray, arc: np.ndarray, sq: np.ndarray, start: float, stop: float, n_bins: int) -> PolylineSums:
    """Linear binning of the rows ``X`` at arc lengths ``arc`` on ``n_bins`` even points of [start, stop]."""
    X = np.asarray(X, dtype=np.float64)
    pos = np.clip((arc - start) / max(stop - start, np.finfo(float).tiny) * (n_bins - 1), 0.0, n_bins - 1)
    low = np.minimum(pos.astype(np.int64), n_bins - 2)
    frac = pos - low
    weight = np.bincount(low, 1.0 - frac, n_bins) + np.bincount(low + 1, frac, n_bins)
    total = np.empty((n_bins, X.shape[1]))
    for j in range(X.shape[1]):
        total[:, j] = np.bincount(low, (1.0 - frac) * X[:, j], n_bins) + np.bincount(low + 1, frac * X[:, j], n_bins)
    ends = (float(arc.min()), float(arc.max())) if len(arc) else (np.inf, -np.inf)
    return PolylineSums(len(X), weight, total, float(np.sum(sq)), *ends)


def empty_sums(n_bins: int, n_features: int) -> PolylineSums:
    return PolylineSums(0, np.zeros(n_bins), np.zeros((n_bins, n_features)), 0.0, np.inf, -np.inf)


def smooth(sums: PolylineSums, start: float, stop: float, n_vertices: int, bandwidth: float) -> np.ndarray:
    """The new vertices: the local linear smoother of the binned rows (bins on [start, stop]).

    Evaluated at ``n_vertices`` even arc lengths from the smallest to the
    largest of the rows' (``sums.low``, ``sums.high``); ``bandwidth`` is
    ``h`` in arc length. Where the local line is undetermined (the rows
    within reach share one arc length) the local mean ``t0 / s0`` stands in.
    """
    bins = np.linspace(start, stop, len(sums.weight))
    at = np.linspace(sums.low, sums.high, n_vertices)
    delta = bins[None, :] - at[:, None]  # (G, B)
    K = np.exp(-0.5 * (delta / bandwidth) ** 2)
    Kw = K * sums.weight[None, :]
    s0, s1, s2 = Kw.sum(axis=1), (Kw * delta).sum(axis=1), (Kw * delta**2).sum(axis=1)
    if np.any(s0 <= 0):
        raise ValueError("A vertex of the curve has no rows within reach of the smoother; raise span.")
    t0, t1 = K @ sums.total, (K * delta) @ sums.total
    det = s0 * s2 - s1**2
    line = det > 1e-12 * np.maximum(s0 * s2, np.finfo(float).tiny)
    out = t0 / s0[:, None]
    out[line] = (s2[line, None] * t0[line] - s1[line, None] * t1[line]) / det[line, None]
    return out
