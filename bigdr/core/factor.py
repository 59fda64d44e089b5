"""Maximum-likelihood factor analysis from the sample covariance, and orthogonal rotations.

The model: ``x = W^T z + mu + e`` with ``z ~ N(0, I_k)`` and ``e ~ N(0, Psi)``,
``Psi`` diagonal, so ``Cov x = W^T W + Psi``. Given the biased sample
covariance ``S`` of n rows, the log-likelihood is::

    L = -n/2 (p log 2 pi + log det(W^T W + Psi) + tr((W^T W + Psi)^-1 S))

For fixed ``Psi`` it is maximised in closed form (Lawley & Maxwell 1971;
Barber 2012, section 21.2.2): with ``s_j, v_j`` the top eigenpairs of the
scaled covariance ``A = Psi^-1/2 S Psi^-1/2``, ``W = diag(sqrt(max(s_j - 1,
0))) V^T Psi^1/2`` and

    L = -n/2 (p log 2 pi + k + sum_j log s_j + sum_{j > k} s_j + log det Psi)

and ``Psi`` is then updated to ``max(diag(S) - diag(W^T W), 1e-12)``. These
are the iterations of scikit-learn's ``FactorAnalysis``, whose SVD of the
scaled data matrix has the same singular values squared and right vectors
as the eigenpairs of ``A``: here only the p x p covariance is needed, so
the data are read once, whatever the number of iterations.

References
----------
Lawley, D. N. & Maxwell, A. E. (1971). Factor Analysis as a Statistical
Method, 2nd ed. Butterworths.

Barber, D. (2012). Bayesian Reasoning and Machine Learning. Cambridge
University Press, chapter 21.

Kaiser, H. F. (1958). The varimax criterion for analytic rotation in factor
analysis. Psychometrika 23(3), 187-200.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from .eigen import flip_signs, top_eigh

#: Floor of the noise variances and of their square roots (scikit-learn's).
SMALL = 1e-12
ROTATIONS = (None, "varimax", "quartimax")


class FactorFit(NamedTuple):
    components: np.ndarray  # (k, p) loadings W
    noise_variance: np.ndarray  # (p,) Psi
    loglike: list[float]  # per iteration
    n_iter: int
    converged: bool
    spectrum: np.ndarray  # (p,) eigenvalues of Psi^-1/2 S Psi^-1/2 (descending) at the last iteration; (k,) randomized


def fit_factors(
    S: np.ndarray,
    n: int,
    k: int,
    tol: float = 1e-2,
    max_iter: int = 1000,
    noise_variance_init: np.ndarray | None = None,
    method: str = "lapack",
    random_state: Any = 0,
    n_iter: int = 3,
) -> FactorFit:
    """Maximum-likelihood loadings and noise variances from the biased covariance ``S`` of ``n`` rows.

    Iterates until the log-likelihood rises by less than ``tol`` or
    ``max_iter`` iterations; each costs one symmetric eigendecomposition of
    a p x p matrix (``method="lapack"``), or the top ``k`` eigenpairs by
    ``n_iter`` randomized subspace iterations (``"randomized"``, scikit-learn's
    ``svd_method``; the spectrum then holds those ``k`` values only).
    """
    p = S.shape[0]
    variance = np.diag(S).copy()
    psi = np.ones(p) if noise_variance_init is None else np.asarray(noise_variance_init, dtype=np.float64).copy()
    llconst = p * np.log(2.0 * np.pi) + k
    loglike: list[float] = []
    old = -np.inf
    W = np.zeros((k, p))
    values = np.zeros(p)
    converged = False
    for _ in range(max_iter):
        sqrt_psi = np.sqrt(psi) + SMALL
        A = S / np.outer(sqrt_psi, sqrt_psi)
        if method == "lapack":
            values, vectors = scipy.linalg.eigh(A, check_finite=False)
            s, V = values[::-1][:k], flip_signs(vectors[:, ::-1][:, :k])
        else:
            top = top_eigh(A, k, random_state, solver="randomized", n_iter=n_iter)
            s, V = top.values, top.vectors
            values = s[::-1].copy()
        unexplained = float(np.trace(A) - s.sum())
        W = np.sqrt(np.maximum(s - 1.0, 0.0))[:, None] * V.T * sqrt_psi
        ll = -n / 2.0 * (llconst + np.sum(np.log(s)) + unexplained + np.sum(np.log(psi)))
        loglike.append(float(ll))
        if ll - old < tol:
            converged = True
            break
        old = ll
        psi = np.maximum(variance - np.sum(W**2, axis=0), SMALL)
    return FactorFit(W, psi, loglike, len(loglike), converged, values[::-1].copy())


def rotate(components: np.ndarray, method: str, tol: float = 1e-6, max_iter: int = 100) -> np.ndarray:
    """Orthogonal rotation of the loadings ``components`` (k, p) by Kaiser's varimax or by quartimax.

    Maximises ``sum_jl (L_jl^2 - gamma mean_j L_jl^2)^2`` over rotations of the
    p x k loading matrix ``L`` (gamma = 1: varimax, 0: quartimax) by the
    classical SVD iteration: ``R = U V^T`` from the SVD of ``L^T (L R)^3 -
    gamma ...``, until the criterion grows by less than ``tol`` (relative).
    Returns the rotated (k, p) loadings.
    """
    L = components.T
    p, k = L.shape
    R = np.eye(k)
    total = 0.0
    for _ in range(max_iter):
        LR = L @ R
        target = LR**3 - (LR * (LR**2).sum(axis=0) / p if method == "varimax" else 0.0)
        u, s, vt = np.linalg.svd(L.T @ target)
        R = u @ vt
        new = float(s.sum())
        if total != 0 and new < total * (1 + tol):
            break
        total = new
    return (L @ R).T


def posterior_map(components: np.ndarray, noise_variance: np.ndarray) -> np.ndarray:
    """The (p, k) matrix taking centred rows to the posterior means of their factors.

    ``E[z | x] = (I + W Psi^-1 W^T)^-1 W Psi^-1 (x - mu)``.
    """
    Wpsi = components / noise_variance
    cov_z = scipy.linalg.inv(np.eye(len(components)) + Wpsi @ components.T)
    return Wpsi.T @ cov_z


def precision(components: np.ndarray, noise_variance: np.ndarray) -> np.ndarray:
    """``(W^T W + Psi)^-1`` by the matrix inversion lemma (a k x k inverse).

    A noise variance of 0 (a PCA keeping every component) leaves no lemma: the p x p inverse.
    """
    k, p = components.shape
    noise_variance = np.broadcast_to(np.asarray(noise_variance, dtype=np.float64), (p,))
    if k == 0:
        return np.diag(1.0 / noise_variance)
    if k == p or not np.all(noise_variance > 0):
        return scipy.linalg.inv(components.T @ components + np.diag(noise_variance))
    Wpsi = components / noise_variance
    inner = scipy.linalg.inv(np.eye(k) + Wpsi @ components.T)
    return np.diag(1.0 / noise_variance) - Wpsi.T @ inner @ Wpsi


def row_loglike(centred: np.ndarray, precision_matrix: np.ndarray, logdet_precision: float) -> np.ndarray:
    """Each row's Gaussian log-density under the model (centred rows, float64)."""
    p = centred.shape[1]
    quad = np.einsum("ij,ij->i", centred @ precision_matrix, centred)
    return -0.5 * quad - 0.5 * (p * np.log(2.0 * np.pi) - logdet_precision)
