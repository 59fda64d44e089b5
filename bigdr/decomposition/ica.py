"""Independent component analysis for data larger than memory: FastICA with one pass per iteration.

Whitening comes from the one-pass mergeable covariance (the state of
``PCA``'s covariance solver); each fixed-point iteration is one blockwise
reduction over the rows (:mod:`bigdr.core.ica`), so ``fit`` runs out of core
and on a cluster. ``sample_size`` runs the iterations on a uniform sample of
rows held in memory first and finishes with passes over all rows, which
usually need only a few.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.linalg

from .._random import resolve_seed
from .._validation import check_choice, check_int, check_n_features, check_real
from ..base import BigdrEstimator, chunk_bytes_of, wants_numpy
from ..blockwise.reduce import tree_reduce
from ..blockwise.sampling import uniform_sample
from ..core.ica import (
    FUNCTIONS,
    ICASums,
    change,
    deflation_step,
    ica_sums,
    merge_sums,
    parallel_step,
    sym_decorrelation,
    whitening,
)
from ..core.stats import Moments, QRState
from ..exceptions import ConvergenceWarning
from ..io import as_array, with_finite_check
from ..runtime.compute import compute
from ..runtime.memory import Part, streaming
from ._pca_solvers import MERGEABLE, solver_memory

ALGORITHMS = ("parallel", "deflation")
WHITEN = ("unit-variance", "arbitrary-variance")
#: whiten_solver -> PCA's one-pass state it reads: the scatter (eigh) or the R factor of the centred rows (svd).
WHITEN_ROUTES = {"eigh": "covariance", "svd": "tsqr"}


class FastICA(BigdrEstimator):
    r"""FastICA (Hyvarinen 1999), out of core: one pass to whiten, then one pass per iteration.

    The rows are centred and whitened by the top ``n_components``
    eigenpairs of their covariance, ``z = sqrt(n) K (x - mean)`` with
    ``K = D^{-1} U^T``, then an orthogonal ``W`` is found by the fixed
    point

    .. math:: w \leftarrow E[z\, g(w^T z)] - E[g'(w^T z)]\, w

    for all units at once with symmetric decorrelation
    ``W <- (W W^T)^{-1/2} W`` (``algorithm="parallel"``) or one unit at a
    time with Gram-Schmidt (``"deflation"``), until
    ``max_i ||<w_i, w_i'>| - 1| < tol``. The expectations are sums over
    rows, merged over blocks, so each iteration is one pass; with the same
    whitening and ``w_init`` the iterations are scikit-learn's.

    Parameters
    ----------
    n_components : int or None
        Sources to find (default ``min(n, p)``).
    algorithm : {"parallel", "deflation"}
        All sources at once with symmetric decorrelation, or one after another.
    fun : {"logcosh", "exp", "cube"} or callable
        ``g = tanh(alpha u)``, ``u exp(-u^2/2)`` or ``u^3``; or scikit-learn's
        callable ``fun(u, **fun_args)`` taking the k x rows projections of a
        row block and returning ``g(u)`` and the row mean of ``g'(u)``.
    fun_args : dict or None
        ``{"alpha": a}`` for logcosh, ``1 <= a <= 2``; the keyword arguments of a callable ``fun``.
    whiten : {"unit-variance", "arbitrary-variance", False}
        ``unit-variance`` scales the unmixing so the sources have unit
        variance (scikit-learn's default). False: the rows are taken as
        already white (neither centred nor whitened; ``n_components`` is
        ignored with a warning, as in scikit-learn).
    whiten_solver : {"svd", "eigh"}
        ``svd`` (scikit-learn's default): the singular vectors of the centred
        rows from the R factor of a one-pass TSQR, accurate for
        rank-deficient data; ``eigh``: the eigenvectors of the one-pass
        scatter ``Xc^T Xc`` (cheaper per block, warns when eigenvalues are
        too small to trust, as scikit-learn does). Both are one pass.
    max_iter : int
        Iterations at most (per unit for deflation), in each phase.
    tol : float
        Stop when ``max_i ||<w_i, w_i'>| - 1|`` falls below this (the unmixing vectors stop turning).
    w_init : array (n_components, n_components) or None
        Initial unmixing matrix (default: standard normal from ``random_state``, drawn as
        scikit-learn draws it, so the same int seed starts both at the same matrix).
    sample_size : int or None
        Iterate first on a uniform sample of this many rows held in memory,
        then finish with passes over all rows from where it stopped.
    random_state : int, Generator or None
        Seed of the initial unmixing matrix and of the sample.

    Attributes
    ----------
    components_ : ndarray (n_components, n_features)
        The unmixing matrix applied to centred rows: ``S = (X - mean_) components_^T``.
    mixing_ : ndarray (n_features, n_components)
        Its pseudo-inverse.
    mean_, whitening_ : ndarray
    n_iter_ : int
        Iterations (the most of any unit for deflation), both phases.
    n_passes_ : int
        Passes over all rows: the whitening pass, the sample's, and one per full-data iteration.
    convergence_ : float
        The final ``max_i ||<w_i, w_i'>| - 1|``.
    converged_ : bool

    References
    ----------
    Hyvarinen, A. (1999). Fast and robust fixed-point algorithms for
    independent component analysis. IEEE Trans. Neural Networks 10(3), 626-634.

    Hyvarinen, A. & Oja, E. (2000). Independent component analysis:
    algorithms and applications. Neural Networks 13(4-5), 411-430.
    """

    def __init__(
        self,
        n_components: int | None = None,
        *,
        algorithm: str = "parallel",
        fun: str = "logcosh",
        fun_args: dict | None = None,
        whiten: Any = "unit-variance",
        max_iter: int = 200,
        tol: float = 1e-4,
        w_init: Any = None,
        sample_size: int | None = None,
        random_state: Any = None,
        whiten_solver: str = "svd",
    ) -> None:
        self.n_components = n_components
        self.whiten_solver = whiten_solver
        self.algorithm = algorithm
        self.fun = fun
        self.fun_args = fun_args
        self.whiten = whiten
        self.max_iter = max_iter
        self.tol = tol
        self.w_init = w_init
        self.sample_size = sample_size
        self.random_state = random_state

    def _check_params(self) -> float:
        if self.n_components is not None:
            check_int(self.n_components, "n_components")
        check_choice(self.algorithm, "algorithm", ALGORITHMS)
        if not callable(self.fun):
            check_choice(self.fun, "fun", FUNCTIONS)
        if not (self.whiten is False or self.whiten in WHITEN):
            raise ValueError(f"whiten must be 'unit-variance', 'arbitrary-variance' or False; got {self.whiten!r}.")
        check_choice(self.whiten_solver, "whiten_solver", tuple(WHITEN_ROUTES))
        check_int(self.max_iter, "max_iter")
        check_real(self.tol, "tol", low=0.0)  # 0: never converged by tol, so max_iter iterations and a warning
        if self.sample_size is not None:
            check_int(self.sample_size, "sample_size", low=2)
        if callable(self.fun):
            return 1.0
        return check_real((self.fun_args or {}).get("alpha", 1.0), "fun_args['alpha']", low=1.0, high=2.0)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        p = Xd.shape[1]
        parts = {"stream": streaming(chunk_bytes_of(Xd), 3)}
        if self.whiten is not False:  # the whitening pass's state, as PCA's solver of the same name holds it
            parts["states"] = solver_memory(WHITEN_ROUTES[self.whiten_solver], Xd, None, 0, 0.0, 0, 0)["states"]
        if self.sample_size is not None:
            parts["sample"] = Part(3 * int(self.sample_size) * p * 8, "the sample and its whitened copy", "sample_size")
        return parts

    # -- fitting ------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> FastICA:
        """Fit the unmixing matrix to ``X`` (numpy, dask, zarr, h5py or a path)."""
        alpha = self._check_params()
        Xd = as_array(X, check_finite=False)
        n, p = Xd.shape
        k = min(n, p) if self.n_components is None or self.whiten is False else int(self.n_components)
        if self.whiten is False and self.n_components is not None:
            warnings.warn("Ignoring n_components with whiten=False.", UserWarning, stacklevel=2)
        if k > min(n, p):
            raise ValueError(f"n_components={k} must be at most min(n_samples, n_features) = {min(n, p)}.")
        self._check_memory(Xd)
        self.seed_ = resolve_seed(self.random_state)
        dtype = Xd.dtype if Xd.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        if self.whiten is False:  # the rows are white already: z = x
            state, K, white, mean = None, np.eye(p), np.eye(p), np.zeros(p)
            Xd = with_finite_check(Xd)  # the fixed-point passes read the data unchanged; NaN/Inf named there
        else:
            state, K = self._whitening(Xd, k)
            white, mean = np.sqrt(n) * K, state.mean
        W0 = self._initial(k)
        passes = 0 if state is None else 1
        sample = None
        kernel = functools.partial(ica_sums, fun=self.fun, alpha=alpha, fun_args=self.fun_args)

        def full(Wm: np.ndarray) -> ICASums:
            shared = (dask.delayed(mean), dask.delayed(white), dask.delayed(Wm))
            (s,) = compute(tree_reduce(Xd, kernel, merge_sums, shared=shared))
            return s

        phases: list[tuple[Any, bool]] = [(full, True)]
        if self.sample_size is not None and self.sample_size < n:
            sample = np.asarray(uniform_sample(Xd, int(self.sample_size), self.seed_)[0], dtype=np.float64)
            passes += 1
            phases.insert(0, (lambda Wm: kernel(sample, mean, white, Wm), False))
        if self.algorithm == "parallel":
            W, iters, lim, full_passes = self._parallel(sym_decorrelation(W0), phases)
        else:
            W, iters, lim, full_passes = self._deflation(W0, phases)
        passes += full_passes
        self.converged_ = bool(lim < self.tol)
        if not self.converged_:
            warnings.warn(
                f"FastICA did not converge. Consider increasing tolerance or the maximum number of iterations. "
                f"After max_iter={self.max_iter} iterations the last change was {lim:.3g} > tol={self.tol}; "
                f"sample_size iterates on a sample first.",
                ConvergenceWarning,
                stacklevel=2,
            )
        components = W @ K
        if self.whiten == "unit-variance":  # each source's standard deviation, from the one-pass state
            if isinstance(state, QRState):
                var = ((components @ state.R.T) ** 2).sum(1)
            else:
                assert isinstance(state, Moments)
                var = np.einsum("ij,jk,ik->i", components, state.scatter, components)
            # a source in the data's null space has no variance: kept finite, as scikit-learn's std division is
            components = components / np.sqrt(np.maximum(var, np.finfo(np.float64).tiny) / n)[:, None]
        self.components_ = components.astype(dtype)
        self.mixing_ = scipy.linalg.pinv(components).astype(dtype)
        self.mean_ = mean.astype(dtype)
        self.__dict__.pop("whitening_", None)
        if state is not None:  # scikit-learn has no whitening_ for data taken as white
            self.whitening_ = K.astype(dtype)
        self.n_iter_ = iters
        self.n_passes_ = passes
        self.convergence_ = lim
        self.n_features_in_ = int(p)
        self.n_samples_seen_ = int(n)
        self.n_components_ = k
        return self

    def _whitening(self, Xd: da.Array, k: int) -> tuple[Moments | QRState, np.ndarray]:
        """The one-pass state of the rows (scatter or R factor, by ``whiten_solver``) and ``K`` (k x p)."""
        block_fn, merge, eigen = MERGEABLE[WHITEN_ROUTES[self.whiten_solver]]
        (state,) = compute(tree_reduce(Xd, block_fn, merge, with_offset=True))
        spread = np.einsum("ij,ij->j", state.R, state.R) if isinstance(state, QRState) else np.diag(state.scatter)
        constant = np.flatnonzero(spread <= np.finfo(np.float64).eps ** 2 * max(float(spread.max()), 0.0))
        if len(constant):
            raise ValueError(f"Column(s) {constant[:10].tolist()} are constant; drop them before FastICA.")
        eig = eigen(state)
        if self.whiten_solver == "eigh" and np.any(eig.values < np.finfo(np.float64).eps * 10):
            warnings.warn("There are some small singular values, using whiten_solver = 'svd' might lead to more "
                          "accurate results.", UserWarning, stacklevel=3)  # fmt: skip
        K, _ = whitening(eig.values, eig.vectors, k)
        return state, K

    def _initial(self, k: int) -> np.ndarray:
        if self.w_init is None:  # drawn as scikit-learn draws it, so an int random_state starts both alike
            return np.random.RandomState(self.seed_ % 2**32).normal(size=(k, k))
        W0 = np.asarray(self.w_init, dtype=np.float64)
        if W0.shape != (k, k):
            raise ValueError(f"w_init has shape {W0.shape}; it must be (n_components, n_components) = {(k, k)}.")
        return W0

    def _parallel(self, W: np.ndarray, phases: list) -> tuple[np.ndarray, int, float, int]:
        iters, full_passes, lim = 0, 0, np.inf
        for sums_of, reads_all in phases:
            for _ in range(int(self.max_iter)):
                W1 = parallel_step(W, sums_of(W))
                iters += 1
                full_passes += reads_all
                lim, W = change(W1, W), W1
                if lim < self.tol:
                    break
        return W, iters, lim, full_passes

    def _deflation(self, W0: np.ndarray, phases: list) -> tuple[np.ndarray, int, float, int]:
        k = len(W0)
        W = np.zeros((k, k))
        most, full_passes, worst = 0, 0, 0.0
        for j in range(k):
            w = W0[j] / np.sqrt(np.sum(W0[j] ** 2))
            iters, lim = 0, np.inf
            for sums_of, reads_all in phases:
                for _ in range(int(self.max_iter)):
                    w1 = deflation_step(w, W[:j], sums_of(w[None, :]))
                    iters += 1
                    full_passes += reads_all
                    lim, w = change(w1, w), w1
                    if lim < self.tol:
                        break
            W[j] = w
            most, worst = max(most, iters), max(worst, lim)
        return W, most, worst, full_passes

    # -- using the model ------------------------------------------------------------
    def _lazy_embedding(self, X: Any) -> da.Array:
        Xd = as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, "FastICA")
        dtype = Xd.dtype if np.issubdtype(Xd.dtype, np.floating) else np.float64
        return (Xd.astype(dtype) - self.mean_.astype(dtype)) @ self.components_.T.astype(dtype)

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """The sources of ``X``: ``(X - mean_) components_^T``, blockwise."""
        self._check_fitted()
        Y = self._lazy_embedding(X)
        return compute(Y)[0] if wants_numpy(X) else Y

    def inverse_transform(self, S: Any) -> np.ndarray | da.Array:
        """Rows from sources: ``S mixing_^T + mean_``."""
        self._check_fitted()
        Sd = as_array(S, name="S", min_rows=1)
        check_n_features(Sd.shape[1], self.n_components_, "FastICA", "S")
        dtype = Sd.dtype if np.issubdtype(Sd.dtype, np.floating) else np.float64
        X = Sd.astype(dtype) @ self.mixing_.T.astype(dtype) + self.mean_.astype(dtype)
        return compute(X)[0] if wants_numpy(S) else X

    def summary(self) -> dict[str, Any]:
        return {"n_iter": self.n_iter_, "n_passes": self.n_passes_, "convergence": self.convergence_}

    def describe(self) -> str:
        state = "converged" if self.converged_ else "NOT converged"
        return (
            f"FastICA ({self.algorithm}, {self.fun}): {self.n_components_} sources, {state} in {self.n_iter_} "
            f"iterations, {self.n_passes_} passes over the data (last change {self.convergence_:.2g})"
        )
