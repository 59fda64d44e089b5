"""The Gaussian model behind PCA and factor analysis: covariance, precision and likelihood of rows.

Both methods fit ``Cov x = W^T W + Psi`` with ``W`` a ``k x p`` loading
matrix and ``Psi`` diagonal: factor analysis with a free diagonal,
probabilistic PCA (Tipping & Bishop 1999) with ``Psi = sigma^2 I`` and
``W = diag(sqrt(lambda_j - sigma^2)) V``. Each estimator says what its ``W``
and ``Psi`` are (``_latent_model``); the covariance, its inverse by the matrix
inversion lemma (a ``k x k`` inverse) and the row log-likelihoods, computed
blockwise, are here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np

from ..base import wants_numpy
from ..core.factor import precision, row_loglike
from ..runtime.compute import compute


class LatentGaussianMixin:
    """``get_covariance``, ``get_precision``, ``score_samples`` and ``score`` of a fitted ``W^T W + Psi`` model."""

    mean_: np.ndarray

    if TYPE_CHECKING:  # supplied by the estimator and by BigdrEstimator

        def _latent_model(self) -> tuple[np.ndarray, np.ndarray]:
            """``W`` (k, p) and the diagonal of ``Psi`` (p,), float64."""

        def _score_rows(self, X: Any) -> da.Array:
            """``X`` checked against the fitted width, as a dask array of row blocks."""

        def _check_fitted(self) -> None: ...

    def get_covariance(self) -> np.ndarray:
        """The model's covariance ``W^T W + Psi`` (p, p)."""
        self._check_fitted()
        W, psi = self._latent_model()
        cov = W.T @ W
        cov.flat[:: len(cov) + 1] += psi
        return cov

    def get_precision(self) -> np.ndarray:
        """The inverse of :meth:`get_covariance`, by the matrix inversion lemma (a k x k inverse)."""
        self._check_fitted()
        return precision(*self._latent_model())

    def score_samples(self, X: Any) -> np.ndarray | da.Array:
        """Each row's log-likelihood under the model, ``log N(x; mean_, get_covariance())``, blockwise.

        Sparse rows are densified one block at a time.
        """
        self._check_fitted()
        Xd = self._score_rows(X)
        P = self.get_precision()
        logdet = float(np.linalg.slogdet(P)[1])
        scores = da.map_blocks(
            _block_loglike,
            Xd,
            mean=np.asarray(self.mean_, dtype=np.float64),
            precision_matrix=P,
            logdet=logdet,
            drop_axis=1,
            dtype=np.float64,
            meta=np.empty((0,), dtype=np.float64),
        )
        return compute(scores)[0] if wants_numpy(X) else scores

    def score(self, X: Any, y: Any = None) -> float:
        """The mean log-likelihood of the rows of ``X``."""
        scores = self.score_samples(X)
        return float(compute(scores.mean())[0] if isinstance(scores, da.Array) else scores.mean())


def _block_loglike(block: Any, mean: np.ndarray, precision_matrix: np.ndarray, logdet: float) -> np.ndarray:
    rows = block.toarray() if hasattr(block, "toarray") else block  # a bounded row block of a sparse store
    return row_loglike(np.asarray(rows, dtype=np.float64) - mean, precision_matrix, logdet)
