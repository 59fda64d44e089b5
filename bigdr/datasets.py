"""Synthetic data sets of any size, generated lazily block by block.

Rows are produced in fixed logical blocks of ``BLOCK_ROWS`` rows; block ``b``
draws from ``numpy.random.default_rng([seed, b])``. The data therefore depend
only on ``(seed, n_samples, parameters)``: not on the storage chunking, the
scheduler or the order in which workers run. Nothing of size n is ever held
in memory, so 10M+ rows stream straight to a zarr store
(:func:`generate`, ``bigdr generate``).

Each generator returns ``(X, coords)`` as dask arrays: ``coords`` holds the
ground truth (manifold coordinates, latent factors, cluster labels).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import dask.array as da
import numpy as np
from dask.base import tokenize

BLOCK_ROWS = 65_536
#: Largest stored chunk of X that :func:`generate` writes by default.
CHUNK_BYTES = 64 * 2**20


def _check(n_samples: int, seed: int) -> None:
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an int >= 2; got {n_samples!r}.")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int; got {seed!r}.")


def _blocks(n_samples: int) -> tuple[int, ...]:
    full, rest = divmod(n_samples, BLOCK_ROWS)
    return (BLOCK_ROWS,) * full + ((rest,) if rest else ())


def _lazy(fn: Callable, n_samples: int, width: int, seed: int, dtype, name: str, **kw) -> da.Array:
    """A dask array whose block ``b`` is ``fn(rng([seed, b]), rows, **kw)``."""
    rows = _blocks(n_samples)

    def block(block_info=None):
        info = block_info[None]
        b = info["chunk-location"][0]
        rng = np.random.default_rng([seed, b])
        return fn(rng, rows[b], **kw).astype(dtype, copy=False)

    return da.map_blocks(
        block,
        chunks=(rows, (width,)),
        dtype=np.dtype(dtype),
        name=f"bigdr-{name}-{tokenize(fn.__name__, seed, n_samples, kw)}",
    )


def _swiss_roll_block(rng, m, noise, hole=False):
    # Same parametrisation as scikit-learn's make_swiss_roll: t in [1.5 pi, 4.5 pi].
    t = 1.5 * np.pi * (1 + 2 * rng.random(m))
    height = 21 * rng.random(m)
    X = np.column_stack([t * np.cos(t), height, t * np.sin(t)]) + noise * rng.standard_normal((m, 3))
    return np.column_stack([X, t, height])


def make_swiss_roll(
    n_samples: int, *, noise: float = 0.0, seed: int = 0, dtype=np.float64
) -> tuple[da.Array, da.Array]:
    """Swiss roll in 3-D. ``coords`` = (t, height): the roll angle and the height.

    ``x = t cos t, y = height, z = t sin t`` with ``t ~ U(1.5 pi, 4.5 pi)``,
    ``height ~ U(0, 21)`` plus isotropic Gaussian ``noise``.
    """
    _check(n_samples, seed)
    both = _lazy(_swiss_roll_block, n_samples, 5, seed, np.float64, "swiss-roll", noise=float(noise))
    return both[:, :3].astype(dtype), both[:, 3:]


def _s_curve_block(rng, m, noise):
    t = 3 * np.pi * (rng.random(m) - 0.5)
    height = 2.0 * rng.random(m)
    X = np.column_stack([np.sin(t), height, np.sign(t) * (np.cos(t) - 1)]) + noise * rng.standard_normal((m, 3))
    return np.column_stack([X, t, height])


def make_s_curve(n_samples: int, *, noise: float = 0.0, seed: int = 0, dtype=np.float64) -> tuple[da.Array, da.Array]:
    """S-curve in 3-D (scikit-learn's parametrisation). ``coords`` = (t, height)."""
    _check(n_samples, seed)
    both = _lazy(_s_curve_block, n_samples, 5, seed, np.float64, "s-curve", noise=float(noise))
    return both[:, :3].astype(dtype), both[:, 3:]


def spike_directions(n_features: int, n_spikes: int, seed: int) -> np.ndarray:
    """Orthonormal spike directions (n_spikes x n_features) of :func:`make_spiked_covariance`."""
    rng = np.random.default_rng([seed, 2**32 - 1])
    q, _ = np.linalg.qr(rng.standard_normal((n_features, n_spikes)))
    return q.T


def _spiked_block(rng, m, V, strengths, sigma):
    G = rng.standard_normal((m, V.shape[0]))
    X = sigma * rng.standard_normal((m, V.shape[1])) + (G * np.sqrt(strengths)) @ V
    return np.column_stack([X, G])


def make_spiked_covariance(
    n_samples: int,
    n_features: int = 100,
    *,
    spikes: tuple[float, ...] = (20.0, 10.0, 5.0),
    noise: float | np.ndarray = 1.0,
    seed: int = 0,
    dtype=np.float64,
) -> tuple[da.Array, da.Array]:
    """Spiked covariance model (Johnstone 2001): ``x = noise * u + sum_k sqrt(beta_k) g_k v_k``.

    ``Cov(x) = noise^2 I + sum_k beta_k v_k v_k^T``; ``noise`` may also give
    one standard deviation per feature (``Cov(x) = diag(noise^2) + ...``). With ``noise = 1`` a spike
    is visible above the Marchenko–Pastur bulk when ``beta_k > sqrt(p/n)``
    (BBP threshold). The directions are :func:`spike_directions`;
    ``coords`` holds the latent factors ``g``.
    """
    _check(n_samples, seed)
    sigma = np.asarray(noise, dtype=float)
    shape_ok = sigma.ndim == 0 or sigma.shape == (n_features,)
    if not shape_ok or not (np.isfinite(sigma) & (sigma >= 0)).all():
        raise ValueError(
            f"noise must be a non-negative number or one per feature ({n_features}); got shape {sigma.shape}."
        )
    strengths = np.asarray(spikes, dtype=float)
    if strengths.ndim != 1 or (strengths < 0).any():
        raise ValueError(f"spikes must be a list of non-negative strengths; got {spikes!r}.")
    if len(strengths) >= n_features:
        raise ValueError(f"Need fewer spikes ({len(strengths)}) than features ({n_features}).")
    V = spike_directions(n_features, len(strengths), seed)
    both = _lazy(
        _spiked_block,
        n_samples,
        n_features + len(strengths),
        seed,
        np.float64,
        "spiked",
        V=V,
        strengths=strengths,
        sigma=sigma if sigma.ndim else float(sigma),
    )
    return both[:, :n_features].astype(dtype), both[:, n_features:]


def blob_centers(n_centers: int, n_features: int, box: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 2**32 - 2])
    return rng.uniform(-box, box, size=(n_centers, n_features))


def _blobs_block(rng, m, centers, std):
    labels = rng.integers(0, centers.shape[0], size=m)
    X = centers[labels] + std * rng.standard_normal((m, centers.shape[1]))
    return np.column_stack([X, labels])


def make_blobs(
    n_samples: int,
    n_features: int = 10,
    *,
    centers: int = 5,
    cluster_std: float = 1.0,
    box: float = 10.0,
    seed: int = 0,
    dtype=np.float64,
) -> tuple[da.Array, da.Array]:
    """Isotropic Gaussian blobs; centres uniform in ``[-box, box]^p``. ``coords`` = labels."""
    _check(n_samples, seed)
    C = blob_centers(int(centers), n_features, box, seed)
    both = _lazy(_blobs_block, n_samples, n_features + 1, seed, np.float64, "blobs", centers=C, std=float(cluster_std))
    return both[:, :n_features].astype(dtype), both[:, n_features:]


def filament_segments(n_nodes: int, links: int, box: float, seed: int) -> np.ndarray:
    """The filaments of :func:`make_filaments`: (n_segments, 2, 3) end points.

    ``n_nodes`` nodes uniform in ``[0, box]^3``, each joined to its ``links``
    nearest other nodes (each pair once).
    """
    nodes = np.random.default_rng([seed, 2**32 - 3]).uniform(0, box, size=(int(n_nodes), 3))
    d = np.linalg.norm(nodes[:, None] - nodes[None], axis=2)
    np.fill_diagonal(d, np.inf)
    pairs = {tuple(sorted((i, int(j)))) for i in range(len(nodes)) for j in np.argsort(d[i])[: int(links)]}
    return np.array([[nodes[i], nodes[j]] for i, j in sorted(pairs)])


def _filaments_block(rng, m, segments, noise, node_fraction, background, box):
    kind = rng.random(m)
    on_node, in_background = kind < node_fraction, kind >= 1 - background
    seg = rng.integers(0, len(segments), size=m)
    t = rng.random(m)
    X = segments[seg, 0] + t[:, None] * (segments[seg, 1] - segments[seg, 0])
    ends = segments[seg, rng.integers(0, 2, size=m)]  # a node: an end of a random filament
    X = np.where(
        on_node[:, None], ends + 2 * noise * rng.standard_normal((m, 3)), X + noise * rng.standard_normal((m, 3))
    )
    X = np.where(in_background[:, None], rng.uniform(0, box, size=(m, 3)), X)
    label = np.where(in_background, -2, np.where(on_node, -1, seg))
    return np.column_stack([X, label, np.where(label >= 0, t, np.nan)])


def make_filaments(
    n_samples: int,
    *,
    n_nodes: int = 16,
    links: int = 3,
    noise: float = 0.01,
    node_fraction: float = 0.15,
    background: float = 0.15,
    box: float = 1.0,
    seed: int = 0,
    dtype=np.float64,
) -> tuple[da.Array, da.Array]:
    """A cosmic-web-like set in 3-D: filaments between nodes, clumps at the nodes, a uniform background.

    The filaments are :func:`filament_segments`; a row lies on a random
    filament (Gaussian noise ``noise`` per axis), in a clump at a node
    (``node_fraction``; noise ``2 noise``) or anywhere in the box
    (``background``). ``coords`` = (filament index, position along it in
    [0, 1]); the index is -1 for a clump and -2 for the background (position NaN).
    """
    _check(n_samples, seed)
    segments = filament_segments(n_nodes, links, box, seed)
    both = _lazy(
        _filaments_block,
        n_samples,
        5,
        seed,
        np.float64,
        "filaments",
        segments=segments,
        noise=float(noise),
        node_fraction=float(node_fraction),
        background=float(background),
        box=float(box),
    )
    return both[:, :3].astype(dtype), both[:, 3:]


GENERATORS: dict[str, Callable[..., tuple[da.Array, da.Array]]] = {
    "filaments": make_filaments,
    "swiss-roll": make_swiss_roll,
    "s-curve": make_s_curve,
    "spiked": make_spiked_covariance,
    "blobs": make_blobs,
}


def generate(
    kind: str,
    path: str | os.PathLike,
    n_samples: int,
    *,
    chunk_rows: int | None = None,
    overwrite: bool = False,
    resume: bool = False,
    **params,
):
    """Write a generated data set to a zarr group ``{X, coords}`` atomically.

    The group's attributes record the generator, its parameters and the seed.
    ``chunk_rows`` (rows per stored chunk) defaults to a multiple of the
    generator's block of 65,536 rows, up to 262,144 rows, with chunks of X
    at most 64 MiB (wide data gets fewer rows per chunk).
    An interrupted run keeps its partial store (``.<name>.partial``);
    ``resume=True`` writes only the blocks it lacks (the data are the same,
    block for block, for the same seed).
    """
    from .io import write_zarr

    if kind not in GENERATORS:
        raise ValueError(f"Unknown data set {kind!r}; choose one of {sorted(GENERATORS)}.")
    X, coords = GENERATORS[kind](n_samples, **params)
    if chunk_rows is None:
        row_bytes = X.shape[1] * X.dtype.itemsize
        chunk_rows = max(1, min(4, CHUNK_BYTES // (BLOCK_ROWS * row_bytes))) * BLOCK_ROWS
        if BLOCK_ROWS * row_bytes > CHUNK_BYTES:
            chunk_rows = max(1024, CHUNK_BYTES // row_bytes)
    attrs = {
        "generator": kind,
        "n_samples": n_samples,
        "params": {k: (str(v) if k == "dtype" else v) for k, v in params.items()},
    }
    return write_zarr(
        {"X": X, "coords": coords}, path, attrs=attrs, chunk_rows=chunk_rows, overwrite=overwrite, resume=resume
    )
