"""Sparse graph operators held as row blocks on the workers, multiplied blockwise.

The in-process path (:mod:`bigdr.graph.affinity`, :mod:`bigdr.graph.operators`)
builds one scipy.sparse matrix of all rows. Here the same affinity and the
same normalisations are built from a kNN graph given as dask arrays, one CSR
block of rows per chunk (``n_b x n``), persisted where the chunk was
computed; no process holds the matrix. Symmetrisation needs each edge's
reverse, so every row block sends the entries whose column falls in another
block to that block (an all-to-all of k entries per row). Degrees are
n-vectors in the driver; a product ``A @ X`` sends ``X`` (n x m) to the
workers and gathers the blocks of the result, which is what an iterative
eigensolver (LOBPCG) needs.

The formulas are those of :func:`bigdr.graph.affinity.affinity` and
:func:`bigdr.graph.operators.symmetric_operator`, and the tests compare the
two paths entry for entry.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np
import scipy.sparse as sp

from ..runtime.compute import compute, shared
from .affinity import edge_weights, has_self_loops, symmetrise
from .operators import Operator


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
    return np.asarray(block.sum(axis=1)).ravel()


def _scaled(block: sp.csr_matrix, left: np.ndarray, right: np.ndarray) -> sp.csr_matrix:
    return sp.csr_matrix(sp.diags(left) @ block @ sp.diags(right))


def _product(block: sp.csr_matrix, X: np.ndarray) -> np.ndarray:
    return np.asarray(block @ X)


class BlockedMatrix:
    """An ``n x n`` sparse matrix as persisted CSR row blocks (``blocks[b]`` holds rows ``starts[b]:starts[b+1]``)."""

    def __init__(self, blocks: list[Any], starts: np.ndarray) -> None:
        self.blocks, self.starts = blocks, np.asarray(starts, dtype=np.int64)
        self.n = int(self.starts[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    def row_sums(self) -> np.ndarray:
        (sums,) = compute([dask.delayed(_row_sums)(b) for b in self.blocks])
        return np.concatenate(sums)

    def scaled(self, left: np.ndarray, right: np.ndarray) -> BlockedMatrix:
        """``diag(left) A diag(right)``, blockwise (``right`` goes to the workers once)."""
        right_key = shared(right)
        blocks = [
            dask.delayed(_scaled, pure=True)(b, left[s:e], right_key)
            for b, s, e in zip(self.blocks, self.starts[:-1], self.starts[1:])
        ]
        return BlockedMatrix(list(dask.persist(*blocks)), self.starts)

    def matmat(self, X: np.ndarray) -> np.ndarray:
        """``A @ X`` (``X`` n x m in the driver), the row blocks multiplied where they are held."""
        x_key = shared(np.asarray(X))
        (parts,) = compute([dask.delayed(_product, pure=True)(b, x_key) for b in self.blocks])
        return np.vstack(parts) if X.ndim == 2 else np.concatenate(parts)

    def to_csr(self) -> sp.csr_matrix:
        """The whole matrix in this process (for tests and small graphs)."""
        (blocks,) = compute(list(self.blocks))
        return sp.vstack(blocks).tocsr()


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


def blocked_operator(W: BlockedMatrix, kind: str, alpha: float = 0.0) -> tuple[Operator, BlockedMatrix]:
    """:func:`bigdr.graph.operators.symmetric_operator` on a blocked affinity.

    Returns the :class:`~bigdr.graph.operators.Operator` (its ``L`` a
    ``scipy.sparse.linalg.LinearOperator`` whose products run blockwise) and
    the blocked matrix ``S`` (or ``W`` for ``unnormalized``) it multiplies by.
    """
    from scipy.sparse.linalg import LinearOperator

    n = W.n
    q = W.row_sums()
    if kind == "unnormalized":
        mat = W

        def apply(X: np.ndarray) -> np.ndarray:
            return q[:, None] * X - mat.matmat(X) if X.ndim == 2 else q * X - mat.matmat(X)

        op = LinearOperator((n, n), matvec=apply, matmat=apply, dtype=np.float64)
        return Operator(op, q, None, np.full(n, 1 / np.sqrt(n))), mat
    if kind not in ("markov", "symmetric"):
        raise ValueError(f"kind must be 'unnormalized', 'markov' or 'symmetric'; got {kind!r}.")
    Wa = W.scaled(q**-alpha, q**-alpha) if alpha else W
    d = Wa.row_sums()
    S = Wa.scaled(1 / np.sqrt(d), 1 / np.sqrt(d))

    def apply_s(X: np.ndarray) -> np.ndarray:
        return X - S.matmat(X)

    op = LinearOperator((n, n), matvec=apply_s, matmat=apply_s, dtype=np.float64)
    root = np.sqrt(d)
    return Operator(op, q, d, root / np.linalg.norm(root)), S
