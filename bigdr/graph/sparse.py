"""Sparse neighbourhood graphs: CSR matrices, components, the disconnected-graph policy, geodesics.

These hold O(n k) in memory: they are called inside the solvers that need a
sparse graph, not on data larger than memory. Edge weights are distances; an
exact duplicate (distance 0) is stored as the smallest positive float32 so
that the edge survives sparse arithmetic, which drops explicit zeros.

Graphs (Belkin & Niyogi 2003; von Luxburg 2007): the epsilon graph, the kNN
graph (union or mutual), the fully connected graph.

References
----------
von Luxburg, U. (2007). A tutorial on spectral clustering. Statistics and
Computing 17, 395-416. doi:10.1007/s11222-007-9033-z
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import dask
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components as _cc
from scipy.sparse.csgraph import reverse_cuthill_mckee

from .._validation import check_int, check_real
from ..core.distances import KDTREE_METRICS
from ..exceptions import DisconnectedGraphWarning
from ..io import as_array
from ..runtime.compute import compute, parallelism
from .knn import KNNGraph
from .neighbors import NeighborIndex, check_method, check_metric

TINY = float(np.finfo(np.float32).tiny)


def to_csr(graph: KNNGraph, symmetrize: str | None = "union", weight: str = "distance") -> sp.csr_matrix:
    """Sparse n x n adjacency of a kNN graph.

    Parameters
    ----------
    symmetrize : {"union", "mutual", None}
        ``union``: i ~ j if either is among the other's k nearest;
        ``mutual``: if both are; ``None``: directed.
    weight : {"distance", "connectivity"}
        Edge value: the distance, or 1.
    """
    if symmetrize not in ("union", "mutual", None):
        raise ValueError(f"symmetrize must be 'union', 'mutual' or None; got {symmetrize!r}.")
    if weight not in ("distance", "connectivity"):
        raise ValueError(f"weight must be 'distance' or 'connectivity'; got {weight!r}.")
    return csr_from_lists(*graph.compute(), symmetrize, weight)


def csr_from_lists(
    ind: np.ndarray, dist: np.ndarray, symmetrize: str | None = "union", weight: str = "distance"
) -> sp.csr_matrix:
    """:func:`to_csr` of neighbour lists already in memory."""
    n, k = ind.shape
    values = np.ones(n * k, dtype=np.float32) if weight == "connectivity" else np.maximum(dist.ravel(), TINY)
    A = sp.csr_matrix((values, (np.repeat(np.arange(n), k), ind.ravel())), shape=(n, n))
    if symmetrize == "union":
        A = A.maximum(A.T)
    elif symmetrize == "mutual":
        A = A.minimum(A.T)
    return A.tocsr()


def locality_order(adjacency: sp.spmatrix) -> np.ndarray:
    """An order of the rows that puts graph neighbours near each other: reverse Cuthill-McKee.

    ``adjacency``: a symmetric graph (:func:`csr_from_lists` of kNN lists).
    Tables indexed by row (Isomap's reference x landmark geodesics) laid out
    in this order are read from nearby addresses when rows close on the
    manifold are visited one after another. Reverse Cuthill-McKee (Cuthill &
    McKee 1969, as in :func:`scipy.sparse.csgraph.reverse_cuthill_mckee`);
    a permutation of ``range(n)``.
    """
    return np.asarray(reverse_cuthill_mckee(sp.csr_matrix(adjacency), symmetric_mode=True), dtype=np.int64)


def radius_graph(X: Any, radius: float, metric: str = "euclidean") -> sp.csr_matrix:
    """Epsilon graph: i ~ j when their distance is at most ``radius``.

    Exact, with a KD-tree (euclidean, manhattan, chebyshev); the rows are
    held in memory.
    """
    from scipy.spatial import cKDTree

    radius = check_real(radius, "radius", 0, low_open=True)
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

    (data,) = compute(as_array(X))
    if len(data) > max_samples:
        raise ValueError(
            f"A fully connected graph of {len(data)} rows needs {len(data) ** 2 * 8 / 2**30:.1f} GiB; "
            f"use a kNN graph (knn_graph) or raise max_samples."
        )
    return cdist(data, data, metric=metric)


def connected_components(
    adjacency: sp.spmatrix | KNNGraph, symmetric: bool = False
) -> tuple[int, np.ndarray, np.ndarray]:
    """Components of an undirected graph.

    Returns ``(n_components, labels, sizes)``; labels are renumbered so that
    component 0 is the largest, and ``sizes`` is in decreasing order.
    ``symmetric``: the pattern of ``adjacency`` is symmetric, so its strongly
    connected components are the components, found without the transposed
    copy that scipy makes of an undirected graph (a float64 Laplacian of 25M
    nonzeros: 300 MB).
    """
    if isinstance(adjacency, KNNGraph):
        adjacency = to_csr(adjacency, "union", "connectivity")
    if symmetric:
        n_comp, labels = _cc(adjacency, directed=True, connection="strong")
    else:
        n_comp, labels = _cc(adjacency, directed=False)
    sizes = np.bincount(labels, minlength=n_comp)
    order = np.argsort(-sizes, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(n_comp)
    return int(n_comp), rank[labels], sizes[order]


#: What a method may do with a disconnected graph (each method accepts a subset):
#: ``raise`` a ValueError naming the component sizes and the fix; ``warn`` and
#: go on with the components as they are; ``largest``: only the largest
#: component counts (``eligible`` marks it); ``join``: link each component to
#: its nearest point outside it until one is left.
DISCONNECTED_POLICIES = ("raise", "warn", "largest", "join")


def check_policy(policy: Any, allowed: tuple[str, ...]) -> str:
    if policy not in allowed:
        raise ValueError(f"on_disconnected must be one of {', '.join(repr(p) for p in allowed)}; got {policy!r}.")
    return str(policy)


def check_graph_params(
    n_neighbors: Any,
    metric: Any,
    neighbor_method: Any,
    on_disconnected: Any,
    allowed: tuple[str, ...],
    *,
    search: str | None = None,
) -> None:
    """The neighbour-graph parameters every graph method shares, checked in one place.

    ``n_neighbors`` may be None (a radius graph); ``search`` is the search
    the metric must suit when it is not ``neighbor_method`` (a radius graph's k-d tree).
    """
    if n_neighbors is not None:
        check_int(n_neighbors, "n_neighbors")
    check_policy(on_disconnected, allowed)
    check_method(neighbor_method)
    check_metric(metric, search or neighbor_method)


def check_graph_size(n_neighbors: Any, n_rows: int, what: str = "rows") -> None:
    """``n_neighbors`` against the rows a graph is built on: each row's neighbours are other rows.

    Checked before the memory estimate, which would otherwise refuse an impossible
    graph as one too large for memory.
    """
    if n_neighbors is not None and int(n_neighbors) >= n_rows:
        raise ValueError(
            f"n_neighbors={n_neighbors} must be below the number of {what} ({n_rows:,}): "
            f"each row's neighbours are other rows."
        )


def resolve_components(
    adjacency: sp.spmatrix,
    policy: str,
    *,
    points: np.ndarray | None = None,
    metric: str = "euclidean",
    hint: str = "n_neighbors",
    allowed: tuple[str, ...] = DISCONNECTED_POLICIES,
    stacklevel: int = 3,
    components: tuple[int, np.ndarray, np.ndarray] | None = None,
) -> tuple[sp.csr_matrix, np.ndarray, int]:
    """Apply the disconnected-graph policy: ``(graph, eligible rows, number of components found)``.

    The one place that decides what a disconnected graph means; the message
    names the component sizes, the parameter to change and the other policies.
    ``components``: what :func:`connected_components` gave for ``adjacency``, when the caller has it.
    """
    check_policy(policy, allowed)
    n_comp, labels, sizes = connected_components(adjacency) if components is None else components
    eligible = np.ones(adjacency.shape[0], dtype=bool)
    if n_comp == 1:
        return sp.csr_matrix(adjacency), eligible, n_comp
    shown = ", ".join(str(s) for s in sizes[:10]) + (", ..." if n_comp > 10 else "")
    what = f"The neighbourhood graph has {n_comp} connected components (sizes {shown})"
    others = ", ".join(f"on_disconnected={p!r}" for p in allowed if p != "raise")
    if policy == "raise":
        raise ValueError(f"{what}. Increase {hint}, or pass {others}.")
    if policy == "join":
        if points is None:
            raise ValueError("on_disconnected='join' needs the points of the graph.")
        return join_components(adjacency, points, metric), eligible, n_comp
    if policy == "largest":
        warnings.warn(
            f"{what}; embedding the largest ({sizes[0]} rows).", DisconnectedGraphWarning, stacklevel=stacklevel
        )
        return sp.csr_matrix(adjacency), labels == 0, n_comp
    warnings.warn(
        f"{what}; increase {hint} for one connected embedding.", DisconnectedGraphWarning, stacklevel=stacklevel
    )
    return sp.csr_matrix(adjacency), eligible, n_comp


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


#: Partial geodesics held at once by :func:`landmark_geodesics` (besides the result).
GEODESIC_BATCH_BYTES = 256 << 20


def _dijkstra_group(graph: sp.csr_matrix, sources: np.ndarray) -> np.ndarray:
    from scipy.sparse.csgraph import dijkstra

    return dijkstra(graph, directed=True, indices=sources).astype(np.float32)


def landmark_geodesics(graph: sp.csr_matrix, sources: np.ndarray, group_size: int = 8) -> np.ndarray:
    """Shortest-path distances from each source to every node: ``(n_nodes, len(sources))`` float32.

    ``graph`` must be symmetric (an undirected graph stored both ways).
    The sources are split into groups of ``group_size``; each group is one
    dask task (scipy's Dijkstra), and the graph enters the dask graph as one
    key, so a cluster ships it to each worker once per batch. Groups run a
    batch at a time and are copied into the result as they finish; a batch
    holds at most ``GEODESIC_BATCH_BYTES`` of partial results (and at least
    twice the scheduler's parallelism in groups), which bounds the memory
    held twice. Small batches cost time on a cluster: each one is a round
    trip and resends the graph. Unreachable nodes get ``inf``.
    """
    sources = np.asarray(sources, dtype=np.int64)
    n = graph.shape[0]
    out = np.empty((n, len(sources)), dtype=np.float32)
    key = dask.delayed(graph, name=f"bigdr-graph-{uuid.uuid4().hex}", traverse=False)
    starts = list(range(0, len(sources), group_size))
    batch = max(2 * parallelism(), GEODESIC_BATCH_BYTES // max(1, 4 * n * group_size))
    for b in range(0, len(starts), batch):
        chunk = starts[b : b + batch]
        tasks = [dask.delayed(_dijkstra_group, pure=True)(key, sources[s : s + group_size]) for s in chunk]
        for s, part in zip(chunk, compute(*tasks)):
            out[:, s : s + len(part)] = part.T
    return out


#: A sample is a loop when its second geodesic coordinate spreads at least this fraction of the first's
#: variance and the radius in the first two varies by at most :data:`LOOP_RADIUS_CV` of its mean (a circle:
#: 1.0 and 0.04 on the noisy circle of the curves' tests; an open arc or a roll: below 0.07 and above 0.5).
LOOP_VARIANCE_RATIO = 0.5
LOOP_RADIUS_CV = 0.35


def geodesic_coordinates(
    points: np.ndarray, n_components: int, n_neighbors: int = 10, n_landmarks: int = 100
) -> np.ndarray:
    """Coordinates of a few thousand points along their manifold, each axis scaled to [0, 1].

    Landmark Isomap in memory (de Silva & Tenenbaum 2003): the union kNN
    graph of ``points`` (components joined by their shortest links), its
    shortest paths from ``n_landmarks`` farthest-point landmarks, classical
    MDS of the landmarks and the triangulation of the other points. Along a
    curve the coordinate is arc length, where a principal component folds
    a bent curve onto itself. A closed loop has no such coordinate: its
    first two MDS coordinates trace a circle (:data:`LOOP_VARIANCE_RATIO`,
    :data:`LOOP_RADIUS_CV`), and the first alone folds the loop in half; one
    coordinate of a loop is therefore its angle in those two, cut open at
    the widest gap between the points.
    """
    from ..blockwise.sampling import maxmin
    from ..core.triangulation import geodesic_mds, triangulate_distances
    from .knn import knn_graph

    points = np.asarray(points, dtype=np.float64)
    m = len(points)
    graph = join_components(to_csr(knn_graph(points, min(n_neighbors, m - 1))), points)
    landmarks = maxmin(points, min(n_landmarks, m))
    G = landmark_geodesics(graph, landmarks)
    k = 2 if n_components == 1 and len(landmarks) > 2 else n_components
    Y = triangulate_distances(G, geodesic_mds(G, landmarks, k))
    Y = _loop_angle(Y) if n_components == 1 else Y[:, :n_components]
    low, high = Y.min(axis=0), Y.max(axis=0)
    return (Y - low) / np.where(high > low, high - low, 1.0)


def _loop_angle(Y: np.ndarray) -> np.ndarray:
    """The one coordinate of a curve: the first MDS coordinate, or for a loop its angle cut at the widest gap."""
    if Y.shape[1] < 2:
        return Y[:, :1]
    centred = Y[:, :2] - Y[:, :2].mean(axis=0)
    spread = centred.var(axis=0)
    radius = np.hypot(centred[:, 0], centred[:, 1])
    if not (spread[1] >= LOOP_VARIANCE_RATIO * spread[0] and radius.std() <= LOOP_RADIUS_CV * radius.mean()):
        return Y[:, :1]
    angle = np.arctan2(centred[:, 1], centred[:, 0])
    ordered = np.sort(angle)
    gaps = np.diff(np.append(ordered, ordered[0] + 2 * np.pi))
    cut = ordered[(int(np.argmax(gaps)) + 1) % len(ordered)]  # the first angle after the widest gap
    return np.mod(angle - cut, 2 * np.pi)[:, None]
