"""Density ridges (filaments) by subspace-constrained mean shift, for data of any size.

:mod:`bigdr.core.ridges` holds the mathematics. Here the density's support
is chosen (all rows when they are few, else a uniform sample drawn in one
pass), query points are thinned by density and moved onto the ridge, and
``transform`` moves any rows onto the ridge blockwise, on threads or a cluster.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Any, NamedTuple

import dask.array as da
import numpy as np

from .. import _deprecated
from .._random import as_generator, resolve_seed
from .._validation import check_int, check_n_features, check_real
from ..base import DEPRECATED, BigdrEstimator, chunk_bytes_of, like_input
from ..blockwise.sampling import keys_of, row_keys, uniform_sample
from ..core.ridges import RidgeRun, density, local_moments, scms, silverman_bandwidth
from ..exceptions import ConvergenceWarning
from ..graph.incremental import reservoir
from ..graph.neighbors import NeighborIndex, nearest_other
from ..io import as_array
from ..runtime.compute import compute, model_key
from ..runtime.memory import Part, streaming

#: Up to this many support points the kernel sums run over all of them (exact); above, within a radius.
DENSE_SUPPORT = 5_000
#: The kernel is cut at this many bandwidths by default: a cut neighbour's weight is below exp(-8) = 3.4e-4.
TRUNCATE = 4.0
#: Rows snapped to the ridge at once by the nearest-point projection.
PIECE_ROWS = 16_384
#: Points whose kernel sums are taken at once: bounds the (point, support row) pairs held. At 5,000 queries
#: on 1M filament rows (about 3,400 support points within 4 h of each) all at once, fit peaked at 1.6 GiB.
KERNEL_ROWS = 512
#: Query points per task of ``fit`` (several tasks keep every worker thread busy).
QUERY_ROWS = KERNEL_ROWS


class _Density:
    """The fitted density, shipped to workers as one graph key: support, bandwidth, neighbour index."""

    def __init__(self, support: np.ndarray, h: float, dim: int, truncate: float | None) -> None:
        self.support, self.h, self.dim, self.truncate = support, h, dim, truncate
        self.index = None if truncate is None else NeighborIndex(method="kdtree").fit(support)
        self.key = f"bigdr-ridge-density-{uuid.uuid4().hex}"

    def _pairs(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert self.index is not None and self.truncate is not None
        return self.index.radius_pairs(x, self.truncate * self.h)

    def run(self, points: np.ndarray, tol: float, max_iter: int) -> RidgeRun:
        near = None if self.index is None else self._pairs
        pieces = (points[s : s + KERNEL_ROWS] for s in range(0, len(points), KERNEL_ROWS))
        parts = [scms(x, self.support, self.h, self.dim, tol=tol, max_iter=max_iter, neighbours=near) for x in pieces]
        if not parts:
            return scms(points, self.support, self.h, self.dim, tol=tol, max_iter=0)  # no rows: an empty run
        return RidgeRun(*(np.concatenate(a) for a in zip(*parts)))

    def density(self, points: np.ndarray) -> np.ndarray:
        out = []
        for s in range(0, len(points), KERNEL_ROWS):
            x = points[s : s + KERNEL_ROWS]
            pairs = None if self.index is None else self._pairs(x)
            out.append(density(local_moments(x, self.support, self.h, pairs), len(self.support), self.h))
        return np.concatenate(out)


def _ridge_block(block: np.ndarray, model: _Density, tol: float, max_iter: int) -> np.ndarray:
    """Rows moved onto the ridge by SCMS: (ridge point, distance moved, on a ridge)."""
    x = np.asarray(block, dtype=np.float64)
    run = model.run(x, tol, max_iter)
    on_ridge = run.converged & (run.curvature < 0)
    return np.column_stack([run.points, np.linalg.norm(run.points - x, axis=1), on_ridge])


def _run_block(block: np.ndarray, model: _Density, tol: float, max_iter: int) -> np.ndarray:
    run = model.run(np.asarray(block, dtype=np.float64), tol, max_iter)
    return np.column_stack([run.points, run.steps, run.converged, run.change, run.curvature])


def _run_on_workers(model: _Density, points: np.ndarray, tol: float, max_iter: int) -> RidgeRun:
    """SCMS from ``points`` in pieces of :data:`QUERY_ROWS`: tasks of the current scheduler (threads or a cluster)."""
    p = points.shape[1]
    X = da.from_array(points, chunks=(QUERY_ROWS, p))
    key = model_key(model, model.key)
    out = da.map_blocks(
        _run_block, X, key, tol, max_iter, chunks=(X.chunks[0], (p + 4,)), dtype=np.float64, meta=np.empty((0, 0))
    )
    (res,) = compute(out)
    return RidgeRun(res[:, :p], res[:, p].astype(np.int64), res[:, p + 1] > 0, res[:, p + 2], res[:, p + 3])


def _nearest_block(block: np.ndarray, ridge: NeighborIndex, points: np.ndarray) -> np.ndarray:
    """Rows snapped to their nearest fitted ridge point: (ridge point, distance, 1)."""
    x = np.asarray(block, dtype=np.float64)
    out = []
    for s in range(0, len(x), PIECE_ROWS):
        ind = ridge.query_block(x[s : s + PIECE_ROWS], 1)[0][:, 0]
        near = points[ind]
        out.append(np.column_stack([near, np.linalg.norm(near - x[s : s + PIECE_ROWS], axis=1), np.ones(len(near))]))
    return np.concatenate(out) if out else np.zeros((0, x.shape[1] + 2))


class DensityRidge(BigdrEstimator):
    r"""Density ridges by subspace-constrained mean shift (SCMS), out of core.

    The density is a Gaussian kernel estimate
    :math:`\hat p(x) = \frac{1}{m} \sum_j (2\pi h^2)^{-p/2} e^{-\|x - s_j\|^2 / 2h^2}`
    on ``m`` support points ``s_j``. A ``dim``-dimensional ridge is where the
    gradient has no component along the ``p - dim`` eigenvectors ``V(x)``
    of the Hessian with the smallest eigenvalues. SCMS moves a point by the
    mean shift :math:`m(x) = \sum_j w_j (s_j - x) / \sum_j w_j` projected
    on them, :math:`x \leftarrow x + V V^T m(x)`, until
    :math:`\|V^T m(x)\| / h \le` ``tol`` (Ozertem & Erdogmus 2011).

    ``fit`` draws the support and the query points, drops the queries whose
    density is below ``density_threshold`` times the highest (denoising,
    Chen et al. 2015), and moves the rest onto the ridge: ``ridge_points_``.
    ``transform`` gives each row's point on the ridge, blockwise: the
    nearest of ``ridge_points_`` (``projection="nearest"``, as Chen et al.
    2015 measure distances to filaments), or the end of SCMS started at the
    row (``projection="scms"``: exact, and slower by the number of steps
    times the support points within the cut of the kernel). :meth:`distances`
    gives how far each row is from its ridge point and :meth:`on_ridge`
    whether SCMS settled on a ridge.

    Parameters
    ----------
    dim : int
        Dimension of the ridge: 1 for filaments, 2 for sheets; less than the
        number of features.
    bandwidth : "auto" or float
        ``h``. ``"auto"``: Silverman's normal-reference rule
        :math:`h = (4 / (p + 2))^{1/(p+4)} m^{-1/(p+4)} \sigma_{\min}` with
        the smallest coordinate standard deviation of the support (Chen et
        al. 2015 use the same dependence on ``m`` and :math:`\sigma_{\min}`).
        :func:`ridge_stability` traces how the ridge varies with ``h``.
    density_threshold : float
        Query points with density below this fraction of the highest density
        among them are dropped before moving (0 keeps all).
    n_queries : int
        Query points: a uniform sample of the support (all of it if smaller).
    max_samples : int
        The density's support: all rows when there are at most this many,
        else a uniform sample of this many (one pass).
    truncate : float, "auto" or None
        Kernel sums over the support points within ``truncate * h`` of each
        point (found by a k-d tree) instead of all of them: a cut neighbour
        weighs less than ``exp(-truncate^2 / 2)``. ``"auto"``: all support
        points up to ``DENSE_SUPPORT`` (5,000), else ``TRUNCATE`` (4).
        ``None``: always all (exact; slow for a large support). A fixed number
        of nearest neighbours instead of a radius was measured and not kept:
        200 of 8,000 points on a noisy circle reach only 0.66 h, which
        narrows the kernel and moved the ridge by 0.024 (median).
    projection : {"nearest", "scms"}
        How ``transform`` places rows on the ridge (above). With
        ``"nearest"`` the resolution is the spacing of ``ridge_points_``
        (``ridge_spacing_``): more ``n_queries`` make it finer.
    tol : float
        Stop moving a point when the projected mean shift is below ``tol * h``.
    max_iter : int
        Mean-shift steps per point at most. Query points that do not settle
        within them are left out, with a ``ConvergenceWarning`` giving their
        number.
    random_state : int, Generator or None
        Seed of the support and query samples.
    support_size : "deprecated"
        The 0.1 name of ``max_samples``, accepted with a FutureWarning until 0.3.

    Attributes
    ----------
    ridge_points_ : ndarray (n_points, n_features)
        The query points moved onto the ridge.
    query_density_ : ndarray (n_points,)
        Density at each of those query points before it moved.
    n_dropped_ : dict
        Query points left out: below the density threshold, not converged
        within ``max_iter``, and converged where the density does not fall
        off across (a saddle or minimum, not a ridge).
    n_iter_ : int
        The most steps any query point took.
    bandwidth_ : float
    support_ : ndarray (m, n_features)
    support_indices_ : ndarray (m,) of int64
        Which rows (numbered in the order seen) form the support.
    n_samples_seen_ : int
    truncate_ : float or None
        The kernel's cut in bandwidths (None: not cut).
    ridge_spacing_ : float
        Median distance from a ridge point to the nearest other one.

    References
    ----------
    Ozertem, U. & Erdogmus, D. (2011). Locally defined principal curves and
    surfaces. Journal of Machine Learning Research 12, 1249-1286.

    Chen, Y.-C., Ho, S., Freeman, P. E., Genovese, C. R. & Wasserman, L.
    (2015). Cosmic web reconstruction through density ridges: method and
    algorithm. MNRAS 454, 1140-1156. arXiv:1501.05303.

    Genovese, C. R., Perone-Pacifico, M., Verdinelli, I. & Wasserman, L.
    (2014). Nonparametric ridge estimation. Annals of Statistics 42, 1511-1545.

    Silverman, B. W. (1986). Density Estimation for Statistics and Data
    Analysis. Chapman & Hall.
    """

    _capabilities = frozenset({"spectrum", "structure"})
    _renamed_params = {"support_size": "max_samples"}

    def __init__(
        self,
        dim: int = 1,
        *,
        bandwidth: float | str = "auto",
        density_threshold: float = 0.05,
        n_queries: int = 5_000,
        max_samples: int = 50_000,
        truncate: float | str | None = "auto",
        projection: str = "nearest",
        tol: float = 1e-5,
        max_iter: int = 300,
        random_state: Any = None,
        support_size: Any = DEPRECATED,
    ) -> None:
        self.dim = dim
        self.bandwidth = bandwidth
        self.density_threshold = density_threshold
        self.n_queries = n_queries
        self.max_samples = max_samples
        self.truncate = truncate
        self.projection = projection
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.support_size = support_size

    def _check_params(self, p: int) -> None:
        dim = check_int(self.dim, "dim", low=1)
        if dim >= p:
            raise ValueError(f"dim={dim} must be less than n_features = {p}: a ridge lies inside the space.")
        if not (isinstance(self.bandwidth, str) and self.bandwidth == "auto"):
            check_real(self.bandwidth, "bandwidth", low=0.0, low_open=True)
        check_real(self.density_threshold, "density_threshold", low=0.0, high=1.0, high_open=True)
        check_int(self.n_queries, "n_queries", low=1)
        check_int(self._param("max_samples"), "max_samples", low=2)
        if self.truncate is not None and not (isinstance(self.truncate, str) and self.truncate == "auto"):
            check_real(self.truncate, "truncate", low=0.0, low_open=True)
        if self.projection not in ("nearest", "scms"):
            raise ValueError(f"projection must be 'nearest' or 'scms'; got {self.projection!r}.")
        check_real(self.tol, "tol", low=0.0, low_open=True)
        check_int(self.max_iter, "max_iter", low=1)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        p = Xd.shape[1]
        m = min(int(self._param("max_samples")), Xd.shape[0])
        return {
            "stream": streaming(chunk_bytes_of(Xd), 3),
            "support": Part(4 * m * p * 8, "the density's support and its k-d tree", "max_samples"),
        }

    def fit(self, X: Any, y: Any = None, *, queries: Any = None) -> DensityRidge:
        """Find the ridge of the density of ``X`` (numpy, dask, zarr or a path).

        ``queries``: the points to move onto the ridge (default: a uniform
        sample of ``n_queries`` support points, thinned by density).
        """
        Xd = as_array(X)
        n, p = Xd.shape
        self._check_params(p)
        if n < p + 2:
            raise ValueError(
                f"{n} rows are too few to estimate a density's Hessian in {p} dimensions; give at least {p + 2}."
            )
        self._check_memory(Xd)
        seed = self.seed_ = resolve_seed(self.random_state)
        if n <= int(self._param("max_samples")):
            (support,) = compute(Xd)
            indices = np.arange(n, dtype=np.int64)
        else:
            support, indices = uniform_sample(Xd, int(self._param("max_samples")), seed)
        return self._fit_support(support, indices, n, p, queries)

    def partial_fit(self, X: Any, y: Any = None) -> DensityRidge:
        """Learn from new rows without reading the earlier ones again: the result equals ``fit`` on all rows seen.

        Every row has a key fixed by ``random_state`` and its global row
        number, and the support is the ``max_samples`` rows of smallest key
        (all rows while there are no more), which is the sample ``fit``
        draws. So the support after the update is the one ``fit`` would
        draw from all the rows in the order seen, in the same order; from it
        the bandwidth (``"auto"``), the query points and the ridge follow as
        in ``fit``: exactly the same ridge. What it saves is the pass over
        the earlier rows (it reads only the new ones, once); SCMS runs again
        from all the query points, so an update costs about a ``fit`` on the
        support. The query points are always drawn from the support (the
        ``queries`` of an earlier ``fit`` are not kept). An unfitted model is
        fitted on the batch.
        """
        if not self.__sklearn_is_fitted__():
            return self.fit(X)
        if not hasattr(self, "support_indices_"):
            raise ValueError("This model was saved before DensityRidge had partial_fit; fit it again to update it.")
        Xd = as_array(X, name="X", min_rows=1)
        p = self.n_features_in_
        check_n_features(Xd.shape[1], p, "DensityRidge")
        self._check_params(p)
        n_b, start, m = Xd.shape[0], self.n_samples_seen_, int(self._param("max_samples"))
        old_keys = keys_of(self.support_indices_, self.seed_)
        keys = row_keys(start, start + n_b, self.seed_)
        keep, enter = reservoir(old_keys, np.zeros(len(old_keys), dtype=bool), keys, m)
        take = np.flatnonzero(enter)
        (entering,) = compute(Xd[take])
        support = np.vstack([self.support_[keep], np.asarray(entering, dtype=np.float64)])
        indices = np.concatenate([self.support_indices_[keep], start + take])
        if start + n_b > m:  # fit's sample: ordered by key (rows of equal key by number); else all rows in order
            order = np.lexsort((indices, np.concatenate([old_keys[keep], keys[take]])))
            support, indices = support[order], indices[order]
        return self._fit_support(support, indices, start + n_b, p, None)

    def _fit_support(self, support: np.ndarray, indices: np.ndarray, n: int, p: int, queries: Any) -> DensityRidge:
        """The ridge of the density on ``support`` (rows ``indices`` of the ``n`` seen), from ``queries`` or a sample.

        Nothing of the model changes until the ridge is found.
        """
        seed = self.seed_
        support = np.ascontiguousarray(support, dtype=np.float64)
        m = len(support)
        h = silverman_bandwidth(support.std(axis=0), m) if isinstance(self.bandwidth, str) else float(self.bandwidth)
        if h <= 0:
            raise ValueError("The support has a constant coordinate, so bandwidth='auto' is 0; give a bandwidth.")
        if self.truncate == "auto":
            cut = None if m <= DENSE_SUPPORT else TRUNCATE
        else:
            cut = None if self.truncate is None else float(self.truncate)
        model = _Density(support, h, int(self.dim), cut)
        if queries is None:
            rng = as_generator(seed)
            pick = rng.choice(m, size=min(int(self.n_queries), m), replace=False)
            start = support[np.sort(pick)]
        else:
            start = np.asarray(compute(as_array(queries, name="queries", min_rows=1))[0], dtype=np.float64)
            check_n_features(start.shape[1], p, "DensityRidge")
        dens = model.density(start)
        keep = dens >= float(self.density_threshold) * dens.max()
        run = _run_on_workers(model, start[keep], float(self.tol), int(self.max_iter))
        on_ridge = run.converged & (run.curvature < 0)
        if len(run.points[on_ridge]) == 0:
            raise ValueError(
                "No query point settled on a ridge; lower density_threshold, raise max_iter, or change the bandwidth."
            )
        self.ridge_points_ = run.points[on_ridge]
        self.query_density_ = dens[keep][on_ridge]
        self.n_dropped_ = {
            "low density": int((~keep).sum()),
            "not converged": int((~run.converged).sum()),
            "not on a ridge": int((run.converged & ~on_ridge).sum()),
        }
        self.n_iter_ = int(run.steps.max()) if len(run.steps) else 0
        unsettled = self.n_dropped_["not converged"]
        if unsettled:
            warnings.warn(
                f"DensityRidge: {unsettled:,} of {len(run.steps):,} query points did not settle on the ridge within "
                f"max_iter={int(self.max_iter)} SCMS steps (tol={float(self.tol):g}) and were left out (n_dropped_). "
                f"Raise max_iter, or check that the data have a {int(self.dim)}-dimensional ridge at this bandwidth.",
                ConvergenceWarning,
                stacklevel=2,
            )
        self.bandwidth_ = h
        self.support_ = support
        self.support_indices_ = np.asarray(indices, dtype=np.int64)
        self.n_samples_seen_ = int(n)
        self.truncate_ = cut
        self._ridge_index = NeighborIndex(method="kdtree").fit(self.ridge_points_)  # transform's, built here
        self.ridge_spacing_ = (
            float(np.median(nearest_other(self._ridge_index, self.ridge_points_)))
            if len(self.ridge_points_) > 1
            else float("nan")
        )
        self.n_features_in_ = int(p)
        self.n_components_ = int(p)
        self._model = model
        return self

    # -- using the model ---------------------------------------------------------------
    def _density_model(self) -> _Density:
        model = getattr(self, "_model", None)
        if model is None:  # a loaded model: rebuild the index from the stored support
            model = self._model = _Density(self.support_, self.bandwidth_, int(self.dim), self.truncate_)
        return model

    def _projected(self, X: Any) -> da.Array:
        """Lazy (n, p + 2): each row's ridge point, its distance to it, and whether it is on a ridge."""
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, "DensityRidge")
        if len(Xd.chunks[1]) != 1:
            Xd = Xd.rechunk({1: -1})
        p = self.n_features_in_
        shape = {"chunks": (Xd.chunks[0], (p + 2,)), "dtype": np.float64, "meta": np.empty((0, 0), dtype=np.float64)}
        if self.projection == "nearest":
            index = getattr(self, "_ridge_index", None)
            if index is None:  # a loaded model
                index = self._ridge_index = NeighborIndex(method="kdtree").fit(self.ridge_points_)
            key = model_key(index, index._key_name)  # one key: shipped to each worker once
            return da.map_blocks(_nearest_block, Xd, key, self.ridge_points_, **shape)
        model = self._density_model()
        key = model_key(model, model.key)
        return da.map_blocks(_ridge_block, Xd, key, float(self.tol), int(self.max_iter), **shape)

    def _lazy_embedding(self, X: Any) -> da.Array:
        return self._projected(X)[:, : self.n_features_in_]

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """Each row's point on the ridge (n x n_features), blockwise: the nearest ridge point, or SCMS from the row."""
        self._check_fitted()
        return like_input(X, self._lazy_embedding(X))

    def distances(self, X: Any) -> np.ndarray | da.Array:
        """Each row's distance to its point on the ridge, blockwise."""
        self._check_fitted()
        return like_input(X, self._projected(X)[:, self.n_features_in_])

    def on_ridge(self, X: Any) -> np.ndarray | da.Array:
        """Whether each row's SCMS converged where the density falls off across (bool), blockwise.

        Always true with ``projection="nearest"`` (every fitted ridge point is on a ridge).
        """
        self._check_fitted()
        return like_input(X, self._projected(X)[:, self.n_features_in_ + 1] > 0)

    def density(self, X: Any) -> np.ndarray:
        """The kernel density estimate at the rows of ``X`` (in memory)."""
        self._check_fitted()
        x = np.asarray(compute(as_array(X, name="X", min_rows=1))[0], dtype=np.float64)
        check_n_features(x.shape[1], self.n_features_in_, "DensityRidge")
        return self._density_model().density(x)

    def describe(self) -> str:
        return (
            f"DensityRidge: {len(self.ridge_points_)} ridge points (dim {self.dim}), "
            f"bandwidth {self.bandwidth_:.4g}, "
            f"within {self.n_iter_} steps; left out: " + ", ".join(f"{v} {k}" for k, v in self.n_dropped_.items())
        )


class RidgeStability(NamedTuple):
    """What :func:`ridge_stability` measured for each bandwidth."""

    bandwidths: np.ndarray
    instability: np.ndarray  # mean distance between the ridges of the two halves, in data units
    ridge_points: np.ndarray  # ridge points kept (the two halves together)


def ridge_stability(
    X: Any,
    bandwidths: Any,
    *,
    n_queries: int = 1000,
    random_state: Any = None,
    **params: Any,
) -> RidgeStability:
    """How much the ridge moves between two halves of the data, against the bandwidth.

    The rows of ``X`` (in memory: pass a sample of a large store) are split
    at random into halves; for each ``h`` a :class:`DensityRidge` with the
    other ``params`` is fitted on each half from the same ``n_queries``
    query points, and the two ridges' distance is measured: the mean, over
    the ridge points of each, of the distance to the nearest ridge point of
    the other (both ways, averaged). A small ``h`` follows the noise of each
    half (large instability); a large one smooths both halves alike but
    blurs the structure (its bias shows in the pictures, not here). Chen et
    al. (2015) estimate the same variability by the bootstrap; two halves
    cost two fits per bandwidth.
    """
    x = np.asarray(compute(as_array(X, name="X", min_rows=8))[0], dtype=np.float64)
    rng = as_generator(random_state)
    order = rng.permutation(len(x))
    halves = x[order[: len(x) // 2]], x[order[len(x) // 2 :]]
    queries = x[rng.choice(len(x), size=min(int(n_queries), len(x)), replace=False)]
    hs = np.asarray(bandwidths, dtype=np.float64)
    instability, kept = [], []
    for h in hs:
        a, b = (DensityRidge(bandwidth=float(h), **params).fit(half, queries=queries).ridge_points_ for half in halves)
        ab = NeighborIndex(method="kdtree").fit(b).query_block(a, 1)[1][:, 0]
        ba = NeighborIndex(method="kdtree").fit(a).query_block(b, 1)[1][:, 0]
        instability.append(0.5 * (ab.mean() + ba.mean()))
        kept.append(len(a) + len(b))
    return RidgeStability(hs, np.array(instability), np.array(kept))


def __getattr__(name: str) -> Any:  # the names renamed in 0.2, with a warning
    return _deprecated.renamed(name, globals(), __name__)
