"""A kNN graph of all rows that no process holds whole: rows routed to cells, one index per cell.

The rows are partitioned into ``P`` cells by k-means centroids fitted on a
uniform sample. A routing pass gives every row its *home* cell (nearest
centroid) and the cells it is searched in. Cells are then processed in waves
sized to a memory budget: one pass over the data cuts each row block into the
pieces the wave's cells need (their members and the rows routed to them),
one task per cell builds an index on its members and queries the rows routed
to it, and each row block merges what the cells found into its running k
best. Only a wave's pieces, one cell index per task and the n x k result are
held at any time, spread over the workers.

Routing
-------
``n_probe=m`` (approximate)
    Every row is searched in its ``m`` nearest cells, one round.
``n_probe=None`` (exact routing)
    Round one searches the home cell; its k-th distance ``r_k`` bounds the
    rest: a cell with centroid ``c`` and radius ``R`` (the farthest member
    from ``c``) can hold a nearer row only if ``d(x, c) - R < r_k``
    (triangle inequality), and round two searches exactly those cells. With
    an exact per-cell search (``kdtree``, ``brute``) the graph equals the
    exact kNN graph, whatever the partitioning.

References
----------
Jegou, H., Douze, M. & Schmid, C. (2011). Product quantization for nearest
neighbor search (the inverted-file routing). IEEE Trans. Pattern Analysis and
Machine Intelligence 33(1), 117-128. doi:10.1109/TPAMI.2010.57
"""

from __future__ import annotations

import math
from typing import Any

import dask
import dask.array as da
import numpy as np

from .._random import resolve_seed
from ..core.distances import pairwise_distances, unit_rows
from ..runtime.compute import compute, parallelism
from .backends import BACKENDS
from .neighbors import choose_method, drop_self

#: Metrics the routing's triangle-inequality bound holds for (sqeuclidean and
#: cosine are routed as euclidean distances, of the rows or of unit rows).
PARTITION_METRICS = ("euclidean", "l2", "sqeuclidean", "cosine", "manhattan", "l1", "cityblock", "chebyshev")
#: ``n_partitions="auto"``: about this many rows per cell.
CELL_ROWS = 250_000
#: Bytes of row pieces one wave holds (members and routed rows of its cells).
WAVE_BYTES = 1 << 30
#: Rows of the sample the centroids are fitted on, per cell (at least 20,000).
SAMPLE_PER_CELL = 200


def _route_metric(metric: str) -> str:
    """The metric routing distances are computed in (one obeying the triangle inequality)."""
    return {"sqeuclidean": "euclidean", "cosine": "euclidean", "l2": "euclidean"}.get(metric, metric)


def _route_rows(block: np.ndarray, metric: str) -> np.ndarray:
    return unit_rows(block) if metric == "cosine" else block


def _to_route_distance(dist: np.ndarray, metric: str) -> np.ndarray:
    """A search distance expressed in the routing metric."""
    if metric == "sqeuclidean":
        return np.sqrt(np.maximum(dist, 0))
    if metric == "cosine":  # 1 - cos = chord^2 / 2
        return np.sqrt(np.maximum(2.0 * dist, 0))
    return dist


def _centroid_distances(block: np.ndarray, centroids: np.ndarray, metric: str) -> np.ndarray:
    return pairwise_distances(_route_rows(block, metric).astype(np.float64), centroids, _route_metric(metric))


def _home(block: np.ndarray, centroids: np.ndarray, metric: str) -> np.ndarray:
    """Per row: home cell and distance to it, as one (n, 2) float array."""
    D = _centroid_distances(block, centroids, metric)
    home = D.argmin(axis=1)
    return np.column_stack([home, D[np.arange(len(D)), home]])


def _probe_routes(block: np.ndarray, centroids: np.ndarray, metric: str, n_probe: int) -> np.ndarray:
    """The ``n_probe`` nearest cells of each row, nearest first (the home cell first)."""
    D = _centroid_distances(block, centroids, metric)
    near = np.argpartition(D, n_probe - 1, axis=1)[:, :n_probe] if n_probe < D.shape[1] else np.argsort(D, axis=1)
    order = np.argsort(np.take_along_axis(D, near, axis=1), axis=1, kind="stable")
    return np.take_along_axis(near, order, axis=1)


def _bound_routes(
    block: np.ndarray, best: tuple[np.ndarray, np.ndarray], centroids: np.ndarray, radii: np.ndarray, metric: str
) -> np.ndarray:
    """Cells other than home whose ball can hold a row nearer than the k-th found (-1 padded)."""
    D = _centroid_distances(block, centroids, metric)
    r_k = _to_route_distance(best[1][:, -1].astype(np.float64), metric)
    home = D.argmin(axis=1)
    may = D - radii[None, :] <= r_k[:, None] * (1 + 1e-6) + 1e-12
    may[np.arange(len(D)), home] = False
    width = max(int(may.sum(axis=1).max(initial=0)), 1)
    out = np.full((len(D), width), -1, dtype=np.int64)
    rows, cells = np.nonzero(may)
    slot = np.arange(len(rows)) - np.searchsorted(rows, rows)
    out[rows, slot] = cells
    return out


def _cut(
    block: np.ndarray, start: int, home_block: np.ndarray, routes: np.ndarray, cells: list[int]
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The pieces of one row block a wave's cells need: (members, member ids, queries, query ids)."""
    ids = np.arange(start, start + len(block))
    home = home_block[:, 0].astype(np.int64)
    out = {}
    for c in cells:
        m = home == c
        q = (routes == c).any(axis=1)
        out[c] = (block[m], ids[m], block[q], ids[q])
    return out


def _search_cell(
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    k: int,
    metric: str,
    method: str,
    seed: int,
    options: dict,
    bounds: list[int],
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Build the cell's index on its members, query the rows routed to it; results split by row block."""
    members = np.concatenate([p[0] for p in pieces])
    member_ids = np.concatenate([p[1] for p in pieces])
    queries = np.concatenate([p[2] for p in pieces])
    query_ids = np.concatenate([p[3] for p in pieces])
    if len(queries) == 0 or len(members) == 0:
        empty = (np.empty(0, np.int64), np.empty((0, k), np.int64), np.empty((0, k), np.float32))
        return [empty for _ in bounds[:-1]]
    chosen = choose_method(len(members), members.shape[1], metric) if method == "auto" else method
    backend = BACKENDS[chosen](metric, seed, {"build_threads": 1, **options})  # one thread per task
    backend.build(np.ascontiguousarray(members))
    kq = min(k + 1, len(members))
    ind, dist = backend.query(np.ascontiguousarray(queries), kq)
    ind = member_ids[np.asarray(ind, dtype=np.int64)]
    dist = np.asarray(dist, dtype=np.float32)
    if kq < k + 1:  # a small cell: pad (-1, inf); the merge keeps real neighbours first
        ind = np.hstack([ind, np.full((len(ind), k + 1 - kq), -1, np.int64)])
        dist = np.hstack([dist, np.full((len(dist), k + 1 - kq), np.inf, np.float32)])
    ind, dist = drop_self(ind, dist, query_ids)
    order = np.argsort(query_ids, kind="stable")
    query_ids, ind, dist = query_ids[order], ind[order], dist[order]
    cuts = np.searchsorted(query_ids, bounds)
    return [(query_ids[a:b], ind[a:b], dist[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _merge(
    start: int,
    n_rows: int,
    k: int,
    best: tuple[np.ndarray, np.ndarray] | None,
    *found: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """A row block's k best over what it had and what the cells found (cells are disjoint)."""
    rows = [np.repeat(np.arange(n_rows), k)] if best is not None else []
    inds = [best[0].ravel()] if best is not None else []
    dists = [best[1].ravel()] if best is not None else []
    for ids, ind, dist in found:
        rows.append(np.repeat(ids - start, k))
        inds.append(ind.ravel())
        dists.append(dist.ravel())
    r, i, d = np.concatenate(rows), np.concatenate(inds), np.concatenate(dists)
    order = np.lexsort((i, d, r))  # by row, then distance (ties by index: any partitioning agrees)
    r, i, d = r[order], i[order], d[order]
    first = np.searchsorted(r, np.arange(n_rows))
    rank = np.arange(len(r)) - first[r]
    keep = rank < k
    out_i = np.full((n_rows, k), -1, np.int64)
    out_d = np.full((n_rows, k), np.inf, np.float32)
    out_i[r[keep], rank[keep]] = i[keep]
    out_d[r[keep], rank[keep]] = d[keep]
    return out_i, out_d


def _radii(home_block: np.ndarray, n_cells: int) -> np.ndarray:
    """Per cell, the farthest of this block's members from the centroid."""
    out = np.zeros(n_cells)
    np.maximum.at(out, home_block[:, 0].astype(np.int64), home_block[:, 1])
    return out


def _counts(home_block: np.ndarray, n_cells: int) -> np.ndarray:
    return np.bincount(home_block[:, 0].astype(np.int64), minlength=n_cells)


def _routing(Xd: da.Array, centroids: np.ndarray, metric: str) -> tuple[da.Array, np.ndarray, np.ndarray]:
    """Home cells (kept on the workers), members per cell and cell radii."""
    homes = da.map_blocks(_home, Xd, centroids, metric, chunks=(Xd.chunks[0], (2,)), dtype=np.float64).persist()
    pieces = [
        (dask.delayed(_counts)(h, len(centroids)), dask.delayed(_radii)(h, len(centroids)))
        for h in homes.to_delayed().ravel()
    ]
    (found,) = compute(pieces)
    return homes, np.sum([c for c, _ in found], axis=0), np.max([r for _, r in found], axis=0)


def partitioned_graph(
    Xd: da.Array,
    k: int,
    metric: str,
    method: str,
    n_partitions: int | str,
    n_probe: int | None,
    random_state: int | None,
    options: dict | None,
) -> tuple[da.Array, da.Array]:
    """Lazy (indices, distances) of the partitioned kNN graph (validated input; see :func:`knn_graph`)."""
    from sklearn.cluster import KMeans

    from ..blockwise.sampling import uniform_sample

    if metric not in PARTITION_METRICS:
        raise ValueError(f"A partitioned graph supports the metrics {', '.join(PARTITION_METRICS)}; got {metric!r}.")
    if n_partitions != "auto" and (
        isinstance(n_partitions, bool) or not isinstance(n_partitions, (int, np.integer)) or n_partitions < 1
    ):
        raise ValueError(f"partitions must be None, 'auto' or a positive int; got {n_partitions!r}.")
    if n_probe is not None and (isinstance(n_probe, bool) or not isinstance(n_probe, (int, np.integer)) or n_probe < 1):
        raise ValueError(f"n_probe must be a positive int, or None for exact routing; got {n_probe!r}.")
    n, p = Xd.shape
    seed = resolve_seed(random_state)
    n_cells = max(1, math.ceil(n / CELL_ROWS)) if n_partitions == "auto" else int(n_partitions)
    n_cells = max(1, min(n_cells, n // (4 * (k + 1))))  # cells must hold more than k rows
    sample, _ = uniform_sample(Xd, min(n, max(20_000, SAMPLE_PER_CELL * n_cells)), seed)
    kmeans = KMeans(n_clusters=n_cells, n_init=1, random_state=seed).fit(_route_rows(sample, metric))
    centroids = kmeans.cluster_centers_.astype(np.float64)
    homes, counts, radii = _routing(Xd, centroids, metric)
    if (counts <= k).any():  # drop cells too small to answer k + 1 neighbours, route again
        centroids = centroids[counts > k]
        homes, counts, radii = _routing(Xd, centroids, metric)
    n_cells = len(centroids)
    rnd = _Round(Xd, homes.to_delayed().ravel(), counts, k, metric, method, seed, dict(options or {}))
    first = 1 if n_probe is None else min(int(n_probe), n_cells)
    route = dask.delayed(_probe_routes, pure=True)
    best = rnd.search([route(b, centroids, metric, first) for b in rnd.blocks], first, [None] * len(rnd.blocks))
    if n_probe is None and n_cells > 1:
        bound = dask.delayed(_bound_routes, pure=True)
        routes = dask.persist(*[bound(b, bb, centroids, radii, metric) for b, bb in zip(rnd.blocks, best)])
        (routed,) = compute([dask.delayed(_n_routed)(r) for r in routes])
        best = rnd.search(list(routes), sum(routed) / n, best)
    sizes = np.diff(rnd.starts)
    ind = da.concatenate([da.from_delayed(bb[0], (m, k), dtype=np.int64) for bb, m in zip(best, sizes)])
    dist = da.concatenate([da.from_delayed(bb[1], (m, k), dtype=np.float32) for bb, m in zip(best, sizes)])
    return ind, dist


def _n_routed(routes: np.ndarray) -> int:
    return int((routes >= 0).sum())


class _Round:
    """The search of routed rows in their cells, wave by wave, merged into each block's k best."""

    def __init__(
        self,
        Xd: da.Array,
        homes: list[Any],
        counts: np.ndarray,
        k: int,
        metric: str,
        method: str,
        seed: int,
        options: dict,
    ) -> None:
        self.blocks = list(Xd.to_delayed().ravel())
        self.starts = np.concatenate([[0], np.cumsum(Xd.chunks[0])]).astype(np.int64)
        self.homes, self.counts, self.k = homes, counts, k
        self.row_bytes = Xd.dtype.itemsize * Xd.shape[1]
        self.args = (k, metric, method, seed, options, self.starts.tolist())

    def search(self, routes: list[Any], routed_per_row: float, best: list[Any]) -> list[Any]:
        cut = dask.delayed(_cut, pure=True)
        cell = dask.delayed(_search_cell, pure=True)
        merge = dask.delayed(_merge, pure=True)
        bounds = list(zip(self.starts[:-1].tolist(), np.diff(self.starts).tolist()))
        for wave in _waves(self.counts, self.row_bytes, routed_per_row):
            cuts = [cut(b, s, h, r, wave) for b, (s, _), h, r in zip(self.blocks, bounds, self.homes, routes)]
            found = {c: cell([piece[c] for piece in cuts], *self.args) for c in wave}
            merged = [merge(s, m, self.k, best[j], *[found[c][j] for c in wave]) for j, (s, m) in enumerate(bounds)]
            best = list(dask.persist(*merged))
        return best


def _waves(counts: np.ndarray, row_bytes: float, routed_per_row: float) -> list[list[int]]:
    """Cells grouped so each wave's pieces fit ``WAVE_BYTES``, and each wave has work for every thread."""
    order = np.argsort(-counts, kind="stable")
    per_cell = counts * row_bytes * (1 + routed_per_row)
    waves: list[list[int]] = [[]]
    held = 0.0
    for c in order:
        if waves[-1] and held + per_cell[c] > WAVE_BYTES and len(waves[-1]) >= parallelism():
            waves.append([])
            held = 0.0
        waves[-1].append(int(c))
        held += per_cell[c]
    return waves
