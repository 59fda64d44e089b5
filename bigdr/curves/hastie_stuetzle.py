"""The Hastie-Stuetzle principal curve for data larger than memory: one pass over the rows per iteration.

:mod:`bigdr.core.polyline` holds the mathematics. Here the projections and
the binned sums of the smoother run blockwise in one pass (a tree reduction
of :class:`~bigdr.core.polyline.PolylineSums`), on threads or a cluster. It is
the classical curve beside :class:`bigdr.PrincipalCurve` (Smola et al.'s
regularized curve), for comparison.
"""

from __future__ import annotations

import functools
from typing import Any

import dask
import dask.array as da
import numpy as np

from .._validation import check_int, check_n_features, check_real
from ..base import BigdrEstimator, chunk_bytes_of, like_input
from ..blockwise.reduce import tree_reduce
from ..core.curves import settled, warn_unconverged
from ..core.eigen import scatter_eigh
from ..core.polyline import (
    PIECE_ROWS,
    arc_lengths,
    binned_sums,
    empty_sums,
    merge_polyline_sums,
    project,
    smooth,
)
from ..core.stats import extremes, merge_extremes, merge_moments, scatter_moments
from ..io import as_array, chunk_budget
from ..runtime.compute import compute
from ..runtime.memory import Part, streaming

#: Input chunks of at most 32 MiB: the projection costs more than the read, and smaller blocks hold less.
CHUNK_BYTES = 32 * 2**20


#: The ends are extended by this fraction of the curve's length while fitting, so rows beyond an end project
#: past it and the smoother places the end where they are, rather than piling them on the end vertex.
REACH = 0.1
#: The span starts at START_SPAN and shrinks by SHRINK per iteration down to ``span`` (Hastie & Stuetzle
#: also start wide). Measured on a noisy helix (100k rows): started at span 0.02 the curve folded on the
#: noise, D^2 fell below the noise's and the length grew from 5 to 13.6; from 0.5 it settled in 13 iterations.
START_SPAN = 0.5
SHRINK = 0.7


def _pass_sums(block: np.ndarray, vertices: np.ndarray, n_bins: int) -> Any:
    total = empty_sums(n_bins, vertices.shape[1])
    length = float(arc_lengths(vertices)[-1])
    reach = REACH * length
    for s in range(0, len(block), PIECE_ROWS):
        X = np.asarray(block[s : s + PIECE_ROWS], dtype=np.float64)
        arc, sq = project(X, vertices, reach)
        total = merge_polyline_sums(total, binned_sums(X, arc, sq, -reach, length + reach, n_bins))
    return total


def _project_block(block: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    X = np.asarray(block, dtype=np.float64)
    arc, sq = project(X, vertices)
    length = float(arc_lengths(vertices)[-1])
    return np.column_stack([arc / length, np.sqrt(sq)])


class HastieStuetzleCurve(BigdrEstimator):
    r"""The principal curve of Hastie & Stuetzle (1989), out of core.

    A polyline of ``n_vertices`` vertices, parametrised by arc length
    :math:`\lambda \in [0, L]`, such that each point is the mean of the
    rows that project there, :math:`f(\lambda) = E[x \mid \lambda_f(x) =
    \lambda]`. Starting from the first principal component's segment over
    the rows' range (two passes: covariance, range), each iteration is one
    pass: every row's nearest point on the polyline (over all segments)
    gives its :math:`\lambda_i`, and each vertex, at even arc lengths, becomes
    the local linear kernel smoother of the rows against :math:`\lambda`,

    .. math:: f(l) = \frac{s_2 t_0 - s_1 t_1}{s_0 s_2 - s_1^2},\quad
              s_k = \sum_i w_i (\lambda_i - l)^k,\quad
              t_k = \sum_i w_i (\lambda_i - l)^k x_i,

    with Gaussian weights of bandwidth :math:`h = \mathrm{span} \cdot L`,
    computed from linearly binned sums over ``n_bins`` even points (mergeable
    over blocks, so exact for any chunking; the binning moves the smoother by
    O((L / n_bins)^2)). While fitting, the ends are extended by a tenth of
    the length so that rows beyond an end project past it (as the
    ``stretch`` of R's princurve does), and the new vertices span the rows'
    projections. The span starts at 0.5 and shrinks by 0.7 per iteration
    down to ``span``, as Hastie & Stuetzle start wide: started at 0.02, the
    curve of a noisy helix folded onto the noise (its length grew from 5 to
    13.6 and ``D^2`` fell below the noise's). Iterations stop when the mean
    squared distance :math:`D^2` changes by less than ``tol`` (relative) at
    the final span, or when, at the final span, it has not fallen below its
    best by more than ``tol`` (relative) for ``n_iter_no_change``
    iterations (scikit-learn's rule for its stochastic solvers); the curve of
    the best pass is kept. The iteration is not a descent: on data that are
    not a curve it oscillates (measured on 20,000 rows of a noisy circle, a
    swiss roll and an S-curve: ``D^2`` went up and down by 10-20% for 200
    iterations and never met the first rule), and the second rule stops it
    at its best curve. Both rules are convergence; ``max_iter`` reached
    first raises a ``ConvergenceWarning``.

    Unlike :class:`PrincipalCurve` there is no penalty: the span alone sets
    the smoothness, and the smoother pulls the curve toward the inside of
    its bends (a bias Hastie & Stuetzle discuss): averaging a circle of
    radius ``r`` over arcs of width ``h`` shrinks it by about
    :math:`h^2 / (2 r)`. The default span, 0.02, was measured on a noisy
    helix and sine (noise 0.05): 0.01 let the helix's curve fold as above,
    0.05 flattened the bends (median distance to the true curve 0.03 on the
    helix against 0.005 at 0.02).

    Parameters
    ----------
    n_vertices : int
        Vertices of the polyline.
    span : float
        The smoother's final bandwidth as a fraction of the curve's length.
    n_bins : int or None
        Bins of the smoother's sums (default ``10 * n_vertices``).
    max_iter : int
        Iterations (a projection and a smoothing pass each) at most.
    tol : float
        Stop when the mean squared distance to the curve changes by at most this fraction (at the final span).
    n_iter_no_change : int
        Also stop when the mean squared distance has not improved on its best by more than ``tol`` for this
        many iterations (at the final span), keeping the best curve.

    Attributes
    ----------
    vertices_ : ndarray (n_vertices, n_features)
    length_ : float
        ``L``, the polyline's length.
    objective_ : list of float
        ``D^2`` at each iteration's pass (of the curve before its step).
    n_iter_, n_passes_ : int
    converged_ : bool

    References
    ----------
    Hastie, T. & Stuetzle, W. (1989). Principal curves. Journal of the
    American Statistical Association 84, 502-516.

    Wand, M. P. (1994). Fast computation of multivariate kernel estimators.
    Journal of Computational and Graphical Statistics 3, 433-445.
    """

    _capabilities = frozenset({"spectrum", "structure"})

    def __init__(
        self,
        n_vertices: int = 100,
        *,
        span: float = 0.02,
        n_bins: int | None = None,
        max_iter: int = 50,
        tol: float = 1e-5,
        n_iter_no_change: int = 5,
    ) -> None:
        self.n_vertices = n_vertices
        self.span = span
        self.n_bins = n_bins
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change

    def _settings(self) -> tuple[int, int]:
        G = check_int(self.n_vertices, "n_vertices", low=3)
        B = 10 * G if self.n_bins is None else check_int(self.n_bins, "n_bins", low=3)
        check_real(self.span, "span", low=0.0, high=1.0, low_open=True)
        check_int(self.n_iter_no_change, "n_iter_no_change")
        check_int(self.max_iter, "max_iter")
        check_real(self.tol, "tol", low=0.0)
        return G, B

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        G, B = self._settings()
        p = Xd.shape[1]
        return {
            "stream": streaming(chunk_bytes_of(Xd), 3),
            "projection": Part(8 * PIECE_ROWS * G * 4, f"{PIECE_ROWS:,} rows against every segment", "n_vertices"),
            "states": Part(10 * (B * (p + 1) + p * p) * 8, "binned sums being merged", "n_bins"),
        }

    def fit(self, X: Any, y: Any = None) -> HastieStuetzleCurve:
        """Fit the curve to ``X`` (numpy, dask, zarr, h5py or a path): one pass per iteration."""
        G, B = self._settings()
        Xd = as_array(X, check_finite=False, chunk_bytes=chunk_budget(CHUNK_BYTES))
        n, p = Xd.shape
        self._check_memory(Xd)
        (state,) = compute(tree_reduce(Xd, scatter_moments, merge_moments, with_offset=True))
        eig = scatter_eigh(state)
        if eig.values[0] <= 1e-12 * max(float(eig.values.max(initial=0.0)), np.finfo(float).tiny) or n < 2:
            raise ValueError("The rows do not spread; a curve needs spread data.")
        direction = eig.vectors[:, :1]
        ends = functools.partial(extremes, mean=state.mean, directions=direction, piece_rows=PIECE_ROWS)
        (extent,) = compute(tree_reduce(Xd, ends, merge_extremes))
        vertices = state.mean + np.linspace(extent[0, 0], extent[1, 0], G)[:, None] * direction[:, 0]
        step = functools.partial(_pass_sums, n_bins=B)
        objective: list[float] = []
        converged = False
        best, best_vertices, since_best = np.inf, vertices, 0
        for it in range(int(self.max_iter)):
            (sums,) = compute(tree_reduce(Xd, step, merge_polyline_sums, shared=(dask.delayed(vertices),)))
            objective.append(sums.residual / n)
            length = float(arc_lengths(vertices)[-1])
            reach = REACH * length
            span = max(float(self.span), START_SPAN * SHRINK**it)
            final = span == float(self.span)
            if final and objective[-1] < best * (1 - float(self.tol)):
                best, best_vertices, since_best = objective[-1], vertices, 0
            elif final:
                since_best += 1
            if final and since_best >= int(self.n_iter_no_change):  # oscillating: keep the best curve
                vertices, converged = best_vertices, True
                break
            vertices = smooth(sums, -reach, length + reach, G, span * length)
            if settled(objective, self.tol) and final:
                converged = True
                break
        if not converged:
            warn_unconverged(type(self).__name__, objective, float(self.tol), int(self.max_iter))
        self.vertices_ = vertices
        self.length_ = float(arc_lengths(vertices)[-1])
        self.objective_ = objective
        self.n_iter_ = len(objective)
        self.n_passes_ = len(objective) + 2
        self.converged_ = converged
        self.n_features_in_ = int(p)
        self.n_components_ = 1
        return self

    # -- using the model ---------------------------------------------------------------
    def _projected(self, X: Any) -> da.Array:
        Xd = as_array(X, name="X", min_rows=1, chunk_bytes=chunk_budget(CHUNK_BYTES))
        check_n_features(Xd.shape[1], self.n_features_in_, "HastieStuetzleCurve")
        if len(Xd.chunks[1]) != 1:
            Xd = Xd.rechunk({1: -1})
        return da.map_blocks(
            _project_block,
            Xd,
            vertices=self.vertices_,
            chunks=(Xd.chunks[0], (2,)),
            dtype=np.float64,
            meta=np.empty((0, 0), dtype=np.float64),
        )

    def _lazy_embedding(self, X: Any) -> da.Array:
        return self._projected(X)[:, :1]

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """Each row's position along the curve (n x 1): arc length of its nearest point over ``length_``."""
        self._check_fitted()
        return like_input(X, self._lazy_embedding(X))

    def distances(self, X: Any) -> np.ndarray | da.Array:
        """Each row's distance to the curve, blockwise."""
        self._check_fitted()
        return like_input(X, self._projected(X)[:, 1])

    def inverse_transform(self, Z: Any) -> np.ndarray:
        """The curve's points at positions ``Z`` in [0, 1] (arc length over ``length_``), on the polyline."""
        self._check_fitted()
        z = np.clip(np.asarray(Z, dtype=np.float64).reshape(-1), 0.0, 1.0) * self.length_
        arc = arc_lengths(self.vertices_)
        return np.column_stack([np.interp(z, arc, self.vertices_[:, j]) for j in range(self.n_features_in_)])

    def describe(self) -> str:
        state = "converged" if self.converged_ else "NOT converged"
        return (
            f"HastieStuetzleCurve: {len(self.vertices_)} vertices, length {self.length_:.4g}, {state} in "
            f"{self.n_iter_} iterations ({self.n_passes_} passes), D^2 = {self.objective_[-1]:.6g}"
        )
