"""Eigensolvers for in-memory matrices, with one return convention.

Every solver returns :class:`Eigenpairs`: eigenvalues in the order asked
for (descending for the largest, ascending for the smallest) and
eigenvectors as orthonormal **columns**, each with its entry of largest
magnitude positive (the rule of scikit-learn's ``svd_flip(u_based_decision=
False)``). This module chooses the solver of the largest pairs and of dense problems:

* :func:`top_eigh` (largest, dense or ARPACK),
* :func:`randomized_eigh` (an operator given as a function, e.g. one pass
  over a dask array per product) and :func:`block_krylov_eigh` (the same
  passes, the whole Krylov space kept: far fewer passes for positive
  semi-definite operators with small gaps),
* :func:`scatter_eigh` and :func:`qr_eigh` (PCA's mergeable states).

The smallest eigenpairs of sparse matrices (graph Laplacians, LLE's cost)
are :mod:`bigdr.core.sparse_eigen`'s, with the same convention.

Algorithms written as dask graphs that feed these solvers live in
:mod:`bigdr.blockwise.linalg`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from .._random import as_generator
from .stats import Moments, QRState


class Eigenpairs(NamedTuple):
    """Eigenvalues and eigenvectors of a symmetric matrix."""

    values: np.ndarray  #: (k,) in the order asked for
    vectors: np.ndarray  #: (n, k) orthonormal columns; the largest-magnitude entry of each is positive
    negative_mass: float = 0.0  #: absolute sum of the negative values over that of all values computed
    complete: bool = True  #: whether the whole spectrum was computed
    #: largest ``|A v - lambda v| / |lambda|`` of the pairs checked (0: exact solver); absolute
    #: ``|A v - lambda v|`` from LOBPCG in :func:`~bigdr.core.sparse_eigen.smallest_eigh`, whose eigenvalues approach 0
    residual: float = 0.0
    #: randomized solvers: estimated sine of the largest principal angle between the pairs checked and
    #: the exact eigenvectors (Davis-Kahan: ``|R|_2 / gap``), and the passes made
    angle: float = 0.0
    n_iter: int = 0


def flip_signs(vectors: np.ndarray) -> np.ndarray:
    """Make the largest-magnitude entry of each column of ``vectors`` positive."""
    if vectors.size == 0:
        return vectors
    idx = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[idx, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1
    return vectors * signs[None, :]


def _negative_mass(values: np.ndarray) -> float:
    total = float(np.abs(values).sum())
    return float(np.abs(values[values < 0]).sum() / total) if total > 0 else 0.0


def scatter_eigh(state: Moments) -> Eigenpairs:
    """All eigenpairs of a scatter matrix, descending."""
    scatter = (state.scatter + state.scatter.T) / 2
    values, vectors = scipy.linalg.eigh(scatter, check_finite=False)
    order = np.argsort(values)[::-1]
    return Eigenpairs(np.clip(values[order], 0, None), flip_signs(vectors[:, order]))


def qr_eigh(state: QRState) -> Eigenpairs:
    """Squared singular values of the centred data (the scatter's eigenvalues) and right singular vectors."""
    _, s, vt = scipy.linalg.svd(state.R, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    p = state.R.shape[1]
    if vt.shape[0] < p:
        # Fewer rows seen than features: complete the basis with the null space.
        null = scipy.linalg.null_space(vt).T if vt.shape[0] else np.eye(p)
        vt = np.vstack([vt, null])
        s = np.concatenate([s, np.zeros(p - s.shape[0])])
    return Eigenpairs(s**2, flip_signs(vt.T))


def randomized_eigh(
    apply: Callable[[np.ndarray], np.ndarray],
    dim: int,
    width: int,
    n_iter: int = 4,
    random_state: Any = None,
    *,
    tol: float | None = None,
    n_check: int | None = None,
    max_iter: int = 50,
    criterion: str = "residual",
) -> Eigenpairs:
    """Ritz pairs of a symmetric operator by randomized subspace iteration.

    ``Z = orth(A Omega)``, ``n_iter`` times ``Z = orth(A Z)``, then the
    eigen-decomposition of ``Z^T A Z`` (Halko, Martinsson & Tropp 2011,
    Algorithms 4.4 and 5.3). ``apply`` maps a ``(dim, width)`` matrix to ``A``
    times it (one pass over the data when ``A`` is a dask expression). Power
    iteration favours the eigenvalues of largest *magnitude*, so for an
    indefinite ``A`` negative eigenvalues appear among the pairs returned;
    ``negative_mass`` covers the ``width`` values computed.

    Every pass yields the residuals ``R = A V - V Lambda`` of the Ritz pairs
    for free (``A Z`` is the next iterate). Two measures come from them: the
    largest relative residual ``|r_i| / |lambda_i|`` (``residual``) and the
    Davis-Kahan estimate of the largest principal angle between the leading
    ``n_check`` Ritz vectors and the exact eigenvectors, ``sin theta <=
    |R|_2 / (lambda_k - lambda_{k+1})`` with the gap taken from the Ritz
    values (``angle``; Davis & Kahan 1970). With ``tol``, iteration continues
    past ``n_iter`` until the measure named by ``criterion`` (``"residual"``
    or ``"angle"``) is at most ``tol`` or ``max_iter`` passes are spent; the
    caller warns with the figure reached. ``n_iter`` of the result counts the
    passes after the first.

    References
    ----------
    Halko, N., Martinsson, P.-G. & Tropp, J. A. (2011). Finding structure with
    randomness: probabilistic algorithms for constructing approximate matrix
    decompositions. SIAM Review 53(2), 217-288. doi:10.1137/090771806

    Davis, C. & Kahan, W. M. (1970). The rotation of eigenvectors by a
    perturbation. III. SIAM J. Numer. Anal. 7(1), 1-46. doi:10.1137/0707001
    """
    if criterion not in ("residual", "angle"):
        raise ValueError(f"criterion must be 'residual' or 'angle'; got {criterion!r}.")
    rng = as_generator(random_state)
    Z, _ = np.linalg.qr(rng.standard_normal((dim, width)))
    check = width if n_check is None else min(width, n_check)
    iteration = 0
    while True:
        W = apply(Z)
        values, U, residual, angle = _rayleigh_ritz(Z.T @ W, Z, W, check)
        if _done(iteration, n_iter, tol, angle if criterion == "angle" else residual, max_iter):
            break
        Z, _ = np.linalg.qr(W)
        iteration += 1
    order = np.argsort(values)[::-1]
    vectors = flip_signs(Z @ U[:, order])
    return Eigenpairs(values[order], vectors, _negative_mass(values), False, residual, angle, iteration)


def block_krylov_eigh(
    apply: Callable[[np.ndarray], np.ndarray],
    dim: int,
    width: int,
    n_iter: int = 4,
    random_state: Any = None,
    *,
    tol: float | None = None,
    n_check: int | None = None,
    max_iter: int = 50,
    criterion: str = "angle",
) -> Eigenpairs:
    """Leading eigenpairs of a symmetric positive semi-definite operator by randomized block Krylov.

    The Krylov space ``K = [Z_0, A Z_0, A^2 Z_0, ...]`` of a random block
    ``Z_0`` of ``width`` columns grows by one block per product (one pass over
    the data when ``apply`` is one), each new block orthonormalised against
    all before it; the Ritz pairs of ``K^T A K`` are the estimates. The
    products ``A K`` are kept, so the Rayleigh-Ritz step and the residuals
    ``R = A V - V Lambda`` cost no extra pass. Against subspace iteration
    (:func:`randomized_eigh`), which keeps only the last block, the
    convergence depends on the square root of the relative gap (Musco &
    Musco 2015): on 100,000 x 10,000 log-counts, 50 components reached an
    estimated 7e-7 rad in 12 products where subspace iteration was still
    0.09 rad after 31. The ``n_check`` pairs checked may outnumber the
    block's ``width`` columns: a narrow block spends fewer products in all
    (the same 50 components in 18 products of 20 columns), checked from the
    pass whose space first exceeds ``n_check``. Memory: two ``dim x width (n
    + 1)`` blocks after ``n`` iterations. All Ritz values are returned, the
    vectors of the ``n_check`` leading pairs only.

    Stopping, ``residual``, ``angle`` and ``n_iter`` are as in
    :func:`randomized_eigh`; iteration also stops when the space stops
    growing (an invariant subspace, or ``dim`` reached: the pairs are exact).

    References
    ----------
    Musco, C. & Musco, C. (2015). Randomized block Krylov methods for stronger
    and faster approximate singular value decomposition. Advances in Neural
    Information Processing Systems 28, 1396-1404.

    Halko, N., Martinsson, P.-G. & Tropp, J. A. (2011). Finding structure with
    randomness. SIAM Review 53(2), 217-288. doi:10.1137/090771806
    """
    if criterion not in ("residual", "angle"):
        raise ValueError(f"criterion must be 'residual' or 'angle'; got {criterion!r}.")
    rng = as_generator(random_state)
    check = width if n_check is None else n_check
    capacity = min(dim, width * ((n_iter if tol is None else max(max_iter, n_iter)) + 1))
    # Column-major, so memory is taken as the space grows: a row-major array is touched on every page by
    # the second block (cells-100k, 50 components: 300 MB at once for 1,860 columns, 58 MB for the 360 used)
    K = np.empty((dim, capacity), order="F")  # the orthonormal Krylov basis
    AK = np.empty((dim, capacity), order="F")  # A times it
    T = np.empty((capacity, capacity))  # K^T A K, grown a block at a time
    Z, _ = np.linalg.qr(rng.standard_normal((dim, min(width, dim))))
    m, iteration = 0, 0
    while True:
        b = Z.shape[1]
        K[:, m : m + b], AK[:, m : m + b] = Z, apply(Z)
        cross = K[:, : m + b].T @ AK[:, m : m + b]  # new columns of K^T A K; the rows follow by symmetry
        T[: m + b, m : m + b] = cross
        T[m : m + b, : m + b] = cross.T
        m += b
        values, U = scipy.linalg.eigh((T[:m, :m] + T[:m, :m].T) / 2)
        by_size = np.argsort(np.abs(values))[::-1]
        k = min(check, m)
        W = AK[:, m - b : m]
        W = W - K[:, :m] @ (K[:, :m].T @ W)
        W = W - K[:, :m] @ (K[:, :m].T @ W)  # twice is enough (Giraud et al. 2005)
        Q, r = np.linalg.qr(W)
        keep = np.abs(np.diag(r)) > 1e-10 * max(1.0, float(np.abs(np.diag(r)).max(initial=0.0)))
        Z = Q[:, keep][:, : capacity - m]
        last = m >= capacity or Z.shape[1] == 0  # Z empty: an invariant subspace, the Ritz pairs are exact
        narrow = m <= check < dim  # a block narrower than the pairs checked: no gap after them to measure yet
        # A K = K T + W E^T: the products of every block but the last lie in the space (the next block was
        # made from them), so the residuals R = A K U - K U Lambda are W U_last = Q (r U_last), measured from
        # the small r U_last instead of two dim x m products a pass; the explicit R confirms a stop.
        measures = _residual_measures(r @ U[m - b : m, by_size[:k]], values, by_size, k, narrow)
        if _done(iteration, n_iter, tol, measures[criterion == "angle"], max_iter) or last:
            R = AK[:, :m] @ U[:, by_size[:k]] - (K[:, :m] @ U[:, by_size[:k]]) * values[by_size[:k]]
            measures = _residual_measures(R, values, by_size, k, narrow)
            if _done(iteration, n_iter, tol, measures[criterion == "angle"], max_iter) or last:
                break
        iteration += 1
    residual, angle = measures
    order = np.argsort(values)[::-1]
    # The vectors of the pairs checked only: all m of them would be a third dim x m array at the end
    # (1M x 100,000 TF-IDF, 100 factors: 528 MB for the 660 Ritz vectors, 80 MB for the 100 kept)
    vectors = flip_signs(K[:, :m] @ U[:, order[:check]])
    return Eigenpairs(values[order], vectors, _negative_mass(values), m >= dim, residual, angle, iteration)


def _rayleigh_ritz(
    T: np.ndarray, basis: np.ndarray, products: np.ndarray, check: int
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Ritz pairs of ``T = basis^T A basis`` and, for the ``check`` of largest magnitude, the largest relative
    residual and the Davis-Kahan angle estimate, from ``products = A basis`` (no product with ``A``)."""
    values, U = scipy.linalg.eigh((T + T.T) / 2)
    by_size = np.argsort(np.abs(values))[::-1]
    order = by_size[:check]
    R = products @ U[:, order] - (basis @ U[:, order]) * values[order]
    return (values, U, *_residual_measures(R, values, by_size, check))


def _residual_measures(
    R: np.ndarray, values: np.ndarray, by_size: np.ndarray, check: int, narrow: bool = False
) -> tuple[float, float]:
    """The largest relative residual and the angle estimate of the ``check`` Ritz pairs of largest magnitude,
    from their residuals ``R`` (columns in the order ``by_size``) or any matrix with the same column norms
    and 2-norm (``Q R`` for orthonormal ``Q``). ``narrow``: no Ritz value past them to measure a gap by
    yet, so nothing is measured (``inf`` and 1)."""
    if narrow:
        return np.inf, 1.0
    order = by_size[:check]
    scale = np.maximum(np.abs(values[order]), np.finfo(np.float64).tiny)
    residual = float(np.max(np.linalg.norm(R, axis=0) / scale)) if check else 0.0
    return residual, _angle_estimate(R, np.abs(values[by_size]), check)


def _done(iteration: int, n_iter: int, tol: float | None, measure: float, max_iter: int) -> bool:
    return iteration >= n_iter and (tol is None or measure <= tol or iteration >= max_iter)


def _angle_estimate(R: np.ndarray, magnitudes: np.ndarray, k: int) -> float:
    """Davis-Kahan bound ``min(1, |R|_2 / gap)`` for the leading ``k`` Ritz pairs (magnitudes descending)."""
    if k == 0 or not np.any(R):
        return 0.0
    below = magnitudes[k] if magnitudes.shape[0] > k else 0.0
    gap = magnitudes[k - 1] - below
    if gap <= 0:
        return 1.0
    return float(min(1.0, np.linalg.norm(R, 2) / gap))


#: Width from which a dense ``eigh`` takes about a second or more on one core (progress announces it).
LONG_EIGH = 2000

#: Dense LAPACK ``eigh`` (whole spectrum) up to this size; ARPACK above.
DENSE_EIGH_MAX = 2000


#: Solvers of :func:`top_eigh` (scikit-learn's ``KernelPCA(eigen_solver=...)`` names).
TOP_SOLVERS = ("auto", "dense", "arpack", "randomized")


def top_eigh(
    B: np.ndarray,
    k: int,
    random_state: Any = 0,
    extra: int = 10,
    *,
    solver: str = "auto",
    tol: float = 0.0,
    max_iter: int | None = None,
    n_iter: int = 4,
) -> Eigenpairs:
    """Top ``k`` eigenpairs of a symmetric in-memory matrix, choosing the solver.

    ``auto``: up to :data:`DENSE_EIGH_MAX` rows LAPACK ``eigh`` of the whole
    spectrum, so ``negative_mass`` is exact; above, ARPACK (``eigsh``) for
    the ``k + extra`` eigenvalues of largest magnitude, which contain the top
    ``k`` positive ones unless more than ``extra`` negative eigenvalues
    outrank them (then a second ARPACK run asks for the largest algebraic
    ones); ``negative_mass`` then covers the eigenvalues computed.
    ``dense``: LAPACK at any size. ``arpack``: ARPACK for the ``k`` largest
    algebraic eigenvalues, to relative accuracy ``tol`` (0: machine
    precision) in at most ``max_iter`` restarts. ``randomized``: subspace
    iteration (:func:`randomized_eigh`, ``n_iter`` passes, ``k + extra``
    columns) keeping the ``k`` Ritz pairs of largest *magnitude*, as
    scikit-learn's randomized solver does, so negative eigenvalues of an
    indefinite matrix can be among them.
    """
    if solver not in TOP_SOLVERS:
        raise ValueError(f"eigen_solver must be one of {TOP_SOLVERS}; got {solver!r}.")
    B = np.asarray(B, dtype=np.float64)
    n = B.shape[0]
    if solver == "randomized":
        eig = randomized_eigh(lambda Z: B @ Z, n, min(n, k + extra), n_iter, random_state)
        order = np.argsort(np.abs(eig.values), kind="stable")[::-1][:k]
        order = order[np.argsort(eig.values[order], kind="stable")[::-1]]
        return eig._replace(values=eig.values[order], vectors=eig.vectors[:, order])
    if solver == "dense" or (solver == "auto" and n <= DENSE_EIGH_MAX) or k >= n - 1:  # ARPACK needs k < n - 1
        w, V = scipy.linalg.eigh((B + B.T) / 2, check_finite=False)
        complete = True
    else:
        from scipy.sparse.linalg import eigsh

        v0 = as_generator(random_state).uniform(-1, 1, n)
        if solver == "arpack":
            w, V = eigsh(B, k=k, which="LA", v0=v0, tol=tol, maxiter=max_iter)
        else:
            w, V = eigsh(B, k=min(n - 1, k + extra), which="LM", v0=v0)
        complete = False
    negative_mass = _negative_mass(w)
    if not complete and np.count_nonzero(w > 0) < k and solver == "auto":
        w, V = eigsh(B, k=k, which="LA", v0=v0)
    order = np.argsort(w)[::-1][:k]
    return Eigenpairs(w[order], flip_signs(V[:, order]), negative_mass, complete)
