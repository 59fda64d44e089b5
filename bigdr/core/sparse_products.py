"""Products of a CSR block with a dense matrix, fused so the block is read once and never copied; its column sums.

The randomized and block-Krylov solvers spend nearly all their time in one
product per pass, ``Xc^T (Xc Z)`` with ``Xc = X - 1 m^T`` the implicitly
centred block. As two scipy products it is two sweeps over the nonzeros (and
a float64 copy of a float32 block when ``Z`` is float64). The kernel here
gathers ``y_i = x_i Z - m^T Z`` (k values) for a chunk of rows, then scatters
``x_i^T y_i`` back into the p x k result, so the gather reads only ``Z`` and
the scatter only the result (at 20,000 features each is 9.6 MB, and
interleaved they compete for the cache); float32 values are read as stored
and sums kept in float64. It is compiled by numba (already installed with
pynndescent) on first use and cached on disk, and releases the GIL, so
dask's threads run it on different blocks at once.

The columns go through in tiles of a fixed width (:data:`TILE`), each
row's sums written out as scalars so that the compiler keeps them in SIMD
registers across the row's nonzeros: with a width known only at run time
the sums made a round trip through memory for every nonzero. One-off, a
25,000-row block of the 100k-cell log-counts (7.6M nonzeros, one core):
the fused product of 20 columns in 44 ms against 68 ms, of 60 columns in
137 ms against 215 ms, the same sums in the same order.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

#: Rows whose gathered products ``y_i`` are kept before they are scattered: the gather then reads only
#: ``Z`` and the scatter only the result, so the two p x k arrays do not compete for the cache (a
#: one-off profile, 8M-nonzero blocks, one core: 0.183 s against 0.268 s interleaved and 0.277 s for
#: scipy at 20,000 features; 0.160, 0.169 and 0.221 s at 10,000).
CHUNK_ROWS = 4096
#: Columns of the kernel's tile: a product of k columns runs ``ceil(k / 20)`` tiles, the last padded with
#: zero columns (20 is the Krylov block on cached sparse data, :data:`~bigdr.blockwise.linalg.CACHED_BLOCK`,
#: and 60 its wide block). A fixed width lets the compiler keep a row's sums in registers.
TILE = 20


def _with_slp(kernel: Any, args: tuple[Any, ...]) -> None:
    """Compile ``kernel`` for ``args``' types with LLVM's SLP vectoriser, which packs a tile's scalar sums
    into SIMD registers.

    numba leaves SLP off by default (numba PR #8852: miscompilations it saw elsewhere); it is switched on
    here only while this kernel compiles, under numba's compiler lock, and the tests check its results
    against the dense formula. Without it the tile runs as scalar code (one-off: 115 ms against 47 ms
    for the block of the module docstring).
    """
    from numba.core import config as numba_config
    from numba.core.compiler_lock import global_compiler_lock

    signature = tuple(numba.typeof(a) for a in args)
    if signature in kernel.overloads:
        return
    config: Any = numba_config  # its settings are set from the environment at import: untyped
    with global_compiler_lock:
        previous = config.SLP_VECTORIZE
        config.SLP_VECTORIZE = 1
        try:
            kernel.compile(signature)
        finally:
            config.SLP_VECTORIZE = previous


@numba.njit(nogil=True, cache=True)
def _tile20(data, indices, indptr, Z, shift, out, colsum, Y):  # pragma: no cover (compiled)
    """20 columns of :func:`centred_normal_product`: each row's 20 sums held in registers.

    Written out column by column with literal column indices: an offset into a wider ``Z`` known only at
    run time kept LLVM from packing the sums into SIMD registers (its possible negative wrap-around)."""
    n, chunk = indptr.size - 1, Y.shape[0]
    for r0 in range(0, n, chunk):
        r1 = min(n, r0 + chunk)
        for i in range(r0, r1):  # gather: y_i = x_i Z - m^T Z
            a0 = -shift[0]
            a1 = -shift[1]
            a2 = -shift[2]
            a3 = -shift[3]
            a4 = -shift[4]
            a5 = -shift[5]
            a6 = -shift[6]
            a7 = -shift[7]
            a8 = -shift[8]
            a9 = -shift[9]
            a10 = -shift[10]
            a11 = -shift[11]
            a12 = -shift[12]
            a13 = -shift[13]
            a14 = -shift[14]
            a15 = -shift[15]
            a16 = -shift[16]
            a17 = -shift[17]
            a18 = -shift[18]
            a19 = -shift[19]
            for jj in range(indptr[i], indptr[i + 1]):
                j, v = indices[jj], np.float64(data[jj])
                a0 += v * Z[j, 0]
                a1 += v * Z[j, 1]
                a2 += v * Z[j, 2]
                a3 += v * Z[j, 3]
                a4 += v * Z[j, 4]
                a5 += v * Z[j, 5]
                a6 += v * Z[j, 6]
                a7 += v * Z[j, 7]
                a8 += v * Z[j, 8]
                a9 += v * Z[j, 9]
                a10 += v * Z[j, 10]
                a11 += v * Z[j, 11]
                a12 += v * Z[j, 12]
                a13 += v * Z[j, 13]
                a14 += v * Z[j, 14]
                a15 += v * Z[j, 15]
                a16 += v * Z[j, 16]
                a17 += v * Z[j, 17]
                a18 += v * Z[j, 18]
                a19 += v * Z[j, 19]
            Y[i - r0, 0] = a0
            Y[i - r0, 1] = a1
            Y[i - r0, 2] = a2
            Y[i - r0, 3] = a3
            Y[i - r0, 4] = a4
            Y[i - r0, 5] = a5
            Y[i - r0, 6] = a6
            Y[i - r0, 7] = a7
            Y[i - r0, 8] = a8
            Y[i - r0, 9] = a9
            Y[i - r0, 10] = a10
            Y[i - r0, 11] = a11
            Y[i - r0, 12] = a12
            Y[i - r0, 13] = a13
            Y[i - r0, 14] = a14
            Y[i - r0, 15] = a15
            Y[i - r0, 16] = a16
            Y[i - r0, 17] = a17
            Y[i - r0, 18] = a18
            Y[i - r0, 19] = a19
            colsum[0] += a0
            colsum[1] += a1
            colsum[2] += a2
            colsum[3] += a3
            colsum[4] += a4
            colsum[5] += a5
            colsum[6] += a6
            colsum[7] += a7
            colsum[8] += a8
            colsum[9] += a9
            colsum[10] += a10
            colsum[11] += a11
            colsum[12] += a12
            colsum[13] += a13
            colsum[14] += a14
            colsum[15] += a15
            colsum[16] += a16
            colsum[17] += a17
            colsum[18] += a18
            colsum[19] += a19
        for i in range(r0, r1):  # scatter: out += x_i^T y_i
            y0 = Y[i - r0, 0]
            y1 = Y[i - r0, 1]
            y2 = Y[i - r0, 2]
            y3 = Y[i - r0, 3]
            y4 = Y[i - r0, 4]
            y5 = Y[i - r0, 5]
            y6 = Y[i - r0, 6]
            y7 = Y[i - r0, 7]
            y8 = Y[i - r0, 8]
            y9 = Y[i - r0, 9]
            y10 = Y[i - r0, 10]
            y11 = Y[i - r0, 11]
            y12 = Y[i - r0, 12]
            y13 = Y[i - r0, 13]
            y14 = Y[i - r0, 14]
            y15 = Y[i - r0, 15]
            y16 = Y[i - r0, 16]
            y17 = Y[i - r0, 17]
            y18 = Y[i - r0, 18]
            y19 = Y[i - r0, 19]
            for jj in range(indptr[i], indptr[i + 1]):
                j, v = indices[jj], np.float64(data[jj])
                out[j, 0] += v * y0
                out[j, 1] += v * y1
                out[j, 2] += v * y2
                out[j, 3] += v * y3
                out[j, 4] += v * y4
                out[j, 5] += v * y5
                out[j, 6] += v * y6
                out[j, 7] += v * y7
                out[j, 8] += v * y8
                out[j, 9] += v * y9
                out[j, 10] += v * y10
                out[j, 11] += v * y11
                out[j, 12] += v * y12
                out[j, 13] += v * y13
                out[j, 14] += v * y14
                out[j, 15] += v * y15
                out[j, 16] += v * y16
                out[j, 17] += v * y17
                out[j, 18] += v * y18
                out[j, 19] += v * y19


@numba.njit(nogil=True, cache=True)
def _column_sums(data, indices, sums, squares):  # pragma: no cover (compiled)
    for jj in range(data.size):
        v = np.float64(data[jj])
        sums[indices[jj]] += v
        squares[indices[jj]] += v * v


def column_sums(block: Any) -> tuple[np.ndarray, np.ndarray]:
    """Column sums and sums of squares of a sparse block, float64 (p,) each, from the values as stored.

    No copy of the block: scipy's ``astype(float64)`` and ``multiply`` made
    two (data and indices) per block, which set the peak memory of a sparse
    PCA (a one-off profile on 100,000 x 10,000 log-counts, 2 threads: 441 MiB
    for the column statistics against 159 MiB for a product pass).
    """
    X = block.tocsr()  # no copy for CSR; duplicate entries add up
    data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
    sums, squares = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    _column_sums(data, X.indices, sums, squares)
    return sums, squares


def centred_normal_product(block: Any, Z: np.ndarray, mean: np.ndarray, chunk: int = CHUNK_ROWS) -> np.ndarray:
    """``Xc^T (Xc Z)`` of a CSR block, ``Xc = X - 1 m^T`` never formed; float64 (p, k).

    Row by row: ``y_i = x_i Z - m^T Z`` and ``Xc^T Y = X^T Y - m (1^T Y)``,
    so the result costs two sweeps of each row's nonzeros and O(p k) beyond
    them, whatever the density. A zero ``mean`` gives ``X^T (X Z)``. The
    columns go through in tiles of :data:`TILE`, each a sweep.
    """
    X = block.tocsr()  # no copy for CSR; duplicate or unsorted indices add up as they should
    p, k = X.shape[1], Z.shape[1]
    Z = np.asarray(Z, dtype=np.float64)
    m = np.asarray(mean, dtype=np.float64)
    data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
    rows = max(1, min(int(chunk), X.shape[0]))
    parts = []
    for o in range(0, k, TILE):
        Zt = np.zeros((p, TILE))  # the tile's columns, contiguous; the last padded with zeros
        Zt[:, : min(TILE, k - o)] = Z[:, o : o + TILE]
        out, colsum = np.zeros((p, TILE)), np.zeros(TILE)
        args = (data, X.indices, X.indptr, Zt, m @ Zt, out, colsum, np.empty((rows, TILE)))
        _with_slp(_tile20, args)
        _tile20(*args)
        out -= np.outer(m, colsum)
        parts.append(out[:, : min(TILE, k - o)])
    return np.concatenate(parts, axis=1) if parts else np.zeros((p, 0))
