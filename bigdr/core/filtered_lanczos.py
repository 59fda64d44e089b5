"""The smallest eigenpairs of a sparse graph Laplacian by Lanczos on a Chebyshev polynomial of it.

ARPACK's implicitly restarted Lanczos spends most of its time on a kNN
graph of a million rows in its own dense work, not in the sparse products:
every step reorthogonalises the new vector against a basis of ``ncv``
vectors of ``n`` entries (memory-bound), and every restart rotates that
basis, against one product of about 25 nonzeros a row. Lanczos on
``p(L)``, a polynomial of degree ``m`` that maps the wanted end of the
spectrum far above the rest, moves the balance: each step makes ``m``
sparse products (cheap, and split over the threads by rows) for one
reorthogonalisation, and the wanted eigenvalues of ``p(L)`` are far better
separated than those of ``L``, so far fewer steps and restarts are needed.
``p(L)`` has the eigenvectors of ``L``; the eigenvalues of ``L`` are their
Rayleigh quotients.

The polynomial is the Chebyshev polynomial ``T_m`` of the affine map that
sends ``[b, c]`` to ``[-1, 1]``, with ``c`` a Gershgorin bound on the
spectrum and ``b`` above the ``k``-th smallest eigenvalue: ``|T_m| <= 1``
on ``[b, c]`` and ``T_m`` grows monotonically below ``b``, so the ``k``
largest eigenvalues of ``p(L)`` are the images of the ``k`` smallest of
``L``, in order. ``b`` comes from a rough first run of ARPACK on ``c I -
L`` (relative tolerance 1e-2, a few percent of the second run's products):
by Cauchy interlacing the ``k``-th smallest Ritz value of any subspace is
at least the ``k``-th smallest eigenvalue, so it bounds it whatever the
run's accuracy; its Ritz vectors start the second run.

One-off on an idle 2-vCPU machine (15 pairs, tolerance 1e-10, products
on 2 threads in both; the kNN graphs of the single-cell benchmark, about
25 nonzeros a row): on the 1,000,000-cell graph, where the wanted
eigenvalues crowd (0.0121 to 0.0162) and plain ARPACK restarts through
about 1,000 products, 192 s for ARPACK on ``c I - L`` against 134 s on
``T_6`` and 144 s on ``T_10`` (in another run, with the machine shared,
145 s on ``T_6`` and 179 s on ``T_16``), residuals 5e-12 and 4e-15, the
same eigenvalues to the 7 digits compared; on the 100,000-cell graph,
where ARPACK needs about 700 products, 5.4 s against 6.0 s on ``T_6``
(median of 3): the filter costs a few products more than it saves there. A tighter ``b``
separates more but costs its own rough run: a first run of 25 pairs and 60
vectors brought ``b`` on the 1M graph from 5 to 2.3 times the 15th
eigenvalue in 41 s against 22 s (measured while the machine was shared),
about what the second run then saves.

A large graph is solved in reverse Cuthill-McKee order
(:func:`~bigdr.core.csr_rows.banded`, from :data:`BANDED_MIN_ROWS`), where a
product gathers its entries from cache (1M-cell graph: 77.1 s against 113.2 s
for the whole solve, one-off), and the vectors are given back in the rows'
order.

References
----------
Saad, Y. (1984). Chebyshev acceleration techniques for solving nonsymmetric
eigenvalue problems. Mathematics of Computation 42(166), 567-588.
doi:10.1090/S0025-5718-1984-0736453-8

Zhou, Y. & Saad, Y. (2007). A Chebyshev-Davidson algorithm for large
symmetric eigenproblems. SIAM J. Matrix Anal. Appl. 29(3), 954-971.
doi:10.1137/050630404
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.sparse as sp

from .csr_rows import banded, row_bounds

#: Degree of the Chebyshev polynomial (one-off, the 1M-cell graph: degrees 6 and 10 took 134 and 144 s in
#: one run, 6 and 16 took 145 and 179 s in another: there a higher degree makes more products than it
#: saves steps; the 100k-cell graph: 6.0, 6.0, 6.0 and 5.7 s for 6, 8, 10 and 12, medians of 3, no
#: difference beyond the noise).
DEGREE = 6
#: Graphs of at least this many rows are solved in reverse Cuthill-McKee order (:func:`~bigdr.core.csr_rows.banded`):
#: from here the float64 vector a product gathers from outgrows a core's 2 MiB L2 cache, and a random row
#: order sends most gathers to memory.
BANDED_MIN_ROWS = 1 << 18
#: Relative tolerance of the rough first run whose Ritz values bound the wanted eigenvalues.
BOUND_TOL = 1e-2


class RowSplitProduct:
    """``x -> L x`` for a CSR matrix, rows split over threads (scipy's sparse product releases the GIL).

    The parts share ``L``'s arrays (no copy). :meth:`chebyshev_step` fuses the
    product with the three-term recurrence, each thread writing its own rows.
    """

    def __init__(self, L: Any, threads: int) -> None:
        L = sp.csr_matrix(L)
        self.n = L.shape[0]
        per = max(1, -(-int(L.nnz) // max(threads, 1)))
        bounds = row_bounds(L.indptr, per)
        self.rows = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        self.parts = []
        for a, b in self.rows:
            lo, hi = int(L.indptr[a]), int(L.indptr[b])
            part = (L.data[lo:hi], L.indices[lo:hi], L.indptr[a : b + 1] - lo)
            self.parts.append(sp.csr_matrix(part, shape=(b - a, L.shape[1]), copy=False))
        self.pool = ThreadPoolExecutor(len(self.parts)) if len(self.parts) > 1 else None

    def _each(self, work: Callable[[int, int, Any], None]) -> None:
        if self.pool is None:
            work(*self.rows[0], self.parts[0])
            return
        for future in [self.pool.submit(work, a, b, part) for (a, b), part in zip(self.rows, self.parts)]:
            future.result()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = np.empty(self.n)

        def work(a: int, b: int, part: Any) -> None:
            out[a:b] = part @ x

        self._each(work)
        return out

    def chebyshev_step(self, current: np.ndarray, previous: np.ndarray, centre: float, half: float) -> np.ndarray:
        """``2 (centre I - L) current / half - previous``: the next term of ``T_j((centre I - L) / half)``."""
        out = np.empty(self.n)

        def work(a: int, b: int, part: Any) -> None:
            y = part @ current
            y -= centre * current[a:b]
            y *= -2.0 / half
            y -= previous[a:b]
            out[a:b] = y

        self._each(work)
        return out

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


class DeflatedProduct(RowSplitProduct):
    """:class:`RowSplitProduct` of ``L + shift N N^T`` (``N`` sparse with orthonormal columns)."""

    def __init__(self, L: Any, threads: int, N: Any, shift: float) -> None:
        super().__init__(L, threads)
        self.N, self.NT, self.shift = N, N.T.tocsr(), shift

    def _low_rank(self, x: np.ndarray) -> np.ndarray:
        return self.shift * (self.N @ (self.NT @ x))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return super().__call__(x) + self._low_rank(x)

    def chebyshev_step(self, current: np.ndarray, previous: np.ndarray, centre: float, half: float) -> np.ndarray:
        return super().chebyshev_step(current, previous, centre, half) - (2.0 / half) * self._low_rank(current)


def filtered_lanczos(
    L: Any, k: int, start: np.ndarray, tol: float, maxiter: int | None, threads: int, deflate: Any = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """The ``k`` smallest eigenpairs of a sparse symmetric positive semi-definite ``L``, ascending.

    ARPACK (``eigsh``, ``which="LA"``, tolerance ``tol`` relative to the
    eigenvalues of ``p(L)``) on ``T_m`` of ``L`` mapped from ``[b, c]`` to
    ``[-1, 1]`` (module docstring); ``start`` starts the rough first run
    (random: a null vector alone spans an invariant subspace), the sum of
    its Ritz vectors the second. Returns the eigenvalues (Rayleigh
    quotients), the eigenvectors and the largest residual ``|L v - mu v|``.
    ``deflate`` (sparse, orthonormal columns ``N``): the pairs of
    ``L + c N N^T`` instead, where ``N`` lies at the top of the spectrum
    (:func:`~bigdr.core.sparse_eigen.smallest_eigh`'s known null vectors).
    """
    from scipy.sparse.linalg import LinearOperator, eigsh

    from .csr_rows import max_abs_row_sum

    n = L.shape[0]
    c = max_abs_row_sum(L)
    order = None
    if n >= BANDED_MIN_ROWS:  # solved in an order whose products gather from cache (csr_rows.banded)
        L, order = banded(L)
        start = start[order]
        deflate = None if deflate is None else sp.csr_matrix(deflate)[order]
    product = RowSplitProduct(L, threads) if deflate is None else DeflatedProduct(L, threads, deflate, c)
    try:
        # A rough first run on c I - L: its k Ritz values bound the wanted eigenvalues from above
        # (interlacing), whatever its accuracy; its Ritz vectors start the second run.
        # scipy's default basis: on the filtered operator the wanted eigenvalues are well separated, so a
        # wider one saves no restarts but is the solve's largest array (one-off, 15 pairs, 2 threads: the
        # 1M-cell graph 70.7 s with 31 vectors against 73.6 s with 45, peak 107 MiB lower; the 100k-cell
        # graph 3.54 s against 3.53 s, medians of 3). Plain ARPACK, before the filter, was faster with 3k.
        ncv = min(n - 1, max(20, 2 * k + 1))
        shifted = LinearOperator((n, n), matvec=lambda x: c * x - product(x), dtype=np.float64)
        rough, U = eigsh(shifted, k=k, which="LA", v0=start, tol=BOUND_TOL, ncv=ncv)
        bound = float(c - rough.min())
        # A bound of 0 (k null vectors: k components) still needs b > 0 to amplify them.
        b = max(bound, 1e-6 * c)
        centre, half = (c + b) / 2, (c - b) / 2
        if b >= centre:  # the wanted eigenvalues spread over half the spectrum: no polynomial separates them
            degree, centre, half = 1, c, 1.0
        else:
            degree = DEGREE

        def apply(x: np.ndarray) -> np.ndarray:
            # T_j((centre - L) / half): positive and increasing below b, within [-1, 1] on [b, c]
            previous, current = x, (centre * x - product(x)) / half
            for _ in range(degree - 1):
                previous, current = current, product.chebyshev_step(current, previous, centre, half)
            return current

        v0 = U.sum(axis=1)
        del U  # n x k: not kept through the second run
        _, V = eigsh(
            LinearOperator((n, n), matvec=apply, dtype=np.float64),
            k=k,
            which="LA",
            v0=v0,
            tol=tol,
            ncv=ncv,
            maxiter=maxiter,
        )
        mu, norms = np.empty(k), np.empty(k)
        for j in range(k):  # Rayleigh quotients and residuals a column at a time (no second n x k array)
            Lv = product(V[:, j])
            mu[j] = V[:, j] @ Lv
            norms[j] = np.linalg.norm(Lv - mu[j] * V[:, j])
    finally:
        product.close()
    if order is not None:  # back to the caller's rows
        V[order] = V.copy()
    rank = np.argsort(mu)
    residual = float(norms.max())
    return mu[rank], V[:, rank], residual
