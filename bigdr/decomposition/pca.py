"""Principal component analysis for data larger than memory.

PCA (Pearson 1901; Hotelling 1933) finds orthonormal directions ``v_1, ...,
v_k`` maximising the variance of the projected centred data; they are the
top eigenvectors of the sample covariance ``C = Xc^T Xc / (n - 1)``
(equivalently the right singular vectors of ``Xc``), and the embedding is
``(X - mean) V^T``.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import dask.array as da
import numpy as np

from .._random import resolve_seed
from .._validation import check_choice, check_int, check_n_features, check_real
from ..base import BigdrEstimator, wants_numpy
from ..blockwise.linalg import components_from_samples, samples_gram_eig, scatter_eig_with_columns
from ..blockwise.reduce import column_statistics, joined, tree_reduce
from ..core.eigen import LONG_EIGH, Eigenpairs
from ..core.projection import feature_scale, sparse_projection
from ..core.spectrum import select_rank
from ..core.stats import Moments, QRState, sparse_scatter_moments
from ..exceptions import ConvergenceWarning
from ..io import as_array, as_sparse_array, is_sparse_input, with_finite_check
from ..io.obsm import scanpy_pca_entries, scanpy_pca_names
from ..runtime.compute import compute, step
from ..runtime.memory import Part
from ._gaussian import LatentGaussianMixin
from ._pca_drift import SAMPLE_ATTRIBUTES, ResidualDriftMixin
from ._pca_solvers import MERGEABLE, NORMALIZERS, SKLEARN_ROUTES, SOLVERS, choose_solver, route, solver_memory

RANK_RULES = ("mp", "mp-whitened", "mle")
RULE_ATTRIBUTES = ("mp_noise_variance_", "mp_edge_", "feature_noise_variance_", "whitened_edge_", "whitened_spectrum_")


class PCA(ResidualDriftMixin, LatentGaussianMixin, BigdrEstimator):
    """Principal component analysis, exact in one pass over data of any length.

    Parameters
    ----------
    n_components : int, float, "mp" or None
        int: keep that many components. float in (0, 1): keep the fewest
        components whose cumulative explained-variance ratio exceeds it (the
        rule of scikit-learn). ``"mp"``: keep the components whose variance
        lies above the Marchenko-Pastur bulk edge, with the noise level
        estimated from the median eigenvalue (Marchenko & Pastur 1967; Baik,
        Ben Arous & Peche 2005; assumptions in
        :func:`bigdr.core.spectrum.n_components_mp`); it warns
        (``RankSelectionWarning``) when the eigenvalues below the edge do not
        follow the law, as when the noise variance differs between features.
        ``"mp-whitened"``: the same edge after whitening each feature's noise
        by a factor-analysis fit, which holds when the noise varies across
        features (:func:`bigdr.core.spectrum.n_components_whitened`; the
        covariance and tsqr solvers). ``"mle"``: Minka's (2000) Laplace
        approximation of the evidence of each rank (scikit-learn's; needs
        ``n_samples >= n_features`` and an exact solver;
        :func:`bigdr.core.spectrum.minka_log_evidence`). None:
        ``min(n_samples, n_features)`` (``- 1`` with ``svd_solver="arpack"``,
        as in scikit-learn).
    svd_solver : {"auto", "covariance", "tsqr", "samples", "randomized", "full", "covariance_eigh", "arpack"}
        ``"covariance"``: one pass; each row block contributes its mean and
        centred scatter, merged by Chan's update; eigh of the p x p result.
        Fastest; loses relative accuracy on components whose variance is
        below about ``1e-12`` of the largest (float64).
        ``"tsqr"``: one pass; R factors of the centred blocks stacked with a
        mean-correction row (condition number not squared): keeps small
        components down to about ``1e-15`` relative singular value, about 5x
        slower.
        ``"samples"``: the n x n Gram route for n < p (three passes).
        ``"randomized"``: randomized block Krylov iteration with implicit
        centring for wide data (int ``n_components``): at least ``n_iter``
        passes, and more until the accuracy ``tol`` is reached; blocks of
        20 columns on sparse data cached between passes, else ``k + n_oversamples``
        (:func:`bigdr.blockwise.linalg.krylov_plan`).
        scikit-learn's names choose the route that computes what theirs do:
        ``"full"`` is ``"tsqr"``, ``"covariance_eigh"`` ``"covariance"`` and
        ``"arpack"`` ``"randomized"`` (with scikit-learn's checks of
        ``n_components``); ``svd_solver_`` names the route taken.
        ``"auto"``: ``samples`` if n < p and n <= 20000; else ``covariance``
        (exact) if p <= 4096 and its p x p states (about ``10 p^2 x 8``
        bytes) fit the memory limit; else ``randomized``, whose accuracy is
        checked (``tol``).
    whiten : bool
        Scale the embedding to unit variance per component.
    scale : bool
        PCA of the standardised features (scanpy's ``sc.pp.scale`` then
        ``sc.pp.pca``) without forming the scaled matrix: ``D^-1 C D^-1``,
        ``D`` the standard deviations (1 for constant features). No
        ``max_value`` clipping: it needs the dense scaled matrix. Not with
        ``svd_solver="samples"``.
    n_oversamples, n_iter : int
        Extra random directions, and the least number of power iterations
        (passes over the data) of the randomized solver.
    tol : float
        Accuracy target of the randomized solver: it iterates past ``n_iter``
        until the Davis-Kahan estimate ``|R|_2 / (lambda_k - lambda_{k+1})`` of
        the largest angle (radians) to the exact components is at most
        ``tol``, else warns with the angle after ``max_iter`` (``angle_``). 0:
        exactly ``n_iter`` passes.
    max_iter : int or "auto"
        Most passes of the randomized solver with a ``tol`` (``"auto"``: :func:`~bigdr.blockwise.linalg.krylov_plan`).
    random_state : int, numpy Generator or None
        Seed of the randomized solver's test matrix; the seed used is kept in
        ``seed_``.
    copy : bool
        scikit-learn's: whether ``fit`` may overwrite ``X``. bigdr never
        writes to its input, so both values behave as ``True``.
    iterated_power : "auto" or int
        scikit-learn's name for the least number of power iterations:
        ``"auto"`` takes ``n_iter``; an int replaces it.
    power_iteration_normalizer : {"auto", "QR", "LU", "none"}
        scikit-learn's normalisation between power iterations. bigdr's block
        Krylov solver orthonormalises its basis by QR whatever the value:
        scikit-learn's ``"LU"`` and ``"none"`` trade stability for speed in
        memory, where a pass over the data costs far more than the QR of a
        p x (k + oversamples) block.

    Attributes
    ----------
    components_ : ndarray (k, n_features)
        Principal axes (``k`` is ``n_components_``); the entry of largest
        magnitude of each is positive.
    explained_variance_, explained_variance_ratio_, singular_values_ : ndarray (k,)
        As in scikit-learn.
    mean_ : ndarray (n_features,)
    scale_ : ndarray (n_features,)
        The standard deviation of each feature with ``scale=True`` (1 for
        constant features), else ones; ``components_`` live in the scaled space.
    n_components_, n_samples_seen_, n_features_in_ : int
    n_components_rule_ : int
        What ``n_components`` says for all rows seen. A rule ("mp",
        "mp-whitened") that finds no component above the noise gives 0 here,
        while the model keeps one (``n_components_`` = 1).
    noise_variance_ : float
        The mean of the discarded eigenvalues: the noise of probabilistic PCA
        (Tipping & Bishop 1999), whose covariance ``get_covariance`` returns
        and whose likelihood ``score_samples`` and ``score`` give.
    mp_noise_variance_, mp_edge_ : float
        With ``n_components="mp"``: the estimated sigma^2 and the bulk edge.
    feature_noise_variance_, whitened_spectrum_, whitened_edge_
        With ``n_components="mp-whitened"``: each feature's noise variance
        (factor analysis), the eigenvalues of the covariance whitened by it,
        and the edge they are counted against (the 99.9th percentile of the
        largest eigenvalue of white noise, about ``(1 + sqrt(p/n))^2``).
    spectrum_ : ndarray
        Variances of all ``min(n, p)`` components (only the leading ones for
        the randomized solver), for scree plots.
    svd_solver_ : str
        The solver used.
    n_iter_ : int
        Passes over the data after the column statistics (randomized: one
        plus the iterations made).
    angle_ : float
        Estimated largest angle (radians) to the exact components (0: exact solvers).
    seed_ : int
        The seed used.

    Notes
    -----
    numpy input gives numpy output; dask, zarr or path input gives lazy dask
    output. float32 input keeps float32 attributes and output; statistics are
    accumulated in float64 (Chan, Golub & LeVeque 1979 for the merge of
    block scatters; R-factor stacking for ``tsqr``, Demmel et al. 2012).

    References
    ----------
    Pearson, K. (1901). On lines and planes of closest fit to systems of points
    in space. Philosophical Magazine 2(11), 559-572. doi:10.1080/14786440109462720

    Hotelling, H. (1933). Analysis of a complex of statistical variables into
    principal components. J. Educational Psychology 24(6), 417-441.
    doi:10.1037/h0071325

    Chan, T. F., Golub, G. H. & LeVeque, R. J. (1979). Updating formulae and a
    pairwise algorithm for computing sample variances. Technical report
    STAN-CS-79-773, Stanford University.

    Demmel, J., Grigori, L., Hoemmen, M. & Langou, J. (2012).
    Communication-optimal parallel and sequential QR and LU factorizations.
    SIAM J. Sci. Comput. 34(1), A206-A239. doi:10.1137/080731992

    Tipping, M. E. & Bishop, C. M. (1999). Probabilistic principal component
    analysis. J. Royal Statistical Society B 61(3), 611-622.
    doi:10.1111/1467-9868.00196

    Minka, T. P. (2000). Automatic choice of dimensionality for PCA. Advances
    in Neural Information Processing Systems 13, 598-604.

    Marchenko, V. A. & Pastur, L. A. (1967). Distribution of eigenvalues for
    some sets of random matrices. Math. USSR-Sbornik 1(4), 457-483.
    doi:10.1070/SM1967v001n04ABEH001994

    Examples
    --------
    >>> import numpy as np
    >>> import bigdr
    >>> X = np.random.default_rng(0).standard_normal((1000, 5)) * [5, 3, 1, 1, 1]
    >>> pca = bigdr.PCA(n_components=2).fit(X)
    >>> pca.components_.shape, pca.transform(X).shape
    ((2, 5), (1000, 2))
    >>> bool(pca.explained_variance_ratio_.sum() > 0.8)
    True
    """

    n_iter_: int
    angle_: float
    _capabilities = frozenset({"spectrum", "loadings"})
    _accepts_sparse = True  # centred implicitly, never densified

    _preserves_dtype = ("float64", "float32")

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "components_")  # partial_fit of a single row sets the width only

    _persist_private = ("_state_kind", "_state_mean", "_state_matrix", *SAMPLE_ATTRIBUTES)

    def __init__(
        self,
        n_components: int | float | str | None = None,
        *,
        svd_solver: str = "auto",
        whiten: bool = False,
        scale: bool = False,
        n_oversamples: int = 10,
        n_iter: int = 4,
        tol: float = 1e-6,
        max_iter: int | str = "auto",
        random_state: int | None = None,
        copy: bool = True,
        iterated_power: int | str = "auto",
        power_iteration_normalizer: str = "auto",
    ) -> None:
        self.n_components = n_components
        self.copy = copy
        self.iterated_power = iterated_power
        self.power_iteration_normalizer = power_iteration_normalizer
        self.svd_solver = svd_solver
        self.whiten = whiten
        self.scale = scale
        self.n_oversamples = n_oversamples
        self.n_iter = n_iter
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    # -- validation ---------------------------------------------------------
    def _check_params(self) -> None:
        k = self.n_components
        check_choice(self.svd_solver, "svd_solver", (*SOLVERS, *SKLEARN_ROUTES))
        check_choice(self.power_iteration_normalizer, "power_iteration_normalizer", NORMALIZERS)
        if not (isinstance(self.iterated_power, str) and self.iterated_power == "auto"):
            check_int(self.iterated_power, "iterated_power ('auto' or an int >= 0)", low=0)
        if isinstance(k, str):
            if k not in RANK_RULES:
                raise ValueError(f"n_components as a string must be 'mp', 'mp-whitened' or 'mle'; got {k!r}.")
            if k != "mp" and route(self.svd_solver) in ("samples", "randomized"):
                raise ValueError(
                    f"n_components={k!r} cannot be a string with svd_solver={self.svd_solver!r}: it needs the "
                    f"p x p covariance, which svd_solver="
                    f"{self.svd_solver!r} does not form; use svd_solver='covariance' or 'tsqr'."
                )
        elif isinstance(k, bool) or not (k is None or isinstance(k, numbers.Real)):
            raise TypeError(
                f"n_components must be an int, a float in (0, 1), 'mp', 'mp-whitened', 'mle' or None; "
                f"got {type(k).__name__}."
            )
        elif isinstance(k, numbers.Integral):
            check_int(k, "n_components", low=0)  # the data's shape bounds it in fit
        elif k is not None and not 0 < k < 1:
            raise ValueError(f"n_components={k} as a fraction of explained variance must lie strictly between 0 and 1.")
        check_int(self.n_oversamples, "n_oversamples", low=0)
        check_int(self.n_iter, "n_iter", low=0)
        if not (isinstance(self.max_iter, str) and self.max_iter == "auto"):
            check_int(self.max_iter, "max_iter", low=0)
        check_real(self.tol, "tol", low=0.0)
        for name in ("whiten", "scale", "copy"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False; got {getattr(self, name)!r}.")
        if self.scale and self.svd_solver == "samples":
            raise ValueError("scale=True needs svd_solver='covariance', 'tsqr', 'randomized' or 'auto'.")

    def _choose_solver(self, n: int, p: int, sparse: bool = False) -> str:
        return choose_solver(self.svd_solver, n, p, sparse, self.n_components, self.scale)

    def _check_width(self, n: int, p: int) -> None:
        """An int ``n_components`` against the data's shape, in scikit-learn's words."""
        k, m, name = self.n_components, min(n, p), self.svd_solver
        if not isinstance(k, numbers.Integral):
            return
        if not 1 <= k <= m:
            raise ValueError(f"n_components={k} must be between 1 and min(n_samples, n_features)={m} with "
                             f"svd_solver={name!r} (X has shape ({n}, {p})).")  # fmt: skip
        if name == "arpack" and k >= m:
            raise ValueError(f"n_components={k} must be strictly less than min(n_samples, n_features)={m} with "
                             f"svd_solver='arpack' (scikit-learn's rule; 'randomized' takes {m}).")  # fmt: skip

    def _leading(self, n: int, p: int) -> Any:
        """The components a leading-only solver computes: ``n_components``, or for None ``min(n, p)`` (``- 1``
        with ``arpack``, as in scikit-learn)."""
        if self.n_components is not None:
            return self.n_components
        return min(n, p) - (self.svd_solver == "arpack")

    def _least_passes(self) -> int:
        return self.n_iter if isinstance(self.iterated_power, str) else int(self.iterated_power)

    # -- fitting ------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> PCA:
        """Fit the model to ``X`` (numpy, dask, zarr, h5py or a path)."""
        self._check_params()
        sparse = is_sparse_input(X)
        Xd = as_sparse_array(X) if sparse else as_array(X, check_finite=False)
        n, p = Xd.shape
        self._check_width(n, p)
        self._note_genes(X, Xd)
        solver = self._choose_solver(n, p, sparse)
        self._check_memory(Xd)
        self.seed_ = resolve_seed(self.random_state)
        if solver != "covariance" and not sparse:  # the covariance kernel detects NaN/Inf itself, for free
            Xd = with_finite_check(Xd)
        self.svd_solver_ = solver
        self._reset_drift()
        for attr in self._persist_private:
            self.__dict__.pop(attr, None)
        sampler = self._drift_sampler(Xd)  # drift's training rows, drawn by the first pass as it reads
        if solver in MERGEABLE:
            block_fn, merge, _ = MERGEABLE[solver]
            block_fn = sparse_scatter_moments if sparse else block_fn
            (state,) = compute(tree_reduce(Xd, *joined(block_fn, merge, sampler), with_offset=True))
            state, sample = self._split(state, sampler)
            self._store_state(solver, state, Xd.dtype)
        elif solver == "samples":
            col, sample = self._split(compute(column_statistics(Xd, sampler))[0], sampler)
            gram = samples_gram_eig(Xd, col.mean)
            m = min(n, p)
            evals = gram.values[:m]
            k = self.n_components_rule_ = self._select_k(evals / (n - 1), col.scatter.sum() / (n - 1), n, p)
            k = max(k, 1)  # a rule may find no component; the model keeps one
            V = components_from_samples(Xd, col.mean, gram.vectors[:, :k])
            self._set_fitted(evals, V, col.n, col.mean, col.scatter.sum(), Xd.dtype, k)
        else:
            self._fit_randomized(Xd, sampler)
            sample = None if sampler is None else sampler.value
        self._drift_from_sample(sample, keep=solver in MERGEABLE)
        return self

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        n, p = Xd.shape
        solver = self._choose_solver(n, p, sparse=hasattr(Xd._meta, "tocsr"))
        limits = (self.tol, self.max_iter, self._least_passes())
        return solver_memory(solver, Xd, self._leading(n, p), self.n_oversamples, *limits)

    def _fit_randomized(self, Xd: da.Array, sampler: Any = None) -> None:
        n, p = Xd.shape
        k = self._leading(n, p)
        if not isinstance(k, numbers.Integral):
            raise ValueError(f"svd_solver='randomized' needs an int n_components (got {k!r}): it computes only the "
                             f"leading components; use svd_solver='covariance' for a fraction or 'mp'.")  # fmt: skip
        self.n_components_rule_ = int(k)
        tol = float(self.tol) or None
        eig, col, scale = scatter_eig_with_columns(
            Xd, int(k), self.n_oversamples, self._least_passes(), self.seed_, tol=tol, max_iter=self.max_iter,
            criterion="angle", scale=(lambda c: feature_scale(c.scatter, n)) if self.scale else None, also=sampler,
        )  # fmt: skip
        total = col.scatter.sum() if scale is None else (col.scatter / scale**2).sum()
        self._set_fitted(eig.values, eig.vectors, n, col.mean, total, Xd.dtype, k, scale)
        self.n_iter_, self.angle_ = int(eig.n_iter) + 1, float(np.arcsin(min(eig.angle, 1.0)))
        if tol is not None and self.angle_ > tol:
            warnings.warn(
                f"PCA(svd_solver='randomized'): after {self.n_iter_} passes the {k} components are "
                f"within an estimated {self.angle_:.2g} rad of the exact ones, above tol={self.tol:g}: the "
                f"spectrum has little gap after component {k}, so the top-{k} subspace converges slowly. Use "
                f"svd_solver='covariance' (exact; p x p memory), raise max_iter or n_oversamples, or choose "
                f"n_components where the spectrum has a gap.",
                ConvergenceWarning,
                stacklevel=3,
            )

    def partial_fit(self, X: Any, y: Any = None) -> PCA:
        """Merge the batch ``X`` into the model (covariance or tsqr state; exact)."""
        self._check_params()
        solver = "covariance" if self.svd_solver == "auto" else route(self.svd_solver)
        sparse = is_sparse_input(X)
        if sparse and solver != "covariance":
            raise ValueError(f"partial_fit on sparse rows merges the covariance; svd_solver={solver!r} cannot.")
        Xd = as_sparse_array(X, min_rows=1) if sparse else as_array(X, min_rows=1, check_finite=solver != "covariance")
        if solver not in MERGEABLE:
            raise ValueError(
                f"partial_fit needs a mergeable solver ('covariance' or 'tsqr'); svd_solver={self.svd_solver!r}."
            )
        self._check_memory(Xd)
        block_fn, merge, _ = MERGEABLE[solver]
        block_fn = sparse_scatter_moments if sparse else block_fn
        fitted = hasattr(self, "n_samples_seen_")
        self._note_genes(X, Xd, first=not fitted)
        if fitted:
            if getattr(self, "_state_kind", None) != solver:
                raise ValueError(
                    f"This PCA was fitted with svd_solver={getattr(self, 'svd_solver_', None)!r}, whose state "
                    f"cannot be merged; refit with svd_solver='covariance' or 'tsqr' to use partial_fit."
                )
            check_n_features(Xd.shape[1], self.n_features_in_, "PCA")
        # The batch's drift against the model as it was, in the same pass as its statistics.
        drift = hasattr(self, "components_")
        sampler = self._drift_sampler(Xd, offset=self.n_samples_seen_ if fitted else 0)
        results = compute(
            tree_reduce(Xd, *joined(block_fn, merge, sampler), with_offset=True),
            *([self.drift_count(Xd)] if drift else []),
        )
        state, sample = self._split(results[0], sampler)
        if drift:
            self.record_drift(Xd.shape[0], int(results[1]), update=True)
        if fitted:
            state = merge(self._current_state(), state)
        self.svd_solver_ = solver
        self._store_state(solver, state, Xd.dtype, width=getattr(self, "n_components_", None))
        self._drift_from_sample(sample, keep=True, merge=fitted)
        return self

    def _current_state(self) -> Moments | QRState:
        cls = Moments if self._state_kind == "covariance" else QRState
        return cls(self.n_samples_seen_, self._state_mean, self._state_matrix)

    def _store_state(self, kind: str, state: Moments | QRState, dtype: np.dtype, width: int | None = None) -> None:
        self._state_kind = kind
        self._state_mean = state.mean
        self._state_matrix = state[2]
        n, p = state.n, state.mean.shape[0]
        self.n_samples_seen_ = int(n)
        self.n_features_in_ = int(p)
        if n < 2:
            return  # partial_fit: components exist once two rows have been seen
        scale = None
        if self.scale:  # the correlation matrix D^-1 C D^-1, from the unscaled state (which is what merges)
            diagonal = np.diag(state.scatter) if isinstance(state, Moments) else np.einsum("ij,ij->j", state.R, state.R)
            scale = feature_scale(diagonal, n)
            state = (
                Moments(n, state.mean, state.scatter / np.outer(scale, scale))
                if isinstance(state, Moments)
                else QRState(n, state.mean, state.R / scale)
            )
        with step(f"eigendecomposition of the {p:,} x {p:,} covariance", long=p >= LONG_EIGH):
            eig: Eigenpairs = MERGEABLE[kind][2](state)
        m = min(n, p)
        evals = eig.values[:m]
        scatter = state.scatter if isinstance(state, Moments) else state.R.T @ state.R
        k = self._select_k(evals / (n - 1), evals.sum() / (n - 1), n, p, scatter)
        self.n_components_rule_ = k
        k = max(k, 1)  # a rule may find no component; the model keeps one
        if width is not None and not isinstance(self.n_components, numbers.Integral):
            # A fraction or "mp" fixes the output width at the first fit: an
            # embedding store cannot change its number of columns between batches.
            k = min(width, m)
        self._set_fitted(evals, eig.vectors[:, :k], n, state.mean, evals.sum(), dtype, k, scale)

    def _select_k(self, variances: np.ndarray, total: float, n: int, p: int, scatter: np.ndarray | None = None) -> int:
        for name in RULE_ATTRIBUTES:  # from an earlier fit with another rule
            self.__dict__.pop(name, None)
        k, found = select_rank(self.n_components, variances, total, n, p, scatter)
        self.__dict__.update(found)
        return k

    def _set_fitted(self, evals, V, n, mean, total_scatter, dtype, k, scale=None) -> None:
        """Fitted attributes from scatter eigenvalues (descending) and >= k component columns (signs fixed)."""
        variances = evals / (n - 1)
        total = total_scatter / (n - 1)
        p = mean.shape[0]
        m = min(n, p)
        self.n_components_ = int(k)
        self.n_iter_ = 2 if self.svd_solver_ == "samples" else 1  # the randomized solver sets its own
        self.angle_ = 0.0
        self.n_samples_seen_ = int(n)
        self.n_features_in_ = int(p)
        self.mean_ = mean.astype(dtype)
        self.scale_ = (np.ones(p) if scale is None else scale).astype(dtype)
        self.components_ = np.ascontiguousarray(np.asarray(V, dtype=np.float64)[:, :k].T).astype(dtype)
        self.explained_variance_ = variances[:k].astype(dtype)
        self.explained_variance_ratio_ = (variances[:k] / total if total > 0 else np.zeros(k)).astype(dtype)
        self.singular_values_ = np.sqrt(evals[:k]).astype(dtype)
        self.spectrum_ = variances[:m].astype(dtype)
        if k < m:
            if variances.shape[0] >= m:
                noise = variances[k:m].mean()
            else:  # randomized: only the leading eigenvalues are known
                noise = (total - variances[:k].sum()) / (m - k)
        else:
            noise = 0.0
        self.noise_variance_ = float(max(noise, 0.0))

    # -- using the model ------------------------------------------------------
    def _latent_model(self) -> tuple[np.ndarray, np.ndarray]:
        """Probabilistic PCA (Tipping & Bishop 1999): ``W = diag(sqrt(l_j - sigma^2)) V``, ``Psi = sigma^2 I``.

        In the scaled space for ``scale=True``; ``D W`` and ``D^2 sigma^2`` in the data's own.
        """
        var = np.asarray(self.explained_variance_, dtype=np.float64)
        W = np.sqrt(np.maximum(var - self.noise_variance_, 0.0))[:, None] * self.components_.astype(np.float64)
        if self.whiten:  # scikit-learn's model of whitened PCA: components scaled by sqrt(explained_variance_)
            W = W * np.sqrt(var)[:, None]
        scale = np.asarray(getattr(self, "scale_", np.ones(W.shape[1])), dtype=np.float64)
        return W * scale, self.noise_variance_ * scale**2

    n_samples_ = property(lambda self: self.n_samples_seen_, doc="scikit-learn's name for ``n_samples_seen_``.")

    def _score_rows(self, X: Any) -> da.Array:
        return self._check_input(X, "X", self.n_features_in_)

    def _check_input(self, X: Any, name: str, width: int) -> da.Array:
        Xd = as_sparse_array(X, name=name, min_rows=1) if is_sparse_input(X) else as_array(X, name=name, min_rows=1)
        check_n_features(Xd.shape[1], width, "PCA", name)
        return Xd

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """Project ``X`` on the components: ``(X - mean_) components_^T`` (whitened if asked)."""
        self._check_fitted()
        Y = self._lazy_embedding(X)
        return compute(Y)[0] if wants_numpy(X) else Y

    def _lazy_embedding(self, X: Any) -> da.Array:
        Xd = self._check_input(X, "X", self.n_features_in_)
        dtype = Xd.dtype
        W = self._projection()
        if hasattr(Xd._meta, "tocsr"):  # centred implicitly: x V^T - m V^T, the rows never densified
            V = W.T.astype(dtype)
            shift = (self.mean_ @ W.T).astype(dtype)
            Y = da.map_blocks(
                sparse_projection,
                Xd,
                V=V,
                shift=shift,
                chunks=(Xd.chunks[0], (V.shape[1],)),
                dtype=dtype,
                meta=np.empty((0, 0), dtype=dtype),
            )
        else:
            Y = (Xd - self.mean_.astype(dtype)) @ W.T.astype(dtype)
        if self.whiten:
            Y = Y / self._whitening_scale().astype(dtype)
        return Y

    def _projection(self) -> np.ndarray:
        """``components_ / scale_``: what multiplies ``x - mean_`` (models saved before ``scale`` have no scale_)."""
        scale = getattr(self, "scale_", None)
        return self.components_ if scale is None else self.components_ / scale

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        """Fit, then project ``X`` (a second, blockwise pass for dask input)."""
        return self.fit(X).transform(X)

    def inverse_transform(self, Y: Any) -> np.ndarray | da.Array:
        """Map embeddings back to feature space: ``Y components_ + mean_``."""
        self._check_fitted()
        Yd = self._check_input(Y, "Y", self.n_components_)
        dtype = Yd.dtype
        if self.whiten:
            Yd = Yd * self._whitening_scale().astype(dtype)
        X = Yd @ (self.components_ * getattr(self, "scale_", 1.0)).astype(dtype) + self.mean_.astype(dtype)
        return compute(X)[0] if wants_numpy(Y) else X

    def _anndata_names(self, key: str) -> list[str]:
        return scanpy_pca_names(key)

    def _anndata_parts(self, Y: Any, key: str) -> tuple[Any, dict[str, Any]]:
        return Y, scanpy_pca_entries(self, key, zero_center=True)

    def summary(self) -> dict[str, Any]:
        return {"explained_variance_ratio": self.explained_variance_ratio_.tolist(), "svd_solver": self.svd_solver_}

    def describe(self) -> str:
        kept = float(self.explained_variance_ratio_.sum())
        return f"PCA ({self.svd_solver_}): {self.n_components_} components, {100 * kept:.2f}% of variance"
