"""Regularized principal curves and manifolds (Smola, Mika, Schoelkopf & Williamson 2001): the numpy pieces.

The curve (``d = 1``) or manifold (``d = 2``) is a kernel expansion over
``M`` centres ``c_j`` of the latent cube [0, 1]^d (an even grid):
``f(z) = sum_j alpha_j k(c_j, z)`` with ``k(a, b) = exp(-|a - b|^2 / (2 s^2))``
and ``alpha`` (M x p). Latent coordinates are rows of ``d`` numbers. It minimises

    R[f] = (1/n) sum_i min_z |x_i - f(z)|^2 + (lambda / 2) tr(alpha^T K_c alpha)

by alternating the projections ``xi_i = argmin_z |x_i - f(z)|^2`` (the
nearest point of a fine latent grid, then Newton steps within the
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

import warnings
from typing import NamedTuple

import numpy as np
import scipy.linalg

from ..exceptions import ConvergenceWarning

#: Newton steps that refine each projection from its nearest grid point.
REFINE_STEPS = 2
#: For a manifold (d > 1): safeguarded steps, each halved up to HALVINGS times until it helps.
REFINE_STEPS_2D = 8
HALVINGS = 5
#: Rows projected at once: the row-by-grid distance matrix stays a few MiB whatever the block, and the
#: refinement's row-by-centre arrays stay in cache (on one thread a curve's projection took 0.8 times as
#: long as with 16,384 rows; on two threads sharing one core, the same within the noise).
PIECE_ROWS = 4_096


class CurveSums(NamedTuple):
    """Mergeable sums of one pass: the alpha-step's matrices and the data term of R[f]."""

    n: int
    gram: np.ndarray  # (M, M): sum K_xi^T K_xi
    cross: np.ndarray  # (M, p): sum K_xi^T x
    residual: float  # sum |x_i - f(xi_i)|^2 at the projections
    low: np.ndarray  # (d,): the smallest latent coordinate of the rows, per axis
    high: np.ndarray  # (d,): the largest


def merge_curve_sums(a: CurveSums, b: CurveSums) -> CurveSums:
    return CurveSums(
        a.n + b.n,
        a.gram + b.gram,
        a.cross + b.cross,
        a.residual + b.residual,
        np.minimum(a.low, b.low),
        np.maximum(a.high, b.high),
    )


def empty_sums(n_centres: int, n_features: int, dim: int) -> CurveSums:
    """The sums of no rows (the start of a merge)."""
    return CurveSums(
        0,
        np.zeros((n_centres, n_centres)),
        np.zeros((n_centres, n_features)),
        0.0,
        np.full(dim, np.inf),
        np.full(dim, -np.inf),
    )


def centres(n_centres: int, dim: int = 1) -> np.ndarray:
    """``n_centres`` centres per latent axis, evenly spaced on [0, 1]: (n_centres ** dim, dim)."""
    axis = np.linspace(0.0, 1.0, n_centres)
    return np.stack(np.meshgrid(*([axis] * dim), indexing="ij"), axis=-1).reshape(-1, dim)


def kernel(z: np.ndarray, c: np.ndarray, width: float) -> np.ndarray:
    """``k(z_i, c_j)`` (len(z) x len(c)), Gaussian in the latent coordinates (rows of ``z`` and ``c``).

    The exponent ``-(|z|^2 - 2 z.c + |c|^2) / (2 s^2)`` is one matrix product
    of ``[|z|^2, z, 1]`` with ``[1, -2 c, |c|^2]``, then ``exp`` in place:
    half the time of forming ``z - c`` per axis (the difference from that
    form is a few units in the 14th digit, as z and c lie in [0, 1]).
    """
    z = np.asarray(z, dtype=float).reshape(len(z), -1)
    c = np.asarray(c, dtype=float).reshape(len(c), -1)
    g = -0.5 / width**2
    left = np.empty((len(z), z.shape[1] + 2))
    left[:, 0] = np.einsum("ij,ij->i", z, z)
    left[:, 1:-1] = z
    left[:, -1] = 1.0
    right = np.vstack([np.full(len(c), g), (-2.0 * g) * c.T, g * np.einsum("ij,ij->i", c, c)])
    K = left @ right
    return np.exp(K, out=K)


def latent_grid(size: int, dim: int) -> np.ndarray:
    """The search grid of the projection step: ``size`` points per latent axis, (size ** dim, dim)."""
    return centres(size, dim)


class CurveProjection(NamedTuple):
    """Rows projected onto a curve: latent coordinates (b, d), squared distances, and ``k(xi_i, c_j)``."""

    xi: np.ndarray
    sq: np.ndarray
    K: np.ndarray


def project(X: np.ndarray, alpha: np.ndarray, c: np.ndarray, width: float, grid: np.ndarray) -> CurveProjection:
    """Each row's latent coordinates on the curve (manifold) and its squared distance to it.

    The nearest of the curve's points at ``grid`` (an even latent grid over
    [0, 1]^d, :func:`latent_grid`), then :data:`REFINE_STEPS` Newton
    steps on ``|x - f(z)|^2``, each kept within one grid cell of the start
    along every axis and within [0, 1]^d (for d > 1, safeguarded steps:
    :func:`_refine_safeguarded`). Rows are taken :data:`PIECE_ROWS` at a time.
    """
    if len(X) > PIECE_ROWS:
        parts = [project(X[s : s + PIECE_ROWS], alpha, c, width, grid) for s in range(0, len(X), PIECE_ROWS)]
        return CurveProjection(*(np.concatenate(a) for a in zip(*parts)))
    F = kernel(grid, c, width) @ alpha  # (G, p): the curve at the grid
    # |x - f|^2 less |x|^2 (the same for every grid point) as one product [x, 1] [-2 F, |f|^2]^T, in
    # float32: the search only picks the start of the refinement, and it is a third of the projection's
    # time in float64; folding |f|^2 into the product saves a pass over the (b, G) matrix.
    Y = np.empty((len(X), X.shape[1] + 1), dtype=np.float32)
    Y[:, :-1] = X
    Y[:, -1] = 1.0
    sq = Y @ np.vstack([-2.0 * F.T, np.einsum("ij,ij->i", F, F)]).astype(np.float32)
    z0 = grid[np.argmin(sq, axis=1)]  # (b, d)
    step = float(grid[1, -1] - grid[0, -1]) if len(grid) > 1 else 1.0  # the last axis varies fastest
    if grid.shape[1] > 1:
        return _refine_safeguarded(X, alpha, c, width, z0, step)
    return _refine_curve(X, alpha, c[:, 0], width, z0[:, 0], step)


def _refine_curve(
    X: np.ndarray, alpha: np.ndarray, c: np.ndarray, width: float, z0: np.ndarray, step: float
) -> CurveProjection:
    """:data:`REFINE_STEPS` Newton steps on ``|x - f(z)|^2`` from ``z0`` for a curve (d = 1), keeping each row's best.

    Written out for one latent axis, with ``u_j = c_j - z``: ``s^2 f' = sum_j
    k_j u_j alpha_j`` and ``s^4 f'' = sum_j k_j (u_j^2 - s^2) alpha_j``,
    which expand into ``K alpha``, ``K (c alpha)`` and ``K (c^2 alpha)``: one
    product of the kernel matrix (:func:`kernel`'s one product and ``exp``)
    with ``[alpha, c alpha, c^2 alpha]``. The step is Newton's, ``f'.r /
    (|f'|^2 - f''.r)`` with ``r = x - f(z)``, where that curvature is
    positive, and Gauss-Newton's ``f'.r / |f'|^2`` where it is not, kept
    within one grid cell of the start and within [0, 1]. Each row ends at the
    point of least distance it visited, so the projection is never worse
    than the grid's. Gauss-Newton alone overshoots where the residual is
    large against the curve's radius: on a noisy arc in 10-D (one-off, 4,096
    rows of a fitted curve) three such steps left 299 rows more than 1e-10
    above their least distance (by up to 3.9e-4; the data term 7.5e-5 too
    high, and differing from pass to pass, so ``R[f]`` could not settle to a
    tight ``tol``), where two Newton steps leave none (at most 3.5e-11; the
    data term 2.7e-12 high) in the same time (1.50 against 1.45 ms).
    """
    X = X.astype(np.float64, copy=False)
    b, p, s2 = len(X), alpha.shape[1], width**2
    powers = np.hstack([alpha, c[:, None] * alpha, (c * c)[:, None] * alpha])  # (M, 3p)
    z = z0
    for it in range(REFINE_STEPS + 1):
        K = kernel(z, c, width)
        if it == REFINE_STEPS:  # the last point: its distance only
            r = np.subtract(X, K @ alpha)
        else:
            P = (K @ powers).reshape(b, 3, p)  # f, K (c alpha), K (c^2 alpha)
            r = np.subtract(X, P[:, 0])  # residuals x - f(z)
        sq = np.einsum("ij,ij->i", r, r)
        if it == 0:
            best_z, best_sq = z.copy(), sq
        else:
            took = sq < best_sq
            np.copyto(best_z, z, where=took)
            np.copyto(best_sq, sq, where=took)
        if it == REFINE_STEPS:
            break
        # From row dot products, so no (b, p) array beyond s^2 f': with u = (c_j - z),
        # s^2 f'.r = r.K(c a) - z r.f and s^4 f''.r = r.K(c^2 a) - 2 z r.K(c a) + (z^2 - s^2) r.f.
        on_r = np.einsum("ij,ikj->ik", r, P)
        slope = P[:, 1] - z[:, None] * P[:, 0]  # s^2 f'(z)
        grad = on_r[:, 1] - z * on_r[:, 0]
        gauss = np.einsum("ij,ij->i", slope, slope)
        newton = gauss - (on_r[:, 2] - 2.0 * z * on_r[:, 1] + (z * z - s2) * on_r[:, 0])  # s^4 (|f'|^2 - f''.r)
        den = np.where(newton > 0, newton, gauss)
        delta = np.where(den > 0, grad / np.maximum(den, np.finfo(float).tiny), 0.0) * s2
        z = np.clip(np.clip(z + delta, z0 - step, z0 + step), 0.0, 1.0)
    moved = best_z != z  # rows whose last step did not help: their kernel row at the best point
    if moved.any():
        K[moved] = kernel(best_z[moved], c, width)
    return CurveProjection(best_z[:, None], best_sq, K)


def _refine_safeguarded(
    X: np.ndarray, alpha: np.ndarray, c: np.ndarray, width: float, z0: np.ndarray, step: float
) -> CurveProjection:
    """Newton from ``z0`` for d > 1: a step is halved until it lowers ``|x - f(z)|^2`` (or dropped).

    Far from the manifold the residual is large, and Gauss-Newton's
    ``J^T J`` misses the residual's curvature: its steps overshot in two
    dimensions (measured: 16 of 40 random rows ended above the minimum a
    bounded quasi-Newton search finds, and 7 still did with 20 halved
    steps). Newton's steps use the full Hessian, falling back to a scaled
    gradient step where it is not positive definite. An axis pushed past
    [0, 1] is held at its bound while the others step.
    """
    z = z0.copy()
    K = kernel(z, c, width)
    r = X - K @ alpha
    sq = np.einsum("ij,ij->i", r, r)
    for _ in range(REFINE_STEPS_2D):
        U = (c[None, :, :] - z[:, None, :]) / width**2  # (b, M, d)
        # As products of two operands (matmuls): numpy's einsum of three or five operands loops
        # naively, and took 90% of a manifold's fit.
        J = np.stack([(K * U[:, :, e]) @ alpha for e in range(z.shape[1])], axis=2)  # f'(z), (b, p, d)
        # Half the Hessian of |x - f(z)|^2: J^T J - sum_k r_k f_k''(z); f'' from k'' = k (u u^T - I / s^2)
        w = K * (r @ alpha.T)  # (b, M): k_j(z) times the residual's inner product with alpha_j
        curv = np.matmul((w[:, :, None] * U).transpose(0, 2, 1), U)
        curv -= w.sum(axis=1)[:, None, None] * np.eye(z.shape[1]) / width**2
        hess = np.matmul(J.transpose(0, 2, 1), J) - curv
        delta = _newton_step(hess, np.einsum("bpd,bp->bd", J, r))
        pinned = ((z + delta < 0.0) & (z <= 0.0)) | ((z + delta > 1.0) & (z >= 1.0))
        for e in range(z.shape[1]):
            rows = pinned[:, e] & ~pinned.all(axis=1)
            if rows.any():
                free = [a for a in range(z.shape[1]) if a != e]
                delta[rows] = 0.0
                delta[np.ix_(rows, free)] = _newton_step(
                    hess[np.ix_(rows, free, free)], np.einsum("bpd,bp->bd", J[rows][:, :, free], r[rows])
                )
        scale = np.ones(len(z))
        todo = np.ones(len(z), dtype=bool)
        for _ in range(HALVINGS):
            idx = np.flatnonzero(todo)
            if not len(idx):
                break
            zt = np.clip(np.clip(z[idx] + scale[idx, None] * delta[idx], z0[idx] - step, z0[idx] + step), 0.0, 1.0)
            Kt = kernel(zt, c, width)
            rt = X[idx] - Kt @ alpha
            sqt = np.einsum("ij,ij->i", rt, rt)
            better = sqt < sq[idx]
            took = idx[better]
            z[took], K[took], r[took], sq[took] = zt[better], Kt[better], rt[better], sqt[better]
            todo[took] = False
            scale[idx[~better]] *= 0.5
    return CurveProjection(z, sq, K)


def _newton_step(hess: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``hess^-1 grad`` per row where ``hess`` is positive definite; else a gradient step scaled by its diagonal.

    ``grad`` is ``J^T r`` (minus half the gradient of the squared distance), so
    the step is a descent direction either way.
    """
    d = hess.shape[1]
    out = np.zeros_like(grad)
    try:
        chol_ok = np.all(np.linalg.eigvalsh(hess) > 0, axis=1)
    except np.linalg.LinAlgError:
        chol_ok = np.zeros(len(hess), dtype=bool)
    if chol_ok.any():
        out[chol_ok] = np.linalg.solve(hess[chol_ok], grad[chol_ok][:, :, None])[:, :, 0]
    rest = ~chol_ok
    if rest.any():
        scale = np.abs(np.einsum("bii->bi", hess[rest])).max(axis=1) + np.finfo(float).tiny
        out[rest] = grad[rest] / scale[:, None] / d
    return out


def curve_sums(
    X: np.ndarray, xi: np.ndarray, c: np.ndarray, width: float, residual: float, K: np.ndarray | None = None
) -> CurveSums:
    """The alpha-step's sums over the rows ``X`` with latent coordinates ``xi`` (``K`` = ``k(xi, c)`` if known)."""
    K = kernel(xi, c, width) if K is None else K
    z = np.asarray(xi, dtype=float).reshape(len(X), -1)
    low = z.min(axis=0) if len(z) else np.full(z.shape[1], np.inf)
    high = z.max(axis=0) if len(z) else np.full(z.shape[1], -np.inf)
    return CurveSums(len(X), K.T @ K, K.T @ X, float(residual), low, high)


def solve_alpha(sums: CurveSums, c: np.ndarray, width: float, lam: float) -> np.ndarray:
    """``alpha = (K_xi^T K_xi + (lambda n / 2) K_c)^-1 K_xi^T X`` (a symmetric positive definite solve)."""
    A = sums.gram + (lam * sums.n / 2.0) * kernel(c, c, width)
    return scipy.linalg.solve(A, sums.cross, assume_a="pos")


def settled(objective: list[float], tol: float) -> bool:
    """The stopping rule of the curves' alternations: the objective changed by at most ``tol`` (relative) last time."""
    return last_change(objective) <= tol


def last_change(objective: list[float]) -> float:
    """The relative change of the objective in the last iteration (inf before the second)."""
    if len(objective) < 2:
        return float("inf")
    return abs(objective[-2] - objective[-1]) / max(abs(objective[-1]), np.finfo(np.float64).tiny)


def warn_unconverged(owner: str, objective: list[float], tol: float, max_iter: int) -> None:
    """scikit-learn's ConvergenceWarning for an alternation stopped by ``max_iter``, with the change it reached."""
    warnings.warn(
        f"{owner} did not converge: after max_iter={max_iter} iterations the objective still changed by "
        f"{last_change(objective):.2g} (relative) in the last one, above tol={tol:g}. Raise max_iter, or tol "
        f"if that change is small enough for you.",
        ConvergenceWarning,
        stacklevel=3,
    )


def penalty(alpha: np.ndarray, c: np.ndarray, width: float) -> float:
    """``tr(alpha^T K_c alpha)``: the squared norm of ``f`` in the kernel's feature space."""
    return float(np.einsum("jp,jl,lp->", alpha, kernel(c, c, width), alpha))
