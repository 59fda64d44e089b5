"""Growing stores (bigdr.io.append): atomic, resumable appends to zarr stores of format 2 and 3."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
import zarr

import bigdr
import bigdr.datasets
from bigdr.io import DONE_DIR, staging_path


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def rows(n: int, p: int = 3, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, p))


def make_store(path: Path, X: np.ndarray, zarr_format: int, chunk: int = 300) -> Path:
    z = zarr.create_array(str(path), shape=X.shape, chunks=(chunk, X.shape[1]), dtype=X.dtype, zarr_format=zarr_format)
    z[:] = X
    return path


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("n_old", [900, 1000])  # a full last chunk, and a partial one
def test_append_grows_the_store_and_records_it(tmp_path, zarr_format, n_old):
    X = rows(n_old + 777)
    store = make_store(tmp_path / "s.zarr", X[:n_old], zarr_format)
    bigdr.append_zarr(da.from_array(X[n_old:], chunks=100), store)
    bigdr.append_zarr(X[n_old + 700 :][:0], store)  # nothing to add: a no-op
    z = zarr.open_array(str(store), mode="r")
    assert z.shape == X.shape and z.metadata.zarr_format == zarr_format
    np.testing.assert_array_equal(z[:], X)
    (record,) = z.attrs["bigdr_appends"]
    assert record["rows"] == [n_old, n_old + 777] and record["source"] == "dask array" and "time" in record
    assert not staging_path(store).exists()
    assert bigdr.as_array(str(store)).shape == X.shape  # complete: every chunk present


def test_write_zarr_append_and_the_generated_group(tmp_path):
    g = tmp_path / "g.zarr"
    bigdr.datasets.generate("swiss-roll", g, 1000, chunk_rows=256)
    more = tmp_path / "more.zarr"
    bigdr.datasets.generate("swiss-roll", more, 500, chunk_rows=128, seed=5)
    src = zarr.open_group(str(more), mode="r")
    with pytest.raises(ValueError, match="coords.*misalign"):
        bigdr.append_zarr(src["X"][:], g)
    bigdr.write_zarr({"X": src["X"][:], "coords": src["coords"][:]}, g, append=True)
    root = zarr.open_group(str(g), mode="r")
    assert root["X"].shape == (1500, 3) and root["coords"].shape[0] == 1500
    np.testing.assert_array_equal(root["X"][1000:], src["X"][:])
    np.testing.assert_array_equal(root["coords"][1000:], src["coords"][:])
    assert root.attrs["bigdr_appends"][0]["rows"] == [1000, 1500]
    fresh = tmp_path / "fresh.zarr"  # append=True on a missing path writes it
    bigdr.write_zarr(rows(10), fresh, append=True)
    assert zarr.open_array(str(fresh)).shape == (10, 3)


@pytest.mark.parametrize(
    "batch, message",
    [
        (rows(50, p=4), "50|4 columns"),
        (rows(50).astype(np.float32), "float32"),
        (np.where(np.arange(150).reshape(50, 3) == 100, np.nan, rows(50)), "NaN|finite"),
    ],
    ids=["width", "dtype", "nan"],
)
def test_a_bad_batch_is_refused_and_changes_nothing(tmp_path, batch, message):
    store = make_store(tmp_path / "s.zarr", rows(1000), 3)
    before = digest(store)
    with pytest.raises((ValueError, TypeError), match=message):
        bigdr.append_zarr(batch, store)
    assert digest(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]


def test_appending_a_store_to_itself_is_refused(tmp_path):
    store = make_store(tmp_path / "s.zarr", rows(1000), 3)
    with pytest.raises(ValueError, match="itself"):
        bigdr.append_zarr(str(store), store)


def test_a_concurrent_reader_sees_the_old_rows_or_the_new_never_a_partial_append(tmp_path):
    X = rows(6000)
    store = make_store(tmp_path / "s.zarr", X[:1000], 3, chunk=300)
    seen, errors, stop = set(), [], threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                z = zarr.open_array(str(store), mode="r")
                data = z[:]
                if not np.array_equal(data, X[: len(data)]) or len(data) % 1000:
                    errors.append(len(data))
                seen.add(len(data))
            except Exception as exc:  # a reader must never fail either
                errors.append(repr(exc))

    t = threading.Thread(target=reader)
    t.start()
    for start in range(1000, 6000, 1000):
        bigdr.append_zarr(X[start : start + 1000], store)
        time.sleep(0.02)
    stop.set()
    t.join()
    assert not errors and len(seen) >= 2


def test_sigkill_mid_append_then_resume_gives_the_uninterrupted_store(tmp_path):
    X = rows(1000 + 40 * 50)
    killed = make_store(tmp_path / "killed.zarr", X[:1000], 3, chunk=50)
    whole = tmp_path / "whole.zarr"
    shutil.copytree(killed, whole)
    child = textwrap.dedent(
        f"""
        import time, numpy as np, dask, dask.array as da, bigdr
        X = np.random.default_rng(0).normal(size=({len(X)}, 3))[1000:]
        slow = da.from_array(X, chunks=50).map_blocks(lambda b: (time.sleep(0.1), b)[1], dtype=X.dtype)
        with dask.config.set(scheduler="sync"):
            bigdr.append_zarr(slow, {str(killed)!r})
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", child])
    done = staging_path(killed) / DONE_DIR
    deadline = time.time() + 120
    while time.time() < deadline and not (done.exists() and len(list(done.iterdir())) >= 5):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    old = zarr.open_array(str(killed), mode="r")
    assert old.shape == (1000, 3)  # the old store is valid
    np.testing.assert_array_equal(old[:], X[:1000])
    with pytest.raises(ValueError, match="different append"):
        bigdr.append_zarr(X[1000:] + 1, killed, resume=True)  # other rows: not this staged append
    bigdr.append_zarr(da.from_array(X[1000:], chunks=50), killed, resume=True)
    bigdr.append_zarr(da.from_array(X[1000:], chunks=50), whole)
    np.testing.assert_array_equal(zarr.open_array(str(killed))[:], X)
    assert not staging_path(killed).exists()
    chunks = lambda p: {f.relative_to(p): f.read_bytes() for f in p.rglob("*") if f.is_file() and f.name != "zarr.json"}  # noqa: E731
    assert chunks(killed) == chunks(whole)


def _interrupt_at(X: np.ndarray, block: int) -> da.Array:
    """Rows in blocks of 50 whose block number ``block`` raises KeyboardInterrupt when computed."""

    def rows_of(b: np.ndarray, block_info=None) -> np.ndarray:
        if block_info is not None and block_info[0]["chunk-location"][0] == block:
            raise KeyboardInterrupt
        return b

    return da.from_array(X, chunks=50).map_blocks(rows_of, dtype=X.dtype)


@pytest.mark.parametrize("writer", ["append", "write"])
def test_a_chunk_file_left_half_written_by_a_killed_run_does_not_reach_the_store(tmp_path, writer):
    # zarr writes each chunk to "<key>.<random>.partial" and renames it: a kill mid-write leaves that file.
    X = rows(1000 + 20 * 50)
    out, clean = tmp_path / "out.zarr", tmp_path / "clean.zarr"
    if writer == "append":
        make_store(out, X[:1000], 3, chunk=50)
        make_store(clean, X[:1000], 3, chunk=50)
        with dask.config.set(scheduler="sync"), pytest.raises(KeyboardInterrupt):
            bigdr.append_zarr(_interrupt_at(X[1000:], 8), out, source="batch 2")  # named: no rows read to identify it
        staged = staging_path(out) / "array"
        bigdr.append_zarr(X[1000:], clean)
    else:
        with dask.config.set(scheduler="sync"), pytest.raises(KeyboardInterrupt):
            bigdr.write_zarr(_interrupt_at(X, 8), out)
        staged = bigdr.io.partial_path(out)
        bigdr.write_zarr(da.from_array(X, chunks=50), clean)
    leftover = staged / "c" / "19" / "0.0123456789abcdef.partial"
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_bytes(b"half a chunk")
    if writer == "append":
        bigdr.append_zarr(da.from_array(X[1000:], chunks=50), out, resume=True, source="batch 2")
    else:
        bigdr.write_zarr(da.from_array(X, chunks=50), out, resume=True)
    np.testing.assert_array_equal(zarr.open_array(str(out))[:], X)
    files = lambda p: {f.relative_to(p) for f in p.rglob("*") if f.is_file() and f.name != "zarr.json"}  # noqa: E731
    assert files(out) == files(clean) and not list(out.rglob("*.partial"))
