"""Classical and landmark multidimensional scaling.

Classical MDS (Torgerson 1952; Gower 1966, principal coordinates): from
squared dissimilarities ``A = D**2`` form ``B = -1/2 J A J`` with ``J = I -
11^T/n``; if ``D`` is Euclidean, ``B`` is the Gram matrix of the centred
points, and the best ``d``-dimensional Euclidean fit is ``V_d
diag(sqrt(lambda_d))`` from the top eigenpairs of ``B``. Negative eigenvalues
mean ``D`` is not Euclidean; they are reported (``negative_mass_``) and never
embedded.

Landmark MDS (de Silva & Tenenbaum 2004): classical MDS on ``m`` landmarks,
then every point placed by triangulation from its squared distances to the
landmarks (:mod:`bigdr.core.triangulation`).
"""

from __future__ import annotations

import warnings
from typing import Any

import dask.array as da
import numpy as np

from .._random import resolve_seed
from .._validation import check_choice, check_int, check_landmark_span, check_n_features
from ..base import DEPRECATED, BigdrEstimator, ExtensionEstimator, chunk_bytes_of, wants_numpy
from ..blockwise.extension import Extension
from ..blockwise.linalg import double_centred_operator
from ..blockwise.sampling import SAMPLE_CHUNK_BYTES as LANDMARK_CHUNK_BYTES
from ..blockwise.sampling import keys_of, row_keys, select_landmarks
from ..core.distances import check_distance_metric, pairwise_distances
from ..core.drift import empirical_threshold
from ..core.eigen import DENSE_EIGH_MAX, Eigenpairs, flip_signs, randomized_eigh, top_eigh
from ..core.triangulation import (
    TRIANGULATE_ROWS,
    Triangulation,
    aligned,
    double_centre,
    landmark_mds,
    rigid_alignment,
    triangulate,
)
from ..decomposition.pca import PCA
from ..exceptions import ConvergenceWarning, NonEuclideanWarning
from ..graph.incremental import reservoir
from ..io import as_array, from_numpy
from ..runtime.compute import compute
from ..runtime.memory import Part, streaming

#: Relative residual the randomized solver iterates to (eigenvalue errors about its square),
#: and the most passes over the matrix it may spend on it.
RESIDUAL_TOL = 1e-6
#: Memory model of landmark MDS (calibrated by benchmarks/bench_memory.py): piece x m arrays per thread.
PLACE_COPIES = 3.3
MAX_PASSES = 50


# -- classical MDS --------------------------------------------------------------
def _dissimilarity_checks(D: da.Array) -> dict:
    """One pass over a square dissimilarity matrix: the numbers validation needs."""
    return {
        "finite": da.isfinite(D).all(),
        "min": D.min(),
        "max": D.max(),
        "asymmetry": abs(D - D.T).max(),
        "diagonal": abs(da.diagonal(D)).max(),
    }


def validate_dissimilarity(D: da.Array) -> None:
    """Raise a ValueError naming the problem when ``D`` is not a dissimilarity matrix."""
    n, m = D.shape
    if n != m:
        raise ValueError(
            f"A precomputed dissimilarity array must be 2-dimensional and square; got {n} x {m}. "
            f"Pass features with metric='euclidean' (or another metric) instead."
        )
    (c,) = compute(_dissimilarity_checks(D))
    if not c["finite"]:
        raise ValueError("The dissimilarity matrix contains NaN or infinity; every pair needs a finite value.")
    if c["min"] < 0:
        raise ValueError(
            f"The dissimilarity matrix has negative entries (min {float(c['min']):.3g}); dissimilarities must be >= 0."
        )
    tol = (1e-5 if D.dtype == np.float32 else 1e-9) * max(float(c["max"]), np.finfo(np.float64).tiny)
    if c["asymmetry"] > tol:
        raise ValueError(
            f"Array must be symmetric: the dissimilarity matrix is not (max |D - D.T| = {float(c['asymmetry']):.3g}); "
            f"symmetrise it, e.g. (D + D.T) / 2."
        )
    if c["diagonal"] > tol:
        raise ValueError(
            f"The dissimilarity matrix has a nonzero diagonal (max {float(c['diagonal']):.3g}); "
            f"a point's dissimilarity to itself must be 0."
        )


def _lazy_pairwise(Xd: da.Array, metric: Any, metric_params: dict | None) -> da.Array:
    """All pairwise distances of the rows as a lazy n x n dask array (never stored)."""
    if len(Xd.chunks[1]) != 1:
        Xd = Xd.rechunk({1: -1})
    return da.blockwise(
        pairwise_distances,
        "ij",
        Xd,
        "ik",
        Xd,
        "jk",
        metric,
        None,
        metric_params,
        None,
        concatenate=True,
        dtype=np.float64,
    )


class ClassicalMDS(BigdrEstimator):
    """Classical (Torgerson) MDS, also called principal coordinates analysis.

    Parameters
    ----------
    n_components : int
        Coordinates of the embedding.
    metric : str or callable
        ``"precomputed"``: ``X`` is an n x n dissimilarity matrix (numpy, dask,
        zarr), checked and processed blockwise. ``"euclidean"`` on features:
        classical MDS of Euclidean distances *is* PCA (the double-centred
        squared distances are the Gram matrix of the centred rows), so the
        embedding is computed by :class:`bigdr.PCA` in one pass, never
        forming n x n. Any other metric name of ``scipy.spatial.distance.cdist``
        or a function ``f(A, B)``: distances formed block by block inside
        each pass, never stored (n x n work per pass: moderate n only).
    metric_params : dict, optional
        Keyword arguments of the metric.
    n_oversamples, n_iter : int
        Randomized eigensolver for large dissimilarity matrices not in memory
        (more than 2000 rows, given as a dask or zarr array): subspace width
        ``n_components + n_oversamples`` and at least ``n_iter`` power
        iterations, continued until the relative residual of every kept
        pair is below 1e-6 (at most 50 passes; a ``ConvergenceWarning`` with
        the residual otherwise). A numpy matrix is solved exactly (LAPACK up
        to 2000 rows, ARPACK above).
    random_state : int or None
        Seed of the randomized eigensolver (the seed used is kept in ``seed_``).

    Attributes
    ----------
    embedding_ : ndarray (n, n_components)
        Set when ``X`` is in memory (numpy).
    eigenvalues_ : ndarray (n_components,)
        Leading eigenvalues of ``-1/2 J D**2 J``; the squared norms of the
        embedding columns.
    negative_mass_ : float
        ``sum |lambda_neg| / sum |lambda|``: 0 for Euclidean dissimilarities.
        Over the whole spectrum when it was computed (``spectrum_complete_``),
        else over the ``n_components + n_oversamples`` eigenvalues of largest
        magnitude.
    spectrum_complete_ : bool
    eigen_residual_ : float
        Largest relative residual ``|B v - lambda v| / |lambda|`` of the kept
        pairs (0 for the exact solvers).
    n_features_in_ : int

    Notes
    -----
    Signs: the largest-magnitude entry of each eigenvector (embedding column)
    is positive, as in scikit-learn's ``ClassicalMDS``, on every route. On
    lazy input, ``fit`` computes no embedding and ``fit_transform`` one pass
    for the k signs.

    References
    ----------
    Torgerson, W. S. (1952). Multidimensional scaling: I. Theory and method.
    Psychometrika 17, 401-419. doi:10.1007/BF02288916

    Gower, J. C. (1966). Some distance properties of latent root and vector
    methods used in multivariate analysis. Biometrika 53(3-4), 325-338.
    doi:10.1093/biomet/53.3-4.325

    de Silva, V. & Tenenbaum, J. B. (2004). Sparse multidimensional scaling
    using landmark points. Technical report, Stanford University.

    Examples
    --------
    >>> import numpy as np
    >>> import bigdr
    >>> X = np.random.default_rng(0).standard_normal((50, 4))
    >>> D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    >>> Y = bigdr.ClassicalMDS(2, metric="precomputed").fit_transform(D)
    >>> Y.shape
    (50, 2)
    """

    def __init__(
        self,
        n_components: int = 2,
        metric: Any = "euclidean",
        metric_params: dict | None = None,
        n_oversamples: int = 10,
        n_iter: int = 4,
        random_state: int | None = 0,
    ) -> None:
        self.n_components = n_components
        self.metric = metric
        self.metric_params = metric_params
        self.n_oversamples = n_oversamples
        self.n_iter = n_iter
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> ClassicalMDS:
        """Fit the embedding; on lazy input no embedding is computed."""
        Y = self._fit(X)
        if wants_numpy(X):
            self.embedding_ = self._signed(Y)
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        """Embed the rows of ``X`` (features) or the points of a dissimilarity matrix."""
        Y = self._signed(self._fit(X))
        if wants_numpy(X):
            self.embedding_ = np.asarray(Y)
            return self.embedding_
        return Y

    def _fit(self, X: Any) -> np.ndarray | da.Array:
        k = check_int(self.n_components, "n_components")
        check_int(self.n_oversamples, "n_oversamples", low=0)
        check_int(self.n_iter, "n_iter", low=0)
        if self.metric != "precomputed":
            check_distance_metric(self.metric)
        self.seed_ = resolve_seed(self.random_state)
        Xd = as_array(X, name="X")
        n = Xd.shape[0]
        self._check_memory(Xd, wants_numpy(X))
        if self.metric == "precomputed":  # what is wrong with the matrix comes before its size
            validate_dissimilarity(Xd)
        if k >= n:
            raise ValueError(f"n_components={k} must be less than the number of points ({n}).")
        self.n_features_in_ = int(Xd.shape[1])
        if self._is_pca():
            return self._fit_pca(Xd, wants_numpy(X))
        if self.metric == "precomputed":
            D = Xd
        else:
            D = _lazy_pairwise(Xd, self.metric, self.metric_params)
        Y = self._fit_dissimilarity(D, in_memory=wants_numpy(X))
        return Y if wants_numpy(X) else from_numpy(Y, Xd.chunks[0])

    def _is_pca(self) -> bool:
        return self.metric in ("euclidean", "l2") and not self.metric_params

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        n = Xd.shape[0]
        if self._is_pca():
            return PCA(n_components=min(self.n_components, Xd.shape[1]))._memory_parts(Xd, in_memory)
        if n <= DENSE_EIGH_MAX or in_memory:
            # D (computed), D**2, the double-centred copy and the eigensolver's workspace.
            return {"dense": Part(4 * n * n * 8, "the n x n matrices of the exact solver", "")}
        width = int(min(n, self.n_components + self.n_oversamples))
        block = chunk_bytes_of(Xd) if self.metric == "precomputed" else max(Xd.chunks[0]) * n * 8
        return {
            "stream": streaming(block, 3, "blocks of the dissimilarity matrix"),
            "sketch": Part(6 * n * width * 8, "randomized sketches", "n_oversamples"),
        }

    def _fit_pca(self, Xd: da.Array, in_memory: bool) -> np.ndarray | da.Array:
        pca = PCA(n_components=min(self.n_components, Xd.shape[1]), svd_solver="auto").fit(Xd)
        Y: da.Array = da.asarray(pca.transform(Xd)).astype(np.float64)
        evals = pca.singular_values_.astype(np.float64) ** 2
        missing = self.n_components - len(evals)
        if missing > 0:  # fewer features than components: the rest are 0
            Y = da.concatenate([Y, da.zeros((Y.shape[0], missing), chunks=(Y.chunks[0], missing))], axis=1)
            evals = np.concatenate([evals, np.zeros(missing)])
        self.eigenvalues_ = evals
        self.negative_mass_ = 0.0
        self.spectrum_complete_ = True
        self.eigen_residual_ = 0.0
        if in_memory:
            (Y,) = compute(Y)
        return Y

    @staticmethod
    def _signed(Y: np.ndarray | da.Array) -> np.ndarray | da.Array:
        """Columns of Y are the eigenvectors of B scaled: the same sign rule applies."""
        if isinstance(Y, np.ndarray):
            return flip_signs(Y)
        # One pass for the k signs (the row of each column's largest |entry|), then a lazy product.
        (rows,) = compute(da.argmax(abs(Y), axis=0))
        (values,) = compute(Y.vindex[rows, np.arange(Y.shape[1])])
        signs = np.where(np.sign(values) == 0, 1.0, np.sign(values))
        return Y * signs

    def _fit_dissimilarity(self, D: da.Array, in_memory: bool = False) -> np.ndarray:
        n, k = D.shape[0], self.n_components
        spec: Eigenpairs
        if n <= DENSE_EIGH_MAX or in_memory:
            # The matrix is (or may be) held: an exact solver, not a few power iterations.
            (Dn,) = compute(D)
            spec = top_eigh(double_centre(np.asarray(Dn, dtype=np.float64) ** 2), k, self.seed_)
        else:
            width = int(min(n, k + self.n_oversamples))
            spec = randomized_eigh(
                double_centred_operator(D),
                n,
                width,
                self.n_iter,
                self.seed_,
                tol=RESIDUAL_TOL,
                n_check=k,
                max_iter=MAX_PASSES,
            )
            if spec.residual > RESIDUAL_TOL:
                warnings.warn(
                    f"The randomized eigensolver stopped after {MAX_PASSES} passes over the matrix with a relative "
                    f"residual of {spec.residual:.2g} (tolerance {RESIDUAL_TOL:g}): the spectrum decays too "
                    f"slowly. Raise n_oversamples, or give the matrix in memory for an exact solver.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
        self.eigen_residual_ = spec.residual
        values, vectors = spec.values[:k], spec.vectors[:, :k]
        positive = values > 0
        if not positive.all():
            warnings.warn(
                f"Only {int(positive.sum())} of the {k} leading eigenvalues are positive (the "
                f"dissimilarities are not Euclidean; negative_mass_={spec.negative_mass:.3g}); the other "
                f"components are set to 0.",
                NonEuclideanWarning,
                stacklevel=4,
            )
        self.eigenvalues_ = values
        self.negative_mass_ = spec.negative_mass
        self.spectrum_complete_ = spec.complete
        return vectors * np.sqrt(np.clip(values, 0, None))

    def summary(self) -> dict[str, Any]:
        return {"eigenvalues": self.eigenvalues_.tolist(), "negative_mass": self.negative_mass_}


# -- landmark MDS ----------------------------------------------------------------
def _nearest_other_threshold(landmark_sq: np.ndarray) -> float:
    """The drift threshold of landmark MDS: the 99th percentile of each landmark's distance to its nearest other.

    The landmarks are a uniform sample, so a new row from the training
    distribution sees them as a landmark sees the others.
    """
    d = np.sqrt(np.maximum(np.asarray(landmark_sq, dtype=np.float64), 0))
    np.fill_diagonal(d, np.inf)
    return empirical_threshold(d.min(axis=1))


class LandmarkExtension(Extension):
    """Landmarks, metric and triangulation: what a worker needs to place rows."""

    def __init__(self, landmarks: np.ndarray, metric: Any, metric_params: dict | None, tri: Triangulation) -> None:
        super().__init__(tri.pinv.shape[1], TRIANGULATE_ROWS)
        self.landmarks = landmarks
        self.metric = metric
        self.metric_params = metric_params
        self.tri = tri

    def embed_piece(self, rows: np.ndarray) -> np.ndarray:
        return self.score_piece(rows)[0]

    def score_piece(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The drift score, the distance to the nearest landmark, from the same distances.
        d = pairwise_distances(rows, self.landmarks, self.metric, self.metric_params)
        return triangulate(d**2, self.tri), d.min(axis=1)


class LandmarkMDS(ExtensionEstimator):
    """Landmark MDS (de Silva & Tenenbaum 2004): classical MDS on landmarks, triangulation of the rest.

    Parameters
    ----------
    n_components : int
        Coordinates of the embedding.
    landmarks : int
        ``m``, the number of landmarks; at least ``n_components + 1``, and at
        most the number of rows (a larger value is clamped to it:
        ``n_landmarks_``). Cost of placing a row: ``m`` distances and an
        ``m x d`` product.
    landmark_method : {"random", "maxmin"}
        How :func:`bigdr.select_landmarks` picks them in one pass.
        ``maxmin`` spreads them evenly (de Silva & Tenenbaum's advice) but
        favours outliers in noisy data; ``random`` follows the density.
    metric : str or callable
        A name of ``scipy.spatial.distance.cdist`` or a function ``f(A, B)``
        returning the distances between the rows of two blocks.
    metric_params : dict, optional
        Keyword arguments of the metric.
    random_state : int or None
        Seed of the landmark draw (kept in ``seed_``).
    n_landmarks : "deprecated"
        The 0.1 name of ``landmarks``, accepted with a FutureWarning until 0.3.

    Attributes
    ----------
    landmarks_ : (m, p) the landmark rows
    landmark_indices_ : (m,) their row numbers in the training data
    landmark_embedding_ : (m, n_components)
    n_landmarks_ : int, the number used
    eigenvalues_ : (n_components,)
    negative_mass_ : float
        As in :class:`ClassicalMDS`, for the landmarks' dissimilarities.
    embedding_ : (n, n_components), when ``X`` is in memory

    References
    ----------
    Torgerson, W. S. (1952). Multidimensional scaling: I. Theory and method.
    Psychometrika 17, 401-419. doi:10.1007/BF02288916

    Gower, J. C. (1966). Some distance properties of latent root and vector
    methods used in multivariate analysis. Biometrika 53(3-4), 325-338.
    doi:10.1093/biomet/53.3-4.325

    de Silva, V. & Tenenbaum, J. B. (2004). Sparse multidimensional scaling
    using landmark points. Technical report, Stanford University.

    Examples
    --------
    >>> import numpy as np
    >>> import bigdr
    >>> X = np.random.default_rng(0).standard_normal((300, 3))
    >>> lmds = bigdr.LandmarkMDS(2, landmarks=50).fit(X)
    >>> lmds.transform(X[:5]).shape
    (5, 2)
    """

    _renamed_params = {"n_landmarks": "landmarks"}

    def __init__(
        self,
        n_components: int = 2,
        landmarks: int = 500,
        landmark_method: str = "random",
        metric: Any = "euclidean",
        metric_params: dict | None = None,
        random_state: int | None = 0,
        *,
        n_landmarks: Any = DEPRECATED,
    ) -> None:
        self.n_components = n_components
        self.landmarks = landmarks
        self.n_landmarks = n_landmarks
        self.landmark_method = landmark_method
        self.metric = metric
        self.metric_params = metric_params
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> LandmarkMDS:
        """Pick landmarks in one pass, embed them; ``transform`` places every other row."""
        k = check_int(self.n_components, "n_components")
        check_int(self._param("landmarks"), "landmarks")
        check_choice(self.landmark_method, "landmark_method", ("random", "maxmin"))
        check_distance_metric(self.metric)
        seed = resolve_seed(self.random_state)
        Xd = as_array(X, name="X")
        self._check_memory(Xd)
        m = min(int(self._param("landmarks")), Xd.shape[0])
        check_landmark_span(m, k, "landmarks and the number of rows must exceed n_components.")
        rows, idx = select_landmarks(Xd, m, self.landmark_method, seed)
        sq = pairwise_distances(rows, rows, self.metric, self.metric_params) ** 2
        sq = (sq + sq.T) / 2
        tri = landmark_mds(sq, k, seed)
        assert tri.spectrum is not None
        self.seed_ = seed
        self.n_landmarks_ = m
        self.landmarks_ = np.asarray(rows)
        self.landmark_indices_ = np.asarray(idx, dtype=np.int64)
        self.n_features_in_ = int(Xd.shape[1])
        self.triangulation_ = tri.pinv
        self.landmark_sq_mean_ = tri.mean_sq
        self.eigenvalues_ = tri.spectrum.values
        self.negative_mass_ = tri.spectrum.negative_mass
        self.spectrum_complete_ = tri.spectrum.complete
        self._ext = None
        self.landmark_embedding_ = triangulate(sq, tri)
        self.n_samples_seen_ = int(Xd.shape[0])
        self._reset_drift()
        self.drift_threshold_ = _nearest_other_threshold(sq)
        if wants_numpy(X):
            self.embedding_ = self.transform(X)
        return self

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        n, p = Xd.shape
        m = min(int(self._param("landmarks")), n)
        piece = min(TRIANGULATE_ROWS, n)
        return {
            "sample": streaming(
                min(chunk_bytes_of(Xd), LANDMARK_CHUNK_BYTES), 3, "blocks of the landmark pass", "sample"
            ),
            "landmarks": Part(m * p * 8 + 4 * m * m * 8, "landmarks and their distances", "landmarks"),
            # distances, their squares and the product of a piece of rows, per thread
            "place": streaming(PLACE_COPIES * piece * m * 8 + piece * p * 8, 1, "rows being placed", "place"),
        }

    def partial_fit(self, X: Any, y: Any = None) -> LandmarkMDS:
        """Learn from new rows: the landmarks stay a uniform sample of every row seen.

        Every row has a key fixed by ``random_state`` and its global row
        number; the landmarks are the ``landmarks`` rows of smallest key
        (:func:`bigdr.graph.incremental.reservoir`), which is the sample ``fit``
        draws, so the landmark set equals a fit's on all the rows whatever the
        batching. When landmarks change, the m x m landmark MDS is solved again
        and aligned (orthogonal Procrustes, :func:`bigdr.core.triangulation.rigid_alignment`)
        to the previous model's coordinates of the new landmarks. The drift of
        the batch (distance to the nearest landmark) is measured first. An
        unfitted model is fitted on the batch. Needs ``landmark_method="random"``
        (max-min landmarks are not a sample).
        """
        if not self.__sklearn_is_fitted__():
            return self.fit(X)
        if self.landmark_method != "random":
            raise ValueError("partial_fit keeps the landmarks a uniform sample: it needs landmark_method='random'.")
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, "LandmarkMDS")
        n_b, start = Xd.shape[0], self.n_samples_seen_
        keys = row_keys(start, start + n_b, self.seed_)
        old_keys = keys_of(self.landmark_indices_, self.seed_)
        keep, enter = reservoir(old_keys, np.zeros(len(old_keys), dtype=bool), keys, self.n_landmarks_)
        beyond = self.drift_count(Xd)
        take = np.flatnonzero(enter)
        count, entering = compute(beyond, Xd[take])
        rule = self._drift_rule()
        if len(take):
            rows = np.vstack([self.landmarks_[keep], np.asarray(entering, dtype=self.landmarks_.dtype)])
            idx = np.concatenate([self.landmark_indices_[keep], start + take])
            order = np.argsort(np.concatenate([old_keys[keep], keys[take]]), kind="stable")  # a fit's order
            rows, idx = rows[order], idx[order]
            sq = pairwise_distances(rows, rows, self.metric, self.metric_params) ** 2
            sq = (sq + sq.T) / 2
            tri = landmark_mds(sq, self.n_components, self.seed_)
            R, t = rigid_alignment(triangulate(sq, tri), self._extension().embed_block(rows))
            tri = aligned(tri, R, t)
            assert tri.spectrum is not None
            self.landmarks_, self.landmark_indices_ = rows, idx
            self.triangulation_, self.landmark_sq_mean_ = tri.pinv, tri.mean_sq
            self.eigenvalues_, self.negative_mass_ = tri.spectrum.values, tri.spectrum.negative_mass
            self.spectrum_complete_ = tri.spectrum.complete
            self.landmark_embedding_ = triangulate(sq, tri)
            self.drift_threshold_ = _nearest_other_threshold(sq)
            self._ext = None
        self.record_drift(n_b, int(count), update=True, rule=rule)
        self.n_samples_seen_ = start + n_b
        self.__dict__.pop("embedding_", None)
        return self

    def _drift_rule(self) -> tuple[float, str]:
        return self.drift_threshold_, "nearest-landmark distance"

    def _make_extension(self) -> LandmarkExtension:
        tri = Triangulation(self.triangulation_, self.landmark_sq_mean_, None)
        return LandmarkExtension(self.landmarks_, self.metric, self.metric_params, tri)

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        self.fit(X)
        return self.embedding_ if wants_numpy(X) else self.transform(X)

    def summary(self) -> dict[str, Any]:
        return {
            "eigenvalues": self.eigenvalues_.tolist(),
            "negative_mass": self.negative_mass_,
            "n_landmarks": self.n_landmarks_,
        }

    def describe(self) -> str:
        return f"landmark MDS ({self.n_landmarks_} landmarks): negative mass {self.negative_mass_:.3g}"
