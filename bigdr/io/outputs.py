"""Outputs that cannot destroy data: checks made before any work, and atomic publication.

Every file or store bigdr writes goes through :func:`check_output` before the
first pass over the data and through :func:`publish` at the end:

* an existing path is replaced only with ``overwrite`` *and* only when bigdr
  wrote it (a zarr store carrying ``bigdr_version`` in its attributes, a model
  carrying the ``bigdr-model`` marker, a PNG file where a PNG is asked for);
  anything else -- a directory of photos, the user's own zarr store -- is refused;
* an output that is an input, lies inside one or contains one is refused;
* the parent directory must exist and be writable, which is tested by
  creating and removing a marker file (permissions alone say nothing on a
  read-only mount or for root);
* the finished output is written under a hidden sibling name and swapped into
  place by renames, so a reader never sees a half-written result and no
  temporary copy stays behind.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

#: What an output is: a zarr store of arrays, a saved model, a PNG figure, AnnData, a JSON report.
KINDS = ("store", "model", "png", "anndata", "report")
#: The key a JSON report bigdr writes carries (so that ``overwrite`` may replace it).
REPORT_MARKER = "bigdr-report"

#: Suffixes of single files that a store or model (a directory) must not be named with.
_FILE_SUFFIXES = {".npy", ".npz", ".h5", ".hdf5", ".hdf", ".png", ".jpg", ".jpeg", ".pdf", ".svg", ".csv", ".txt"}
_FILE_SUFFIXES |= {".json", ".parquet", ".tif", ".tiff", ".pkl", ".pickle"}
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def temporary_sibling(path: Path) -> Path:
    """A hidden, unused name beside ``path`` (the same file system, so renames are atomic)."""
    return path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:12]}")


def describe_os_error(exc: OSError, path: str | os.PathLike | None = None) -> str:
    """One line naming the path and the cause of an OS error (read-only, permission, disk full, ...)."""
    where = path if path is not None else (exc.filename or "")
    cause = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        cause += " (free some space or write elsewhere)"
    elif exc.errno in (errno.EMFILE, errno.ENFILE):
        cause += " (raise the limit with 'ulimit -n' or use fewer, larger chunks)"
    return f"cannot write {where}: {cause}" if where else cause


def remove(path: Path) -> None:
    """Remove a file or a directory tree that bigdr created; missing is fine."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def _read_zarr_attrs(path: Path) -> dict | None:
    """The attributes of a zarr v3 or v2 node at ``path``, read from its JSON (no zarr import), or None."""
    try:
        if (path / "zarr.json").is_file():
            return dict(json.loads((path / "zarr.json").read_text()).get("attributes", {}))
        if (path / ".zattrs").is_file():
            return dict(json.loads((path / ".zattrs").read_text()))
        if (path / ".zgroup").is_file() or (path / ".zarray").is_file():
            return {}
    except (OSError, ValueError):
        return None
    return None


def written_by_bigdr(path: Path, kind: str) -> bool:
    """Whether the existing ``path`` is an output of ``kind`` that bigdr wrote (and may replace)."""
    if kind == "png":
        try:
            with open(path, "rb") as fh:
                return path.is_file() and fh.read(8) == _PNG_MAGIC
        except OSError:
            return False
    if kind == "report":
        try:
            import json

            with open(path) as fh:
                return path.is_file() and REPORT_MARKER in json.load(fh)
        except (OSError, ValueError):
            return False
    if kind == "anndata" and path.is_file():
        try:
            import h5py

            with h5py.File(path, "r") as f:
                return bool(f.attrs.get("bigdr")) and f.attrs.get("encoding-type") == "anndata"
        except OSError:
            return False
    attrs = _read_zarr_attrs(path) if path.is_dir() else None
    if attrs is None:
        return False
    if kind == "anndata":
        return bool(attrs.get("bigdr")) and attrs.get("encoding-type") == "anndata"
    if kind == "model":
        return attrs.get("format") == "bigdr-model"
    return "bigdr_version" in attrs and attrs.get("format") != "bigdr-model"


def _probe(directory: Path, path: Path) -> None:
    """Create and remove a marker in ``directory``: the only reliable test that it takes writes."""
    marker = directory / f".bigdr-probe-{uuid.uuid4().hex[:12]}"
    try:
        marker.touch(exist_ok=False)
    except OSError as exc:
        raise OSError(exc.errno, describe_os_error(exc, path)) from None
    marker.unlink()


def _overlap(a: Path, b: Path) -> str | None:
    if a == b:
        return "is"
    if b in a.parents:
        return "is inside"
    if a in b.parents:
        return "contains"
    return None


def _real(path: str | os.PathLike) -> Path:
    return Path(os.path.realpath(os.path.abspath(os.fspath(path))))


def check_output(
    path: str | os.PathLike,
    kind: str = "store",
    *,
    overwrite: bool = False,
    inputs: Iterable[str | os.PathLike] = (),
    others: Iterable[str | os.PathLike] = (),
) -> Path:
    """Check, before any work, that ``path`` can be written as an output of ``kind``.

    Parameters
    ----------
    path : str or Path
        The output.
    kind : {"store", "model", "png", "anndata", "report"}
        What will be written there; decides which existing object may be replaced.
    overwrite : bool
        Replace an existing output that bigdr wrote.
    inputs : paths
        Inputs of the same run: the output may not be one, lie inside one or contain one.
    others : paths
        Other outputs of the same run: the output must be distinct from them and not nested.

    Returns
    -------
    pathlib.Path
        ``path`` as a Path.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is false.
    ValueError
        A URL; an unsuitable name; an existing object bigdr did not write; an
        overlap with an input or another output.
    OSError
        The parent directory is missing or does not take writes.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}.")
    if "://" in str(path):
        raise ValueError(
            f"Writing to URLs ({path!r}) is not supported: atomic publication needs a "
            f"local or mounted file system. Write locally and copy the finished store."
        )
    final = Path(path)
    suffix = final.suffix.lower()
    what = {"store": "zarr store", "model": "saved model", "png": "PNG figure", "anndata": "AnnData file",
            "report": "JSON report"}[kind]  # fmt: skip
    article = "an" if what[0] in "AEIOU" else "a"
    if kind == "png" and suffix != ".png":
        raise ValueError(f"{final} is to be a PNG figure; give it a name ending in .png.")
    if kind == "report" and suffix != ".json":
        raise ValueError(f"{final} is to be a JSON report; give it a name ending in .json.")
    if kind == "anndata" and suffix in _FILE_SUFFIXES:
        raise ValueError(f"{final} is to be AnnData; name it .h5ad (a file) or .zarr (a store).")
    if kind in ("store", "model") and suffix in _FILE_SUFFIXES:
        raise ValueError(
            f"{final} ends in {suffix}, but a {what} is a directory; give it a name ending in .zarr (or no extension)."
        )
    real = _real(final)
    for source in inputs:
        relation = _overlap(real, _real(source))
        if relation:
            raise ValueError(
                f"The output {final} {relation} the input {source}; writing it would destroy the input. "
                f"Choose an output path outside the input."
            )
    for other in others:
        relation = _overlap(real, _real(other))
        if relation:
            raise ValueError(
                f"The outputs {final} and {other} overlap ({final} {relation} {other}); give each its own path."
            )
    if final.exists() or final.is_symlink():
        if not overwrite:
            raise FileExistsError(
                f"{final} already exists; pass overwrite=True (command line: --overwrite) to replace it."
            )
        if not written_by_bigdr(final, kind):
            raise ValueError(
                f"{final} exists and is not {article} {what} written by bigdr, so overwrite=True (command line: "
                f"--overwrite) will not replace it. Choose another path, or move it away yourself."
            )
    parent = real.parent
    if not parent.exists():
        raise FileNotFoundError(f"Directory {final.parent} does not exist; create it first.")
    if not parent.is_dir():
        raise NotADirectoryError(f"cannot write {final}: {final.parent} is not a directory.")
    _probe(parent, final)
    return final


def check_growable(path: str | os.PathLike, inputs: Sequence[str | os.PathLike] = ()) -> Path:
    """An existing store to be grown in place (appended to): bigdr's own, and no input's.

    Appending changes a store, so it is allowed only on stores bigdr wrote
    (the same rule as replacing one) that do not overlap an input.
    """
    final = _real(path)
    if not final.exists():
        raise FileNotFoundError(f"No store at {str(path)!r} to append to; write it first.")
    if not written_by_bigdr(final, "store"):
        raise ValueError(f"{str(path)!r} was not written by bigdr; bigdr appends only to stores it wrote.")
    for other in inputs:
        how = _overlap(final, _real(other))
        if how:
            raise ValueError(f"The store {str(path)!r} {how} the input {str(other)!r}; append to another store.")
    return final


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def publish(tmp: Path, final: Path, overwrite: bool) -> None:
    """Move a complete output from ``tmp`` to ``final`` by renames only.

    An existing ``final`` (already checked by :func:`check_output`) is swapped
    with ``tmp`` atomically where the system can, else renamed aside first;
    either way the old object is then removed and nothing else stays behind.
    """
    if not (final.exists() or final.is_symlink()):
        os.rename(tmp, final)
        return
    if not overwrite:
        raise FileExistsError(f"{final} already exists; pass overwrite=True (command line: --overwrite) to replace it.")
    if _exchange(tmp, final):
        remove(tmp)  # now holds the old object
        return
    trash = temporary_sibling(final)
    os.rename(final, trash)
    try:
        os.rename(tmp, final)
    except OSError:
        os.rename(trash, final)
        raise
    remove(trash)
