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
dask's threads run it on different blocks at once. Measured over the 1M x
20,000 atlas: a pass 8.3 s against 11.1 s with scipy's two products
(``benchmarks/results/sparse.md``).
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


@numba.njit(nogil=True, cache=True)
def _normal_rows(data, indices, indptr, Z, shift, out, colsum, chunk):  # pragma: no cover (compiled)
    n, k = indptr.size - 1, Z.shape[1]
    Y = np.empty((min(chunk, max(n, 1)), k))
    for r0 in range(0, n, chunk):
        r1 = min(n, r0 + chunk)
        for i in range(r0, r1):  # gather: y_i = x_i Z - m^T Z
            y = Y[i - r0]
            for c in range(k):
                y[c] = -shift[c]
            for jj in range(indptr[i], indptr[i + 1]):
                j, v = indices[jj], data[jj]
                for c in range(k):
                    y[c] += v * Z[j, c]
            for c in range(k):
                colsum[c] += y[c]
        for i in range(r0, r1):  # scatter: out += x_i^T y_i
            y = Y[i - r0]
            for jj in range(indptr[i], indptr[i + 1]):
                j, v = indices[jj], data[jj]
                for c in range(k):
                    out[j, c] += v * y[c]


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
    them, whatever the density. A zero ``mean`` gives ``X^T (X Z)``.
    """
    X = block.tocsr()  # no copy for CSR; duplicate or unsorted indices add up as they should
    Zc = np.ascontiguousarray(Z, dtype=np.float64)
    m = np.asarray(mean, dtype=np.float64)
    data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
    out = np.zeros((X.shape[1], Zc.shape[1]))
    colsum = np.zeros(Zc.shape[1])
    _normal_rows(data, X.indices, X.indptr, Zc, m @ Zc, out, colsum, max(1, int(chunk)))
    out -= np.outer(m, colsum)
    return out
