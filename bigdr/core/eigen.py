"""Eigensolvers for in-memory matrices, with one return convention.

Every solver returns :class:`Eigenpairs`: eigenvalues in the order asked
for (descending for the largest, ascending for the smallest) and
eigenvectors as orthonormal **columns**, each with its entry of largest
magnitude positive (the rule of scikit-learn's ``svd_flip(u_based_decision=
False)``). This module is the one place that chooses a solver:

* :func:`top_eigh` (largest, dense or ARPACK),
* :func:`smallest_eigh` (smallest of a sparse positive semi-definite matrix:
  dense, ARPACK, LOBPCG or LOBPCG with an algebraic-multigrid preconditioner),
* :func:`factored_smallest_eigh` (smallest of ``C^T C`` given ``C``, LOBPCG
  preconditioned by a sparse LU: locally linear embedding),
* :func:`randomized_eigh` (an operator given as a function, e.g. one pass
  over a dask array per product) and :func:`block_krylov_eigh` (the same
  passes, the whole Krylov space kept: far fewer passes for positive
  semi-definite operators with small gaps),
* :func:`scatter_eigh` and :func:`qr_eigh` (PCA's mergeable states).

Algorithms written as dask graphs that feed these solvers live in
:mod:`bigdr.blockwise.linalg`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._random import as_generator
from ..exceptions import ConvergenceWarning
from ..runtime.compute import local_threads
from .csr_rows import max_abs_row_sum
from .filtered_lanczos import filtered_lanczos
from .stats import Moments, QRState


class Eigenpairs(NamedTuple):
    """Eigenvalues and eigenvectors of a symmetric matrix."""

    values: np.ndarray  #: (k,) in the order asked for
    vectors: np.ndarray  #: (n, k) orthonormal columns; the largest-magnitude entry of each is positive
    negative_mass: float = 0.0  #: absolute sum of the negative values over that of all values computed
    complete: bool = True  #: whether the whole spectrum was computed
    #: largest ``|A v - lambda v| / |lambda|`` of the pairs checked (0: exact solver); absolute
    #: ``|A v - lambda v|`` from LOBPCG in :func:`smallest_eigh`, whose eigenvalues approach 0
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


#: ``smallest_eigh(solver="auto")``: dense LAPACK up to this size, AMG-preconditioned LOBPCG above.
DENSE_SPARSE_MAX = 2000
SPARSE_SOLVERS = ("auto", "dense", "arpack", "shift-invert", "lobpcg", "amg")
#: :func:`graph_solver`: Lanczos when ``(n / k)^(1 / dimension)`` is at most this, AMG-LOBPCG above.
LANCZOS_MAX_GROWTH = 10.0


def graph_solver(n: int, k: int, dimension: float) -> str:
    """The sparse eigensolver for the smallest eigenpairs of a kNN graph's normalised Laplacian.

    On ``n`` rows of a ``D``-dimensional manifold joined to ``k`` neighbours,
    the small eigenvalues of the Laplacian scale as ``(k / n)^(2 / D)``
    (the squared inverse number of neighbour hops across the manifold), and
    Lanczos needs iterations in proportion to the inverse square root of the
    gap: ``(n / k)^(1 / D)``. AMG-preconditioned LOBPCG needs a nearly
    constant number, each a multigrid cycle per vector. Measured at 100,000
    rows: a swiss roll (``D`` = 2.3, growth 46), AMG 0.8 s against ARPACK
    21 s; single-cell log-counts after PCA to 50 (``D`` = 17, growth 1.7,
    15 eigenpairs), the whole fit 8.2 s with ARPACK against 57.3 s with
    AMG (the same kNN graph in both), eigenvalues equal to 2e-14. Lanczos is
    chosen up to a growth of :data:`LANCZOS_MAX_GROWTH` (an unknown dimension
    counts as low).
    """
    if n <= DENSE_SPARSE_MAX:
        return "dense"
    if not dimension > 0:
        return "amg"
    return "arpack" if (n / max(k, 1)) ** (1.0 / dimension) <= LANCZOS_MAX_GROWTH else "amg"


def smallest_eigh(
    L: Any,
    k: int,
    solver: str = "auto",
    random_state: Any = 0,
    known: np.ndarray | None = None,
    tol: float | None = None,
    maxiter: int = 500,
    initial: np.ndarray | None = None,
    arpack_tol: float = 1e-10,
    arpack_maxiter: int | None = None,
    components: np.ndarray | None = None,
) -> Eigenpairs:
    """The ``k`` smallest eigenpairs of a sparse symmetric positive semi-definite matrix, ascending.

    ``dense``: LAPACK on the dense matrix (small n). ``arpack``: ARPACK's
    Lanczos on a Chebyshev polynomial of ``L`` that maps the ``k`` smallest
    eigenvalues far above the rest
    (:mod:`bigdr.core.filtered_lanczos`), to tolerance ``arpack_tol``
    (1e-10) in at most ``arpack_maxiter`` restarts (None: ARPACK's
    default); the polynomial applied, never formed.
    ``shift-invert``: Lanczos on ``(L + sigma I)^-1`` with ``sigma`` 1e-12 of
    that bound, by a sparse LU (scikit-learn's solver for LLE). ``lobpcg``: LOBPCG (Knyazev 2001) without
    preconditioner. ``amg``: LOBPCG preconditioned by smoothed-aggregation
    algebraic multigrid (pyamg) on ``L`` plus a tiny shift, as
    scikit-learn's ``eigen_solver="amg"``: iteration counts barely grow with
    n, where Lanczos needs ever more as the spectral gap near 0 shrinks.
    ``known`` is an exact null vector, used as the first start vector of the
    iterative solvers. ``tol``: LOBPCG's residual tolerance; None is
    ``arpack_tol`` with the AMG preconditioner, which reaches it in about the
    time of 1e-6 (1M-row swiss roll, 20,000 landmarks: 1.11 s against 1.20 s;
    the Nyström extension then gives the training rows back to 6e-10, not
    3e-6), and 1e-6 without, whose iteration counts grow fast as it tightens.
    ``initial`` (n x k) warm-starts LOBPCG, as
    ``partial_fit`` does with the previous eigenvectors (columns after
    ``known``). A :class:`bigdr.exceptions.ConvergenceWarning` names the
    residual when LOBPCG stops unconverged.

    ``components``: the labels of the graph's connected components as the
    solver sees them (:func:`~bigdr.graph.operators.coupling_graph`, 0 the
    largest), with ``known`` the null vector. With more than one, ``known``
    restricted to each component is a null vector (up to the negligible
    couplings): those are the first pairs, the largest component's first
    (their values, about 0, in that order), and the solver looks for the
    others only, on ``L + c N N^T`` (``N`` those
    vectors, ``c`` the largest absolute row sum), where the null vectors sit
    at the top of the spectrum. A single-vector Lanczos finds one vector of a
    multiple eigenvalue: on three separate blobs ARPACK returned two of the
    three null vectors, and on the kernel graph of 100,000 cells' PCs with
    163 near-null rows it ran for minutes without stopping. Not with
    ``shift-invert``.

    References
    ----------
    Knyazev, A. V. (2001). Toward the optimal preconditioned eigensolver:
    locally optimal block preconditioned conjugate gradient method. SIAM J.
    Sci. Comput. 23(2), 517-541. doi:10.1137/S1064827500366124
    """
    if solver not in SPARSE_SOLVERS:
        raise ValueError(f"eigen_solver must be one of {SPARSE_SOLVERS}; got {solver!r}.")
    n = L.shape[0]
    if solver == "auto":
        solver = "dense" if n <= DENSE_SPARSE_MAX else "amg"
    N = None if components is None or known is None or not components.max(initial=0) else null_basis(known, components)
    if N is None:
        return _smallest(L, k, solver, random_state, known, tol, maxiter, initial, arpack_tol, arpack_maxiter)
    if solver == "shift-invert":
        raise ValueError("components are not deflated by the shift-invert solver; use another.")
    LN = (sp.csr_matrix(L) @ N).tocsc()
    null_values = np.asarray(N.multiply(LN).sum(axis=0)).ravel()  # Rayleigh quotients, about 0
    null_residual = float(np.sqrt(np.asarray((LN - N @ sp.diags(null_values)).power(2).sum(axis=0)).max()))
    c = N.shape[1]
    if k <= c:
        return Eigenpairs(null_values[:k], N[:, :k].toarray(), 0.0, False, null_residual)
    if initial is not None:
        initial = np.array(initial[:, c:], dtype=np.float64)
    rest = _smallest(L, k - c, solver, random_state, None, tol, maxiter, initial, arpack_tol, arpack_maxiter, N)
    values = np.concatenate([null_values, rest.values])
    vectors = np.hstack([N.toarray(), rest.vectors])
    return Eigenpairs(values, vectors, 0.0, False, max(null_residual, rest.residual))


def null_basis(known: np.ndarray, labels: np.ndarray) -> Any:
    """The null vectors of a Laplacian with null vector ``known`` whose graph has the components ``labels``
    (0 to c - 1): ``known`` restricted to each and normalised, as the orthonormal columns of a sparse n x c
    matrix (one nonzero a row)."""
    c = int(labels.max()) + 1
    norms = np.sqrt(np.bincount(labels, weights=known**2, minlength=c))
    values = known / np.where(norms > 0, norms, 1.0)[labels]
    return sp.csr_matrix((values, labels, np.arange(len(labels) + 1)), shape=(len(labels), c))


def _smallest(
    L: Any,
    k: int,
    solver: str,
    random_state: Any,
    known: np.ndarray | None,
    tol: float | None,
    maxiter: int,
    initial: np.ndarray | None,
    arpack_tol: float,
    arpack_maxiter: int | None,
    deflate: Any = None,
) -> Eigenpairs:
    """:func:`smallest_eigh` by ``solver``; with ``deflate`` (``N``, orthonormal columns), of ``L + c N N^T``."""
    n = L.shape[0]
    shift = max_abs_row_sum(L) if deflate is not None else 0.0

    def outside(V: np.ndarray) -> np.ndarray:  # V without its part in the deflated space
        return V if deflate is None else V - deflate @ (deflate.T @ V)

    if solver == "dense":
        A = L.toarray() if hasattr(L, "toarray") else np.array(L)
        if deflate is not None:
            A = A + shift * (deflate @ deflate.T).toarray()
        w, V = scipy.linalg.eigh(A, subset_by_index=[0, k - 1])
        return Eigenpairs(w, flip_signs(V))

    rng = as_generator(random_state)
    if solver == "arpack":
        start = outside(rng.uniform(-1, 1, n))
        w, V, residual = filtered_lanczos(L, k, start, arpack_tol, arpack_maxiter, local_threads(), deflate)
        return Eigenpairs(w, flip_signs(V), 0.0, False, residual)
    if solver == "shift-invert":
        from scipy.sparse.linalg import eigsh

        sigma = -1e-12 * max_abs_row_sum(L)
        v0 = known if known is not None else rng.uniform(-1, 1, n)
        w, V = eigsh(L, k=k, sigma=sigma, which="LM", v0=v0, tol=arpack_tol, maxiter=arpack_maxiter)
        order = np.argsort(w)
        return Eigenpairs(w[order], flip_signs(V[:, order]), 0.0, False)
    from scipy.sparse.linalg import lobpcg

    X0 = rng.standard_normal((n, k)) if initial is None else np.array(initial, dtype=np.float64)
    if known is not None:
        X0[:, 0] = known
    X0 = outside(X0)
    A = L
    if deflate is not None:
        from scipy.sparse.linalg import LinearOperator

        def deflated(V: np.ndarray) -> np.ndarray:
            return L @ V + shift * (deflate @ (deflate.T @ V))

        A = LinearOperator(L.shape, matvec=deflated, matmat=deflated, dtype=np.float64)
    M = None
    if tol is None:
        tol = arpack_tol if solver == "amg" else 1e-6
    if solver == "amg":
        import pyamg

        shift = 1e-8 * max_abs_row_sum(L)
        ml = pyamg.smoothed_aggregation_solver((L + shift * sp.identity(n, format="csr")).tocsr(), max_coarse=500)
        M = ml.aspreconditioner()
        if deflate is not None:  # kept outside the deflated space, which it would blow up (a null space of L)
            from scipy.sparse.linalg import LinearOperator

            cycle = M

            def preconditioned(R: np.ndarray) -> np.ndarray:
                return outside(cycle @ outside(R))

            M = LinearOperator(L.shape, matvec=preconditioned, matmat=preconditioned, dtype=np.float64)
    with warnings.catch_warnings():
        # LOBPCG warns when it stops at maxiter; the residuals are checked below.
        warnings.simplefilter("ignore", UserWarning)
        w, V = lobpcg(A, X0, M=M, largest=False, tol=tol, maxiter=maxiter)
    order = np.argsort(w)
    w, V = w[order], V[:, order]
    residual = float(np.linalg.norm(L @ V - V * w, axis=0).max())
    if residual > 100 * tol:
        warnings.warn(
            f"The eigensolver ({solver}) stopped after {maxiter} iterations with residual {residual:.2g}; "
            f"the embedding may be inaccurate. Try eigen_solver='amg' or 'arpack', or more neighbours.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return Eigenpairs(w, flip_signs(V), 0.0, False, residual)


def factored_smallest_eigh(
    C: Any,
    k: int,
    square: Any,
    known: np.ndarray,
    rtol: float = 1e-4,
    maxiter: int = 200,
    random_state: Any = 0,
    initial: np.ndarray | None = None,
    square_is_cost: bool = False,
) -> Eigenpairs:
    """The ``k`` smallest eigenpairs of ``M = C^T C`` orthogonal to ``known``, ascending, from the factor ``C``.

    For cost matrices whose small eigenvalues sit near the rounding level of
    the assembled ``M`` (locally linear embedding: about ``n^-2`` of its
    largest at ``n`` rows, ``1e-15`` relative at a million rows), so that no
    solver can find them from ``M`` itself. Here ``M`` is only ever applied
    as ``C^T (C x)``, which keeps the small eigenvalues' relative accuracy.
    LOBPCG (Knyazev 2001) runs on that operator, constrained orthogonal to
    the exact null vector ``known``, preconditioned by two triangular
    solves with a sparse LU factorisation of ``square + delta I`` (``square``:
    an n x n matrix with ``square^T square`` close to ``M``, e.g. ``I - W``;
    ``delta`` = 1e-12 of its largest row sum keeps the factorisation
    defined) in METIS's nested-dissection order (:func:`nested_dissection`),
    in double precision (a single-precision factor cannot resolve eigenvalues
    below its rounding level). With ``square_is_cost``, ``square`` is ``M``
    itself, assembled, and the preconditioner is one solve with its LU: for
    cost matrices whose small eigenvalues stay far above the rounding level
    of ``M`` (the Hessian, LTSA and modified variants of LLE: 1e-7 to 1e-6
    at 50,000-250,000 rows, where standard LLE's are near 1e-13), for which
    ``I - W`` is a poor model. The preconditioned operator's small
    eigenvalues are well separated, so a few dozen iterations suffice.
    LOBPCG restarts every 5 iterations from its current vectors and stops
    when no eigenvalue moved by more than ``rtol`` (relative) over 5.
    ``k + 3`` vectors are iterated (guard vectors speed convergence of the
    last wanted pair).
    """
    import scipy.sparse as sp
    from scipy.sparse.linalg import LinearOperator, lobpcg, splu

    n = C.shape[1]
    C = sp.csr_matrix(C)
    CT = C.T.tocsr()
    perm = nested_dissection(square)
    delta = 1e-12 * float(abs(square).sum(axis=1).max())
    permuted = sp.csr_matrix(square)[perm][:, perm] + delta * sp.identity(n, format="csr")
    # The ordering is METIS's; pivoting off the diagonal only where it is below 1% of its column.
    lu = splu(permuted.tocsc(), permc_spec="NATURAL", diag_pivot_thresh=0.01, options={"SymmetricMode": True})
    del permuted

    def precondition(B: np.ndarray) -> np.ndarray:
        out = np.empty_like(B, dtype=np.float64)
        b = np.ascontiguousarray(np.asarray(B, dtype=np.float64)[perm])
        out[perm] = lu.solve(b) if square_is_cost else lu.solve(lu.solve(b, trans="T"))
        return out

    def apply(B: np.ndarray) -> np.ndarray:
        return CT @ (C @ B)

    op = LinearOperator((n, n), matvec=apply, matmat=apply, dtype=np.float64)
    P = LinearOperator((n, n), matvec=precondition, matmat=precondition, dtype=np.float64)
    width = min(k + 3, n - 1)
    V = as_generator(random_state).standard_normal((n, width))
    if initial is not None:
        V[:, : initial.shape[1]] = initial
    Y = (known / np.linalg.norm(known)).reshape(n, 1)
    previous = None
    done = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # LOBPCG warns at each maxiter; checked below
        # Its Gram matrices of nearly dependent blocks near convergence are expected, not a fault.
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        while True:
            w, V = lobpcg(op, V, M=P, Y=Y, largest=False, tol=1e-300, maxiter=5)
            done += 5
            order = np.argsort(w)
            w, V = w[order], V[:, order]
            if previous is not None:
                change = np.abs(w[:k] - previous[:k]) / np.maximum(np.abs(w[:k]), np.finfo(np.float64).tiny)
                if change.max() <= rtol or done >= maxiter:
                    break
            previous = w
    if done >= maxiter and change.max() > rtol:
        warnings.warn(
            f"The eigensolver stopped after {maxiter} iterations with eigenvalues still moving by "
            f"{change.max():.2g} (relative); the embedding may be inaccurate. Try more neighbours.",
            ConvergenceWarning,
            stacklevel=3,
        )
    residual = float(np.linalg.norm(apply(V[:, :k]) - V[:, :k] * w[:k], axis=0).max())
    return Eigenpairs(w[:k], flip_signs(V[:, :k]), 0.0, False, residual)


def nested_dissection(A: Any) -> np.ndarray:
    """A fill-reducing order of the rows of the sparse square ``A``: METIS nested dissection of ``A + A^T``.

    Separators are numbered last, so a factor's fill follows the separators'
    sizes (about ``n log n`` on a 2-D manifold's neighbour graph), where
    SuperLU's column orderings fill about 3x more at a million rows.

    References
    ----------
    Karypis, G. & Kumar, V. (1998). A fast and high quality multilevel scheme
    for partitioning irregular graphs. SIAM J. Sci. Comput. 20(1), 359-392.
    """
    import pymetis
    import scipy.sparse as sp

    pattern = sp.csr_matrix(A, copy=True)
    pattern.data = np.ones_like(pattern.data, dtype=np.int8)
    pattern = (pattern + pattern.T).tocsr()
    pattern.setdiag(0)
    pattern.eliminate_zeros()
    with warnings.catch_warnings():
        # pymetis warns when given arrays it must copy to its index type
        warnings.simplefilter("ignore")
        perm, _ = pymetis.nested_dissection(xadj=pattern.indptr, adjncy=pattern.indices)
    return np.asarray(perm, dtype=np.int64)
