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
from typing import Any

import dask
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


#: Largest log mean count of an entry of :func:`make_cells` (e^9 ~ 8,100, the highest genes of a deep cell).
MAX_LOG_MEAN = 9.0

#: Rows of a logical block of the sparse generators (their per-block work is dense in the width).
SPARSE_BLOCK_ROWS = 2048


def _seeded(fn: Callable, seed: int, b: int, m: int, **kw: Any) -> Any:
    return fn(np.random.default_rng([seed, b]), m, **kw)  # a fresh generator each time: recomputing gives the same


def _lazy_sparse(fn: Callable, n_samples: int, width: int, seed: int, name: str, **kw) -> tuple[da.Array, da.Array]:
    """A dask array of CSR blocks, block ``b`` from ``fn(rng([seed, b]), rows, **kw) -> (csr, coords)``."""
    import scipy.sparse as sp

    full, rest = divmod(n_samples, SPARSE_BLOCK_ROWS)
    rows = (SPARSE_BLOCK_ROWS,) * full + ((rest,) if rest else ())
    token = tokenize(fn.__name__, seed, n_samples, width)
    parts = [
        dask.delayed(_seeded, pure=True)(fn, seed, b, m, **kw, dask_key_name=f"{name}-{token}-{b}")
        for b, m in enumerate(rows)
    ]
    meta = sp.csr_matrix((0, width), dtype=np.float32)
    X = da.concatenate(
        [da.from_delayed(part[0], shape=(m, width), dtype=np.float32, meta=meta) for part, m in zip(parts, rows)]
    )
    coords = da.concatenate([da.from_delayed(part[1], shape=(m, 2), dtype=np.float64) for part, m in zip(parts, rows)])
    return X, coords


def _nb_counts(rng: np.random.Generator, mu: np.ndarray, r: float) -> Any:
    """Negative-binomial counts of mean ``mu`` (m x p) and dispersion ``r``, drawn sparse, as CSR.

    NB(r, mu) is a compound Poisson: ``K ~ Poisson(r log(1 + mu / r))``
    clusters, each of a logarithmic(``mu / (mu + r)``) size. The clusters of a
    row are drawn at once from the row's total and placed by one search in the
    cumulated rates, so the cost is one pass over the rates plus the nonzeros.
    """
    import scipy.sparse as sp

    m, p = mu.shape
    W = r * np.log1p(mu / r)  # Poisson rate of clusters per entry
    flat = np.cumsum(W, axis=1, dtype=np.float64)
    totals = flat[:, -1].copy()
    flat += (np.cumsum(totals) - totals)[:, None]  # one increasing sequence over the rows
    k = rng.poisson(totals)
    row = np.repeat(np.arange(m), k)
    u = flat[row, -1] - rng.random(row.shape[0]) * totals[row]
    idx = np.minimum(np.searchsorted(flat.ravel(), u, side="right"), row * p + p - 1)
    idx = np.maximum(idx, row * p)
    q = (mu.ravel()[idx] / (mu.ravel()[idx] + r)).clip(1e-12, 1 - 1e-12)
    sizes = rng.logseries(q)
    cells, first, inverse = np.unique(idx, return_index=True, return_inverse=True)
    counts = np.bincount(inverse, weights=sizes)
    del first
    rows, cols = np.divmod(cells, p)
    indptr = np.searchsorted(rows, np.arange(m + 1))
    return sp.csr_matrix((counts, cols.astype(np.int32), indptr), shape=(m, p))


def _cells_model(n_genes: int, n_types: int, n_programs: int, density: float, dispersion: float, seed: int) -> dict:
    """The genes, cell types and programs shared by every block, and the scale that gives ``density``."""
    rng = np.random.default_rng([seed, 2**31 - 1])
    base = rng.normal(0.0, 1.5, n_genes)  # log mean expression of each gene
    types = np.where(rng.random((n_types, n_genes)) < 0.05, rng.normal(0.0, 1.5, (n_types, n_genes)), 0.0)
    programs = np.where(
        rng.random((n_programs, n_genes)) < 0.03, np.abs(rng.normal(0.0, 0.7, (n_programs, n_genes))), 0
    )
    frequency = rng.dirichlet(np.ones(n_types))
    model = {"base": base, "types": types, "programs": programs, "frequency": frequency, "r": dispersion}
    pilot = _cell_rates(np.random.default_rng([seed, 2**31 - 2]), 512, model, 0.0)[0]
    lo, hi = -20.0, 20.0
    for _ in range(50):  # the share of nonzeros, 1 - P(0) = 1 - (1 + mu / r)^-r, rises with the scale
        mid = (lo + hi) / 2
        nonzero = 1.0 - np.exp(-dispersion * np.log1p(pilot * np.exp(mid) / dispersion)).mean()
        lo, hi = (mid, hi) if nonzero < density else (lo, mid)
    model["log_scale"] = (lo + hi) / 2
    return model


def _cell_rates(rng: np.random.Generator, m: int, model: dict, log_scale: float) -> tuple[np.ndarray, np.ndarray]:
    kind = rng.choice(len(model["frequency"]), size=m, p=model["frequency"])
    activity = rng.gamma(0.5, 1.0, (m, model["programs"].shape[0]))
    size = rng.normal(0.0, 0.3, m)
    log_mu = model["base"] + model["types"][kind] + activity @ model["programs"] + (size + log_scale)[:, None]
    return np.exp(np.minimum(log_mu, MAX_LOG_MEAN)), np.column_stack([kind, size])


def _cells_block(rng: np.random.Generator, m: int, model: dict) -> tuple[Any, np.ndarray]:
    mu, coords = _cell_rates(rng, m, model, model["log_scale"])
    counts = _nb_counts(rng, mu, model["r"])
    counts.data = np.log1p(counts.data)
    return counts.astype(np.float32), coords


def make_cells(
    n_cells: int,
    n_genes: int = 20_000,
    *,
    n_types: int = 20,
    n_programs: int = 30,
    density: float = 0.03,
    dispersion: float = 2.0,
    seed: int = 0,
) -> tuple[da.Array, da.Array]:
    """Single-cell-like log-counts: cell types x gene programs, negative-binomial counts, ``log1p``.

    Each gene has a log mean expression ``b_g ~ N(0, 1.5^2)``; each of
    ``n_types`` cell types changes 5% of the genes by ``N(0, 1.5^2)`` on the log
    scale, and each of ``n_programs`` gene programs raises 3% of the genes in
    proportion to a cell's activity (``Gamma(0.5, 1)``); cells draw a type
    (frequencies ``Dirichlet(1)``) and a size factor (``log ~ N(0, 0.3^2)``).
    Counts are negative binomial with mean ``mu_cg = s exp(b_g + type + programs
    + size)`` and dispersion ``r``, the scale ``s`` set so that a fraction
    ``density`` of the entries is nonzero; the matrix holds ``log1p(counts)``
    (float32) and is drawn sparse, never dense.

    Returns ``(X, coords)``: X a dask array of CSR blocks of
    :data:`SPARSE_BLOCK_ROWS` cells, ``coords`` (n, 2) the cell type and log
    size factor. Block ``b`` depends only on ``(seed, b)`` and the parameters.
    """
    _check(n_cells, seed)
    if not 0 < density < 1:
        raise ValueError(f"density must lie in (0, 1); got {density!r}.")
    model = _cells_model(n_genes, n_types, n_programs, density, dispersion, seed)
    return _lazy_sparse(_cells_block, n_cells, n_genes, seed, "bigdr-cells", model=model)


def _documents_model(n_terms: int, n_topics: int, density: float, seed: int) -> dict:
    rng = np.random.default_rng([seed, 2**31 - 1])
    zipf = 1.0 / np.arange(1, n_terms + 1) ** 1.07
    zipf = zipf[rng.permutation(n_terms)]
    boost = np.where(rng.random((n_topics, n_terms)) < 0.01, rng.lognormal(3.0, 1.0, (n_topics, n_terms)), 1.0)
    topics = zipf * boost
    cumulative = np.cumsum(topics / topics.sum(axis=1, keepdims=True), axis=1)
    model = {"cumulative": cumulative, "length": density * n_terms, "idf": None}
    for _ in range(6):  # mean length such that the distinct terms per document match the density
        pilot = _document_counts(np.random.default_rng([seed, 2**31 - 2]), 256, model)
        model["length"] *= density * n_terms / max(pilot.getnnz(axis=1).mean(), 1e-9)
    pilot = _document_counts(np.random.default_rng([seed, 2**31 - 3]), 20_000, model)
    df = np.bincount(pilot.indices, minlength=n_terms)
    model["idf"] = np.log((1 + pilot.shape[0]) / (1 + df)) + 1.0  # scikit-learn's smooth idf, from a pilot
    return model


def _document_counts(rng: np.random.Generator, m: int, model: dict) -> Any:
    import scipy.sparse as sp

    cumulative = model["cumulative"]
    k, n_terms = cumulative.shape
    length = 1 + rng.poisson(model["length"], m)
    mixture = rng.dirichlet(np.full(k, 0.1), size=m)
    doc = np.repeat(np.arange(m), length)
    topic = (rng.random(doc.shape[0])[:, None] > np.cumsum(mixture, axis=1)[doc]).sum(axis=1).clip(0, k - 1)
    term = np.empty(doc.shape[0], dtype=np.int64)
    u = rng.random(doc.shape[0])
    for z in np.unique(topic):
        at = topic == z
        term[at] = np.searchsorted(cumulative[z], u[at]).clip(0, n_terms - 1)
    counts = sp.csr_matrix((np.ones(doc.shape[0]), (doc, term)), shape=(m, n_terms))
    counts.sum_duplicates()
    return counts


def _documents_block(rng: np.random.Generator, m: int, model: dict) -> tuple[Any, np.ndarray]:
    counts = _document_counts(rng, m, model)
    X = counts.multiply(model["idf"][None, :]).tocsr()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp_row_scale(X, 1.0 / np.maximum(norms, 1e-300))
    return X.astype(np.float32), np.column_stack([counts.sum(axis=1).A1, counts.getnnz(axis=1)])


def sp_row_scale(X: Any, factors: np.ndarray) -> Any:
    """Rows of a CSR matrix scaled in place of a diagonal product."""
    X = X.tocsr(copy=True)
    X.data *= np.repeat(factors, np.diff(X.indptr))
    return X


def make_documents(
    n_documents: int, n_terms: int = 100_000, *, n_topics: int = 100, density: float = 0.001, seed: int = 0
) -> tuple[da.Array, da.Array]:
    """TF-IDF-like rows of a topic model: Zipf term frequencies, ``l2``-normalised TF-IDF, drawn sparse.

    Terms have Zipf frequencies (exponent 1.07) raised 20-fold on average for
    1% of the terms of each of ``n_topics`` topics; a document mixes topics
    (``Dirichlet(0.1)``) and draws ``1 + Poisson(L)`` tokens, ``L`` set so that
    a fraction ``density`` of its entries is nonzero. Entries are counts times
    scikit-learn's smooth idf (estimated on a pilot of 20,000 documents of the
    same model), rows scaled to unit norm, float32.

    Returns ``(X, coords)``: X a dask array of CSR blocks, ``coords`` (n, 2)
    each document's token count and distinct terms.
    """
    _check(n_documents, seed)
    if not 0 < density < 1:
        raise ValueError(f"density must lie in (0, 1); got {density!r}.")
    model = _documents_model(n_terms, n_topics, density, seed)
    return _lazy_sparse(_documents_block, n_documents, n_terms, seed, "bigdr-documents", model=model)


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
