"""Random projection with Johnson-Lindenstrauss guarantees, streaming and stateless.

``f(x) = R^T x`` with a random ``p x k`` matrix ``R`` whose entries have mean 0
and variance ``1/k``, so ``E |f(x) - f(y)|^2 = |x - y|^2`` and, by the
Johnson–Lindenstrauss lemma, all pairwise squared distances of ``n`` points
are kept within ``1 +- eps`` with high probability once ``k`` is large enough
(:func:`johnson_lindenstrauss_min_dim`).

``R`` is never needed whole. Its rows for features ``[b B, (b+1) B)``
(``B = BLOCK_FEATURES``) are drawn from ``rng([seed, b, salt])``, so any
worker rebuilds exactly the rows of the column range it multiplies, and the
result is the same whatever the row and column chunking of the input and
whichever scheduler runs it. A column-chunked input is projected block by
block and summed over column blocks.

Gaussian: ``R_ij ~ N(0, 1/k)``. Sparse (Achlioptas 2003; Li, Hastie &
Church 2006): ``R_ij = +-1/sqrt(s k)`` with probability ``s/2`` each and 0
otherwise; ``s = 1/3`` is Achlioptas', ``s = 1/sqrt(p)`` ("auto") Li's very
sparse projection.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from typing import Any

import dask.array as da
import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ._random import PROJECTION_STREAM, block_rng, resolve_seed
from ._validation import check_n_features, check_real
from .base import BigdrEstimator, chunk_bytes_of, wants_numpy
from .exceptions import DataDimensionalityWarning
from .io import as_array, as_sparse_array, is_sparse_input
from .io.sparse import SPARSE_CHUNK_NNZ
from .runtime.compute import compute
from .runtime.memory import Part, streaming

#: Features per independently seeded block of the projection matrix.
BLOCK_FEATURES = 4096
#: Largest projection block (entries) densified for dense input.
DENSE_R_MAX = 1 << 24


def johnson_lindenstrauss_min_dim(n_samples: Any, eps: Any = 0.1, bound: str = "dasgupta-gupta") -> Any:
    """Smallest ``k`` for which a random projection keeps all pairwise distances within ``1 +- eps``.

    ``bound="chernoff"``: ``k >= 32 log n / eps^2`` (the elementary Chernoff
    proof of the lemma, failure probability at most ``1/n^2``).
    ``bound="dasgupta-gupta"``: ``k >= 4 log n / (eps^2/2 - eps^3/3)``
    (Dasgupta & Gupta 2003; scikit-learn's), about 4-5x smaller for the same
    guarantee. Both take arrays and round up (scikit-learn truncates, which
    can give one dimension fewer than its bound).
    """
    eps = np.asarray(eps, dtype=float)
    n = np.asarray(n_samples)
    if np.any(eps <= 0) or np.any(eps >= 1):
        raise ValueError(f"eps must be in (0, 1); got {eps}.")
    if np.any(n <= 0):
        raise ValueError(f"n_samples must be positive; got {n_samples}.")
    if bound == "chernoff":
        k = 32 * np.log(n) / eps**2
    elif bound == "dasgupta-gupta":
        k = 4 * np.log(n) / (eps**2 / 2 - eps**3 / 3)
    else:
        raise ValueError(f"bound must be 'dasgupta-gupta' or 'chernoff'; got {bound!r}.")
    k = np.ceil(k).astype(np.int64)
    return int(k) if k.ndim == 0 else k


def projection_rows(
    start: int, stop: int, n_components: int, density: float | None, seed: int, dtype: Any = np.float64
) -> np.ndarray | sp.csr_matrix:
    """Rows ``start:stop`` of the ``p x k`` projection matrix (dense; CSR when ``density`` is given)."""
    parts = []
    for b in range(start // BLOCK_FEATURES, (stop - 1) // BLOCK_FEATURES + 1):
        rng = block_rng(seed, b, PROJECTION_STREAM)
        lo, hi = (
            max(start, b * BLOCK_FEATURES) - b * BLOCK_FEATURES,
            min(stop, (b + 1) * BLOCK_FEATURES) - b * BLOCK_FEATURES,
        )
        if density is None:
            block = rng.standard_normal((BLOCK_FEATURES, n_components))[lo:hi]
            parts.append((block / math.sqrt(n_components)).astype(dtype))
        else:
            # Each entry nonzero with probability s, independently: a binomial
            # count of positions drawn without replacement (O(nonzeros), not
            # O(entries): 1M features at s = 1e-3 cost 64k draws, not 64M).
            size = BLOCK_FEATURES * n_components
            count = int(rng.binomial(size, density))
            flat = np.sort(rng.choice(size, size=count, replace=False))
            value = 1.0 / math.sqrt(density * n_components)
            vals = np.where(rng.random(count) < 0.5, value, -value).astype(dtype)
            rows, cols = np.divmod(flat, n_components)
            keep = (rows >= lo) & (rows < hi)
            parts.append(sp.csr_matrix((vals[keep], (rows[keep] - lo, cols[keep])), shape=(hi - lo, n_components)))
    if density is None:
        return parts[0] if len(parts) == 1 else np.vstack(parts)
    return parts[0] if len(parts) == 1 else sp.vstack(parts, format="csr")


def _project_block(
    block: Any, n_components: int, density: float | None, seed: int, dtype: Any, block_info: Any = None
) -> np.ndarray:
    c0, c1 = block_info[0]["array-location"][1]
    R = projection_rows(c0, c1, n_components, density, seed, dtype)
    if sp.issparse(R) and not sp.issparse(block) and R.shape[0] * R.shape[1] <= DENSE_R_MAX:
        # Dense data: a small dense R through BLAS beats scipy's dense-times-sparse
        # product (measured 2.7 s against 1.4 s on 1M x 1000 to 64).
        R = sp.csr_matrix(R).toarray()
    out = block @ R
    if sp.issparse(out):
        out = out.toarray()
    return np.asarray(out, dtype=dtype)


def projection_input(X: Any, name: str = "X", min_rows: int = 2) -> da.Array:
    """Dense input through :func:`bigdr.as_array` (column chunks kept); sparse input kept sparse
    (:func:`bigdr.io.as_sparse_array`: scipy.sparse, dask arrays of sparse blocks, CSR stores, AnnData CSR)."""
    if is_sparse_input(X):
        return as_sparse_array(X, name=name, min_rows=min_rows)
    return as_array(X, name=name, min_rows=min_rows, keep_column_chunks=True)


class _RandomProjection(BigdrEstimator):
    _preserves_dtype = ("float64", "float32")
    _capabilities = frozenset({"distortion"})  # no spectrum: a random matrix has none worth drawing
    _accepts_sparse = True  # scipy.sparse input stays sparse

    def _density(self, p: int) -> float | None:
        return None

    def fit(self, X: Any, y: Any = None) -> _RandomProjection:
        """Fix ``n_components_`` and the seed; reads no data beyond the shape (in-memory input is
        checked for NaN and infinity)."""
        Xd = projection_input(X)
        if wants_numpy(X) or sp.issparse(X):
            compute(*Xd.to_delayed().ravel())  # runs the lazy NaN/Inf check; in memory, so cheap
        n, p = Xd.shape
        eps = check_real(self.eps, "eps", 0, 1, low_open=True, high_open=True)
        k = self.n_components
        if isinstance(k, str) and k == "auto":
            k = johnson_lindenstrauss_min_dim(n, eps)
            if k > p:
                raise ValueError(
                    f"eps={eps} and n_samples={n} give n_components={k} by the Johnson-Lindenstrauss bound, more "
                    f"than the {p} features: projecting would not reduce the dimension. Raise eps or give an int."
                )
        elif isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"n_components must be a positive int or 'auto'; got {k!r}.")
        elif k > p:
            warnings.warn(
                f"n_components={k} is more than the {p} features; the projection adds dimensions.",
                DataDimensionalityWarning,
                stacklevel=2,
            )
        self._check_memory(Xd, k=int(k))
        seed = resolve_seed(self.random_state)
        self.n_components_ = int(k)
        self.n_features_in_ = int(p)
        self.seed_ = int(seed)
        density = self._density(p)
        self.density_ = -1.0 if density is None else float(density)
        self.components_dtype_ = "float32" if Xd.dtype == np.float32 else "float64"  # scikit-learn's: X's
        self.__dict__.pop("inverse_components_", None)
        if self.compute_inverse_components:
            self.inverse_components_ = self._inverse_components(Xd.dtype)
        return self

    def _inverse_components(self, dtype: Any) -> np.ndarray:
        """The Moore-Penrose pseudo-inverse of ``components_``, ``(p, k)``: p x k memory."""
        R: Any = self.components_
        R = R.toarray() if sp.issparse(R) else R
        out = np.float32 if dtype == np.float32 else np.float64
        return scipy.linalg.pinv(np.asarray(R, dtype=np.float64), check_finite=False).astype(out)

    def inverse_transform(self, X: Any) -> np.ndarray | da.Array:
        """Back to feature space by the pseudo-inverse: ``X pinv(R)^T``, ``(n, p)``.

        ``inverse_components_`` when it was computed at fit (``compute_inverse_components``),
        else computed now (p x k memory). Lazy for lazy input.
        """
        self._check_fitted()
        inverse = self.__dict__.get("inverse_components_")
        if inverse is None:
            inverse = self._inverse_components(getattr(X, "dtype", np.float64))
        if isinstance(X, da.Array):
            return X @ inverse.T.astype(X.dtype)
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {X.shape[-1] if X.ndim else 0} columns; inverse_transform needs the "
                f"{self.n_components_} of the projection."
            )
        return X @ inverse.T.astype(X.dtype if X.dtype in (np.float32, np.float64) else np.float64)

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False, k: int | None = None) -> dict[str, Part]:
        n, p = Xd.shape
        if k is None:
            given = self.n_components
            if isinstance(given, (int, np.integer)) and not isinstance(given, bool):
                k = int(given)
            else:
                eps = float(self.eps)
                k = int(johnson_lindenstrauss_min_dim(n, eps)) if 0 < eps < 1 else p
        if sp.issparse(Xd._meta):
            block = SPARSE_CHUNK_NNZ * 12
        else:
            block = chunk_bytes_of(Xd)
        cols = max(Xd.chunks[1]) if Xd.chunks[1] else p
        rows = max(Xd.chunks[0]) if Xd.chunks[0] else 0
        itemsize = 4 if Xd.dtype == np.float32 else 8
        return {
            # measured (benchmarks/bench_memory.py, blocks read straight from the store): 1.0 blocks (input
            # and output) a thread with 2 blocks a thread, 1.5-1.6 with 7; 1.1 keeps both within 1.4x
            "stream": streaming(block + rows * int(k) * itemsize, 1.1),
            "matrix": streaming(cols * int(k) * 8 * 2, 1, "projection matrix blocks"),
        }

    def partial_fit(self, X: Any, y: Any = None) -> _RandomProjection:
        """Stateless: the first call fixes the projection, later calls only check the width."""
        if not hasattr(self, "seed_"):
            return self.fit(X)
        self._check_width(projection_input(X, min_rows=1))
        return self

    def _check_width(self, Xd: da.Array) -> None:
        check_n_features(Xd.shape[1], self.n_features_in_, type(self).__name__)

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """``X R``, blockwise over row and column chunks (lazy for lazy input)."""
        self._check_fitted()
        Xd = projection_input(X, min_rows=1)
        self._check_width(Xd)
        dtype = np.float32 if Xd.dtype == np.float32 else np.float64
        density = None if self.density_ < 0 else self.density_
        k = self.n_components_
        args = (k, density, self.seed_, dtype)
        if len(Xd.chunks[1]) == 1:
            Y = da.map_blocks(
                _project_block, Xd, *args, chunks=(Xd.chunks[0], (k,)), dtype=dtype, meta=np.empty((0, 0), dtype)
            )
        else:
            # One (rows, 1, k) partial product per block, summed over the column blocks.
            parts = da.map_blocks(
                _project_block_3d,
                Xd,
                *args,
                new_axis=2,
                chunks=(Xd.chunks[0], (1,) * len(Xd.chunks[1]), (k,)),
                dtype=dtype,
                meta=np.empty((0, 0, 0), dtype),
            )
            Y = parts.sum(axis=1, dtype=dtype)
        return compute(Y)[0] if wants_numpy(X) or sp.issparse(X) else Y

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        return self.fit(X).transform(X)

    @classmethod
    def read_input(cls, path: str | os.PathLike, dataset: str | None = None) -> da.Array:
        """Wide input keeps its column chunks; a CSR group stays sparse."""
        return projection_input(str(path) if dataset is None else f"{path}/{dataset}")

    def summary(self) -> dict[str, Any]:
        return {"n_components": self.n_components_, "seed": self.seed_, "density": self.density_}

    def describe(self) -> str:
        return f"{type(self).__name__} to {self.n_components_} dimensions (seed {self.seed_})"

    @property
    def components_(self) -> np.ndarray | sp.csr_matrix:
        """The ``k x p`` projection matrix (scikit-learn's layout, in the dtype of the rows fitted on), generated
        on demand: p x k memory."""
        self._check_fitted()
        density = None if self.density_ < 0 else self.density_
        dtype = np.dtype(self.__dict__.get("components_dtype_", "float64"))  # a model saved before 0.2: float64
        R = projection_rows(0, self.n_features_in_, self.n_components_, density, self.seed_, dtype)
        return R.T.tocsr() if sp.issparse(R) else np.ascontiguousarray(R.T)


def _project_block_3d(
    block: Any, n_components: int, density: float | None, seed: int, dtype: Any, block_info: Any = None
) -> np.ndarray:
    return _project_block(block, n_components, density, seed, dtype, block_info=block_info)[:, None, :]


class GaussianRandomProjection(_RandomProjection):
    """Gaussian random projection, ``R_ij ~ N(0, 1/k)`` (Johnson & Lindenstrauss 1984).

    Parameters
    ----------
    n_components : int or "auto"
        ``"auto"``: :func:`johnson_lindenstrauss_min_dim` (Dasgupta–Gupta)
        for the number of rows and ``eps``.
    eps : float in (0, 1)
        Distortion allowed to pairwise squared distances when ``n_components="auto"``.
    compute_inverse_components : bool
        Compute ``inverse_components_``, the pseudo-inverse of ``components_``
        (p x k memory), at fit; ``inverse_transform`` otherwise computes it when called.
    random_state : int or None
        The whole projection: the same seed gives the same output for any
        chunking and scheduler. None draws a seed once (kept in ``seed_``).

    Attributes
    ----------
    n_components_, n_features_in_, seed_ : int
    components_ : (k, p) generated on demand, in the dtype of the rows fitted on (float32 or float64)
    inverse_components_ : (p, k), with ``compute_inverse_components``

    References
    ----------
    Johnson, W. B. & Lindenstrauss, J. (1984). Extensions of Lipschitz mappings
    into a Hilbert space. Contemporary Mathematics 26, 189-206.
    doi:10.1090/conm/026/737400

    Dasgupta, S. & Gupta, A. (2003). An elementary proof of a theorem of
    Johnson and Lindenstrauss. Random Structures & Algorithms 22(1), 60-65.
    doi:10.1002/rsa.10073

    Examples
    --------
    >>> import numpy as np
    >>> import bigdr
    >>> X = np.random.default_rng(0).standard_normal((100, 500))
    >>> rp = bigdr.GaussianRandomProjection(n_components=20, random_state=0).fit(X)
    >>> rp.transform(X).shape
    (100, 20)
    """

    def __init__(
        self,
        n_components: Any = "auto",
        *,
        eps: float = 0.1,
        compute_inverse_components: bool = False,
        random_state: int | None = 0,
    ) -> None:
        self.n_components = n_components
        self.eps = eps
        self.compute_inverse_components = compute_inverse_components
        self.random_state = random_state


class SparseRandomProjection(_RandomProjection):
    """Sparse random projection: ``+-1/sqrt(s k)`` with probability ``s/2`` each, else 0.

    Parameters
    ----------
    n_components : int or "auto"
        Output width; ``"auto"``: :func:`johnson_lindenstrauss_min_dim` for the number of rows and ``eps``.
    density : "auto" or float in (0, 1]
        ``"auto"``: ``1/sqrt(p)`` (Li, Hastie & Church 2006, very sparse);
        ``1/3``: Achlioptas (2003).
    eps : float in (0, 1)
        Distortion allowed to pairwise squared distances when ``n_components="auto"``.
    dense_output : bool
        Accepted for scikit-learn's signature. bigdr's output is always a dense
        array: ``k`` projections of a sparse row are nearly all nonzero (each
        sums ``density x p`` of its entries), so a sparse result would hold as
        many entries as the dense one at three times the memory.
    compute_inverse_components : bool
        As in :class:`GaussianRandomProjection`.
    random_state : int or None
        The whole projection: the same seed gives the same output for any chunking and scheduler.

    Attributes
    ----------
    density_ : float
    inverse_components_ : (p, k), with ``compute_inverse_components``

    References
    ----------
    Achlioptas, D. (2003). Database-friendly random projections:
    Johnson-Lindenstrauss with binary coins. J. Computer and System Sciences
    66(4), 671-687. doi:10.1016/S0022-0000(03)00025-4

    Li, P., Hastie, T. J. & Church, K. W. (2006). Very sparse random
    projections. Proc. KDD 2006, 287-296. doi:10.1145/1150402.1150436

    Examples
    --------
    >>> import numpy as np
    >>> import bigdr
    >>> X = np.random.default_rng(0).standard_normal((100, 500))
    >>> rp = bigdr.SparseRandomProjection(n_components=20, random_state=0).fit(X)
    >>> rp.transform(X).shape, round(rp.density_, 4)
    ((100, 20), 0.0447)
    """

    def __init__(
        self,
        n_components: Any = "auto",
        *,
        density: Any = "auto",
        eps: float = 0.1,
        dense_output: bool = False,
        compute_inverse_components: bool = False,
        random_state: int | None = 0,
    ) -> None:
        self.n_components = n_components
        self.density = density
        self.eps = eps
        self.dense_output = dense_output
        self.compute_inverse_components = compute_inverse_components
        self.random_state = random_state

    def _density(self, p: int) -> float:
        d = self.density
        if isinstance(d, str) and d == "auto":
            return 1.0 / math.sqrt(p)
        if isinstance(d, bool) or not isinstance(d, numbers.Real) or not 0 < float(d) <= 1:
            raise ValueError(f"density must be 'auto' or in (0, 1]; got {d!r}.")
        return float(d)


def distortion_report(model: _RandomProjection, X: Any, n_pairs: int = 1000, random_state: int = 0) -> dict:
    """Distribution of ``|f(x) - f(y)|^2 / |x - y|^2`` over sampled pairs of rows.

    Rows are drawn (seeded) from up to four row chunks, so the report reads
    at most four chunks of X, not all of it. Pairs of identical rows are
    skipped. ``within_eps`` is the fraction of ratios in ``[1 - eps, 1 + eps]``.
    """
    Xd = projection_input(X)
    rng = np.random.default_rng([random_state, PROJECTION_STREAM, 1])
    starts = np.cumsum((0,) + Xd.chunks[0])
    chosen = np.sort(rng.choice(len(Xd.chunks[0]), size=min(4, len(Xd.chunks[0])), replace=False))
    pool = np.concatenate([np.arange(starts[c], starts[c + 1]) for c in chosen])
    idx = np.sort(rng.choice(pool, size=min(2 * n_pairs, len(pool)), replace=False))
    (rows,) = compute(Xd[idx])
    if sp.issparse(rows):
        rows = rows.toarray()
    rows = np.asarray(rows, dtype=np.float64)
    Y = np.asarray(model.transform(rows), dtype=np.float64)
    half = len(rows) // 2
    perm = rng.permutation(len(rows))
    a, b = perm[:half], perm[half : 2 * half]
    orig = np.sum((rows[a] - rows[b]) ** 2, axis=1)
    keep = orig > 0
    ratio = np.sum((Y[a] - Y[b]) ** 2, axis=1)[keep] / orig[keep]
    eps = float(model.eps)
    q = np.quantile(ratio, [0.0, 0.01, 0.05, 0.5, 0.95, 0.99, 1.0])
    return {
        "n_pairs": int(keep.sum()),
        "eps": eps,
        "mean": float(ratio.mean()),
        "quantiles": dict(zip(["min", "1%", "5%", "50%", "95%", "99%", "max"], map(float, q))),
        "within_eps": float(np.mean(np.abs(ratio - 1) <= eps)),
    }
