"""The two passes over the rows that give every query its neighbours' ranks in both spaces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np

from ..blockwise.reduce import tree_reduce
from ..core.distances import unit_rows
from ..core.ranks import (
    TILE_ROWS,
    count_closer,
    nearest_in_block,
    sorted_heap,
    tile_balls,
    tile_order,
)
from ..runtime.compute import compute

#: Bytes of a block of both spaces' rows (it is copied twice, in tile order and by column).
BLOCK_BYTES = 32 * 2**20
#: Bytes of the query x query distances the start bounds hold at a time.
BOUND_PIECE_BYTES = 64 * 2**20
#: Metrics whose ranks are those of euclidean distances (cosine: of unit rows).
RANK_METRICS = ("euclidean", "sqeuclidean", "cosine")


@dataclass
class Ranks:
    """For m queries: their ``K`` nearest rows in X and in Y, and each one's rank in the other space.

    ``x_rows[q, a]`` is the query's (a+1)-th nearest row in X, ``rank_y_of_x[q, a]`` that row's rank
    among all rows by distance in Y (1 = nearest); ``y_rows``, ``rank_x_of_y`` the same the other
    way. ``n``: rows in all; ``xq``, ``yq``: the queries' own rows (X as ranked: unit rows for cosine).
    """

    x_rows: np.ndarray
    rank_y_of_x: np.ndarray
    y_rows: np.ndarray
    rank_x_of_y: np.ndarray
    n: int
    xq: np.ndarray
    yq: np.ndarray


def _tiled(block: np.ndarray, start: int, queries: tuple, p: int) -> tuple[tuple, np.ndarray]:
    """The kernels' view of a block (in tile order by column, its row numbers, the tiles' balls), and the
    tile of each query's own row (-1: not in this block)."""
    xq, yq, qrow = queries
    block = np.asarray(block, dtype=np.float64)
    order = tile_order(block[:, p:])
    block = block[order]
    xb, yb = np.ascontiguousarray(block[:, :p].T), np.ascontiguousarray(block[:, p:].T)
    (cx, rx), (cy, ry) = tile_balls(xb), tile_balls(yb)
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    inside = (qrow >= start) & (qrow < start + len(order))
    self_tile = np.where(inside, position[np.clip(qrow - start, 0, len(order) - 1)] // TILE_ROWS, -1)
    return (xq, yq, qrow, xb, yb, start + order.astype(np.int64), cx, cy, rx, ry), self_tile


def _nearest_state(block: np.ndarray, start: int, queries: tuple, bounds: tuple) -> tuple:
    xq, yq, qrow = queries
    blk, _ = _tiled(block, start, queries, xq.shape[1])
    m, K = len(xq), len(bounds[0][0])
    never = np.iinfo(np.int64).max  # bounds enter the heaps as rows that lose every tie
    state: tuple = (bounds[0].copy(), np.full((m, K), never), np.zeros((m, K)))
    state += (bounds[1].copy(), np.full((m, K), never), np.zeros((m, K)))
    nearest_in_block(blk, *state)
    return state


def _merge_nearest(a: tuple, b: tuple) -> tuple:
    K = a[0].shape[1]
    out: tuple = ()
    for h in (0, 3):  # the X heap, then the Y heap: keep the K smallest (distance, row) keys
        d, i, o = (np.hstack([a[h + t], b[h + t]]) for t in range(3))
        d, i, o = sorted_heap(d, i, o)
        out += (d[:, :K], i[:, :K], o[:, :K])
    return out


def _count_state(block: np.ndarray, start: int, queries: tuple, thresholds: tuple) -> tuple:
    xq, yq, qrow = queries
    blk, self_tile = _tiled(block, start, queries, xq.shape[1])
    tx, jx, ty, jy = thresholds
    cx, cy = np.zeros(tx.shape, np.int64), np.zeros(ty.shape, np.int64)
    count_closer(blk, self_tile, tx, jx, ty, jy, cx, cy)
    return cx, cy


def _start_bounds(xq: np.ndarray, yq: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Each query's squared K-th-neighbour distance among the other queries, in X and in Y (m x K,
    the bound repeated): no true neighbour lies farther, since the queries are rows too."""
    m = len(xq)
    if m <= K:
        return np.full((m, K), np.inf), np.full((m, K), np.inf)
    out = []
    for q in (xq, yq):
        kth = np.empty(m)
        few = q.shape[1] <= 32  # exact differences; in many coordinates a gemm, its rounding added on top
        step = max(1, BOUND_PIECE_BYTES // (8 * m * (q.shape[1] if few else 4)))
        sq = np.einsum("ij,ij->i", q, q)
        for s in range(0, m, step):
            if few:
                d = ((q[s : s + step, None, :] - q[None, :, :]) ** 2).sum(axis=2)
            else:
                scale = sq[s : s + step, None] + sq[None, :]
                d = scale - 2.0 * (q[s : s + step] @ q.T) + 1e-10 * q.shape[1] * scale
            d[np.arange(len(d)), np.arange(s, s + len(d))] = np.inf  # not itself
            kth[s : s + len(d)] = np.partition(d, K - 1, axis=1)[:, K - 1]
        kth = kth * (1 + 1e-6) + 1e-300  # the passes sum in another order: rounding must not cut a true neighbour
        out.append(np.repeat(kth[:, None], K, axis=1))
    return out[0], out[1]


def _add(a: tuple, b: tuple) -> tuple:
    return a[0] + b[0], a[1] + b[1]


def neighbour_ranks(Xd: da.Array, Yd: da.Array, queries: np.ndarray, K: int, metric: str = "euclidean") -> Ranks:
    """The :class:`Ranks` of the rows ``queries`` (sorted row numbers) among all rows of ``Xd``, ``Yd``.

    Two passes over the rows of both, each a tree reduction of per-block
    statistics (:mod:`bigdr.core.ranks`): the K nearest in each space, then
    the counts of closer rows.
    """
    if metric == "cosine":
        Xd = da.map_blocks(unit_rows, Xd, dtype=np.float64)
    Yd = Yd.rechunk({0: Xd.chunks[0], 1: -1})
    Z = da.concatenate([Xd.rechunk({1: -1}).astype(np.float64), Yd.astype(np.float64)], axis=1)
    p = Xd.shape[1]
    target = max(TILE_ROWS, BLOCK_BYTES // (8 * Z.shape[1]))
    if max(Z.chunks[0]) > target:  # tiles and their copies stay small
        Z = Z.rechunk({0: target})
    (rows,) = compute(Z[queries])
    rows = np.asarray(rows, dtype=np.float64)
    q = (np.ascontiguousarray(rows[:, :p]), np.ascontiguousarray(rows[:, p:]), np.asarray(queries, np.int64))
    shared = dask.delayed(q, traverse=False)
    bounds = dask.delayed(_start_bounds(q[0], q[1], K), traverse=False)
    # Fan-in 2: a state is 6 m x K arrays (48 MB for 10,000 queries and K = 100); fewer are alive at once.
    near = tree_reduce(Z, _nearest_state, _merge_nearest, split_every=2, with_offset=True, shared=(shared, bounds))
    (heaps,) = compute(near)
    xd, xi, xo = sorted_heap(*heaps[:3])
    yd, yi, yo = sorted_heap(*heaps[3:])
    # Thresholds for the counts: the Y neighbours' X distances, the X neighbours' Y distances.
    px = np.lexsort((yi, yo), axis=-1)
    py = np.lexsort((xi, xo), axis=-1)
    thresholds = tuple(
        np.ascontiguousarray(np.take_along_axis(a, o, 1)) for a, o in ((yo, px), (yi, px), (xo, py), (xi, py))
    )
    counts = tree_reduce(
        Z,
        _count_state,
        _add,
        split_every=2,
        with_offset=True,
        shared=(shared, dask.delayed(thresholds, traverse=False)),
    )
    (cx, cy) = compute(counts)[0]
    rank_x_of_y = np.empty_like(cx)
    rank_y_of_x = np.empty_like(cy)
    np.put_along_axis(rank_x_of_y, px, np.cumsum(cx, axis=1) + 1, 1)
    np.put_along_axis(rank_y_of_x, py, np.cumsum(cy, axis=1) + 1, 1)
    return Ranks(xi, rank_y_of_x, yi, rank_x_of_y, int(Xd.shape[0]), q[0], q[1])


def check_pair(X: Any, Y: Any) -> tuple[da.Array, da.Array]:
    """The data and its embedding as dask arrays with the same rows, or a clear error."""
    from ..io import as_array
    from ..io.sparse import is_sparse_input

    for what, A in (("X", X), ("the embedding", Y)):
        if is_sparse_input(A):
            raise TypeError(
                f"{what} is sparse; the measures compare dense rows. Evaluate against a PCA or TruncatedSVD of the "
                f"data (as scanpy's neighbours are found in X_pca), or pass a dense array for small data."
            )
    Xd = as_array(X, name="X", min_rows=2)
    Yd = as_array(Y, name="the embedding", min_rows=2)
    if Xd.shape[0] != Yd.shape[0]:
        raise ValueError(
            f"The embedding has {Yd.shape[0]} rows and the data {Xd.shape[0]}; give the embedding of these rows, "
            f"in their order."
        )
    # A block is held three more times in float64 (both spaces, in tile order, by column): stores are
    # opened again at chunks that leave room for that (a 10M-row store's own 128 MiB chunks,
    # split afterwards, held 2 GB).
    extra = 3 * 8 * (Xd.shape[1] + Yd.shape[1])
    return as_array(Xd, name="X", extra_row_bytes=extra), as_array(Yd, name="the embedding", extra_row_bytes=extra)
