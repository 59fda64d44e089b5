"""Writing and reading saved models, without pickle.

A saved model is a zarr (v3) group: every fitted array is a zarr array, and
the group attributes hold JSON only -- the format version, the class name,
the parameters, fitted scalars and a SHA-256 of each array. Loading looks the
class up among bigdr's own estimators (never imports a name from the file), checks
every array against its digest, and so never executes code from the file and
notices truncation and accidental damage.

The checksums give *integrity*, not *authenticity*: whoever can edit the file
can recompute them. For models passed between people, sign them with a key
(``save(path, key=...)``): an HMAC-SHA256 of the checksums that only holders
of the key can make, checked by ``load(path, key=...)``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import numbers
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from .outputs import check_output, publish, remove, temporary_sibling

FORMAT = "bigdr-model"
FORMAT_VERSION = 1


def _digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256()
    h.update(str(a.dtype).encode())
    h.update(json.dumps(list(a.shape)).encode())
    h.update(a.tobytes())
    return h.hexdigest()


def _meta_digest(meta: dict) -> str:
    covered = {k: meta.get(k) for k in ("class", "params", "scalars", "arrays")}
    return hashlib.sha256(json.dumps(covered, sort_keys=True).encode()).hexdigest()


#: The arrays of a CSR attribute, stored as ``NAME.csr_PART`` (its shape in the metadata's ``sparse``).
CSR_PARTS = ("data", "indices", "indptr")


#: The key of an array of strings among a model's scalars (read back as an object array, as scikit-learn keeps names).
STRINGS = "strings"


def _fitted_items(model: Any) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, list[int]]]:
    import scipy.sparse as sp

    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, Any] = {}
    sparse: dict[str, list[int]] = {}
    names = [k for k in vars(model) if k.endswith("_") and not k.startswith("__")]
    names += [k for k in getattr(model, "_persist_private", ()) if hasattr(model, k)]
    for name in names:
        value = getattr(model, name)
        if isinstance(value, np.ndarray) and value.dtype.kind in "UO":  # names (feature_names_in_): JSON, as
            scalars[name] = {STRINGS: [str(v) for v in value.tolist()]}  # zarr has no stable string dtype
        elif isinstance(value, np.ndarray):
            arrays[name] = value
        elif sp.issparse(value):  # sparse rows a model keeps (KernelPCA's reference rows of sparse data)
            value = sp.csr_matrix(value)
            arrays.update({f"{name}.csr_{part}": getattr(value, part) for part in CSR_PARTS})
            sparse[name] = list(value.shape)
        elif isinstance(value, (numbers.Number, str, bool, np.generic)) or value is None:
            scalars[name] = value.item() if isinstance(value, np.generic) else value
        elif isinstance(value, (dict, list)) and _is_json(value):  # reports such as drift_
            scalars[name] = value
        else:
            raise TypeError(f"Cannot persist attribute {name!r} of type {type(value).__name__}.")
    return arrays, scalars, sparse


def _is_json(value: Any) -> bool:
    try:
        return json.loads(json.dumps(value, allow_nan=True)) == value
    except (TypeError, ValueError):
        return False


def _as_key(key: str | bytes) -> bytes:
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, bytes) or len(key) < 16:
        raise ValueError("A model signing key must be at least 16 bytes (for example secrets.token_hex(32)).")
    return key


def _signature(meta: dict, key: str | bytes) -> str:
    return hmac.new(_as_key(key), str(meta["sha256"]).encode(), hashlib.sha256).hexdigest()


def write_model(
    model: Any, path: str | os.PathLike, overwrite: bool = False, *, key: str | bytes | None = None
) -> Path:
    """Write a fitted model to ``path`` (a new directory), atomically; sign it when ``key`` is given."""
    final = check_output(path, "model", overwrite=overwrite)
    tmp = stage_model(model, final, key=key)
    try:
        publish(tmp, final, overwrite)
    except BaseException:
        remove(tmp)
        raise
    return final


def stage_model(model: Any, final: Path, *, key: str | bytes | None = None) -> Path:
    """Write ``model`` under a hidden name beside ``final`` and return that name (publish it later)."""
    import zarr

    if not any(k.endswith("_") for k in vars(model)):
        raise ValueError(f"This {type(model).__name__} is not fitted; fit it before saving.")
    params = model.get_params()
    try:
        json.dumps(params)
    except TypeError as exc:
        raise TypeError(f"Parameters of {type(model).__name__} must be JSON-serialisable to save: {exc}") from exc
    arrays, scalars, sparse = _fitted_items(model)
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "bigdr_version": __version__,
        "class": type(model).__name__,
        "params": params,
        "scalars": scalars,
        "sparse": sparse,
        "arrays": {k: {"sha256": _digest(v), "shape": list(v.shape), "dtype": str(v.dtype)} for k, v in arrays.items()},
    }
    meta["sha256"] = _meta_digest(meta)
    if key is not None:
        meta["hmac_sha256"] = _signature(meta, key)
    tmp = temporary_sibling(final)
    try:
        group = zarr.open_group(str(tmp), mode="w", attributes=meta)
        for name, value in arrays.items():
            chunks = value.shape if value.size else tuple(1 for _ in value.shape)
            group.create_array(name, shape=value.shape, dtype=value.dtype, chunks=chunks)[...] = value
    except BaseException:
        remove(tmp)
        raise
    return tmp


def _foreign(array_dir: Path) -> bool:
    """Whether an array's raw metadata declares Python objects or a pickle codec (never written by bigdr)."""
    for meta_file in (".zarray", "zarr.json"):
        try:
            text = (array_dir / meta_file).read_text().lower()
        except OSError:
            continue
        if '"|o"' in text or "pickle" in text or '"object"' in text:
            return True
    return False


def read_model(path: str | os.PathLike, *, key: str | bytes | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """The attributes and the checked arrays of a model written by :func:`write_model`.

    With ``key``, the model must carry a signature made with that key.

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``.
    ValueError
        Not a bigdr model, a newer format, a missing or altered array, a
        missing or wrong signature when ``key`` is given.
    """
    import zarr

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"No saved model at {str(path)!r}.")
    try:
        group: Any = zarr.open_group(str(p), mode="r")
        meta: dict[str, Any] = dict(group.attrs)
    except Exception as exc:
        raise ValueError(f"{str(path)!r} is not a saved bigdr model (cannot open it as a zarr group: {exc}).") from exc
    if meta.get("format") != FORMAT:
        raise ValueError(f"{str(path)!r} is not a saved bigdr model (no '{FORMAT}' marker in its attributes).")
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(
            f"{str(path)!r} was saved in model format {meta.get('format_version')} by bigdr "
            f"{meta.get('bigdr_version')}; this bigdr reads format {FORMAT_VERSION}. Upgrade bigdr."
        )
    if meta.get("sha256") != _meta_digest(meta):
        raise ValueError(f"{str(path)!r} is corrupted or was modified: its parameters do not match their checksum.")
    if key is not None:
        signature = meta.get("hmac_sha256")
        if not isinstance(signature, str):
            raise ValueError(f"{str(path)!r} is not signed; it cannot be checked against the key you gave.")
        if not hmac.compare_digest(signature, _signature(meta, key)):
            raise ValueError(f"{str(path)!r} was not signed with this key, or was modified after signing.")
    arrays = {}
    for name, info in meta.get("arrays", {}).items():
        try:
            stored = group[name]
        except Exception as exc:
            if _foreign(p / name):
                raise ValueError(
                    f"{str(path)!r} holds array {name!r} as Python objects (a pickle): a file that is not bigdr's "
                    f"(bigdr models never contain pickles). It was not loaded."
                ) from exc
            raise ValueError(f"{str(path)!r} is incomplete: array {name!r} is missing or unreadable ({exc}).") from exc
        if str(stored.dtype) != info.get("dtype"):
            raise ValueError(
                f"{str(path)!r} holds array {name!r} of dtype {stored.dtype} where bigdr wrote {info.get('dtype')}: "
                f"a file that is not bigdr's (objects or pickles are never part of a bigdr model). It was not loaded."
            )
        try:
            value = np.asarray(stored[...])
        except Exception as exc:
            raise ValueError(f"{str(path)!r} is damaged: array {name!r} cannot be read ({exc}).") from exc
        if _digest(value) != info.get("sha256"):
            raise ValueError(f"{str(path)!r} is corrupted or was modified: array {name!r} does not match its checksum.")
        arrays[name] = value
    return meta, _with_sparse(arrays, meta.get("sparse", {}))


def _with_sparse(arrays: dict[str, Any], shapes: dict[str, list[int]]) -> dict[str, Any]:
    """The CSR attributes put back together from their stored parts."""
    import scipy.sparse as sp

    for name, shape in shapes.items():
        data, indices, indptr = (arrays.pop(f"{name}.csr_{part}") for part in CSR_PARTS)
        arrays[name] = sp.csr_matrix((data, indices, indptr), shape=tuple(shape))
    return arrays
