"""Density ridges by subspace-constrained mean shift (SCMS): the numpy pieces.

The density is a Gaussian kernel density estimate on ``m`` support points
``s_j`` with bandwidth ``h``:

    p(x) = (1 / m) sum_j (2 pi h^2)^(-p/2) exp(-|x - s_j|^2 / (2 h^2)).

With ``w_j = exp(-|x - s_j|^2 / (2 h^2))`` and ``d_j = s_j - x``, the
mean-shift vector is ``m(x) = sum_j w_j d_j / sum_j w_j`` and ``h^2`` times
the Hessian of ``log p`` is

    h^2 grad^2 log p(x) = C(x) / h^2 - I,
    C(x) = sum_j w_j d_j d_j^T / sum_j w_j - m(x) m(x)^T,

the kernel-weighted covariance of the neighbourhood less the identity. A
``dim``-dimensional ridge is where the gradient (parallel to ``m``) is
orthogonal to the ``p - dim`` eigenvectors ``V(x)`` with the smallest
eigenvalues (the directions across the ridge) and those eigenvalues are
negative. SCMS moves each point by the mean shift projected on them,
``x <- x + V V^T m(x)``, until ``|V^T m(x)| / h`` is below a tolerance
(Ozertem & Erdogmus 2011, who use the Hessian of ``log p`` as here;
Genovese et al. 2014 define ridges with the Hessian of ``p``, which differs
off the ridge and stalls SCMS in the tails).

Everything here works on differences ``d_j`` to the moving point, so no
sum cancels. The sums run over all support points, or over given pairs of
points and support points (a kernel truncated at a radius).

The papers (Ozertem & Erdogmus 2011; Genovese et al. 2014; Chen et al.
2015) are listed in full under :class:`bigdr.curves.density_ridge.DensityRidge`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

#: Query points handled at once: the point-by-support difference array stays near 64 MiB.
PIECE_ELEMENTS = 8_000_000


class LocalMoments(NamedTuple):
    """Kernel sums around each point: ``sum w``, ``sum w d`` and ``sum w d d^T`` (``d = s - x``)."""

    weight: np.ndarray  # (b,)
    first: np.ndarray  # (b, p)
    second: np.ndarray  # (b, p, p)


def local_moments(
    points: np.ndarray, support: np.ndarray, h: float, pairs: tuple[np.ndarray, np.ndarray] | None = None
) -> LocalMoments:
    """Kernel sums over the support: all of it, or the (point, support row) ``pairs`` given (a truncated kernel)."""
    if pairs is not None:
        return _pair_moments(points, support, h, *pairs)
    b, p = points.shape
    step = max(1, PIECE_ELEMENTS // max(1, support.shape[0] * p))
    if b > step:
        parts = [local_moments(points[s : s + step], support, h) for s in range(0, b, step)]
        return LocalMoments(*(np.concatenate(a) for a in zip(*parts)))
    D = support[None, :, :] - points[:, None, :]  # (b, m, p)
    w = np.einsum("bkp,bkp->bk", D, D)
    w *= -0.5 / h**2
    np.exp(w, out=w)
    return LocalMoments(w.sum(axis=1), np.einsum("bk,bkp->bp", w, D), np.einsum("bk,bkp,bkq->bpq", w, D, D))


def _pair_moments(
    points: np.ndarray, support: np.ndarray, h: float, rows: np.ndarray, cols: np.ndarray
) -> LocalMoments:
    b, p = points.shape
    D = support[cols] - points[rows]  # (pairs, p)
    w = np.einsum("ip,ip->i", D, D)
    w *= -0.5 / h**2
    np.exp(w, out=w)
    first = np.empty((b, p))
    second = np.empty((b, p, p))
    for a in range(p):
        wa = w * D[:, a]
        first[:, a] = np.bincount(rows, wa, minlength=b)
        for c in range(a, p):
            second[:, a, c] = second[:, c, a] = np.bincount(rows, wa * D[:, c], minlength=b)
    return LocalMoments(np.bincount(rows, w, minlength=b), first, second)


def density(moments: LocalMoments, n_support: int, h: float) -> np.ndarray:
    """The kernel density estimate ``p(x)`` at each point."""
    p = moments.first.shape[1]
    return moments.weight / (n_support * (2.0 * np.pi * h**2) ** (p / 2.0))


def normal_space(moments: LocalMoments, h: float, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``V`` (b, p, p - dim): the eigenvectors across the ridge, and the eigenvalues (ascending).

    They are those of ``h^2`` times the Hessian of ``log p``,
    ``h^2 (H / p - g g^T / p^2) = C / h^2 - I`` with ``C`` the kernel-weighted
    covariance of the differences ``d`` (Ozertem & Erdogmus 2011). The
    Hessian of ``p`` itself turns convex across the ridge in the tails (past
    about one standard deviation of the smoothed profile), where its
    eigenvectors then point along the ridge and SCMS stalls away from it.
    """
    p = moments.first.shape[1]
    weight = np.maximum(moments.weight, np.finfo(float).tiny)
    mean = moments.first / weight[:, None]
    cov = moments.second / weight[:, None, None] - mean[:, :, None] * mean[:, None, :]
    values, vectors = np.linalg.eigh(cov / h**2 - np.eye(p)[None, :, :])
    return vectors[:, :, : p - dim], values


def scms_step(moments: LocalMoments, h: float, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The projected mean shift ``V V^T m`` of each point, ``|V^T m| / h``, and the across-ridge curvature.

    The curvature is the largest of the ``p - dim`` smallest eigenvalues of
    ``h^2`` times the Hessian of ``log p``: negative on a ridge, where the
    density falls off in every direction across it.
    """
    V, values = normal_space(moments, h, dim)
    p = moments.first.shape[1]
    shift = moments.first / np.maximum(moments.weight, np.finfo(float).tiny)[:, None]
    across = np.einsum("bpq,bp->bq", V, shift)
    return np.einsum("bpq,bq->bp", V, across), np.linalg.norm(across, axis=1) / h, values[:, p - dim - 1]


class RidgeRun(NamedTuple):
    """SCMS from a set of points: where they end, in how many steps, and whether they settled."""

    points: np.ndarray  # (b, p)
    steps: np.ndarray  # (b,) int
    converged: np.ndarray  # (b,) bool
    change: np.ndarray  # (b,) the last |V^T m| / h
    curvature: np.ndarray  # (b,) across the ridge at the last step: negative on a ridge


def scms(
    points: np.ndarray,
    support: np.ndarray,
    h: float,
    dim: int,
    *,
    tol: float = 1e-6,
    max_iter: int = 200,
    neighbours: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
) -> RidgeRun:
    """Move ``points`` onto the ``dim``-dimensional ridge of the support's density.

    ``neighbours(x)``, if given, returns the (row of ``x``, support row)
    pairs the kernel sums run over (a truncated kernel); it is asked again
    at every step as the points move. Points stop moving once
    ``|V^T m| / h <= tol``; the others continue up to ``max_iter`` steps.
    A point that settles where the density does not fall off across
    (``curvature >= 0``: a saddle or a minimum) is not on a ridge.
    """
    x = np.array(points, dtype=np.float64, copy=True)
    steps = np.zeros(len(x), dtype=np.int64)
    converged = np.zeros(len(x), dtype=bool)
    change = np.full(len(x), np.inf)
    curvature = np.full(len(x), np.nan)
    active = np.arange(len(x))
    for _ in range(int(max_iter)):
        if not len(active):
            break
        xa = x[active]
        moments = local_moments(xa, support, h, None if neighbours is None else neighbours(xa))
        move, size, bend = scms_step(moments, h, dim)
        change[active] = size
        curvature[active] = bend
        done = size <= tol
        converged[active[done]] = True
        keep = ~done
        x[active[keep]] += move[keep]
        steps[active[keep]] += 1
        active = active[keep]
    return RidgeRun(x, steps, converged, change, curvature)


def silverman_bandwidth(std: np.ndarray, n: int) -> float:
    """``h = (4 / (p + 2))^(1 / (p + 4)) n^(-1 / (p + 4)) min_k sigma_k``: the normal-reference rule.

    Silverman's rule of thumb with the smallest coordinate standard
    deviation; Chen et al. (2015) choose ridge bandwidths with the same
    dependence on ``n`` and the smallest standard deviation.
    """
    p = len(std)
    return float((4.0 / (p + 2.0)) ** (1.0 / (p + 4.0)) * n ** (-1.0 / (p + 4.0)) * np.min(std))
