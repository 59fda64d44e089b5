"""PCA of a data set written to disk chunk by chunk, fitted in one pass, extended with new rows.

Run: python examples/pca_out_of_core.py [N_ROWS]
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

import bigdr
from bigdr.datasets import generate, make_spiked_covariance

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
with tempfile.TemporaryDirectory() as tmp:
    store = Path(tmp) / "spiked.zarr"
    generate("spiked", store, n, n_features=200, spikes=(30, 10, 3, 0.05), dtype="float32", seed=1)

    pca = bigdr.PCA("mp").fit(str(store))  # one pass; memory independent of n
    print(f"kept {pca.n_components_} components above the Marchenko-Pastur edge {pca.mp_edge_:.3f}")
    print("variances:", np.round(pca.explained_variance_, 2), "(planted: 31, 11, 4; 1.05 is below the BBP threshold)")

    Y = pca.transform(str(store))  # lazy
    bigdr.write_zarr(Y, Path(tmp) / "embedding.zarr")

    # New rows arrive: merge them into the model without refitting.
    new, _ = make_spiked_covariance(100_000, 200, spikes=(30, 10, 3, 0.05), seed=2, dtype=np.float32)
    pca.partial_fit(new)
    print(f"after partial_fit: {pca.n_samples_seen_} rows seen")

    pca.save(str(Path(tmp) / "model.zarr"))
    print("reloaded:", bigdr.load(str(Path(tmp) / "model.zarr")))
