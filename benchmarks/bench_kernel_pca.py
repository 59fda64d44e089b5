"""Kernel PCA (issue 14): exact against scikit-learn, the approximations against exact, and scale from disk.

Data: a 5-D manifold in 20 dimensions (tanh of a random linear lift of
uniform latent points, plus 1% noise), rbf kernel, gamma = 1 / (p Var X)
(bigdr's "scale"), 5 components. Every case runs in a fresh process (peak RSS
of that process); threads, BLAS one thread per dask thread.

exact     20,000 rows: bigdr method="exact" against scikit-learn KernelPCA with
          eigen_solver "arpack" and "randomized": seconds, peak RSS, largest
          relative eigenvalue difference to bigdr.
accuracy  the same 20,000 rows: Nyström (m landmarks) and random Fourier features
          (m features) for m = 500 .. 10,000 against exact: relative error of the
          variance the 5 components capture, largest relative eigenvalue error,
          and the subspace agreement of the embeddings (the smallest singular value
          of the orthonormalised exact and approximate embeddings' product; 1 is
          the same subspace), seconds.
scale     1M and 10M rows (float32 zarr stores): fit, and fit_transform with the
          embedding written to zarr, for Nyström (m = 256) and Fourier (D = 256):
          seconds and peak RSS.

memory    Fourier fit_transform written to zarr at 3M and 20M rows: peak RSS only (run beside
          other work; its seconds are not a timing), to show the peak levels off with n.

Usage: python benchmarks/bench_kernel_pca.py [exact|accuracy|scale|memory|all]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, run_child, run_sections  # noqa: E402

SCRIPT = Path(__file__).resolve()
DIM, INTRINSIC, K = 20, 5, 5
CHUNK = 262_144
SIZES = (500, 1000, 2000, 5000, 10000)
SCALE_WIDTH = 256


def _block(block_id, n, seed=0):
    lift = np.random.default_rng(seed).standard_normal((INTRINSIC, DIM)) / np.sqrt(INTRINSIC)
    b = block_id[0]
    rows = min(CHUNK, n - b * CHUNK)
    rng = np.random.default_rng([seed, b])
    latent = rng.uniform(-1, 1, size=(rows, INTRINSIC))
    return (np.tanh(latent @ lift) + 0.01 * rng.standard_normal((rows, DIM))).astype(np.float32)


def store(n: int) -> Path:
    import dask.array as da

    import bigdr

    path = DATA / f"kpca-manifold-{n}-{DIM}d.zarr"
    if not path.exists():
        chunks = ((CHUNK,) * (n // CHUNK) + ((n % CHUNK,) if n % CHUNK else ()), (DIM,))
        bigdr.write_zarr(
            da.map_blocks(lambda block_id=None: _block(block_id, n), chunks=chunks, dtype=np.float32), path
        )
    return path


def small() -> np.ndarray:
    return _block((0,), 20_000).astype(np.float64)


def gamma_of(X: np.ndarray) -> float:
    return 1.0 / (X.shape[1] * X.var())


def child(args):
    import bigdr

    what = args[0]
    if what == "exact":
        solver = args[1]
        X = small()
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            if solver == "bigdr":
                values = bigdr.KernelPCA(K, kernel="rbf", gamma="scale", method="exact").fit(X).eigenvalues_
            else:
                from sklearn.decomposition import KernelPCA

                model = KernelPCA(K, kernel="rbf", gamma=gamma_of(X), eigen_solver=solver, random_state=0).fit(X)
                values = model.eigenvalues_
            seconds = time.perf_counter() - t0
        return {"solver": solver, "seconds": seconds, "peak_rss_mib": rss.peak / 2**20, "eigenvalues": values.tolist()}
    if what == "approx":
        method = args[1]
        X = small()
        exact = bigdr.KernelPCA(K, kernel="rbf", gamma="scale", method="exact")
        Y_exact = exact.fit_transform(X)
        qa, _ = np.linalg.qr(Y_exact)
        out = []
        for m in SIZES:
            t0 = time.perf_counter()
            model = bigdr.KernelPCA(K, kernel="rbf", gamma="scale", method=method, landmarks=m, n_fourier=m)
            Y = model.fit_transform(X)
            seconds = time.perf_counter() - t0
            qb, _ = np.linalg.qr(Y)
            out.append({
                "method": method,
                "m": m,
                "seconds": seconds,
                "variance_error": float(abs(model.eigenvalues_.sum() / exact.eigenvalues_.sum() - 1)),
                "max_eigenvalue_error": float(np.abs(model.eigenvalues_ / exact.eigenvalues_ - 1).max()),
                "subspace": float(np.linalg.svd(qa.T @ qb, compute_uv=False).min()),
            })  # fmt: skip
        return out
    if what == "scale":
        method, n, write = args[1], int(args[2]), args[3] == "write"
        path = store(n)
        out = Path(tempfile.mkdtemp(dir=DATA)) / "emb.zarr"
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            model = bigdr.KernelPCA(
                K, kernel="rbf", gamma="scale", method=method, landmarks=SCALE_WIDTH, n_fourier=SCALE_WIDTH
            )
            if write:
                bigdr.write_zarr(model.fit_transform(str(path)), out)
            else:
                model.fit(str(path))
            seconds = time.perf_counter() - t0
        shutil.rmtree(out.parent)
        return {"method": method, "rows": n, "write": write, "seconds": seconds, "peak_rss_mib": rss.peak / 2**20}
    raise ValueError(what)


def run_exact():
    rows = [run_child(SCRIPT, "exact", s) for s in ("bigdr", "arpack", "randomized")]
    ref = np.array(rows[0]["eigenvalues"])
    lines = [
        "## Exact kernel PCA, 20,000 x 20 (rbf, 5 components), against scikit-learn\n",
        "| implementation | seconds | peak RSS (MiB) | largest relative eigenvalue difference to bigdr |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        diff = float(np.abs(np.array(r["eigenvalues"]) / ref - 1).max())
        name = "bigdr exact" if r["solver"] == "bigdr" else f"scikit-learn, eigen_solver={r['solver']}"
        lines.append(f"| {name} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} | {diff:.1e} |")
    return rows, "\n".join(lines) + "\n"


def run_accuracy():
    rows = [r for method in ("nystroem", "fourier") for r in run_child(SCRIPT, "approx", method, timeout=3 * 3600)]
    lines = [
        "## Nyström and random Fourier features against exact, 20,000 x 20 (rbf, 5 components)\n",
        "Variance error: relative error of the variance the 5 components capture; subspace: the smallest",
        "cosine of the principal angles between the exact and approximate embeddings (1: the same subspace).\n",
        "| method | m | seconds | variance error | largest eigenvalue error | subspace |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['m']:,} | {r['seconds']:.1f} | {r['variance_error']:.1e} | "
            f"{r['max_eigenvalue_error']:.1e} | {r['subspace']:.4f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_scale():
    rows = [
        run_child(SCRIPT, "scale", method, str(n), write, timeout=4 * 3600)
        for method in ("nystroem", "fourier")
        for n in (1_000_000, 10_000_000)
        for write in ("fit", "write")
    ]
    lines = [
        f"## Nyström and Fourier kernel PCA from disk (m = D = {SCALE_WIDTH}, 5 components, float32 stores)\n",
        "| method | rows | what | seconds | peak RSS (MiB) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        what = "fit_transform, embedding written to zarr" if r["write"] else "fit"
        lines.append(f"| {r['method']} | {r['rows']:,} | {what} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} |")
    return rows, "\n".join(lines) + "\n"


def run_memory():
    rows = [run_child(SCRIPT, "scale", "fourier", str(n), "write", timeout=4 * 3600) for n in (3_000_000, 20_000_000)]
    lines = [
        f"## Peak memory against rows: Fourier (D = {SCALE_WIDTH}), fit_transform written to zarr\n",
        "Run beside the test suite: the peak RSS is the measurement, the seconds are not a timing.\n",
        "| rows | peak RSS (MiB) | seconds (not a timing) |",
        "| --- | --- | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['rows']:,} | {r['peak_rss_mib']:.0f} | {r['seconds']:.1f} |")
    return rows, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["exact", "accuracy", "scale", "memory", "all"], nargs="*", default="all")
    args = ap.parse_args()
    sections = {"exact": run_exact, "accuracy": run_accuracy, "scale": run_scale, "memory": run_memory}
    run_sections("kernel_pca", sections, args.case)


if __name__ == "__main__":
    main()
