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
  neighbour of ``i`` (scikit-learn's ``SpectralEmbedding`` affinity).

``epsilon="auto"`` is half the median distance from a row to its ``k``-th
neighbour, so the kernel falls to ``e^-2`` at a typical neighbourhood edge:
wide enough that the truncation keeps the bulk of the kernel's mass, narrow
enough to stay local.

References
----------
Coifman, R. R. & Lafon, S. (2006). Diffusion maps. Applied and Computational
Harmonic Analysis 21(1), 5-30. doi:10.1016/j.acha.2006.04.006
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

WEIGHTINGS = ("gaussian", "connectivity")


def auto_epsilon(distances: np.ndarray) -> float:
    """Half the median distance to the k-th neighbour (the last column of ``distances``)."""
    eps = float(np.median(distances[:, -1])) / 2
    if not eps > 0:
        raise ValueError(
            "Half or more of the rows have k duplicates at distance 0, so epsilon='auto' is 0; "
            "remove duplicates, raise n_neighbors or give epsilon."
        )
    return eps


def kernel_values(distances: np.ndarray, kernel: str, epsilon: float) -> np.ndarray:
    if kernel == "gaussian":
        d = np.asarray(distances, dtype=np.float64)
        return np.exp(-(d * d) / (2.0 * epsilon * epsilon))
    return np.ones(np.shape(distances))


def edge_weights(distances: np.ndarray, kernel: str, epsilon: float) -> np.ndarray:
    """Kernel values of graph edges, floored at the smallest float so that an edge between
    exact duplicates survives sparse arithmetic (which drops explicit zeros)."""
    return np.maximum(kernel_values(distances, kernel, epsilon), np.finfo(np.float64).tiny)


def symmetrise(A: sp.csr_matrix, AT: sp.csr_matrix, kernel: str) -> sp.csr_matrix:
    """The symmetric affinity from directed edges ``A`` and their reverse ``AT`` (rows of ``A.T``)."""
    return sp.csr_matrix((A + AT) * 0.5 if kernel == "connectivity" else A.maximum(AT))


class Affinity(NamedTuple):
    W: sp.csr_matrix  #: symmetric affinity, before alpha normalisation
    radius: np.ndarray  #: distance from each row to its k-th neighbour (decides reverse edges of new rows)
    max_degree: int  #: most edges of any row (how many candidates a new row must look at)


def affinity(indices: np.ndarray, distances: np.ndarray, kernel: str, epsilon: float, self_loops: bool) -> Affinity:
    """Sparse symmetric affinity of a kNN graph given as ``(n, k)`` indices and distances (self excluded)."""
    n, k = indices.shape
    rows = np.repeat(np.arange(n), k)
    vals = edge_weights(distances, kernel, epsilon).ravel()
    A = sp.csr_matrix((vals, (rows, indices.ravel())), shape=(n, n))
    W = symmetrise(A, A.T.tocsr(), kernel)
    max_degree = int(np.diff(W.indptr).max())
    if self_loops:
        W = (W + sp.identity(n, format="csr")).tocsr()
    return Affinity(W, np.asarray(distances[:, -1], dtype=np.float64), max_degree)


# -- new rows (Nyström) -----------------------------------------------------------
def new_row_weights(
    ind: np.ndarray, dist: np.ndarray, k: int, radius: np.ndarray, kernel: str, epsilon: float, self_loops: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Affinity of new rows to the reference rows, by the rule that built the graph.

    ``ind``/``dist`` are each row's nearest reference rows (ascending, more
    than ``k`` so that reverse edges are seen). A row at distance 0 from its
    first candidate *is* that reference row: it is not its own neighbour, and
    gets the self-loop weight when the graph has self-loops. Then ``j`` is an
    edge when it is among the row's ``k`` nearest others or the row is within
    ``j``'s own k-th-neighbour radius, weighted as in :func:`affinity`; so a
    training row gets back exactly its row of ``W`` (ties aside).

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
    vals = kernel_values(dist, kernel, epsilon)
    if kernel == "connectivity":
        w = 0.5 * (forward.astype(np.float64) + backward) * vals
    else:
        w = np.where(forward | backward, vals, 0.0)
    if self_loops:
        w[is_self, 0] = 1.0
    return w, is_self


def check_alpha(alpha: Any) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a number in [0, 1]; got {alpha!r}.")
    return float(alpha)
