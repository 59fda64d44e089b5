"""Regularized principal curves (Smola, Mika, Schoelkopf & Williamson 2001): the numpy pieces.

The curve is a kernel expansion over ``M`` centres ``c_j`` of a latent
interval [0, 1]: ``f(z) = sum_j alpha_j k(c_j, z)`` with
``k(a, b) = exp(-(a - b)^2 / (2 s^2))`` and ``alpha`` (M x p). It minimises

    R[f] = (1/n) sum_i min_z |x_i - f(z)|^2 + (lambda / 2) tr(alpha^T K_c alpha)

by alternating the projections ``xi_i = argmin_z |x_i - f(z)|^2`` (the
nearest point of a fine latent grid, then Gauss-Newton steps within the
neighbouring grid cells) and the closed-form coefficients

    alpha = (K_xi^T K_xi + (lambda n / 2) K_c)^-1 K_xi^T X.

``K_xi^T K_xi`` (M x M), ``K_xi^T X`` (M x p), the residual sum and the
count are sums over rows (:class:`CurveSums`): one pass per iteration,
merged over blocks.

References
----------
Smola, A. J., Mika, S., Schoelkopf, B. & Williamson, R. C. (2001).
Regularized principal manifolds. Journal of Machine Learning Research 1,
179-209.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.linalg

#: Gauss-Newton steps that refine each projection from its nearest grid point.
REFINE_STEPS = 3
#: Rows projected at once: the row-by-grid distance matrix stays a few tens of MiB whatever the block.
PIECE_ROWS = 16_384


class CurveSums(NamedTuple):
    """Mergeable sums of one pass: the alpha-step's matrices and the data term of R[f]."""

    n: int
    gram: np.ndarray  # (M, M): sum K_xi^T K_xi
    cross: np.ndarray  # (M, p): sum K_xi^T x
    residual: float  # sum |x_i - f(xi_i)|^2 at the projections


def merge_curve_sums(a: CurveSums, b: CurveSums) -> CurveSums:
    return CurveSums(a.n + b.n, a.gram + b.gram, a.cross + b.cross, a.residual + b.residual)


def centres(n_centres: int) -> np.ndarray:
    """``M`` centres evenly spaced on [0, 1]."""
    return np.linspace(0.0, 1.0, n_centres)


def kernel(z: np.ndarray, c: np.ndarray, width: float) -> np.ndarray:
    """``k(z_i, c_j)`` (len(z) x len(c)), Gaussian in the latent coordinate."""
    K = np.subtract.outer(np.asarray(z, dtype=float), c)
    K *= K
    K *= -0.5 / width**2
    return np.exp(K, out=K)  # in place: three passes over the block rather than six


def kernel_slope(z: np.ndarray, c: np.ndarray, width: float, K: np.ndarray | None = None) -> np.ndarray:
    """``d k(z_i, c_j) / d z_i``; ``K``, if given, is ``kernel(z, c, width)``."""
    K = kernel(z, c, width) if K is None else K
    return K * ((c[None, :] - np.asarray(z, dtype=float)[:, None]) / width**2)


class Projection(NamedTuple):
    """Rows projected onto a curve: latent coordinates, squared distances, and ``k(xi_i, c_j)``."""

    xi: np.ndarray
    sq: np.ndarray
    K: np.ndarray


def project(X: np.ndarray, alpha: np.ndarray, c: np.ndarray, width: float, grid: np.ndarray) -> Projection:
    """Each row's latent coordinate on the curve and its squared distance to it.

    The nearest of the curve's points at ``grid`` (a fine, even latent grid
    over [0, 1]), then :data:`REFINE_STEPS` Gauss-Newton steps on
    ``|x - f(z)|^2``, each kept within one grid cell of the start and
    within [0, 1]. Rows are taken :data:`PIECE_ROWS` at a time.
    """
    if len(X) > PIECE_ROWS:
        parts = [project(X[s : s + PIECE_ROWS], alpha, c, width, grid) for s in range(0, len(X), PIECE_ROWS)]
        return Projection(*(np.concatenate(a) for a in zip(*parts)))
    F = kernel(grid, c, width) @ alpha  # (G, p): the curve at the grid
    # |x - f|^2 less |x|^2 (the same for every grid point), in float32: the search only picks the
    # start of the refinement, and it is a third of the projection's time in float64
    sq = X.astype(np.float32) @ (-2.0 * F.T).astype(np.float32)
    sq += np.einsum("ij,ij->i", F, F).astype(np.float32)[None, :]
    z0 = grid[np.argmin(sq, axis=1)]
    step = grid[1] - grid[0] if len(grid) > 1 else 1.0
    z = z0
    for _ in range(REFINE_STEPS):
        K = kernel(z, c, width)
        r = X - K @ alpha  # residuals (b, p)
        J = kernel_slope(z, c, width, K) @ alpha  # f'(z) (b, p)
        denom = np.einsum("ij,ij->i", J, J)
        delta = np.where(denom > 0, np.einsum("ij,ij->i", J, r) / np.maximum(denom, np.finfo(float).tiny), 0.0)
        z = np.clip(np.clip(z + delta, z0 - step, z0 + step), 0.0, 1.0)
    K = kernel(z, c, width)
    r = X - K @ alpha
    return Projection(z, np.einsum("ij,ij->i", r, r), K)


def curve_sums(
    X: np.ndarray, xi: np.ndarray, c: np.ndarray, width: float, residual: float, K: np.ndarray | None = None
) -> CurveSums:
    """The alpha-step's sums over the rows ``X`` with latent coordinates ``xi`` (``K`` = ``k(xi, c)`` if known)."""
    K = kernel(xi, c, width) if K is None else K
    return CurveSums(len(X), K.T @ K, K.T @ X, float(residual))


def solve_alpha(sums: CurveSums, c: np.ndarray, width: float, lam: float) -> np.ndarray:
    """``alpha = (K_xi^T K_xi + (lambda n / 2) K_c)^-1 K_xi^T X`` (a symmetric positive definite solve)."""
    A = sums.gram + (lam * sums.n / 2.0) * kernel(c, c, width)
    return scipy.linalg.solve(A, sums.cross, assume_a="pos")


def penalty(alpha: np.ndarray, c: np.ndarray, width: float) -> float:
    """``tr(alpha^T K_c alpha)``: the squared norm of ``f`` in the kernel's feature space."""
    return float(np.einsum("jp,jl,lp->", alpha, kernel(c, c, width), alpha))
