"""Mergeable one-pass statistics: ``block -> state``, ``merge(state, state)``.

One set of functions serves the out-of-core fit (:func:`bigdr.blockwise.reduce.tree_reduce`
over row blocks), the distributed fit (the same graph on a cluster), ``partial_fit``
(merge a new batch into the model's state) and the property tests (any split,
any merge order, same answer).

Two states carry the second moment of the centred data:

``Moments``  (n, mean, scatter)
    ``scatter = sum_i (x_i - mean)(x_i - mean)^T`` (p x p), or only its
    diagonal when ``diagonal=True``. Merged with the pairwise update of Chan,
    Golub & LeVeque (1979)::

        delta   = mean_b - mean_a
        mean    = mean_a + delta * n_b / n
        scatter = scatter_a + scatter_b + (n_a n_b / n) delta delta^T

    Each block is centred (on a shift close to its mean) before its Gram
    matrix is formed, so no ``E[x^2] - E[x]^2`` cancellation happens anywhere.

``QRState``  (n, mean, R)
    ``R`` is the triangular factor of the centred block (``R^T R`` equals the
    scatter). Merged by stacking ``[R_a; R_b; sqrt(n_a n_b / n) delta^T]`` and
    re-factorising (the mean-correction row is the square root of Chan's
    term). The singular values of the data come from ``R`` directly, so the
    condition number is not squared: slower per row, but small components
    survive (see ``docs/pca.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg

from .._validation import check_block_finite
from .sparse_products import column_sums


class Moments(NamedTuple):
    n: int
    mean: np.ndarray  # (p,) float64
    scatter: np.ndarray  # (p, p) or (p,) float64


class QRState(NamedTuple):
    n: int
    mean: np.ndarray  # (p,) float64
    R: np.ndarray  # (r, p) float64, r <= p, upper triangular


#: Rows per sub-block of the Gram kernel: the centred buffer stays in cache
#: and float32 products are accumulated into float64 every 8192 rows (20x
#: smaller rounding error than one gemm over a 262144-row block, and 8-25%
#: faster than 16384 or larger sub-blocks, measured).
SUB_BLOCK_ROWS = 8_192

#: Largest dense float64 piece of a CSR block that :func:`moments_block` forms (32 MiB:
#: 2,097 rows of 2,000 genes); its gemm runs as fast as a larger one's and stays in cache.
DENSE_PART_BYTES = 32 << 20

#: Fraction of nonzeros above which a CSR block's scatter is computed from dense float64
#: pieces (a gemm) rather than by the sparse product ``X^T X``. The sparse product costs
#: about the square of a row's nonzeros, the gemm ``p^2`` whatever they are; one thread,
#: 2,048 rows of uniform random CSR, the two cost the same at 4.5-7% nonzero for 500 to
#: 10,000 columns and the gemm is 1.1-1.7x faster at 8% (one-off, docs/pca.md).
DENSE_GRAM_DENSITY = 0.07


def moments_block(block: Any, diagonal: bool = False, first_row: int = 0) -> Moments:
    """Moments of one row block, exact and free of cancellation.

    The block is centred on a rough shift ``c`` (the mean of its first rows)
    into a buffer with an extra column of ones, so one gemm per sub-block
    yields the scatter about ``c``, the column sums and the count. With
    ``d = mean - c`` (small), ``scatter = S_c - n d d^T``: the correction is
    tiny, so nothing cancels. The mean pass disappears, and a NaN or Inf
    anywhere makes the result non-finite, which is how non-finite input is
    detected at no extra cost (``first_row``, the block's place in the whole
    array, makes the error name the row of the data).

    A CSR block (checked finite when it was read) is densified one sub-block
    of at most :data:`DENSE_PART_BYTES` at a time, in float64: the route
    :func:`sparse_moments` takes for dense-ish blocks.
    """
    n, p = block.shape
    dtype = np.dtype(np.float64) if hasattr(block, "tocsr") else block.dtype
    shift = np.asarray(block[: min(n, 1024)].mean(axis=0, dtype=np.float64)).ravel()
    shift_t = shift.astype(dtype, copy=False)
    if diagonal:
        centred = block - shift_t
        sums = centred.sum(axis=0, dtype=np.float64)
        about_shift = np.einsum("ij,ij->j", centred, centred, dtype=np.float64)
    else:
        gram = _bordered_gram(block, shift_t)
        sums, about_shift = gram[:p, p], gram[:p, :p]
    if not np.isfinite(sums).all():
        check_block_finite(block, first_row)  # raises the error that names the problem
    d = sums / n
    correction = n * d * d if diagonal else n * np.outer(d, d)
    return Moments(n, shift + d, about_shift - correction)


def _bordered_gram(block: Any, shift: np.ndarray) -> np.ndarray:
    """``B^T B`` (float64, p + 1 square) of ``B = [X - 1 shift^T, 1]``, one gemm per piece of rows in ``shift``'s dtype.

    Dense blocks are taken :data:`SUB_BLOCK_ROWS` rows at a time, CSR blocks
    densified at most :data:`DENSE_PART_BYTES` at a time.
    """
    n, p = block.shape
    sparse = hasattr(block, "tocsr")
    rows = min(n, max(256, DENSE_PART_BYTES // (8 * max(p, 1))) if sparse else SUB_BLOCK_ROWS)
    buf = np.empty((rows, p + 1), dtype=shift.dtype)
    buf[:, p] = 1
    gram = np.zeros((p + 1, p + 1))
    for start in range(0, n, rows):
        part = buf[: min(rows, n - start)]
        piece = block[start : start + rows]
        np.subtract(piece.toarray() if sparse else piece, shift, out=part[:, :p])
        gram += part.T @ part
    return gram


def _pieces_pay(block: Any) -> bool:
    """Whether a block's Gram is a gemm on dense pieces: a dense block, or CSR at least
    :data:`DENSE_GRAM_DENSITY` full."""
    n, p = block.shape
    return not hasattr(block, "tocsr") or (n > 0 and block.nnz >= DENSE_GRAM_DENSITY * n * p)


def gram_block(block: Any, first_row: int = 0) -> np.ndarray:
    """The uncentred ``X^T X`` (float64, p x p) of a dense or CSR row block, never the whole block dense
    in float64: a gemm on float64 pieces, or the sparse product for CSR blocks below
    :data:`DENSE_GRAM_DENSITY`. Called as ``(block, first_row)`` by the tree reduction."""
    p = block.shape[1]
    if _pieces_pay(block):
        return _bordered_gram(block, np.zeros(p))[:p, :p]
    X = block.astype(np.float64)
    return (X.T @ X).toarray()


def scatter_moments(block: np.ndarray, first_row: int = 0) -> Moments:
    """:func:`moments_block` with the full scatter, called as ``(block, first_row)`` by the tree reduction."""
    return moments_block(block, first_row=first_row)


def sparse_moments(block: Any, diagonal: bool = False, first_row: int = 0) -> Moments:
    """Moments of one CSR row block: ``scatter = X^T X - n m m^T``, never the whole block dense.

    A block with at least :data:`DENSE_GRAM_DENSITY` of its entries stored
    goes through :func:`moments_block`'s gemm on dense float64 pieces of at
    most :data:`DENSE_PART_BYTES`, shifted first. Otherwise the sparse product
    ``X^T X`` (float64) and the column sums are all a block gives without
    forming ``X - m``; the block's own mean is then removed, and blocks merge
    by Chan's update (:func:`merge_moments`) as dense ones do. Removing the
    mean after the product costs about ``|m|^2 / var`` units in the last
    place of the scatter: nothing for log-counts or TF-IDF, whose means are of
    the order of their spread.
    """
    n = block.shape[0]
    if not diagonal and _pieces_pay(block):
        return moments_block(block, first_row=first_row)
    if diagonal:  # sums read from the values as stored: no float64 copy of the block, nor of its square
        sums, squares = column_sums(block)
        mean = sums / max(n, 1)
        return Moments(n, mean, squares - n * mean * mean)
    X = block.astype(np.float64)
    mean = np.asarray(X.sum(axis=0)).ravel() / max(n, 1)
    return Moments(n, mean, (X.T @ X).toarray() - n * np.outer(mean, mean))


def sparse_scatter_moments(block: Any, first_row: int = 0) -> Moments:
    """:func:`sparse_moments` with the full scatter, called as ``(block, first_row)`` by the tree reduction."""
    return sparse_moments(block, first_row=first_row)


def sparse_column_moments(block: Any, first_row: int = 0) -> Moments:
    """:func:`sparse_moments` with the scatter's diagonal only, called as ``(block, first_row)``."""
    return sparse_moments(block, diagonal=True, first_row=first_row)


def column_moments(block: np.ndarray, first_row: int = 0) -> Moments:
    """:func:`moments_block` with the scatter's diagonal only, called as ``(block, first_row)``."""
    return moments_block(block, diagonal=True, first_row=first_row)


def _pooled_mean(a: Moments | QRState, b: Moments | QRState) -> tuple[int, np.ndarray, np.ndarray]:
    """Count, mean difference and mean of two non-empty states merged (the shared half of both merges)."""
    n = a.n + b.n
    delta = b.mean - a.mean
    return n, delta, a.mean + delta * (b.n / n)


def merge_moments(a: Moments, b: Moments) -> Moments:
    """Chan et al. pairwise merge; exact in exact arithmetic, stable in floating point."""
    if a.n == 0:
        return b
    if b.n == 0:
        return a
    n, delta, mean = _pooled_mean(a, b)
    w = a.n * b.n / n
    corr = w * delta * delta if a.scatter.ndim == 1 else w * np.outer(delta, delta)
    return Moments(n, mean, a.scatter + b.scatter + corr)


def _r_factor(A: np.ndarray) -> np.ndarray:
    return scipy.linalg.qr(A, mode="r", overwrite_a=True, check_finite=False)[0][: min(A.shape)]


def qr_block(block: np.ndarray) -> QRState:
    """R factor of one centred row block (computed in float64).

    Sub-blocks of ``SUB_BLOCK_ROWS`` rows, all centred on the block mean, are
    factorised in cache and their R factors stacked and factorised once more:
    the same R, 2.2x faster than one Householder QR of a 262144-row block
    (measured).
    """
    n = block.shape[0]
    mean = block.mean(axis=0, dtype=np.float64)
    factors = [
        _r_factor(np.asarray(block[start : start + SUB_BLOCK_ROWS], dtype=np.float64) - mean)
        for start in range(0, n, SUB_BLOCK_ROWS)
    ]
    R = factors[0] if len(factors) == 1 else _r_factor(np.vstack(factors))
    return QRState(n, mean, R)


def merge_qr(a: QRState, b: QRState) -> QRState:
    """Stack R factors with a mean-correction row and re-factorise."""
    if a.n == 0:
        return b
    if b.n == 0:
        return a
    n, delta, mean = _pooled_mean(a, b)
    stacked = np.vstack([a.R, b.R, np.sqrt(a.n * b.n / n) * delta[None, :]])
    return QRState(n, mean, _r_factor(stacked))


def merge_all(states: Sequence, merge: Callable) -> object:
    """Merge a list of states pairwise (a balanced tree, for accuracy)."""
    states = list(states)
    while len(states) > 1:
        states = [merge(*states[i : i + 2]) if i + 1 < len(states) else states[i] for i in range(0, len(states), 2)]
    return states[0]


def extremes(block: np.ndarray, mean: np.ndarray, directions: np.ndarray, piece_rows: int = 16_384) -> np.ndarray:
    """Per-axis (min, max) of the block's centred coordinates ``(x - mean) directions`` (2 x d), mergeable.

    Rows are taken ``piece_rows`` at a time in float64, so memory is bounded whatever the block.
    """
    lo, hi = np.full(directions.shape[1], np.inf), np.full(directions.shape[1], -np.inf)
    for s in range(0, len(block), piece_rows):
        t = (np.asarray(block[s : s + piece_rows], dtype=np.float64) - mean) @ directions
        lo, hi = np.minimum(lo, t.min(axis=0)), np.maximum(hi, t.max(axis=0))
    return np.stack([lo, hi])


def merge_extremes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack([np.minimum(a[0], b[0]), np.maximum(a[1], b[1])])
