"""Figures: the scree plot (Cattell 1966) with the Marchenko-Pastur bulk edge."""

from __future__ import annotations

import os

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
