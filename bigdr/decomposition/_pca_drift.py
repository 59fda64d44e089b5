"""PCA's drift score and its threshold, measured on a uniform sample of the rows fitted.

A row's score is its squared reconstruction error ``Q = |x_c|^2 - |x_c V^T|^2``
(Hotelling's ``T^2 = sum y_j^2 / lambda_j`` when no variance is discarded).
Its threshold is the 99th percentile of the score over a uniform sample of the
training rows: up to :data:`DRIFT_SAMPLE_ROWS` rows drawn by the fit's first
pass as it reads them (:func:`bigdr.blockwise.sampling.sample_rider`), so
nothing is read for it, and merged batch by batch by ``partial_fit``.

Box's (1954) ``g chi2(h)`` approximation from the discarded eigenvalues holds
for Gaussian rows only: on 100,000 single-cell log-count rows (cells of every
size, a heavy-tailed Q), 38% of the training rows lay beyond its "99th
percentile", so every batch from the training data itself was flagged. It
remains the threshold of models saved before the sample, and of data too wide
for :data:`MIN_DRIFT_SAMPLE` rows to fit :data:`DRIFT_SAMPLE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask.array as da
import numpy as np

from ..blockwise.reduce import Rider
from ..blockwise.sampling import merge_samples, sample_rider
from ..core.drift import chi2_threshold, empirical_threshold, residual_threshold
from ..core.projection import project_and_score
from ..io.sparse import SPARSE_CHUNK_NNZ

#: Most training rows the threshold is measured on: about 20 lie beyond it, and the fraction of
#: training rows beyond it is then 1% +- 0.22% (binomial).
DRIFT_SAMPLE_ROWS = 2_000
#: Most bytes the sample holds (it is kept with a mergeable model, for partial_fit).
DRIFT_SAMPLE_BYTES = 32 << 20
#: Fewest rows worth a measured threshold; wider data keep Box's approximation.
MIN_DRIFT_SAMPLE = 500
#: The sample's private attributes, kept (and saved) with mergeable models.
SAMPLE_ATTRIBUTES = ("_drift_keys", "_drift_index", "_drift_rows")


def sample_size(Xd: da.Array) -> int:
    """Rows of the drift sample for rows like those of ``Xd`` (0: too wide, Box's approximation instead)."""
    p = Xd.shape[1]
    if hasattr(Xd._meta, "tocsr"):
        if len(Xd.chunks[0]) == 1:  # one block (below SPARSE_CHUNK_NNZ nonzeros): a sample is smaller still
            return DRIFT_SAMPLE_ROWS
        # blocks of about SPARSE_CHUNK_NNZ nonzeros, 12 bytes each
        row_bytes = 12 * min(p, SPARSE_CHUNK_NNZ / max(1.0, float(np.median(Xd.chunks[0]))))
    else:
        row_bytes = p * Xd.dtype.itemsize
    size = int(min(DRIFT_SAMPLE_ROWS, DRIFT_SAMPLE_BYTES // max(row_bytes, 1)))
    return size if size >= MIN_DRIFT_SAMPLE else 0


class ResidualDriftMixin:
    """The drift measure of :class:`~bigdr.decomposition.PCA` (see the module)."""

    # Attributes the mixin reads; PCA sets them.
    n_components_: int
    n_samples_seen_: int
    n_features_in_: int
    spectrum_: np.ndarray
    noise_variance_: float
    mean_: np.ndarray
    components_: np.ndarray
    explained_variance_: np.ndarray
    whiten: bool
    seed_: int
    _check_input: Callable[..., da.Array]

    def _drift_sampler(self, Xd: da.Array, offset: int = 0) -> Rider | None:
        """The rider that draws the drift sample in the fit's first pass (None: too wide to sample)."""
        size = sample_size(Xd)
        return sample_rider(size, getattr(self, "seed_", 0), offset, rows=Xd.shape[0]) if size else None

    def _drift_from_sample(self, sample: Any, keep: bool, merge: bool = False) -> None:
        """Set ``drift_threshold_`` from a drift sample (``(keys, index, rows)``; None: Box's rule).

        ``merge``: join it with the sample kept from earlier batches first; ``keep``: keep the result
        (a mergeable model, for ``partial_fit``). Without components yet (one row seen), only kept.
        """
        kept = tuple(self.__dict__.pop(name, None) for name in SAMPLE_ATTRIBUTES)
        self.__dict__.pop("drift_threshold_", None)
        if sample is None:
            return
        if merge and kept[0] is not None:
            sample = merge_samples(kept, sample, max(len(kept[0]), len(sample[0])))
        if keep:
            self.__dict__.update(zip(SAMPLE_ATTRIBUTES, sample))
        if hasattr(self, "components_"):
            _, name = self._drift_rule()
            scores = project_and_score(sample[2], **self._score_arguments(residual=name == "reconstruction error"))
            self.drift_threshold_ = empirical_threshold(scores[:, -1])

    @staticmethod
    def _split(state: Any, sampler: Rider | None) -> tuple[Any, Any]:
        """A reduction's state and the drift sample it carried (None without a sampler)."""
        return (state, None) if sampler is None else state

    def _drift_rule(self) -> tuple[float, str]:
        k = self.n_components_
        rank = min(self.n_samples_seen_, self.n_features_in_)
        discarded = self.spectrum_[k:].astype(np.float64)
        if len(discarded) < rank - k:  # randomized: only the leading variances are known
            discarded = np.full(rank - k, self.noise_variance_)
        name = "reconstruction error" if discarded.sum() > 0 else "Hotelling T^2"
        measured = self.__dict__.get("drift_threshold_")
        if measured is not None:
            return float(measured), name
        return (residual_threshold(discarded) if discarded.sum() > 0 else chi2_threshold(k)), name

    def _score_arguments(self, residual: bool) -> dict[str, Any]:
        return {
            "mean": self.mean_,
            "components": self.components_,
            "variances": self._whitening_scale() ** 2 if self.whiten else self.explained_variance_,
            "whiten": self.whiten,
            "residual": residual,
            "scale": np.asarray(getattr(self, "scale_", np.ones(self.n_features_in_)), dtype=np.float64),
        }

    def _embed_and_score(self, X: Any) -> da.Array:
        Xd = self._check_input(X, "X", self.n_features_in_)
        _, name = self._drift_rule()
        return da.map_blocks(
            project_and_score,
            Xd,
            **self._score_arguments(residual=name == "reconstruction error"),
            chunks=(Xd.chunks[0], (self.n_components_ + 1,)),
            dtype=Xd.dtype,
            meta=np.empty((0, 0), dtype=Xd.dtype),
        )

    def _whitening_scale(self) -> np.ndarray:  # floored at epsilon, as scikit-learn: rank-deficient data stay finite
        var = np.asarray(self.explained_variance_)
        return np.maximum(np.sqrt(var.astype(np.float64)), np.finfo(var.dtype).eps)
