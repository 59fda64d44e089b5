"""Locally linear embedding's cost matrices, assembled from blockwise local factors.

All rows: ``M = C^T C`` (n x n, sparse), where ``C`` stacks every row's local
factor (:func:`bigdr.core.local_linear.local_factors`) on its index set. The factors
are computed in row blocks as tasks that share the rows and the neighbour
lists (one key each), so the work spreads over any number of workers.

Landmarks (Locally Linear Landmarks, Vladymyrov & Carreira-Perpinan 2013):
every row is a combination of landmarks, ``y_i = z_i^T Y_L`` with ``z_i`` its
barycentric weights over its nearest landmarks (:func:`landmark_weights`).
The cost ``tr(Y^T M Y)`` becomes ``tr(Y_L^T (Z^T M Z) Y_L)`` and the
constraint ``Y^T Y = I`` becomes ``Y_L^T (Z^T Z) Y_L = I``: an m x m
generalised eigenproblem. ``A = Z^T M Z = (C Z)^T (C Z)`` and ``B = Z^T Z``
are sums over rows, so they are mergeable statistics
(:func:`landmark_statistics`): one pass over the data, any chunking, and
``partial_fit`` adds the new rows' terms. Each row's neighbourhood is taken
among a reference sample of rows (all rows when the sample is the data).

References
----------
Vladymyrov, M. & Carreira-Perpinan, M. A. (2013). Locally linear landmarks
for large-scale manifold learning. ECML PKDD 2013, LNCS 8190, 256-271.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from ..blockwise.reduce import tree_reduce
from ..core.local_linear import barycenter_weights, includes_self, local_factors, modified_ratios
from ..runtime.compute import compute, shared
from .neighbors import NeighborIndex

#: Rows per task when the factors of all rows are computed.
FACTOR_ROWS = 50_000
#: Rows whose landmark statistics are formed at once inside a task.
STATS_PIECE_ROWS = 20_000


def factor_matrix(F: np.ndarray, J: np.ndarray, n_columns: int) -> sp.csr_matrix:
    """``C``: one row per column of each local factor, its entries at the row's index set.

    ``F``: (b, q, r) local factors; ``J``: (b, q) column indices. Zero columns
    of ``F`` (padding) give empty rows.
    """
    b, q, r = F.shape
    data = F.transpose(0, 2, 1).reshape(-1)
    indices = np.broadcast_to(J[:, None, :], (b, r, q)).reshape(-1)
    C = sp.csr_matrix((data, indices, np.arange(0, b * r * q + 1, q)), shape=(b * r, n_columns))
    C.eliminate_zeros()
    return C


def index_sets(method: str, rows: np.ndarray, ind: np.ndarray) -> np.ndarray:
    """Each row's index set ``J_i``: the row and its neighbours, or the neighbours alone."""
    return np.column_stack([rows, ind]) if includes_self(method) else ind


def _factor_block(X: np.ndarray, ind: np.ndarray, start: int, stop: int, options: dict) -> sp.csr_matrix:
    rows = np.arange(start, stop)
    F = local_factors(
        options["method"], X[rows], X[ind[rows]], options["d"], options["reg"], options["eta"], options["tol"]
    )
    return factor_matrix(F, index_sets(options["method"], rows, ind[rows]), len(X))


def _ratios_block(X: np.ndarray, ind: np.ndarray, start: int, stop: int, d: int) -> np.ndarray:
    return modified_ratios(X[start:stop], X[ind[start:stop]], d)


def modified_eta(X: np.ndarray, ind: np.ndarray, n_components: int) -> float:
    """The modified variant's ``eta``: the median ratio of small to large local eigenvalues over all rows."""
    Xk, ik = shared(X), shared(ind)
    parts = [
        dask.delayed(_ratios_block)(Xk, ik, s, min(s + FACTOR_ROWS, len(X)), n_components)
        for s in range(0, len(X), FACTOR_ROWS)
    ]
    return float(np.median(np.concatenate(compute(*parts))))


def factors(
    X: np.ndarray,
    ind: np.ndarray,
    method: str,
    n_components: int,
    reg: float,
    eta: float | None = None,
    tol: float | None = None,
) -> sp.csr_matrix:
    """``C`` of all rows of ``X`` (in memory) with neighbour lists ``ind`` (n x k, self excluded), blockwise.

    ``tol``: the variant's tolerance (:func:`bigdr.core.local_linear.local_factors`).
    """
    options = {"method": method, "d": n_components, "reg": reg, "eta": eta, "tol": tol}
    Xk, ik = shared(X), shared(ind)
    parts = [
        dask.delayed(_factor_block)(Xk, ik, s, min(s + FACTOR_ROWS, len(X)), options)
        for s in range(0, len(X), FACTOR_ROWS)
    ]
    return sp.vstack(compute(*parts), format="csr")


def cost_matrix(C: sp.csr_matrix) -> sp.csr_matrix:
    """The assembled ``M = C^T C``, exactly symmetric."""
    M = (C.T @ C).tocsr()
    return (M + M.T) * 0.5


class Barycentric:
    """Barycentric weights of any row over its ``k`` nearest rows of a fixed set (an index on them)."""

    def __init__(self, rows: np.ndarray, k: int, reg: float, metric: str, method: str, seed: Any) -> None:
        self.rows = np.ascontiguousarray(rows, dtype=np.float64)
        self.k, self.reg = int(k), float(reg)
        self.index = NeighborIndex(metric, method, seed).fit(self.rows)

    def weights(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indices, distances, weights), each (len(rows), k)."""
        ind, dist = self.index.query_block(rows, self.k)
        return ind, dist, barycenter_weights(np.asarray(rows, dtype=np.float64), self.rows[ind], self.reg)

    def matrix(self, rows: np.ndarray) -> sp.csr_matrix:
        """The weights as a sparse (len(rows) x len(set)) matrix whose rows sum to one."""
        ind, _, w = self.weights(rows)
        n, k = ind.shape
        return sp.csr_matrix((w.ravel(), ind.ravel(), np.arange(0, n * k + 1, k)), shape=(n, len(self.rows)))


class LandmarkFrame:
    """What a worker needs for the landmark statistics: the reference sample and the landmarks.

    ``sample``: (s, p) rows among which every row's ``k`` neighbours are
    found; ``landmarks``: the :class:`Barycentric` map onto the landmarks
    (``Z``); ``Z_sample``: the sample's rows of ``Z``.
    """

    def __init__(
        self,
        sample: np.ndarray,
        landmarks: Barycentric,
        k: int,
        method: str,
        n_components: int,
        reg: float,
        metric: str,
        neighbor_method: str,
        seed: Any,
        tol: float | None = None,
    ) -> None:
        self.sample = np.ascontiguousarray(sample, dtype=np.float64)
        self.tol = tol
        self.index = NeighborIndex(metric, neighbor_method, seed).fit(self.sample)
        self.landmarks = landmarks
        self.Z_sample = landmarks.matrix(self.sample)
        self.k, self.method, self.d, self.reg = int(k), method, int(n_components), float(reg)
        self.eta: float | None = None
        if method == "modified":
            self.eta = float(np.median(modified_ratios(self.sample, self.sample[self.neighbours(self.sample)], self.d)))

    def neighbours(self, rows: np.ndarray) -> np.ndarray:
        """Each row's ``k`` nearest sample rows, itself (at distance 0) excluded."""
        ind, dist = self.index.query_block(rows, self.k + 1)
        own = dist[:, 0] == 0
        return np.where(own[:, None], ind[:, 1:], ind[:, :-1])


class LandmarkStats(NamedTuple):
    """The landmark problem's mergeable statistics: ``A = (C Z)^T (C Z)``, ``B = Z^T Z``, rows summed.

    Sparse (CSR): a row touches only landmarks near it, so the m x m sums are
    sparse and the states a pass holds at once stay small.
    """

    A: sp.csr_matrix
    B: sp.csr_matrix
    n: int


def merge_stats(a: LandmarkStats, b: LandmarkStats) -> LandmarkStats:
    return LandmarkStats(a.A + b.A, a.B + b.B, a.n + b.n)


def stats_block(block: np.ndarray, frame: LandmarkFrame) -> LandmarkStats:
    """The statistics of one block of rows (any rows: training rows or new ones), piece by piece.

    A row's working set (its neighbours, factor, landmark weights and their
    products) is about a hundred times its own bytes, so a whole input block
    at once grew with the block: pieces of :data:`STATS_PIECE_ROWS` bound it.
    """
    total = None
    for s in range(0, len(block), STATS_PIECE_ROWS):
        piece = _stats_piece(np.asarray(block[s : s + STATS_PIECE_ROWS], dtype=np.float64), frame)
        total = piece if total is None else merge_stats(total, piece)
    if total is None:
        m = len(frame.landmarks.rows)
        return LandmarkStats(sp.csr_matrix((m, m)), sp.csr_matrix((m, m)), 0)
    return total


def _stats_piece(rows: np.ndarray, frame: LandmarkFrame) -> LandmarkStats:
    b = len(rows)
    ind = frame.neighbours(rows)
    F = local_factors(frame.method, rows, frame.sample[ind], frame.d, frame.reg, frame.eta, getattr(frame, "tol", None))
    # Columns: the piece's own rows first, then the sample's.
    J = index_sets(frame.method, np.arange(b), ind + b)
    C = factor_matrix(F, J, b + len(frame.sample))
    Z_rows = frame.landmarks.matrix(rows)
    CZ = C @ sp.vstack([Z_rows, frame.Z_sample], format="csr")
    return LandmarkStats((CZ.T @ CZ).tocsr(), (Z_rows.T @ Z_rows).tocsr(), b)


def landmark_statistics(Xd: da.Array, frame: LandmarkFrame) -> Any:
    """A dask ``Delayed``: :class:`LandmarkStats` over every row of ``Xd`` in one pass (tree-merged)."""
    return tree_reduce(Xd, stats_block, merge_stats, shared=(shared(frame),))
