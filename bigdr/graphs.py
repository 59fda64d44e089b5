"""Sparse neighbourhood graphs (notes 002: epsilon, kNN, mutual kNN, fully connected).

These build scipy.sparse matrices, so they hold O(n k) in memory: they are
called inside the solvers that need a sparse graph, not on data larger than
memory. Edge weights are distances; an exact duplicate (distance 0) is stored
as the smallest positive float32 so that the edge survives sparse arithmetic,
which drops explicit zeros.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components as _cc

from .neighbors import KNNGraph

TINY = float(np.finfo(np.float32).tiny)


class DisconnectedGraphWarning(UserWarning):
    """The neighbourhood graph has more than one connected component."""


def to_csr(graph: KNNGraph, symmetrize: str | None = "union", weight: str = "distance") -> sp.csr_matrix:
    """Sparse n x n adjacency of a kNN graph.

    Parameters
    ----------
    symmetrize : {"union", "mutual", None}
        ``union``: i ~ j if either is among the other's k nearest (the kNN
        graph of notes 002); ``mutual``: if both are; ``None``: directed.
    weight : {"distance", "connectivity"}
        Edge value: the distance, or 1.
    """
    if symmetrize not in ("union", "mutual", None):
        raise ValueError(f"symmetrize must be 'union', 'mutual' or None; got {symmetrize!r}.")
    if weight not in ("distance", "connectivity"):
        raise ValueError(f"weight must be 'distance' or 'connectivity'; got {weight!r}.")
    ind, dist = graph.compute()
    n, k = ind.shape
    values = np.ones(n * k, dtype=np.float32) if weight == "connectivity" else np.maximum(dist.ravel(), TINY)
    A = sp.csr_matrix((values, (np.repeat(np.arange(n), k), ind.ravel())), shape=(n, n))
    if symmetrize == "union":
        A = A.maximum(A.T)
    elif symmetrize == "mutual":
        A = A.minimum(A.T)
    return A.tocsr()


def radius_graph(X: Any, radius: float, metric: str = "euclidean") -> sp.csr_matrix:
    """Epsilon graph: i ~ j when their distance is at most ``radius`` (notes 002).

    Exact, with a KD-tree (euclidean, manhattan, chebyshev); the rows are
    held in memory.
    """
    from scipy.spatial import cKDTree

    from ._compute import compute
    from .io import as_array
    from .neighbors import KDTREE_METRICS

    if not np.isscalar(radius) or not radius > 0:
        raise ValueError(f"radius must be a positive number; got {radius!r}.")
    if metric not in KDTREE_METRICS or metric == "cosine":
        raise ValueError(f"radius_graph supports euclidean, manhattan and chebyshev; got {metric!r}.")
    (data,) = compute(as_array(X))
    tree = cKDTree(data)
    D = tree.sparse_distance_matrix(tree, radius, p=KDTREE_METRICS[metric], output_type="coo_matrix").tocsr()
    D.setdiag(0)
    D.eliminate_zeros()
    D.data = np.maximum(D.data, TINY).astype(np.float32)
    return D


def dense_distance_graph(X: Any, metric: str = "euclidean", max_samples: int = 20_000) -> np.ndarray:
    """Fully connected graph (all pairwise distances) for small n, as a dense array."""
    from scipy.spatial.distance import cdist

    from ._compute import compute
    from .io import as_array

    (data,) = compute(as_array(X))
    if len(data) > max_samples:
        raise ValueError(
            f"A fully connected graph of {len(data)} rows needs {len(data) ** 2 * 8 / 2**30:.1f} GiB; "
            f"use a kNN graph (knn_graph) or raise max_samples."
        )
    return cdist(data, data, metric=metric)


def connected_components(adjacency: sp.spmatrix | KNNGraph) -> tuple[int, np.ndarray, np.ndarray]:
    """Components of an undirected graph.

    Returns ``(n_components, labels, sizes)``; labels are renumbered so that
    component 0 is the largest, and ``sizes`` is in decreasing order.
    """
    if isinstance(adjacency, KNNGraph):
        adjacency = to_csr(adjacency, "union", "connectivity")
    n_comp, labels = _cc(adjacency, directed=False)
    sizes = np.bincount(labels, minlength=n_comp)
    order = np.argsort(-sizes, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(n_comp)
    return int(n_comp), rank[labels], sizes[order]


def check_connected(adjacency: sp.spmatrix | KNNGraph, on_disconnected: str = "raise",
                    hint: str = "n_neighbors") -> np.ndarray:
    """Check that the graph is connected; return the component label of every row.

    ``on_disconnected``: ``"raise"`` a ValueError, ``"warn"`` with a
    :class:`DisconnectedGraphWarning`, or ``"ignore"``. The message names the
    component sizes and what to change.
    """
    if on_disconnected not in ("raise", "warn", "ignore"):
        raise ValueError(f"on_disconnected must be 'raise', 'warn' or 'ignore'; got {on_disconnected!r}.")
    n_comp, labels, sizes = connected_components(adjacency)
    if n_comp > 1 and on_disconnected != "ignore":
        shown = ", ".join(str(s) for s in sizes[:10]) + (", ..." if n_comp > 10 else "")
        msg = (f"The neighbourhood graph has {n_comp} connected components (sizes {shown}). "
               f"Increase {hint}, or keep only the largest component (largest_component / "
               f"on_disconnected='largest' where a method offers it).")
        if on_disconnected == "raise":
            raise ValueError(msg)
        warnings.warn(msg, DisconnectedGraphWarning, stacklevel=2)
    return labels


def largest_component(adjacency: sp.spmatrix | KNNGraph) -> np.ndarray:
    """Row indices of the largest connected component (sorted)."""
    _, labels, _ = connected_components(adjacency)
    return np.flatnonzero(labels == 0)


def join_components(adjacency: sp.spmatrix, points: np.ndarray, metric: str = "euclidean") -> sp.csr_matrix:
    """Join the components of a symmetric distance graph by their shortest links.

    Each round links every component but the largest to its nearest point
    outside it (one new edge, weighted by the distance), until one component
    is left; every round at least halves the count. Cost per round: one
    neighbour index per joined component (fine for a few components; many
    tiny ones mean too few neighbours, better fixed at the source).
    """
    from .neighbors import NeighborIndex

    A = sp.csr_matrix(adjacency, dtype=np.float32)
    points = np.asarray(points)
    while True:
        n_comp, labels, _ = connected_components(A)
        if n_comp == 1:
            return A
        rows, cols, vals = [], [], []
        for c in range(1, n_comp):
            inside = np.flatnonzero(labels == c)
            outside = np.flatnonzero(labels != c)
            index = NeighborIndex(metric).fit(points[outside])
            ind, dist = index.query_block(points[inside], 1)
            j = int(np.argmin(dist[:, 0]))
            rows.append(inside[j])
            cols.append(outside[ind[j, 0]])
            vals.append(max(float(dist[j, 0]), TINY))
        link = sp.csr_matrix((vals, (rows, cols)), shape=A.shape, dtype=np.float32)
        A = A.maximum(link).maximum(link.T).tocsr()
