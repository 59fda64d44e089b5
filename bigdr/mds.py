"""Classical and landmark multidimensional scaling (notes 000, 001, 002).

Classical MDS (Torgerson; notes 001): from squared dissimilarities ``A =
D**2`` form ``B = -1/2 J A J`` with ``J = I - 11^T/n`` (double centring);
if ``D`` is Euclidean, ``B`` is the Gram matrix of the centred points, and
the best ``d``-dimensional Euclidean fit is ``V_d diag(sqrt(lambda_d))``
from the top eigenpairs of ``B``. Negative eigenvalues mean ``D`` is not
Euclidean; they are reported (``negative_mass_``) and never embedded.

Landmark MDS (de Silva & Tenenbaum, "Sparse multidimensional scaling using
landmark points", 2004): classical MDS on ``m`` landmarks only, then every
other point ``a`` is placed by distance-based triangulation from its squared
distances ``delta_a`` to the landmarks::

    y_a = -1/2 L# (delta_a - delta_mu),   L# = diag(1/sqrt(lambda)) V^T,

with ``delta_mu`` the column mean of the landmarks' squared distances. For a
landmark the formula gives back its MDS coordinates exactly; it is the
Nystrom extension of the kernel ``B`` and is the ``transform`` of both
:class:`LandmarkMDS` and :class:`bigdr.Isomap`.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np

from ._compute import compute
from .base import BaseEstimator, check_positive_int, wants_numpy
from .io import _from_numpy, as_array
from .landmarks import _check_count, select_landmarks
from .linalg import DENSE_EIGH_MAX, SymmetricSpectrum, flip_signs, randomized_eigh, top_eigh
from .neighbors import check_distance_metric, pairwise_distances

#: Rows per piece of a triangulation (bounds the row x landmark matrices).
TRIANGULATE_ROWS = 16_384


class NonEuclideanWarning(UserWarning):
    """The dissimilarities have fewer positive eigenvalues than components asked for."""


# -- kernels on in-memory blocks ----------------------------------------------
def double_centre(sq: np.ndarray) -> np.ndarray:
    """``-1/2 J A J`` of a square matrix of squared dissimilarities (a new array)."""
    B = np.array(sq, dtype=np.float64)
    B -= B.mean(axis=0, keepdims=True)
    B -= B.mean(axis=1, keepdims=True)
    B *= -0.5
    return B


class Triangulation(NamedTuple):
    """What places a point from its squared distances to the landmarks."""

    pinv: np.ndarray  #: (m, d) columns v_i / sqrt(lambda_i); zero where lambda_i <= 0
    mean_sq: np.ndarray  #: (m,) column means of the landmarks' squared distances
    spectrum: SymmetricSpectrum  #: the landmarks' eigenpairs


def landmark_mds(landmark_sq: np.ndarray, n_components: int, random_state: Any = 0) -> Triangulation:
    """Classical MDS of the landmarks and the triangulation of de Silva & Tenenbaum.

    ``landmark_sq`` is the ``m x m`` matrix of squared dissimilarities among
    the landmarks. Components whose eigenvalue is not positive are set to
    zero (with a :class:`NonEuclideanWarning`): they carry no Euclidean
    distance.
    """
    spec = top_eigh(double_centre(landmark_sq), n_components, random_state)
    scale = float(np.abs(spec.values).max()) if spec.values.size else 0.0
    positive = spec.values > 1e-12 * max(scale, np.finfo(float).tiny)
    if not positive.all():
        warnings.warn(
            f"Only {int(positive.sum())} of the {n_components} leading eigenvalues of the double-centred "
            f"dissimilarities are positive; the other components are set to 0. Ask for fewer components.",
            NonEuclideanWarning, stacklevel=3)
    pinv = np.zeros_like(spec.vectors)
    pinv[:, positive] = spec.vectors[:, positive] / np.sqrt(spec.values[positive])
    return Triangulation(pinv, np.asarray(landmark_sq, dtype=np.float64).mean(axis=0), spec)


def triangulate(sq: np.ndarray, tri: Triangulation) -> np.ndarray:
    """Coordinates of points from their squared distances to the landmarks (rows of ``sq``).

    Non-finite squared distances (a point no landmark reaches) give NaN rows.
    """
    out = np.empty((len(sq), tri.pinv.shape[1]))
    for s in range(0, len(sq), TRIANGULATE_ROWS):
        piece = np.asarray(sq[s : s + TRIANGULATE_ROWS], dtype=np.float64) - tri.mean_sq
        out[s : s + len(piece)] = -0.5 * (piece @ tri.pinv)
    bad = ~np.isfinite(sq).all(axis=1)
    if bad.any():
        out[bad] = np.nan
    return out


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
        raise ValueError(f"A precomputed dissimilarity matrix must be square; got {n} x {m}. "
                         f"Pass features with metric='euclidean' (or another metric) instead.")
    (c,) = compute(_dissimilarity_checks(D))
    if not c["finite"]:
        raise ValueError("The dissimilarity matrix contains NaN or infinity; every pair needs a finite value.")
    if c["min"] < 0:
        raise ValueError(f"The dissimilarity matrix has negative entries (min {float(c['min']):.3g}); "
                         f"dissimilarities must be >= 0.")
    tol = (1e-5 if D.dtype == np.float32 else 1e-9) * max(float(c["max"]), np.finfo(np.float64).tiny)
    if c["asymmetry"] > tol:
        raise ValueError(f"The dissimilarity matrix is not symmetric (max |D - D.T| = {float(c['asymmetry']):.3g}); "
                         f"symmetrise it, e.g. (D + D.T) / 2.")
    if c["diagonal"] > tol:
        raise ValueError(f"The dissimilarity matrix has a nonzero diagonal (max {float(c['diagonal']):.3g}); "
                         f"a point's dissimilarity to itself must be 0.")


def _lazy_pairwise(Xd: da.Array, metric: Any, metric_params: dict | None) -> da.Array:
    """All pairwise distances of the rows as a lazy n x n dask array (never stored)."""
    if len(Xd.chunks[1]) != 1:
        Xd = Xd.rechunk({1: -1})
    return da.blockwise(pairwise_distances, "ij", Xd, "ik", Xd, "jk", metric, None, metric_params, None,
                        concatenate=True, dtype=np.float64)


def _centred_operator(D: da.Array):
    """``Z -> -1/2 J (D**2) J Z`` with ``D**2`` formed blockwise inside each pass."""
    A = D.astype(np.float64) ** 2

    def apply(Z: np.ndarray) -> np.ndarray:
        W = Z - Z.mean(axis=0)
        (U,) = compute(A @ da.from_array(W, chunks=(A.chunks[1], W.shape[1])))
        U = np.asarray(U, dtype=np.float64)
        return -0.5 * (U - U.mean(axis=0))

    return apply


class ClassicalMDS(BaseEstimator):
    """Classical (Torgerson) MDS, also called principal coordinates analysis.

    Parameters
    ----------
    n_components : int
    metric : str or callable
        ``"precomputed"``: ``X`` is an n x n dissimilarity matrix (numpy, dask,
        zarr), checked and processed blockwise. ``"euclidean"`` on features:
        classical MDS of Euclidean distances *is* PCA (notes 001: the double
        centred squared distances are the Gram matrix of the centred rows), so
        the embedding is computed by :class:`bigdr.PCA` in one pass, never
        forming n x n. Any other metric name of ``scipy.spatial.distance.cdist``
        or a function ``f(A, B)``: distances formed block by block inside
        each pass, never stored (n x n work per pass: moderate n only).
    metric_params : dict, optional
        Keyword arguments of the metric.
    n_oversamples, n_iter : int
        Randomized eigensolver for large dissimilarity matrices (more than
        ``DENSE_EIGH_MAX`` rows): subspace width ``n_components +
        n_oversamples`` and ``n_iter`` power iterations (``n_iter + 1`` passes
        over D).
    random_state : int or None

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
    n_features_in_ : int

    Notes
    -----
    Signs: the largest-magnitude entry of each eigenvector (embedding column)
    is positive, as in scikit-learn's ``ClassicalMDS``, on every route.
    """

    def __init__(self, n_components: int = 2, metric: Any = "euclidean", metric_params: dict | None = None,
                 n_oversamples: int = 10, n_iter: int = 4, random_state: int | None = 0) -> None:
        self.n_components = n_components
        self.metric = metric
        self.metric_params = metric_params
        self.n_oversamples = n_oversamples
        self.n_iter = n_iter
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> "ClassicalMDS":
        self.fit_transform(X)
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        """Embed the rows of ``X`` (features) or the points of a dissimilarity matrix."""
        k = check_positive_int(self.n_components, "n_components")
        if self.metric != "precomputed":
            check_distance_metric(self.metric)
        Xd = as_array(X, name="X")
        n = Xd.shape[0]
        if k >= n:
            raise ValueError(f"n_components={k} must be less than the number of points ({n}).")
        self.n_features_in_ = int(Xd.shape[1])
        if self.metric in ("euclidean", "l2") and not self.metric_params:
            Y = self._fit_pca(Xd)
        else:
            if self.metric == "precomputed":
                validate_dissimilarity(Xd)
                D = Xd
            else:
                D = _lazy_pairwise(Xd, self.metric, self.metric_params)
            Y = self._fit_dissimilarity(D)
        if wants_numpy(X):
            self.embedding_ = Y
            return Y
        return _from_numpy(Y, Xd.chunks[0])

    def _fit_pca(self, Xd: da.Array) -> np.ndarray:
        from .pca import PCA

        pca = PCA(n_components=min(self.n_components, Xd.shape[1]), svd_solver="auto").fit(Xd)
        (Y,) = compute(pca.transform(Xd))
        evals = pca.singular_values_**2
        if len(evals) < self.n_components:  # fewer features than components: the rest are 0
            Y = np.hstack([Y, np.zeros((len(Y), self.n_components - len(evals)))])
            evals = np.concatenate([evals, np.zeros(self.n_components - len(evals))])
        self.eigenvalues_ = evals
        self.negative_mass_ = 0.0
        self.spectrum_complete_ = True
        # Columns of Y are the eigenvectors of B scaled: the same sign rule applies.
        return flip_signs(np.asarray(Y, dtype=np.float64).T).T

    def _fit_dissimilarity(self, D: da.Array) -> np.ndarray:
        n, k = D.shape[0], self.n_components
        if n <= DENSE_EIGH_MAX:
            (Dn,) = compute(D)
            spec = top_eigh(double_centre(np.asarray(Dn, dtype=np.float64) ** 2), k, self.random_state)
        else:
            width = int(min(n, k + self.n_oversamples))
            values, vectors = randomized_eigh(_centred_operator(D), n, width, self.n_iter, self.random_state)
            total = np.abs(values).sum()
            mass = float(np.abs(values[values < 0]).sum() / total) if total > 0 else 0.0
            spec = SymmetricSpectrum(values[:k], flip_signs(vectors[:, :k].T).T, mass, False)
        positive = spec.values > 0
        if not positive.all():
            warnings.warn(f"Only {int(positive.sum())} of the {k} leading eigenvalues are positive (the "
                          f"dissimilarities are not Euclidean; negative_mass_={spec.negative_mass:.3g}); the other "
                          f"components are set to 0.", NonEuclideanWarning, stacklevel=3)
        self.eigenvalues_ = spec.values
        self.negative_mass_ = spec.negative_mass
        self.spectrum_complete_ = spec.full
        return spec.vectors * np.sqrt(np.clip(spec.values, 0, None))


# -- landmark MDS ----------------------------------------------------------------
class _LandmarkExtension:
    """Landmarks, metric and triangulation: what a worker needs to place rows."""

    def __init__(self, landmarks: np.ndarray, metric: Any, metric_params: dict | None, tri: Triangulation) -> None:
        self.landmarks = landmarks
        self.metric = metric
        self.metric_params = metric_params
        self.tri = tri
        self.key = f"bigdr-landmark-mds-{uuid.uuid4().hex}"
        self.piece_rows = TRIANGULATE_ROWS

    def embed_block(self, block: np.ndarray) -> np.ndarray:
        out = np.empty((len(block), self.tri.pinv.shape[1]))
        for s in range(0, len(block), self.piece_rows):
            d = pairwise_distances(block[s : s + self.piece_rows], self.landmarks, self.metric, self.metric_params)
            out[s : s + len(d)] = triangulate(d**2, self.tri)
        return out


#: Input chunk size of the extension passes. Placing a row costs far more
#: than reading it (a neighbour query or m distances per row), so smaller
#: chunks than the default 128 MiB cost no throughput and bound the memory
#: (input, output and scratch of two tasks at once).
EXTEND_CHUNK_BYTES = 32 << 20


def extend_blockwise(X: Any, extension: Any, width: int, n_features: int) -> da.Array:
    """``extension.embed_block`` over the row blocks of ``X``, lazily; the extension is one graph key.

    ``extension`` has ``key`` (its graph key), ``piece_rows`` (rows it places
    at once) and ``embed_block``. A task gets at most one piece: placing a row
    costs far more than reading it (3-D rows: 1M rows are 24 MB, one input
    chunk, but ten seconds of work), so tasks sized by input bytes would leave
    every worker but one idle.
    """
    Xd = as_array(X, name="X", min_rows=1, chunk_bytes=EXTEND_CHUNK_BYTES)
    if Xd.shape[1] != n_features:
        raise ValueError(f"X has {Xd.shape[1]} columns; the model was fitted on {n_features}.")
    if len(Xd.chunks[1]) != 1:
        Xd = Xd.rechunk({1: -1})
    # A dask array given by the caller keeps its chunks in as_array; split
    # large row chunks here (dask reads each piece's region of the store).
    rows = max(1, EXTEND_CHUNK_BYTES // max(1, Xd.shape[1] * Xd.dtype.itemsize))
    rows = min(rows, extension.piece_rows)
    if max(Xd.chunks[0]) > rows:
        Xd = Xd.rechunk({0: rows})
    key = dask.delayed(extension, name=extension.key, traverse=False)
    return da.map_blocks(_embed_block, Xd, key, chunks=(Xd.chunks[0], (width,)),
                         dtype=np.float64, meta=np.empty((0, 0)))


def _embed_block(block: np.ndarray, extension: Any) -> np.ndarray:
    # A named function, not a lambda: task names show in dashboards and task streams.
    return extension.embed_block(block)


class LandmarkMDS(BaseEstimator):
    """Landmark MDS (de Silva & Tenenbaum 2004): classical MDS on landmarks, triangulation of the rest.

    Parameters
    ----------
    n_components : int
    n_landmarks : int
        ``m``; at least ``n_components + 1``. Cost of placing a row: ``m``
        distances and an ``m x d`` product.
    landmark_method : {"random", "maxmin"}
        How :func:`bigdr.select_landmarks` picks them in one pass.
        ``maxmin`` spreads them evenly (de Silva & Tenenbaum's advice) but
        favours outliers in noisy data; ``random`` follows the density.
    metric : str or callable
        A name of ``scipy.spatial.distance.cdist`` or a function ``f(A, B)``
        returning the distances between the rows of two blocks.
    metric_params : dict, optional
    random_state : int

    Attributes
    ----------
    landmarks_ : (m, p) the landmark rows
    landmark_indices_ : (m,) their row numbers in the training data
    landmark_embedding_ : (m, n_components)
    eigenvalues_ : (n_components,)
    negative_mass_ : float
        As in :class:`ClassicalMDS`, for the landmarks' dissimilarities.
    embedding_ : (n, n_components), when ``X`` is in memory
    """

    def __init__(self, n_components: int = 2, n_landmarks: int = 500, landmark_method: str = "random",
                 metric: Any = "euclidean", metric_params: dict | None = None, random_state: int = 0) -> None:
        self.n_components = n_components
        self.n_landmarks = n_landmarks
        self.landmark_method = landmark_method
        self.metric = metric
        self.metric_params = metric_params
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> "LandmarkMDS":
        k = check_positive_int(self.n_components, "n_components")
        check_distance_metric(self.metric)
        Xd = as_array(X, name="X")
        m = _check_count(self.n_landmarks, Xd.shape[0], "n_landmarks")
        if m <= k:
            raise ValueError(f"n_landmarks={m} must exceed n_components={k} (at least n_components + 1 "
                             f"landmarks span an n_components-dimensional embedding).")
        rows, idx = select_landmarks(Xd, m, self.landmark_method, self.random_state)
        sq = pairwise_distances(rows, rows, self.metric, self.metric_params) ** 2
        sq = (sq + sq.T) / 2
        tri = landmark_mds(sq, k, self.random_state)
        self.landmarks_ = np.asarray(rows)
        self.landmark_indices_ = np.asarray(idx, dtype=np.int64)
        self.n_features_in_ = int(Xd.shape[1])
        self._set_triangulation(tri)
        self.landmark_embedding_ = triangulate(sq, tri)
        if wants_numpy(X):
            self.embedding_ = self.transform(X)
        return self

    def _set_triangulation(self, tri: Triangulation) -> None:
        self.triangulation_ = tri.pinv
        self.landmark_sq_mean_ = tri.mean_sq
        self.eigenvalues_ = tri.spectrum.values
        self.negative_mass_ = tri.spectrum.negative_mass
        self.spectrum_complete_ = tri.spectrum.full

    def _extension(self) -> _LandmarkExtension:
        ext = getattr(self, "_ext", None)
        if ext is None:
            tri = Triangulation(self.triangulation_, self.landmark_sq_mean_, None)
            ext = self._ext = _LandmarkExtension(self.landmarks_, self.metric, self.metric_params, tri)
        return ext

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """Place rows by triangulation from their distances to the landmarks (blockwise)."""
        self._check_fitted("triangulation_")
        Y = extend_blockwise(X, self._extension(), self.n_components, self.n_features_in_)
        return compute(Y)[0] if wants_numpy(X) else Y

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        self.fit(X)
        return self.embedding_ if wants_numpy(X) else self.transform(X)
