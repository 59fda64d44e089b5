"""Kernels on neighbour graphs: adjacency -> affinity (the first half of the geometry layer).

The geometry layer of the spectral methods (diffusion maps, Laplacian
eigenmaps). Everything here works on the in-memory graph of a reference set
(all rows, or landmarks) and on numpy blocks of new rows; the estimators in
:mod:`bigdr.manifold.spectral` choose which; :mod:`bigdr.graph.operators` turns an
affinity into Markov matrices and Laplacians.

Affinity (sparse, symmetric). Each row is joined to its ``k`` nearest other
rows; the pair ``(i, j)`` is an edge when ``j`` is among the ``k`` nearest of
``i`` *or* ``i`` among those of ``j``. Its weight is

* ``gaussian``: ``exp(-|x_i - x_j|^2 / (2 epsilon^2))`` (Coifman &
  Lafon 2006), the kNN-truncated heat kernel; ``self_loops`` adds ``K(x, x) = 1``;
* ``connectivity``: ``(a_ij + a_ji) / 2`` with ``a_ij = 1`` when ``j`` is a
  neighbour of ``i`` (scikit-learn's ``SpectralEmbedding`` affinity);
* ``umap``: UMAP's fuzzy union ``a_ij + a_ji - a_ij a_ji`` of the directed
  memberships ``a_ij = exp(-max(0, d_ij - rho_i) / sigma_i)``, with ``rho_i``
  the distance to the nearest other row and ``sigma_i`` solving
  ``sum_j exp(-max(0, d_ij - rho_i) / sigma_i) = log2(k + 1)`` (McInnes,
  Healy & Melville 2018); no self-loops. Each row's scale adapts to its
  own neighbourhood, so a cell far from the rest keeps an edge of weight 1
  to its nearest neighbour. These are scanpy's ``obsp["connectivities"]``
  (scanpy's ``n_neighbors`` counts the cell itself: its 15 is ``k = 14``).

``epsilon="auto"`` is half the median distance from a row to its ``k``-th
neighbour, so the kernel falls to ``e^-2`` at a typical neighbourhood edge:
wide enough that the truncation keeps the bulk of the kernel's mass, narrow
enough to stay local.

References
----------
Coifman, R. R. & Lafon, S. (2006). Diffusion maps. Applied and Computational
Harmonic Analysis 21(1), 5-30. doi:10.1016/j.acha.2006.04.006

McInnes, L., Healy, J. & Melville, J. (2018). UMAP: Uniform manifold
approximation and projection for dimension reduction. arXiv:1802.03426.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

WEIGHTINGS = ("gaussian", "connectivity")
#: UMAP's bisection for sigma: iterations, tolerance on the sum, floor as a fraction of the mean distance.
FUZZY_ITER, FUZZY_TOL, FUZZY_MIN_SCALE = 64, 1e-5, 1e-3


def auto_epsilon(distances: np.ndarray) -> float:
    """Half the median distance to the k-th neighbour (the last column of ``distances``)."""
    eps = float(np.median(distances[:, -1])) / 2
    if not eps > 0:
        raise ValueError(
            "Half or more of the rows have k duplicates at distance 0, so epsilon='auto' is 0; "
            "remove duplicates, raise n_neighbors or give epsilon."
        )
    return eps


def fuzzy_scales(distances: np.ndarray) -> np.ndarray:
    """UMAP's per-row ``(rho, sigma)`` from each row's distances to its ``k`` nearest other rows.

    ``rho`` is the distance to the nearest other row at a nonzero distance;
    ``sigma`` solves ``sum_j exp(-max(0, d_ij - rho) / sigma) = log2(k + 1)`` by
    bisection, all rows at once, and is floored at 1e-3 of the row's mean
    distance (of all rows' when ``rho`` is 0), as in UMAP.
    """
    d = np.asarray(distances, dtype=np.float64)
    n, k = d.shape
    rho = np.where(d > 0, d, np.inf).min(axis=1) if k else np.zeros(n)
    rho[~np.isfinite(rho)] = 0.0
    gap = np.maximum(d - rho[:, None], 0.0)
    target = np.log2(k + 1)
    lo, hi, mid = np.zeros(n), np.full(n, np.inf), np.ones(n)
    for _ in range(FUZZY_ITER):
        total = np.exp(-gap / mid[:, None]).sum(axis=1)
        live = np.abs(total - target) >= FUZZY_TOL
        if not live.any():
            break
        over = live & (total > target)
        under = live & ~over
        hi = np.where(over, mid, hi)
        lo = np.where(under, mid, lo)
        mid = np.where(live, np.where(np.isinf(hi), mid * 2.0, (lo + hi) / 2.0), mid)
    floor = FUZZY_MIN_SCALE * np.where(rho > 0, d.mean(axis=1), d.mean() if d.size else 0.0)
    return np.column_stack([rho, np.maximum(mid, floor)])


def fuzzy_memberships(distances: np.ndarray, rho: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """UMAP's membership ``exp(-max(0, d - rho) / sigma)``, ``rho`` and ``sigma`` broadcast against ``d``."""
    d = np.asarray(distances, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > rho, np.exp(-(d - rho) / sigma), 1.0)


def kernel_values(distances: np.ndarray, kernel: str, epsilon: float, scales: np.ndarray | None = None) -> np.ndarray:
    """Kernel values of each row's distances to its nearest rows (``umap``: the row's own scales,
    ``scales`` when already computed)."""
    if kernel == "gaussian":
        d = np.asarray(distances, dtype=np.float64)
        return np.exp(-(d * d) / (2.0 * epsilon * epsilon))
    if kernel == "umap":
        scales = fuzzy_scales(distances) if scales is None else scales
        return fuzzy_memberships(distances, scales[:, :1], scales[:, 1:])
    return np.ones(np.shape(distances))


def edge_weights(distances: np.ndarray, kernel: str, epsilon: float, scales: np.ndarray | None = None) -> np.ndarray:
    """Kernel values of graph edges, floored at the smallest float so that an edge between
    exact duplicates survives sparse arithmetic (which drops explicit zeros)."""
    return np.maximum(kernel_values(distances, kernel, epsilon, scales), np.finfo(np.float64).tiny)


def symmetrise(A: sp.csr_matrix, AT: sp.csr_matrix, kernel: str) -> sp.csr_matrix:
    """The symmetric affinity from directed edges ``A`` and their reverse ``AT`` (rows of ``A.T``)."""
    if kernel == "connectivity":
        return sp.csr_matrix((A + AT) * 0.5)
    if kernel == "umap":
        return sp.csr_matrix(A + AT - A.multiply(AT))
    return sp.csr_matrix(A.maximum(AT))


def has_self_loops(kernel: str, self_loops: bool) -> bool:
    """Whether the graph gets ``K(x, x) = 1``: UMAP's fuzzy union has none."""
    return self_loops and kernel != "umap"


class Affinity(NamedTuple):
    W: sp.csr_matrix  #: symmetric affinity, before alpha normalisation
    radius: np.ndarray  #: distance from each row to its k-th neighbour (decides reverse edges of new rows)
    max_degree: int  #: most edges of any row (how many candidates a new row must look at)
    scales: np.ndarray | None  #: ``umap``: each row's ``(rho, sigma)`` (weights of reverse edges of new rows)


def affinity(indices: np.ndarray, distances: np.ndarray, kernel: str, epsilon: float, self_loops: bool) -> Affinity:
    """Sparse symmetric affinity of a kNN graph given as ``(n, k)`` indices and distances (self excluded)."""
    n, k = indices.shape
    rows = np.repeat(np.arange(n), k)
    scales = fuzzy_scales(distances) if kernel == "umap" else None  # once: the weights and the model use them
    vals = edge_weights(distances, kernel, epsilon, scales).ravel()
    A = sp.csr_matrix((vals, (rows, indices.ravel())), shape=(n, n))
    W = symmetrise(A, A.T.tocsr(), kernel)
    max_degree = int(np.diff(W.indptr).max())
    if has_self_loops(kernel, self_loops):
        W = (W + sp.identity(n, format="csr")).tocsr()
    return Affinity(W, np.asarray(distances[:, -1], dtype=np.float64), max_degree, scales)


# -- new rows (Nyström) -----------------------------------------------------------
def new_row_weights(
    ind: np.ndarray,
    dist: np.ndarray,
    k: int,
    radius: np.ndarray,
    kernel: str,
    epsilon: float,
    self_loops: bool,
    scales: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Affinity of new rows to the reference rows, by the rule that built the graph.

    ``ind``/``dist`` are each row's nearest reference rows (ascending, more
    than ``k`` so that reverse edges are seen). A row at distance 0 from its
    first candidate *is* that reference row: it is not its own neighbour, and
    gets the self-loop weight when the graph has self-loops. Then ``j`` is an
    edge when it is among the row's ``k`` nearest others or the row is within
    ``j``'s own k-th-neighbour radius, weighted as in :func:`affinity`; so a
    training row gets back exactly its row of ``W`` (ties aside). For
    ``umap`` a forward edge has the new row's membership (its scales from its
    own ``k`` nearest) and a reverse edge ``j``'s (``scales``: the reference
    rows' ``(rho, sigma)``), joined by the fuzzy union.

    Unlike :func:`affinity`, the kernel values are not floored: a row so far
    from every reference row that its weights underflow gets none, and the
    caller can say so (there is nothing to extend from).

    Returns ``(weights, is_self)``.
    """
    is_self = dist[:, 0] == 0
    valid = np.ones(dist.shape, dtype=bool)
    valid[is_self, 0] = False
    kth = np.where(is_self, dist[:, min(k, dist.shape[1] - 1)], dist[:, k - 1])
    forward = valid & (dist <= kth[:, None])
    backward = valid & (dist <= radius[ind])
    if kernel == "umap":
        if scales is None:
            raise ValueError("kernel='umap' needs the reference rows' scales.")
        own = fuzzy_scales(np.where(is_self[:, None], dist[:, 1 : k + 1], dist[:, :k]))
        out = np.where(forward, fuzzy_memberships(dist, own[:, :1], own[:, 1:]), 0.0)
        back = np.where(backward, fuzzy_memberships(dist, scales[ind, 0], scales[ind, 1]), 0.0)
        w = out + back - out * back
    elif kernel == "connectivity":
        w = 0.5 * (forward.astype(np.float64) + backward) * kernel_values(dist, kernel, epsilon)
    else:
        w = np.where(forward | backward, kernel_values(dist, kernel, epsilon), 0.0)
    if has_self_loops(kernel, self_loops):
        w[is_self, 0] = 1.0
    return w, is_self


def check_alpha(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1]; got {alpha!r}.")
    return float(alpha)
