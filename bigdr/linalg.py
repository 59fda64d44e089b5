"""Eigen- and singular-value solvers on small dense results and on dask arrays.

One module decides how spectra are computed and fixes the sign convention
every method uses: **the entry of largest magnitude in each component is
positive** (the same rule as scikit-learn's ``svd_flip(u_based_decision=False)``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import dask.array as da
import numpy as np
import scipy.linalg

from ._compute import compute
from .stats import Moments, QRState


def flip_signs(components: np.ndarray) -> np.ndarray:
    """Make the largest-magnitude entry of each row of ``components`` positive."""
    if components.size == 0:
        return components
    idx = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), idx])
    signs[signs == 0] = 1
    return components * signs[:, None]


def spectrum_from_moments(state: Moments) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of the scatter matrix (descending) and eigenvectors as rows."""
    scatter = (state.scatter + state.scatter.T) / 2
    evals, evecs = scipy.linalg.eigh(scatter, check_finite=False)
    order = np.argsort(evals)[::-1]
    return np.clip(evals[order], 0, None), evecs[:, order].T


def spectrum_from_qr(state: QRState) -> tuple[np.ndarray, np.ndarray]:
    """Squared singular values of the centred data (= scatter eigenvalues) and right singular vectors."""
    _, s, vt = scipy.linalg.svd(state.R, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    p = state.R.shape[1]
    if vt.shape[0] < p:
        # Fewer rows seen than features: complete the basis with the null space.
        null = scipy.linalg.null_space(vt).T if vt.shape[0] else np.eye(p)
        vt = np.vstack([vt, null])
        s = np.concatenate([s, np.zeros(p - s.shape[0])])
    return s**2, vt


def _random_state(random_state: Any) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(random_state)
    raise TypeError(f"random_state must be None, an int or a numpy Generator; got {type(random_state).__name__}.")


def randomized_eigh(
    apply: Callable[[np.ndarray], np.ndarray],
    dim: int,
    width: int,
    n_iter: int = 4,
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Ritz pairs of a symmetric operator by randomized subspace iteration.

    Halko, Martinsson & Tropp (2011), Algorithms 4.4/5.3: ``Z = orth(A Omega)``,
    ``n_iter`` times ``Z = orth(A Z)``, then the eigen-decomposition of
    ``Z^T A Z``. ``apply`` maps a ``(dim, width)`` numpy matrix to ``A`` times
    it (one pass over the data when ``A`` is a dask expression). Power
    iteration favours the eigenvalues of largest *magnitude*, so for an
    indefinite ``A`` negative eigenvalues appear among the pairs returned.

    Returns
    -------
    values : (width,) Ritz values, descending
    vectors : (dim, width) orthonormal columns
    """
    rng = _random_state(random_state)
    Z, _ = np.linalg.qr(rng.standard_normal((dim, width)))
    for _ in range(n_iter):
        Z, _ = np.linalg.qr(apply(Z))
    W = apply(Z)
    T = Z.T @ W
    values, U = scipy.linalg.eigh((T + T.T) / 2)
    order = np.argsort(values)[::-1]
    return values[order], Z @ U[:, order]


def randomized_scatter_eig(
    X: da.Array,
    mean: np.ndarray,
    n_components: int,
    n_oversamples: int = 10,
    n_iter: int = 4,
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top eigenpairs of the scatter of ``X - mean`` by randomized subspace iteration.

    :func:`randomized_eigh` applied to ``A = Xc^T Xc`` with ``Xc = X - mean``
    formed block by block inside the graph (the centred matrix is never
    stored): each product ``Xc^T (Xc Z)`` is one pass over ``X``, which may
    be chunked along both axes. The test matrix is drawn from
    ``random_state`` in the driver, so the result does not depend on chunking
    or scheduler.

    Returns
    -------
    eigenvalues : (k,) descending
    vectors : (k, p) rows
    """
    n, p = X.shape
    width = int(min(n_components + n_oversamples, p, n))
    Xc = X - mean.astype(X.dtype)

    def apply(Z: np.ndarray) -> np.ndarray:
        Zd = da.from_array(Z, chunks=(X.chunks[1], Z.shape[1]))
        return np.asarray(compute(Xc.T @ (Xc @ Zd))[0], dtype=np.float64)

    evals, vecs = randomized_eigh(apply, p, width, n_iter, random_state)
    return np.clip(evals[:n_components], 0, None), vecs[:, :n_components].T


class SymmetricSpectrum(NamedTuple):
    """Leading eigenpairs of a symmetric matrix and how indefinite it is."""

    values: np.ndarray  #: (k,) descending
    vectors: np.ndarray  #: (n, k) columns, sign convention applied
    negative_mass: float  #: sum |negative eigenvalues| / sum |eigenvalues| over those computed
    full: bool  #: whether the whole spectrum was computed (else the largest-magnitude part)


#: Dense LAPACK ``eigh`` (whole spectrum) up to this size; ARPACK above.
DENSE_EIGH_MAX = 2000


def top_eigh(B: np.ndarray, k: int, random_state: Any = 0, extra: int = 10) -> SymmetricSpectrum:
    """Top ``k`` eigenpairs of a symmetric in-memory matrix, choosing the solver.

    Up to :data:`DENSE_EIGH_MAX` rows: LAPACK ``eigh`` of the whole spectrum,
    so ``negative_mass`` is exact. Above: ARPACK (``eigsh``) for the ``k +
    extra`` eigenvalues of largest magnitude, which contain the top ``k``
    positive ones unless more than ``extra`` negative eigenvalues outrank
    them (then a second ARPACK run asks for the largest algebraic ones);
    ``negative_mass`` then covers the eigenvalues computed.
    """
    B = np.asarray(B, dtype=np.float64)
    n = B.shape[0]
    if n <= DENSE_EIGH_MAX:
        w, V = scipy.linalg.eigh((B + B.T) / 2, check_finite=False)
        full = True
    else:
        from scipy.sparse.linalg import eigsh

        v0 = _random_state(random_state).uniform(-1, 1, n)
        w, V = eigsh(B, k=min(n - 1, k + extra), which="LM", v0=v0)
        full = False
    total = float(np.abs(w).sum())
    negative_mass = float(np.abs(w[w < 0]).sum() / total) if total > 0 else 0.0
    if not full and np.count_nonzero(w > 0) < k:
        w, V = eigsh(B, k=k, which="LA", v0=v0)
    order = np.argsort(w)[::-1][:k]
    return SymmetricSpectrum(w[order], flip_signs(V[:, order].T).T, negative_mass, full)


def samples_gram_eig(X: da.Array, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of the n x n Gram of the centred rows (for n < p).

    ``Xc Xc^T = U diag(lam) U^T`` has the same nonzero eigenvalues as the p x p
    scatter; components follow as ``Xc^T U / sqrt(lam)`` (notes 001: choose
    the smaller of the two problems).
    """
    Xc = X - mean.astype(X.dtype)
    (K,) = compute(Xc @ Xc.T)
    K = np.asarray(K, dtype=np.float64)
    evals, U = scipy.linalg.eigh((K + K.T) / 2, check_finite=False)
    order = np.argsort(evals)[::-1]
    return np.clip(evals[order], 0, None), U[:, order]


def components_from_samples(X: da.Array, mean: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Right singular vectors ``Xc^T U / sqrt(lam)`` for the given left vectors (one pass).

    ``Xc^T u`` has norm ``sqrt(lam)``, so normalising each row is the division.
    """
    Xc = X - mean.astype(X.dtype)
    Ud = da.from_array(U, chunks=(X.chunks[0], U.shape[1]))
    (V,) = compute(Xc.T @ Ud)
    V = np.asarray(V, dtype=np.float64).T
    # Directions with (numerically) zero variance are arbitrary; normalise
    # rather than divide by ~0 so they stay finite unit vectors.
    norms = np.linalg.norm(V, axis=1)
    return V / np.where(norms > 0, norms, 1.0)[:, None]


#: ``smallest_eigh(solver="auto")``: dense LAPACK up to this size, AMG-preconditioned LOBPCG above.
DENSE_SPARSE_MAX = 2000
SPARSE_SOLVERS = ("auto", "dense", "arpack", "lobpcg", "amg")


def smallest_eigh(L: Any, k: int, solver: str = "auto", random_state: Any = 0, known: np.ndarray | None = None,
                  tol: float = 1e-6, maxiter: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` smallest eigenpairs of a sparse symmetric positive semi-definite matrix.

    ``dense``: LAPACK on the dense matrix (small n). ``arpack``: Lanczos on
    ``c I - L`` for its largest eigenvalues (``c`` a Gershgorin bound), to
    tolerance 1e-10. ``lobpcg``: LOBPCG without preconditioner. ``amg``:
    LOBPCG preconditioned by smoothed-aggregation algebraic multigrid
    (pyamg) on ``L`` plus a tiny shift, as scikit-learn's
    ``eigen_solver="amg"``: iteration counts barely grow with n, where
    Lanczos needs ever more as the spectral gap near 0 shrinks (measured in
    ``docs/spectral.md``). ``known`` is an exact null vector, used as the
    first start vector of the iterative solvers.

    Returns eigenvalues ascending and eigenvectors as columns (signs not fixed).
    """
    if solver not in SPARSE_SOLVERS:
        raise ValueError(f"eigen_solver must be one of {SPARSE_SOLVERS}; got {solver!r}.")
    n = L.shape[0]
    if solver == "auto":
        solver = "dense" if n <= DENSE_SPARSE_MAX else "amg"
    if solver == "dense":
        w, V = scipy.linalg.eigh(L.toarray() if hasattr(L, "toarray") else np.asarray(L), subset_by_index=[0, k - 1])
        return w, V
    import scipy.sparse as sp

    rng = _random_state(random_state)
    if solver == "arpack":
        from scipy.sparse.linalg import eigsh

        c = float(abs(L).sum(axis=1).max())
        v0 = known if known is not None else rng.uniform(-1, 1, n)
        w, V = eigsh(c * sp.identity(n, format="csr") - L, k=k, which="LA", v0=v0, tol=1e-10)
        order = np.argsort(c - w)
        return (c - w)[order], V[:, order]
    from scipy.sparse.linalg import lobpcg

    X0 = rng.standard_normal((n, k))
    if known is not None:
        X0[:, 0] = known
    M = None
    if solver == "amg":
        import pyamg

        shift = 1e-8 * float(abs(L).sum(axis=1).max())
        ml = pyamg.smoothed_aggregation_solver((L + shift * sp.identity(n, format="csr")).tocsr(), max_coarse=500)
        M = ml.aspreconditioner()
    import warnings

    with warnings.catch_warnings():
        # LOBPCG warns when it stops at maxiter; the residuals are checked below.
        warnings.simplefilter("ignore", UserWarning)
        w, V = lobpcg(L, X0, M=M, largest=False, tol=tol, maxiter=maxiter)
    order = np.argsort(w)
    w, V = w[order], V[:, order]
    residual = float(np.linalg.norm(L @ V - V * w, axis=0).max())
    if residual > 100 * tol:
        warnings.warn(f"The eigensolver ({solver}) stopped after {maxiter} iterations with residual {residual:.2g}; "
                      f"the embedding may be inaccurate. Try eigen_solver='amg' or 'arpack', or more neighbours.",
                      UserWarning, stacklevel=3)
    return w, V
