"""Isomap's out-of-sample rule: a row's geodesics to the landmarks through its nearest reference rows.

A new row's geodesic distance to landmark ``l`` is ``min_j (|x - r_j| + G[j, l])``
over its ``k`` nearest reference rows ``r_j``, and landmark MDS's
triangulation (de Silva & Tenenbaum 2004) turns the squared distances into
coordinates, in one compiled pass per row
(:func:`bigdr.core.triangulation.place_through_neighbours`).
:class:`GeodesicExtension` is what a worker needs for that, beside the
spectral methods' :mod:`~bigdr.manifold.nystrom`.
"""

from __future__ import annotations

import numpy as np

from ..blockwise.extension import Extension
from ..core.triangulation import Triangulation, place_through_neighbours
from ..graph.neighbors import NeighborIndex
from ..graph.sparse import csr_from_lists, locality_order


class GeodesicExtension(Extension):
    """The reference index, its geodesics and the triangulation: what a worker needs to place rows."""

    def __init__(
        self,
        index: NeighborIndex,
        geodesics: np.ndarray,
        tri: Triangulation,
        k: int,
        radius: float | None,
        graph_distances: np.ndarray | None = None,
        graph_indices: np.ndarray | None = None,
    ) -> None:
        # ~32 MiB of row x landmark geodesics per piece
        super().__init__(tri.pinv.shape[1], max(256, (32 << 20) // (4 * geodesics.shape[1])))
        # The reference rows' k-th-neighbour distances in their kNN graph (None: a radius graph, or a
        # model saved without it): an approximate index then searches again a row that lands far
        # beyond them, as a wrong far neighbour would short-circuit the row's geodesics.
        radii = None if graph_distances is None else graph_distances[:, -1]
        self.index = index.set_radii(radii, 0 if graph_distances is None else graph_distances.shape[1])
        # The geodesics table (100,000 x 256 float32 is 100 MiB) far exceeds the cache, and a row reads
        # k random rows of it: kept in the graph's locality order, with each piece's rows visited in the
        # order of their nearest reference row, the rows read are mostly cached (one-off, one thread,
        # 1M-row swiss roll: 2.9 us a row against 4.6 us; the same coordinates, bit for bit).
        self.rank: np.ndarray | None = None
        if graph_indices is not None and graph_distances is not None and len(graph_indices) == len(geodesics):
            order = locality_order(csr_from_lists(graph_indices, graph_distances))
            self.rank = np.empty(len(order), dtype=np.int64)
            self.rank[order] = np.arange(len(order))
            geodesics = geodesics[order]
        self.geodesics = geodesics
        self.tri = tri
        self.k = k
        self.radius = radius

    def embed_piece(self, rows: np.ndarray) -> np.ndarray:
        return self.score_piece(rows)[0]

    def score_only(self, rows: np.ndarray) -> np.ndarray:
        return self.index.query_block(rows, 1)[1][:, 0]

    def score_piece(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The drift score, the distance to the nearest reference row, comes with the same query.
        ind, dist = self.index.query_block(rows, self.k)
        nearest = dist[:, 0].copy()
        if self.radius is not None:  # keep the nearest always, the rest within the radius
            dist = dist.copy()
            dist[:, 1:][dist[:, 1:] > self.radius] = np.inf
        if self.rank is None:
            return place_through_neighbours(ind, dist, self.geodesics, self.tri), nearest
        ind = self.rank[ind]
        visit = np.argsort(ind[:, 0], kind="stable")
        placed = np.empty((len(ind), self.width))
        placed[visit] = place_through_neighbours(ind[visit], dist[visit], self.geodesics, self.tri)
        return placed, nearest
