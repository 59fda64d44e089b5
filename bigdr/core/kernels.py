"""Positive semi-definite kernels on in-memory blocks, and random Fourier features of the shift-invariant ones.

``kernel_block(A, B, ...)`` is the ``len(A) x len(B)`` block of one of the
kernels of scikit-learn's ``KernelPCA`` (same names, same formulas):

* ``rbf``: ``exp(-gamma |a - b|^2)``
* ``laplacian``: ``exp(-gamma |a - b|_1)``
* ``poly``: ``(gamma <a, b> + coef0)^degree``
* ``sigmoid``: ``tanh(gamma <a, b> + coef0)`` (not positive semi-definite in general)
* ``cosine``: ``<a, b> / (|a| |b|)``
* ``linear``: ``<a, b>``

``fourier_features`` maps rows to ``z(x) = sqrt(2 / D) cos(x W + b)`` with
``W`` drawn from the kernel's spectral density (Gaussian ``N(0, 2 gamma)`` for
rbf, Cauchy with scale ``gamma`` for laplacian) and ``b`` uniform on ``[0,
2 pi)``, so that ``E[z(x) . z(y)] = k(x, y)`` (Rahimi & Recht 2007).

``rbf_preimage`` finds input-space points whose rbf feature maps are closest to
given feature-space points (Mika et al. 1998).

References
----------
Mika, S., Schölkopf, B., Smola, A., Müller, K.-R., Scholz, M. & Rätsch, G.
(1998). Kernel PCA and de-noising in feature spaces. Advances in Neural
Information Processing Systems 11, 536-542.
Rahimi, A. & Recht, B. (2007). Random features for large-scale kernel
machines. Advances in Neural Information Processing Systems 20, 1177-1184.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .distances import pairwise_distances, unit_rows

KERNELS = ("rbf", "laplacian", "poly", "sigmoid", "cosine", "linear")
#: Kernels with a spectral density, so random Fourier features exist.
SHIFT_INVARIANT = ("rbf", "laplacian")


def kernel_block(
    A: np.ndarray,
    B: np.ndarray,
    kernel: Any,
    gamma: float,
    degree: float = 3,
    coef0: float = 1.0,
    params: dict | None = None,
) -> np.ndarray:
    """The kernel between the rows of ``A`` and of ``B`` (float64).

    A callable ``kernel(a, b, **params)`` of two rows is evaluated pair by
    pair by scikit-learn's ``pairwise_kernels``, as scikit-learn's
    ``KernelPCA`` does (``params`` is its ``kernel_params``).
    """
    import scipy.sparse as sp

    if sp.issparse(A) or sp.issparse(B):
        return _sparse_kernel_block(A, B, kernel, gamma, degree, coef0, params)
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if callable(kernel):
        from sklearn.metrics.pairwise import pairwise_kernels

        return np.asarray(pairwise_kernels(A, B, metric=kernel, **(params or {})), dtype=np.float64)
    if kernel == "rbf":
        return np.exp(-gamma * pairwise_distances(A, B, "sqeuclidean"))
    if kernel == "laplacian":
        return np.exp(-gamma * pairwise_distances(A, B, "manhattan"))
    if kernel == "cosine":
        return unit_rows(A) @ unit_rows(B).T
    if kernel in ("poly", "sigmoid", "linear"):
        return _of_inner(A @ B.T, kernel, gamma, degree, coef0)
    raise ValueError(f"kernel must be one of {KERNELS} or 'precomputed'; got {kernel!r}.")


def float_rows(rows: Any) -> Any:
    """Rows as float64 for the kernels: a CSR matrix when they are scipy.sparse, else an array."""
    import scipy.sparse as sp

    return sp.csr_matrix(rows, dtype=np.float64) if sp.issparse(rows) else np.asarray(rows, dtype=np.float64)


def _squared_norms(rows: Any) -> np.ndarray:
    import scipy.sparse as sp

    return (
        np.asarray(rows.multiply(rows).sum(axis=1)).ravel() if sp.issparse(rows) else np.einsum("ij,ij->i", rows, rows)
    )


def _of_inner(G: np.ndarray, kernel: str, gamma: float, degree: float, coef0: float) -> np.ndarray:
    """The kernels that are functions of the inner products ``G = A B^T``."""
    if kernel == "poly":
        return (gamma * G + coef0) ** degree
    if kernel == "sigmoid":
        return np.tanh(gamma * G + coef0)
    return G


def _sparse_kernel_block(
    A: Any, B: Any, kernel: Any, gamma: float, degree: float, coef0: float, params: dict | None
) -> np.ndarray:
    """``kernel_block`` with a scipy.sparse side: rows stay sparse, only the (dense) kernel block is formed.

    Inner products by the sparse product, squared distances from them and the
    rows' squared norms; laplacian and callable kernels by scikit-learn's
    sparse-aware pairwise functions.
    """
    import scipy.sparse as sp
    from sklearn.metrics.pairwise import manhattan_distances, pairwise_kernels

    A, B = float_rows(A), float_rows(B)
    if callable(kernel):
        return np.asarray(pairwise_kernels(A, B, metric=kernel, **(params or {})), dtype=np.float64)
    if kernel == "laplacian":
        return np.exp(-gamma * manhattan_distances(A, B))
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS} or 'precomputed'; got {kernel!r}.")
    G = A @ B.T
    G = np.asarray(G.toarray() if sp.issparse(G) else G, dtype=np.float64)
    if kernel in ("rbf", "cosine"):
        a, b = _squared_norms(A), _squared_norms(B)
        if kernel == "cosine":
            a, b = np.sqrt(a), np.sqrt(b)
            return G / np.where(a > 0, a, 1.0)[:, None] / np.where(b > 0, b, 1.0)[None, :]
        return np.exp(-gamma * np.maximum(a[:, None] + b[None, :] - 2.0 * G, 0.0))
    return _of_inner(G, kernel, gamma, degree, coef0)


def psd_eigenvalues(values: np.ndarray) -> np.ndarray:
    """Eigenvalues of a kernel checked as those of a positive semi-definite matrix (scikit-learn's rule).

    A negative eigenvalue below ``-1e-5`` of the largest (and below
    ``-1e-10``) means the kernel is not positive semi-definite, or its
    eigendecomposition failed: a ValueError. Smaller negative values and
    positive ones below ``1e-12`` of the largest are round-off: set to 0.
    """
    values = np.array(values, dtype=np.float64)
    if not values.size:
        return values
    top, low = float(values.max()), float(values.min())
    if top < 0:
        raise ValueError(
            f"All the eigenvalues asked for are negative (largest {top:.3g}): the kernel is not positive "
            f"semi-definite, or its eigendecomposition failed."
        )
    if low < -1e-5 * top and low < -1e-10:
        raise ValueError(
            f"There are significant negative eigenvalues ({-low / top:.3g} of the maximum positive) among the "
            f"{values.size} asked for: the kernel is not positive semi-definite. Ask for fewer components or use "
            f"a positive semi-definite kernel."
        )
    values[values < 1e-12 * top] = 0.0
    return values


def fourier_weights(p: int, n_features: int, kernel: str, gamma: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``W`` (p x D) from the spectral density of the kernel and the phases ``b`` (D,)."""
    rng = np.random.default_rng([seed, 7])
    if kernel == "rbf":
        W = rng.standard_normal((p, n_features)) * np.sqrt(2.0 * gamma)
    elif kernel == "laplacian":
        W = rng.standard_cauchy((p, n_features)) * gamma
    else:
        raise ValueError(f"random Fourier features need a shift-invariant kernel {SHIFT_INVARIANT}; got {kernel!r}.")
    return W, rng.uniform(0.0, 2.0 * np.pi, n_features)


def fourier_features(block: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``sqrt(2 / D) cos(x W + b)`` for every row of ``block``."""
    return np.sqrt(2.0 / W.shape[1]) * np.cos(np.asarray(float_rows(block) @ W) + b)


def rbf_preimage(
    weights: np.ndarray, basis: np.ndarray, gamma: float, start: np.ndarray, n_iter: int = 100, tol: float = 1e-8
) -> np.ndarray:
    """Pre-images ``z`` of feature-space points ``Psi = sum_i g_i phi(b_i)`` under the rbf kernel, by fixed point.

    ``z`` minimises ``|phi(z) - Psi|^2``, i.e. maximises ``sum_i g_i k(z, b_i)``;
    its stationarity condition gives the iteration (Mika et al. 1998)

        z <- sum_i g_i k(z, b_i) b_i / sum_i g_i k(z, b_i),   k(z, b) = exp(-gamma |z - b|^2).

    ``weights``: (r, n) the ``g_i`` of each point; ``basis``: (n, p); ``start``:
    (r, p). A row stops when it moves less than ``tol`` times the basis's
    spread, or where the denominator vanishes (the iteration is undefined there;
    the row keeps its last value).
    """
    z = np.array(start, dtype=np.float64)
    scale = tol * float(np.sqrt(np.sum(np.var(basis, axis=0)))) or tol
    active = np.ones(len(z), dtype=bool)
    sq_basis = np.einsum("ij,ij->i", basis, basis)
    for _ in range(n_iter):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        zi = z[idx]
        d2 = np.maximum(np.einsum("ij,ij->i", zi, zi)[:, None] + sq_basis[None, :] - 2 * zi @ basis.T, 0)
        w = weights[idx] * np.exp(-gamma * d2)
        total = w.sum(axis=1)
        ok = np.abs(total) > np.finfo(np.float64).tiny
        new = zi.copy()
        new[ok] = (w[ok] @ basis) / total[ok, None]
        moved = np.linalg.norm(new - zi, axis=1)
        z[idx] = new
        active[idx[(moved <= scale) | ~ok]] = False
    return z
