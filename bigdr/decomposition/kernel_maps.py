"""Kernel PCA's maps of rows, block by block: kernel rows and features forward, kernel ridge back, pre-images.

What a worker needs to place rows with a fitted
:class:`~bigdr.decomposition.KernelPCA` (its out-of-sample extension, apart
from the estimator as :mod:`bigdr.manifold.nystrom` is for the spectral
methods): :class:`KernelMap` (centred kernel rows against the training rows
for the exact method, Nystrom or random Fourier features otherwise),
:func:`feature_state` (the features' scatter in one pass), and the blocks of
``inverse_transform`` (kernel ridge regression) and ``preimage``.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np

from ..blockwise.extension import Extension
from ..blockwise.reduce import tree_reduce
from ..core.kernels import fourier_features, kernel_block, rbf_preimage
from ..core.stats import Moments, merge_moments, moments_block
from ..runtime.compute import compute, shared

#: Rows of a piece placed at once by transform.
PIECE_ROWS = 4_096


class KernelMap(Extension):
    """What a worker needs for kernel PCA's rows: the kernel rule and, when fitted, the projection.

    ``exact``: the centred kernel rows against the training rows times
    ``coef`` (``a_j / sqrt(lambda_j)``). ``nystroem``/``fourier``: the
    features, or with ``components`` set, ``(phi(x) - mean) @ components``.
    Rows may be CSR (:func:`~bigdr.core.kernels.kernel_block` takes them).
    """

    sparse_rows = True

    def __init__(
        self, method: str, kernel: Any, gamma: float, degree: float, coef0: float, params: dict | None, **arrays: Any
    ) -> None:
        self.method, self.kernel, self.gamma, self.degree, self.coef0 = method, kernel, gamma, degree, coef0
        self.params = params
        self.reference: Any = arrays.get("reference")  # training rows (exact) or landmarks (nystroem)
        self.transform_: Any = arrays.get("transform")  # U S^-1/2 (nystroem)
        self.W: Any = arrays.get("W")  # fourier: frequencies and phases
        self.b: Any = arrays.get("b")
        self.column_means: Any = arrays.get("column_means")
        self.total_mean: Any = arrays.get("total_mean")
        self.mean: Any = arrays.get("mean")
        self.components: Any = arrays.get("components")
        last: Any = arrays.get("components")  # the last matrix a row meets gives the width
        if last is None:
            last = arrays["transform"] if method == "nystroem" else arrays["W"]
        super().__init__(last.shape[1], PIECE_ROWS)

    def _kernel(self, rows: np.ndarray, other: np.ndarray) -> np.ndarray:
        if self.kernel == "precomputed":
            return rows.toarray() if hasattr(rows, "toarray") else np.array(rows, dtype=np.float64)
        return kernel_block(rows, other, self.kernel, self.gamma, self.degree, self.coef0, self.params)

    def features(self, rows: np.ndarray) -> np.ndarray:
        if self.method == "nystroem":
            return self._kernel(rows, self.reference) @ self.transform_
        return fourier_features(rows, self.W, self.b)

    def embed_piece(self, rows: np.ndarray) -> np.ndarray:
        if self.method == "exact":
            K = self._kernel(rows, self.reference)
            row_means = K.mean(axis=1, keepdims=True)
            K -= self.column_means  # centred by the training means (scikit-learn's KernelCenterer)
            K -= row_means
            K += self.total_mean
            return K @ self.components
        F = self.features(rows)
        return F if self.components is None else (F - self.mean) @ self.components


def feature_moments(block: np.ndarray, first_row: int, features: KernelMap) -> Moments:
    """The features' moments of one row block, formed piece by piece and merged in the task.

    One state per input block: states per piece of a few thousand rows piled up
    faster than the merge tree took them (2,441 states of 256 x 256 at 10M rows).
    """
    w = features.width
    state = Moments(0, np.zeros(w), np.zeros((w, w)))
    for s in range(0, block.shape[0], features.piece_rows):
        piece = moments_block(features.embed_piece(block[s : s + features.piece_rows]), first_row=first_row + s)
        state = merge_moments(state, piece)
    return state


def feature_state(Xd: da.Array, features: KernelMap) -> Moments:
    """Moments of the features of every row of ``Xd``, in one pass (tree-merged)."""
    return compute(tree_reduce(Xd, feature_moments, merge_moments, with_offset=True, shared=(shared(features),)))[0]


def preimage_block(
    block: np.ndarray, basis: np.ndarray, maps: dict, gamma: float, n_iter: int, tol: float
) -> np.ndarray:
    Y = np.asarray(block, dtype=np.float64)
    if "A" in maps:
        c = Y @ maps["A"].T
        weights = c - c.mean(axis=1, keepdims=True) + 1.0 / len(basis)
    else:
        weights = (maps["mu"][None, :] + Y @ maps["V"].T) @ maps["T"].T
    emb = maps["basis_embedding"]
    d2 = np.einsum("ij,ij->i", Y, Y)[:, None] + np.einsum("ij,ij->i", emb, emb)[None, :] - 2 * Y @ emb.T
    start = basis[np.argmin(d2, axis=1)]
    return rbf_preimage(weights, basis, gamma, start, n_iter, tol)


def ridge_block(block: np.ndarray, reference: np.ndarray, dual: np.ndarray, rule: tuple) -> np.ndarray:
    return kernel_block(block, reference, *rule) @ dual
