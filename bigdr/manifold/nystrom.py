"""The Nyström extension of the spectral methods: placing rows by the kernel rule that built the graph.

A new row ``x`` gets the kernel row it would have had in the fit: an edge to
each of its ``k`` nearest reference rows, and to the reference rows ``j``
whose own ``k``-th-neighbour distance ``r_j`` reaches it (reverse edges).
The reverse edges are looked for where they lie: among the row's nearest
reference rows from one neighbour query, and the graph neighbours of the
nearest one. So a row costs one query plus ``O(k p)`` work, as Isomap's
extension does, and a reference row gets back exactly its fitted kernel row,
and its coordinates to the eigensolver's accuracy. A reverse edge from a reference row far from both sets is
missed (rare: see ``benchmarks/results/spectral.md`` for the share found).
Its coordinates are ``phi_k(x) = (1/lambda_k) sum_j M(x, j) phi_k(j)`` with
``M(x, .)`` that row normalised like the fitted Markov matrix (for the
unnormalised Laplacian ``v(x) = sum_j w(x, j) v_j / (d(x) - mu)``).

References
----------
Bengio, Y., Paiement, J.-F., Vincent, P., Delalleau, O., Le Roux, N. &
Ouimet, M. (2004). Out-of-sample extensions for LLE, Isomap, MDS, Eigenmaps,
and spectral clustering. Advances in Neural Information Processing Systems 16.

Coifman, R. R. & Lafon, S. (2006). Geometric harmonics: a novel tool for
multiscale out-of-sample extension of empirical functions. Applied and
Computational Harmonic Analysis 21(1), 31-52.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..blockwise.extension import Extension
from ..core.distances import paired_distances
from ..exceptions import ExtrapolationWarning
from ..graph.affinity import new_row_weights
from ..graph.neighbors import NeighborIndex

#: Rows per piece of a Nyström extension.
EXTEND_ROWS = 8192
#: A row farther from its nearest reference row than this many times that row's
#: k-th-neighbour distance is outside the fitted data: its coordinates are flagged.
FAR_RATIO = 3.0


class NystromExtension(Extension):
    """What a worker needs to embed rows: the reference index, the kernel rule and the eigenvectors."""

    def __init__(
        self,
        *,
        index: NeighborIndex,
        W: sp.csr_matrix,
        k: int,
        k_query: int,
        radius: np.ndarray,
        q: np.ndarray,
        kernel: str,
        epsilon: float,
        self_loops: bool,
        alpha: float,
        kind: str,
        phi: np.ndarray,
        mu: np.ndarray,
        scale: np.ndarray,
        reference: np.ndarray,
        metric: Any,
        rotation: np.ndarray | None = None,
        offset: np.ndarray | None = None,
        scales: np.ndarray | None = None,
    ) -> None:
        self.index, self.W, self.k, self.k_query = index, W, k, k_query
        self.radius, self.q, self.scales = radius, q, scales
        self.kernel, self.epsilon, self.self_loops, self.alpha = kernel, epsilon, self_loops, alpha
        self.kind, self.phi, self.mu, self.scale = kind, phi, mu, scale
        self.reference, self.metric = reference, metric
        self.rotation, self.offset = rotation, offset  # the alignment of partial_fit: y R + t
        super().__init__(phi.shape[1], EXTEND_ROWS)

    def candidates(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The reference rows that can share an edge with each row, nearest first.

        One neighbour query of ``k_query`` rows (the ``k`` forward edges and
        the reverse edges among the nearest), joined with the graph
        neighbours of the nearest reference row: a reference row ``j``
        whose ``r_j`` reaches a row mostly reaches its nearest reference row
        too. Columns past a row's own candidates are padded (index 0,
        distance inf: no edge).
        """
        ind, dist = self.index.query_block(rows, self.k_query)
        W, near = self.W, ind[:, 0]
        lo, counts = W.indptr[near], np.diff(W.indptr)[near]
        width = int(counts.max()) if len(counts) else 0
        if not width:
            return ind, dist
        held = np.arange(width)[None, :] < counts[:, None]
        hop = W.indices[np.where(held, lo[:, None] + np.arange(width)[None, :], 0)]
        hop_dist = paired_distances(rows, self.reference, hop, self.metric)
        # Candidates the query already returned, and the padding, make no second edge.
        hop_dist[~held | (hop[:, :, None] == ind[:, None, :]).any(axis=2)] = np.inf
        ind, dist = np.hstack([ind, hop]), np.hstack([dist.astype(np.float64), hop_dist])
        order = np.argsort(dist, axis=1, kind="stable")
        return np.take_along_axis(ind, order, axis=1), np.take_along_axis(dist, order, axis=1)

    def distance_ratio(self, rows: np.ndarray) -> np.ndarray:
        """Distance to the nearest reference row over that row's k-th-neighbour distance."""
        ind, dist = self.index.query_block(rows, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return dist[:, 0] / self.radius[ind[:, 0]]

    def embed_piece(self, rows: np.ndarray) -> np.ndarray:
        return self.score_piece(rows)[0]

    def score_only(self, rows: np.ndarray) -> np.ndarray:
        return self.index.query_block(rows, 1)[1][:, 0]

    def score_piece(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The drift score, the distance to the nearest reference row, comes with the candidates.
        ind, dist = self.candidates(rows)
        nearest = dist[:, 0].copy()
        w, is_self = new_row_weights(
            ind, dist.astype(np.float64), self.k, self.radius, self.kernel, self.epsilon, self.self_loops, self.scales
        )
        # A reference row's candidates may miss a far reverse neighbour;
        # its kernel row is known exactly, so use it (Nyström on the
        # training points themselves, as in the fit).
        for r in np.flatnonzero(is_self):
            row = ind[r, 0]
            lo, hi = self.W.indptr[row], self.W.indptr[row + 1]
            ind[r, : hi - lo], w[r, : hi - lo] = self.W.indices[lo:hi], self.W.data[lo:hi]
            ind[r, hi - lo :], w[r, hi - lo :] = 0, 0.0
        qx = w.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind == "unnormalized":
                y = np.einsum("bj,bjc->bc", w, self.phi[ind]) / (qx[:, None] - self.mu)
            else:
                if self.alpha:
                    w = w / (qx[:, None] ** self.alpha * self.q[ind] ** self.alpha)
                dx = w.sum(axis=1)
                y = np.einsum("bj,bjc->bc", w / dx[:, None], self.phi[ind]) / (1.0 - self.mu)
                if self.kind == "symmetric":
                    y *= np.sqrt(dx)[:, None]
        y[qx == 0] = np.nan  # no reference row near enough: nothing to extend from
        with np.errstate(divide="ignore", invalid="ignore"):
            far = int(np.sum(dist[:, 0] > FAR_RATIO * self.radius[ind[:, 0]]))
        if far:
            warnings.warn(
                f"{far} of {len(rows)} rows are farther from the fitted data than {FAR_RATIO:g} times the "
                f"neighbour distance there; their coordinates are extrapolated (see distance_ratio).",
                ExtrapolationWarning,
                stacklevel=2,
            )
        y = y * self.scale
        if self.rotation is not None:
            y = y @ self.rotation + self.offset
        return y, nearest


def ratio_block(block: np.ndarray, extension: NystromExtension) -> np.ndarray:
    return extension.distance_ratio(block)
