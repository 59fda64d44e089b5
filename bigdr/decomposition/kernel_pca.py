"""Kernel PCA: exact for moderate n, Nyström or random Fourier features followed by the one-pass PCA for any n.

Kernel PCA (Schölkopf, Smola & Müller 1998) is PCA in the feature space of a
kernel ``k``. With ``K`` the n x n kernel and ``Kc = (I - 1/n) K (I - 1/n)``
its centred form, the eigenpairs ``Kc a_j = lambda_j a_j`` (``|a_j| = 1``)
give the embedding ``y_j(x_i) = sqrt(lambda_j) a_ij``; a new row ``x`` is
projected by ``y_j(x) = kc(x, .) . a_j / sqrt(lambda_j)``, with ``kc(x, .)``
its kernel row centred by the training means. ``eigenvalues_`` are the
``lambda_j`` (scikit-learn's convention).

``method``:

``exact``
    ``K`` formed in row blocks into one n x n array, centred in place (never
    two copies), the top eigenpairs by LAPACK (n <= 2000) or ARPACK; equal to
    scikit-learn's ``KernelPCA``. ``precomputed`` kernels (a numpy array or a
    store) are exact only.
``nystroem``
    ``m`` landmarks ``L`` drawn in one pass; features ``phi(x) = k(x, L) U
    S^-1/2`` from ``K_LL = U S U^T`` (Williams & Seeger 2001), so that
    ``phi(x) . phi(y)`` is the Nyström approximation of ``k(x, y)``. The
    features are centred by their mean, which is exactly the centring in
    feature space of the approximate kernel, and PCA of them is the one-pass
    mergeable scatter (:mod:`bigdr.core.stats`): memory ``O(m^2 + chunk)``,
    any n, ``partial_fit`` merges new rows exactly.
``fourier``
    Random Fourier features of the shift-invariant kernels (``rbf``,
    ``laplacian``; Rahimi & Recht 2007), then the same one-pass PCA: the same
    answer for any chunking and merge order.
``auto``
    ``exact`` up to 20,000 rows (and for precomputed kernels), else ``nystroem``.

Sparse rows (scipy.sparse, dask arrays of CSR blocks, CSR stores, AnnData
files) stay sparse: kernel blocks come from sparse inner products and row
norms, the reference rows and landmarks are kept as CSR, and only the kernel
blocks themselves (rows x reference rows) are dense.

``inverse_transform`` (``fit_inverse_transform=True``) learns the map from
embedding back to rows by kernel ridge regression on the reference rows
(all rows when exact, as scikit-learn; the landmarks, or a uniform sample of
``landmarks`` rows for ``fourier``): ``X ~ k(Z, Z_ref) (k(Z_ref, Z_ref) +
alpha I)^-1 X_ref`` (Bakır, Weston & Schölkopf 2004).

References
----------
Schölkopf, B., Smola, A. & Müller, K.-R. (1998). Nonlinear component analysis
as a kernel eigenvalue problem. Neural Computation 10(5), 1299-1319.
doi:10.1162/089976698300017467

Williams, C. K. I. & Seeger, M. (2001). Using the Nyström method to speed up
kernel machines. Advances in Neural Information Processing Systems 13, 682-688.

Rahimi, A. & Recht, B. (2007). Random features for large-scale kernel
machines. Advances in Neural Information Processing Systems 20, 1177-1184.

Bakır, G. H., Weston, J. & Schölkopf, B. (2004). Learning to find pre-images.
Advances in Neural Information Processing Systems 16, 449-456.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from .._random import resolve_seed
from .._validation import check_choice, check_int, check_n_features, check_real
from ..base import DEPRECATED, ExtensionEstimator, chunk_bytes_of, wants_numpy
from ..blockwise.extension import Extension
from ..blockwise.reduce import tree_reduce
from ..blockwise.sampling import uniform_sample
from ..core.eigen import TOP_SOLVERS, scatter_eigh, top_eigh
from ..core.kernels import KERNELS, SHIFT_INVARIANT, float_rows, fourier_weights, kernel_block, psd_eigenvalues
from ..core.stats import Moments, merge_moments, moments_block
from ..io import as_array, as_sparse_array, from_numpy, is_sparse_input
from ..runtime.compute import compute, shared
from ..runtime.memory import Part, streaming
from .kernel_maps import PIECE_ROWS, KernelMap, feature_state, preimage_block, ridge_block

APPROXIMATIONS = ("auto", "exact", "nystroem", "fourier")
#: ``method="auto"``: exact up to this many rows.
EXACT_MAX = 20_000
#: Rows of one block of the exact kernel (the scratch of a block is this many rows times n).
KERNEL_BLOCK_ROWS = 2_048


def _column_moments(block: np.ndarray) -> Moments:
    return moments_block(block, diagonal=True)


def _entry_sums(block: Any) -> np.ndarray:
    data = block.data.astype(np.float64)
    return np.array([data.sum(), data @ data])


class KernelPCA(ExtensionEstimator):
    """Kernel principal component analysis, exact or by Nyström / random Fourier features.

    Parameters
    ----------
    n_components : int or None
        Components kept. None (scikit-learn's default): all of them (every row
        when exact, every feature otherwise), with the zero eigenvalues
        removed; all components of an exact kernel of 20,000 rows is an
        eigendecomposition of 20,000 x 20,000, so give a number for large data.
    kernel : {"linear", "rbf", "laplacian", "poly", "sigmoid", "cosine", "precomputed"} or callable
        The kernel; ``precomputed``: ``X`` is the kernel matrix itself (only
        its centred form must be symmetric, as the decomposition uses only
        that); a callable ``k(x, y, **kernel_params)`` of two rows, evaluated
        pair by pair by scikit-learn's ``pairwise_kernels`` (slow: for small
        data), exact or nystroem only. The default ``linear`` is
        scikit-learn's; its kernel PCA is PCA, which :class:`bigdr.PCA` computes
        in one pass at any size, so pass the kernel you mean (``rbf``, say).
    gamma : None, "scale", "auto" or float > 0
        Kernel coefficient of rbf, laplacian, poly and sigmoid. None or
        ``"auto"`` (scikit-learn's default): ``1 / p``. ``"scale"``: ``1 / (p
        * Var X)`` with ``Var X`` the variance of all entries (one pass before
        the kernel pass), which does not depend on the data's units.
    degree, coef0 : float
        Of the poly and sigmoid kernels.
    kernel_params : dict or None
        Keyword arguments of a callable kernel (scikit-learn's meaning; a
        named kernel takes ``gamma``, ``degree`` and ``coef0``).
    eigen_solver : {"auto", "dense", "arpack", "randomized"}
        Eigensolver of the exact kernel (:func:`bigdr.core.eigen.top_eigh`):
        ``dense`` LAPACK, ``arpack`` Lanczos, ``randomized`` subspace
        iteration keeping the pairs of largest magnitude (as scikit-learn's);
        ``auto``: LAPACK up to 2,000 rows, ARPACK above (scikit-learn's
        ``auto`` takes ARPACK from 200 rows when fewer than 10 components are
        asked; the results agree to the solvers' accuracy). The approximate
        methods solve a small scatter matrix by LAPACK whatever this is.
    tol : float >= 0
        ARPACK's relative accuracy; 0: machine precision.
    max_iter : int or None
        ARPACK's restarts; None: ARPACK's default.
    iterated_power : int >= 0 or "auto"
        Power iterations of ``randomized``; ``auto``: 7 when fewer than a
        tenth of the rows are asked for, else 4 (scikit-learn's rule).
    remove_zero_eig : bool
        Drop the components of eigenvalue 0 (after eigenvalues below
        ``1e-12`` of the largest are set to 0), so fewer than
        ``n_components`` may be returned; always on for ``n_components=None``.
    method : {"auto", "exact", "nystroem", "fourier"}
        See :mod:`bigdr.decomposition.kernel_pca`.
    landmarks : int
        Landmarks of ``nystroem`` (and reference rows of ``inverse_transform``
        for ``fourier``).
    n_fourier : int
        Random features of ``fourier``.
    fit_inverse_transform : bool
        Also learn the map back to the input space (kernel ridge regression), for ``inverse_transform``.
    alpha : float > 0
        Ridge of ``inverse_transform``.
    random_state : int, numpy Generator or RandomState
        Seed of the landmark draw, the random features and the iterative eigensolvers.
    copy_X : bool
        Accepted for scikit-learn; bigdr always keeps its own copy of the reference rows.
    n_jobs : int or None
        Accepted for scikit-learn; dask's scheduler decides the parallelism.
    n_landmarks : "deprecated"
        The 0.1 name of ``landmarks``, accepted with a FutureWarning until 0.3.

    Attributes
    ----------
    eigenvalues_ : (n_components,) eigenvalues of the centred (approximate) kernel, descending
    eigenvectors_ : (n, n_components) ``a_j`` (exact only)
    gamma_, method_ : the kernel coefficient and method used
    n_features_in_, n_samples_seen_ : int

    References
    ----------
    Schölkopf, B., Smola, A. & Müller, K.-R. (1998). Nonlinear component
    analysis as a kernel eigenvalue problem. Neural Computation 10(5),
    1299-1319. doi:10.1162/089976698300017467

    Williams, C. K. I. & Seeger, M. (2001). Using the Nyström method to speed
    up kernel machines. Advances in Neural Information Processing Systems 13,
    682-688.

    Rahimi, A. & Recht, B. (2007). Random features for large-scale kernel
    machines. Advances in Neural Information Processing Systems 20.

    Bakır, G. H., Weston, J. & Schölkopf, B. (2004). Learning to find
    pre-images. Advances in Neural Information Processing Systems 16, 449-456.
    """

    _cli_flags = {"method": "approximation"}  # --method chooses the method
    _accepts_sparse = True  # rows stay CSR: kernels from sparse products, landmarks sampled as CSR
    _renamed_params = {"n_landmarks": "landmarks"}

    def __init__(
        self,
        n_components: int | None = None,
        kernel: Any = "linear",
        gamma: Any = None,
        degree: float = 3,
        coef0: float = 1.0,
        method: str = "auto",
        landmarks: int = 2000,
        n_fourier: int = 4000,
        fit_inverse_transform: bool = False,
        alpha: float = 1.0,
        random_state: int = 0,
        *,
        kernel_params: dict | None = None,
        eigen_solver: str = "auto",
        tol: float = 0.0,
        max_iter: int | None = None,
        iterated_power: Any = "auto",
        remove_zero_eig: bool = False,
        copy_X: bool = True,
        n_jobs: int | None = None,
        n_landmarks: Any = DEPRECATED,
    ) -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.method = method
        self.landmarks = landmarks
        self.n_landmarks = n_landmarks
        self.n_fourier = n_fourier
        self.fit_inverse_transform = fit_inverse_transform
        self.alpha = alpha
        self.random_state = random_state
        self.kernel_params = kernel_params
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.iterated_power = iterated_power
        self.remove_zero_eig = remove_zero_eig
        self.copy_X = copy_X
        self.n_jobs = n_jobs

    # -- parameters ---------------------------------------------------------------
    def _check_params(self, n: int) -> str:
        if self.n_components is not None:
            check_int(self.n_components, "n_components")
        if not callable(self.kernel):
            check_choice(self.kernel, "kernel", (*KERNELS, "precomputed"))
        check_choice(self.method, "method", APPROXIMATIONS)
        check_choice(self.eigen_solver, "eigen_solver", TOP_SOLVERS)
        if not (self.gamma is None or (isinstance(self.gamma, str) and self.gamma in ("scale", "auto"))):
            check_real(self.gamma, "gamma ('scale', 'auto', None or a number)", 0, low_open=True)
        check_real(self.alpha, "alpha", 0, low_open=True)
        check_real(self.tol, "tol", 0)
        if self.max_iter is not None:
            check_int(self.max_iter, "max_iter")
        if self.iterated_power != "auto":
            check_int(self.iterated_power, "iterated_power ('auto' or an integer)", 0)
        if self.kernel == "precomputed" and self.fit_inverse_transform:
            raise ValueError(
                "Cannot fit_inverse_transform with a precomputed kernel: the map back to the rows is learned "
                "from the rows; pass them with a named kernel, or set fit_inverse_transform=False."
            )
        self.seed_ = resolve_seed(self.random_state)
        method = self._resolved_method(n)
        if self.kernel == "precomputed" and method != "exact":
            raise ValueError(f"kernel='precomputed' is exact only; got method={method!r}.")
        if method == "fourier" and (callable(self.kernel) or self.kernel not in SHIFT_INVARIANT):
            raise ValueError(
                f"method='fourier' needs a shift-invariant kernel {SHIFT_INVARIANT}; got kernel={self.kernel!r}. "
                f"Use method='nystroem'."
            )
        if method == "nystroem":
            check_int(self._param("landmarks"), "landmarks", 2)
        if method == "fourier":
            check_int(self.n_fourier, "n_fourier", 2)
        if self.n_components is not None and self.n_components > n:
            raise ValueError(f"n_components={self.n_components} is more than the {n} rows.")
        return method

    def _resolved_method(self, n: int) -> str:
        """``auto``: exact up to EXACT_MAX rows and for precomputed kernels, else nystroem."""
        if self.method != "auto":
            return str(self.method)
        return "exact" if n <= EXACT_MAX or self.kernel == "precomputed" else "nystroem"

    def _gamma(self, Xd: da.Array) -> float:
        if self.gamma is None or isinstance(self.gamma, str):
            if self.gamma in (None, "auto"):
                return 1.0 / Xd.shape[1]
            n, p = Xd.shape
            if sp.issparse(Xd._meta):  # entry sums of the stored values (the zeros add nothing)
                (sums,) = compute(tree_reduce(Xd, _entry_sums, np.add))
                var = float(sums[1]) / (n * p) - (float(sums[0]) / (n * p)) ** 2
            else:
                # Column moments merged over blocks (float64 sums, no float64 copy of a block):
                # dask's var of the whole array in float64 peaked at 2.3 GiB on 20M x 20 float32.
                (state,) = compute(tree_reduce(Xd, _column_moments, merge_moments))
                grand = float(state.mean.mean())
                var = (float(state.scatter.sum()) + n * float(((state.mean - grand) ** 2).sum())) / (n * p)
            if not var > 0:
                raise ValueError("gamma='scale' needs data with non-zero variance; give gamma.")
            return 1.0 / (Xd.shape[1] * float(var))
        return float(self.gamma)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        n, p = Xd.shape
        method = self._resolved_method(n)
        if method == "exact":
            return {
                "kernel": Part(n * n * 8, f"the {n:,} x {n:,} kernel", "method"),
                "block": Part(3 * KERNEL_BLOCK_ROWS * n * 8, "a block of kernel rows and its scratch", ""),
                "rows": Part(self._rows_bytes(Xd), "the training rows", ""),
            }
        width = int(self._param("landmarks") if method == "nystroem" else self.n_fourier)
        return {
            "scatter": Part(10 * width * width * 8, f"scatter matrices of {width} features being merged", "landmarks"),
            "stream": streaming(PIECE_ROWS * (width + max(width, p)) * 8, 3, "pieces of features"),
        }

    @staticmethod
    def _rows_bytes(Xd: da.Array) -> int:
        """The training rows in memory: dense, or CSR blocks counted at their bound on nonzeros."""
        n, p = Xd.shape
        dense = n * p * 8
        return min(dense, len(Xd.chunks[0]) * chunk_bytes_of(Xd)) if sp.issparse(Xd._meta) else dense

    # -- fit ----------------------------------------------------------------------
    def fit(self, X: Any, y: Any = None):
        self._fit(X)
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        Y = self._fit(X)
        return compute(Y)[0] if wants_numpy(X) and isinstance(Y, da.Array) else Y

    def _fit(self, X: Any) -> np.ndarray | da.Array:
        sparse = is_sparse_input(X)
        Xd = as_sparse_array(X) if sparse else as_array(X, name="X")
        n, p = Xd.shape
        method = self._check_params(n)
        if sparse and self.fit_inverse_transform:
            raise NotImplementedError(
                "Inverse transform not implemented for sparse matrices! Set fit_inverse_transform=False, or "
                "pass dense rows."
            )
        if self.kernel == "precomputed" and n != p:
            raise ValueError(f"kernel='precomputed' needs the square n x n kernel; got {n} x {p}.")
        self._check_memory(Xd, wants_numpy(X))
        named = not callable(self.kernel) and self.kernel not in ("precomputed", "cosine", "linear")
        self.gamma_ = self._gamma(Xd) if named else None
        self.method_, self.n_features_in_, self.n_samples_seen_ = method, p, n
        self._ext = None
        if method == "exact":
            Y = self._fit_exact(Xd)
            return Y if wants_numpy(X) else from_numpy(Y, Xd.chunks[0])
        return self._fit_features(X, Xd, method)

    def _rule(self) -> tuple[Any, float, float, float, dict | None]:
        return self.kernel, float(self.gamma_ or 0.0), float(self.degree), float(self.coef0), self.kernel_params

    def _fit_exact(self, Xd: da.Array) -> np.ndarray:
        (data,) = compute(Xd)
        data = float_rows(data)
        n = data.shape[0]
        k = n if self.n_components is None else int(self.n_components)
        if self.kernel == "precomputed":
            K = data.toarray() if sp.issparse(data) else data.copy()
        else:
            K = np.empty((n, n))
            for s in range(0, n, KERNEL_BLOCK_ROWS):
                K[s : s + KERNEL_BLOCK_ROWS] = kernel_block(data[s : s + KERNEL_BLOCK_ROWS], data, *self._rule())
        column_means, row_means = K.mean(axis=0), K.mean(axis=1)
        total = float(column_means.mean())
        K -= column_means[None, :]  # centred in place: one n x n array (scikit-learn's KernelCenterer)
        K -= row_means[:, None]
        K += total
        if self.kernel == "precomputed" and not np.allclose(K, K.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(K).max())):
            raise ValueError("kernel='precomputed' needs a kernel whose centred form is symmetric; this one is not.")
        power = self.iterated_power
        power = (7 if k < 0.1 * n else 4) if power == "auto" else int(power)
        eig = top_eigh(K, k, self.seed_, solver=str(self.eigen_solver), tol=float(self.tol), max_iter=self.max_iter,
                       n_iter=power)  # fmt: skip
        del K
        values, vectors = self._kept(eig.values, eig.vectors)  # top_eigh has fixed the signs
        self.eigenvalues_, self.eigenvectors_ = values, vectors
        self.negative_mass_ = eig.negative_mass
        self.kernel_column_means_, self.kernel_mean_ = column_means, total
        self.reference_rows_ = data if self.kernel != "precomputed" else np.empty((0, n))
        Y = vectors * np.sqrt(values)
        if self.fit_inverse_transform:
            self._fit_inverse(Y, data)
        self._ext = self._make_extension()  # cheap (no index): built now, so transform changes nothing
        return Y

    def _fit_features(self, X: Any, Xd: da.Array, method: str) -> da.Array:
        k = int(self.n_components or 0)
        if method == "nystroem":
            m = min(int(self._param("landmarks")), Xd.shape[0])
            landmarks, _ = uniform_sample(X, m, self.seed_, sparse=True)
            landmarks = float_rows(landmarks)
            s, U = scipy.linalg.eigh(kernel_block(landmarks, landmarks, *self._rule()))
            keep = s > s.max() * 1e-12  # directions the landmarks' kernel does not span are dropped
            self.reference_rows_ = landmarks
            self.nystroem_transform_ = U[:, keep] / np.sqrt(s[keep])
        else:
            self.fourier_weights_, self.fourier_phases_ = fourier_weights(
                Xd.shape[1], int(self.n_fourier), self.kernel, self._rule()[1], self.seed_
            )
        self._set_state(feature_state(Xd, self._feature_map()))
        if self.n_components is not None and k > len(self.eigenvalues_) and not self.remove_zero_eig:
            raise ValueError(f"n_components={k} is more than the {len(self.eigenvalues_)} features of {method}.")
        Y = self._extend(Xd)
        if self.fit_inverse_transform:
            ref = self._inverse_reference(X)
            self._fit_inverse(compute(self._extend(ref))[0], ref)
        return Y

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"  # cross-validation slices K[train][:, train]
        return tags

    def _kept(self, values: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pairs kept: eigenvalues checked as a positive semi-definite kernel's, zero pairs dropped when asked."""
        values = psd_eigenvalues(values)
        keep = values > 0 if (self.remove_zero_eig or self.n_components is None) else np.ones(values.size, bool)
        return values[keep], vectors[:, keep]

    def _set_state(self, state: Moments) -> None:
        """Eigenpairs of the features' scatter (the centred approximate kernel's nonzero eigenvalues)."""
        k = len(state.mean) if self.n_components is None else int(self.n_components)
        eig = scatter_eigh(state)
        self.feature_count_, self.feature_mean_, self.feature_scatter_ = state.n, state.mean, state.scatter
        self.eigenvalues_, self.components_ = self._kept(eig.values[:k], eig.vectors[:, :k])
        self.n_samples_seen_ = int(state.n)
        self._ext = self._make_extension()

    def _feature_map(self) -> KernelMap:
        return KernelMap(
            self.method_, *self._rule(), reference=self.__dict__.get("reference_rows_"),
            transform=self.__dict__.get("nystroem_transform_"), W=self.__dict__.get("fourier_weights_"),
            b=self.__dict__.get("fourier_phases_"),
        )  # fmt: skip

    def _make_extension(self) -> Extension:
        if self.method_ == "exact":
            values = self.eigenvalues_
            coef = np.zeros_like(self.eigenvectors_)
            nonzero = values > 0
            coef[:, nonzero] = self.eigenvectors_[:, nonzero] / np.sqrt(values[nonzero])
            return KernelMap("exact", *self._rule(), reference=self.reference_rows_, components=coef,
                             column_means=self.kernel_column_means_, total_mean=self.kernel_mean_)  # fmt: skip
        ext = self._feature_map()
        ext.mean, ext.components = self.feature_mean_, self.components_
        ext.width = self.components_.shape[1]
        return ext

    # -- updates ------------------------------------------------------------------
    def partial_fit(self, X: Any, y: Any = None):
        """Learn from new rows without starting over; an unfitted model is fitted on them.

        ``nystroem``, ``fourier``: the new rows' features are merged into the
        scatter (Chan et al. 1979), exactly: the result equals a fit on all
        rows seen with the same landmarks or random features. ``exact``: the
        kernel of the kept rows and the new ones is formed and solved again
        (refused for precomputed kernels). ``gamma_`` stays the first fit's.
        """
        if not self.__sklearn_is_fitted__():
            return self.fit(X)
        sparse = is_sparse_input(X)
        Xd = as_sparse_array(X, min_rows=1) if sparse else as_array(X, name="X", min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, type(self).__name__)
        if self.method_ == "exact":
            if self.kernel == "precomputed":
                raise ValueError("A KernelPCA of a precomputed kernel cannot be updated; fit it on the larger kernel.")
            kept = self.reference_rows_
            if sparse != sp.issparse(kept):
                raise TypeError(
                    f"This KernelPCA was fitted on {'sparse' if sp.issparse(kept) else 'dense'} rows; pass the new "
                    f"rows the same way (scipy.sparse.csr_matrix(X) or X.toarray())."
                )
            kept_rows = as_sparse_array(kept, min_rows=1) if sparse else from_numpy(kept, (kept.shape[0],))
            rows = da.concatenate([kept_rows, Xd])
            self._check_memory(rows, True)
            self._fit_exact(rows)
            self.n_samples_seen_ = rows.shape[0]
            return self
        new = feature_state(Xd, self._feature_map())
        old = Moments(int(self.feature_count_), self.feature_mean_, self.feature_scatter_)
        self._set_state(merge_moments(old, new))
        return self

    # -- inverse ------------------------------------------------------------------
    def _inverse_reference(self, X: Any) -> np.ndarray:
        if self.method_ == "nystroem":
            return self.reference_rows_
        m = min(int(self._param("landmarks")), self.n_samples_seen_)
        rows, _ = uniform_sample(X, m, self.seed_ + 1)
        return float_rows(rows)

    def _fit_inverse(self, Z: np.ndarray, rows: np.ndarray) -> None:
        K = kernel_block(Z, Z, *self._rule())
        K.flat[:: len(K) + 1] += self.alpha
        self.dual_coef_ = scipy.linalg.solve(K, rows, assume_a="pos")
        self.X_transformed_fit_ = Z

    def inverse_transform(self, Y: Any) -> np.ndarray | da.Array:
        """Rows back from the embedding by the kernel ridge regression learned in ``fit``."""
        self._check_fitted()
        if "dual_coef_" not in self.__dict__:
            raise NotFittedError("inverse_transform needs fit_inverse_transform=True at fit.")
        Yd = as_array(Y, name="Y", min_rows=1)
        check_n_features(Yd.shape[1], self.X_transformed_fit_.shape[1], type(self).__name__, "Y")
        rule = self._rule()
        if len(Yd.chunks[1]) != 1:
            Yd = Yd.rechunk({1: -1})
        out = da.map_blocks(
            ridge_block,
            Yd,
            shared(self.X_transformed_fit_),
            shared(self.dual_coef_),
            rule=rule,
            chunks=(Yd.chunks[0], (self.dual_coef_.shape[1],)),
            dtype=np.float64,
        )
        return compute(out)[0] if wants_numpy(Y) else out

    def preimage(self, Y: Any, n_iter: int = 100, tol: float = 1e-8) -> np.ndarray | da.Array:
        """Rows whose rbf feature maps are nearest the points of the embedding ``Y`` (Mika et al. 1998).

        The embedding ``y`` is the feature-space point ``Psi = mean + sum_k
        y_k v_k``; written over the basis (training rows when exact,
        landmarks for Nyström) it is ``Psi = sum_i g_i phi(b_i)``. Exact:
        ``g = c - mean(c) + 1/n`` with ``c = A y`` (``A``: ``a_k /
        sqrt(lambda_k)``), the centring undone. Nyström: ``g = T (mu + V y)``
        with ``T`` the landmark map, ``mu`` the feature mean and ``V`` the
        components. The pre-image maximises ``sum_i g_i k(z, b_i)`` by the
        fixed-point iteration of :func:`bigdr.core.kernels.rbf_preimage`,
        started at the basis row whose own embedding is nearest ``y``.
        Blockwise; rbf kernel, exact or Nyström only.
        """
        self._check_fitted()
        if self.kernel != "rbf" or self.method_ not in ("exact", "nystroem"):
            raise ValueError(
                f"preimage needs kernel='rbf' with method 'exact' or 'nystroem'; this model has "
                f"kernel={self.kernel!r}, method {self.method_!r}. Use fit_inverse_transform=True and "
                f"inverse_transform instead."
            )
        if sp.issparse(self.reference_rows_):
            raise TypeError("preimage needs dense reference rows; this model was fitted on sparse rows.")
        check_int(n_iter, "n_iter")
        Yd = as_array(Y, name="Y", min_rows=1)
        check_n_features(Yd.shape[1], len(self.eigenvalues_), type(self).__name__, "Y")
        if len(Yd.chunks[1]) != 1:
            Yd = Yd.rechunk({1: -1})
        basis = self.reference_rows_
        if self.method_ == "exact":
            values = self.eigenvalues_
            A = np.zeros_like(self.eigenvectors_)
            ok = values > 0
            A[:, ok] = self.eigenvectors_[:, ok] / np.sqrt(values[ok])
            maps = {"A": A, "basis_embedding": self.eigenvectors_ * np.sqrt(np.clip(values, 0, None))}
        else:
            maps = {"T": self.nystroem_transform_, "mu": self.feature_mean_, "V": self.components_,
                    "basis_embedding": self.transform(basis)}  # fmt: skip
        out = da.map_blocks(
            preimage_block,
            Yd,
            shared(basis),
            shared(maps),
            gamma=float(self.gamma_ or 0.0),
            n_iter=int(n_iter),
            tol=float(tol),
            chunks=(Yd.chunks[0], (basis.shape[1],)),
            dtype=np.float64,
        )
        return compute(out)[0] if wants_numpy(Y) else out

    def summary(self) -> dict[str, Any]:
        return {"eigenvalues": self.eigenvalues_.tolist(), "method": self.method_, "gamma": self.gamma_}

    def describe(self) -> str:
        return (
            f"KernelPCA ({self.method_}, {self.kernel}): eigenvalues {[float(f'{v:.6g}') for v in self.eigenvalues_]}"
        )
