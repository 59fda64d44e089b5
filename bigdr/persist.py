"""Saving and loading fitted models without pickle.

A saved model is a zarr (v3) group (:mod:`bigdr.io.model`): every fitted
array is a zarr array, and the group attributes hold JSON only -- the format
version, the class name, the parameters, fitted scalars and a SHA-256 of each
array. Loading looks the class up among bigdr's own estimators (never imports
a name from the file), checks every array against its digest, and so never
executes code from the file and notices truncation or accidental damage.
A signature made with a key (``save(path, key=...)``) also proves who saved it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .base import BigdrEstimator
from .io.model import STRINGS, read_model, write_model
from .registry import saved_class


def save(
    model: BigdrEstimator, path: str | os.PathLike, overwrite: bool = False, *, key: str | bytes | None = None
) -> Path:
    """Write a fitted model to ``path`` (a new directory), atomically.

    The checksums stored with it detect damage, not deliberate edits; pass
    ``key`` (at least 16 bytes, kept secret) to sign the model so that
    ``load(path, key=key)`` proves it is unchanged since you saved it.
    """
    return write_model(model, path, overwrite=overwrite, key=key)


def load(path: str | os.PathLike, *, key: str | bytes | None = None) -> Any:
    """Load a model written by ``model.save(path)`` (see :func:`bigdr.io.model.read_model` for the checks).

    With ``key``, the model must carry a signature made with that key
    (HMAC-SHA256); without, only its integrity is checked.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> import bigdr
    >>> pca = bigdr.PCA(2).fit(np.random.default_rng(0).standard_normal((100, 4)))
    >>> path = os.path.join(tempfile.mkdtemp(), "model.zarr")
    >>> pca.save(path)
    >>> bool(np.allclose(bigdr.load(path).components_, pca.components_))
    True
    """
    meta, arrays = read_model(path, key=key)
    cls = saved_class(str(meta.get("class", "")))
    if cls is None:
        raise ValueError(f"{str(path)!r} holds an unknown model class {meta.get('class')!r}.")
    model = cls()
    params = dict(meta["params"])
    for old, new in cls._renamed_params.items():  # a model saved by 0.1: its value under today's name
        if old in params and new not in params:
            params[new] = params.pop(old)
    try:
        model.set_params(**params)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{str(path)!r} has invalid parameters: {exc}") from exc
    for name, value in arrays.items():
        setattr(model, name, value)
    for name, value in meta.get("scalars", {}).items():
        if isinstance(value, dict) and list(value) == [STRINGS]:
            value = np.asarray(value[STRINGS], dtype=object)
        setattr(model, name, value)
    return model
