"""Whole chunks read straight from a local zarr store's files (bigdr.io.chunks) equal zarr's own reads."""

import os

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import bigdr
from bigdr.io import chunks as chunks_module
from bigdr.io.chunks import ChunkFiles, zstd_content_size
from bigdr.io.read import _ZarrReader


def _reader(X):
    (reader,) = [v for v in X.__dask_graph__().values() if isinstance(v, _ZarrReader)]
    return reader


def _store(path, data, chunks, **kwargs):
    z = zarr.create_array(str(path), shape=data.shape, chunks=chunks, dtype=data.dtype, **kwargs)
    z[...] = data
    return z


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(2, 120),
    p=st.integers(1, 9),
    row_chunk=st.integers(1, 40),
    col_chunk=st.integers(1, 9),
    compressed=st.booleans(),
    chunk_bytes=st.sampled_from([64, 512, 4096, 1 << 20]),
    larger_than_memory=st.booleans(),
)
def test_reads_equal_zarrs_for_any_chunking(
    tmp_path_factory, n, p, row_chunk, col_chunk, compressed, chunk_bytes, larger_than_memory
):
    """Any shape, storage chunks and dask blocks, read through the cache or directly (a store larger than
    memory, where chunks aligned to 4 KiB are read with O_DIRECT): the blocks read are zarr's values."""
    from unittest import mock

    import dask

    path = tmp_path_factory.mktemp("z") / "x.zarr"
    width = 1024 if n % 3 == 0 else p  # 1024 float32 columns: a chunk of whole 4 KiB pages, read directly
    data = np.random.default_rng(n * 31 + p).standard_normal((n, width)).astype(np.float32)
    _store(
        path,
        data,
        (row_chunk, width if width == 1024 else min(col_chunk, p)),
        compressors=None if not compressed else "auto",
    )
    memory = 0 if larger_than_memory else 1 << 40
    with (
        dask.config.set({"bigdr.chunk-bytes": chunk_bytes}),
        mock.patch.object(chunks_module, "available_memory", lambda: memory),
    ):
        X = bigdr.as_array(str(path), check_finite=False)
    assert _reader(X).files is not None and _reader(X).files.direct == larger_than_memory
    np.testing.assert_array_equal(X.compute(scheduler="sync"), data)


def test_blocks_of_whole_chunks_are_read_without_a_merge_and_from_the_files(tmp_path, monkeypatch):
    data = np.random.default_rng(0).standard_normal((1000, 6)).astype(np.float32)
    _store(tmp_path / "x.zarr", data, (100, 6))
    import dask

    with dask.config.set({"bigdr.chunk-bytes": 300 * 6 * 4}):
        X = bigdr.as_array(str(tmp_path / "x.zarr"), check_finite=False)
    assert X.chunks[0] == (300, 300, 300, 100)
    assert len(X.__dask_graph__().layers) == 2  # the reader's array and its blocks: no rechunk layer
    calls = []
    read = ChunkFiles._read
    monkeypatch.setattr(ChunkFiles, "_read", lambda self, c, out: calls.append(c) or read(self, c, out))
    np.testing.assert_array_equal(X.compute(scheduler="sync"), data)
    assert sorted(calls) == [(i, 0) for i in range(10)]


def test_other_layouts_are_read_by_zarr(tmp_path):
    from zarr.codecs import BytesCodec

    data = np.arange(60, dtype="<f8").reshape(20, 3)
    _store(tmp_path / "be.zarr", data, (5, 3), serializer=BytesCodec(endian="big"))
    _store(tmp_path / "sh.zarr", data, (5, 3), shards=(10, 3))
    _store(tmp_path / "v2.zarr", data, (5, 3), zarr_format=2)
    _store(tmp_path / "gz.zarr", data, (5, 3), compressors=zarr.codecs.GzipCodec())
    for name in ("be.zarr", "sh.zarr", "v2.zarr", "gz.zarr"):
        X = bigdr.as_array(str(tmp_path / name))
        assert _reader(X).files is None, name
        np.testing.assert_array_equal(X.compute(), data)


def test_a_frame_that_declares_another_size_is_left_to_zarr(tmp_path):
    """A larger destination would be filled only in part: such a chunk is not decoded here."""
    data = np.random.default_rng(1).standard_normal((40, 4)).astype(np.float32)
    z = _store(tmp_path / "x.zarr", data, (10, 4))
    files = ChunkFiles.of(z, str(tmp_path / "x.zarr"))
    assert files is not None
    key = os.path.join(str(tmp_path / "x.zarr"), z.metadata.encode_chunk_key((1, 0)))
    with open(key, "wb") as f:
        f.write(numcodecs.Zstd().encode(np.zeros(20, np.float32)))
    assert files.get((slice(10, 20), slice(0, 4))) is None
    with pytest.raises(ValueError, match="Cannot read chunk c/1/0"):
        bigdr.as_array(str(tmp_path / "x.zarr")).compute()


def test_absent_chunks_allowed_read_as_the_fill_value(tmp_path):
    data = np.ones((30, 2), np.float32)
    z = _store(tmp_path / "x.zarr", data, (10, 2), fill_value=0.0)
    os.remove(os.path.join(str(tmp_path / "x.zarr"), z.metadata.encode_chunk_key((1, 0))))
    with pytest.warns(UserWarning, match="absent"):
        X = bigdr.as_array(str(tmp_path / "x.zarr"), allow_missing_chunks=True)
    expected = data.copy()
    expected[10:20] = 0
    np.testing.assert_array_equal(X.compute(), expected)


def test_zstd_content_size_reads_every_header_width():
    for n in (0, 1, 255, 256, 300, 65_791, 70_000, 5_000_000):
        frame = np.frombuffer(numcodecs.Zstd().encode(np.ones(n, np.uint8)), np.uint8)
        assert zstd_content_size(frame) == n
    assert zstd_content_size(np.zeros(10, np.uint8)) is None


def _watch_reads(monkeypatch):
    """Record each chunk file's opening (direct or not) and each dropping of pages; the files are still read."""
    opened, dropped, real_open = [], [], os.open

    def watched(path, flags, *args):
        if f"{os.sep}c{os.sep}" in str(path):  # a chunk file (other code may open files too)
            opened.append(bool(flags & getattr(os, "O_DIRECT", 0)))
        return real_open(path, flags, *args)

    monkeypatch.setattr(chunks_module.os, "open", watched)
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, a, b, advice: dropped.append(advice))
    return opened, dropped


@pytest.mark.skipif(not hasattr(os, "O_DIRECT"), reason="no O_DIRECT on this system")
@pytest.mark.parametrize("compressors", [None, "auto"])
def test_a_store_larger_than_memory_is_read_directly_where_it_can_be(tmp_path, monkeypatch, compressors):
    """Larger than memory: chunks of whole 4 KiB pages (and any zstd chunk) are read with O_DIRECT, bypassing
    the page cache; other raw chunks go through the cache and drop their pages once read."""
    aligned = np.random.default_rng(2).standard_normal((50, 1024)).astype(np.float32)  # 40 KiB a chunk
    ragged = aligned[:, :3].copy()  # 120 bytes a chunk: not whole pages
    for name, data in (("aligned", aligned), ("ragged", ragged)):
        _store(tmp_path / f"{name}.zarr", data, (10, data.shape[1]), compressors=compressors)
    assert not _reader(bigdr.as_array(str(tmp_path / "aligned.zarr"))).files.streamed
    monkeypatch.setattr(chunks_module, "available_memory", lambda: 100)
    opened, dropped = _watch_reads(monkeypatch)
    X = bigdr.as_array(str(tmp_path / "aligned.zarr"))
    assert _reader(X).files.streamed and _reader(X).files.direct
    np.testing.assert_array_equal(X.compute(scheduler="sync"), aligned)
    assert opened == [True] * 5 and dropped == []
    opened.clear()
    Y = bigdr.as_array(str(tmp_path / "ragged.zarr"))
    np.testing.assert_array_equal(Y.compute(scheduler="sync"), ragged)
    raw = compressors is None
    assert opened == [not raw] * 5 and dropped == ([os.POSIX_FADV_DONTNEED] * 5 if raw else [])


@pytest.mark.skipif(not hasattr(os, "O_DIRECT"), reason="no O_DIRECT on this system")
def test_a_file_system_without_direct_reads_is_read_through_the_cache(tmp_path, monkeypatch):
    """Opening with O_DIRECT fails with EINVAL on file systems without it: the store is read through the cache."""
    import errno

    data = np.random.default_rng(3).standard_normal((50, 1024)).astype(np.float32)
    _store(tmp_path / "x.zarr", data, (10, 1024), compressors=None)
    monkeypatch.setattr(chunks_module, "available_memory", lambda: 100)
    opened, dropped = _watch_reads(monkeypatch)
    real_open = chunks_module.os.open

    def refusing(path, flags, *args):
        if flags & os.O_DIRECT:
            opened.append(True)
            raise OSError(errno.EINVAL, "Invalid argument", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(chunks_module.os, "open", refusing)
    X = bigdr.as_array(str(tmp_path / "x.zarr"))
    np.testing.assert_array_equal(X.compute(scheduler="sync"), data)
    assert not _reader(X).files.direct  # refused once, then not asked again
    assert opened == [True] + [False] * 5 and dropped == [os.POSIX_FADV_DONTNEED] * 5


@pytest.mark.parametrize("group", [False, True])
def test_write_zarr_stores_raw_bytes_when_asked_and_they_are_read_from_the_files(tmp_path, group):
    """``compressors=None``: no codec beyond the bytes, the file of a chunk is the chunk, and reads equal the data."""
    data = np.random.default_rng(1).standard_normal((500, 7)).astype(np.float32)
    out = tmp_path / "raw.zarr"
    bigdr.write_zarr({"X": data, "Y": data[:, :2]} if group else data, out, chunk_rows=128, compressors=None)
    z = zarr.open(str(out), mode="r")
    arr = z["X"] if group else z
    assert [type(c).__name__ for c in arr.metadata.codecs] == ["BytesCodec"]
    assert os.path.getsize(out / ("X" if group else "") / "c" / "0" / "0") == 128 * 7 * 4
    X = bigdr.as_array(str(out), check_finite=False)
    files = _reader(X).files
    assert files is not None and files.decode is None
    np.testing.assert_array_equal(X.compute(scheduler="sync"), data)
    zstd = tmp_path / "zstd.zarr"
    bigdr.write_zarr(data, zstd, chunk_rows=128)
    assert [type(c).__name__ for c in zarr.open(str(zstd), mode="r").metadata.codecs] == ["BytesCodec", "ZstdCodec"]


def test_read_ahead_follows_a_run_up_or_down_and_a_copy_starts_afresh(tmp_path, monkeypatch):
    """A store larger than memory: once requests run up (or down), the next boxes are read in the
    background; a request elsewhere drops them; a copy sent to another process starts with none."""
    import pickle

    data = np.random.default_rng(4).standard_normal((80, 1024)).astype(np.float32)
    z = _store(tmp_path / "x.zarr", data, (10, 1024), compressors=None)
    monkeypatch.setattr(chunks_module, "available_memory", lambda: 0)
    files = ChunkFiles.of(z, str(tmp_path / "x.zarr"))
    assert files.ahead is not None

    def box(i):
        return (slice(10 * i, 10 * i + 10), slice(0, 1024))

    def ahead():
        return sorted(r[0][0] // 10 for r in files.ahead.pending)

    np.testing.assert_array_equal(files.get(box(0)), data[:10])
    assert ahead() == []  # one request is no run
    files.get(box(1))
    assert ahead() == [2, 3]  # a run up: the next two boxes
    np.testing.assert_array_equal(files.get(box(2)), data[20:30])  # taken from what was read ahead
    assert ahead() == [3, 4]
    files.get(box(7))  # elsewhere: a new run, nothing read ahead for it yet
    assert ahead() == []
    np.testing.assert_array_equal(files.get(box(6)), data[60:70])
    assert ahead() == [4, 5]  # a run down
    np.testing.assert_array_equal(files.get(box(5)), data[50:60])
    copy = pickle.loads(pickle.dumps(files))
    assert copy.ahead.pending == {} and copy.ahead is not files.ahead
    np.testing.assert_array_equal(copy.get(box(3)), data[30:40])
    # A chunk file damaged: the error of a box read ahead reaches the request for it.
    with open(tmp_path / "x.zarr" / "c" / "3" / "0", "r+b") as f:
        f.truncate(100)
    files = ChunkFiles.of(z, str(tmp_path / "x.zarr"))
    files.get(box(1))
    files.get(box(2))
    assert ahead() == [3, 4]
    with pytest.raises(ValueError, match="holds fewer bytes"):
        files.get(box(3))


def test_the_memory_estimate_counts_the_blocks_read_ahead(tmp_path, monkeypatch):
    data = np.random.default_rng(5).standard_normal((400, 1024)).astype(np.float32)
    _store(tmp_path / "x.zarr", data, (100, 1024), compressors=None)
    assert "read ahead" not in bigdr.PCA(2).estimate_memory(str(tmp_path / "x.zarr")).parts
    monkeypatch.setattr(chunks_module, "available_memory", lambda: 0)
    X = bigdr.as_array(str(tmp_path / "x.zarr"))
    block = max(X.chunks[0]) * 1024 * 4
    for model in (bigdr.PCA(2), bigdr.SparseRandomProjection(8, random_state=0)):
        part = model.estimate_memory(X).parts["read ahead"]
        assert part.bytes == chunks_module.READ_AHEAD * block
