"""Embed a swiss roll stored on disk with locally linear embedding, and draw every row.

The rows are written to a zarr store chunk by chunk, embedded by
``LocallyLinearEmbedding`` (all rows up to a million, locally linear landmarks
above), written to another store, and drawn by ``bigdr plot``'s binning pass
coloured by the roll coordinate, whatever the number of rows.

Run: python examples/embed_and_draw.py [OUTPUT_DIR] [N_ROWS]   (default 1,000,000 rows)
"""

import sys
import time
from pathlib import Path

import bigdr
from bigdr.datasets import generate
from bigdr.plot import embedding

out = Path(sys.argv[1] if len(sys.argv) > 1 else "bigdr-lle")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
out.mkdir(parents=True, exist_ok=True)
data, emb, picture = out / "roll.zarr", out / "embedding.zarr", out / "embedding.png"
generate("swiss-roll", data, n, noise=0.05, seed=0, overwrite=True)

t0 = time.perf_counter()
lle = bigdr.LocallyLinearEmbedding(n_components=2, n_neighbors=10)
bigdr.write_zarr(lle.fit_transform(f"{data}/X"), emb, overwrite=True)
print(f"{lle.describe()}: {n:,} rows embedded in {time.perf_counter() - t0:.1f} s")

roll = bigdr.as_array(str(data), dataset="coords")[:, 0]
embedding(str(emb), picture, color_by=roll, title=f"LLE of a {n:,}-row swiss roll, coloured by the roll coordinate")
print(f"picture written to {picture}")
