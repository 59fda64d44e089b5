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

import numpy as np
import scipy.linalg

from ..exceptions import ConvergenceWarning
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
    m = X.width
    AX = apply(X).persist()
    (H,) = gram([([X], [AX])])
    lam, C = scipy.linalg.eigh((H + H.T) / 2)
    X, AX = persist_all(combine([(X, C)]), combine([(AX, C)]))
    P: RowBlocks | None = None
    AP: RowBlocks | None = None
    products, iteration = 1, 0
    while True:
        # Lazy: R is cheap to form again where it is used, so it is not kept between the steps
        R = combine([(AX, np.eye(m)), (X, -np.diag(lam))])
        pairs = [([R], [R]), ([X], [R])] + ([([Y], [R])] if Y is not None else [])
        if P is not None:
            pairs.append(([P], [P]))
        grams = gram(pairs)
        RtR, XtR = grams[0], grams[1]
        norms = np.sqrt(np.maximum(np.diag(RtR), 0.0))
        residual = float(norms.max())
        active = np.flatnonzero(norms > tol)
        if active.size == 0 or iteration >= maxiter:
            break
        iteration += 1
        pick = np.eye(m)[:, active]
        # R_a - X (X^T R_a) - Y (Y^T R_a), orthonormalised: its Gram follows from those already summed
        G = RtR[np.ix_(active, active)] - XtR[:, active].T @ XtR[:, active]
        terms = [(R, pick), (X, -XtR[:, active])]
        if Y is not None:
            YtR = grams[2][:, active]
            G -= YtR.T @ YtR
            terms.append((Y, -YtR))
        T = _inverse_cholesky(G)
        if T is None:  # the residuals left are dependent (rounding level): the pairs are as good as they get
            break
        Rn = combine([(x, c @ T) for x, c in terms])
        Rn, ARn = persist_all(Rn, apply(Rn))
        products += 1
        basis, images = [X, Rn], [AX, ARn]
        if P is not None and AP is not None:
            TP = _inverse_cholesky(grams[-1][np.ix_(active, active)])
            if TP is not None:  # lazy, as R: a few flops a row
                basis.append(combine([(P, pick @ TP)]))
                images.append(combine([(AP, pick @ TP)]))
        theta, C = _rayleigh_ritz(basis, images, m)
        if C is None:  # [X, R, P] nearly dependent: the step without P
            basis, images = basis[:2], images[:2]
            theta, C = _rayleigh_ritz(basis, images, m)
            if C is None:
                break
        cuts = np.cumsum([0] + [b.width for b in basis])
        parts = [C[a:z] for a, z in zip(cuts[:-1], cuts[1:])]
        X, AX, P, AP = persist_all(
            combine(list(zip(basis, parts))),
            combine(list(zip(images, parts))),
            combine(list(zip(basis[1:], parts[1:]))),
            combine(list(zip(images[1:], parts[1:]))),
        )
        lam = theta
    if residual > tol:
        warnings.warn(
            f"LOBPCG stopped after {iteration} iterations with residual {residual:.2g} (tolerance {tol:.2g}); "
            f"the eigenvectors may be inaccurate.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return BlockEigenpairs(lam, X, residual, iteration, products)


def _rayleigh_ritz(basis: list[RowBlocks], images: list[RowBlocks], m: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The ``m`` smallest Ritz pairs of ``A`` on the span of ``basis`` (``images`` = ``A basis``)."""
    gA, gB = gram([(basis, images), (basis, basis)])
    try:
        theta, C = scipy.linalg.eigh((gA + gA.T) / 2, (gB + gB.T) / 2, subset_by_index=[0, m - 1])
    except np.linalg.LinAlgError:
        return np.empty(0), None
    return theta, C
