"""Figures: the scree plot (Cattell 1966) with the Marchenko-Pastur bulk edge, and embeddings of any size."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np


def scree_plot(model, path: str | os.PathLike, *, title: str | None = None) -> str:
    """Write a PNG scree plot of a fitted PCA: eigenvalues on a log scale, the kept
    components highlighted, and the Marchenko–Pastur bulk edge when known."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spectrum = np.asarray(getattr(model, "spectrum_", model.explained_variance_), dtype=float)
    k = model.n_components_
    idx = np.arange(1, len(spectrum) + 1)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    positive = spectrum > 0
    ax.semilogy(idx[positive], spectrum[positive], "o-", ms=3, color="0.6", label="eigenvalues")
    ax.semilogy(idx[:k], spectrum[:k], "o", ms=5, color="C0", label=f"kept ({k})")
    edge = getattr(model, "mp_edge_", None)
    if edge is not None:
        ax.axhline(edge, color="C3", ls="--", label=f"Marchenko–Pastur edge {edge:.3g}")
    ax.set_xlabel("component")
    ax.set_ylabel("explained variance")
    ax.set_title(title or f"Scree plot ({100 * float(np.sum(model.explained_variance_ratio_)):.1f}% of variance kept)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return str(path)


def spectrum_plot(model: Any, path: str | os.PathLike, *, title: str | None = None) -> str:
    """A PNG of what a fitted model's dimensions cost or hold.

    PCA: :func:`scree_plot`. Factor analysis: the eigenvalues of the
    covariance whitened by the noise variances, with the largest that white
    noise reaches (``whitened_edge_``). Isomap: the residual variance ``1 - R^2`` between
    geodesic and embedded distances against the dimension (Tenenbaum, de
    Silva & Langford 2000: the elbow is the manifold's dimension). Other
    spectral methods: their eigenvalues ``eigenvalues_`` against the index
    (log scale when all are positive).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if hasattr(model, "explained_variance_"):
        return scree_plot(model, path, title=title)
    name = type(model).__name__
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    if getattr(model, "whitened_spectrum_", None) is not None:  # factor analysis
        ev = np.asarray(model.whitened_spectrum_, dtype=float)
        count, k = len(ev), int(model.n_components_)
        idx = np.arange(1, count + 1)
        ax.semilogy(idx, ev, "o-", ms=3, color="0.6", label="eigenvalues")
        ax.semilogy(idx[:k], ev[:k], "o", ms=5, color="C0", label=f"factors ({k})")
        ax.axhline(model.whitened_edge_, color="C3", ls="--", label=f"white-noise edge {model.whitened_edge_:.3g}")
        ax.set_xlabel("component")
        ax.set_ylabel("eigenvalue of the noise-whitened covariance")
        ax.set_title(title or f"{name}: spectrum after whitening by the noise variances")
        ax.legend()
    elif getattr(model, "residual_variance_", None) is not None:
        rv = np.asarray(model.residual_variance_, dtype=float)
        count = len(rv)
        ax.plot(np.arange(1, count + 1), rv, "o-", color="C0")
        ax.set_xlabel("dimension of the embedding")
        ax.set_ylabel("residual variance (1 - R^2)")
        ax.set_title(title or f"{name}: residual variance of geodesic distances")
    elif getattr(model, "eigenvalues_", None) is not None:
        ev = np.asarray(model.eigenvalues_, dtype=float)
        count = len(ev)
        idx = np.arange(1, count + 1)
        if (ev > 0).all():
            ax.semilogy(idx, ev, "o-", color="C0")
        else:
            ax.plot(idx, ev, "o-", color="C0")
        ax.set_xlabel("coordinate")
        ax.set_ylabel("eigenvalue")
        ax.set_title(title or f"{name}: eigenvalues of the coordinates kept")
    else:
        plt.close(fig)
        raise ValueError(f"{name} has no spectrum to plot (no eigenvalues_ or residual_variance_).")
    if count <= 40:
        ax.set_xticks(np.arange(1, count + 1))
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": "bigdr"})
    plt.close(fig)
    return str(path)


#: At most this many categories get their own colour (matplotlib's tab20).
MAX_CATEGORIES = 20


class _Bins(NamedTuple):
    counts: np.ndarray  # (bins, bins) rows per pixel, or (c, bins, bins) per category
    sums: np.ndarray  # (bins, bins) sum of a continuous colour per pixel, or an empty array


def _merge_bins(a: _Bins, b: _Bins) -> _Bins:
    return _Bins(a.counts + b.counts, a.sums + b.sums)


def _bin_block(block: np.ndarray, extent: tuple, shape: tuple[int, int], colour: str, categories: np.ndarray) -> _Bins:
    x0, x1, y0, y1 = extent
    ny, nx = shape
    ix = np.clip(((block[:, 0] - x0) / (x1 - x0) * nx).astype(np.int64), 0, nx - 1)
    iy = np.clip(((block[:, 1] - y0) / (y1 - y0) * ny).astype(np.int64), 0, ny - 1)
    flat = iy * nx + ix
    if colour == "categorical":
        code = np.searchsorted(categories, block[:, 2])
        counts = np.bincount(code * ny * nx + flat, minlength=len(categories) * ny * nx)
        return _Bins(counts.reshape(len(categories), ny, nx), np.zeros(0))
    counts = np.bincount(flat, minlength=ny * nx).reshape(ny, nx)
    sums = np.zeros(0) if colour == "none" else np.bincount(flat, block[:, 2], ny * nx).reshape(ny, nx)
    return _Bins(counts, sums)


def square_pixels(lo: np.ndarray, hi: np.ndarray, bins: int) -> tuple[tuple, tuple[int, int]]:
    """The extent and the (rows, columns) of a grid of square pixels: ``bins`` along the longer side.

    An embedding drawn with equal scale on both axes: an elliptic cloud stays elliptic and an
    unrolled swiss roll of 92 x 23 stays four times as long as it is wide. The shorter side gets at
    least 16 pixels (a line of points is still a picture); its extent grows to a whole number of them,
    centred on the data.
    """
    span = np.where(hi > lo, hi - lo, 1.0)
    pixel = float(span.max()) * (1 + 1e-9) / bins
    n = np.maximum(np.ceil(span * (1 + 1e-9) / pixel).astype(int), 16)
    pad = (n * pixel - span) / 2
    a, b = lo - pad, lo - pad + n * pixel
    return (float(a[0]), float(b[0]), float(a[1]), float(b[1])), (int(n[1]), int(n[0]))


def bin_embedding(
    Y: Any,
    *,
    color_by: Any = None,
    categorical: bool = False,
    bins: int | str = "auto",
    columns: tuple[int, int] = (0, 1),
) -> tuple[_Bins, tuple[float, float, float, float], np.ndarray, int]:
    """The pixel grid of :func:`embedding`: ``(bins, extent, categories, n)``, two passes over the rows."""
    import dask.array as da

    from .blockwise.reduce import tree_reduce
    from .io import as_array
    from .runtime.compute import compute

    Yd = as_array(Y, name="embedding", min_rows=1)
    if Yd.shape[1] < 2:
        raise ValueError(f"The embedding has {Yd.shape[1]} column; a picture needs 2.")
    if len(columns) != 2 or not all(0 <= int(c) < Yd.shape[1] for c in columns):
        raise ValueError(f"columns must be two column numbers below {Yd.shape[1]}; got {columns!r}.")
    if isinstance(bins, str) and bins == "auto":
        bins = int(np.clip(np.sqrt(Yd.shape[0]) / 2, 100, 800))  # a few rows per pixel where they are dense
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or not 16 <= bins <= 4096:
        raise ValueError(f"bins must be 'auto' or an int between 16 and 4096; got {bins!r}.")
    cols = Yd[:, [int(c) for c in columns]].astype(np.float64)
    colour, categories = "none", np.zeros(0)
    if color_by is not None:
        if isinstance(color_by, (str, os.PathLike)):
            c = as_array(color_by, name="color_by", min_rows=1)[:, 0]
        else:
            c = color_by if isinstance(color_by, da.Array) else da.from_array(np.asarray(color_by))
            c = c[:, 0] if c.ndim == 2 else c
        if c.dtype.kind not in "biuf":
            raise TypeError(f"color_by must hold numbers (category codes or values); got dtype {c.dtype}.")
        if c.shape[0] != Yd.shape[0]:
            raise ValueError(f"color_by has {c.shape[0]} values for {Yd.shape[0]} rows of the embedding.")
        cols = da.concatenate([cols, c.astype(np.float64).rechunk((cols.chunks[0],))[:, None]], axis=1)
        colour = "categorical" if categorical else "continuous"
    lo, hi = cols[:, :2].min(axis=0), cols[:, :2].max(axis=0)
    if colour == "categorical":
        lo, hi, categories = compute(lo, hi, da.unique(cols[:, 2]))
        if len(categories) > MAX_CATEGORIES:
            raise ValueError(
                f"color_by has {len(categories)} categories; at most {MAX_CATEGORIES} get their own colour. "
                f"Drop categorical to colour by value."
            )
    else:
        lo, hi = compute(lo, hi)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError("The embedding holds NaN or infinite values; they cannot be drawn.")
    extent, shape = square_pixels(lo, hi, int(bins))

    def block_fn(block: np.ndarray) -> _Bins:
        return _bin_block(block, extent, shape, colour, categories)

    (grid,) = compute(tree_reduce(cols, block_fn, _merge_bins))
    return grid, extent, categories, int(Yd.shape[0])


def _density_image(fig: Any, ax: Any, counts: np.ndarray, extent: Any, cmap: str) -> None:
    """Rows per pixel on a log colour scale, empty pixels blank, with a colour bar."""
    from matplotlib.colors import LogNorm

    shown = np.where(counts > 0, counts, np.nan)
    im = ax.imshow(shown, origin="lower", extent=extent, aspect="equal", interpolation="nearest", cmap=cmap,
                   norm=LogNorm(vmin=1, vmax=max(float(np.nanmax(shown)), 1.0)))  # fmt: skip
    fig.colorbar(im, ax=ax, label="rows per pixel")


def embedding(
    Y: Any,
    path: str | os.PathLike,
    *,
    color_by: Any = None,
    categorical: bool = False,
    bins: int | str = "auto",
    title: str | None = None,
    columns: tuple[int, int] = (0, 1),
) -> str:
    """A PNG picture of a 2-D embedding of any number of rows, out of core.

    Two passes over the rows (a dask graph, on threads or a cluster): the
    extent, then counts per pixel of a ``bins x bins`` grid merged by a tree
    reduction, so memory is a few grids whatever n is. Without ``color_by``:
    the density of rows per pixel on a log scale with a colour bar. With a
    continuous ``color_by`` (one value per row): each pixel's mean value.
    With ``categorical=True``: each pixel takes the colour of its most
    frequent category (at most 20), shaded by density, with a legend.

    Parameters
    ----------
    Y : array, dask array, zarr store or path
    columns : the two columns drawn (default the first two)
    path : the PNG to write
    color_by : array-like, dask array or path of n numbers (values or category codes), optional
    categorical : whether ``color_by`` holds categories
    bins : pixels along the longer side (pixels are square: both axes have one scale);
        ``"auto"``: ``sqrt(n) / 2`` within 100..800
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    grid, extent, categories, n = bin_embedding(
        Y, color_by=color_by, categorical=categorical, bins=bins, columns=columns
    )
    colour = "categorical" if categorical and color_by is not None else ("none" if color_by is None else "continuous")
    fig, ax = plt.subplots(figsize=(7, 6), dpi=120)
    shown = (extent[0], extent[1], extent[2], extent[3])
    if colour == "categorical":
        total = grid.counts.sum(axis=0)
        palette = plt.get_cmap("tab20")(np.arange(len(categories)) % 20)
        rgba = palette[np.argmax(grid.counts, axis=0)].copy()
        shade = np.log1p(total) / max(np.log1p(total.max()), 1e-12)
        rgba[..., 3] = np.where(total > 0, 0.25 + 0.75 * shade, 0.0)
        ax.imshow(rgba, origin="lower", extent=shown, aspect="equal", interpolation="nearest")
        labels = [f"{v:g}" for v in categories]
        ax.legend(handles=[Patch(color=palette[i], label=labels[i]) for i in range(len(categories))],
                  loc="best", fontsize=7, title="category")  # fmt: skip
    elif colour == "continuous":
        mean = np.where(grid.counts > 0, grid.sums / np.maximum(grid.counts, 1), np.nan)
        im = ax.imshow(mean, origin="lower", extent=shown, aspect="equal", interpolation="nearest", cmap="viridis")
        fig.colorbar(im, ax=ax, label="mean colour value per pixel")
    else:
        _density_image(fig, ax, grid.counts, shown, "magma")
    ax.set_xlabel(f"coordinate {columns[0] + 1}")
    ax.set_ylabel(f"coordinate {columns[1] + 1}")
    ax.set_title(title or f"Embedding of {n:,} rows")
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": "bigdr"})
    plt.close(fig)
    return str(path)


def quality(reports: Any, path: str | os.PathLike, *, title: str | None = None) -> str:
    """A PNG of embedding quality: ``R_NX(K)`` curves on a log K axis, the co-ranking block, a Shepard diagram.

    ``reports``: a :class:`bigdr.metrics.QualityReport`, or a dict of them by name (several
    embeddings of the same rows, their curves drawn together; the block shown is the first's).
    The co-ranking block counts (query, row) pairs by the row's rank in the data (rows) and in
    the embedding (columns), on a log colour scale: a good embedding keeps the mass on the
    diagonal. The Shepard diagram is the density of the query pairs' distances, data against
    embedding (the first report's, when it has them).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    named = reports if isinstance(reports, dict) else {"embedding": reports}
    if not named:
        raise ValueError("quality() needs at least one report.")
    fig, (left, right, third) = plt.subplots(1, 3, figsize=(16, 4.8), dpi=120)
    for name, r in named.items():
        K = np.arange(1, len(r.r_nx) + 1)
        left.plot(K, r.r_nx, lw=1.5, label=f"{name} (AUC {r.auc:.3f} ± {r.auc_error:.3f})")
    left.set_xscale("log")
    left.set_xlabel("K (neighbours)")
    left.set_ylabel("R_NX(K)")
    left.set_ylim(min(0.0, min(min(r.r_nx) for r in named.values())), 1.0)
    left.legend(loc="best", fontsize=8)
    first_name, first = next(iter(named.items()))
    Q = np.asarray(first.coranking, dtype=np.float64)
    shown = np.where(Q > 0, Q, np.nan)
    im = right.imshow(shown, origin="upper", cmap="viridis", interpolation="nearest", aspect="equal",
                      extent=(0.5, Q.shape[1] + 0.5, Q.shape[0] + 0.5, 0.5),
                      norm=LogNorm(vmin=1, vmax=max(float(np.nanmax(shown)) if Q.any() else 1.0, 1.0)))  # fmt: skip
    fig.colorbar(im, ax=right, label="pairs")
    right.set_xlabel("rank in the embedding")
    right.set_ylabel("rank in the data")
    right.set_title(f"co-ranking block ({first_name})", fontsize=9)
    dx, dy = np.asarray(first.shepard, dtype=np.float64).reshape(2, -1)
    if dx.size:
        H, xe, ye = np.histogram2d(dx, dy, bins=120)
        third.imshow(np.where(H.T > 0, H.T, np.nan), origin="lower", extent=(xe[0], xe[-1], ye[0], ye[-1]),
                     aspect="auto", cmap="magma", norm=LogNorm(vmin=1, vmax=max(float(H.max()), 1.0)))  # fmt: skip
        third.set_title(f"Shepard diagram ({first_name}, {dx.size:,} pairs)", fontsize=9)
    else:
        third.text(0.5, 0.5, "no pairs (distances=False)", ha="center", va="center", transform=third.transAxes)
    third.set_xlabel("distance in the data")
    third.set_ylabel("distance in the embedding")
    mode = "exact" if first.exact else f"{first.n_queries:,} queries"
    fig.suptitle(title or f"Embedding quality, {first.n_rows:,} rows ({mode})")
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": "bigdr"})
    plt.close(fig)
    return str(path)


class Biplot(NamedTuple):
    """What :func:`biplot` drew."""

    path: str
    labels: list[str]  #: the features whose arrows are drawn, longest first
    arrows: np.ndarray  #: (m, 2) arrow tips in the picture's coordinates
    scale: float  #: arrow length in the picture per unit of loading


def biplot(
    model: Any,
    X: Any,
    path: str | os.PathLike,
    *,
    components: tuple[int, int] = (0, 1),
    feature_names: Any = None,
    max_arrows: int = 12,
    bins: int | str = "auto",
    title: str | None = None,
    scores: Any = None,
) -> Biplot:
    """A biplot (Gabriel 1971) of a fitted PCA or factor analysis: the rows' scores and the features' loadings.

    The scores ``model.transform(X)`` on two components are drawn as the
    density of rows per pixel (:func:`bin_embedding`, out of core, any
    number of rows); each feature is an arrow from the origin to its
    loadings on the two components, labelled with its name: for PCA
    ``v_cj sqrt(lambda_c)`` (the covariance of the feature with the
    standardised score), for factor analysis ``W_cj`` (its covariance with
    the factor). Arrows share one scale, chosen so that the longest reaches
    80% of the scores' extent; features at a small angle are correlated
    through these components, and an arrow's length is how much of the
    feature they carry. Only the ``max_arrows`` longest arrows are drawn.
    ``scores``: the embedding of ``X`` if already computed (an array, dask
    array or zarr store of ``model.transform(X)``); then ``X`` is not read
    and may be None.

    References
    ----------
    Gabriel, K. R. (1971). The biplot graphic display of matrices with
    application to principal component analysis. Biometrika 58(3), 453-467.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ._validation import check_int
    from .decomposition.factor_analysis import FactorAnalysis
    from .decomposition.pca import PCA

    if not isinstance(model, (PCA, FactorAnalysis)) or not hasattr(model, "components_"):
        raise TypeError(f"A biplot needs a fitted PCA or FactorAnalysis; got {type(model).__name__}.")
    W = np.asarray(model.components_, dtype=np.float64)
    if len(components) != 2 or not all(0 <= int(c) < W.shape[0] for c in components):
        raise ValueError(f"components must be two component numbers below {W.shape[0]}; got {components!r}.")
    check_int(max_arrows, "max_arrows")
    c = [int(c) for c in components]
    loadings = W[c].T
    if hasattr(model, "explained_variance_"):
        loadings = loadings * np.sqrt(np.asarray(model.explained_variance_, dtype=np.float64)[c])
    p = loadings.shape[0]
    names = feature_names if feature_names is not None else getattr(model, "feature_names_in_", None)
    names = [f"x{j}" for j in range(p)] if names is None else [str(v) for v in names]
    if len(names) != p:
        raise ValueError(f"feature_names has {len(names)} names for {p} features.")
    if scores is None and X is None:
        raise ValueError("A biplot needs the rows X, or their scores.")
    Y = model.transform(X) if scores is None else scores
    grid, extent, _, n = bin_embedding(Y, bins=bins, columns=(c[0], c[1]))
    length = np.hypot(loadings[:, 0], loadings[:, 1])
    order = np.argsort(-length, kind="stable")[:max_arrows]
    reach = 0.8 * min(max(abs(extent[0]), abs(extent[1])), max(abs(extent[2]), abs(extent[3])))
    scale = reach / max(float(length[order[0]]), np.finfo(float).tiny)
    tips = loadings[order] * scale
    fig, ax = plt.subplots(figsize=(7, 6), dpi=120)
    _density_image(fig, ax, grid.counts, extent, "Greys")
    for (x, y), label in zip(tips, [names[j] for j in order], strict=True):
        ax.annotate("", xy=(x, y), xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": "C3", "lw": 1.5})
        ax.text(x * 1.06, y * 1.06, label, color="C3", fontsize=8, ha="center", va="center")
    kind = "factor" if not hasattr(model, "explained_variance_") else "component"
    ax.set_xlabel(f"{kind} {c[0] + 1}")
    ax.set_ylabel(f"{kind} {c[1] + 1}")
    shown = f"{len(order)} of {p} features" if len(order) < p else f"{p} features"
    ax.set_title(title or f"Biplot of {type(model).__name__}: {n:,} rows, {shown}")
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": "bigdr"})
    plt.close(fig)
    return Biplot(str(path), [names[j] for j in order], tips, float(scale))


def structure(
    model: Any,
    X: Any,
    path: str | os.PathLike,
    *,
    columns: tuple[int, int] = (0, 1),
    basis: Any = None,
    bins: int | str = "auto",
    title: str | None = None,
) -> str:
    """A PNG of the data's density with a fitted principal curve, manifold or ridge drawn over it.

    The rows are drawn as the density of rows per pixel (:func:`bin_embedding`:
    two passes, out of core, any number of rows) in two coordinates: the
    ``columns`` of ``X``, or the projection ``X @ basis`` on a ``p x 2``
    ``basis`` (for data of more than two dimensions). Over it: the curve
    ``f(z)`` for z across the latent range the rows use (:class:`~bigdr.PrincipalCurve`; the whole
    polyline of a :class:`~bigdr.HastieStuetzleCurve`), the
    manifold's latent grid lines (:class:`~bigdr.PrincipalManifold`), or
    the ridge points (:class:`~bigdr.DensityRidge`), in the same coordinates.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .curves.density_ridge import DensityRidge
    from .curves.hastie_stuetzle import HastieStuetzleCurve
    from .curves.principal_curve import PrincipalCurve
    from .io import as_array

    kinds = (PrincipalCurve, HastieStuetzleCurve, DensityRidge)
    if not isinstance(model, kinds) or not hasattr(model, "n_features_in_"):
        raise TypeError(
            "structure() draws a fitted PrincipalCurve, PrincipalManifold, HastieStuetzleCurve or DensityRidge; "
            f"got {model!r}."
        )
    p = model.n_features_in_
    if basis is None:
        if len(columns) != 2 or not all(0 <= int(c) < p for c in columns):
            raise ValueError(f"columns must be two column numbers below {p}; got {columns!r}.")
        B = np.zeros((p, 2))
        B[int(columns[0]), 0] = B[int(columns[1]), 1] = 1.0
    else:
        B = np.asarray(basis, dtype=np.float64)
        if B.shape != (p, 2):
            raise ValueError(f"basis must be {p} x 2 (features x drawn axes); got shape {B.shape}.")
    Xd = as_array(X, name="X", min_rows=1)
    if Xd.shape[1] != p:
        raise ValueError(f"X has {Xd.shape[1]} features; the model was fitted on {p}.")
    grid, extent, _, n = bin_embedding(Xd.astype(np.float64) @ B, bins=bins)
    fig, ax = plt.subplots(figsize=(7, 6), dpi=120)
    _density_image(fig, ax, grid.counts, extent, "Greys")
    name = type(model).__name__
    if isinstance(model, DensityRidge):
        R = model.ridge_points_ @ B
        ax.scatter(R[:, 0], R[:, 1], s=1.5, color="C3", label=f"{len(R):,} ridge points", linewidths=0)
    elif model.n_components_ == 1:  # over the latent range the rows use: beyond it the curve is extrapolated
        low, high = np.asarray(getattr(model, "latent_range_", [[0.0], [1.0]]), dtype=np.float64)[:, 0]
        F = model.inverse_transform(np.linspace(low, high, 2000)) @ B
        ax.plot(F[:, 0], F[:, 1], color="C3", lw=1.5, label="principal curve")
    else:
        t, u = np.linspace(0, 1, 300), np.linspace(0, 1, 11)
        for a in u:
            for z in (np.column_stack([np.full_like(t, a), t]), np.column_stack([t, np.full_like(t, a)])):
                F = model.inverse_transform(z) @ B
                ax.plot(F[:, 0], F[:, 1], color="C3", lw=0.7)
        ax.plot([], [], color="C3", lw=0.7, label="principal manifold (latent grid lines)")
    ax.legend(loc="best", fontsize=8)
    axes = ("basis 1", "basis 2") if basis is not None else (f"x{int(columns[0])}", f"x{int(columns[1])}")
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    ax.set_title(title or f"{name} over the density of {n:,} rows")
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": "bigdr"})
    plt.close(fig)
    return str(path)
