"""Tall matrices held as row blocks on the workers: what a distributed eigensolver iterates on.

An ``n x m`` matrix with ``n`` in the millions and ``m`` a few columns (the
block of vectors of LOBPCG, a diffusion's state) is kept as one numpy block
per row chunk, persisted where it was computed (:class:`RowBlocks`). Linear
combinations of such matrices run blockwise on the workers and stay there;
only ``m x m`` Gram matrices ``A^T B`` (summed over the blocks) and small
coefficient matrices travel between the driver and the workers. A product
with a sparse matrix held as row blocks needs the whole of the right-hand
side in each of its tasks: the blocks are stacked on a worker (:meth:`RowBlocks.whole`)
and fetched from there, never through the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np

from ..runtime.compute import compute


def _stack(*blocks: np.ndarray) -> np.ndarray:
    return np.vstack(blocks)


def _combine(coefficients: Sequence[np.ndarray], *blocks: np.ndarray) -> np.ndarray:
    """``sum_i blocks[i] @ coefficients[i]`` on one row block."""
    out = blocks[0] @ coefficients[0]
    for block, c in zip(blocks[1:], coefficients[1:]):
        out += block @ c
    return out


def _rows(block: np.ndarray, local: np.ndarray) -> np.ndarray:
    return block[local]


def _column_peaks(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the largest magnitude of the block and the entry where it first occurs."""
    at = np.argmax(np.abs(block), axis=0)
    entries = block[at, np.arange(block.shape[1])]
    return np.abs(entries), entries


class RowBlocks:
    """An ``n x m`` float64 matrix as numpy row blocks (``blocks[b]`` holds rows ``starts[b]:starts[b + 1]``).

    The blocks are dask delayed objects; on a ``distributed`` cluster,
    :meth:`persist` leaves them in the workers' memory. Every method but
    :meth:`compute`, :meth:`gram`, :meth:`rows` and :meth:`sign_of_peaks`
    is lazy and returns small graphs over the blocks.
    """

    def __init__(self, blocks: Sequence[Any], starts: np.ndarray, width: int) -> None:
        self.blocks, self.starts, self.width = list(blocks), np.asarray(starts, dtype=np.int64), int(width)
        self.n = int(self.starts[-1])

    @classmethod
    def scatter(cls, X: np.ndarray, starts: np.ndarray) -> RowBlocks:
        """``X`` (in this process) cut at ``starts`` and persisted (for tests and n-vectors)."""
        X = np.asarray(X, dtype=np.float64)
        X2 = X.reshape(len(X), -1)
        blocks = [dask.delayed(X2[s:e].copy()) for s, e in zip(starts[:-1], starts[1:])]
        return cls(blocks, starts, X2.shape[1]).persist()

    @classmethod
    def from_blocks(cls, fn: Callable[..., np.ndarray], starts: np.ndarray, width: int, *args: Any) -> RowBlocks:
        """Blocks made by ``fn(start, stop, *args)`` for each row range (lazy)."""
        f = dask.delayed(fn, pure=True)
        return cls([f(int(s), int(e), *args) for s, e in zip(starts[:-1], starts[1:])], starts, width)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.width)

    def persist(self) -> RowBlocks:
        return RowBlocks(dask.persist(*self.blocks), self.starts, self.width)

    def map(self, fn: Callable[..., np.ndarray], *others: RowBlocks | Any, width: int | None = None) -> RowBlocks:
        """``fn(block, *others)`` per row block; a :class:`RowBlocks` among ``others`` gives its own block."""
        f = dask.delayed(fn, pure=True)
        blocks = [
            f(b, *[o.blocks[i] if isinstance(o, RowBlocks) else o for o in others]) for i, b in enumerate(self.blocks)
        ]
        return RowBlocks(blocks, self.starts, self.width if width is None else width)

    def whole(self) -> Any:
        """The matrix as one delayed array, stacked by a task (on a worker of a cluster)."""
        return dask.delayed(_stack, pure=True)(*self.blocks)

    def compute(self) -> np.ndarray:
        """The matrix in this process (tests and small matrices)."""
        (blocks,) = compute(self.blocks)
        return np.vstack(blocks)

    def to_dask(self, dtype: Any = np.float64) -> da.Array:
        """A dask array over the blocks, chunked by them (the blocks cast to ``dtype``)."""
        parts = [
            da.from_delayed(b, shape=(int(e - s), self.width), dtype=np.float64)
            for b, s, e in zip(self.blocks, self.starts[:-1], self.starts[1:])
        ]
        return da.concatenate(parts, axis=0).astype(dtype)

    def rows(self, index: np.ndarray) -> np.ndarray:
        """The rows ``index`` (any order) in this process: only those rows travel."""
        index = np.asarray(index, dtype=np.int64)
        order = np.argsort(index, kind="stable")
        cuts = np.searchsorted(index[order], self.starts)
        f = dask.delayed(_rows, pure=True)
        spans = zip(self.blocks, self.starts[:-1], cuts[:-1], cuts[1:])
        parts = [f(b, index[order[a:z]] - s) for b, s, a, z in spans if z > a]
        (got,) = compute(parts)
        out = np.empty((len(index), self.width))
        out[order] = np.vstack(got) if got else out[:0]
        return out

    def sign_of_peaks(self) -> np.ndarray:
        """The sign of each column's entry of largest magnitude (the first such entry), +1 for a zero column."""
        (peaks,) = compute([dask.delayed(_column_peaks, pure=True)(b) for b in self.blocks])
        size = np.array([p[0] for p in peaks])
        entry = np.array([p[1] for p in peaks])
        first = np.argmax(size, axis=0)  # the first block holding the column's largest magnitude
        signs = np.sign(entry[first, np.arange(self.width)])
        signs[signs == 0] = 1
        return signs


def persist_all(*matrices: RowBlocks) -> list[RowBlocks]:
    """Persist several :class:`RowBlocks` in one call (blocks they share are computed once)."""
    flat = dask.persist(*[b for x in matrices for b in x.blocks])
    out, at = [], 0
    for x in matrices:
        out.append(RowBlocks(flat[at : at + len(x.blocks)], x.starts, x.width))
        at += len(x.blocks)
    return out


def gram(pairs: Sequence[tuple[Sequence[RowBlocks], Sequence[RowBlocks]]]) -> list[np.ndarray]:
    """``[A_1 ... A_r]^T [B_1 ... B_s]`` for each ``(As, Bs)`` of ``pairs``, summed over the row blocks.

    All pairs in one compute: a task per row block returns the small
    products, the driver adds them up.
    """
    position: dict[int, int] = {}  # each matrix sent once, however many pairs name it
    operands: list[RowBlocks] = []
    for x in (x for left, right in pairs for x in (*left, *right)):
        if id(x) not in position:
            position[id(x)] = len(operands)
            operands.append(x)
    spec = [([position[id(x)] for x in left], [position[id(x)] for x in right]) for left, right in pairs]
    g = dask.delayed(_block_grams, pure=True)
    n_blocks = len(operands[0].blocks)
    (per_block,) = compute([g(spec, *[o.blocks[i] for o in operands]) for i in range(n_blocks)])
    return [sum(parts[j] for parts in per_block) for j in range(len(spec))]


def _block_grams(spec: Sequence[tuple[list[int], list[int]]], *blocks: np.ndarray) -> list[np.ndarray]:
    out = []
    for left, right in spec:
        a = np.hstack([blocks[i] for i in left]) if len(left) > 1 else blocks[left[0]]
        b = np.hstack([blocks[i] for i in right]) if len(right) > 1 else blocks[right[0]]
        out.append(a.T @ b)
    return out


def combine(terms: Sequence[tuple[RowBlocks, np.ndarray]]) -> RowBlocks:
    """``sum_i X_i C_i`` blockwise (lazy), for ``(X_i, C_i)`` in ``terms``."""
    coefficients = [np.asarray(c, dtype=np.float64) for _, c in terms]
    first = terms[0][0]
    f = dask.delayed(_combine, pure=True)
    blocks = [f(coefficients, *[x.blocks[i] for x, _ in terms]) for i in range(len(first.blocks))]
    return RowBlocks(blocks, first.starts, coefficients[0].shape[1])
