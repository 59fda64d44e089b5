"""Tree reductions over the row blocks of a dask array: ``map(block) -> state``, ``merge``.

The graph-building half of the mergeable statistics (:mod:`bigdr.core.stats`
holds the kernels and merges); also used by landmark sampling
(:mod:`bigdr.blockwise.sampling`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import numpy as np

from ..core.stats import merge_all

#: float64 states alive at once in :func:`tree_reduce` (fan-in 8, one merge per worker thread, the
#: inputs held until the merge ends; calibrated by benchmarks/bench_memory.py).
MERGE_STATES = 10


@dataclass
class Rider:
    """A row-block reduction carried by another pass over the same blocks, so it reads nothing of its own.

    ``kernel(block, first_row)`` gives a block's state and ``merge`` joins two,
    as in :func:`tree_reduce` with ``with_offset=True``; ``value`` holds the
    merged state once the pass carrying it has run.
    """

    kernel: Callable[..., Any]
    merge: Callable[[Any, Any], Any]
    value: Any = None


class JoinedRider(Rider):
    """Two riders carried in the same tasks: ``value`` is the first's, and setting it sets both
    (a pass that carries the column statistics carries a row sample too)."""

    def __init__(self, first: Rider, second: Rider) -> None:
        self.first, self.second = first, second
        super().__init__(*joined(first.kernel, first.merge, second))

    @property
    def value(self) -> Any:
        return self.first.value

    @value.setter
    def value(self, both: Any) -> None:
        self.first.value, self.second.value = (None, None) if both is None else both


def _joined(first: Callable, second: Callable, block: Any, first_row: int, *shared: Any) -> tuple:
    return first(block, first_row, *shared), second(block, first_row)


def joined(block_fn: Callable, merge: Callable, rider: Rider | None) -> tuple[Callable, Callable]:
    """``block_fn`` (called with the block's first row) and ``merge`` extended to reduce ``rider`` in the same
    tasks, states as pairs; unchanged without a rider."""
    if rider is None:
        return block_fn, merge
    return functools.partial(_joined, block_fn, rider.kernel), functools.partial(_merge_carried, merge, rider.merge)


def merged_bytes(rows: int, cols: int, sparse: bool = False, blocks: int | None = None) -> int:
    """Peak bytes of the ``rows x cols`` float64 states of a tree reduction.

    A sparse block's ``X^T X`` adds two: the sparse product and its dense copy.
    A reduction of ``blocks`` blocks never holds more than their ``2 blocks - 1``
    states (the leaves and the merges), whatever :data:`MERGE_STATES` allows.
    """
    states = MERGE_STATES if blocks is None else min(MERGE_STATES, 2 * max(int(blocks), 1) - 1)
    return (states + (2 if sparse else 0)) * rows * cols * 8


def _unwrap(item: Any) -> Any:
    # States travel out of map_blocks inside a 1 x 1 object array.
    return item[0, 0] if isinstance(item, np.ndarray) and item.dtype == object else item


def _merge_args(merge: Callable, *items: Any) -> Any:
    return merge_all([_unwrap(i) for i in items], merge)


def _state_of_block(
    block: np.ndarray, *shared: Any, block_fn: Callable, with_offset: bool = False, block_info: Any = None
) -> np.ndarray:
    out = np.empty((1, 1), dtype=object)
    if with_offset:
        out[0, 0] = block_fn(block, block_info[0]["array-location"][0][0], *shared)
    else:
        out[0, 0] = block_fn(block, *shared)
    return out


def tree_reduce(
    X: da.Array,
    block_fn: Callable[..., object],
    merge: Callable,
    split_every: int = 8,
    with_offset: bool = False,
    shared: tuple = (),
):
    """A dask ``Delayed`` that maps ``block_fn`` over row blocks and merges.

    With ``with_offset=True`` the kernel is called as ``block_fn(block,
    first_row)``, for states that depend on global row numbers. ``shared``:
    graph keys (delayed objects or futures) passed after those arguments to
    every call, so a large object travels to each worker once.

    ``block_fn`` runs through ``map_blocks``, so dask fuses it with the read
    of the block into one task: a block is reduced to its small state as soon
    as it is loaded. (As separate tasks, reads ran ahead of a slow kernel and
    held 3 GB of chunks for a 4M-row TSQR fit; fused, memory is a few chunks
    whatever n is.) The merge tree has fan-in ``split_every``.
    """
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    states = da.map_blocks(
        _state_of_block,
        X,
        *shared,
        block_fn=block_fn,
        with_offset=with_offset,
        dtype=object,
        chunks=((1,) * X.numblocks[0], (1,)),
        meta=np.empty((0, 0), dtype=object),
    )
    level = list(states.to_delayed().ravel())
    combine = dask.delayed(functools.partial(_merge_args, merge), pure=True)
    while True:
        level = [combine(*level[i : i + split_every]) for i in range(0, len(level), split_every)]
        if len(level) == 1:
            return level[0]


def column_statistics(X: da.Array, also: Rider | None = None) -> Any:
    """A ``Delayed`` of the count, column means and column scatter (the diagonal) of ``X``, in one pass.

    Dense blocks are shifted first (:func:`bigdr.core.stats.column_moments`); sparse
    ones stay sparse (:func:`bigdr.core.stats.sparse_column_moments`). ``also``: a
    reduction carried by the same tasks; the state is then the pair.
    """
    rider = column_statistics_rider(X)
    return tree_reduce(X, *joined(rider.kernel, rider.merge, also), with_offset=True)


def column_statistics_rider(X: da.Array) -> Rider:
    """:func:`column_statistics` as a :class:`Rider`, to be carried by another pass over ``X``."""
    from ..core.stats import column_moments, merge_moments, sparse_column_moments

    return Rider(sparse_column_moments if hasattr(X._meta, "tocsr") else column_moments, merge_moments)


def _carried(block_fn: Callable, rider_kernel: Callable, block: Any, first_row: int, *shared: Any) -> tuple:
    return block_fn(block, *shared), rider_kernel(block, first_row)


def _merge_carried(merge: Callable, rider_merge: Callable, a: tuple, b: tuple) -> tuple:
    return merge(a[0], b[0]), rider_merge(a[1], b[1])


def tree_reduce_carrying(X: da.Array, block_fn: Callable, merge: Callable, rider: Rider, shared: tuple = ()) -> Any:
    """:func:`tree_reduce` of ``block_fn`` (without offset) that also reduces ``rider`` in the same read of each block.

    A ``Delayed`` of the pair (the reduction, the rider's state).
    """
    return tree_reduce(
        X,
        functools.partial(_carried, block_fn, rider.kernel),
        functools.partial(_merge_carried, merge, rider.merge),
        with_offset=True,
        shared=shared,
    )
