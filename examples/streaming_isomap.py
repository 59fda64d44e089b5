"""Keeping an embedding current as batches arrive, with a drift alarm.

A store of 200k swiss-roll rows is embedded by Isomap. Then 20 batches arrive
one after another, as from a daily job: each is appended to the data store,
learnt by the model (``partial_fit``: a local update of its graph and
geodesics, not a refit) and its coordinates are appended to the embedding
store. The last four batches come from a shifted distribution (the roll
continues past the height it was trained on): the drift flag fires on them.
The picture shows the embedding after the last batch, coloured by batch.

Run: python examples/streaming_isomap.py [OUTPUT_DIR] [N_ROWS]   (N_ROWS: the first fit, default 200,000;
each batch is a twentieth of it)
"""

import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import bigdr
from bigdr.datasets import generate, make_swiss_roll

out = Path(sys.argv[1] if len(sys.argv) > 1 else "bigdr-streaming")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
size = n // 20
out.mkdir(parents=True, exist_ok=True)
data, embedding, model_path = out / "data.zarr", out / "embedding.zarr", out / "model.zarr"
generate("swiss-roll", data, n, noise=0.05, seed=0, overwrite=True)

model = bigdr.Isomap(n_components=2, n_neighbors=10, landmarks=128)
bigdr.write_zarr(model.fit_transform(f"{data}/X"), embedding, overwrite=True)
model.save(str(model_path), overwrite=True)
print(f"fitted on {n:,} rows: {model.describe()}")

flags = []
for day in range(20):
    X, coords = (np.asarray(a.compute()) for a in make_swiss_roll(size, noise=0.05, seed=100 + day))
    if day >= 16:  # the last four: the roll goes on above its trained height (0 to 21), 2 more each day
        X[:, 1] = coords[:, 1] = 21.0 + 2.0 * (day - 15) * coords[:, 1] / 21.0
    t0 = time.perf_counter()
    bigdr.append_zarr({"X": X, "coords": coords}, data, source=f"day {day}")
    model.partial_fit(X)  # learns from the batch; model.drift_ says how well it fitted first
    bigdr.append_zarr(model.transform(X), embedding, source=f"day {day}")
    drift = model.drift_
    flags.append(drift["refit_advised"])
    print(
        f"day {day:2d}: {len(X):,} rows in {time.perf_counter() - t0:.1f} s; "
        f"{100 * drift['fraction']:5.1f}% beyond the training 99th percentile"
        + ("  <- refit advised" if drift["refit_advised"] else "")
    )
model.save(str(model_path), overwrite=True)

Y = np.asarray(bigdr.as_array(str(embedding)).compute())
batch = np.r_[np.full(n, -1), np.repeat(np.arange(20), size)]
fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
ax.scatter(*Y[batch < 0][::20].T, s=1, c="0.8", label="initial fit (every 20th row)")
points = ax.scatter(*Y[batch >= 0][::4].T, s=1, c=batch[batch >= 0][::4], cmap="viridis")
fig.colorbar(points, label="batch (16-19: shifted)")
ax.set_title(f"Isomap kept current over 20 batches; drift flag on batches {[i for i, f in enumerate(flags) if f]}")
ax.legend(loc="lower right", markerscale=8)
fig.savefig(out / "streaming.png", bbox_inches="tight")
print(f"picture written to {out / 'streaming.png'}; embedding of {len(Y):,} rows in {embedding}")
