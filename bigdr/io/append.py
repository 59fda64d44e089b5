"""Growing stores: atomic, resumable appends of rows to a zarr store (format 2 or 3).

A zarr array's shape lives in its metadata file (``zarr.json``, or ``.zarray``
for format 2); chunks beyond the shape are never read. An append therefore

1. writes every chunk it touches -- the last, partial chunk (its old rows
   read back and the new rows after them) and the new chunks -- into a staging
   array beside the store (``.<store>.append``) whose metadata is the store's
   with the new shape, so the chunks are encoded exactly as the store's;
2. moves those chunk files into the store (each move an atomic rename; a reader
   of the old shape sees the same old rows in the rewritten last chunk, and
   never reads the new chunks);
3. commits by atomically replacing the metadata file with the new shape and the
   append recorded in the attributes (``bigdr_appends``: rows, time, source).

A reader sees the old shape or the new one, never a partial append. A crash at
any step leaves the old store valid; ``resume=True`` finishes the append from
the staging array (only the blocks not yet written are computed).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np

from .blocks import DONE_DIR, compute_also, drop_unfinished, json_safe, store_together
from .outputs import remove
from .read import as_array, source_paths

#: Files of a zarr array's metadata (format 3, then format 2); every other file is a chunk.
_META_FILES = ("zarr.json", ".zarray", ".zattrs", ".zgroup")
#: Written in the staging directory once every block is computed: from then on only moves and commits remain.
_MOVING = "moving"
#: The attribute listing a store's appends.
APPENDS_ATTR = "bigdr_appends"


def staging_path(path: str | os.PathLike) -> Path:
    """Where an append to ``path`` stages its chunks (kept after a crash for ``resume``)."""
    final = Path(path)
    return final.with_name(f".{final.name}.append")


def _targets(path: Path, arrays: Any, dataset: str | None) -> tuple[Any, dict[str, Any]]:
    """The store's root node and the arrays to grow: name ("" for an array store) -> zarr array."""
    import zarr

    try:
        root = zarr.open(str(path), mode="r")
    except Exception as exc:  # zarr raises several types for "not a store"
        raise ValueError(f"{str(path)!r} is not a zarr store to append to: {exc}") from exc
    if isinstance(root, zarr.Array):
        if isinstance(arrays, dict):
            raise ValueError(f"{str(path)!r} is a single array; append one array to it, not a dict.")
        return root, {"": root}
    names = sorted(root.array_keys())
    if isinstance(arrays, dict):
        wanted = list(arrays)
    else:
        wanted = [dataset or ("X" if "X" in names else (names[0] if len(names) == 1 else ""))]
        if not wanted[0]:
            raise ValueError(f"zarr group {str(path)!r} holds arrays {names}; name the one to grow with dataset=.")
    missing = [w for w in wanted if w not in names]
    if missing:
        raise ValueError(f"zarr group {str(path)!r} has no array {missing[0]!r}; it holds {names}.")
    nodes: dict[str, Any] = {w: root[w] for w in wanted}
    n_old = {int(a.shape[0]) for a in nodes.values()}
    if len(n_old) != 1:
        raise ValueError(f"The arrays {wanted} of {str(path)!r} have different numbers of rows; cannot append to them.")
    (n,) = n_old
    others: dict[str, Any] = {k: root[k] for k in names if k not in nodes}
    aligned = [k for k, a in others.items() if a.ndim >= 1 and a.shape[0] == n]
    if aligned:
        raise ValueError(
            f"The group {str(path)!r} also holds {aligned} with the same {n} rows; appending to {wanted} alone "
            f"would misalign them. Append to all of them at once: append_zarr({{'{wanted[0]}': ..., "
            f"'{aligned[0]}': ...}}, store)."
        )
    return root, nodes


def _prepare(name: str, node: Any, X: Any) -> da.Array:
    """The batch for one array, checked against it (width, dtype, finite)."""
    what = f"array {name!r}" if name else "the store"
    if node.ndim == 2:
        Xd = as_array(X, name="X_new", min_rows=0)  # an empty batch is a no-op
        if Xd.shape[1] != node.shape[1]:
            raise ValueError(
                f"The new rows have {Xd.shape[1]} columns; {what} has {node.shape[1]}. Append rows of the same width."
            )
    else:
        Xd = X if isinstance(X, da.Array) else da.from_array(np.asarray(X))
        if Xd.shape[1:] != node.shape[1:]:
            raise ValueError(
                f"The new rows have shape {Xd.shape[1:]} after the first axis; {what} has {node.shape[1:]}."
            )
    if Xd.dtype != node.dtype:
        raise TypeError(
            f"The new rows are {Xd.dtype}; {what} holds {node.dtype}. Convert them first "
            f"(X.astype('{node.dtype}')) so the store keeps one dtype."
        )
    return Xd


def _fingerprint(path: Path, n_old: int, prepared: dict[str, da.Array], source: str | None) -> str:
    import hashlib

    # Not the dask graph's name: a resumed append builds a new graph for the same rows. A
    # named source identifies them; otherwise the batch's first and last rows do.
    h = hashlib.sha256(json.dumps([str(path.resolve()), n_old, source], sort_keys=True).encode())
    for k in sorted(prepared):
        a = prepared[k]
        h.update(json.dumps([k, list(a.shape), str(a.dtype)]).encode())
        if a.shape[0] and source is None:
            ends = da.concatenate([a[:1], a[-1:]]).compute()
            h.update(np.ascontiguousarray(ends).tobytes())
    return h.hexdigest()


def batch_identity(X: da.Array) -> str:
    """What identifies a batch of rows from one run to the next: its files, shape, dtype, first and last rows.

    Reads two rows. Recorded with each append (``batch``), so that appending the
    same rows again is noticed (:func:`check_repeat`).
    """
    import hashlib

    files = sorted(str(Path(p).resolve()) for p in source_paths(X))
    h = hashlib.sha256(json.dumps([files, list(X.shape), str(X.dtype)]).encode())
    if X.shape[0]:
        h.update(np.ascontiguousarray(da.concatenate([X[:1], X[-1:]]).compute()).tobytes())
    return h.hexdigest()[:32]


def appends(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The appends recorded in a store (oldest first): rows, time, source and batch."""
    import zarr

    records = zarr.open(str(path), mode="r").attrs.get(APPENDS_ATTR, [])
    return [dict(r) for r in records] if isinstance(records, list) else []


def check_repeat(path: str | os.PathLike, batch: str, allow_repeat: bool = False) -> None:
    """Refuse to append a batch that an earlier append to ``path`` recorded, unless ``allow_repeat``.

    Appending the same rows twice would leave the store longer than its input
    and its rows no longer aligned with the input's.
    """
    if allow_repeat:
        return
    import zarr

    attrs = zarr.open(str(path), mode="r").attrs
    first = [{"batch": attrs.get("batch"), "source": attrs.get("input"), "where": "its first rows"}]
    for record in first + appends(path):
        if record.get("batch") == batch:
            where = record.get("where") or "its rows {}-{}, appended at {}".format(
                record["rows"][0], record["rows"][1] - 1, record.get("time")
            )
            raise ValueError(
                f"These rows are in {str(path)!r} already ({where}, from {record.get('source')}); appending "
                f"them again would misalign the store with its input rows. Pass allow_repeat=True (command "
                f"line: --allow-repeat) to append them once more."
            )


def _array_dir(path: Path, name: str) -> Path:
    return path / name if name else path


def _grown_metadata(array_dir: Path, n_new: int) -> dict[str, str]:
    """The array's metadata files with the shape set to ``n_new`` rows."""
    out = {}
    for meta in ("zarr.json", ".zarray"):
        f = array_dir / meta
        if f.exists():
            doc = json.loads(f.read_text())
            doc["shape"] = [n_new, *doc["shape"][1:]]
            out[meta] = json.dumps(doc, indent=2)
    zattrs = array_dir / ".zattrs"
    if zattrs.exists():
        out[".zattrs"] = zattrs.read_text()
    return out


def _replace_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.bigdr-tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _record(path: Path, record: dict) -> None:
    """Add ``record`` to the ``bigdr_appends`` attribute of the node at ``path`` (atomically)."""
    v3 = path / "zarr.json"
    if v3.exists():
        doc = json.loads(v3.read_text())
        attrs = doc.setdefault("attributes", {})
        attrs[APPENDS_ATTR] = [*attrs.get(APPENDS_ATTR, []), record]
        _replace_text(v3, json.dumps(doc, indent=2))
        return
    f = path / ".zattrs"
    attrs = json.loads(f.read_text()) if f.exists() else {}
    attrs[APPENDS_ATTR] = [*attrs.get(APPENDS_ATTR, []), record]
    _replace_text(f, json.dumps(attrs, indent=2))


def _commit_shape(array_dir: Path, n_new: int) -> None:
    for meta in ("zarr.json", ".zarray"):
        f = array_dir / meta
        if f.exists():
            doc = json.loads(f.read_text())
            doc["shape"] = [n_new, *doc["shape"][1:]]
            _replace_text(f, json.dumps(doc, indent=2))


def _move_chunks(staged: Path, array_dir: Path) -> None:
    """Move every chunk file of the staging array into the store (atomic renames)."""
    for root, dirs, files in os.walk(staged):
        dirs[:] = [d for d in dirs if d != DONE_DIR]
        rel = Path(root).relative_to(staged)
        for f in files:
            if f in _META_FILES and rel == Path("."):
                continue
            dest = array_dir / rel / f
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(root) / f, dest)


def append_zarr(
    X_new: Any,
    path: str | os.PathLike,
    *,
    dataset: str | None = None,
    resume: bool = False,
    source: str | None = None,
    also: dict[str, Any] | None = None,
    batch: str | None = None,
    allow_repeat: bool = False,
) -> Path:
    """Append rows to an existing zarr store (format 2 or 3), atomically and resumably.

    Parameters
    ----------
    X_new : array-like, dask array, zarr array or path, or dict of name -> array
        The rows to add: same width (trailing shape) and dtype as the store's
        array. A dict grows several row-aligned arrays of a group at once (a
        store written by ``bigdr generate`` holds ``X`` and ``coords``: give both).
    path : str or Path
        A local zarr store: an array, or a group (``dataset`` names the array;
        default ``X``, or its only array).
    resume : bool
        Finish an append that was interrupted (the staging array
        ``.<store>.append`` beside the store must belong to the same append).
        Without it, a stale staging array is discarded and the append starts again.
    source : str, optional
        What the rows are, for the provenance record (default: the input's
        path, or the kind of array). A resumed append must give the same
        source; without one, the batch's first and last rows identify it.
    also : dict of name -> lazy value, optional
        Computed in the same pass as the rows (a statistic of the same
        graph); each value is replaced by its result.
    batch : str, optional
        The identity of the rows' input (:func:`batch_identity`), recorded with
        the append; an append of a batch the store already recorded is refused.
    allow_repeat : bool
        Append a recorded batch again.

    Returns
    -------
    pathlib.Path
        The store.

    Notes
    -----
    Readers see the old shape or the new one: the chunks are staged beside
    the store, moved in, and the metadata file (with the new shape and the
    record ``{"rows": [start, stop], "time": ..., "source": ...}`` appended
    to the ``bigdr_appends`` attribute) is replaced last, atomically. A batch
    of the wrong width or dtype, or with NaN or Inf, is refused and the store
    is left unchanged. Concurrent appends to one store are not supported.
    """
    import zarr

    final = Path(path)
    if "://" in str(path):
        raise ValueError(f"append_zarr needs a local store; got {str(path)!r}.")
    if not final.exists():
        raise FileNotFoundError(f"No zarr store at {str(path)!r} to append to; write it first (bigdr.write_zarr).")
    root, nodes = _targets(final, X_new, dataset)
    if batch is not None:
        check_repeat(final, batch, allow_repeat)
    batches = X_new if isinstance(X_new, dict) else {next(iter(nodes)): X_new}
    prepared = {name: _prepare(name, nodes[name], batches[name]) for name in nodes}
    inputs = sorted({p for a in prepared.values() for p in source_paths(a)})
    for p in inputs:
        if Path(p).resolve() == final.resolve() or final.resolve() in Path(p).resolve().parents:
            raise ValueError(f"Cannot append the store {str(path)!r} to itself.")
    rows = {a.shape[0] for a in prepared.values()}
    if len(rows) != 1:
        raise ValueError(f"The arrays to append have different numbers of rows: {sorted(rows)}.")
    (n_add,) = rows
    n_old = int(next(iter(nodes.values())).shape[0])
    n_new = n_old + n_add
    stage = staging_path(final)
    fingerprint = _fingerprint(final, n_old, prepared, source)
    if stage.exists():
        mine = (stage / "fingerprint").exists() and (stage / "fingerprint").read_text() == fingerprint
        if resume and not mine:
            raise ValueError(
                f"The staged append {stage} belongs to a different append (other rows, or the store changed); "
                f"it cannot be resumed. Remove it, or append without resume to start again."
            )
        if not mine or not resume:
            remove(stage)
    if n_add == 0:
        return final
    label = (
        source
        or ", ".join(inputs)
        or ("dask array" if all(isinstance(v, da.Array) for v in batches.values()) else "in-memory array")
    )
    record = json_safe(
        {"rows": [n_old, n_new], "time": datetime.datetime.now(datetime.timezone.utc).isoformat(), "source": label}
        | ({"batch": batch} if batch is not None else {})
    )
    try:
        if not stage.exists():
            stage.mkdir()
            (stage / "fingerprint").write_text(fingerprint)
            (stage / "record.json").write_text(json.dumps(record))
        record = json.loads((stage / "record.json").read_text())  # a resumed append keeps its first record
        if not (stage / _MOVING).exists():
            _stage_chunks(final, nodes, prepared, stage, n_old, n_new, also)
            (stage / _MOVING).touch()
        for name in nodes:
            staged = stage / (name or "array")
            if staged.exists():
                drop_unfinished(staged)  # an interrupted run's half-written chunk files
                _move_chunks(staged, _array_dir(final, name))
        for name in nodes:
            _commit_shape(_array_dir(final, name), n_new)
        _record(_array_dir(final, next(iter(nodes))), record)
        if not isinstance(root, zarr.Array):
            _record(final, record)
        remove(stage)
    except BaseException as exc:
        if isinstance(exc, (ValueError, TypeError)) and not (stage / _MOVING).exists():
            remove(stage)  # bad data: resuming would not help, and the store is untouched
        elif stage.exists():
            note = getattr(exc, "add_note", None)
            if note is not None:
                note(f"The append is staged in {stage}: append again with resume=True (--resume) to finish it.")
        raise
    return final


def _stage_chunks(
    final: Path,
    nodes: dict[str, Any],
    prepared: dict[str, da.Array],
    stage: Path,
    n_old: int,
    n_new: int,
    also: dict[str, Any] | None = None,
) -> None:
    """Write the chunks an append touches into staging arrays (resumable block by block)."""
    import zarr

    sources, targets = [], []
    first = None
    for name, node in nodes.items():
        staged = stage / (name or "array")
        if not staged.exists():
            tmp = staged.with_name(staged.name + ".new")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            for meta, text in _grown_metadata(_array_dir(final, name), n_new).items():
                (tmp / meta).write_text(text)
            os.replace(tmp, staged)
        unit = int((getattr(node, "shards", None) or node.chunks)[0])
        first = (n_old // unit) * unit  # the first row of the (partial) chunk the append starts in
        old = da.from_array(node, chunks=(unit,) + node.shape[1:])[first:n_old]
        block = da.concatenate([old, prepared[name]]) if n_old > first else prepared[name]
        sources.append(block.rechunk((unit,) + node.shape[1:]))
        with zarr.config.set({"array.write_empty_chunks": True}):
            targets.append(zarr.open_array(str(staged), mode="r+"))
    done_dir = stage / DONE_DIR
    done_dir.mkdir(exist_ok=True)
    done = {int(f.name) for f in done_dir.iterdir() if f.name.isdigit()}
    compute_also(store_together(sources, targets, done_dir, done, offset=int(first or 0)), also)
