"""Whole chunks of a local zarr store read straight from their files.

zarr's read of one chunk allocates three buffers of the chunk's size (the
file's bytes, the decoded bytes, the array they are copied into); each is
fresh memory that the kernel must fault in and zero. On a 10M x 768 float32
store (16,384-row chunks, zstd) that page-fault work was most of a read
pass's system time. Here the file is read into a numpy buffer and decoded
straight into the block returned (one-off, 3M rows, cache dropped: 13.3 s
against 25.3 s, 72 thousand page faults against 4.5 million).

A store larger than the memory available cannot stay in the page cache from
one pass to the next. There each file is read with ``O_DIRECT`` where the
system allows it: the disk writes straight into the block returned, with no
copy through the page cache (one-off, 300 chunks of the 10M x 768 raw
store, 14.1 GiB, cache dropped, 2 threads: 8.5-8.8 s and 2.6-2.8 s of
processor time against 9.2-11.2 s and 6.0-6.4 s read through the cache).
Otherwise each file's pages are dropped once read (``POSIX_FADV_DONTNEED``),
so the kernel need not reclaim them while the read waits (one-off, the
whole 10M x 768 store, 26.5 GiB: a pass in 44 s against 57 s, 30 s of
system time against 67 s). There too, a pass that asks for the row blocks
in order, up or down, has the next ones read in a thread of its own
(:class:`ReadAhead`), so that the disk works while the pass's threads
compute; a thread that reads and then computes leaves the disk idle while
it computes (one-off, the raw store, PCA(50): 29.5-30.9 s against
41.9-42.9 s, a 2-thread pass waiting 31 s on reads before and 8 s after).
Compressed chunks are decoded by the thread that asks for them, not by the
thread that read them: one thread decoding every block made a plain pass
over the zstd store take 43-45 s; decoded by the pass's threads, 20-21 s.

Only the layout bigdr writes, and any store like it, takes this path: zarr
format 3, no sharding or transposition, a ``bytes`` codec in the machine's
byte order and at most one ``zstd`` compressor, with a read that covers a
box of whole chunks (:func:`bigdr.as_array` reads in blocks of whole
chunks). Anything else, and any chunk file that is absent, is read by zarr as
before.
"""

from __future__ import annotations

import collections
import itertools
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from ..runtime.memory import available_memory


def zstd_content_size(frame: np.ndarray) -> int | None:
    """The decompressed size a zstd frame's header declares, or None when it declares none (RFC 8878, 3.1.1)."""
    if frame.size < 6 or bytes(frame[:4]) != b"\x28\xb5\x2f\xfd":
        return None
    descriptor = int(frame[4])
    single_segment = bool(descriptor & 0x20)
    pos = 5 + (not single_segment) + (0, 1, 2, 4)[descriptor & 3]  # window descriptor, dictionary id
    width = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
    if width == 0 or frame.size < pos + width:
        return None
    size = int.from_bytes(bytes(frame[pos : pos + width]), "little")
    return size + 256 if width == 2 else size


#: ``O_DIRECT`` needs the buffer's address, the file offset and the length in
#: multiples of the device's logical block size; 4 KiB covers the common ones.
DIRECT_ALIGN = 4096


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialised C-ordered array whose data start on a :data:`DIRECT_ALIGN` boundary."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    buf = np.empty(nbytes + DIRECT_ALIGN, dtype=np.uint8)
    start = -buf.ctypes.data % DIRECT_ALIGN
    return buf[start : start + nbytes].view(dtype).reshape(shape)


def _read_fd(fd: int, buf: np.ndarray, direct: bool) -> int:
    """Fill ``buf`` from descriptor ``fd`` until it is full or the file ends; the bytes read.

    One read returns at most about 2 GiB. A direct read shorter than asked and not a whole number of
    blocks is the file's end (another read there would be misaligned).
    """
    view, done = buf.reshape(-1).view(np.uint8).data, 0
    while done < buf.nbytes:
        got = os.readv(fd, [view[done:]])
        done += got
        if not got or (direct and done % DIRECT_ALIGN):
            break
    return done


#: Boxes of rows read ahead of a sequential reader of a store larger than
#: memory, so that the disk works while the threads compute (each box is a
#: dask block held in memory until it is asked for).
READ_AHEAD = 2

Ranges = tuple[tuple[int, int], ...]


class ReadAhead:
    """Reads the next boxes of rows in a thread of its own while requests run in order, up or down.

    A request that starts where a recent one stopped runs up; one that stops
    where a recent one started runs down (dask's order takes the blocks of a
    tree reduction mostly downwards, a ``map_blocks`` pass upwards). Then the
    boxes beyond the run's furthest one asked for or under way, not yet read in
    this pass, are read in the background, at most :data:`READ_AHEAD` at once,
    with the same trailing ranges; a request for a box under way waits for it.
    Only files are read there: the thread that asks for a box decodes it, so
    a compressed store's decoding stays spread over the pass's threads.
    Any other request starts a new run and drops what was read ahead. A copy
    (a task sent to another process) starts afresh.
    """

    def __init__(self, read: Callable[[Ranges], Any], rows: int):
        self.read, self.rows = read, rows
        self._start()

    def _start(self) -> None:
        self.lock = threading.Lock()
        self.pending: dict[Ranges, Future] = {}
        self.seen: set[int] = set()  # first rows of the boxes asked for in this pass
        self.firsts: collections.deque[int] = collections.deque(maxlen=8)  # of recent requests
        self.stops: collections.deque[int] = collections.deque(maxlen=8)
        self.size = 0  # rows of the largest box asked for: the blocks' size but for the last
        self.low = self.high = 0  # the run's rows asked for or under way
        self.pool: ThreadPoolExecutor | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"read": self.read, "rows": self.rows}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.read, self.rows = state["read"], state["rows"]
        self._start()

    def take(self, ranges: Ranges) -> Future | None:
        """Note a request for ``ranges`` and read ahead of it; the read of ``ranges`` under way, or None (read it
        now)."""
        (first, stop), rest = ranges[0], ranges[1:]
        with self.lock:
            ahead = self.pending.pop(ranges, None)
            if first in self.seen:  # another pass over the rows
                self.seen.clear()
            self.seen.add(first)
            self.size = max(self.size, stop - first)
            step = 1 if first in self.stops else -1 if stop in self.firsts else 0
            self.firsts.append(first)
            self.stops.append(stop)
            if step == 0 and ahead is None:  # a new run: what was read ahead for another is not wanted
                for future in self.pending.values():
                    future.cancel()
                self.pending.clear()
                self.low, self.high = first, stop
            else:
                self.low, self.high = min(self.low, first), max(self.high, stop)
            if step:
                self._schedule(step, rest)
        return ahead

    def _schedule(self, step: int, rest: Ranges) -> None:
        while len(self.pending) < READ_AHEAD:
            a, b = (
                (self.high, min(self.high + self.size, self.rows))
                if step > 0
                else (max(self.low - self.size, 0), self.low)
            )
            if a >= b or a in self.seen:
                return
            box = ((a, b),) + rest
            if self.pool is None:
                self.pool = ThreadPoolExecutor(1, thread_name_prefix="bigdr-read-ahead")
            self.pending[box] = self.pool.submit(self.read, box)
            self.low, self.high = min(self.low, a), max(self.high, b)


class ChunkFiles:
    """Reads whole chunks of one local zarr array from their files (see the module's text)."""

    def __init__(self, location: str, metadata: Any, decode: Any, dtype: np.dtype, shape: tuple[int, ...],
                 chunks: tuple[int, ...]):  # fmt: skip
        self.location, self.metadata, self.decode = location, metadata, decode
        self.dtype, self.shape, self.chunks = dtype, shape, chunks
        self.streamed = False
        self.direct = False  # read with O_DIRECT (streamed stores, while the file system allows it)
        self.ahead: ReadAhead | None = None  # streamed stores: boxes read ahead of a sequential reader

    @classmethod
    def of(cls, array: Any, location: str | None) -> ChunkFiles | None:
        """The reader for ``array`` when its layout allows one, else None."""
        if location is None or getattr(array.metadata, "zarr_format", None) != 3:
            return None
        codecs = list(array.metadata.codecs)
        if not codecs or type(codecs[0]).__name__ != "BytesCodec":
            return None
        dtype = np.dtype(array.dtype)
        endian = getattr(codecs[0].endian, "value", codecs[0].endian)
        if dtype.itemsize > 1 and endian != sys.byteorder:
            return None
        if dtype.kind not in "biuf" or not dtype.isnative:
            return None
        decode = None
        if len(codecs) == 2 and type(codecs[1]).__name__ == "ZstdCodec":
            import numcodecs

            decode = numcodecs.Zstd().decode
        elif len(codecs) != 1:
            return None
        shape, chunks = tuple(int(s) for s in array.shape), tuple(int(c) for c in array.chunks)
        files = cls(location, array.metadata, decode, dtype, shape, chunks)
        files.streamed = hasattr(os, "posix_fadvise") and files.stored_bytes() > available_memory()
        files.direct = files.streamed and hasattr(os, "O_DIRECT")
        files.ahead = ReadAhead(files._fetch, shape[0]) if files.streamed and shape else None
        return files

    def stored_bytes(self) -> int:
        """The store's size on disk, from its first chunk file's size (compression is much alike across chunks)."""
        first = os.path.join(self.location, self.metadata.encode_chunk_key((0,) * len(self.shape)))
        try:
            size = os.path.getsize(first)
        except OSError:
            size = int(np.prod(self.chunks)) * self.dtype.itemsize
        return size * int(np.prod([-(-n // c) for n, c in zip(self.shape, self.chunks)]))

    def get(self, key: Any) -> np.ndarray | None:
        """``array[key]`` when ``key`` (a tuple of slices) is a box of whole chunks whose files this reads, else None.

        A chunk that spans the trailing dimensions whole is decoded straight into its rows of the result.
        """
        if not isinstance(key, tuple) or len(key) != len(self.shape):
            return None
        ranges = []
        for s, size, step in zip(key, self.shape, self.chunks):
            if not isinstance(s, slice) or s.step not in (None, 1):
                return None
            start, stop = s.start or 0, size if s.stop is None else s.stop
            if start % step or not (stop % step == 0 or stop == size) or stop <= start:
                return None
            ranges.append((start, stop))
        ahead = None if self.ahead is None else self.ahead.take(tuple(ranges))
        fetched = self._fetch(tuple(ranges), decode=True) if ahead is None else ahead.result()
        return None if fetched is None else self._decode(*fetched)

    def _fetch(self, ranges: Ranges, decode: bool = False) -> tuple[np.ndarray, list] | None:
        """The files of the box of whole chunks ``ranges`` (half-open, per dimension), read; None when zarr should
        read it.

        The box's array, and for each chunk its place there, whether it fills that place, and what was read: the
        chunk itself (raw: straight into its place when it fills it) or its compressed bytes. Without ``decode``
        decoding is left to :meth:`_decode`, so that a box read ahead in one thread is decoded by the thread that
        asks for it; with it each chunk is decoded as soon as it is read, and no compressed bytes outlive it.
        """
        box_shape = tuple(b - a for a, b in ranges)
        out = aligned_empty(box_shape, self.dtype) if self.direct else np.empty(box_shape, dtype=self.dtype)
        grids = [range(a // c, -(-b // c)) for (a, b), c in zip(ranges, self.chunks)]
        parts = []
        for coords in itertools.product(*grids):
            box = tuple(
                slice(i * c - a, min((i + 1) * c, size) - a)
                for i, c, (a, _), size in zip(coords, self.chunks, ranges, self.shape)
            )
            target = out[box]
            whole = target.shape == self.chunks and target.flags.c_contiguous
            got = self._read(coords, target if whole else None)
            if got is None:
                return None
            if not decode:
                parts.append((target, whole, got))
            elif self._decode(out, [(target, whole, got)]) is None:
                return None
        return out, parts

    def _decode(self, out: np.ndarray, parts: list) -> np.ndarray | None:
        """The box :meth:`_fetch` read, each compressed chunk decoded into its place; None when zarr should read it."""
        for target, whole, got in parts:
            if self.decode is not None:
                chunk = target if whole else np.empty(self.chunks, dtype=self.dtype)
                if zstd_content_size(got) != chunk.nbytes:  # a larger buffer would be filled only in part, silently
                    return None
                self.decode(got, out=chunk)
                got = chunk
            if not whole:
                target[...] = got[tuple(slice(0, n) for n in target.shape)]
        return out

    def _read(self, coords: tuple[int, ...], out: np.ndarray | None) -> np.ndarray | None:
        """Chunk ``coords``'s file: a raw chunk read into ``out`` (a new chunk when None), or the compressed bytes;
        None when the file is absent (zarr reads it)."""
        path = os.path.join(self.location, self.metadata.encode_chunk_key(coords))
        if self.decode is not None:
            out = None  # the compressed bytes are read into a buffer of their own
        elif out is None:
            out = aligned_empty(self.chunks, self.dtype) if self.direct else np.empty(self.chunks, dtype=self.dtype)
        opened = self._open(path, out)
        if opened is None:
            return None
        fd, direct = opened
        try:
            if out is not None:
                if _read_fd(fd, out, direct) != out.nbytes:
                    raise ValueError(f"chunk file {path} holds fewer bytes than a chunk of {self.chunks}")
                got = out
            else:
                size = os.fstat(fd).st_size
                whole = -(-size // DIRECT_ALIGN) * DIRECT_ALIGN  # a direct read asks for whole blocks
                raw = aligned_empty((whole,), np.dtype(np.uint8)) if direct else np.empty(size, dtype=np.uint8)
                if _read_fd(fd, raw, direct) != size:
                    raise ValueError(f"chunk file {path} changed while it was read")
                got = raw[:size]
            if self.streamed and not direct:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return got

    def _open(self, path: str, out: np.ndarray | None) -> tuple[int, bool] | None:
        """A read-only descriptor of chunk file ``path`` and whether it reads directly; None when it is absent.

        Direct when the store is read so and the raw chunk's ``out`` is aligned and of whole blocks (None: the
        bytes go to an aligned buffer of their own). A file system that refuses direct reads (tmpfs) turns them
        off for the store.
        """
        flag = getattr(os, "O_DIRECT", 0)
        aligned = out is None or (out.ctypes.data % DIRECT_ALIGN == 0 and out.nbytes % DIRECT_ALIGN == 0)
        try:
            if self.direct and flag and aligned:
                try:
                    return os.open(path, os.O_RDONLY | flag), True
                except FileNotFoundError:
                    raise
                except OSError:  # EINVAL: no direct I/O on this file system
                    self.direct = False
            return os.open(path, os.O_RDONLY), False
        except FileNotFoundError:
            return None
