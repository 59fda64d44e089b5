"""Local updates of a reference set, its neighbour graph and its landmark geodesics.

What makes ``partial_fit`` of the graph methods cost in proportion to the
batch, not to the rows seen:

Reservoir (:func:`reservoir`)
    Every row seen has a uniform key fixed by the seed and its global row
    number (:func:`bigdr.blockwise.sampling.row_keys`). The reference set is the
    ``cap`` rows of smallest key among all rows seen, plus the protected rows
    (the landmarks). A uniform sample of everything seen (bottom-k sampling),
    the same sample a fit of all the rows draws, and the same however the
    rows arrived in batches.
Neighbour lists (:func:`update_knn`)
    After rows leave and enter, only three kinds of lists change: the
    entering rows' (queried), the lists that held a departed row (queried
    again), and old rows for which an entering row is nearer than their
    current k-th neighbour. The last are found among each entering row's
    ``REVERSE_FACTOR * k`` nearest reference rows: an old row that has an
    entering row among its k nearest lies, in all but very uneven densities,
    among that entering row's nearest few k (``tests/test_graph_update.py``
    measures the agreement with a rebuilt graph).
Geodesics (:func:`relax_geodesics`)
    Graph distances to the landmarks only shorten when edges are added, so
    they are updated by label-correcting relaxation from the rows whose
    edges changed (Law & Jain 2006): those rows take the best path through
    their neighbours, and the neighbours of any row whose distance fell by
    more than ``PROPAGATE_RTOL`` (10%: a real shortcut, such as a new row
    bridging a gap) try again, and so on. Smaller decreases are not
    propagated: every new row shortens many paths a little, and chasing
    those touched all rows. Measured (``benchmarks/results/updates.md``,
    "Geodesic relaxation") on a 100,256-row reference set taking 997 rows
    (16,902 lists changed, 256 landmarks), against a full Dijkstra re-solve
    of the updated graph (12.1 s): propagating decreases above 50% / 10% /
    1% / 0.1% / 0.01% took 0.40 / 0.38 / 2.8 / 50 / 111 s and gave
    embeddings within Procrustes disparity 8.5e-6 / 8.4e-6 / 7.8e-6 / 3.3e-6
    / 2.0e-6 of it. Rows whose best path ran through a
    departed row, or along an edge that a new row displaced from a
    neighbour list, keep that length: both were parts of the manifold's
    graph, so the path remains an estimate of the geodesic. Run to
    convergence, the relaxation gives exactly ``G(i) = min_j d(i, j) +
    G_old(j)`` with ``d`` the shortest paths of the current graph (tested):
    never longer than the current graph's geodesics; in the measurement
    above, the largest difference from them was 0.8% of the largest geodesic.

References
----------
Law, M. H. C. & Jain, A. K. (2006). Incremental nonlinear dimensionality
reduction by manifold learning. IEEE Transactions on Pattern Analysis and
Machine Intelligence 28(3), 377-391. doi:10.1109/TPAMI.2006.56

Vitter, J. S. (1985). Random sampling with a reservoir. ACM Transactions on
Mathematical Software 11(1), 37-57. doi:10.1145/3147.3165
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..exceptions import ConvergenceWarning
from .neighbors import NeighborIndex, drop_self

#: Entering rows look for old rows whose lists they join among this many times k nearest.
REVERSE_FACTOR = 3
#: Relaxation stops propagating a decrease smaller than this fraction of the distance.
PROPAGATE_RTOL = 0.1
#: Float32 elements of candidate distances held at once by a relaxation sweep.
RELAX_PIECE = 1 << 22


def reservoir(
    old_keys: np.ndarray, protected: np.ndarray, new_keys: np.ndarray, cap: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Which old reference rows stay and which new rows enter: ``(keep_old, enter_new)`` boolean masks.

    The reference set after the update is the protected rows plus the
    ``cap`` rows of smallest key among the unprotected old rows and the new
    ones (every row when ``cap`` is None).
    """
    keep = np.ones(len(old_keys), dtype=bool)
    enter = np.ones(len(new_keys), dtype=bool)
    free = np.flatnonzero(~protected)
    if cap is None or len(free) + len(new_keys) <= cap:
        return keep, enter
    keys = np.concatenate([old_keys[free], new_keys])
    # Ties (probability zero for float keys) break by position: old rows first.
    chosen = np.zeros(len(keys), dtype=bool)
    chosen[np.lexsort((np.arange(len(keys)), keys))[:cap]] = True
    keep[free] = chosen[: len(free)]
    enter[:] = chosen[len(free) :]
    return keep, enter


class GraphUpdate(NamedTuple):
    """A reference set after rows left and entered, with its neighbour lists."""

    rows: np.ndarray  #: (n_ref, p) the kept old rows (in their order), then the entering rows
    indices: np.ndarray  #: (n_ref, k) int64 neighbour lists, ascending distance
    distances: np.ndarray  #: (n_ref, k) float32
    old_position: np.ndarray  #: (n_old,) new position of each old row, -1 for departed rows
    changed: np.ndarray  #: positions of the rows whose neighbour lists changed (entering rows included)
    index: NeighborIndex  # type: ignore[assignment]  # fitted on ``rows`` (a field named like tuple.index)


def update_knn(
    rows: np.ndarray,
    indices: np.ndarray,
    distances: np.ndarray,
    keep: np.ndarray,
    entering: np.ndarray,
    metric: str = "euclidean",
    method: str = "auto",
) -> GraphUpdate:
    """The k-nearest-neighbour lists of the reference set after departures and arrivals.

    Parameters
    ----------
    rows, indices, distances
        The old reference rows and their lists (no row its own neighbour).
    keep
        Boolean mask of the old rows that stay.
    entering
        The new rows that join the reference set.
    """
    n_old, k = indices.shape
    position = np.full(n_old, -1, dtype=np.int64)
    position[keep] = np.arange(int(keep.sum()))
    n_keep = int(keep.sum())
    ref = np.ascontiguousarray(np.vstack([rows[keep], entering.astype(rows.dtype, copy=False)]))
    n_ref = len(ref)
    if k >= n_ref:
        raise ValueError(f"n_neighbors={k} must be less than the {n_ref} reference rows.")
    ind = np.empty((n_ref, k), dtype=np.int64)
    dist = np.empty((n_ref, k), dtype=np.float32)
    ind[:n_keep] = position[indices[keep]]
    dist[:n_keep] = distances[keep]
    index = NeighborIndex(metric, method).fit(ref)

    lost = np.flatnonzero((ind[:n_keep] < 0).any(axis=1))
    fresh = np.arange(n_keep, n_ref)
    gained = np.empty(0, dtype=np.int64)
    if len(fresh):
        kq = min(REVERSE_FACTOR * k + 1, n_ref)
        cand_i, cand_d = drop_self(*index.query_block(ref[fresh], kq), fresh)
        ind[fresh], dist[fresh] = cand_i[:, :k], cand_d[:, :k]
        gained = _insert_reverse(ind, dist, fresh, cand_i, cand_d, n_keep, lost)
    if len(lost):
        q_i, q_d = drop_self(*index.query_block(ref[lost], k + 1), lost)
        ind[lost], dist[lost] = q_i, q_d
    changed = np.unique(np.concatenate([fresh, lost, gained]))
    return GraphUpdate(ref, ind, dist, position, changed, index)


def _insert_reverse(
    ind: np.ndarray,
    dist: np.ndarray,
    fresh: np.ndarray,
    cand_i: np.ndarray,
    cand_d: np.ndarray,
    n_keep: int,
    skip: np.ndarray,
) -> np.ndarray:
    """Put entering rows into the lists of old rows they are nearer to than those rows' k-th neighbour.

    Rows in ``skip`` are queried afresh anyway. Returns the old rows whose lists changed.
    """
    k = ind.shape[1]
    target = cand_i.ravel()
    source = np.repeat(fresh, cand_i.shape[1])
    d = cand_d.ravel()
    old = target < n_keep
    target, source, d = target[old], source[old], d[old]
    hit = d < dist[target, -1]
    hit &= ~np.isin(target, skip)
    target, source, d = target[hit], source[hit], d[hit]
    if not len(target):
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((d, target))
    target, source, d = target[order], source[order], d[order]
    rows, first, counts = np.unique(target, return_index=True, return_counts=True)
    width = k + int(min(counts.max(), k))
    merged_i = np.full((len(rows), width), -1, dtype=np.int64)
    merged_d = np.full((len(rows), width), np.inf, dtype=np.float32)
    merged_i[:, :k], merged_d[:, :k] = ind[rows], dist[rows]
    rank = np.arange(len(target)) - np.repeat(first, counts)
    ok = rank < width - k
    slot = np.repeat(np.arange(len(rows)), counts)[ok]
    merged_i[slot, k + rank[ok]] = source[ok]
    merged_d[slot, k + rank[ok]] = d[ok]
    best = np.argsort(merged_d, axis=1, kind="stable")[:, :k]
    ind[rows] = np.take_along_axis(merged_i, best, axis=1)
    dist[rows] = np.take_along_axis(merged_d, best, axis=1)
    return rows


def relax_geodesics(
    graph: sp.csr_matrix, G: np.ndarray, start: np.ndarray, rtol: float | None = None, max_sweeps: int = 100_000
) -> int:
    """Shorten ``G`` (rows x landmarks, in place) through the edges of ``graph``, from the rows ``start``.

    Each sweep lets the active rows take ``min_j w_ij + G[j]`` over their
    neighbours; the neighbours of the rows that improved by more than
    ``PROPAGATE_RTOL`` are the next sweep's active rows. Returns the number
    of rows whose distances changed.
    """
    rtol = PROPAGATE_RTOL if rtol is None else rtol
    active = np.unique(np.asarray(start, dtype=np.int64))
    touched = np.zeros(graph.shape[0], dtype=bool)
    m = G.shape[1]
    for _ in range(max_sweeps):
        if not len(active):
            break
        improved = _pull(graph, G, active, m, rtol)
        touched[improved] = True
        if not len(improved):
            break
        active = np.unique(graph[improved].indices)
    else:
        if len(active):
            warnings.warn(
                f"The relaxation of the geodesics stopped after max_sweeps={max_sweeps} sweeps with {len(active):,} "
                f"rows still improving by more than {rtol:g} (relative); their distances may be too long. Refit, "
                f"or update with smaller batches.",
                ConvergenceWarning,
                stacklevel=2,
            )
    return int(touched.sum())


def _pull(graph: sp.csr_matrix, G: np.ndarray, rows: np.ndarray, m: int, rtol: float) -> np.ndarray:
    """One relaxation of ``rows`` through their neighbours; returns the rows that improved."""
    indptr, indices, data = graph.indptr, graph.indices, graph.data
    rows = rows[indptr[rows + 1] > indptr[rows]]
    if not len(rows):
        return rows
    degrees = indptr[rows + 1] - indptr[rows]
    improved = []
    # Neighbour lists padded to the largest degree of a piece (padding: weight inf), so the
    # minimum over neighbours is one reduction over a dense (rows, degree, landmarks) block.
    step = max(1, RELAX_PIECE // (m * int(degrees.max())))
    for s in range(0, len(rows), step):
        part, deg = rows[s : s + step], degrees[s : s + step]
        width = int(deg.max())
        slot = np.arange(width)
        valid = slot[None, :] < deg[:, None]
        at = np.where(valid, indptr[part][:, None] + slot[None, :], 0)
        nbr = np.where(valid, indices[at], 0)
        w = np.where(valid, data[at], np.inf).astype(np.float32)
        best = (w[:, :, None] + G[nbr]).min(axis=1)
        current = G[part]
        better = (best < current * (1 - rtol)).any(axis=1)
        if better.any():
            G[part] = np.minimum(current, best)
            improved.append(part[better])
    return np.concatenate(improved) if improved else np.empty(0, dtype=np.int64)
