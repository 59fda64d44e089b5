"""Sparse graph operators held as row blocks on the workers, multiplied blockwise.

The in-process path (:mod:`bigdr.graph.affinity`, :mod:`bigdr.graph.operators`)
builds one scipy.sparse matrix of all rows. Here the same affinity and the
same normalisations are built from a kNN graph given as dask arrays, one CSR
block of rows per chunk (``n_b x n``), persisted where the chunk was
computed; no process holds the matrix. Symmetrisation needs each edge's
reverse, so every row block sends the entries whose column falls in another
block to that block (an all-to-all of k entries per row). Degrees and the
vectors an iterative eigensolver multiplies are
:class:`~bigdr.blockwise.rowblocks.RowBlocks` aligned with the matrix's row
blocks, held on the workers too (:mod:`bigdr.blockwise.lobpcg`).

The formulas are those of :func:`bigdr.graph.affinity.affinity` and
:func:`bigdr.graph.operators.symmetric_operator`, and the tests compare the
two paths entry for entry.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import dask
import numpy as np
import scipy.sparse as sp

from ..blockwise.rowblocks import RowBlocks
from ..runtime.compute import compute
from .affinity import edge_weights, has_self_loops, symmetrise


def _edges(ind: np.ndarray, dist: np.ndarray, start: int, kernel: str, epsilon: float, bounds: list[int]) -> list:
    """One block's kernel entries (global row, global column, value), split by the block of the column."""
    n_b, k = ind.shape
    rows = np.repeat(np.arange(start, start + n_b), k)
    cols = ind.ravel().astype(np.int64)
    vals = edge_weights(dist, kernel, epsilon).ravel()
    order = np.argsort(cols, kind="stable")
    rows, cols, vals = rows[order], cols[order], vals[order]
    cuts = np.searchsorted(cols, bounds)
    return [(rows[a:b], cols[a:b], vals[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def _symmetrised(
    own: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    start: int,
    n_b: int,
    n: int,
    kernel: str,
    self_loops: bool,
    *reverse: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> sp.csr_matrix:
    """Rows ``start .. start + n_b`` of the symmetric affinity from the block's own edges
    (``own``, as :func:`_edges` split them) and the edges of every block that point into it."""

    def matrix(pieces: Any, row: int, col: int) -> sp.csr_matrix:
        r, c, v = (np.concatenate([p[i] for p in pieces]) for i in (row, col, 2))
        return sp.csr_matrix((v, (r - start, c)), shape=(n_b, n))

    W = symmetrise(matrix(own, 0, 1), matrix(reverse, 1, 0), kernel)  # a reverse edge (i, j) reads (j, i)
    if has_self_loops(kernel, self_loops):
        W = (W + sp.csr_matrix((np.ones(n_b), (np.arange(n_b), np.arange(start, start + n_b))), shape=(n_b, n))).tocsr()
    return W


def _row_sums(block: sp.csr_matrix) -> np.ndarray:
    return np.asarray(block.sum(axis=1)).reshape(-1, 1)


def _scaled(block: sp.csr_matrix, left: np.ndarray, right: np.ndarray) -> sp.csr_matrix:
    return sp.csr_matrix(sp.diags(left.ravel()) @ block @ sp.diags(right.ravel()))


def _product(block: sp.csr_matrix, whole: np.ndarray) -> np.ndarray:
    return np.asarray(block @ whole)


def _shifted_product(block: sp.csr_matrix, own: np.ndarray, whole: np.ndarray, diagonal: Any) -> np.ndarray:
    """``diag(diagonal) V - A V`` on one row block (``own``: the block's rows of ``V``)."""
    return diagonal * own - np.asarray(block @ whole)


class BlockedMatrix:
    """An ``n x n`` sparse matrix as persisted CSR row blocks (``blocks[b]`` holds rows ``starts[b]:starts[b+1]``)."""

    def __init__(self, blocks: list[Any], starts: np.ndarray) -> None:
        self.blocks, self.starts = blocks, np.asarray(starts, dtype=np.int64)
        self.n = int(self.starts[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def row_sums(self) -> RowBlocks:
        """``A 1`` as an ``n x 1`` :class:`RowBlocks` (persisted)."""
        f = dask.delayed(_row_sums, pure=True)
        return RowBlocks([f(b) for b in self.blocks], self.starts, 1).persist()

    def scaled(self, left: RowBlocks, right: RowBlocks) -> BlockedMatrix:
        """``diag(left) A diag(right)``, blockwise (``right`` stacked once on a worker)."""
        whole = right.whole()
        f = dask.delayed(_scaled, pure=True)
        blocks = [f(b, lb, whole) for b, lb in zip(self.blocks, left.blocks)]
        return BlockedMatrix(list(dask.persist(*blocks)), self.starts)

    def times(self, V: RowBlocks, diagonal: RowBlocks | float | None = None) -> RowBlocks:
        """``A V``, or ``diag(diagonal) V - A V``, where the row blocks are held (lazy).

        Every row block of the product needs all of ``V``: its blocks are
        stacked once, on a worker of a cluster, and fetched from there.
        """
        whole = V.whole()
        if diagonal is None:
            f = dask.delayed(_product, pure=True)
            return RowBlocks([f(b, whole) for b in self.blocks], self.starts, V.width)
        g = dask.delayed(_shifted_product, pure=True)
        blocks = [
            g(b, v, whole, diagonal.blocks[i] if isinstance(diagonal, RowBlocks) else diagonal)
            for i, (b, v) in enumerate(zip(self.blocks, V.blocks))
        ]
        return RowBlocks(blocks, self.starts, V.width)

    def to_csr(self) -> sp.csr_matrix:
        """The whole matrix in this process (for tests and small graphs)."""
        (blocks,) = compute(list(self.blocks))
        return sp.vstack(blocks).tocsr()


class BlockedOperator(NamedTuple):
    """The normalised graph operator of :func:`blocked_operator`, every n-vector held as row blocks."""

    matrix: BlockedMatrix  #: ``S = D^-1/2 W_alpha D^-1/2``, or ``W`` for ``unnormalized``
    q: RowBlocks  #: degrees of ``W`` (n x 1)
    d: RowBlocks | None  #: degrees of ``W_alpha`` (None for ``unnormalized``)
    diagonal: RowBlocks | float  #: the Laplacian is ``diag(diagonal) - matrix``: 1 (``I - S``) or ``q``

    def laplacian(self, V: RowBlocks) -> RowBlocks:
        """``L V``: ``V - S V``, or ``Q V - W V`` for ``unnormalized``."""
        return self.matrix.times(V, self.diagonal)

    def root(self) -> RowBlocks:
        """``D^1/2 1`` (ones for ``unnormalized``): the exact null vector of ``L`` (not normalised), and
        ``phi = D^-1/2 v`` maps eigenvectors of ``L`` to the embedding."""
        if self.d is None:
            return self.q.map(np.ones_like)
        return self.d.map(np.sqrt)


def blocked_affinity(indices: Any, distances: Any, kernel: str, epsilon: float, self_loops: bool) -> BlockedMatrix:
    """The symmetric affinity of :func:`bigdr.graph.affinity.affinity`, as row blocks.

    ``indices``/``distances`` are the n x k dask arrays of a :class:`bigdr.KNNGraph`.
    """
    chunks = indices.chunks[0]
    starts = np.concatenate([[0], np.cumsum(chunks)]).astype(np.int64)
    n = int(starts[-1])
    bounds = starts.tolist()
    ind_blocks = indices.rechunk({1: -1}).to_delayed().ravel()
    dist_blocks = distances.rechunk({1: -1}).to_delayed().ravel()
    edges = [
        dask.delayed(_edges, pure=True)(i, d, int(s), kernel, epsilon, bounds)
        for i, d, s in zip(ind_blocks, dist_blocks, starts[:-1])
    ]
    sym = dask.delayed(_symmetrised, pure=True)
    blocks = [
        sym(edges[c], int(starts[c]), int(chunks[c]), n, kernel, self_loops, *[e[c] for e in edges])
        for c in range(len(chunks))
    ]
    return BlockedMatrix(list(dask.persist(*blocks)), starts)


def blocked_operator(W: BlockedMatrix, kind: str, alpha: float = 0.0) -> BlockedOperator:
    """:func:`bigdr.graph.operators.symmetric_operator` on a blocked affinity, its n-vectors on the workers."""
    q = W.row_sums()
    if kind == "unnormalized":
        return BlockedOperator(W, q, None, q)
    if kind not in ("markov", "symmetric"):
        raise ValueError(f"kind must be 'unnormalized', 'markov' or 'symmetric'; got {kind!r}.")
    if alpha:
        qa = q.map(np.power, -alpha).persist()
        Wa = W.scaled(qa, qa)
    else:
        Wa = W
    d = Wa.row_sums()
    di = d.map(np.power, -0.5).persist()
    return BlockedOperator(Wa.scaled(di, di), q, d, 1.0)
