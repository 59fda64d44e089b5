"""LOBPCG whose blocks of vectors stay on the workers.

The smallest eigenpairs of a symmetric positive semi-definite ``n x n``
operator given as a blockwise product on :class:`~bigdr.blockwise.rowblocks.RowBlocks`
(the all-rows graph Laplacian of :mod:`bigdr.graph.blocked`), for ``n`` too
large for the iteration's blocks to sit in one process: scipy's ``lobpcg``
holds about twenty ``n x m`` arrays in the driver. Here every ``n x m``
block (the iterates ``X``, residuals ``R``, directions ``P`` and their
products with ``A``) is a :class:`RowBlocks` on the workers; the driver
holds the Gram matrices of ``[X, R, P]`` (``3m x 3m``, summed blockwise),
solves the Rayleigh-Ritz problem on them and sends back the coefficients.

Each iteration (Knyazev 2001, with soft locking as in scipy's ``lobpcg``):
the residuals ``R = A X - X Lambda`` of the columns not yet converged
(``|r_j| > tol``) are projected off the constraint ``Y`` and off ``X`` and
orthonormalised by a Cholesky factor of their Gram matrix, as are the
directions ``P``; one product ``A R``; the Ritz pairs of ``[X, R, P]``
(the generalised problem ``S^T A S c = theta S^T S c``) give the next ``X =
S C`` and ``P = [R, P] C_{R,P}``, and ``A X``, ``A P`` follow by the same
coefficients. When the Gram matrix of ``[X, R, P]`` is not positive
definite (``P`` nearly in the span of ``X`` near convergence), that step is
taken without ``P``.

References
----------
Knyazev, A. V. (2001). Toward the optimal preconditioned eigensolver: locally
optimal block preconditioned conjugate gradient method. SIAM J. Sci. Comput.
23(2), 517-541. doi:10.1137/S1064827500366124
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import dask
import numpy as np
import scipy.linalg

from ..exceptions import ConvergenceWarning
from ..runtime.compute import compute
from .rowblocks import RowBlocks, combine, gram, persist_all


class BlockEigenpairs(NamedTuple):
    """Eigenpairs whose vectors are row blocks on the workers."""

    values: np.ndarray  #: (m,) ascending
    vectors: RowBlocks  #: n x m, orthonormal columns (signs as the iteration left them)
    residual: float  #: largest ``|A x_j - lambda_j x_j|`` at the end (columns of unit norm)
    n_iter: int  #: iterations (one product with ``A`` each)
    products: int  #: products with ``A`` in all (iterations + 1)


def _inverse_cholesky(G: np.ndarray) -> np.ndarray | None:
    """``T`` with ``T^T G T = I`` (``G`` symmetric positive definite), or None when ``G`` is not."""
    try:
        upper = scipy.linalg.cholesky((G + G.T) / 2, lower=False)
    except np.linalg.LinAlgError:
        return None
    return scipy.linalg.solve_triangular(upper, np.eye(len(G)), lower=False)


def _orthonormal_basis(X: RowBlocks, Y: RowBlocks | None) -> RowBlocks:
    """The columns of ``X`` projected off ``Y`` (orthonormal columns) and orthonormalised; dependent ones dropped."""
    if Y is not None:
        (YtX,) = gram([([Y], [X])])
        X = combine([(X, np.eye(X.width)), (Y, -YtX)]).persist()
    (G,) = gram([([X], [X])])
    w, V = scipy.linalg.eigh((G + G.T) / 2)
    keep = w > 1e-12 * max(float(w.max()), np.finfo(np.float64).tiny)
    if not keep.all():
        warnings.warn(
            f"{int((~keep).sum())} of the {len(w)} start vectors of LOBPCG are linearly dependent; they are left out.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return combine([(X, V[:, keep] / np.sqrt(w[keep]))]).persist()


def _start_state(x: np.ndarray, ax: np.ndarray, C: np.ndarray) -> tuple:
    """A row block's state ``(X, A X, P, A P)`` after the first Rayleigh-Ritz step (no directions yet)."""
    return (x @ C, ax @ C, None, None)


def _residual(state: tuple, lam: np.ndarray) -> np.ndarray:
    X, AX = state[0], state[1]
    return AX - X * lam


def _residual_grams(state: tuple, y: np.ndarray | None, lam: np.ndarray) -> tuple:
    """On one row block: ``R^T R``, ``X^T R``, ``Y^T R`` and ``P^T P`` (None where there is no ``Y``, ``P``)."""
    X, _, P, _ = state
    R = _residual(state, lam)
    return (R.T @ R, X.T @ R, None if y is None else y.T @ R, None if P is None else P.T @ P)


def _directions(state: tuple, y: np.ndarray | None, lam: np.ndarray, cr: np.ndarray, cx: np.ndarray,
                cy: np.ndarray | None) -> np.ndarray:  # fmt: skip
    """On one row block: the new search directions ``R cr + X cx + Y cy`` (the orthonormalised residuals)."""
    out = _residual(state, lam) @ cr + state[0] @ cx
    return out if y is None else out + y @ cy


def _basis(state: tuple, r: np.ndarray, ar: np.ndarray, tp: np.ndarray | None) -> tuple[list, list]:
    X, AX, P, AP = state
    if tp is None or P is None:
        return [X, r], [AX, ar]
    return [X, r, P @ tp], [AX, ar, AP @ tp]


def _ritz_grams(state: tuple, r: np.ndarray, ar: np.ndarray, tp: np.ndarray | None) -> tuple:
    """On one row block: ``S^T A S`` and ``S^T S`` of the basis ``S = [X, R, P tp]``."""
    basis, images = _basis(state, r, ar, tp)
    S, AS = np.hstack(basis), np.hstack(images)
    return S.T @ AS, S.T @ S


def _step(state: tuple, r: np.ndarray, ar: np.ndarray, tp: np.ndarray | None, C: np.ndarray) -> tuple:
    """On one row block: ``X = S C``, ``P = [R, P] C_{R,P}`` and their products, from the Ritz coefficients."""
    basis, images = _basis(state, r, ar, tp)
    S, AS = np.hstack(basis), np.hstack(images)
    m = state[0].shape[1]
    return (S @ C, AS @ C, S[:, m:] @ C[m:], AS[:, m:] @ C[m:])


def _first(state: tuple) -> np.ndarray:
    return state[0]


def _summed(per_block: list) -> list:
    return [None if parts[0] is None else sum(parts) for parts in zip(*per_block)]


def lobpcg(
    apply: Callable[[RowBlocks], RowBlocks],
    X0: RowBlocks,
    constraint: RowBlocks | None = None,
    tol: float = 1e-6,
    maxiter: int = 1000,
) -> BlockEigenpairs:
    """The ``m`` smallest eigenpairs (``m = X0.width``) of a symmetric positive semi-definite operator.

    Parameters
    ----------
    apply : callable
        ``V -> A V`` on row blocks (lazy or persisted; persisted here).
    X0 : RowBlocks
        The start, ``n x m`` (e.g. an approximation of the eigenvectors).
    constraint : RowBlocks, optional
        ``n x c`` exact eigenvectors to stay orthogonal to (orthonormalised
        here); the pairs found are the smallest of ``A`` on their
        complement.
    tol : float
        Stop when every ``|A x_j - lambda_j x_j|`` (unit ``x_j``) is at most ``tol``.
    maxiter : int
        Most iterations; a :class:`~bigdr.exceptions.ConvergenceWarning`
        names the residual reached if they are spent.

    Returns
    -------
    BlockEigenpairs
    """
    Y = _orthonormal_basis(constraint, None) if constraint is not None else None
    X = _orthonormal_basis(X0, Y)
    m, starts = X.width, X.starts
    AX = apply(X).persist()
    (H,) = gram([([X], [AX])])
    lam, C = scipy.linalg.eigh((H + H.T) / 2)
    # Each row block's (X, A X, P, A P) is one persisted object, so a step is one task per block
    task = {f: dask.delayed(f, pure=True) for f in (_start_state, _residual_grams, _directions, _ritz_grams, _step)}
    state = list(dask.persist(*[task[_start_state](x, ax, C) for x, ax in zip(X.blocks, AX.blocks)]))
    y = [None] * len(state) if Y is None else Y.blocks
    products, iteration = 1, 0
    while True:
        (per_block,) = compute([task[_residual_grams](s, yb, lam) for s, yb in zip(state, y)])
        RtR, XtR, YtR, PtP = _summed(per_block)
        norms = np.sqrt(np.maximum(np.diag(RtR), 0.0))
        residual = float(norms.max())
        active = np.flatnonzero(norms > tol)
        if active.size == 0 or iteration >= maxiter:
            break
        iteration += 1
        pick = np.eye(m)[:, active]
        # R_a - X (X^T R_a) - Y (Y^T R_a), orthonormalised: its Gram follows from those already summed
        G = RtR[np.ix_(active, active)] - XtR[:, active].T @ XtR[:, active]
        if YtR is not None:
            G -= YtR[:, active].T @ YtR[:, active]
        T = _inverse_cholesky(G)
        if T is None:  # the residuals left are dependent (rounding level): the pairs are as good as they get
            break
        cy = None if YtR is None else -YtR[:, active] @ T
        Rn = RowBlocks(
            [task[_directions](s, yb, lam, pick @ T, -XtR[:, active] @ T, cy) for s, yb in zip(state, y)],
            starts,
            len(active),
        )
        Rn, ARn = persist_all(Rn, apply(Rn))
        products += 1
        TP = None if PtP is None else _inverse_cholesky(PtP[np.ix_(active, active)])
        tp = None if TP is None else pick @ TP
        theta, C = _rayleigh_ritz(task[_ritz_grams], state, Rn, ARn, tp, m)
        if C is None and tp is not None:  # [X, R, P] nearly dependent: the step without P
            tp = None
            theta, C = _rayleigh_ritz(task[_ritz_grams], state, Rn, ARn, tp, m)
        if C is None:
            break
        state = list(dask.persist(*[task[_step](s, r, ar, tp, C) for s, r, ar in zip(state, Rn.blocks, ARn.blocks)]))
        lam = theta
    if residual > tol:
        warnings.warn(
            f"LOBPCG stopped after {iteration} iterations with residual {residual:.2g} (tolerance {tol:.2g}); "
            f"the eigenvectors may be inaccurate.",
            ConvergenceWarning,
            stacklevel=2,
        )
    first = dask.delayed(_first, pure=True)
    vectors = RowBlocks(dask.persist(*[first(s) for s in state]), starts, m)
    return BlockEigenpairs(lam, vectors, residual, iteration, products)


def _rayleigh_ritz(
    grams: Callable, state: list, Rn: RowBlocks, ARn: RowBlocks, tp: np.ndarray | None, m: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """The ``m`` smallest Ritz pairs of ``A`` on the span of ``[X, R, P tp]`` (no ``P`` when ``tp`` is None)."""
    (per_block,) = compute([grams(s, r, ar, tp) for s, r, ar in zip(state, Rn.blocks, ARn.blocks)])
    gA, gB = _summed(per_block)
    try:
        theta, C = scipy.linalg.eigh((gA + gA.T) / 2, (gB + gB.T) / 2, subset_by_index=[0, m - 1])
    except np.linalg.LinAlgError:
        return np.empty(0), None
    return theta, C
