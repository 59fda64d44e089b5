"""Blockwise extension: one protocol for every out-of-sample rule.

Landmark MDS triangulation, Isomap's attachment through reference rows and
the Nystrom extension of the spectral methods are all an :class:`Extension`:
a small object holding what a worker needs to place rows (landmarks or a
reference index, the fitted small problem), which enters the dask graph as
one key and places each row block piece by piece. ``transform`` of new rows
and the embedding of all rows in the landmark modes are the same call,
:func:`extend_blockwise`.
"""

from __future__ import annotations

import uuid
from typing import Any

import dask.array as da
import numpy as np

from .._validation import check_n_features
from ..io import as_array, as_sparse_array, is_sparse_input
from ..runtime.compute import model_key, parallelism

#: Input chunk size of the extension passes. Placing a row costs far more
#: than reading it (a neighbour query or m distances per row), so smaller
#: chunks than the default 128 MiB cost no throughput and bound the memory
#: (input, output and scratch of two tasks at once).
EXTEND_CHUNK_BYTES = 32 << 20

#: Tasks per scheduler thread that an extension pass is split into at least.
#: Placing a row costs far more than reading it (3-D rows: 1M rows are 24 MB,
#: one input chunk, but seconds of work), so input chunks are split into
#: pieces until every thread has this many tasks; beyond that a task takes
#: whole pieces up to its input chunk, because each task costs the driver
#: memory and time (100M rows in pieces of 8,192: 65,188 tasks, the driver
#: 165 MiB above its 10M-row peak).
TASKS_PER_THREAD = 16

#: Most rows one extension task places (or one piece, when pieces are
#: larger): more only enlarge the memory two tasks at once hold (their input
#: and output), as scheduling costs well under 1% of a task of this size
#: (about a second of work). Counted in pieces, Isomap's 32,768-row pieces
#: made tasks of 1M rows at 100M rows, and the run's peak 84 MiB above the
#: 10M run's.
TASK_ROWS_MAX = 1 << 18


class Extension:
    """What a worker needs to place rows; subclasses define :meth:`embed_piece`.

    Parameters
    ----------
    width : int
        Columns of the embedding.
    piece_rows : int
        Rows placed at once (bounds the scratch memory of one piece); a task
        places whole pieces one after another (see :func:`task_rows`).
    """

    #: Whether :meth:`embed_piece` takes scipy.sparse CSR rows (sparse input then stays sparse).
    sparse_rows = False

    def __init__(self, width: int, piece_rows: int) -> None:
        self.width = int(width)
        self.piece_rows = max(1, int(piece_rows))
        self.key = f"bigdr-{type(self).__name__.lower()}-{uuid.uuid4().hex}"

    def embed_piece(self, rows: np.ndarray) -> np.ndarray:
        """Coordinates (``len(rows) x width``, float64) of at most ``piece_rows`` rows."""
        raise NotImplementedError

    def score_piece(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates and each row's drift score (see :mod:`bigdr.core.drift`); NaN scores by default."""
        return self.embed_piece(rows), np.full(len(rows), np.nan)

    def score_only(self, rows: np.ndarray) -> np.ndarray:
        """Each row's drift score alone (subclasses answer it more cheaply than placing the rows)."""
        return self.score_piece(rows)[1]

    def embed_block(self, block: np.ndarray, score: bool = False) -> np.ndarray:
        out = np.empty((block.shape[0], self.width + int(score)))
        for s in range(0, block.shape[0], self.piece_rows):
            rows = block[s : s + self.piece_rows]
            if score:
                piece, scores = self.score_piece(rows)
                out[s : s + len(piece), -1] = scores
            else:
                piece = self.embed_piece(rows)
            out[s : s + len(piece), : self.width] = piece
        return out


def score_blockwise(X: Any, extension: Extension, n_features: int, owner: str = "the model") -> da.Array:
    """Each row's drift score (:meth:`Extension.score_only`), lazily, without placing the rows."""
    Xd = _extension_input(X, extension, n_features, owner)
    key = model_key(extension, extension.key)
    return da.map_blocks(_score_block, Xd, key, drop_axis=1, dtype=np.float64, meta=np.empty((0,)))


def _score_block(block: np.ndarray, extension: Extension) -> np.ndarray:
    return np.concatenate(
        [extension.score_only(block[s : s + extension.piece_rows]) for s in range(0, len(block), extension.piece_rows)]
    )


def _extension_input(X: Any, extension: Extension, n_features: int, owner: str) -> da.Array:
    """``X`` as row blocks of whole pieces, split finely enough to keep every thread busy (see
    :data:`TASKS_PER_THREAD`)."""
    if extension.sparse_rows and is_sparse_input(X):
        Xd = as_sparse_array(X, min_rows=1)  # CSR row blocks, one column chunk
        check_n_features(Xd.shape[1], n_features, owner)
        return _split_rows(Xd, task_rows(Xd.shape[0], extension.piece_rows))
    Xd = as_array(X, name="X", min_rows=1, chunk_bytes=EXTEND_CHUNK_BYTES)
    check_n_features(Xd.shape[1], n_features, owner)
    if len(Xd.chunks[1]) != 1:
        Xd = Xd.rechunk({1: -1})
    # A dask array given by the caller keeps its chunks in as_array; split
    # large row chunks here (dask reads each piece's region of the store).
    limit = max(1, EXTEND_CHUNK_BYTES // max(1, Xd.shape[1] * Xd.dtype.itemsize))
    return _split_rows(Xd, min(limit, task_rows(Xd.shape[0], extension.piece_rows)))


def task_rows(n_rows: int, piece_rows: int) -> int:
    """Rows of one extension task: whole pieces, as many as leave :data:`TASKS_PER_THREAD` tasks per thread
    (at most :data:`TASK_ROWS_MAX` rows, or one piece)."""
    pieces = n_rows // (piece_rows * TASKS_PER_THREAD * parallelism())
    return piece_rows * max(1, min(pieces, TASK_ROWS_MAX // piece_rows))


def _split_rows(Xd: da.Array, rows: int) -> da.Array:
    """``Xd`` with every row chunk longer than ``rows`` cut into parts of ``rows`` (chunks are never merged)."""
    if max(Xd.chunks[0]) <= rows:
        return Xd
    parts = tuple(p for c in Xd.chunks[0] for p in (rows,) * (c // rows) + ((c % rows,) if c % rows else ()))
    return Xd.rechunk({0: parts})


def extend_blockwise(
    X: Any, extension: Extension, n_features: int, owner: str = "the model", score: bool = False
) -> da.Array:
    """``extension.embed_block`` over the row blocks of ``X``, lazily; the extension is one graph key.

    ``score``: one more column, each row's drift score (:meth:`Extension.score_piece`).
    Tasks are sized by :func:`task_rows`, not by input bytes.
    """
    Xd = _extension_input(X, extension, n_features, owner)
    key = model_key(extension, extension.key)
    width = extension.width + int(score)
    return da.map_blocks(
        _embed_block,
        Xd,
        key,
        score=score,
        chunks=(Xd.chunks[0], (width,)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
    )


def _embed_block(block: np.ndarray, extension: Extension, score: bool = False) -> np.ndarray:
    # A named function, not a lambda: task names show in dashboards and task streams.
    return extension.embed_block(block, score)
