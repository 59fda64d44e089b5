"""A kNN graph of all rows that no process holds whole: rows routed to cells, one index per cell.

The rows are partitioned into ``P`` cells by k-means centroids fitted on a
uniform sample. A routing pass gives every row its *home* cell (nearest
centroid). Two rounds follow, each processing cells in waves sized to a memory
budget: one pass over the data cuts each row block into the pieces the wave's
cells need, one task per cell searches them, and each row block merges what
the cells found into its running k best.

* The home round builds each cell's index on its members (on the worker that
  searches it) and searches the members in it. The indexes stay on the
  workers for the second round.
* The probe round searches the rows routed to other cells in those indexes.
  A row's k-th distance from the home round, ``r_k``, rules cells out: a cell
  with centroid ``c`` and radius ``R`` (its farthest member from ``c``) can
  hold a nearer row only if ``d(x, c) - R < r_k`` (triangle inequality), and,
  in euclidean routing, only if the half-space of points nearer ``c`` than
  the home centroid ``h`` comes within ``r_k`` of the row:
  ``(d(x, c)^2 - d(x, h)^2) / (2 d(c, h)) < r_k``. Cells are the Voronoi cells
  of the centroids, so both bounds are exact.

``n_probe=None`` searches every cell the bounds allow: with an exact per-cell
search (``kdtree``, ``brute``) the graph equals the exact kNN graph, whatever
the partitioning. ``n_probe=m`` searches at most the ``m - 1`` nearest of
them, which caps the work where the bounds rule out little (high intrinsic
dimension, or metrics with only the ball bound). On a 5-D manifold in 50-D,
a row is searched in 0.31 other cells on average with 1M rows in 4 cells and
0.53 with 10M rows in 40 (``benchmarks/results/partitioned.md``), where
probing the ``m`` nearest cells blindly searches ``m - 1``.

An approximate cell index (faiss's HNSW) calibrates its search width on a
sample of its own members, as the index of an all-rows graph does
(:meth:`~bigdr.graph.NeighborIndex.calibrate`), so a cell finds about the same
share of each row's neighbours as one index of all rows would; the driver
warns when a cell falls short at the widest setting.

Only a wave's pieces, the cells' indexes and the n x k result are held at
any time, spread over the workers.

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
from .backends import BACKENDS, RECALL_TARGET
from .neighbors import calibration_rows, choose_method, drop_self, warn_short_recall

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


def _bound_routes(
    block: np.ndarray,
    best: tuple[np.ndarray, np.ndarray],
    centroids: np.ndarray,
    radii: np.ndarray,
    gaps: np.ndarray | None,
    metric: str,
    n_probe: int | None,
) -> np.ndarray:
    """Cells other than home that can hold a row nearer than the k-th found, nearest first (-1 padded).

    Cell ``j`` is ruled out when its ball is too far (``d(x, c_j) - R_j >= r_k``) or, for
    euclidean routing, when the half-space of points nearer ``c_j`` than the home centroid
    ``c_h`` is: ``(d(x, c_j)^2 - d(x, c_h)^2) / (2 |c_j - c_h|) >= r_k`` (``gaps`` holds the
    centroid distances). Cells are Voronoi cells of the centroids, so either bound is exact.
    With ``n_probe``, at most the ``n_probe - 1`` nearest of those cells.
    """
    D = _centroid_distances(block, centroids, metric)
    r_k = _to_route_distance(best[1][:, -1].astype(np.float64), metric)
    reach = r_k[:, None] * (1 + 1e-6) + 1e-12
    rows = np.arange(len(D))
    home = D.argmin(axis=1)
    may = D - radii[None, :] <= reach
    if gaps is not None:  # the half-space bound, without a division (the home cell's gap is 0)
        may &= (D**2 - D[rows, home][:, None] ** 2) <= 2.0 * gaps[home] * reach
    may[rows, home] = False
    width = max(int(may.sum(axis=1).max(initial=0)), 1)
    if n_probe is not None:  # called with n_probe > 1 only: a single probe has no second round
        width = min(width, n_probe - 1)
    near = np.where(may, D, np.inf)
    order = np.argsort(near, axis=1, kind="stable")[:, :width]
    return np.where(np.isfinite(np.take_along_axis(near, order, axis=1)), order, -1)


def _cut(
    block: np.ndarray, start: int, routes: np.ndarray, cells: list[int]
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The rows of one block a wave's cells need, with their ids: ``routes`` names each row's cells."""
    ids = np.arange(start, start + len(block))
    out = {}
    for c in cells:
        q = (routes == c).any(axis=1)
        out[c] = (block[q], ids[q])
    return out


def _home_routes(home_block: np.ndarray) -> np.ndarray:
    return home_block[:, :1].astype(np.int64)


def _build_cell(
    pieces: list[tuple[np.ndarray, np.ndarray]], k: int, metric: str, method: str, seed: int, options: dict
) -> tuple[Any, np.ndarray, float]:
    """The cell's index on its members (one thread, as the task), the members' row ids, and the recall its
    search was calibrated to (an approximate index, as :func:`~bigdr.graph.knn_graph`'s; 1 when exact)."""
    members = np.ascontiguousarray(np.concatenate([p[0] for p in pieces]))
    chosen = choose_method(len(members), members.shape[1], metric) if method == "auto" else method
    backend = BACKENDS[chosen](metric, seed, {**options, "build_threads": 1})
    backend.build(members)
    recall = backend.calibrate(members[calibration_rows(len(members), seed)], k + 1, RECALL_TARGET)  # exact: 1
    return backend, np.concatenate([p[1] for p in pieces]), recall


def _recall(cell: tuple[Any, np.ndarray, float]) -> float:
    return cell[2]


def _query_cell(
    cell: tuple[Any, np.ndarray, float], pieces: list[tuple[np.ndarray, np.ndarray]], k: int, bounds: list[int]
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The k nearest members of the rows routed to the cell (never the row itself), split by row block."""
    backend, member_ids, _ = cell
    queries = np.concatenate([p[0] for p in pieces])
    query_ids = np.concatenate([p[1] for p in pieces])
    if len(queries) == 0:
        empty = (np.empty(0, np.int64), np.empty((0, k), member_ids.dtype), np.empty((0, k), np.float32))
        return [empty for _ in bounds[:-1]]
    kq = min(k + 1, len(member_ids))
    ind, dist = backend.query(np.ascontiguousarray(queries), kq)
    ind = member_ids[np.asarray(ind, dtype=np.int64)]
    dist = np.asarray(dist, dtype=np.float32)
    if kq < k + 1:  # a small cell: pad (-1, inf); the merge keeps real neighbours first
        ind = np.hstack([ind, np.full((len(ind), k + 1 - kq), -1, ind.dtype)])
        dist = np.hstack([dist, np.full((len(dist), k + 1 - kq), np.inf, np.float32)])
    ind, dist = drop_self(ind, dist, query_ids)  # a row routed elsewhere drops its farthest instead
    order = np.argsort(query_ids, kind="stable")
    query_ids, ind, dist = query_ids[order], ind[order], dist[order]
    cuts = np.searchsorted(query_ids, bounds)
    return [(query_ids[a:b], ind[a:b], dist[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _merge(
    start: int,
    n_rows: int,
    k: int,
    id_dtype: type,
    best: tuple[np.ndarray, np.ndarray] | None,
    *found: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """A row block's k best over what it had and what each cell found (cells are disjoint)."""
    if best is None:
        out_i: np.ndarray = np.full((n_rows, k), -1, id_dtype)
        out_d: np.ndarray = np.full((n_rows, k), np.inf, np.float32)
    else:
        out_i, out_d = best[0].copy(), best[1].copy()
    for ids, ind, dist in found:  # one cell at a time: the rows it found against their k best so far
        if not len(ids):
            continue
        r = ids - start
        i = np.hstack([out_i[r], ind.astype(id_dtype)])
        d = np.hstack([out_d[r], dist])
        order = np.lexsort((i, d), axis=1)[:, :k]  # by distance, ties by index: any partitioning agrees
        out_i[r] = np.take_along_axis(i, order, axis=1)
        out_d[r] = np.take_along_axis(d, order, axis=1)
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
    cells = _Cells(Xd, homes.to_delayed().ravel(), counts, k, metric, method, seed, dict(options or {}))
    best = cells.home_round()  # every row searched in its own cell; the cells' indexes kept
    widths = {b.width_option for b in BACKENDS.values()}
    if not widths & set(options or {}):  # each cell's search calibrated, as an all-rows graph's
        (recalls,) = compute([dask.delayed(_recall)(cell) for cell in cells.indexes.values()])
        worst = int(np.argmin(recalls))
        where = f"in the worst of {n_cells} cells, on its sampled rows"
        warn_short_recall(method if method != "auto" else "approximate", recalls[worst], k + 1, where)
    if n_cells > 1 and (n_probe is None or n_probe > 1):
        euclidean = _route_metric(metric) == "euclidean"
        gaps = pairwise_distances(centroids, centroids, "euclidean") if euclidean else None
        bound = dask.delayed(_bound_routes, pure=True)
        cap = None if n_probe is None else int(n_probe)
        routes = [bound(b, bb, centroids, radii, gaps, metric, cap) for b, bb in zip(cells.blocks, best)]
        best = cells.probe_round(list(dask.persist(*routes)), best)
    sizes = np.diff(cells.starts)
    wide = dask.delayed(_int64, pure=True)
    ind = da.concatenate([da.from_delayed(wide(bb[0]), (m, k), dtype=np.int64) for bb, m in zip(best, sizes)])
    dist = da.concatenate([da.from_delayed(bb[1], (m, k), dtype=np.float32) for bb, m in zip(best, sizes)])
    return ind, dist


def _int64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int64, copy=False)


def _routed_counts(routes: np.ndarray, n_cells: int) -> np.ndarray:
    return np.bincount(routes[routes >= 0], minlength=n_cells)


class _Cells:
    """One index per cell, built on its members and searched by the rows routed to it, wave by wave.

    The home round builds each cell's index, searches the cell's own rows and keeps the
    index (on the worker that built it); the probe round searches the rows routed to other
    cells in those indexes. Row blocks merge what the cells found into their k best.
    """

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
        self.build_args = (metric, method, seed, options)
        # row ids as int32 while they fit: the n x k indices held between rounds take half the memory
        self.id_dtype: type = np.int32 if Xd.shape[0] < 2**31 else np.int64
        self.indexes: dict[int, Any] = {}

    def _bounds(self) -> list[tuple[int, int]]:
        return list(zip(self.starts[:-1].tolist(), np.diff(self.starts).tolist()))

    def home_round(self) -> list[Any]:
        home_routes = [dask.delayed(_home_routes, pure=True)(h) for h in self.homes]
        return self._round(home_routes, self.counts, [None] * len(self.blocks), build=True)

    def probe_round(self, routes: list[Any], best: list[Any]) -> list[Any]:
        (per_block,) = compute([dask.delayed(_routed_counts)(r, len(self.counts)) for r in routes])
        return self._round(routes, np.sum(per_block, axis=0), best, build=False)

    def _round(self, routes: list[Any], counts: np.ndarray, best: list[Any], build: bool) -> list[Any]:
        cut = dask.delayed(_cut, pure=True)
        build_cell = dask.delayed(_build_cell, pure=True)
        query = dask.delayed(_query_cell, pure=True)
        merge = dask.delayed(_merge, pure=True)
        bounds = self._bounds()
        for wave in _waves(counts, self.row_bytes):
            if not wave:
                continue
            cuts = [cut(b, s, r, wave) for b, (s, _), r in zip(self.blocks, bounds, routes)]
            pieces = {c: [piece[c] for piece in cuts] for c in wave}
            indexes = {c: build_cell(pieces[c], self.k, *self.build_args) for c in wave} if build else self.indexes
            found = {c: query(indexes[c], pieces[c], self.k, self.starts.tolist()) for c in wave}
            merged = [
                merge(s, m, self.k, self.id_dtype, best[j], *[found[c][j] for c in wave])
                for j, (s, m) in enumerate(bounds)
            ]
            kept = [indexes[c] for c in wave] if build else []
            done = dask.persist(*merged, *kept)  # one graph: a cell's search starts as soon as its index is built
            best = list(done[: len(merged)])
            if build:
                self.indexes.update(zip(wave, done[len(merged) :]))
        return best


def _waves(counts: np.ndarray, row_bytes: float) -> list[list[int]]:
    """Cells grouped so each wave's pieces (``counts`` rows per cell) fit ``WAVE_BYTES``, with work for every thread."""
    order = np.argsort(-counts, kind="stable")
    per_cell = counts * row_bytes
    waves: list[list[int]] = [[]]
    held = 0.0
    for c in order:
        if counts[c] == 0:
            continue
        if waves[-1] and held + per_cell[c] > WAVE_BYTES and len(waves[-1]) >= parallelism():
            waves.append([])
            held = 0.0
        waves[-1].append(int(c))
        held += per_cell[c]
    return waves
