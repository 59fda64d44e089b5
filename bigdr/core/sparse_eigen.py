"""The smallest eigenpairs of sparse positive semi-definite matrices: graph Laplacians and LLE's cost.

The spectral methods and locally linear embedding solve here, with the
return convention of :mod:`bigdr.core.eigen` (:class:`~bigdr.core.eigen.Eigenpairs`,
ascending values, vectors as columns with signs fixed):

* :func:`graph_solver` chooses the solver for a kNN graph's Laplacian from
  its size, degree and intrinsic dimension;
* :func:`smallest_eigh` (dense, ARPACK on a Chebyshev polynomial of the
  matrix (:mod:`bigdr.core.filtered_lanczos`), LOBPCG, or LOBPCG with an
  algebraic-multigrid preconditioner), given the graph's components: each
  component's null vector is known, and the solvers look for the other pairs;
* :func:`factored_smallest_eigh` (smallest of ``C^T C`` given ``C``, LOBPCG
  preconditioned by a sparse LU in :func:`nested_dissection` order).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .._random import as_generator
from ..exceptions import ConvergenceWarning
from ..runtime.compute import local_threads
from .csr_rows import max_abs_row_sum
from .eigen import Eigenpairs, flip_signs
from .filtered_lanczos import filtered_lanczos

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

    def outside(V: np.ndarray) -> np.ndarray:  # V without its part in the deflated space
        return V if deflate is None else V - deflate @ (deflate.T @ V)

    if solver == "dense":
        A = L.toarray() if hasattr(L, "toarray") else np.array(L)
        if deflate is not None:
            A = A + max_abs_row_sum(L) * (deflate @ deflate.T).toarray()
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
    from scipy.sparse.linalg import LinearOperator, lobpcg

    bound = max_abs_row_sum(L)
    X0 = rng.standard_normal((n, k)) if initial is None else np.array(initial, dtype=np.float64)
    if known is not None:
        X0[:, 0] = known
    X0 = outside(X0)
    A = L
    if deflate is not None:

        def deflated(V: np.ndarray) -> np.ndarray:
            return L @ V + bound * (deflate @ (deflate.T @ V))

        A = LinearOperator(L.shape, matvec=deflated, matmat=deflated, dtype=np.float64)
    M = None
    if tol is None:
        tol = arpack_tol if solver == "amg" else 1e-6
    if solver == "amg":
        import pyamg

        shifted = (L + 1e-8 * bound * sp.identity(n, format="csr")).tocsr()
        M = pyamg.smoothed_aggregation_solver(shifted, max_coarse=500).aspreconditioner()
        if deflate is not None:  # kept outside the deflated space, which it would blow up (a null space of L)
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
