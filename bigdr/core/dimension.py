"""Intrinsic dimension from neighbour distances (Levina & Bickel 2004).

For a row with neighbour distances ``T_1 <= ... <= T_k``, the maximum
likelihood estimate of the dimension of the manifold around it is

.. math::  \\hat m(x) = \\Big[\\frac{1}{k-1} \\sum_{j=1}^{k-1} \\log \\frac{T_k(x)}{T_j(x)}\\Big]^{-1},

and the estimates are pooled by averaging their inverses (MacKay &
Ghahramani 2005), which removes most of the upward bias of averaging the
estimates themselves. Sampling noise orthogonal to the manifold adds to the
estimate at the smallest scales, so it errs on the high side; callers use it
to size samples, where that is the safe side.

References
----------
Levina, E. & Bickel, P. J. (2004). Maximum likelihood estimation of
intrinsic dimension. Advances in Neural Information Processing Systems 17.

MacKay, D. J. C. & Ghahramani, Z. (2005). Comments on "Maximum likelihood
estimation of intrinsic dimension" by E. Levina and P. Bickel.
"""

from __future__ import annotations

import numpy as np


def intrinsic_dimension(distances: np.ndarray) -> float:
    """The pooled Levina-Bickel estimate from ``(n, k)`` ascending neighbour distances (self excluded).

    Rows with a zero distance (duplicates) are left out; ``nan`` when no row
    is usable or ``k < 2``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial import cKDTree
    >>> rng = np.random.default_rng(0)
    >>> X = np.zeros((5000, 6)); X[:, :3] = rng.uniform(size=(5000, 3))
    >>> dist, _ = cKDTree(X).query(X, 11)
    >>> round(intrinsic_dimension(dist[:, 1:]))
    3
    """
    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] < 2:
        return float("nan")
    d = d[(d[:, 0] > 0) & np.isfinite(d).all(axis=1)]
    if not len(d):
        return float("nan")
    inverse = np.log(d[:, -1:] / d[:, :-1]).mean(axis=1)  # 1 / m(x)
    mean_inverse = float(inverse.mean())
    return 1.0 / mean_inverse if mean_inverse > 0 else float("nan")


#: Rows a kNN graph of a 2-D manifold needs (with 10 neighbours) before its
#: shortest paths and kernels resolve the manifold, and the factor each
#: further dimension multiplies that by (the curse of dimensionality: the
#: rows within a neighbourhood's radius fall as ``r**m``). Calibrated on
#: products of swiss rolls (``benchmarks/bench_safety.py``).
NEED_BASE = 2_000
NEED_GROWTH = 10.0


def rows_needed(dimension: float, n_neighbors: int = 10) -> int:
    """Graph rows that resolve a manifold of ``dimension`` with ``n_neighbors`` neighbours per row.

    ``NEED_BASE * NEED_GROWTH ** (m - 2) * 10 / k`` for ``m >= 2``; 0 when the
    dimension is unknown.

    Examples
    --------
    >>> rows_needed(2.0), rows_needed(4.0), rows_needed(4.0, 20)
    (2000, 200000, 100000)
    """
    if not np.isfinite(dimension):
        return 0
    return int(round(NEED_BASE * NEED_GROWTH ** (max(float(dimension), 2.0) - 2.0) * 10.0 / max(int(n_neighbors), 1)))


#: A default sample is drawn again, larger, when the manifold asks for more than this many times its rows.
SAMPLE_GROWTH = 1.25


def grown_sample(dimension: float, n_neighbors: int, size: int, n: int, cap: int) -> int:
    """The size a default sample of ``size`` of ``n`` rows should have for a manifold of ``dimension``.

    ``size`` unless :func:`rows_needed` asks for more than ``SAMPLE_GROWTH``
    times it; then that many rows, at most ``cap`` and ``n``.

    Examples
    --------
    >>> grown_sample(2.0, 10, 100_000, 10**7, 10**6), grown_sample(4.0, 10, 100_000, 300_000, 10**6)
    (100000, 200000)
    """
    needed = rows_needed(dimension, n_neighbors)
    return min(n, needed, cap) if needed > SAMPLE_GROWTH * size else size


def warn_if_sparse(dimension: float, n_neighbors: int, size: int, what: str, fix: str, stacklevel: int = 2) -> None:
    """Warn (``SparseGraphWarning``) when a sample of ``size`` rows is too small for the manifold, with the figure."""
    import warnings

    from ..exceptions import SparseGraphWarning

    needed = rows_needed(dimension, n_neighbors)
    if needed > size:
        warnings.warn(
            f"The data look {dimension:.1f}-dimensional (Levina-Bickel estimate from the graph); {what} with "
            f"n_neighbors={n_neighbors} are too few for that (about {needed} rows needed), so the embedding will be "
            f"poor. Raise {fix} or n_neighbors.",
            SparseGraphWarning,
            stacklevel=stacklevel + 1,
        )
