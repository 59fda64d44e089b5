"""Which embedding keeps the neighbourhoods? Isomap, a diffusion map and PCA of a swiss roll, scored.

The rows are written to a zarr store, embedded three ways, and each embedding
is scored by ``bigdr.metrics.evaluate``: 2,000 query rows ranked among all
rows, every measure with its standard error. The picture shows the R_NX(K)
curves side by side and the co-ranking block of the first.

Run: python examples/compare_embeddings.py [OUTPUT_DIR] [N_ROWS]   (default 1,000,000 rows)
"""

import sys
from pathlib import Path

import bigdr
from bigdr.datasets import generate
from bigdr.metrics import evaluate
from bigdr.plot import quality

out = Path(sys.argv[1] if len(sys.argv) > 1 else "bigdr-compare")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
out.mkdir(parents=True, exist_ok=True)
data = out / "roll.zarr"
generate("swiss-roll", data, n, noise=0.05, seed=0, overwrite=True)
X = f"{data}/X"

models = {
    "Isomap": bigdr.Isomap(n_components=2, n_neighbors=10),
    "DiffusionMap": bigdr.DiffusionMap(n_components=2, n_neighbors=15),
    "PCA": bigdr.PCA(n_components=2),
}
reports = {}
for name, model in models.items():
    emb = out / f"{name.lower()}.zarr"
    bigdr.write_zarr(model.fit_transform(X), emb, overwrite=True)
    reports[name] = evaluate(X, str(emb), (10, 30, 100), n_queries=2000)
    r = reports[name]
    trust, error = r.values["trustworthiness"][30], r.errors["trustworthiness"][30]
    print(f"{name}: trustworthiness at K = 30 {trust:.4f} ± {error:.4f}, AUC of R_NX {r.auc:.3f} ± {r.auc_error:.3f}")
quality(reports, out / "quality.png", title=f"Three embeddings of a {n:,}-row swiss roll")
print(f"picture written to {out / 'quality.png'}")
