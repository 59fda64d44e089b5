"""The estimator contract shared by every bigdr method.

Estimators subclass scikit-learn's public base classes (``BaseEstimator``,
``TransformerMixin``, ``ClassNamePrefixFeaturesOutMixin``), so ``clone``,
``Pipeline``, ``GridSearchCV``, estimator tags, ``set_output`` and
``get_feature_names_out`` work: ``__init__`` stores parameters only, fitted
attributes end in ``_``. numpy in gives numpy out; dask, zarr or a path in
gives a lazy dask array out.

The table of methods that persistence and the command line read is
:data:`bigdr.registry.METHODS`; an estimator declares there what it can do
beyond transforming (``_capabilities``) and how the command line spells its
parameters (``_cli_flags``).
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import Any

import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .blockwise.extension import Extension, extend_blockwise, score_blockwise
from .core.drift import drift_report, with_history
from .exceptions import GeneSelectionWarning, NotFittedError
from .io import as_array, as_sparse_array, is_sparse_input
from .io.anndata import is_anndata_object, unused_highly_variable, var_names_of
from .io.model import write_model
from .io.read import read_ahead_bytes
from .runtime.compute import compute
from .runtime.memory import MemoryEstimate, Part, check_memory, streaming


def is_dataarray(X: Any) -> bool:
    return type(X).__module__.startswith("xarray") and hasattr(X, "dims") and hasattr(X, "coords")


def _keeps_dataarray(method: Any) -> Any:
    """``method`` taking an xarray DataArray and giving one back: rows keep their dimension and coordinates."""
    if getattr(method, "_keeps_dataarray", False):
        return method

    @functools.wraps(method)
    def wrapped(self: Any, X: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_dataarray(X):
            return method(self, X, *args, **kwargs)
        import xarray

        out = method(self, X.data, *args, **kwargs)  # numpy in, numpy out; dask in, dask out
        dim = X.dims[0]
        coords = {k: v for k, v in X.coords.items() if v.dims == (dim,)}
        names = [str(n) for n in self.get_feature_names_out()] if hasattr(self, "get_feature_names_out") else None
        coords["component"] = names if names is not None and len(names) == out.shape[1] else np.arange(out.shape[1])
        return xarray.DataArray(out, dims=(dim, "component"), coords=coords, name=type(self).__name__.lower())

    wrapped._keeps_dataarray = True  # type: ignore[attr-defined]
    return wrapped


#: The default of a parameter renamed in 0.2, kept under its old name until 0.3.
DEPRECATED = "deprecated"


class BigdrEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Base class of bigdr's estimators: scikit-learn's contract and persistence."""

    #: Input dtypes whose output keeps the dtype (scikit-learn's ``preserves_dtype`` tag).
    _preserves_dtype: tuple[str, ...] = ("float64",)
    #: What the front ends can show of a fitted model beyond its embedding: "spectrum" (a scree
    #: or eigenvalue plot), "loadings" (a biplot), "structure" (the fitted curve or ridge over
    #: the data), "distortion" (pairwise distance ratios). The command line offers --scree,
    #: --biplot, --structure and --report from these, never from method names.
    _capabilities: frozenset[str] = frozenset({"spectrum"})
    #: Whether scipy.sparse input is taken as it is (scikit-learn's ``input_tags.sparse``).
    _accepts_sparse = False
    #: Command-line spellings of parameters whose own name would clash or mislead (param -> flag).
    _cli_flags: dict[str, str] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("transform", "fit_transform"):
            if name in cls.__dict__:
                setattr(cls, name, _keeps_dataarray(cls.__dict__[name]))

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "n_features_in_")

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = self._accepts_sparse
        tags.requires_fit = True
        if tags.transformer_tags is not None:
            tags.transformer_tags.preserves_dtype = list(self._preserves_dtype)
        return tags

    @property
    def _n_features_out(self) -> int:
        """Width of the output (for ``get_feature_names_out``)."""
        if not self.__sklearn_is_fitted__():
            raise AttributeError("_n_features_out")  # unfitted: scikit-learn's check_is_fitted reads this
        return int(getattr(self, "n_components_", None) or self.n_components)

    #: Parameters renamed in 0.2, old name -> new name. The old one stays in the signature with the
    #: default ``"deprecated"`` until 0.3; a value given under it is used, with a FutureWarning.
    _renamed_params: dict[str, str] = {}

    def _param(self, name: str) -> Any:
        """The value of parameter ``name``, or of its 0.1 name when a value was given under that."""
        for old, new in self._renamed_params.items():
            if new == name and not (isinstance(getattr(self, old), str) and getattr(self, old) == DEPRECATED):
                warnings.warn(
                    f"{type(self).__name__}({old}=...) is {name} since bigdr 0.2; {old} goes in 0.3.",
                    FutureWarning,
                    stacklevel=3,
                )
                return getattr(self, old)
        return getattr(self, name)

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet; call fit (or partial_fit) first.")

    def save(self, path: str, overwrite: bool = False, *, key: str | bytes | None = None) -> None:
        """Save the fitted model: arrays in a zarr group, parameters in JSON, no pickle (read by :func:`bigdr.load`).

        ``key`` signs the model (HMAC-SHA256) so that ``bigdr.load(path, key=key)`` proves it unchanged.
        """
        write_model(self, path, overwrite=overwrite, key=key)

    @classmethod
    def read_input(cls, path: str | os.PathLike, dataset: str | None = None) -> da.Array:
        """The lazy input of a fit from a path (the command line's reader); sparse data stay sparse
        for the estimators that take them (a CSR store, or the CSR ``X`` or layer of an AnnData file)."""
        if cls._accepts_sparse and is_sparse_input(path, dataset):
            return as_sparse_array(path, dataset=dataset)
        return as_array(path, dataset=dataset)

    def summary(self) -> dict[str, Any]:
        """What an embedding store records about the fit (JSON-serialisable)."""
        return {}

    # -- AnnData (scanpy's conventions; bigdr.io.obsm writes them) -----------------
    def _anndata_names(self, key: str) -> list[str]:
        """The elements written next to ``obsm[key]`` (checked before any work). Default: ``uns[key]``."""
        return [f"uns/{key}"]

    def _anndata_parts(self, Y: Any, key: str) -> tuple[Any, dict[str, Any]]:
        """The embedding as written into ``obsm[key]`` and the elements scanpy keeps next to it.

        Default: ``uns[key] = {"params": ...}``, as scanpy records a tool's parameters.
        """
        return Y, {f"uns/{key}": {"params": self._anndata_params()}}

    def _note_genes(self, X: Any, Xd: da.Array, first: bool = True) -> None:
        """scikit-learn's ``feature_names_in_`` for data read from AnnData: its genes, so that loadings
        written into a store land on their genes (:func:`bigdr.io.write_obsm`). ``first``: a new fit
        (a later ``partial_fit`` batch keeps the names of the first).

        Warns (:class:`~bigdr.exceptions.GeneSelectionWarning`) when every gene of an AnnData input
        that flags highly variable ones is used, where scanpy's ``sc.pp.pca`` takes only those.
        """
        if not first:
            return
        names = var_names_of(Xd)
        self.__dict__.pop("feature_names_in_", None)
        if names is not None and len(names) == Xd.shape[1]:
            self.feature_names_in_ = names
        unused = unused_highly_variable(X, Xd)
        if unused is not None:
            warnings.warn(
                f"{type(self).__name__} uses all {unused[1]:,} genes, but var['highly_variable'] flags "
                f"{unused[0]:,} of them, the genes scanpy's sc.pp.pca would use by default. To match scanpy, "
                f"fit adata[:, adata.var['highly_variable']] (a backed file is read for those genes only; "
                f"command line: the default, or --mask-var highly_variable).",
                GeneSelectionWarning,
                stacklevel=3,
            )

    def _anndata_params(self) -> dict[str, Any]:
        """The parameters as anndata can write them (None and objects left out)."""
        return {
            name: value
            for name, value in self.get_params(deep=False).items()
            if isinstance(value, (bool, int, float, str, np.integer, np.floating))
        }

    # -- memory ------------------------------------------------------------------
    def estimate_memory(self, X: Any) -> MemoryEstimate:
        """The predicted peak memory of ``fit_transform(X)``, reading no data.

        Computed from the parameters and the shape, dtype and chunks of ``X``
        (see :mod:`bigdr.runtime.memory`); ``fit`` compares the same estimate with the
        memory available and refuses, before any work, a fit that would not
        fit. ``str(estimate.describe())`` says what the memory holds.
        """
        if isinstance(X, (str, os.PathLike)):
            Xd = self.read_input(X)
        elif self._accepts_sparse and is_sparse_input(X):  # counted as the fit reads it: sparse blocks
            Xd = as_sparse_array(X)
        else:
            Xd = as_array(X, check_finite=False)
        return MemoryEstimate(type(self).__name__, self._all_memory_parts(Xd, wants_numpy(X)))

    def _memory_parts(self, Xd: da.Array, in_memory: bool = False) -> dict[str, Part]:
        """Named parts of the peak of a fit on ``Xd`` (parameters already checked). Default: one streaming pass.

        ``in_memory``: the input is a numpy array (some methods then hold it whole).
        """
        return {"stream": streaming(chunk_bytes_of(Xd), 3)}

    def _all_memory_parts(self, Xd: da.Array, *args: Any, **kwargs: Any) -> dict[str, Part]:
        """:meth:`_memory_parts` and the row blocks read ahead of a store larger than memory."""
        parts = self._memory_parts(Xd, *args, **kwargs)
        ahead = read_ahead_bytes(Xd)
        if ahead:
            parts["read ahead"] = Part(ahead, "row blocks read ahead from disk", "")
        return parts

    def _check_memory(self, Xd: da.Array, *args: Any, **kwargs: Any) -> None:
        """Refuse a fit whose estimate (:meth:`_all_memory_parts`, same arguments) exceeds the memory available."""
        check_memory(MemoryEstimate(type(self).__name__, self._all_memory_parts(Xd, *args, **kwargs)))

    def describe(self) -> str:
        """One line for the command line after a fit."""
        return type(self).__name__

    # -- drift (bigdr.core.drift) ---------------------------------------------------
    def _drift_rule(self) -> tuple[float, str] | None:
        """The training threshold of the drift score and the score's name; None: no drift measure."""
        return None

    def _lazy_embedding(self, X: Any) -> da.Array:
        """The lazy embedding of new rows (what ``transform`` computes)."""
        raise NotImplementedError

    def _embed_and_score(self, X: Any) -> da.Array:
        """Lazy ``(n, width + 1)``: the embedding of ``X``, each row's drift score in the last column."""
        raise NotImplementedError

    def embed_with_drift(self, X: Any) -> tuple[da.Array, da.Array | None]:
        """The lazy embedding of ``X`` and the lazy count of its rows beyond the drift threshold.

        Computed together (``dask.compute(store, count)``) they take one pass
        over ``X``; the count is None for a method without a drift measure.
        ``transform`` itself leaves the model unchanged (scikit-learn's
        contract); :meth:`measure_drift` and ``partial_fit`` record drift.
        """
        self._check_fitted()
        rule = self._drift_rule()
        if rule is None:
            return self._lazy_embedding(X), None
        both = self._embed_and_score(X)
        return both[:, :-1], (both[:, -1] > rule[0]).sum()

    def _drift_scores(self, X: Any) -> da.Array:
        """Lazy ``(n,)``: each row's drift score (default: the last column of :meth:`_embed_and_score`)."""
        return self._embed_and_score(X)[:, -1]

    def drift_count(self, X: Any) -> da.Array:
        """The lazy number of rows of ``X`` beyond the drift threshold (a pass that need not place them)."""
        rule = self._drift_rule()
        if rule is None:
            raise ValueError(f"{type(self).__name__} has no drift measure.")
        return (self._drift_scores(X) > rule[0]).sum()

    def record_drift(
        self, n_rows: int, n_beyond: int, update: bool = False, rule: tuple[float, str] | None = None
    ) -> dict[str, Any]:
        """Set ``drift_`` from counts (see :func:`bigdr.core.drift.drift_report`); updates join ``drift_history_``.

        ``rule``: the threshold the count was taken against (default: the model's current one).
        """
        rule = rule or self._drift_rule()
        if rule is None:
            raise ValueError(f"{type(self).__name__} has no drift measure.")
        report = drift_report(n_rows, n_beyond, *rule)
        self.drift_ = report
        if update:
            self.drift_history_ = with_history(getattr(self, "drift_history_", None), report)
        return report

    def measure_drift(self, X: Any) -> dict[str, Any]:
        """How well the rows of ``X`` fit the model (one pass; the model is unchanged but for ``drift_``).

        Returns the report also kept in ``drift_``: the fraction of rows whose
        drift score exceeds the training 99th percentile, and whether a refit
        is advised (:mod:`bigdr.core.drift`).
        """
        self._check_fitted()
        sparse = self._accepts_sparse and is_sparse_input(X)  # sparse rows are scored sparse, never densified
        Xd = as_sparse_array(X, name="X", min_rows=1) if sparse else as_array(X, name="X", min_rows=1)
        (count,) = compute(self.drift_count(Xd))
        return self.record_drift(Xd.shape[0], int(count))

    def _reset_drift(self) -> None:
        for name in ("drift_", "drift_history_"):
            self.__dict__.pop(name, None)


class ExtensionEstimator(BigdrEstimator):
    """An estimator whose ``transform`` is a blockwise :class:`~bigdr.blockwise.extension.Extension`.

    Subclasses build the extension from fitted attributes only
    (:meth:`_make_extension`), so a loaded model rebuilds it on first use.
    """

    _ext: Extension | None

    def _make_extension(self) -> Extension:
        raise NotImplementedError

    def _fit(self, X: Any) -> np.ndarray | da.Array:
        """Fit on ``X``; the lazy embedding of its rows (``embedding_`` set when ``X`` is in memory)."""
        raise NotImplementedError

    def fit(self, X: Any, y: Any = None):
        """Fit the model on the rows of ``X`` (numpy, dask, zarr or a path)."""
        self._fit(X)
        return self

    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray | da.Array:
        """Fit and embed the rows of ``X`` (numpy in, numpy out; lazy otherwise)."""
        Y = self._fit(X)
        return self.embedding_ if wants_numpy(X) else Y

    def _extension(self) -> Extension:
        ext = self.__dict__.get("_ext")
        if ext is None:
            ext = self._ext = self._make_extension()
        return ext

    def _extend(self, X: Any) -> da.Array:
        """The lazy embedding of the rows of ``X``."""
        return extend_blockwise(X, self._extension(), self.n_features_in_, type(self).__name__)

    _lazy_embedding = _extend

    def _embed_and_score(self, X: Any) -> da.Array:
        return extend_blockwise(X, self._extension(), self.n_features_in_, type(self).__name__, score=True)

    def _drift_scores(self, X: Any) -> da.Array:
        return score_blockwise(X, self._extension(), self.n_features_in_, type(self).__name__)

    def transform(self, X: Any) -> np.ndarray | da.Array:
        """Embed rows without refitting, blockwise (numpy in, numpy out; lazy otherwise)."""
        self._check_fitted()
        Y = self._extend(X)
        return compute(Y)[0] if wants_numpy(X) else Y


def chunk_bytes_of(Xd: da.Array) -> int:
    """Bytes of the largest block of ``Xd`` (in memory, as computed); a sparse block by its nonzeros."""
    if hasattr(Xd._meta, "tocsr"):
        from .io.sparse import SPARSE_CHUNK_NNZ, SPARSE_NNZ_BYTES

        return SPARSE_CHUNK_NNZ * SPARSE_NNZ_BYTES
    rows = max(Xd.chunks[0]) if Xd.chunks[0] else 0
    cols = max(Xd.chunks[1]) if Xd.ndim > 1 and Xd.chunks[1] else 1
    return int(rows * cols * Xd.dtype.itemsize)


def like_input(X: Any, lazy: da.Array) -> np.ndarray | da.Array:
    """``lazy`` computed when the caller gave in-memory data (:func:`wants_numpy`), else left lazy."""
    return compute(lazy)[0] if wants_numpy(X) else lazy


def wants_numpy(X: Any) -> bool:
    """Whether the caller gave in-memory data (so gets numpy back)."""
    # A path, zarr array or h5py dataset may be larger than memory: stay lazy.
    if isinstance(X, da.Array):
        return False
    if type(X).__module__.startswith("scipy.sparse"):  # an in-memory sparse matrix
        return True
    if is_anndata_object(X):  # in memory: numpy out, as for its X; backed: lazy, as for its file
        return not getattr(X, "isbacked", False)
    return isinstance(X, (np.ndarray, list, tuple)) or hasattr(X, "__array__") and not hasattr(X, "chunks")
