"""Rows projected on principal axes with the centring (and scaling) applied implicitly.

``((x - m) / s) V^T`` and each row's squared residual computed from the rows
as they are, so a sparse block is never densified: the kernels behind PCA's
``transform`` and drift scores (:class:`bigdr.decomposition.PCA`).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def feature_scale(scatter_diagonal: np.ndarray, n: int) -> np.ndarray:
    """Standard deviation of each feature from the diagonal of the scatter; 1 where it is 0 (scanpy's rule)."""
    sd = np.sqrt(np.maximum(np.asarray(scatter_diagonal, dtype=np.float64), 0.0) / max(n - 1, 1))
    return np.where(sd > 0, sd, 1.0)


def sparse_projection(block: Any, V: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``(x - m) V = x V - m V`` for a CSR block: the rows are never densified."""
    return np.asarray(block @ V) - shift


def project_and_score(
    block: np.ndarray,
    mean: np.ndarray,
    components: np.ndarray,
    variances: np.ndarray,
    whiten: bool,
    residual: bool,
    scale: np.ndarray,
) -> np.ndarray:
    """Projection of a block and each row's drift score (Q residual, or T^2 when nothing is discarded).

    Rows are centred and divided by ``scale`` implicitly: a sparse block gives
    ``((x - m) / s) V^T = x (V / s)^T - (m / s) V^T`` and ``|(x - m) / s|^2 =
    (x^2).s^-2 - 2 x.(m s^-2) + |m / s|^2``, so it is never densified.
    """
    V = components.T.astype(np.float64) / scale[:, None]
    if hasattr(block, "tocsr"):
        X: Any = block.astype(np.float64)
        Y = np.asarray(X @ V) - mean @ V
        inv2 = scale**-2.0
        sq = np.asarray(X.multiply(X) @ inv2).ravel() - 2 * np.asarray(X @ (mean * inv2)).ravel() + mean**2 @ inv2
    else:
        centred = (np.asarray(block, dtype=np.float64) - mean) / scale
        Y = centred @ (V * scale[:, None])
        sq = np.einsum("ij,ij->i", centred, centred)
    if residual:  # |x_c|^2 - |y|^2: the components are orthonormal; float64 keeps the difference exact enough
        score = sq - np.einsum("ij,ij->i", Y, Y)
    else:
        score = (Y**2 / np.maximum(variances.astype(np.float64), np.finfo(float).tiny)).sum(axis=1)
    if whiten:
        Y = Y / np.sqrt(variances.astype(np.float64))
    return np.column_stack([Y, score]).astype(block.dtype, copy=False)
