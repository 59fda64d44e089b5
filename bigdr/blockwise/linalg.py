"""Linear algebra written as dask graphs: each product is one pass over the data.

These build the operators and passes that the in-memory eigensolvers of
:mod:`bigdr.core.eigen` work on; results follow its convention
(:class:`~bigdr.core.eigen.Eigenpairs`: vectors as columns, signs fixed).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import dask.array as da
import numpy as np
import scipy.linalg
from dask import delayed

from ..core.eigen import Eigenpairs, block_krylov_eigh, flip_signs
from ..core.sparse_products import centred_normal_product
from ..io.sparse import SPARSE_CHUNK_NNZ, SPARSE_NNZ_BYTES
from ..runtime.compute import compute, parallelism, persist
from ..runtime.memory import available_memory
from .reduce import (
    JoinedRider,
    Rider,
    column_statistics,
    column_statistics_rider,
    tree_reduce,
    tree_reduce_carrying,
)

#: Krylov block of the accuracy-driven solver on sparse data that stays in memory between passes: a pass
#: then costs its products, which grow with the block's width, and narrow blocks reach the same accuracy in
#: fewer products (100,000 x 10,000 log-counts, 50 components to 1e-6 rad: 18 passes of 20 columns against
#: 12 of 60, 360 products of a column against 720; docs/pca.md). Data larger than half the available memory
#: is read from disk on every pass, and a dense pass costs about the same at 20 columns as at 60 (30,000 x
#: 20,000 float32: 228 s against 118 s in all, one-off), so both keep the wide block and its fewer passes.
CACHED_BLOCK = 20


#: Bytes per worker thread up to which sparse data is read once and held in memory for all the passes of
#: :func:`scatter_eig_with_columns` (:func:`held_for_passes`): what a streaming pass holds of one row block
#: in flight, so holding the whole matrix takes no more memory than the estimate gives a pass. Reading it on
#: every pass cost 0.07-0.1 s a pass beyond the products (100,000 x 10,000 log-counts from an ``.h5ad``
#: file, 2 threads, one-off: a PCA(50) pass 0.22 s streamed against 0.145 s held, 18 passes).
HELD_BYTES_PER_THREAD = SPARSE_CHUNK_NNZ * SPARSE_NNZ_BYTES


#: Largest ratio of ``n |m|^2`` to the centred scatter's trace at which a product made uncentred is centred
#: afterwards (:func:`randomized_scatter_eig` with ``mean=None``): about this many times the rounding of the
#: float64 sums cancels into the centred product's (1e-12 relative at most). Sparse log-counts: about 0.1.
CANCELLATION = 1e4


def krylov_plan(
    X: da.Array, wide: int, tol: float | None, max_iter: Any, n_iter: int, wide_passes: int = 30
) -> tuple[int, int]:
    """The Krylov block's columns and the most passes of :func:`randomized_scatter_eig` on ``X``.

    ``wide`` is scikit-learn's sketch, ``n_components + n_oversamples``.
    Without a ``tol`` (None or 0): the wide block, ``n_iter`` passes. With
    one: :data:`CACHED_BLOCK` columns on sparse data that stays cached
    between passes (at most half the available memory), else ``wide``; at most
    ``max_iter`` passes (at least ``n_iter``), or with ``max_iter`` None or
    ``"auto"`` as many as fill the Krylov space of ``wide_passes`` passes
    of the wide block (so the same memory)."""
    if not tol:
        return wide, n_iter
    block = wide
    if wide > CACHED_BLOCK and hasattr(X._meta, "tocsr"):
        block = CACHED_BLOCK if 2 * stored_bytes(X) <= available_memory() else wide
    if max_iter is None or max_iter == "auto":
        return block, (wide_passes + 1) * wide // block - 1
    return block, max(int(max_iter), n_iter)


def stored_bytes(X: da.Array) -> int:
    """Most bytes the sparse ``X`` takes in memory: its blocks of at most ``SPARSE_CHUNK_NNZ`` nonzeros each,
    a value and an int32 column index per nonzero."""
    return SPARSE_CHUNK_NNZ * (X.dtype.itemsize + 4) * X.numblocks[0] * X.numblocks[1]


def held_for_passes(X: da.Array) -> da.Array:
    """Sparse ``X`` read once and held in memory for the passes that follow, when it is small; else ``X``.

    Small: at most :data:`HELD_BYTES_PER_THREAD` for each worker thread
    (:func:`stored_bytes`), which is no more than the row blocks a streaming
    pass holds at once, so the memory estimate of a fit stands. The blocks are
    then read, checked and made canonical once, not on every pass; on a
    cluster they stay in the workers' memory. Dense data and larger sparse
    data are read on every pass (from the page cache while it holds them).
    """
    if not hasattr(X._meta, "tocsr") or stored_bytes(X) > HELD_BYTES_PER_THREAD * parallelism():
        return X
    return persist(X)


def randomized_scatter_eig(
    X: da.Array,
    mean: np.ndarray | None,
    n_components: int,
    n_oversamples: int = 10,
    n_iter: int = 4,
    random_state: Any = None,
    tol: float | None = None,
    *,
    max_iter: int | str | None = 50,
    criterion: str = "residual",
    scale: np.ndarray | None = None,
    rider: Rider | None = None,
) -> Eigenpairs:
    """Top eigenpairs of the scatter of ``X - mean`` by randomized block Krylov iteration.

    :func:`~bigdr.core.eigen.block_krylov_eigh` applied to ``A = Xc^T Xc`` with
    ``Xc = X - mean`` formed block by block inside the graph (the centred
    matrix is never stored): each product ``Xc^T (Xc Z)`` is one pass over
    ``X``, which may be chunked along both axes. The test matrix is drawn
    from ``random_state`` in the driver, so the result does not depend on
    chunking or scheduler. Eigenvalues are clipped at 0; vectors are (p, k).
    With ``tol``, iteration goes on past ``n_iter`` (up to ``max_iter``)
    until the ``n_components`` pairs meet it by ``criterion``: their largest
    relative residual, or the estimated angle to the exact eigenvectors
    (both reported, with the passes made).
    A sparse ``X`` is centred implicitly and never densified. With
    ``scale`` (one value per feature), the operator is ``D^-1 Xc^T Xc D^-1``,
    ``D = diag(scale)``, applied as ``D^-1 (Xc^T (Xc (D^-1 Z)))``: the scaled
    matrix is never formed either. ``rider``: a row-block reduction of ``X``
    run in the first product's pass (on sparse blocks, the same reads: one
    pass fewer), its value set in ``rider.value``. ``mean=None`` (sparse
    ``X``, ``rider`` the column statistics, no ``scale``): the mean is the
    rider's, and the first product, made before it is known, is centred
    after: ``Xc^T Xc Z = X^T X Z - n m (m^T Z)``; when ``n |m|^2`` exceeds
    :data:`CANCELLATION` times the scatter's trace, too many digits would
    cancel and the first product is made again, centred.

    The Krylov space grows by the block :func:`krylov_plan` chooses, which
    also fills in ``max_iter=None``.
    """
    n, p = X.shape
    wide = int(min(n_components + n_oversamples, p, n))
    tol = tol or None
    width, max_iter = krylov_plan(X, wide, tol, max_iter, n_iter)
    sparse = hasattr(X._meta, "tocsr")
    if mean is None and (not sparse or rider is None or scale is not None):
        raise ValueError("mean=None needs sparse X, the column statistics as rider, and no scale.")
    Xc = None if sparse or mean is None else X - mean.astype(X.dtype)

    def apply(Z: np.ndarray) -> np.ndarray:
        nonlocal rider, mean
        if sparse:  # centred implicitly, one pass per product, never densified

            def product(m: np.ndarray, carried: Rider | None = None) -> Any:
                shared = (delayed(Z), delayed(m))
                if carried is None:
                    return tree_reduce(X, centred_normal_product, operator.add, shared=shared)
                return tree_reduce_carrying(X, centred_normal_product, operator.add, carried, shared=shared)

            if rider is None:
                assert mean is not None  # known from the start or from the first pass
                (out,) = compute(product(mean))
            else:  # the first pass also reduces the rider
                ((out, rider.value),) = compute(product(np.zeros(p) if mean is None else mean, rider))
                if mean is None:
                    col, mean = rider.value, rider.value.mean
                    if col.n * float(mean @ mean) <= CANCELLATION * float(np.sum(col.scatter)):
                        out = out - col.n * np.outer(mean, mean @ Z)
                    else:
                        (out,) = compute(product(mean))
                rider = None
        else:
            assert Xc is not None
            graph = Xc.T @ (Xc @ da.from_array(Z, chunks=(X.chunks[1], Z.shape[1])))
            if rider is None:
                (out,) = compute(graph)
            else:  # computed with the first product (dask's blocks may be read twice)
                out, rider.value = compute(graph, tree_reduce(X, rider.kernel, rider.merge, with_offset=True))
                rider = None
        return np.asarray(out, dtype=np.float64)

    if scale is not None:
        unscaled, inverse = apply, 1.0 / np.asarray(scale, dtype=np.float64)[:, None]

        def apply(Z: np.ndarray) -> np.ndarray:
            return inverse * unscaled(inverse * Z)

    eig = block_krylov_eigh(
        apply, p, width, n_iter, random_state, tol=tol, n_check=n_components, max_iter=max_iter, criterion=criterion
    )
    values, vectors = np.clip(eig.values[:n_components], 0, None), eig.vectors[:, :n_components]
    return eig._replace(values=values, vectors=vectors, negative_mass=0.0)


def scatter_eig_with_columns(
    X: da.Array,
    n_components: int,
    n_oversamples: int,
    n_iter: int,
    random_state: Any,
    *,
    centre: bool = True,
    scale: Callable[[Any], np.ndarray] | None = None,
    also: Rider | None = None,
    **kwargs: Any,
) -> tuple[Eigenpairs, Any, np.ndarray | None]:
    """:func:`randomized_scatter_eig` with the column statistics it needs, read in its own passes where it can.

    Returns the eigenpairs, the column statistics (:class:`~bigdr.core.stats.Moments`: count, mean, the
    scatter's diagonal) and the feature scale. ``centre``: about the column means (PCA) or not
    (TruncatedSVD). ``scale``: the per-feature scale as a function of the column statistics, which then
    take a pass of their own first; otherwise they ride the first product pass (sparse data centred
    after it: ``mean=None``). Small sparse data is read once for all the passes (:func:`held_for_passes`).
    ``also``: another reduction carried by the same first pass (its value set
    in ``also.value``). ``kwargs`` go to :func:`randomized_scatter_eig`.
    """
    X = held_for_passes(X)
    zeros = np.zeros(X.shape[1])
    columns = column_statistics_rider(X)
    rider = columns if also is None else JoinedRider(columns, also)
    if scale is None and (hasattr(X._meta, "tocsr") or not centre):
        eig = randomized_scatter_eig(
            X, None if centre else zeros, n_components, n_oversamples, n_iter, random_state, rider=rider, **kwargs
        )
        return eig, columns.value, None
    (state,) = compute(column_statistics(X, also))
    col = state if also is None else state[0]
    if also is not None:
        also.value = state[1]
    factors = None if scale is None else scale(col)
    eig = randomized_scatter_eig(
        X, col.mean if centre else zeros, n_components, n_oversamples, n_iter, random_state, scale=factors, **kwargs
    )
    return eig, col, factors


def krylov_bytes(dim: int, width: int, iterations: int) -> int:
    """Memory of :func:`randomized_scatter_eig`'s Krylov basis and its products after ``iterations``."""
    cols = min(dim, width * (iterations + 1))
    return 2 * dim * cols * 8 + cols * cols * 8


def samples_gram_eig(X: da.Array, mean: np.ndarray) -> Eigenpairs:
    """Eigen-decomposition of the n x n Gram of the centred rows (for n < p), descending.

    ``Xc Xc^T = U diag(lam) U^T`` has the same nonzero eigenvalues as the p x p
    scatter; components follow as ``Xc^T U / sqrt(lam)``: the smaller of the
    two problems is solved.
    """
    Xc = X - mean.astype(X.dtype)
    (K,) = compute(Xc @ Xc.T)
    K = np.asarray(K, dtype=np.float64)
    evals, U = scipy.linalg.eigh((K + K.T) / 2, check_finite=False)
    order = np.argsort(evals)[::-1]
    return Eigenpairs(np.clip(evals[order], 0, None), flip_signs(U[:, order]))


def components_from_samples(X: da.Array, mean: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Right singular vectors ``Xc^T U / sqrt(lam)`` (p, k) for the given left vectors (one pass).

    ``Xc^T u`` has norm ``sqrt(lam)``, so normalising each column is the division.
    """
    Xc = X - mean.astype(X.dtype)
    Ud = da.from_array(U, chunks=(X.chunks[0], U.shape[1]))
    (V,) = compute(Xc.T @ Ud)
    V = np.asarray(V, dtype=np.float64)
    # Directions with (numerically) zero variance are arbitrary; normalise
    # rather than divide by ~0 so they stay finite unit vectors.
    norms = np.linalg.norm(V, axis=0)
    return flip_signs(V / np.where(norms > 0, norms, 1.0)[None, :])


def double_centred_operator(D: da.Array) -> Callable[[np.ndarray], np.ndarray]:
    """``Z -> -1/2 J (D**2) J Z`` with ``D**2`` formed blockwise inside each pass (n x n never stored)."""
    A = D.astype(np.float64) ** 2

    def apply(Z: np.ndarray) -> np.ndarray:
        W = Z - Z.mean(axis=0)
        (U,) = compute(A @ da.from_array(W, chunks=(A.chunks[1], W.shape[1])))
        U = np.asarray(U, dtype=np.float64)
        return -0.5 * (U - U.mean(axis=0))

    return apply
