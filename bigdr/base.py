"""The estimator contract shared by every bigdr method.

scikit-learn's conventions without inheriting its internals: ``__init__``
stores parameters only, ``get_params``/``set_params`` read them from the
signature, fitted attributes end in ``_``. numpy in gives numpy out; dask,
zarr or a path in gives a lazy dask array out.
"""

from __future__ import annotations

import inspect
from typing import Any

import dask.array as da
import numpy as np


class NotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted estimator."""


class BaseEstimator:
    """Parameters from ``__init__``, a readable repr, persistence."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "BaseEstimator":
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for {type(self).__name__}; valid parameters are {valid}.")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if not _same(v, defaults.get(k))]
        return f"{type(self).__name__}({', '.join(changed)})"

    def _check_fitted(self, attribute: str) -> None:
        if not hasattr(self, attribute):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet; call fit (or partial_fit) first.")

    def save(self, path: str, overwrite: bool = False) -> None:
        """Save the fitted model: arrays in a zarr group, parameters in JSON (no pickle)."""
        from .persist import save

        save(self, path, overwrite=overwrite)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return a is b


def wants_numpy(X: Any) -> bool:
    """Whether the caller gave in-memory data (so gets numpy back)."""
    # A path, zarr array or h5py dataset may be larger than memory: stay lazy.
    return isinstance(X, (np.ndarray, list, tuple)) and not isinstance(X, da.Array)


def check_positive_int(value: Any, name: str) -> int:
    """``value`` as an int >= 1, or a ValueError naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}.")
    return int(value)
