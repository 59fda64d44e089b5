"""The ``bigdr info`` command: what a store, file or saved model holds, and how a key file is read."""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_key(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        key = Path(path).read_bytes().strip()
    except OSError as exc:
        raise ValueError(f"cannot read the key file {path}: {exc.strerror}") from None
    if len(key) < 16:
        raise ValueError(f"The key in {path} is shorter than 16 bytes; use a long random key.")
    return key


def _describe_array(name: str, a) -> str:
    return f"{name}: shape {tuple(a.shape)}, dtype {a.dtype}, chunks {tuple(a.chunks) if a.chunks else None}"


def _describe_zarr_array(name: str, a) -> str:
    """:func:`_describe_array` and the compressors: each pass over a compressed store decodes it again."""
    names = [type(c).__name__.removesuffix("Codec").lower() for c in getattr(a, "compressors", ()) or ()]
    return f"{_describe_array(name, a)}, compressors {', '.join(names) or 'none (raw bytes)'}"


def cmd_info(args) -> int:
    path = args.path
    lower = path.lower()
    from ..io.anndata import describe_anndata, is_anndata

    if is_anndata(path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such AnnData file: {path!r}")
        lines = describe_anndata(path)
        print(f"{path}: {lines[0]}")
        for line in lines[1:]:
            print(f"  {line}")
        return 0
    if lower.endswith(".npy"):
        import numpy as np

        a = np.load(path, mmap_mode="r", allow_pickle=False)
        print(f"{path}: npy, shape {a.shape}, dtype {a.dtype}")
        return 0
    if lower.endswith((".h5", ".hdf5")) or ".h5:" in lower:
        import h5py

        with h5py.File(path.split(":")[0], "r") as fh:
            fh.visititems(lambda n, o: print(_describe_array(n, o)) if isinstance(o, h5py.Dataset) else None)
        return 0
    import zarr

    if not os.path.exists(path) and "://" not in path:
        raise FileNotFoundError(f"No such store or file: {path!r}")
    try:
        node = zarr.open(path, mode="r")
    except Exception as exc:
        raise ValueError(f"{path!r} is not a zarr store, .npy or HDF5 file ({exc}).") from exc
    attrs = dict(node.attrs)
    if attrs.get("format") == "bigdr-model":
        from ..persist import load

        key = read_key(args.model_key_file)
        model = load(path, key=key)
        signed = "signature checked" if key else ("signed" if "hmac_sha256" in attrs else "unsigned")
        print(
            f"{path}: bigdr model {attrs['class']} (format {attrs['format_version']}, bigdr {attrs['bigdr_version']}, "
            f"{signed})"
        )
        print(f"  params: {json.dumps(attrs['params'])}")
        for name in ("n_components_", "n_features_in_", "n_samples_seen_", "svd_solver_", "mode_"):
            if hasattr(model, name):
                print(f"  {name} = {getattr(model, name)}")
        if hasattr(model, "reference_rows_"):
            print(f"  reference rows: {len(model.reference_rows_)} (cap {getattr(model, 'reference_cap_', None)})")
        if hasattr(model, "explained_variance_ratio_"):
            print(f"  explained_variance_ratio_ = {[round(float(v), 4) for v in model.explained_variance_ratio_]}")
        _print_history(model)
        return 0
    fmt = node.metadata.zarr_format
    if isinstance(node, zarr.Array):
        print(f"{path}: zarr v{fmt} array")
        print("  " + _describe_zarr_array("array", node))
    else:
        print(f"{path}: zarr v{fmt} group")
        for name in sorted(node.array_keys()):
            print("  " + _describe_zarr_array(name, node[name]))
    if attrs:
        print(f"  attributes: {json.dumps(attrs, default=str)}")
    return 0


def _print_history(model) -> None:
    from ..core.drift import describe_drift

    history = getattr(model, "drift_history_", None) or []
    if history:
        flagged = sum(r["refit_advised"] for r in history)
        print(f"  updates: {len(history)} recorded, {flagged} with refit advised; the last:")
        for r in history[-5:]:
            print(f"    {r['time']}: {describe_drift(r)}")
    elif hasattr(model, "drift_"):
        print("  last drift measured: " + describe_drift(model.drift_))
