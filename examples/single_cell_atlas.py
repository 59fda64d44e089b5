"""A single-cell atlas from an .h5ad file to a diffusion map, the scanpy way, without loading the matrix.

A generated atlas (cell types x gene programs, negative-binomial counts,
``log1p``; :func:`bigdr.datasets.make_cells`) is written as an ``.h5ad`` file
in AnnData's sparse encoding. Then, as a scanpy user would, but out of core:
PCA to 50 components of the sparse ``X`` (centred implicitly, never
densified) written back as ``obsm["X_pca"]``, ``varm["PCs"]`` and
``uns["pca"]``; a diffusion map of those coordinates written as
``obsm["X_diffmap"]`` and ``uns["diffmap_evals"]``; a picture of the first two
principal components coloured by cell type. (The generated cell types are
distinct clusters, so the diffusion map's leading components pick out
clusters, and bigdr says so with a ``DisconnectedGraphWarning``.) scanpy can take it from there
(``sc.pp.neighbors(adata, use_rep="X_pca")``, ``sc.tl.umap``,
``sc.pl.embedding(adata, basis="diffmap")``).

Run: python examples/single_cell_atlas.py [OUTPUT_DIR] [N_CELLS] [N_GENES]
     (default 200,000 cells x 5,000 genes)
"""

import sys
import time
from pathlib import Path

import pandas as pd

import bigdr
from bigdr.datasets import make_cells
from bigdr.io.anndata import write_anndata
from bigdr.plot import embedding

out = Path(sys.argv[1] if len(sys.argv) > 1 else "bigdr-atlas")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
p = int(sys.argv[3]) if len(sys.argv) > 3 else 5_000
out.mkdir(parents=True, exist_ok=True)
cells, picture = out / "cells.h5ad", out / "pca.png"

X, coords = make_cells(n, p, seed=0)
cell_type = coords[:, 0].compute().astype(int)
write_anndata(X, cells, obs=pd.DataFrame({"cell_type": cell_type.astype(str)}), overwrite=True)
print(f"{cells}: {n:,} cells x {p:,} genes, {X.dtype}, sparse")

t0 = time.perf_counter()
pca = bigdr.PCA(50).fit(cells)  # read block by block; X - mean is never formed
bigdr.write_obsm(pca.transform(cells), cells, "X_pca", model=pca, overwrite=True)
print(f"{pca.describe()} in {time.perf_counter() - t0:.1f} s; obsm X_pca, varm PCs, uns pca written")

t0 = time.perf_counter()
X_pca = bigdr.as_array(str(cells), dataset="obsm/X_pca")
dm = bigdr.DiffusionMap(n_components=10, n_neighbors=15).fit(X_pca)
bigdr.write_obsm(dm.transform(X_pca), cells, "X_diffmap", model=dm, overwrite=True)
print(f"diffusion map ({dm.mode_}) in {time.perf_counter() - t0:.1f} s; obsm X_diffmap, uns diffmap_evals written")

title = f"PCA of {n:,} generated cells, by cell type"
embedding(bigdr.as_array(str(cells), dataset="obsm/X_pca"), picture, color_by=cell_type, categorical=True, title=title)
print(f"picture written to {picture}")
