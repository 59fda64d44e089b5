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
    return np.exp(-((z[:, None] - c[None, :]) ** 2) / (2.0 * width**2))


def kernel_slope(z: np.ndarray, c: np.ndarray, width: float) -> np.ndarray:
    """``d k(z_i, c_j) / d z_i``."""
    return kernel(z, c, width) * (c[None, :] - z[:, None]) / width**2


def project(
    X: np.ndarray, alpha: np.ndarray, c: np.ndarray, width: float, grid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's latent coordinate on the curve and its squared distance to it.

    The nearest of the curve's points at ``grid`` (a fine, even latent grid
    over [0, 1]), then :data:`REFINE_STEPS` Gauss-Newton steps on
    ``|x - f(z)|^2``, each kept within one grid cell of the start and
    within [0, 1]. Rows are taken :data:`PIECE_ROWS` at a time.
    """
    if len(X) > PIECE_ROWS:
        parts = [project(X[s : s + PIECE_ROWS], alpha, c, width, grid) for s in range(0, len(X), PIECE_ROWS)]
        return np.concatenate([z for z, _ in parts]), np.concatenate([d for _, d in parts])
    F = kernel(grid, c, width) @ alpha  # (G, p): the curve at the grid
    sq = np.einsum("ij,ij->i", X, X)[:, None] - 2.0 * X @ F.T + np.einsum("ij,ij->i", F, F)[None, :]
    z0 = grid[np.argmin(sq, axis=1)]
    step = grid[1] - grid[0] if len(grid) > 1 else 1.0
    z = z0.copy()
    for _ in range(REFINE_STEPS):
        r = X - kernel(z, c, width) @ alpha  # residuals (b, p)
        J = kernel_slope(z, c, width) @ alpha  # f'(z) (b, p)
        denom = np.einsum("ij,ij->i", J, J)
        delta = np.where(denom > 0, np.einsum("ij,ij->i", J, r) / np.maximum(denom, np.finfo(float).tiny), 0.0)
        z = np.clip(np.clip(z + delta, z0 - step, z0 + step), 0.0, 1.0)
    r = X - kernel(z, c, width) @ alpha
    return z, np.einsum("ij,ij->i", r, r)


def curve_sums(X: np.ndarray, xi: np.ndarray, c: np.ndarray, width: float, residual: float) -> CurveSums:
    """The alpha-step's sums over the rows ``X`` with latent coordinates ``xi``."""
    K = kernel(xi, c, width)
    return CurveSums(len(X), K.T @ K, K.T @ X, float(residual))


def solve_alpha(sums: CurveSums, c: np.ndarray, width: float, lam: float) -> np.ndarray:
    """``alpha = (K_xi^T K_xi + (lambda n / 2) K_c)^-1 K_xi^T X`` (a symmetric positive definite solve)."""
    A = sums.gram + (lam * sums.n / 2.0) * kernel(c, c, width)
    return scipy.linalg.solve(A, sums.cross, assume_a="pos")


def penalty(alpha: np.ndarray, c: np.ndarray, width: float) -> float:
    """``tr(alpha^T K_c alpha)``: the squared norm of ``f`` in the kernel's feature space."""
    return float(np.einsum("jp,jl,lp->", alpha, kernel(c, c, width), alpha))
