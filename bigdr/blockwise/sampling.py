"""Landmark selection in one pass, reproducible and independent of chunking.

Uniform sampling gives every row a pseudo-random key that depends only on the
seed and the row's global index (row i draws from ``rng([seed, i // 65536])``),
each block keeps its m smallest keys, and a tree merge keeps the m smallest
overall: a uniform sample without replacement, the same whatever the chunking
or scheduler. Max-min (farthest-point) refinement then runs on a uniform
sample in memory for even coverage of the manifold (de Silva & Tenenbaum 2004).

References
----------
de Silva, V. & Tenenbaum, J. B. (2004). Sparse multidimensional scaling using
landmark points. Technical report, Stanford University.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from .._random import LANDMARK_STREAM, block_rng, resolve_seed
from .._validation import check_count
from ..io import as_array, as_sparse_array, is_sparse_input
from ..runtime.compute import compute
from .reduce import Rider, tree_reduce

KEY_BLOCK = 65_536
#: The stream of the row keys. Without a salt of their own, keys drawn from
#: ``rng([seed, b])`` were the very numbers a generator seeded the same way
#: (bigdr.datasets, or a user's ``default_rng([0, b])``) had drawn for the
#: data: a "uniform" sample of a swiss roll then took the smallest roll
#: angles only.
KEY_SALT = LANDMARK_STREAM
#: Input chunks of the sampling pass. Its per-row cost is tiny, so 32 MiB
#: chunks read as fast as 128 MiB ones; measured at 10M rows, 128 MiB
#: chunks (5M rows, plus keys and the partition's scratch, two at a time)
#: held 717 MiB against 268 MiB for 1M rows in one chunk.
SAMPLE_CHUNK_BYTES = 32 << 20


class _Sample(NamedTuple):
    keys: np.ndarray
    index: np.ndarray  # type: ignore[assignment]  # a field named like tuple.index
    rows: np.ndarray


def row_keys(start: int, stop: int, seed: int) -> np.ndarray:
    """Uniform keys of global rows ``start .. stop - 1`` (chunking-independent)."""
    out = np.empty(stop - start)
    pos = start
    while pos < stop:
        b = pos // KEY_BLOCK
        end = min(stop, (b + 1) * KEY_BLOCK)
        keys = block_rng(seed, b, KEY_SALT).random(KEY_BLOCK)
        out[pos - start : end - start] = keys[pos - b * KEY_BLOCK : end - b * KEY_BLOCK]
        pos = end
    return out


def keys_of(indices: np.ndarray, seed: int) -> np.ndarray:
    """The keys of rows given by global index, in any order (as :func:`row_keys`)."""
    indices = np.asarray(indices, dtype=np.int64)
    out = np.empty(len(indices))
    blocks = indices // KEY_BLOCK
    for b in np.unique(blocks):
        at = blocks == b
        out[at] = block_rng(seed, int(b), KEY_SALT).random(KEY_BLOCK)[indices[at] - b * KEY_BLOCK]
    return out


def _smallest(sample: _Sample, m: int) -> _Sample:
    if len(sample.keys) > m:
        keep = np.argpartition(sample.keys, m - 1)[:m]
        sample = _Sample(sample.keys[keep], sample.index[keep], sample.rows[keep])
    order = np.lexsort((sample.index, sample.keys))
    return _Sample(sample.keys[order], sample.index[order], sample.rows[order])


def _sample_block(block: np.ndarray, start: int, m: int, seed: int, below: float = 1.0) -> _Sample:
    keys = row_keys(start, start + block.shape[0], seed)
    index = np.arange(start, start + len(keys), dtype=np.int64)
    if below < 1.0:  # rows that cannot be among the m smallest keys of all rows are not held
        keep = np.flatnonzero(keys < below)
        keys, index, block = keys[keep], index[keep], block[keep]
    rows = block if sp.issparse(block) else np.asarray(block)
    return _smallest(_Sample(keys, index, rows), m)


def _stack(a: Any, b: Any) -> Any:
    return sp.vstack([a, b], format="csr") if sp.issparse(a) else np.concatenate([a, b])


def _merge_samples(a: _Sample, b: _Sample, m: int) -> _Sample:
    return _smallest(
        _Sample(np.concatenate([a.keys, b.keys]), np.concatenate([a.index, b.index]), _stack(a.rows, b.rows)),
        m,
    )


def _sample_block_at(block: Any, start: int, m: int, seed: int, offset: int, below: float) -> _Sample:
    return _sample_block(block, start + offset, m, seed, below)


#: Rows below the key cutoff of a carried sample, in expectation, per row sampled: with twice as many
#: expected, fewer than ``size`` fall below it with probability about exp(-size / 4).
CUTOFF_MARGIN = 2.0


def sample_rider(size: int, seed: int, offset: int = 0, rows: int | None = None) -> Rider:
    """A uniform sample of ``size`` rows carried by another pass (:class:`~bigdr.blockwise.reduce.Rider`).

    Its value is ``(keys, index, rows)``; ``offset``: the global index of the
    pass's first row, so samples of successive batches merge
    (:func:`merge_samples`) into a uniform sample of all of them. ``rows``:
    the pass's row count, when known: a block then holds only rows whose key
    is below ``CUTOFF_MARGIN * size / rows`` (keys are uniform), a few per
    block rather than ``size``; the sample is the same (the ``size`` smallest
    keys of all rows lie below the cutoff but with probability about
    ``exp(-size / 4)``, and it is then a smaller uniform sample).
    """
    below = 1.0 if rows is None else min(1.0, CUTOFF_MARGIN * size / max(rows, 1))
    return Rider(
        functools.partial(_sample_block_at, m=size, seed=seed, offset=offset, below=below),
        functools.partial(_merge_samples, m=size),
    )


def merge_samples(a: Any, b: Any, size: int) -> Any:
    """The uniform sample of ``size`` rows of two batches, from a sample of each."""
    return _merge_samples(_Sample(*a), _Sample(*b), size)


def uniform_sample(X: Any, size: int, random_state: int = 0, sparse: bool = False) -> tuple[Any, np.ndarray]:
    """``size`` rows drawn uniformly without replacement in one pass: (rows, indices).

    ``sparse``: sparse input (:func:`bigdr.io.is_sparse_input`) is read as CSR
    blocks and the rows come back as one CSR matrix; otherwise it is refused
    as by :func:`bigdr.io.as_array`.
    """
    # Per row the pass holds a key, an index and the partition's scratch.
    if sparse and is_sparse_input(X):
        Xd = as_sparse_array(X, min_rows=1)
    else:
        Xd = as_array(X, extra_row_bytes=32, chunk_bytes=SAMPLE_CHUNK_BYTES)
    size = check_count(size, Xd.shape[0], "size")
    seed = resolve_seed(random_state)
    (s,) = compute(
        tree_reduce(
            Xd,
            functools.partial(_sample_block, m=size, seed=seed),
            functools.partial(_merge_samples, m=size),
            with_offset=True,
        )
    )
    return s.rows, s.index


def maxmin(points: np.ndarray, m: int, first: int = 0) -> np.ndarray:
    """Farthest-point order: indices of m points, each the farthest from those before it.

    O(len(points) * m * p) time, O(len(points)) extra memory.
    """
    points = np.asarray(points, dtype=np.float64)
    chosen = np.empty(m, dtype=np.int64)
    chosen[0] = first
    mind = np.sum((points - points[first]) ** 2, axis=1)
    for j in range(1, m):
        chosen[j] = int(np.argmax(mind))
        np.minimum(mind, np.sum((points - points[chosen[j]]) ** 2, axis=1), out=mind)
    return chosen


def select_landmarks(
    X: Any, n_landmarks: int, method: str = "random", random_state: int = 0, sample_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Choose landmark rows of ``X`` in one pass.

    Parameters
    ----------
    n_landmarks : int
    method : {"random", "maxmin"}
        ``random``: uniform without replacement. ``maxmin``: uniform sample of
        ``sample_size`` rows (default ``min(n, max(10 m, 10000))``), then
        farthest-point selection of m of them (euclidean).
    random_state : int

    Returns
    -------
    landmarks : (m, p) numpy array
    indices : (m,) int64, their row numbers in ``X``
    """
    # The sampling pass opens X itself, with its own chunk size.
    Xd = as_array(X, extra_row_bytes=32, chunk_bytes=SAMPLE_CHUNK_BYTES)
    n = Xd.shape[0]
    m = check_count(n_landmarks, n, "n_landmarks")
    if method == "random":
        return uniform_sample(Xd, m, random_state)
    if method != "maxmin":
        raise ValueError(f"method must be 'random' or 'maxmin'; got {method!r}.")
    size = min(n, max(10 * m, 10_000)) if sample_size is None else check_count(sample_size, n, "sample_size")
    if size < m:
        raise ValueError(f"sample_size={size} must be at least n_landmarks={m}.")
    rows, index = uniform_sample(Xd, size, random_state)
    order = maxmin(rows, m)
    return rows[order], index[order]
