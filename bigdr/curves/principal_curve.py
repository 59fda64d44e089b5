"""Regularized principal curves for data larger than memory: one pass over the rows per iteration.

:mod:`bigdr.core.curves` holds the mathematics (Smola et al. 2001). Here the
projection step and the sums of the coefficient step run blockwise in one
pass (a tree reduction of :class:`~bigdr.core.curves.CurveSums`), so ``fit``
reads the data once per iteration whatever n is, on threads or a cluster.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np

from .._random import as_generator, resolve_seed
from .._validation import check_choice, check_int, check_n_features, check_real
from ..base import BigdrEstimator, chunk_bytes_of, like_input
from ..blockwise.reduce import tree_reduce
from ..blockwise.sampling import uniform_sample
from ..core.curves import (
    PIECE_ROWS,
    CurveSums,
    centres,
    curve_sums,
    empty_sums,
    kernel,
    latent_grid,
    merge_curve_sums,
    penalty,
    project,
    settled,
    solve_alpha,
    warn_unconverged,
)
from ..core.eigen import scatter_eigh
from ..core.stats import extremes, merge_extremes, merge_moments, scatter_moments
from ..graph.sparse import geodesic_coordinates
from ..io import as_array, chunk_budget
from ..runtime.compute import compute
from ..runtime.memory import Part, streaming

#: Input chunks of at most 32 MiB: the projection costs far more than the read, so smaller chunks lose no
#: time, and the blocks in flight hold less (10M x 10 rows: peak 897 MiB with 128 MiB chunks, 552 with 32).
CHUNK_BYTES = 32 * 2**20


#: Rows of a uniform sample whose coordinates along their manifold start the curve (``init="geodesic"``).
INIT_ROWS = 2_000
INITS = ("geodesic", "pca")


def _centred_pieces(block: np.ndarray, mean: np.ndarray):
    """The block's rows, centred in float64, ``PIECE_ROWS`` at a time (memory independent of the block)."""
    for s in range(0, len(block), PIECE_ROWS):
        yield np.asarray(block[s : s + PIECE_ROWS], dtype=np.float64) - mean


def _initial_sums(block: np.ndarray, mean: np.ndarray, directions: np.ndarray, span: np.ndarray, c, width) -> Any:
    total = empty_sums(len(c), len(mean), c.shape[1])
    for X in _centred_pieces(block, mean):
        xi = np.clip((X @ directions - span[0]) / (span[1] - span[0]), 0.0, 1.0)
        total = merge_curve_sums(total, curve_sums(X, xi, c, width, 0.0))
    return total


def _iteration_sums(block: np.ndarray, mean: np.ndarray, alpha: np.ndarray, c, width, grid) -> Any:
    total = empty_sums(len(c), len(mean), c.shape[1])
    for X in _centred_pieces(block, mean):
        xi, sq, K = project(X, alpha, c, width, grid)
        total = merge_curve_sums(total, curve_sums(X, xi, c, width, float(sq.sum()), K))
    return total


def _project_block(block: np.ndarray, mean: np.ndarray, alpha: np.ndarray, c, width, grid) -> np.ndarray:
    out = [project(X, alpha, c, width, grid) for X in _centred_pieces(block, mean)]
    if not out:
        return np.zeros((0, c.shape[1] + 1))
    return np.column_stack([np.concatenate([p.xi for p in out]), np.sqrt(np.concatenate([p.sq for p in out]))])


def _subsample(rows: np.ndarray, size: int, seed: int) -> np.ndarray:
    """``size`` of ``rows`` drawn uniformly (all of them if there are no more)."""
    if len(rows) <= size:
        return rows
    return rows[np.sort(as_generator(seed).choice(len(rows), size, replace=False))]


def _geodesic_start(rows, mean, directions, c, width, lam, seed) -> np.ndarray:
    """The first ``alpha``: from coordinates of :data:`INIT_ROWS` of ``rows`` along their manifold.

    Each axis is turned to run the way its principal component does (``init="pca"``'s direction).
    """
    X = np.asarray(_subsample(rows, INIT_ROWS, seed), dtype=np.float64) - mean
    if len(X) <= c.shape[1] + 1:
        raise ValueError(f"{len(X)} rows are too few to start a curve; give more rows or init='pca'.")
    z = geodesic_coordinates(X, c.shape[1])
    along = X @ directions
    for e in range(z.shape[1]):
        if np.dot(z[:, e] - z[:, e].mean(), along[:, e]) < 0:
            z[:, e] = 1.0 - z[:, e]
    return solve_alpha(curve_sums(X, z, c, width, 0.0), c, width, lam)


class PrincipalCurve(BigdrEstimator):
    r"""A regularized principal curve (Smola, Mika, Schoelkopf & Williamson 2001), out of core.

    The curve ``f(z) = mean + sum_j alpha_j k(c_j, z)``, ``z`` in [0, 1]
    (in [0, 1]^2 for :class:`PrincipalManifold`),
    with ``M = n_centres`` centres ``c_j`` evenly spaced and a Gaussian
    kernel of width ``width`` in the latent coordinate, minimises

    .. math:: R[f] = \frac{1}{n} \sum_i \min_z \|x_i - f(z)\|^2
              + \frac{\lambda}{2} \operatorname{tr}(\alpha^T K_c \alpha)

    by alternating the projections ``xi_i`` (nearest point of a latent grid
    of ``grid_size`` points, then Newton steps) and the closed form
    ``alpha = (K_xi^T K_xi + (lambda n / 2) K_c)^{-1} K_xi^T (X - mean)``.
    Both happen in one blockwise pass per iteration: the sums are merged
    over row blocks (exact for any chunking). The first pass is the
    covariance (the mean, and the principal components). The curve starts
    from ``init``: by default the coordinates of a uniform sample of
    :data:`INIT_ROWS` rows along their manifold (landmark Isomap of the
    sample, :func:`bigdr.graph.sparse.geodesic_coordinates`; one pass draws
    it), each axis scaled to [0, 1] and oriented along a principal
    component (a closed loop, whose first coordinate folds it in half, by
    its angle in the first two, cut open at the widest gap), from which the
    first ``alpha`` is solved. Iterations stop
    when ``R`` changes by less than ``tol`` (relative) or after
    ``max_iter``.

    Parameters
    ----------
    n_centres : int or None
        ``M``, the number of kernel centres per latent axis (default 20 for a
        curve, 10 for a manifold: 100 centres).
    width : float or None
        Kernel width in the latent coordinates (default ``2 / (M - 1)``, twice
        the spacing of the centres).
    reg : float
        ``lambda``: weight of the smoothness penalty against the mean squared
        distance (both in squared data units).
    grid_size : int or None
        Points per latent axis of the projection step's search grid (default
        ``10 M`` for a curve, ``4 M`` for a manifold).
    max_iter : int
        Iterations at most over all rows (the sample's are counted apart);
        reaching it first raises a ``ConvergenceWarning`` with the change of
        the last one.
    tol : float
        Stop when the objective changes by at most this fraction in an
        iteration. The alternation converges slowly, so the default, 1e-3,
        was chosen from measurement: it is reached on a noisy closed circle,
        a swiss roll and an S-curve (the documentation's curves page gives
        the iterations and how far R[f] then is above a run of 400
        iterations); 1e-6, the earlier default, was reached on none of them
        in 50 iterations. Lower it for a closer fit, at one pass per
        iteration.
    sample_size : int or None
        Iterate first on a uniform sample of this many rows held in memory
        (one pass draws it) until ``R`` settles, then finish with passes over
        all rows. The passes over all rows then only polish a curve that is
        already close: with ``None`` every iteration reads all rows.
    init : {"geodesic", "pca"}
        ``"geodesic"``: the start above. ``"pca"``: the first principal
        component ``v_1`` gives the initial projections, ``t = (x - mean)
        v_1`` scaled to [0, 1] by its range (a second pass; a manifold takes
        the first two components), and a third pass their sums. A bent curve
        folds onto itself along ``v_1``, and the iterations keep the fold:
        on a noisy three-quarter helix the median distance to the true curve
        stayed at 0.009 to 0.012 from 1,000 to 1,000,000 rows from ``"pca"``,
        and fell from 0.0067 to 0.0021 from ``"geodesic"`` (the
        documentation's curves page).
    random_state : int, Generator or None
        Seed of the samples.

    Attributes
    ----------
    alpha_ : ndarray (n_centres, n_features)
    mean_ : ndarray (n_features,)
    objective_ : list of float
        ``R[f]`` of the curve at each pass, as measured by the projections of that pass.
    n_iter_, n_passes_ : int
        Iterations over all rows (a projection and a coefficient step each; at most ``max_iter``),
        and passes over all rows (the covariance, sample, and for ``init="pca"`` range and
        first-sums passes included).
    n_sample_iter_ : int
        Coefficient steps on the sample (0 without ``sample_size``).
    sample_objective_ : list of float
        ``R[f]`` on the sample at each of its iterations.
    converged_ : bool
    gram_, cross_ : ndarray
        The sums ``K_xi^T K_xi`` and ``K_xi^T (X - mean)`` of the last pass (what :meth:`partial_fit` adds to).
    residual_sum_ : float
    n_samples_seen_ : int
    latent_range_ : ndarray (2, d)
        The smallest and largest latent coordinates of the rows at the last pass (the part of the
        curve the data use; beyond it the curve is extrapolated).

    References
    ----------
    Smola, A. J., Mika, S., Schoelkopf, B. & Williamson, R. C. (2001).
    Regularized principal manifolds. Journal of Machine Learning Research 1,
    179-209.
    """

    _capabilities = frozenset({"spectrum", "structure"})

    #: Latent dimensions: 1 for a curve (:class:`PrincipalManifold` has 2).
    _latent_dim = 1

    def __init__(
        self,
        n_centres: int | None = None,
        *,
        width: float | None = None,
        reg: float = 1e-3,
        grid_size: int | None = None,
        max_iter: int = 100,
        tol: float = 1e-3,
        sample_size: int | None = None,
        init: str = "geodesic",
        random_state: Any = None,
    ) -> None:
        self.n_centres = n_centres
        self.width = width
        self.reg = reg
        self.grid_size = grid_size
        self.max_iter = max_iter
        self.tol = tol
        self.sample_size = sample_size
        self.init = init
        self.random_state = random_state

    def _dims(self) -> tuple[int, int, int]:
        """Latent dimensions, centres per axis, search grid points per axis (the defaults filled in)."""
        d = self._latent_dim
        M = (20 if d == 1 else 10) if self.n_centres is None else check_int(self.n_centres, "n_centres", low=3)
        G = (10 if d == 1 else 4) * M if self.grid_size is None else check_int(self.grid_size, "grid_size", low=M)
        return d, M, G

    def _settings(self) -> tuple[np.ndarray, float, np.ndarray]:
        d, M, G = self._dims()
        width = 2.0 / (M - 1) if self.width is None else check_real(self.width, "width", low=0.0, low_open=True)
        check_real(self.reg, "reg", low=0.0, low_open=True)
        check_int(self.max_iter, "max_iter")
        check_real(self.tol, "tol", low=0.0)
        if self.sample_size is not None:
            check_int(self.sample_size, "sample_size", low=2)
        check_choice(self.init, "init", INITS)
        return centres(M, d), width, latent_grid(G, d)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        p = Xd.shape[1]
        d, M, G = self._dims()
        return {
            "stream": streaming(chunk_bytes_of(Xd), 3),
            "projection": Part(
                3 * PIECE_ROWS * G**d * 4, f"distances of {PIECE_ROWS:,} rows to the latent grid", "grid_size"
            ),
            "states": Part(10 * (p * p + M ** (2 * d)) * 8, "scatter matrices and sums being merged", ""),
        }

    def fit(self, X: Any, y: Any = None) -> PrincipalCurve:
        """Fit the curve to ``X`` (numpy, dask, zarr, h5py or a path): one pass per iteration."""
        c, width, grid = self._settings()
        d = c.shape[1]
        Xd = as_array(X, check_finite=False, chunk_bytes=chunk_budget(CHUNK_BYTES))
        n, p = Xd.shape
        if d > p:
            raise ValueError(f"{d} latent dimensions need at least as many features; got n_features = {p}.")
        self._check_memory(Xd)
        self.seed_ = resolve_seed(self.random_state)
        (state,) = compute(tree_reduce(Xd, scatter_moments, merge_moments, with_offset=True))
        eig = scatter_eigh(state)
        if np.any(eig.values[:d] <= 1e-12 * max(float(eig.values.max(initial=0.0)), np.finfo(float).tiny)):
            raise ValueError("The rows do not spread along every latent direction; a curve needs spread data.")
        directions = eig.vectors[:, :d]
        mean = state.mean
        lam = float(self.reg)
        sample_rows = 0 if self.sample_size is None or int(self.sample_size) >= n else int(self.sample_size)
        alpha, sample, passes = self._start(Xd, mean, directions, sample_rows, c, width)
        step = functools.partial(_iteration_sums, c=c, width=width, grid=grid)
        sample_objective: list[float] = []
        if sample is not None:
            for _ in range(int(self.max_iter)):
                sums = step(sample, mean, alpha)
                sample_objective.append(sums.residual / sums.n + 0.5 * lam * penalty(alpha, c, width))
                alpha = solve_alpha(sums, c, width, lam)
                if settled(sample_objective, self.tol):
                    break
        objective: list[float] = []
        for _ in range(int(self.max_iter)):
            (sums,) = compute(tree_reduce(Xd, step, merge_curve_sums, shared=(dask.delayed(mean), dask.delayed(alpha))))
            objective.append(sums.residual / n + 0.5 * lam * penalty(alpha, c, width))
            alpha = solve_alpha(sums, c, width, lam)
            if settled(objective, self.tol):
                break
        converged = settled(objective, self.tol)
        if not converged:
            warn_unconverged(type(self).__name__, objective, float(self.tol), int(self.max_iter))
        self.gram_, self.cross_, self.residual_sum_ = sums.gram, sums.cross, float(sums.residual)
        self.latent_range_ = np.stack([sums.low, sums.high])
        self.n_samples_seen_ = int(n)
        self.alpha_ = alpha
        self.mean_ = mean
        self.objective_ = objective
        self.n_iter_ = len(objective)
        self.n_passes_ = len(objective) + passes
        self.n_sample_iter_ = len(sample_objective)
        self.sample_objective_ = sample_objective
        self.converged_ = converged
        self.n_features_in_ = int(p)
        self.n_components_ = d
        self.width_ = width
        return self

    def _start(self, Xd: da.Array, mean, directions, sample_rows: int, c, width) -> tuple[np.ndarray, Any, int]:
        """The first ``alpha`` (``init``), the sample phase's rows (None without one), passes read so far."""
        lam = float(self.reg)
        if self.init == "geodesic":  # one pass draws the rows that start the curve and the sample phase's
            drawn, where = uniform_sample(Xd, min(len(Xd), max(INIT_ROWS, sample_rows)), self.seed_)
            drawn = drawn[np.argsort(where)]  # in the data's order: with n <= INIT_ROWS the start has no seed
            alpha = _geodesic_start(drawn, mean, directions, c, width, lam, self.seed_)
            return alpha, (_subsample(drawn, sample_rows, self.seed_) if sample_rows else None), 2
        ends = functools.partial(extremes, mean=mean, directions=directions, piece_rows=PIECE_ROWS)
        (span,) = compute(tree_reduce(Xd, ends, merge_extremes))
        first = functools.partial(_initial_sums, c=c, width=width)
        shared = (dask.delayed(mean), dask.delayed(directions), dask.delayed(span))
        (sums,) = compute(tree_reduce(Xd, first, merge_curve_sums, shared=shared))
        alpha = solve_alpha(sums, c, width, lam)
        if not sample_rows:
            return alpha, None, 3
        return alpha, uniform_sample(Xd, sample_rows, self.seed_)[0], 4

    def partial_fit(self, X: Any, y: Any = None) -> PrincipalCurve:
        """Add rows to a fitted curve: one pass over them, then one coefficient step.

        The new rows are projected on the current curve and their sums
        (``K_xi^T K_xi``, ``K_xi^T X``, the residual) are added to those kept
        from the last pass over the rows seen before (``gram_``, ``cross_``);
        ``alpha`` is solved from the total. What is exact: the new rows'
        sums, and the merge (the same for any chunking or order of the
        batches). What is not: the earlier rows keep the projections of
        their last pass, on the curve before this step, and the centre
        ``mean_`` stays that of the first fit; ``fit`` on all rows, or more
        passes, refreshes them. Unfitted, this is ``fit``.
        """
        if not hasattr(self, "alpha_"):
            return self.fit(X)
        c, width, grid = self._settings()
        Xd = as_array(X, check_finite=False, chunk_bytes=chunk_budget(CHUNK_BYTES))
        check_n_features(Xd.shape[1], self.n_features_in_, type(self).__name__)
        step = functools.partial(_iteration_sums, c=c, width=width, grid=grid)
        shared = (dask.delayed(self.mean_), dask.delayed(self.alpha_))
        (new,) = compute(tree_reduce(Xd, step, merge_curve_sums, shared=shared))
        kept = CurveSums(self.n_samples_seen_, self.gram_, self.cross_, self.residual_sum_, *self.latent_range_)
        total = merge_curve_sums(kept, new)
        lam = float(self.reg)
        self.objective_ = [*self.objective_, total.residual / total.n + 0.5 * lam * penalty(self.alpha_, c, width)]
        self.alpha_ = solve_alpha(total, c, width, lam)
        self.gram_, self.cross_, self.residual_sum_ = total.gram, total.cross, float(total.residual)
        self.latent_range_ = np.stack([total.low, total.high])
        self.n_samples_seen_ = int(total.n)
        self.n_iter_ += 1
        return self

    # -- using the model ---------------------------------------------------------------
    def _projected(self, X: Any) -> da.Array:
        c, _, grid = self._settings()
        Xd = as_array(X, name="X", min_rows=1, chunk_bytes=chunk_budget(CHUNK_BYTES))
        check_n_features(Xd.shape[1], self.n_features_in_, "PrincipalCurve")
        return da.map_blocks(
            _project_block,
            Xd,
            mean=self.mean_,
            alpha=self.alpha_,
            c=c,
            width=self.width_,
            grid=grid,
            chunks=(Xd.chunks[0], (c.shape[1] + 1,)),
            dtype=np.float64,
            meta=np.empty((0, 0), dtype=np.float64),
        )

    def _lazy_embedding(self, X: Any) -> da.Array:
        return self._projected(X)[:, : self._latent_dim]

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """Each row's latent coordinate on the curve (n x 1), blockwise."""
        self._check_fitted()
        return like_input(X, self._lazy_embedding(X))

    def distances(self, X: Any) -> np.ndarray | da.Array:
        """Each row's distance to the curve (at its projection), blockwise."""
        self._check_fitted()
        return like_input(X, self._projected(X)[:, self._latent_dim])

    def inverse_transform(self, Z: Any) -> np.ndarray:
        """The curve's points ``f(z)`` at latent coordinates ``Z`` (n x d) in [0, 1]^d."""
        self._check_fitted()
        d, M, _ = self._dims()
        z = np.asarray(Z, dtype=np.float64).reshape(-1, d)
        return kernel(z, centres(M, d), self.width_) @ self.alpha_ + self.mean_

    def describe(self) -> str:
        state = "converged" if self.converged_ else "NOT converged"
        return (
            f"{type(self).__name__}: {len(self.alpha_)} centres, {state} in {self.n_iter_} iterations "
            f"({self.n_passes_} passes), R[f] = {self.objective_[-1]:.6g}"
        )


class PrincipalManifold(PrincipalCurve):
    r"""A regularized principal manifold of two latent dimensions (Smola et al. 2001), out of core.

    :class:`PrincipalCurve` with ``z`` in [0, 1]^2: ``M x M`` centres on an
    even grid, a Gaussian kernel ``k(a, b) = exp(-|a - b|^2 / (2 s^2))``,
    the projection step's search over an even latent grid then safeguarded
    Newton steps in two dimensions, and initial coordinates from ``init`` (by
    default a sample's two coordinates along its manifold; ``"pca"``: the
    first two principal components), each scaled to [0, 1]. ``transform`` gives each
    row's two latent coordinates; the parameters (below, from
    :class:`PrincipalCurve`) and attributes are :class:`PrincipalCurve`'s.

    References
    ----------
    Smola, A. J., Mika, S., Schoelkopf, B. & Williamson, R. C. (2001).
    Regularized principal manifolds. Journal of Machine Learning Research 1,
    179-209.
    """

    _latent_dim = 2


def _parameters_section(doc: str) -> str:
    """The raw ``Parameters`` section of a class docstring, up to the next section."""
    start = doc.index("    Parameters\n    ----------\n")
    end = min(doc.index(h, start + 1) for h in ("\n    Attributes\n", "\n    References\n") if h in doc[start + 1 :])
    return doc[start:end] + "\n"


# One description of the parameters, shown on both classes (and read by the command line's help).
PrincipalManifold.__doc__ = (PrincipalManifold.__doc__ or "").replace(
    "    References\n", _parameters_section(PrincipalCurve.__doc__ or "") + "\n    References\n", 1
)


class RegPath(NamedTuple):
    """What :func:`reg_path` measured for each ``lambda``."""

    regs: np.ndarray
    objective: np.ndarray  # R[f] on the training rows at the last iteration
    held_out: np.ndarray  # mean squared distance of the held-out rows to the curve
    iterations: np.ndarray

    def chosen(self, slack: float = 0.01) -> float:
        """The rule for ``lambda``: the largest whose held-out distance is within ``slack`` of the smallest.

        Past the knee a larger ``lambda`` flattens the curve and the held-out
        rows lie far from it; below it the held-out distance barely moves (the
        curve has ``n_centres`` coefficients per feature to bend with), and the
        largest ``lambda`` there is the smoothest curve that fits new rows as
        well as any on the path.
        """
        check_real(slack, "slack", low=0.0)
        return float(self.regs[self.held_out <= self.held_out.min() * (1.0 + slack)].max())


def reg_path(
    X: Any,
    regs: Any = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1),
    *,
    held_out: float = 0.2,
    manifold: bool = False,
    random_state: Any = None,
    **params: Any,
) -> RegPath:
    """Trace ``R[f]`` on training rows and the distance of held-out rows against ``lambda``.

    A random ``held_out`` fraction of the rows of ``X`` (in memory: pass a
    sample of a large store) is set aside; for each ``lambda`` in ``regs`` a
    :class:`PrincipalCurve` (``manifold=True``: :class:`PrincipalManifold`)
    with the other ``params`` is fitted on the rest, and the held-out rows'
    mean squared distance to it is measured.

    Below a knee the held-out distance barely changes with ``lambda``;
    :meth:`RegPath.chosen` takes the largest ``lambda`` within 1% of its
    smallest (measured on a noisy helix and sine against the distance to
    the true curve: the documentation's curves page).
    """
    x = np.asarray(compute(as_array(X, name="X", min_rows=4))[0], dtype=np.float64)
    check_real(held_out, "held_out", low=0.0, high=1.0, low_open=True, high_open=True)
    rng = as_generator(random_state)
    order = rng.permutation(len(x))
    cut = int(round(len(x) * (1 - held_out)))
    train, test = x[order[:cut]], x[order[cut:]]
    cls = PrincipalManifold if manifold else PrincipalCurve
    lams = np.asarray(regs, dtype=np.float64)
    objective, distance, iterations = [], [], []
    for lam in lams:
        model = cls(**{**params, "reg": float(lam)}).fit(train)
        objective.append(model.objective_[-1])
        distance.append(float(np.mean(model.distances(test) ** 2)))
        iterations.append(model.n_iter_)
    return RegPath(lams, np.array(objective), np.array(distance), np.array(iterations))
