"""Whole n x n affinities, as scikit-learn's ``SpectralEmbedding`` takes them: given, from a graph, dense rbf.

bigdr's own affinities are sparse kernels on neighbour graphs
(:mod:`bigdr.graph.affinity`), built for any number of rows. scikit-learn's
``SpectralEmbedding`` also takes an affinity matrix as it is
(``"precomputed"``), a sparse distance graph whose nearest stored entries
are joined (``"precomputed_nearest_neighbors"``), a callable returning the
affinity, and the dense Gaussian kernel ``exp(-gamma |x - y|^2)``
(``"rbf"``). These hold the whole matrix in memory, so they are checked
against the memory budget first; :func:`laplacian_graph` turns any of them
into the graph the Laplacian is formed from.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..io import as_array
from ..runtime.compute import compute
from ..runtime.memory import MemoryEstimate, Part, check_memory

#: Affinities whose ``X`` is the n x n matrix itself (cross-validation slices it ``[train][:, train]``).
GIVEN = ("precomputed", "precomputed_nearest_neighbors")
#: Copies of the n x n matrix alive at the peak (it, its float64 graph, the Laplacian, scratch).
DENSE_COPIES = 4


def _in_memory(X: Any) -> Any:
    """``X`` as a scipy sparse matrix or a numpy array (a dask array, zarr store or path read whole)."""
    if sp.issparse(X):
        return X
    if isinstance(X, np.ndarray):
        return X
    (out,) = compute(as_array(X))
    return np.asarray(out)


def whole_affinity(X: Any, affinity: Any, gamma: float | None, n_neighbors: int, who: str) -> tuple[Any, np.dtype]:
    """The n x n affinity of ``X`` by scikit-learn's ``affinity`` (kept as given), and the dtype of the result.

    float32 input gives float32, anything else float64. Refused before it is formed when
    ``DENSE_COPIES`` n x n float64 matrices exceed the memory budget.
    """
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"{who} needs a 2-D X; got {type(X).__name__}.")
    n = int(shape[0])
    check_memory(MemoryEstimate(who, {"affinity": Part(DENSE_COPIES * n * n * 8, f"the dense {n:,} x {n:,} affinity",
                                                       "affinity")}))  # fmt: skip
    M = _in_memory(X)
    dtype = np.dtype(np.float32) if M.dtype == np.float32 else np.dtype(np.float64)
    if M.dtype.kind not in "fiub":
        raise TypeError(f"{who} needs numeric X; got dtype {M.dtype}.")
    if not callable(affinity) and not np.all(np.isfinite(M.data if sp.issparse(M) else M)):
        raise ValueError(f"X holds NaN or infinity; affinity={affinity!r} needs finite values.")
    if affinity in GIVEN:
        if M.shape[0] != M.shape[1]:
            raise ValueError(
                f"affinity={affinity!r} takes X as the square n x n matrix; got shape {M.shape}. Pass "
                f"the data itself with affinity='nearest_neighbors', 'gaussian' or 'rbf'."
            )
        if affinity == "precomputed":
            return M, dtype
        return nearest_connectivity(M, n_neighbors), dtype
    if callable(affinity):
        W = affinity(M)
        if getattr(W, "shape", None) != (n, n):
            raise ValueError(f"The callable affinity returned shape {getattr(W, 'shape', None)}; expected ({n}, {n}).")
        return W, dtype
    from sklearn.metrics.pairwise import rbf_kernel  # scikit-learn's kernel, the definition users compare with

    return rbf_kernel(M.astype(dtype), gamma=rbf_gamma(gamma, M.shape[1])), dtype


def rbf_gamma(gamma: float | None, n_features: int) -> float:
    """scikit-learn's ``gamma`` of the rbf affinity: None is ``1 / n_features``."""
    return 1.0 / n_features if gamma is None else float(gamma)


def nearest_connectivity(D: Any, k: int) -> sp.csr_matrix:
    """``(A + A^T) / 2`` with ``a_ij = 1`` for the ``k`` smallest stored distances of row ``i``.

    A stored diagonal (the row's distance to itself) counts among them, as in scikit-learn's
    ``NearestNeighbors(metric="precomputed")``; rows with fewer entries keep all of theirs.
    """
    if sp.issparse(D):
        G = sp.csr_matrix(D, dtype=np.float64)  # explicit zeros (a row's distance to itself) stay stored
    else:  # a dense distance matrix stores every pair, zeros included
        dense = np.asarray(D, dtype=np.float64)
        m = dense.shape[0]
        G = sp.csr_matrix((dense.ravel(), np.tile(np.arange(m), m), np.arange(0, m * m + 1, m)), shape=dense.shape)
    G.sort_indices()
    n = G.shape[0]
    rows = np.repeat(np.arange(n), np.diff(G.indptr))
    order = np.lexsort((G.indices, G.data, rows))  # by row, then distance (ties by column)
    rank = np.arange(len(order)) - G.indptr[rows[order]]
    keep = order[rank < k]
    A = sp.csr_matrix((np.ones(len(keep)), (rows[keep], G.indices[keep])), shape=(n, n))
    return ((A + A.T) * 0.5).tocsr()


def laplacian_graph(W: Any) -> sp.csr_matrix:
    """The graph a Laplacian is formed from: float64 CSR, diagonal dropped (as scipy's ``csgraph.laplacian``
    ignores it), symmetrised as ``(W + W^T) / 2`` with a warning when it is not symmetric."""
    G = sp.csr_matrix(W, dtype=np.float64, copy=True)  # never the caller's matrix, changed in place below
    G.setdiag(0)
    G.eliminate_zeros()
    if G.nnz and np.any(G.data < 0):
        raise ValueError("The affinity has negative entries; a graph's weights must be >= 0.")
    asym = abs(G - G.T)
    if asym.nnz and asym.max() > 1e-10 * max(abs(G).max(), np.finfo(np.float64).tiny):
        warnings.warn(
            "Array is not symmetric, and will be converted to symmetric by average with its transpose.",
            UserWarning,
            stacklevel=5,
        )
        G = ((G + G.T) * 0.5).tocsr()
    return G
