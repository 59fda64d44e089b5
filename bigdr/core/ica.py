"""FastICA's pieces: whitening from a covariance, contrast functions, the fixed-point sums over rows.

After whitening (``z = sqrt(n) K (x - mean)``, unit covariance), FastICA
(Hyvarinen 1999) looks for an orthogonal ``W`` making the rows of ``W z``
as non-Gaussian as possible. Its fixed-point step for one unit ``w`` is
``w <- E[z g(w^T z)] - E[g'(w^T z)] w`` with ``g`` the derivative of the
contrast ``G`` (log cosh, -exp(-u^2/2), u^4/4). Both expectations are sums
over rows, so a step is one pass over the data with a mergeable state
(:class:`ICASums`: ``sum g(W z) z^T``, ``sum g'(W z)``, the count), and the
rest (symmetric or Gram-Schmidt decorrelation, the convergence test) works
on k x k matrices. The same kernel serves the parallel algorithm (all rows
of ``W`` at once) and the deflation one (one row at a time).

References
----------
Hyvarinen, A. (1999). Fast and robust fixed-point algorithms for independent
component analysis. IEEE Trans. Neural Networks 10(3), 626-634.

Hyvarinen, A. & Oja, E. (2000). Independent component analysis: algorithms
and applications. Neural Networks 13(4-5), 411-430.

Amari, S., Cichocki, A. & Yang, H. H. (1996). A new learning algorithm for
blind signal separation. NIPS 8, 757-763.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

FUNCTIONS = ("logcosh", "exp", "cube")


class ICASums(NamedTuple):
    """Mergeable sums of one fixed-point step over rows."""

    n: int
    g_z: np.ndarray  # (m, k): sum over rows of g(W z) z^T
    g_prime: np.ndarray  # (m,): sum over rows of g'(W z)


def merge_sums(a: ICASums, b: ICASums) -> ICASums:
    return ICASums(a.n + b.n, a.g_z + b.g_z, a.g_prime + b.g_prime)


def contrast(name: str, u: np.ndarray, alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``g(u)`` and ``g'(u)`` elementwise for the contrast ``name`` (scikit-learn's three)."""
    if name == "logcosh":
        gu = np.tanh(alpha * u)
        return gu, alpha * (1.0 - gu**2)
    if name == "exp":
        e = np.exp(-(u**2) / 2.0)
        return u * e, (1.0 - u**2) * e
    if name == "cube":
        return u**3, 3.0 * u**2
    raise ValueError(f"fun must be one of {', '.join(FUNCTIONS)}; got {name!r}.")


def whitening(values: np.ndarray, vectors: np.ndarray, n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """``K`` (k x p) and the singular values of the centred data, from the eigenpairs of its scatter ``Xc^T Xc``.

    ``values`` descending (the squared singular values, from the scatter or
    from the R factor of the centred rows), ``vectors`` as columns.
    ``K = (U / d)^T[:k]`` with each eigenvector's first entry made positive,
    as scikit-learn's FastICA; ``sqrt(n) K (x - mean)`` then has unit covariance.
    """
    d = np.sqrt(np.maximum(values, np.finfo(np.float64).eps * 10))
    signs = np.sign(vectors[0])
    signs[signs == 0] = 1
    return (vectors * signs / d).T[:n_components], d


def sym_decorrelation(W: np.ndarray) -> np.ndarray:
    """``(W W^T)^-1/2 W``: the orthogonal matrix nearest to ``W``'s rows."""
    s, u = np.linalg.eigh(W @ W.T)
    s = np.clip(s, np.finfo(W.dtype).tiny, None)
    return (u * (1.0 / np.sqrt(s))) @ u.T @ W


def ica_sums(
    block: np.ndarray, mean: np.ndarray, white: np.ndarray, W: np.ndarray, fun: Any, alpha: float, fun_args: Any = None
) -> ICASums:
    """One block's share of a fixed-point step: whitened ``z = (x - mean) white^T``, then the sums.

    ``fun`` names a contrast or is scikit-learn's callable: ``fun(u, **fun_args)`` of the k x rows
    projections returns ``g(u)`` and the row mean of ``g'(u)``, which times the block's rows is its sum.
    """
    z = (np.asarray(block, dtype=np.float64) - mean) @ white.T
    if callable(fun):
        u = (z @ W.T).T
        out = fun(u, **(fun_args or {}))
        pair = isinstance(out, tuple) and len(out) == 2
        g, g_mean = (np.asarray(out[0]), np.asarray(out[1])) if pair else (np.empty(0), np.empty(0))
        if g.shape != u.shape or g_mean.shape != (u.shape[0],):
            raise ValueError(
                "A callable fun must return a tuple (g(u), mean of g'(u) over the rows), of shapes "
                f"{u.shape} and ({u.shape[0]},), as scikit-learn's FastICA asks; got {type(out).__name__}."
            )
        return ICASums(len(z), g.astype(np.float64) @ z, g_mean.astype(np.float64) * len(z))
    gu, gpu = contrast(fun, z @ W.T, alpha)
    return ICASums(len(z), gu.T @ z, gpu.sum(axis=0))


def parallel_step(W: np.ndarray, sums: ICASums) -> np.ndarray:
    """The symmetric fixed-point update of all units: ``decorrelate(E[g(W z) z^T] - diag(E[g'(W z)]) W)``."""
    return sym_decorrelation(sums.g_z / sums.n - (sums.g_prime / sums.n)[:, None] * W)


def deflation_step(w: np.ndarray, done: np.ndarray, sums: ICASums) -> np.ndarray:
    """One unit's update, made orthogonal to the units already found (``done``) and normalised."""
    w1 = sums.g_z[0] / sums.n - (sums.g_prime[0] / sums.n) * w
    w1 = w1 - (w1 @ done.T) @ done if len(done) else w1
    return w1 / np.sqrt(np.sum(w1**2))


def change(new: np.ndarray, old: np.ndarray) -> float:
    """FastICA's convergence measure: ``max_i | |<w_i new, w_i old>| - 1 |``."""
    return float(np.max(np.abs(np.abs(np.einsum("ij,ij->i", np.atleast_2d(new), np.atleast_2d(old))) - 1.0)))


def amari_distance(W: np.ndarray, A: np.ndarray) -> float:
    """Amari et al.'s (1996) distance of ``P = W A`` from a scaled permutation: 0 when ``W`` unmixes ``A``.

    ``(1 / (2k(k-1))) [sum_i (sum_j |p_ij| / max_j |p_ij| - 1) + sum_j (sum_i |p_ij| / max_i |p_ij| - 1)]``,
    between 0 and 1.
    """
    P = np.abs(W @ A)
    k = P.shape[0]
    rows = (P.sum(axis=1) / P.max(axis=1) - 1).sum()
    cols = (P.sum(axis=0) / P.max(axis=0) - 1).sum()
    return float((rows + cols) / (2 * k * (k - 1))) if k > 1 else 0.0
