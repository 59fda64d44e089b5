"""Neighbour ranks of query rows among all rows, in two spaces at once: kernels on numpy blocks.

The quality measures of an embedding (:mod:`bigdr.metrics`) compare, for a
query row ``i``, its neighbours in the input ``X`` with those in the
embedding ``Y``. Both need only two mergeable statistics per query, each
gathered in one pass over the rows:

1. :func:`nearest_in_block`: the ``K`` nearest rows in ``X`` and in ``Y``
   (two max-heaps keyed by ``(distance, row)``, so ties go to the lower row
   number, as a stable sort would), each neighbour with its distance in the
   other space. Two blocks' heaps merge by keeping the ``K`` smallest keys.
2. :func:`count_closer`: for each of those neighbours, the number of rows
   closer to the query in the *other* space (its rank there, which can be any
   number up to ``n``). Counts of two blocks add.

Distances are squared euclidean (the ranks of euclidean and squared
euclidean distances are the same; cosine is euclidean on unit rows). The
fused kernel computes both spaces' distances in one loop over the block: at
a few coordinates per row it is bound by the pairs, not by memory traffic.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True, cache=True, inline="always")
def _less(d: float, j: int, e: float, k: int) -> bool:
    return d < e or (d == e and j < k)


@numba.njit(nogil=True, cache=True)
def _replace_root(hd: np.ndarray, hi: np.ndarray, ho: np.ndarray, d: float, j: int, o: float) -> None:
    """Put ``(d, j)`` (other-space distance ``o``) at the root of a max-heap and sift it down."""
    K = hd.shape[0]
    p = 0
    while True:
        c = 2 * p + 1
        if c >= K:
            break
        if c + 1 < K and _less(hd[c], hi[c], hd[c + 1], hi[c + 1]):
            c += 1
        if not _less(d, j, hd[c], hi[c]):
            break
        hd[p], hi[p], ho[p] = hd[c], hi[c], ho[c]
        p = c
    hd[p], hi[p], ho[p] = d, j, o


#: Rows of a tile: a block's rows are put in spatial order (:func:`tile_order`) and cut into tiles
#: of this many rows, each bounded by a ball in either space, so a query skips the tiles that lie
#: beyond its current bounds without a distance to their rows.
TILE_ROWS = 256


def tile_order(y: np.ndarray) -> np.ndarray:
    """An order of the rows of ``y`` (b x d) in which consecutive rows lie close: grid cells of
    about :data:`TILE_ROWS` rows, on the first three coordinates, visited row by row."""
    b, d = y.shape
    if b <= TILE_ROWS or d == 0:
        return np.arange(b)
    use = y[:, : min(d, 3)]
    lo, hi = use.min(axis=0), use.max(axis=0)
    cells = max(1, int(round((b / TILE_ROWS) ** (1.0 / use.shape[1]))))
    grid = np.minimum(((use - lo) / np.where(hi > lo, hi - lo, 1.0) * cells).astype(np.int64), cells - 1)
    return np.lexsort(tuple(grid[:, c] for c in range(grid.shape[1])))  # the last coordinate first


def tile_balls(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centres (tiles x p) and radii of the balls around the tiles of a block given by column (p x b)."""
    p, b = cols.shape
    T = -(-b // TILE_ROWS)
    pad = T * TILE_ROWS - b
    rows = np.concatenate([cols.T, np.repeat(cols.T[-1:], pad, axis=0)]) if pad else cols.T
    tiles = rows.reshape(T, TILE_ROWS, p)
    centres = tiles.mean(axis=1)
    radii = np.sqrt(((tiles - centres[:, None, :]) ** 2).sum(axis=2).max(axis=1))
    # rounding of the differences: far below any gap between distances that ranks see
    return np.ascontiguousarray(centres), radii * (1 + 1e-12) + 1e-12 * np.linalg.norm(centres, axis=1)


@numba.njit(nogil=True, cache=True)
def _fill(
    xq: np.ndarray,
    yq: np.ndarray,
    xb: np.ndarray,
    yb: np.ndarray,
    q: int,
    r0: int,
    r1: int,
    bx: np.ndarray,
    by: np.ndarray,
) -> None:
    """Squared distances of rows ``r0:r1`` of the block to query ``q`` in both spaces, into ``bx``, ``by``.

    ``xb``, ``yb`` are the block's coordinates by column (p x b, d x b): the loop over rows of one
    coordinate at a time is what the compiler turns into vector instructions.
    """
    _squared(xq, xb, q, r0, r1, bx)
    _squared(yq, yb, q, r0, r1, by)


@numba.njit(nogil=True, cache=True)
def _squared(points: np.ndarray, cols: np.ndarray, q: int, r0: int, r1: int, out: np.ndarray) -> None:
    out[: r1 - r0] = 0.0
    for c in range(cols.shape[0]):
        v, col = points[q, c], cols[c]
        for r in range(r1 - r0):
            t = v - col[r0 + r]
            out[r] += t * t


@numba.njit(nogil=True, cache=True)
def _centre(points: np.ndarray, q: int, centres: np.ndarray, t: int) -> float:
    """Distance from query ``q`` to the centre of tile ``t``."""
    s = 0.0
    for c in range(centres.shape[1]):
        d = points[q, c] - centres[t, c]
        s += d * d
    return np.sqrt(s)


@numba.njit(nogil=True, cache=True, inline="always")
def _below(centre: float, radius: float) -> float:
    """A lower bound of the squared distance to a tile's rows from the distance to its centre (rounding
    allowed for: a sum of squares is exact to a few units in 1e-16 of itself)."""
    g = centre * (1 - 1e-12) - radius
    return g * g if g > 0 else 0.0


@numba.njit(nogil=True, cache=True, inline="always")
def _above(centre: float, radius: float) -> float:
    """An upper bound of the squared distance to a tile's rows."""
    g = centre * (1 + 1e-12) + radius
    return g * g


@numba.njit(nogil=True, cache=True)
def nearest_in_block(
    blk: tuple,
    hx: np.ndarray,
    ix: np.ndarray,
    ox: np.ndarray,
    hy: np.ndarray,
    iy: np.ndarray,
    oy: np.ndarray,
) -> None:
    """Push the block's rows into each query's two heaps (in place).

    ``blk = (xq, yq, qrow, xb, yb, rows, gx, gy, rx, ry)``: the queries
    (m x p, m x d) and their row numbers (a query is not its own
    neighbour); the block by column (p x b, d x b) in tile order and its row
    numbers; the centres of its tiles' balls (tiles x p, tiles x d) and their
    radii in either space.
    ``hx, ix, ox``: the ``X`` heap (m x K: squared distance, row, squared
    ``Y`` distance); ``hy, iy, oy`` the ``Y`` heap. A heap may start filled
    with a bound (row ``2^63 - 1``): rows beyond it never enter.
    """
    xq, yq, qrow, xb, yb, rows, gx, gy, rx, ry = blk  # g: the tiles' centres
    m, b = yq.shape[0], yb.shape[1]
    bx, by = np.empty(TILE_ROWS), np.empty(TILE_ROWS)
    for t in range(gx.shape[0]):
        r0, r1 = t * TILE_ROWS, min(b, (t + 1) * TILE_ROWS)
        for q in range(m):
            if _below(_centre(xq, q, gx, t), rx[t]) > hx[q, 0] and _below(_centre(yq, q, gy, t), ry[t]) > hy[q, 0]:
                continue
            _fill(xq, yq, xb, yb, q, r0, r1, bx, by)
            for r in range(r0, r1):
                sx, sy = bx[r - r0], by[r - r0]
                if sx > hx[q, 0] and sy > hy[q, 0]:  # the usual case: beyond both bounds
                    continue
                j = rows[r]
                if j == qrow[q]:
                    continue
                if _less(sx, j, hx[q, 0], ix[q, 0]):
                    _replace_root(hx[q], ix[q], ox[q], sx, j, sy)
                if _less(sy, j, hy[q, 0], iy[q, 0]):
                    _replace_root(hy[q], iy[q], oy[q], sy, j, sx)


@numba.njit(nogil=True, cache=True)
def _first_above(t: np.ndarray, jt: np.ndarray, s: float, j: int) -> int:
    """The first threshold above ``(s, j)`` (``t, jt`` ascending by (distance, row))."""
    lo, hi = 0, t.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if _less(s, j, t[mid], jt[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(nogil=True, cache=True)
def count_closer(
    blk: tuple,
    self_tile: np.ndarray,
    tx: np.ndarray,
    jx: np.ndarray,
    ty: np.ndarray,
    jy: np.ndarray,
    cx: np.ndarray,
    cy: np.ndarray,
) -> None:
    """Count, per query, the block's rows below each threshold (in place).

    ``blk`` as for :func:`nearest_in_block`; ``self_tile[q]``: the tile
    holding query ``q``'s own row, or -1. ``tx, jx`` (m x K, ascending by
    ``(distance, row)``): squared ``X`` distances and row numbers of the
    thresholds; ``cx[q, a]`` gains the rows ``r`` with ``(|x_q - x_r|^2, r)``
    at or above threshold ``a - 1`` and below threshold ``a``, so the running
    sum of ``cx[q, :a + 1]`` is the number of rows closer than threshold
    ``a``. ``ty, jy, cy`` the same in ``Y``. The query itself is not
    counted. A tile wholly beyond the last thresholds is skipped; one wholly
    within the first is counted whole.
    """
    xq, yq, qrow, xb, yb, rows, gx, gy, rx, ry = blk  # g: the tiles' centres
    m, b = yq.shape[0], yb.shape[1]
    K = tx.shape[1]
    bx, by = np.empty(TILE_ROWS), np.empty(TILE_ROWS)
    for t in range(gx.shape[0]):
        r0, r1 = t * TILE_ROWS, min(b, (t + 1) * TILE_ROWS)
        for q in range(m):
            lastx, lasty = tx[q, K - 1], ty[q, K - 1]
            dcx, dcy = _centre(xq, q, gx, t), _centre(yq, q, gy, t)
            if _below(dcx, rx[t]) > lastx and _below(dcy, ry[t]) > lasty:
                continue
            ubx, uby = _above(dcx, rx[t]), _above(dcy, ry[t])
            own = 1 if self_tile[q] == t else 0
            whole_x, whole_y = ubx < tx[q, 0], uby < ty[q, 0]
            if whole_x:
                cx[q, 0] += r1 - r0 - own
            if whole_y:
                cy[q, 0] += r1 - r0 - own
            if whole_x and whole_y:
                continue
            _fill(xq, yq, xb, yb, q, r0, r1, bx, by)
            for r in range(r0, r1):
                sx, sy = bx[r - r0], by[r - r0]
                if sx > lastx and sy > lasty:
                    continue
                j = rows[r]
                if j == qrow[q]:
                    continue
                if not whole_x and _less(sx, j, lastx, jx[q, K - 1]):
                    cx[q, _first_above(tx[q], jx[q], sx, j)] += 1
                if not whole_y and _less(sy, j, lasty, jy[q, K - 1]):
                    cy[q, _first_above(ty[q], jy[q], sy, j)] += 1


def sorted_heap(hd: np.ndarray, hi: np.ndarray, ho: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heaps' entries in ascending ``(distance, row)`` order, per query (m x K each)."""
    order = np.lexsort((hi, hd), axis=-1)
    return np.take_along_axis(hd, order, 1), np.take_along_axis(hi, order, 1), np.take_along_axis(ho, order, 1)
