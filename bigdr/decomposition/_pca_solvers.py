"""PCA's solvers: their names (bigdr's and scikit-learn's), the rule that chooses one, and their memory.

Every solver computes the same components; they differ in passes over the
data, memory and the accuracy of small components (docs/pca.md has the
measurements behind the rule). scikit-learn's names are routes here:
``"full"`` (an exact SVD) is ``"tsqr"`` (the R factor keeps singular values
down to about 1e-15 of the largest, as LAPACK's SVD does), ``"covariance_eigh"``
is ``"covariance"``, and ``"arpack"`` (an iterative solver for the leading
components) is ``"randomized"`` with its accuracy target.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import dask.array as da
import numpy as np

from ..base import chunk_bytes_of
from ..blockwise.linalg import krylov_bytes, krylov_plan
from ..blockwise.reduce import merged_bytes
from ..core.eigen import Eigenpairs, qr_eigh, scatter_eigh
from ..core.stats import QRState, merge_moments, merge_qr, qr_block, scatter_moments
from ..runtime.memory import OVERHEAD, Part, memory_limit, streaming

SOLVERS = ("auto", "covariance", "tsqr", "samples", "randomized")
#: scikit-learn's solver names -> the route that computes what they compute.
SKLEARN_ROUTES = {"full": "tsqr", "covariance_eigh": "covariance", "arpack": "randomized"}
#: The solvers that work on sparse rows without densifying them (implicit centring).
SPARSE_SOLVERS = ("covariance", "randomized")
#: ``power_iteration_normalizer`` values (scikit-learn's); the Krylov basis is orthonormalised by QR whatever the value.
NORMALIZERS = ("auto", "QR", "LU", "none")

#: ``auto`` uses the exact covariance merge up to this width while its p x p states fit the memory limit, and
#: block Krylov above: the eigendecomposition grows as p^3 (17 s at 5,000 features on one core; docs/pca.md).
MAX_COVARIANCE_FEATURES = 4096
#: ``auto`` uses the n x n Gram route when n < p and the n x n matrix is at
#: most about 3 GiB.
MAX_SAMPLES_GRAM = 20_000
#: Memory model (calibrated by benchmarks/bench_memory.py): row blocks held per
#: worker thread in a pass, and scatter matrices alive in the merge tree.
STREAM_COPIES = 2


# Block kernels take the block's first row so a NaN/Inf error names the row in the data.
def _qr_of(block: np.ndarray, first_row: int) -> QRState:
    return qr_block(block)


#: solver -> (block kernel, merge, eigensolver of the merged state)
MERGEABLE: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Eigenpairs]]] = {
    "covariance": (scatter_moments, merge_moments, scatter_eigh),
    "tsqr": (_qr_of, merge_qr, qr_eigh),
}


def route(svd_solver: str) -> str:
    """bigdr's solver for a name of either library."""
    return SKLEARN_ROUTES.get(svd_solver, svd_solver)


def covariance_fits(p: int, sparse: bool) -> bool:
    """Whether ``auto`` takes the exact covariance route: p <= 4096 and its p x p states within the limit."""
    if p > MAX_COVARIANCE_FEATURES:
        return False
    limit, _ = memory_limit()
    return limit is None or merged_bytes(p, p, sparse) + OVERHEAD <= limit


def choose_solver(svd_solver: str, n: int, p: int, sparse: bool, n_components: Any, scale: bool) -> str:
    """The route PCA takes for data of shape (n, p); a clear error where the asked solver cannot run."""
    solver = route(svd_solver)
    if sparse:
        if solver not in ("auto", *SPARSE_SOLVERS):
            raise TypeError(
                f'PCA only support sparse inputs with the "arpack" and "covariance_eigh" solvers, while '
                f'"{svd_solver}" was passed: svd_solver={svd_solver!r} needs dense rows. Sparse input is centred '
                f"implicitly by 'covariance' (exact, p x p; scikit-learn's 'covariance_eigh') or 'randomized' "
                f"(wide data; scikit-learn's 'arpack'); 'auto' chooses."
            )
        if solver != "auto":
            return solver
        exact = covariance_fits(p, sparse) or n_components in ("mp-whitened", "mle")  # these need every eigenvalue
        return "covariance" if exact else "randomized"
    if solver != "auto":
        return solver
    if n_components == "mp-whitened":  # needs the p x p covariance, whatever n is
        if p > MAX_COVARIANCE_FEATURES:
            raise ValueError(
                f"n_components='mp-whitened' needs the {p} x {p} covariance; it takes at most "
                f"{MAX_COVARIANCE_FEATURES} features. Use n_components='mp' or an int."
            )
        return "covariance"
    if n < p and n <= MAX_SAMPLES_GRAM and not scale:
        return "samples"
    if covariance_fits(p, sparse) or n_components == "mle":  # "mle" needs every eigenvalue
        return "covariance"
    return "randomized"


def solver_memory(
    solver: str, Xd: da.Array, n_components: Any, n_oversamples: int, tol: float, max_iter: Any, n_iter: int
) -> dict[str, Part]:
    """The memory parts of one PCA fit by ``solver`` (``tol``, ``max_iter``, ``n_iter``: the randomized
    solver's, as :func:`~bigdr.blockwise.linalg.krylov_plan` takes them)."""
    n, p = Xd.shape
    sparse = hasattr(Xd._meta, "tocsr")
    # A read block, its centred copy for transform and the output in flight per thread.
    parts = {"stream": streaming(chunk_bytes_of(Xd), STREAM_COPIES)}
    if solver in ("covariance", "samples"):
        parts["states"] = Part(merged_bytes(p, p, sparse), "scatter matrices being merged", "svd_solver")
    if solver == "tsqr":
        parts["states"] = Part(merged_bytes(p, p) + 2 * chunk_bytes_of(Xd), "R factors and QR scratch", "")
    if solver == "samples":
        parts["gram"] = Part(3 * n * n * 8, "the n x n Gram matrix and its eigensolver", "svd_solver", "gram")
    if solver == "randomized":  # no p x p matrix: the p x (k + oversamples) products merged over row blocks
        wide = min(int(n_components if isinstance(n_components, numbers.Integral) else 0) + n_oversamples, p, n)
        block, passes = krylov_plan(Xd, wide, tol, max_iter, n_iter)
        parts["sketch"] = Part(merged_bytes(p, block), "randomized sketches", "n_components")
        parts["krylov"] = Part(krylov_bytes(p, block, passes), "the Krylov basis and its products", "max_iter")
    return parts
