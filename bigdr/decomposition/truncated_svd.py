"""Truncated SVD (latent semantic analysis) of data of any size, sparse or dense, not centred.

``X ~ U_k diag(s_k) V_k^T``: the right singular vectors ``V_k`` are the top
eigenvectors of ``X^T X`` and ``s_k`` the square roots of its eigenvalues;
``transform(X) = X V_k^T``. Unlike PCA the data are not centred, so a sparse
matrix (TF-IDF, counts) is used as it is (Deerwester et al. 1990).
"""

from __future__ import annotations

import warnings
from typing import Any

import dask.array as da
import numpy as np

from .._random import resolve_seed
from .._validation import check_choice, check_int, check_n_features, check_real
from ..base import BigdrEstimator, chunk_bytes_of, wants_numpy
from ..blockwise.linalg import krylov_bytes, krylov_plan, scatter_eig_with_columns
from ..blockwise.reduce import column_statistics, merged_bytes, tree_reduce
from ..core.eigen import LONG_EIGH, flip_signs, top_eigh
from ..core.stats import gram_block, merge_moments
from ..exceptions import ConvergenceWarning
from ..io import as_array, as_sparse_array, is_sparse_input
from ..io.obsm import scanpy_pca_entries, scanpy_pca_names
from ..runtime.compute import compute, step
from ..runtime.memory import Part, streaming

ALGORITHMS = ("randomized", "covariance", "arpack")
#: Most passes of a (k + n_oversamples)-wide block of the randomized algorithm with a positive ``tol`` (block
#: Krylov converges in far fewer); a narrower block (:func:`~bigdr.blockwise.linalg.krylov_plan`) fills the same
#: Krylov space in proportionally more passes.
MAX_ITER = 20


def _project(block: Any, V: np.ndarray) -> np.ndarray:
    return np.asarray(block @ V)


class TruncatedSVD(BigdrEstimator):
    """Truncated SVD (latent semantic analysis), out of core, dense or sparse input.

    scikit-learn's ``TruncatedSVD`` for data that does not fit in memory: the
    same parameters and attributes, the same numbers. The data are never
    centred, so a sparse matrix stays sparse throughout.

    Parameters
    ----------
    n_components : int
        Singular vectors kept.
    algorithm : {"randomized", "covariance", "arpack"}
        ``randomized``: randomized block Krylov iteration on ``X^T X``
        (Musco & Musco 2015; Halko, Martinsson & Tropp 2011), each product
        ``X^T (X Z)`` one pass over the rows.
        ``covariance``: the exact eigen-decomposition of the p x p ``X^T X``,
        formed in one pass and mergeable (``partial_fit``); for widths whose p x
        p matrix fits in memory. ``arpack``: scipy's ``svds`` (ARPACK) on data
        in memory, as scikit-learn does.
    n_iter : int
        Power iterations of ``randomized`` (scikit-learn's default, 5).
    n_oversamples : int
        Extra random directions of ``randomized``.
    power_iteration_normalizer : {"auto", "QR", "LU", "none"}
        Accepted for scikit-learn's signature; bigdr orthonormalises every
        iterate by QR, which is at least as accurate as each of them.
    random_state : int or None
        Seed of the randomized test matrix and of ARPACK's start vector.
    tol : float
        ``arpack``'s tolerance (0: machine precision). For ``randomized``, a
        positive value continues the iteration past ``n_iter`` until the
        residual of every kept singular pair is below it, and warns when it
        is not reached within a Krylov space of 21 passes of ``n_components
        + n_oversamples`` columns (more passes of a narrower block on data
        that stays in memory between passes).

    Attributes
    ----------
    components_ : (n_components, n_features) the right singular vectors
    singular_values_ : (n_components,)
    explained_variance_ : (n_components,) the variance of each column of ``transform(X)``
    explained_variance_ratio_ : (n_components,) that over the total variance of ``X``
    n_features_in_, n_samples_seen_ : int

    References
    ----------
    Deerwester, S., Dumais, S. T., Furnas, G. W., Landauer, T. K. & Harshman,
    R. (1990). Indexing by latent semantic analysis. Journal of the American
    Society for Information Science 41(6), 391-407.

    Halko, N., Martinsson, P.-G. & Tropp, J. A. (2011). Finding structure with
    randomness: probabilistic algorithms for constructing approximate matrix
    decompositions. SIAM Review 53(2), 217-288.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp, bigdr
    >>> X = sp.random(1000, 50, density=0.05, format="csr", random_state=0)
    >>> svd = bigdr.TruncatedSVD(5, random_state=0).fit(X)
    >>> svd.components_.shape, svd.transform(X).shape
    ((5, 50), (1000, 5))
    """

    _preserves_dtype = ("float64", "float32")
    _capabilities = frozenset({"spectrum"})  # a scree of the singular values; the biplot is PCA's and FA's
    _accepts_sparse = True
    #: What partial_fit merges into, saved with the model: X^T X and the column moments.
    _persist_private = ("_gram", "_col_mean", "_col_scatter")

    def __init__(
        self,
        n_components: int = 2,
        *,
        algorithm: str = "randomized",
        n_iter: int = 5,
        n_oversamples: int = 10,
        power_iteration_normalizer: str = "auto",
        random_state: Any = None,
        tol: float = 0.0,
    ) -> None:
        self.n_components = n_components
        self.algorithm = algorithm
        self.n_iter = n_iter
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.tol = tol

    # -- input ---------------------------------------------------------------
    @staticmethod
    def _input(X: Any, min_rows: int = 2) -> da.Array:
        return as_sparse_array(X, min_rows=min_rows) if is_sparse_input(X) else as_array(X, min_rows=min_rows)

    def _check_params(self, n: int | None, p: int) -> None:
        """``n``: the rows of a fit (for ARPACK's limit); None for a batch of ``partial_fit``."""
        check_int(self.n_components, "n_components")
        check_choice(self.algorithm, "algorithm", ALGORITHMS)
        if (
            self.algorithm == "arpack" and n is not None and self.n_components >= min(n, p)
        ):  # ARPACK's own limit, as scikit-learn
            raise ValueError(f"n_components={self.n_components} must be below min(n_samples, n_features) = "
                             f"{min(n, p)} for algorithm='arpack'.")  # fmt: skip
        if self.n_components > p:
            raise ValueError(f"n_components={self.n_components} must be at most the number of features ({p}).")
        check_int(self.n_iter, "n_iter", low=0)
        check_int(self.n_oversamples, "n_oversamples", low=0)
        check_choice(self.power_iteration_normalizer, "power_iteration_normalizer", ("auto", "QR", "LU", "none"))
        check_real(self.tol, "tol", low=0.0)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        # Capped by the blocks there are: an in-memory 100,000 x 50,000 TF-IDF matrix is two blocks, and
        # counting ten merge states and four blocks in flight put the estimate at 1.9x the measured peak
        p, blocks = Xd.shape[1], Xd.numblocks[0]
        parts = {"stream": streaming(chunk_bytes_of(Xd), 2, blocks=blocks)}
        if self.algorithm == "covariance" or hasattr(self, "_gram"):
            gram = merged_bytes(p, p, hasattr(Xd._meta, "tocsr"), blocks)
            parts["gram"] = Part(gram, "p x p Gram matrices being merged", "algorithm")
        else:
            width, iterations = self._krylov_plan(Xd)
            sketch = merged_bytes(p, width, blocks=blocks)
            parts["sketch"] = Part(sketch, "p x (k + oversamples) products in the merge tree", "")
            parts["krylov"] = Part(krylov_bytes(p, width, iterations), "the Krylov basis and its products", "n_iter")
        return parts

    def _krylov_plan(self, Xd: da.Array) -> tuple[int, int]:
        wide = min(int(self.n_components) + int(self.n_oversamples), *Xd.shape)
        return krylov_plan(Xd, wide, self.tol, None, int(self.n_iter), max(MAX_ITER, int(self.n_iter)))

    # -- fitting -------------------------------------------------------------
    def fit(self, X: Any, y: Any = None) -> TruncatedSVD:
        """Fit the singular vectors of ``X`` (one pass for the column statistics, then the algorithm's)."""
        Xd = self._input(X)
        n, p = Xd.shape
        self._check_params(n, p)
        self._check_memory(Xd)
        self._note_genes(X, Xd)
        self.seed_ = resolve_seed(self.random_state)
        k = int(self.n_components)
        if self.algorithm == "arpack":
            values, V = self._arpack(X, Xd)
            (col,) = compute(column_statistics(Xd))
        elif self.algorithm == "covariance":
            (gram, col) = compute(
                tree_reduce(Xd, gram_block, np.add, with_offset=True),
                column_statistics(Xd),
            )
            self._gram = gram
            with step(f"eigendecomposition of the {p:,} x {p:,} Gram matrix", long=p >= LONG_EIGH):
                eig = top_eigh(gram, k, self.seed_)
            values, V = eig.values, eig.vectors
        else:
            tol = float(self.tol) or None
            _, passes = self._krylov_plan(Xd)  # the block follows from the same plan inside
            eig, col, _ = scatter_eig_with_columns(
                Xd, k, int(self.n_oversamples), int(self.n_iter), self.seed_, centre=False, tol=tol, max_iter=passes
            )
            if tol is not None and eig.residual > tol:
                warnings.warn(
                    f"TruncatedSVD: after {eig.n_iter + 1} passes the largest residual of the kept singular pairs is "
                    f"{eig.residual:.2g}, above tol={self.tol}; raise n_oversamples, or use "
                    f"algorithm='covariance' (exact) when the p x p matrix fits.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
            values, V = eig.values, eig.vectors
        self._set_fitted(np.clip(values, 0, None), V, col, Xd.dtype)
        return self

    def _arpack(self, X: Any, Xd: da.Array) -> tuple[np.ndarray, np.ndarray]:
        if not wants_numpy(X):
            raise ValueError(
                "algorithm='arpack' works on data in memory, as scikit-learn's does; for lazy or on-disk data "
                "use algorithm='covariance' (exact, one pass) or 'randomized'."
            )
        from scipy.sparse.linalg import svds

        (M,) = compute(Xd) if not hasattr(X, "tocsr") else (X,)
        rng = np.random.default_rng(self.seed_)
        v0 = rng.uniform(-1, 1, min(M.shape))
        _, s, Vt = svds(M.astype(np.float64), k=int(self.n_components), tol=float(self.tol), v0=v0)
        order = np.argsort(s)[::-1]
        return s[order] ** 2, Vt[order].T

    def partial_fit(self, X: Any, y: Any = None) -> TruncatedSVD:
        """Merge the batch ``X`` into ``X^T X`` and take its top eigenpairs: exact, whatever ``algorithm`` is.

        A batch adds to the p x p ``X^T X`` kept with the model (what
        ``algorithm='covariance'`` forms in ``fit``), so any split of the rows
        gives the same model as ``fit`` with ``algorithm='covariance'`` on all of them.
        """
        Xd = self._input(X, min_rows=1)
        p = Xd.shape[1]
        if hasattr(self, "n_features_in_"):
            check_n_features(p, self.n_features_in_, "TruncatedSVD")
        self._check_params(None, p)
        self._check_memory(Xd)
        self._note_genes(X, Xd, first=not hasattr(self, "_gram"))
        gram, col = compute(
            tree_reduce(Xd, gram_block, np.add, with_offset=True),
            column_statistics(Xd),
        )
        if hasattr(self, "_gram"):
            gram = gram + self._gram
            col = merge_moments(self._columns(), col)
        self._gram = gram
        self.seed_ = resolve_seed(self.random_state)
        eig = top_eigh(gram, int(self.n_components), self.seed_)
        self._set_fitted(np.clip(eig.values, 0, None), eig.vectors, col, Xd.dtype)
        return self

    def _columns(self) -> Any:
        from ..core.stats import Moments

        return Moments(self.n_samples_seen_, self._col_mean, self._col_scatter)

    def _set_fitted(self, values: np.ndarray, V: np.ndarray, col: Any, dtype: Any) -> None:
        n = int(col.n)
        V = flip_signs(V)
        mean = col.mean
        self._col_mean, self._col_scatter = col.mean, col.scatter
        s2 = np.asarray(values, dtype=np.float64)
        # Each column of X V: mean m.v, second moment s^2 / n; numpy's var divides by n, as scikit-learn's.
        self.explained_variance_ = np.clip(s2 / n - (mean @ V) ** 2, 0, None)
        total = float(col.scatter.sum()) / n
        self.explained_variance_ratio_ = self.explained_variance_ / total if total > 0 else np.zeros_like(s2)
        self.singular_values_ = np.sqrt(s2)
        out = dtype if dtype in (np.float32, np.float64) else np.float64
        self.components_ = V.T.astype(out)
        self.n_components_ = int(V.shape[1])
        self.n_features_in_ = int(V.shape[0])
        self.n_samples_seen_ = n

    # -- applying ------------------------------------------------------------
    def transform(self, X: Any) -> np.ndarray | da.Array:
        """``X V^T``: each row's coordinates on the singular vectors."""
        self._check_fitted()
        Y = self._lazy_embedding(X)
        return compute(Y)[0] if wants_numpy(X) else Y

    def _lazy_embedding(self, X: Any) -> da.Array:
        Xd = self._input(X, min_rows=1)
        check_n_features(Xd.shape[1], self.n_features_in_, "TruncatedSVD")
        V = self.components_.T.astype(Xd.dtype)
        return da.map_blocks(
            _project, Xd, V=V, chunks=(Xd.chunks[0], (V.shape[1],)), dtype=Xd.dtype, meta=np.empty((0, 0), Xd.dtype)
        )

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        """Fit, then project ``X`` (a further pass for lazy input)."""
        return self.fit(X).transform(X)

    def inverse_transform(self, Y: Any) -> np.ndarray | da.Array:
        """``Y V``: back to feature space (the rank-k approximation of the rows)."""
        self._check_fitted()
        if isinstance(Y, da.Array):
            return Y @ self.components_
        return np.asarray(Y) @ self.components_

    def describe(self) -> str:
        kept = float(np.sum(self.explained_variance_ratio_))
        return f"TruncatedSVD ({self.algorithm}): {self.n_components_} components, {100 * kept:.2f}% of variance"

    def _anndata_names(self, key: str) -> list[str]:
        return scanpy_pca_names(key)

    def _anndata_parts(self, Y: Any, key: str) -> tuple[Any, dict[str, Any]]:
        # scanpy's sc.pp.pca(zero_center=False) is a TruncatedSVD and is written under the same names
        return Y, scanpy_pca_entries(self, key, zero_center=False)

    def summary(self) -> dict[str, Any]:
        return {"explained_variance_ratio": self.explained_variance_ratio_.tolist(), "algorithm": self.algorithm}
