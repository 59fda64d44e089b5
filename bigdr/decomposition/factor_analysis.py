"""Factor analysis for data larger than memory: one pass, then iterations on the p x p covariance.

The model ``x = W^T z + mu + e``, ``z ~ N(0, I_k)``, ``e ~ N(0, Psi)`` with
``Psi`` diagonal, fitted by maximum likelihood (:mod:`bigdr.core.factor`).
The likelihood depends on the data only through the mean and the sample
covariance, so ``fit`` reads the rows once to form the mergeable scatter
(:func:`bigdr.core.stats.moments_block`, the state of ``PCA``'s covariance
solver) and iterates on it in memory; ``partial_fit`` merges a batch's
scatter and iterates again, so it equals ``fit`` on all rows seen.
"""

from __future__ import annotations

import warnings
from typing import Any

import dask.array as da
import numpy as np

from .._random import resolve_seed
from .._validation import check_choice, check_int, check_n_features, check_real
from ..base import BigdrEstimator, chunk_bytes_of, wants_numpy
from ..blockwise.reduce import merged_bytes, tree_reduce
from ..core.factor import ROTATIONS, fit_factors, posterior_map, rotate
from ..core.spectrum import white_noise_edge
from ..core.stats import Moments, merge_moments, scatter_moments
from ..exceptions import ConvergenceWarning
from ..io import as_array
from ..runtime.compute import compute
from ..runtime.memory import Part, streaming
from ._gaussian import LatentGaussianMixin

#: Scatter matrices alive in the merge tree (as PCA's covariance solver).
#: The p x p state and its eigendecompositions: the widest data factor analysis takes.
MAX_FEATURES = 4096


class FactorAnalysis(LatentGaussianMixin, BigdrEstimator):
    r"""Maximum-likelihood factor analysis, out of core, in one pass over the data.

    Fits ``Cov x = W^T W + Psi`` (``W``: ``n_components x p`` loadings,
    ``Psi``: diagonal noise) to the sample covariance ``S`` by the iterations
    of scikit-learn's ``FactorAnalysis`` (``svd_method="lapack"``): with
    ``s_j, v_j`` the top eigenpairs of ``Psi^{-1/2} S Psi^{-1/2}``,

    .. math:: W = \mathrm{diag}(\sqrt{\max(s_j - 1, 0)})\, V^T \Psi^{1/2}, \qquad
              \Psi \leftarrow \max(\mathrm{diag}(S - W^T W), 10^{-12}),

    until the log-likelihood rises by less than ``tol``. ``S`` comes from one
    blockwise pass (mergeable, any chunking, any number of workers); each
    iteration is one p x p eigendecomposition and reads no data.

    Parameters
    ----------
    n_components : int or None
        Number of factors ``k`` (``None``: all ``p``).
    tol : float
        Stop when the log-likelihood rises by less than this.
    max_iter : int
        Iterations at most; a ``ConvergenceWarning`` says when they ran out.
    rotation : {None, "varimax", "quartimax"}
        Orthogonal rotation of the loadings (Kaiser 1958), as scikit-learn's.
    svd_method : {"lapack", "randomized"}
        How each iteration finds the top ``k`` eigenpairs of the p x p
        matrix: LAPACK's full ``eigh`` (exact) or ``iterated_power``
        randomized subspace iterations (faster for ``k`` much below ``p``).
        bigdr's default is ``"lapack"``, scikit-learn's ``"randomized"``:
        here the iterations work on the one-pass covariance and read no data,
        so the exact route costs little.
    iterated_power : int
        Subspace iterations per eigendecomposition with ``"randomized"``.
    random_state : int, numpy Generator or None
        Seed of the randomized eigensolver (scikit-learn's default 0); the seed used is kept in ``seed_``.
    noise_variance_init : array (n_features,) or None
        Starting noise variances (default ones).
    copy : bool
        scikit-learn's: whether ``fit`` may overwrite ``X``. bigdr never
        writes to its input, so both values behave as ``True``.

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        Loadings ``W`` (rotated when ``rotation`` is set).
    noise_variance_ : ndarray (n_features,)
        ``Psi``.
    mean_ : ndarray (n_features,)
    loglike_ : list of float
        Log-likelihood at each iteration.
    n_iter_, n_samples_seen_, n_features_in_ : int
    converged_ : bool
    whitened_spectrum_ : ndarray (n_features,)
        Eigenvalues of ``Psi^-1/2 S Psi^-1/2`` at the last iteration, descending
        (the top ``n_components`` only with ``svd_method="randomized"``):
        a factor adds ``s_j - 1`` to the white noise's 1, and eigenvalues of
        white noise reach at most about ``whitened_edge_`` (the scree plot).
    whitened_edge_ : float
        The 99.9th percentile of the largest eigenvalue of white noise for
        this n and p (:func:`bigdr.core.spectrum.white_noise_edge`).

    References
    ----------
    Lawley, D. N. & Maxwell, A. E. (1971). Factor Analysis as a Statistical
    Method, 2nd ed. Butterworths.

    Barber, D. (2012). Bayesian Reasoning and Machine Learning, chapter 21.
    Cambridge University Press.

    Kaiser, H. F. (1958). The varimax criterion for analytic rotation in
    factor analysis. Psychometrika 23(3), 187-200.

    Examples
    --------
    >>> import numpy as np, bigdr
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((2000, 2)) @ rng.standard_normal((2, 6)) + 0.3 * rng.standard_normal((2000, 6))
    >>> fa = bigdr.FactorAnalysis(2).fit(X)
    >>> fa.components_.shape, bool(fa.converged_)
    ((2, 6), True)
    """

    _capabilities = frozenset({"spectrum", "loadings"})

    _persist_private = ("_state_mean", "_state_scatter")

    def __init__(
        self,
        n_components: int | None = None,
        *,
        tol: float = 1e-2,
        max_iter: int = 1000,
        rotation: str | None = None,
        svd_method: str = "lapack",
        iterated_power: int = 3,
        random_state: Any = 0,
        noise_variance_init: Any = None,
        copy: bool = True,
    ) -> None:
        self.n_components = n_components
        self.tol = tol
        self.max_iter = max_iter
        self.rotation = rotation
        self.svd_method = svd_method
        self.iterated_power = iterated_power
        self.random_state = random_state
        self.noise_variance_init = noise_variance_init
        self.copy = copy

    def _check_params(self) -> None:
        if self.n_components is not None:
            check_int(self.n_components, "n_components")
        check_real(self.tol, "tol", low=0.0)
        check_int(self.max_iter, "max_iter")
        check_choice(self.rotation, "rotation", ROTATIONS)
        check_choice(self.svd_method, "svd_method", ("lapack", "randomized"))
        check_int(self.iterated_power, "iterated_power", low=0)
        if not isinstance(self.copy, (bool, np.bool_)):
            raise TypeError(f"copy must be True or False; got {self.copy!r}.")

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        p = Xd.shape[1]
        return {
            "stream": streaming(chunk_bytes_of(Xd), 2),
            "states": Part(merged_bytes(p, p), "scatter matrices being merged", ""),
        }

    def _read(self, X: Any) -> tuple[da.Array, Moments]:
        self._check_params()
        Xd = as_array(X, check_finite=False)
        p = Xd.shape[1]
        if p > MAX_FEATURES:
            raise ValueError(
                f"FactorAnalysis holds the {p} x {p} covariance and decomposes it at every iteration; "
                f"it takes at most {MAX_FEATURES} features. Reduce the features first (bigdr.PCA, or a "
                f"random projection)."
            )
        if self.n_components is not None and self.n_components > p:
            raise ValueError(f"n_components={self.n_components} must be at most n_features = {p}.")
        self._check_memory(Xd)
        (state,) = compute(tree_reduce(Xd, scatter_moments, merge_moments, with_offset=True))
        return Xd, state

    def fit(self, X: Any, y: Any = None) -> FactorAnalysis:
        """Fit the model to ``X`` (numpy, dask, zarr, h5py or a path): one pass over the rows."""
        Xd, state = self._read(X)
        self._solve(state, Xd.dtype)
        return self

    def partial_fit(self, X: Any, y: Any = None) -> FactorAnalysis:
        """Merge the batch ``X`` into the covariance (exact) and fit again from all rows seen."""
        Xd, state = self._read(X)
        if hasattr(self, "_state_scatter"):
            check_n_features(Xd.shape[1], self.n_features_in_, "FactorAnalysis")
            state = merge_moments(Moments(self.n_samples_seen_, self._state_mean, self._state_scatter), state)
        self._solve(state, Xd.dtype)
        return self

    def _solve(self, state: Moments, dtype: np.dtype) -> None:
        n, p = state.n, state.mean.shape[0]
        self.n_samples_seen_ = int(n)
        self.n_features_in_ = int(p)
        self._state_mean, self._state_scatter = state.mean, state.scatter
        if n < 2:
            raise ValueError(f"FactorAnalysis needs at least 2 rows; got {n}.")
        S = state.scatter / n
        constant = np.flatnonzero(np.diag(S) <= 1e-12 * max(float(np.diag(S).max()), np.finfo(float).tiny))
        if len(constant):
            raise ValueError(
                f"Column(s) {constant[:10].tolist()} are constant: their noise variance is zero and the "
                f"likelihood has no maximum. Drop them before FactorAnalysis."
            )
        k = p if self.n_components is None else int(self.n_components)
        init = self.noise_variance_init
        if init is not None:
            init = np.asarray(init, dtype=np.float64)
            if init.shape != (p,) or not np.all(np.isfinite(init)) or np.any(init <= 0):
                raise ValueError(
                    f"noise_variance_init must hold {p} positive finite values (one per feature); "
                    f"got shape {init.shape}."
                )
        self.seed_ = resolve_seed(self.random_state)
        result = fit_factors(S, n, k, float(self.tol), int(self.max_iter), init, self.svd_method, self.seed_,
                             int(self.iterated_power))  # fmt: skip
        if not result.converged:
            warnings.warn(
                f"FactorAnalysis did not converge in max_iter={self.max_iter} iterations (the log-likelihood "
                f"still rose by {result.loglike[-1] - result.loglike[-2]:.3g} > tol={self.tol}); raise "
                f"max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        W = rotate(result.components, self.rotation) if self.rotation is not None else result.components
        self.mean_ = state.mean.astype(dtype) if np.issubdtype(dtype, np.floating) else state.mean
        self.components_ = W
        self.noise_variance_ = result.noise_variance
        self.loglike_ = result.loglike
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.n_components_ = k
        self.whitened_spectrum_ = result.spectrum
        self.whitened_edge_ = white_noise_edge(n, p)

    # -- the model (covariance, precision, likelihood: LatentGaussianMixin) -----
    def _latent_model(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.components_, dtype=np.float64), np.asarray(self.noise_variance_, dtype=np.float64)

    def _score_rows(self, X: Any) -> da.Array:
        return self._check_input(X)

    def _check_input(self, X: Any) -> da.Array:
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, "FactorAnalysis")
        return Xd

    def _lazy_embedding(self, X: Any) -> da.Array:
        Xd = self._check_input(X)
        dtype = Xd.dtype if np.issubdtype(Xd.dtype, np.floating) else np.float64
        return (Xd.astype(dtype) - self.mean_.astype(dtype)) @ posterior_map(
            self.components_, self.noise_variance_
        ).astype(dtype)

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """Posterior means of the factors, ``(I + W Psi^-1 W^T)^-1 W Psi^-1 (x - mean_)``, blockwise."""
        self._check_fitted()
        Y = self._lazy_embedding(X)
        return compute(Y)[0] if wants_numpy(X) else Y

    def summary(self) -> dict[str, Any]:
        return {"n_iter": self.n_iter_, "loglike": self.loglike_[-1], "rotation": self.rotation}

    def describe(self) -> str:
        state = "converged" if self.converged_ else "NOT converged"
        return (
            f"FactorAnalysis: {self.n_components_} factors, {state} in {self.n_iter_} iterations "
            f"(log-likelihood {self.loglike_[-1]:.6g}); one pass over {self.n_samples_seen_} rows"
        )
