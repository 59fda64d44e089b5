"""Eigen- and singular-value solvers on small dense results and on dask arrays.

One module decides how spectra are computed and fixes the sign convention
every method uses: **the entry of largest magnitude in each component is
positive** (the same rule as scikit-learn's ``svd_flip(u_based_decision=False)``).
"""

from __future__ import annotations

from typing import Any

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


def randomized_scatter_eig(
    X: da.Array,
    mean: np.ndarray,
    n_components: int,
    n_oversamples: int = 10,
    n_iter: int = 4,
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top eigenpairs of the scatter of ``X - mean`` by randomized subspace iteration.

    Halko, Martinsson & Tropp (2011), Algorithms 4.3/5.1 applied to
    ``A = Xc^T Xc`` with ``Xc = X - mean`` formed block by block inside the
    graph (the centred matrix is never stored). Each iteration is one pass
    over ``X``: ``W = Xc^T (Xc Z)``, then ``Z = qr(W)``; a final Rayleigh–Ritz
    step on ``Z^T A Z`` gives the eigenpairs. ``X`` may be chunked along both
    axes. The test matrix is drawn from ``random_state`` in the driver, so the
    result does not depend on chunking or scheduler.

    Returns
    -------
    eigenvalues : (k,) descending
    vectors : (k, p) rows
    """
    n, p = X.shape
    width = int(min(n_components + n_oversamples, p, n))
    rng = _random_state(random_state)
    Z, _ = np.linalg.qr(rng.standard_normal((p, width)))
    Xc = X - mean.astype(X.dtype)
    W = Z
    for it in range(n_iter + 1):
        Zd = da.from_array(Z, chunks=(X.chunks[1], width))
        (W,) = compute(Xc.T @ (Xc @ Zd))
        if it < n_iter:
            Z, _ = np.linalg.qr(W)
    T = Z.T @ W
    evals, U = scipy.linalg.eigh((T + T.T) / 2)
    order = np.argsort(evals)[::-1][:n_components]
    return np.clip(evals[order], 0, None), (Z @ U[:, order]).T


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
