"""Random projection throughput (issue 6).

Cases:

memory  1M x 1000 float32 in memory to 64 dimensions: bigdr's Gaussian and
        sparse projections against one dense matrix product of the same
        shapes (numpy, R generated beforehand: the physical limit) and
        scikit-learn's projections. 3 interleaved rounds, medians.
sparse  200k x 1M CSR store on disk (density 1e-3, 200M nonzeros), sparse
        projection to 64 dimensions written to zarr, at 100k and 200k rows;
        against a plain read pass. Fresh process each.
dense   200k x 20k float32 zarr store (16 GB, chunks 8192 x 4096: chunked
        along both axes), Gaussian projection to 64 dimensions written to
        zarr, at 100k and 200k rows; against a plain read pass. Fresh process
        each.

Usage: python benchmarks/bench_projection.py [memory|sparse|dense|all]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, run_child, run_sections  # noqa: E402

SCRIPT = Path(__file__).resolve()
K = 64
SPARSE_STORE = DATA / "sparse-200k-1M.zarr"
DENSE_STORE = DATA / "dense-200k-20k-f32.zarr"


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_memory():
    from sklearn.random_projection import GaussianRandomProjection as SkG
    from sklearn.random_projection import SparseRandomProjection as SkS
    from threadpoolctl import threadpool_limits

    import bigdr
    from bigdr.random_projection import projection_rows

    rng = np.random.default_rng(0)
    X = np.empty((1_000_000, 1000), dtype=np.float32)
    for s in range(0, len(X), 100_000):
        X[s : s + 100_000] = rng.standard_normal((100_000, 1000), dtype=np.float32)
    R = projection_rows(0, 1000, K, None, 0, np.float32)
    methods = {
        "numpy X @ R (BLAS 2 threads)": lambda: _blas(X, R, 2),
        "numpy X @ R (BLAS 1 thread)": lambda: _blas(X, R, 1),
        "bigdr Gaussian": lambda: bigdr.GaussianRandomProjection(K, random_state=0).fit_transform(X),
        "bigdr sparse (1/sqrt(p))": lambda: bigdr.SparseRandomProjection(K, random_state=0).fit_transform(X),
        "scikit-learn Gaussian": lambda: SkG(K, random_state=0).fit_transform(X),
        "scikit-learn sparse (1/sqrt(p))": lambda: SkS(K, random_state=0).fit_transform(X),
    }
    bigdr.GaussianRandomProjection(K).fit_transform(X[:20_000])  # untimed: imports, thread pools
    runs = {m: [] for m in methods}
    for _ in range(3):
        for m, fn in methods.items():
            with threadpool_limits(2, "blas"):  # bigdr caps BLAS at 1 per dask thread itself
                seconds, Y = timed(fn)
            assert Y.shape == (len(X), K)
            runs[m].append(seconds)
            print(m, seconds, flush=True)
    base = statistics.median(runs["numpy X @ R (BLAS 2 threads)"])
    lines = [
        "## In memory: 1M x 1000 float32 to 64 dimensions (3 interleaved rounds, medians)\n",
        "| method | time | throughput (GB/s of input) | time / one dense product |",
        "| --- | --- | --- | --- |",
    ]
    res = {}
    for m, ts in runs.items():
        med = statistics.median(ts)
        res[m] = {"seconds": ts, "median": med}
        lines.append(f"| {m} | {med:.2f} s | {X.nbytes / med / 1e9:.2f} | {med / base:.2f} |")
    lines.append(
        "\nbigdr runs on dask's threaded scheduler (2 threads, BLAS capped at 1 thread each); the numpy "
        "product is one call with R generated beforehand."
    )
    return res, "\n".join(lines) + "\n"


def _blas(X, R, threads):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads, "blas"):
        return X @ R


def make_sparse_store():
    import scipy.sparse as sp

    from bigdr.io import write_sparse_zarr

    n, p, per_row = 200_000, 1_000_000, 1000

    def blocks():
        for b in range(0, n, 10_000):
            rng = np.random.default_rng([1, b])
            cols = np.sort(rng.integers(0, p, size=(10_000, per_row)), axis=1).ravel().astype(np.int32)
            vals = rng.standard_normal(cols.size, dtype=np.float32)
            yield sp.csr_matrix((vals, cols, np.arange(0, cols.size + 1, per_row)), shape=(10_000, p))

    t, _ = timed(lambda: write_sparse_zarr(blocks(), SPARSE_STORE, p))
    print(f"sparse store written in {t:.0f} s", flush=True)


def make_dense_store():
    import zarr

    n, p = 200_000, 20_000
    arr = zarr.create_array(str(DENSE_STORE), shape=(n, p), chunks=(8192, 4096), dtype="f4", compressors=None)
    t0 = time.perf_counter()
    for s in range(0, n, 8192):
        rng = np.random.default_rng([2, s])
        arr[s : s + 8192] = rng.standard_normal((min(8192, n - s), p), dtype=np.float32)
    print(f"dense store written in {time.perf_counter() - t0:.0f} s", flush=True)


def child(args):
    import bigdr
    from bigdr.random_projection import projection_input
    from bigdr.runtime.compute import compute

    kind, what, rows = args[0], args[1], int(args[2])
    store = SPARSE_STORE if kind == "sparse" else DENSE_STORE
    X = projection_input(str(store))[:rows]
    out = Path(tempfile.mkdtemp(dir=DATA)) / "y.zarr"
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        if what == "read":
            if kind == "sparse":
                compute(X.map_blocks(lambda b: np.array([[b.data.sum()]]), dtype=np.float64, chunks=(1, 1)).sum())
            else:
                compute(X.sum())
        else:
            model = (
                bigdr.SparseRandomProjection(K, random_state=0)
                if kind == "sparse"
                else bigdr.GaussianRandomProjection(K, random_state=0)
            )
            bigdr.write_zarr(model.fit(X).transform(X), out)
        seconds = time.perf_counter() - t0
    shutil.rmtree(out.parent)
    nbytes = store_bytes(store) * rows / 200_000
    return {
        "seconds": seconds,
        "peak_rss_mib": rss.peak / 2**20,
        "input_gb": nbytes / 1e9,
        "chunks": [len(c) for c in X.chunks],
    }


def store_bytes(store):
    return sum(f.stat().st_size for f in Path(store).rglob("*") if f.is_file())


def run_disk(kind):
    if kind == "sparse" and not SPARSE_STORE.exists():
        make_sparse_store()
    if kind == "dense" and not DENSE_STORE.exists():
        make_dense_store()
    res = {}
    for rows in (100_000, 200_000):
        for what in ("read", "project"):
            r = run_child(SCRIPT, kind, what, str(rows), timeout=7200)
            res[f"{rows}/{what}"] = r
            print(kind, rows, what, r, flush=True)
    title = (
        "200k x 1M CSR store (density 1e-3, float32 values, int32 indices), sparse projection (1/sqrt(p))"
        if kind == "sparse"
        else "200k x 20k float32 zarr store (16 GB, chunks 8192 x 4096), Gaussian projection"
    )
    lines = [
        f"## On disk: {title} to {K} dimensions, written to zarr; fresh process each\n",
        "| rows | input on disk | plain read pass | projection + write | ratio | read GB/s | projection GB/s | peak RSS read (MiB) | peak RSS projection (MiB) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rows in (100_000, 200_000):
        r, p = res[f"{rows}/read"], res[f"{rows}/project"]
        lines.append(
            f"| {rows:,} | {p['input_gb']:.1f} GB | {r['seconds']:.1f} s | {p['seconds']:.1f} s | "
            f"{p['seconds'] / r['seconds']:.2f} | {r['input_gb'] / r['seconds']:.2f} | "
            f"{p['input_gb'] / p['seconds']:.2f} | {r['peak_rss_mib']:.0f} | {p['peak_rss_mib']:.0f} |"
        )
    lines.append(
        "\nThe store was written just before, so it is largely in the page cache (24 GiB RAM); "
        "read and projection see the same cache state."
    )
    return res, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["memory", "sparse", "dense", "all"], nargs="*", default="all")
    args = ap.parse_args()
    runners = {"memory": run_memory, "sparse": lambda: run_disk("sparse"), "dense": lambda: run_disk("dense")}
    run_sections("projection", runners, args.case)


if __name__ == "__main__":
    main()
