"""Sparse data at single-cell and text scale (issue 32): PCA with implicit centring, TruncatedSVD (LSA).

Data (generated once into ``benchmarks/data``, by :func:`bigdr.datasets.make_cells`
and :func:`bigdr.datasets.make_documents`, written by :func:`bigdr.io.anndata.write_anndata`):

* ``cells-1M``: 1,000,000 cells x 20,000 genes, log1p of negative-binomial counts of
  20 cell types x 30 gene programs, about 3% nonzero, as ``.h5ad`` and as AnnData zarr;
* ``cells-100k``: 100,000 x 10,000 of the same model (its own draw), ``.h5ad``;
* ``tfidf-1M``: 1,000,000 x 100,000 TF-IDF rows of a 100-topic model, 0.1% nonzero, ``.h5ad``.

Sections (``python benchmarks/bench_sparse.py SECTION ...``; ``data`` first):

* ``subset``: the 100k subset, one process each, BLAS on one thread: bigdr PCA (covariance
  and randomized) against scanpy ``sc.pp.pca`` (its default solver) and an exact reference
  (``X^T X`` by scipy, centred, ``scipy.linalg.eigh``: the textbook formula, none of bigdr's
  code); TruncatedSVD against scikit-learn's randomized TruncatedSVD and the exact SVD.
  Time, peak RSS, principal angles.
* ``hvg``: the 2,000 highly variable genes of ``cells-1M`` (``var["highly_variable"]`` in a copy,
  ``cells-1M-hvg.h5ad``): bigdr's PCA of a view of the backed file against scanpy's default
  ``sc.pp.pca``, and a bare read of the file.

Each measurement runs in a fresh process (peak RSS its own); rounds are interleaved
and medians reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, process_peak_mib, run_child, run_sections  # noqa: E402

SCRIPT = Path(__file__).resolve()

#: name -> (generator, rows, width, keyword arguments, files)
DATASETS = {
    "cells-100k": ("cells", 100_000, 10_000, {}, ("h5ad",)),
    "cells-1M": ("cells", 1_000_000, 20_000, {}, ("h5ad", "zarr")),
    "tfidf-1M": ("documents", 1_000_000, 100_000, {"density": 0.001}, ("h5ad",)),
}


def path_of(name: str, kind: str = "h5ad") -> Path:
    return DATA / f"{name}.{kind}"


def make_data(names: list[str]) -> dict:
    """Generate the data sets that are missing; the time each took and its size on disk."""
    import pandas as pd

    from bigdr.datasets import make_cells, make_documents
    from bigdr.io.anndata import open_anndata_csr, write_anndata

    DATA.mkdir(parents=True, exist_ok=True)
    made = {}
    for name in names:
        kind, n, p, kw, files = DATASETS[name]
        fn = make_cells if kind == "cells" else make_documents
        X, coords = fn(n, p, seed=0, **kw)
        first = path_of(name, files[0])
        t0 = time.perf_counter()
        if not first.exists():
            labels: list[np.ndarray] = []

            def blocks(X=X, coords=coords, labels=labels):  # X and its labels from the same pass
                from bigdr.runtime.compute import compute

                xs, cs = X.to_delayed().ravel(), coords.to_delayed().ravel()
                for i in range(0, len(xs), 2):
                    got = compute(*xs[i : i + 2], *cs[i : i + 2])
                    labels.extend(c[:, 0] for c in got[len(got) // 2 :])
                    yield from got[: len(got) // 2]

            write_anndata(blocks(), first, n_features=p)
            label = "cell_type" if kind == "cells" else "tokens"
            obs = pd.DataFrame({label: np.concatenate(labels).astype(int)}, index=pd.RangeIndex(n).astype(str))
            import h5py
            from anndata.io import write_elem

            with h5py.File(first, "r+") as f:
                del f["obs"]
                write_elem(f, "obs", obs)
        for other in files[1:]:  # the same matrix, copied block by block from the first file
            if not path_of(name, other).exists():
                write_anndata(open_anndata_csr(str(first)), path_of(name, other))
        made[name] = {"seconds": time.perf_counter() - t0, "files": [str(path_of(name, f)) for f in files]}
        print(name, made[name], flush=True)
    return made


#: One BLAS thread in every child (the issue's rule: one process, BLAS on one thread).
ONE_BLAS = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def child(spec: dict) -> dict:
    """One measurement in this fresh process: time, peak RSS, and the components saved to ``spec['out']``."""
    import dask

    task, path, k = spec["task"], spec.get("path", ""), spec.get("k", 0)
    dask.config.set(scheduler="threads", num_workers=spec.get("threads", 1))
    result: dict = {}
    t0 = time.perf_counter()
    V: np.ndarray | None = None
    if task == "floor":
        return floor(path, spec["width"], spec.get("passes", 2))
    if task.startswith("scanpy-") and task != "scanpy-pca":
        return scanpy_1m(spec)
    if task.startswith("lsa-"):
        return lsa_child(spec)
    if task == "newcomer":
        return newcomer_child(spec)
    if task.startswith("hvg-"):
        return hvg_child(spec)
    if task in ("bigdr-pca", "bigdr-tsvd"):
        import bigdr

        if spec.get("float64"):  # the same matrix stored as float64: what float32 storage costs the components
            from bigdr.io.anndata import open_anndata_csr

            path = open_anndata_csr(path).astype(np.float64)

        pass_times: list[float] = []
        widths: list[int] = []
        if spec.get("time_passes"):  # time each product pass (one apply of the operator) inside the fit
            import bigdr.blockwise.linalg as linalg

            krylov = linalg.block_krylov_eigh

            def timed(apply, *args, **kwargs):
                def measured(Z):
                    t = time.perf_counter()
                    product = apply(Z)
                    pass_times.append(time.perf_counter() - t)
                    widths.append(int(Z.shape[1]))
                    return product

                return krylov(measured, *args, **kwargs)

            linalg.block_krylov_eigh = timed
        if task == "bigdr-pca":
            model = bigdr.PCA(k, svd_solver=spec["solver"], random_state=0)
            result["estimate_mib"] = model.estimate_memory(path).total / 2**20
            base = process_peak_mib()
            if spec.get("cluster"):
                from distributed import Client, LocalCluster

                with (
                    LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=spec["cluster"],
                                 host="127.0.0.1", dashboard_address=None) as cluster,
                    Client(cluster) as client,
                ):  # fmt: skip
                    from _harness import WorkerPeakRSS

                    with WorkerPeakRSS(client) as workers:
                        model.fit(path)
                    result["worker_peaks_mib"] = workers.peaks_mib
            else:
                model.fit(path)
            result.update(n_iter=model.n_iter_, angle_estimate=model.angle_, solver=model.svd_solver_)
            result["rss_before_fit_mib"] = base
            if pass_times:
                result["pass_seconds"], result["block"] = pass_times, max(widths)
        else:
            model = bigdr.TruncatedSVD(k, algorithm=spec["solver"], random_state=0, tol=spec.get("tol", 0.0)).fit(path)
        V, variances = model.components_, model.explained_variance_
        if task == "bigdr-tsvd":  # compared by squared singular values, as the exact SVD's eigenvalues
            variances = model.singular_values_.astype(np.float64) ** 2
    else:
        import anndata

        adata = anndata.read_h5ad(path)
        result["read_seconds"] = time.perf_counter() - t0
        X = adata.X
        if task == "scanpy-pca":
            import scanpy as sc

            sc.pp.pca(adata, n_comps=k, random_state=0)  # its default solver
            V, variances = adata.varm["PCs"].T, adata.uns["pca"]["variance"]
            result["solver"] = "scanpy default"
        elif task == "sklearn-tsvd":
            from sklearn.decomposition import TruncatedSVD

            model = TruncatedSVD(k, random_state=0).fit(X)  # randomized, n_iter=5: its defaults
            V, variances = model.components_, model.singular_values_.astype(np.float64) ** 2
        else:  # the exact references: X^T X by scipy, centred for PCA, and LAPACK's eigh
            import scipy.linalg

            n = X.shape[0]
            X = X.astype(np.float64)  # a float32 product loses the reference's accuracy (1e-2 rad at 50)
            G = (X.T @ X).toarray()
            mean = np.asarray(X.sum(axis=0), dtype=np.float64).ravel() / n
            if task == "exact-pca":
                G -= n * np.outer(mean, mean)
            values, vectors = scipy.linalg.eigh(G, subset_by_index=[G.shape[0] - k - 1, G.shape[0] - 1])
            V = vectors[:, ::-1][:, :k].T
            result["spectrum"] = (values[::-1] / (n - 1)).tolist()  # k + 1 values: the gap after k
            variances = values[::-1][:k] / (n - 1) if task == "exact-pca" else values[::-1][:k]
    result["seconds"] = time.perf_counter() - t0
    result["peak_rss_mib"] = process_peak_mib()
    if V is None:
        return result
    np.save(spec["out"], np.asarray(V, dtype=np.float64))
    result["variances"] = np.asarray(variances, dtype=np.float64).tolist()
    return result


def floor(path: str, width: int, passes: int) -> dict:
    """The floor of a pass: read every CSR block of ``path`` and compute ``B^T (B Z)`` for a dense ``Z`` of
    ``width`` columns, summed over blocks; the same dask threads, nothing else. Also a read-only pass and
    a column-sums pass (what the column statistics cost)."""
    import operator

    import dask

    from bigdr.blockwise.reduce import tree_reduce
    from bigdr.core.sparse_products import centred_normal_product
    from bigdr.io.anndata import open_anndata_csr
    from bigdr.runtime.compute import compute

    X = open_anndata_csr(path)
    Z = np.random.default_rng(0).standard_normal((X.shape[1], width))
    out: dict = {}
    t0 = time.perf_counter()
    compute(tree_reduce(X, lambda b: float(b.nnz), operator.add))
    out["read_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    compute(tree_reduce(X, lambda b: np.asarray(b.sum(axis=0)), operator.add))
    out["column_sums_seconds"] = time.perf_counter() - t0
    zero = np.zeros(X.shape[1])
    products = {  # the floor is the fused kernel bigdr uses; scipy's two products are reported beside it
        "scipy_product_pass_seconds": lambda b, Z: np.asarray(b.T @ (b @ Z)),
        "product_pass_seconds": lambda b, Z: centred_normal_product(b, Z, zero),
    }
    for name, product in products.items():
        times = []
        for _ in range(passes):
            t0 = time.perf_counter()
            compute(tree_reduce(X, product, operator.add, shared=(dask.delayed(Z),)))
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    out["peak_rss_mib"] = process_peak_mib()
    return out


def largest_angle(A: np.ndarray, B: np.ndarray) -> float:
    """Largest principal angle (radians) between the row spaces of A and B, from its sine."""
    Qa, Qb = np.linalg.qr(A.T)[0], np.linalg.qr(B.T)[0]
    return float(np.arcsin(min(1.0, np.linalg.norm(Qb - Qa @ (Qa.T @ Qb), 2))))


def _measure(specs: dict[str, dict], rounds: int) -> dict[str, dict]:
    """Each spec in a fresh process, ``rounds`` times interleaved; medians, and the last components."""
    import tempfile

    runs: dict[str, list[dict]] = {name: [] for name in specs}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        components = {}
        for r in range(rounds):
            for name, spec in specs.items():
                if r > 0 and spec.get("once"):
                    continue
                out = str(Path(tmp) / f"{name}.npy")
                runs[name].append(run_child(SCRIPT, json.dumps({**spec, "out": out}), env=ONE_BLAS, timeout=7200))
                components[name] = np.load(out)
                print(name, {k: v for k, v in runs[name][-1].items() if k not in ("variances", "spectrum")}, flush=True)
    summary = {}
    for name, got in runs.items():
        last = got[-1]
        summary[name] = {
            **{k: v for k, v in last.items() if k not in ("seconds", "peak_rss_mib")},
            "seconds": statistics.median(g["seconds"] for g in got),
            "seconds_all": [g["seconds"] for g in got],
            "peak_rss_mib": max(g["peak_rss_mib"] for g in got),
            "components": components[name],
        }
    return summary


def subset(rounds: int) -> tuple[dict, str]:
    path, k = str(path_of("cells-100k")), 50
    pca = {
        "exact": {"task": "exact-pca", "once": True},
        "scanpy sc.pp.pca (default)": {"task": "scanpy-pca"},
        "bigdr PCA covariance, 2 threads (one run)": {
            "task": "bigdr-pca",
            "solver": "covariance",
            "threads": 2,
            "once": True,
        },
        "bigdr PCA covariance, float64 data, 2 threads (one run)": {
            "task": "bigdr-pca",
            "solver": "covariance",
            "threads": 2,
            "once": True,
            "float64": True,
        },
        "bigdr PCA auto (randomized), 1 thread": {"task": "bigdr-pca", "solver": "auto"},
        "bigdr PCA auto (randomized), 2 threads": {"task": "bigdr-pca", "solver": "auto", "threads": 2},
    }
    svd = {
        "exact SVD": {"task": "exact-svd", "once": True},
        "scikit-learn TruncatedSVD (randomized, defaults)": {"task": "sklearn-tsvd"},
        "bigdr TruncatedSVD randomized, 1 thread": {"task": "bigdr-tsvd", "solver": "randomized"},
        "bigdr TruncatedSVD randomized, 2 threads": {"task": "bigdr-tsvd", "solver": "randomized", "threads": 2},
        "bigdr TruncatedSVD randomized, tol=1e-8, 2 threads": {
            "task": "bigdr-tsvd",
            "solver": "randomized",
            "threads": 2,
            "tol": 1e-8,
        },
    }
    got = _measure({n: {**s, "path": path, "k": k} for n, s in {**pca, **svd}.items()}, rounds)
    spectrum = got["exact"]["spectrum"]
    rows, out = [], {}
    for group, ref in ((pca, "exact"), (svd, "exact SVD")):
        exact = got[ref]["components"]
        for name in group:
            g = got[name]
            angle = largest_angle(g["components"], exact)
            angle10 = largest_angle(g["components"][:10], exact[:10])
            err = float(np.max(np.abs(np.array(g["variances"]) / np.array(got[ref]["variances"]) - 1)))
            out[name] = {**{k2: v for k2, v in g.items() if k2 != "components"}, "angle_top50": angle,
                         "angle_top10": angle10, "variance_rel_error": err}  # fmt: skip
            extra = f"{g['n_iter']} passes, est. {g['angle_estimate']:.1e}" if "n_iter" in g else ""
            rows.append(
                f"| {name} | {g['seconds']:.1f} | {g['peak_rss_mib'] / 1024:.2f} | {angle:.1e} | {angle10:.1e} | "
                f"{err:.1e} | {extra} |"
            )
    scanpy_t = out["scanpy sc.pp.pca (default)"]["seconds"]
    ratio = out["bigdr PCA auto (randomized), 2 threads"]["seconds"] / scanpy_t
    md = (
        "## 100,000 x 10,000 log-counts (`cells-100k.h5ad`), top 50 components\n\n"
        "Each row a fresh process, BLAS on one thread; median of the rounds (seconds), peak RSS of the process "
        "(GiB). bigdr reads the `.h5ad` file lazily, block by block; scanpy and scikit-learn read it whole "
        "first (their time includes the read, given apart in the JSON). Angles: largest principal angle "
        "(radians) to the exact reference over the top 50 and the top 10 components; variance error: largest "
        "relative error of the explained variances (PCA) or of the squared singular values (SVD).\n\n"
        "| method | time (s) | peak RSS (GiB) | angle, top 50 | angle, top 10 | variance error | randomized |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n\n"
        f"Spectrum of the exact covariance at components 49, 50, 51: {spectrum[48]:.4g}, {spectrum[49]:.4g}, "
        f"{spectrum[50]:.4g} (gap after 50: {100 * (1 - spectrum[50] / spectrum[49]):.1f}%). "
        f"bigdr PCA (auto, 2 threads) / scanpy sc.pp.pca time: {ratio:.2f}.\n"
    )
    return {"rounds": rounds, "results": out, "spectrum_top51": spectrum}, md


def scanpy_1m(spec: dict) -> dict:
    """scanpy on the 1M file: in memory (``read_h5ad`` then ``sc.pp.pca``) or its dask path (lazy CSR chunks)."""
    import anndata
    import scanpy as sc

    t0 = time.perf_counter()
    if spec["task"] == "scanpy-memory":
        adata = anndata.read_h5ad(spec["path"])
    else:
        import h5py
        from anndata.experimental import read_elem_lazy

        f = h5py.File(spec["path"], "r")
        adata = anndata.AnnData(X=read_elem_lazy(f["X"]))
    read = time.perf_counter() - t0
    sc.pp.pca(adata, n_comps=spec["k"], random_state=0)
    pcs = adata.obsm["X_pca"]
    if hasattr(pcs, "compute"):
        pcs = pcs.compute()
    return {"read_seconds": read, "seconds": time.perf_counter() - t0, "peak_rss_mib": process_peak_mib()}


def atlas_scanpy_dask(limit: float = 1800.0) -> tuple[dict, str]:
    """scanpy's dask path on the 1M file (``sc.pp.pca`` on lazy CSR chunks), stopped after ``limit`` seconds.

    Run as a plain child so that its exit status and peak RSS are known even when the kernel kills it.
    """
    import os
    import resource
    import subprocess

    spec = {"task": "scanpy-dask", "path": str(path_of("cells-1M")), "k": 50, "threads": 2, "out": ""}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(SCRIPT), "child", json.dumps(spec)], capture_output=True,
                              text=True, env={**os.environ, **ONE_BLAS}, timeout=limit)  # fmt: skip
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20  # GiB (ru_maxrss is KiB on Linux)
    if code == 0:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        result = f"{out['seconds']:.0f} s, peak RSS {out['peak_rss_mib'] / 1024:.2f} GiB"
    elif code is None:
        out = {"failed": f"stopped after {limit:.0f} s", "seconds": seconds, "peak_rss_gib": peak}
        result = f"not finished after {limit / 60:.0f} minutes (stopped), peak RSS {peak:.1f} GiB"
    else:
        how = "killed by signal 9 (the kernel's out-of-memory killer)" if code == -9 else f"exit status {code}"
        out = {"failed": how, "seconds": seconds, "peak_rss_gib": peak, "stderr": proc.stderr[-800:]}
        result = f"{how} after {seconds:.0f} s at a peak RSS of {peak:.1f} GiB, with the machine's 23.5 GiB in use"
    print("scanpy-dask", out, flush=True)
    md = (
        "## scanpy's dask path on `cells-1M.h5ad`\n\n"
        "`sc.pp.pca(adata, n_comps=50)` on `anndata.experimental.read_elem_lazy` CSR chunks (scanpy 1.11: the "
        "20,000 x 20,000 covariance by `covariance_eigh`, then its eigendecomposition), 2 dask threads, BLAS on "
        f"one thread per thread: {result}.\n"
    )
    return out, md


def atlas(rounds: int, quick: bool = False) -> tuple[dict, str]:
    """1M x 20,000 from the .h5ad on disk: bigdr's passes against the floor, scanpy's two paths, a 2-worker cluster."""
    import tempfile

    path, k = str(path_of("cells-1M")), 50
    out: dict = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        two = {**ONE_BLAS}
        spec = {"task": "bigdr-pca", "solver": "auto", "path": path, "k": k, "threads": 2, "time_passes": True}
        out["bigdr"] = run_child(SCRIPT, json.dumps({**spec, "out": f"{tmp}/single.npy"}), env=two, timeout=14400)
        print("bigdr", out["bigdr"], flush=True)
        width = out["bigdr"]["block"]  # the floor multiplies by as many columns as bigdr's Krylov block
        out["floor"] = run_child(SCRIPT, json.dumps({"task": "floor", "path": path, "k": k, "width": width,
                                                     "threads": 2, "out": ""}), env=two, timeout=7200)  # fmt: skip
        print("floor", out["floor"], flush=True)
        cluster = {**spec, "cluster": "2GiB", "out": f"{tmp}/cluster.npy"}
        skip = {"failed": "not run this time (--quick)"}
        try:
            if quick:
                raise RuntimeError(skip["failed"])
            out["cluster"] = run_child(SCRIPT, json.dumps(cluster), env=two, timeout=14400)
            out["cluster"]["angle_to_single"] = largest_angle(
                np.load(f"{tmp}/cluster.npy"), np.load(f"{tmp}/single.npy")
            )
        except RuntimeError as exc:
            out["cluster"] = {"failed": str(exc)[-800:]}
        print("cluster", out["cluster"], flush=True)
        # scanpy's dask path (sc.pp.pca on lazy CSR chunks: covariance_eigh, the 20,000 x 20,000 covariance and
        # its eigendecomposition, about 18 minutes on one core by the measurement in docs/pca.md) is left out.
        for task in ("scanpy-memory",):
            try:
                if quick:
                    raise RuntimeError(skip["failed"])
                out[task] = run_child(SCRIPT, json.dumps({"task": task, "path": path, "k": k, "out": ""}),
                                      env=ONE_BLAS, timeout=14400)  # fmt: skip
            except RuntimeError as exc:
                out[task] = {"failed": str(exc)[-800:]}
            print(task, out[task], flush=True)
    b, f = out["bigdr"], out["floor"]
    passes = len(b["pass_seconds"])
    per_pass = statistics.median(b["pass_seconds"])  # each product pass, timed inside the fit
    out["per_pass_seconds"], out["per_pass_over_floor"] = per_pass, per_pass / f["product_pass_seconds"]
    out["outside_passes_seconds"] = b["seconds"] - sum(b["pass_seconds"])

    def row(name: str, r: dict) -> str:
        if "failed" in r:
            return f"| {name} | failed: {r['failed'].strip().splitlines()[-1][:160]} | | |"
        peak = max([r["peak_rss_mib"], *r.get("worker_peaks_mib", [])]) / 1024
        return f"| {name} | {r['seconds']:.0f} | {peak:.2f} | {r.get('read_seconds', float('nan')):.0f} |"

    md = (
        "## 1,000,000 x 20,000 log-counts from `cells-1M.h5ad` (3% nonzero; 4.8 GB of CSR), top 50 components\n\n"
        "One run each (each takes minutes), 2 dask threads for bigdr and the floor, BLAS on one thread per "
        f"thread. The floor reads the same CSR blocks and computes `B^T (B Z)` for a dense `Z` of the same width "
        f"(bigdr's Krylov block, {width} columns) with nothing else, on the same threads.\n\n"
        "| run | time (s) | peak RSS (GiB) | read (s) |\n| --- | --- | --- | --- |\n"
        + "\n".join(
            [
                row("bigdr PCA(50), auto, from the file", b),
                row("bigdr PCA(50), 2-worker local cluster, 2 GiB each (peak: largest process)", out["cluster"]),
                row("scanpy sc.pp.pca, in memory (read_h5ad first)", out["scanpy-memory"]),
            ]
        )  # fmt: skip
        + f"\n\nbigdr: solver {b['solver']}, {passes} product passes of {width} columns (the first also reads the "
        f"column statistics); estimated "
        f"angle to the exact components {b['angle_estimate']:.2g} rad; memory estimate {b['estimate_mib'] / 1024:.2f} "
        f"GiB against a measured peak of {b['peak_rss_mib'] / 1024:.2f} GiB ({b['rss_before_fit_mib'] / 1024:.2f} GiB "
        f"before the fit).\n\n"
        f"Floor: read-only pass {f['read_seconds']:.1f} s, column sums {f['column_sums_seconds']:.1f} s, one product "
        f"pass with bigdr's fused kernel {f['product_pass_seconds']:.1f} s (scipy's `B.T @ (B @ Z)`: "
        f"{f.get('scipy_product_pass_seconds', float('nan')):.1f} s). bigdr per product pass, timed inside the "
        f"fit (median of {passes}): {per_pass:.1f} s, {out['per_pass_over_floor']:.2f}x the floor. The rest of the "
        f"fit, {out['outside_passes_seconds']:.0f} s, is the Krylov basis's "
        f"orthogonalisation and Rayleigh-Ritz steps in memory, and start-up.\n"
    )
    if "angle_to_single" in out["cluster"]:
        md += (
            f"\nCluster against single process: largest principal angle {out['cluster']['angle_to_single']:.1e} rad.\n"
        )
    return out, md


#: Highly variable genes flagged in ``cells-1M-hvg.h5ad`` (scanpy's usual ``n_top_genes``).
N_HVG = 2_000


def hvg_data() -> Path:
    """``cells-1M`` with scanpy's ``var["highly_variable"]`` (the 2,000 genes of largest variance, from one pass
    of bigdr's column statistics) in a copy of the ``.h5ad``: the file a scanpy user has after
    ``sc.pp.highly_variable_genes``. Made once."""
    path = path_of("cells-1M-hvg")
    if path.exists():
        return path
    import shutil

    import h5py
    from anndata.io import read_elem, write_elem

    from bigdr.blockwise.reduce import column_statistics
    from bigdr.io.sparse import as_sparse_array
    from bigdr.runtime.compute import compute

    source = path_of("cells-1M")
    (col,) = compute(column_statistics(as_sparse_array(str(source))))
    flags = np.zeros(col.mean.shape[0], dtype=bool)
    flags[np.argsort(col.scatter)[-N_HVG:]] = True
    partial = path.with_name(path.name + ".partial")
    shutil.copyfile(source, partial)
    with h5py.File(partial, "r+") as f:
        var = read_elem(f["var"])
        var["highly_variable"] = flags
        del f["var"]
        write_elem(f, "var", var)
    partial.rename(path)
    return path


def hvg_child(spec: dict) -> dict:
    """PCA of the highly variable genes of the 1M file: bigdr on a view of the backed file, scanpy's default
    ``sc.pp.pca`` in memory, or a bare read of the file (all genes; then the genes taken from each block)."""
    import anndata
    import dask

    dask.config.set(scheduler="threads", num_workers=spec["threads"])
    t0 = time.perf_counter()
    out: dict = {}
    if spec["task"] == "hvg-read":
        import operator

        from bigdr.blockwise.reduce import tree_reduce
        from bigdr.io.anndata import open_anndata_csr
        from bigdr.runtime.compute import compute

        X = open_anndata_csr(spec["path"])
        compute(tree_reduce(X, lambda b: float(b.nnz), operator.add))
        out["read_seconds"] = time.perf_counter() - t0
        genes = np.flatnonzero(anndata.read_h5ad(spec["path"], backed="r").var["highly_variable"].to_numpy())
        t1 = time.perf_counter()
        compute(tree_reduce(X, lambda b: float(b[:, genes].nnz), operator.add))
        out["select_seconds"] = time.perf_counter() - t1
        return {**out, "seconds": out["read_seconds"], "peak_rss_mib": process_peak_mib()}
    if spec["task"] == "hvg-bigdr":
        import psutil
        from _harness import PeakRSS

        import bigdr
        from bigdr.runtime.compute import compute

        backed = anndata.read_h5ad(spec["path"], backed="r")
        view = backed[:, backed.var["highly_variable"].to_numpy()]
        model = bigdr.PCA(spec["k"], random_state=0)
        out["estimate_mib"] = model.estimate_memory(view).total / 2**20
        before = psutil.Process().memory_info().rss
        with PeakRSS() as rss:
            model.fit(view)
        out["fit_seconds"] = time.perf_counter() - t0
        out["fit_above_before_mib"] = (rss.peak - before) / 2**20
        (Y,) = compute(model.transform(view))
        out["transform_seconds"] = time.perf_counter() - t0 - out["fit_seconds"]
        out["solver"], out["genes"] = model.svd_solver_, int(model.n_features_in_)
        V = model.components_
    else:
        import scanpy as sc

        adata = anndata.read_h5ad(spec["path"])
        out["read_seconds"] = time.perf_counter() - t0
        sc.pp.pca(adata, n_comps=spec["k"], random_state=0)  # its default: var['highly_variable'], as flagged
        mask = adata.var["highly_variable"].to_numpy()
        out["mask_var"] = str(adata.uns["pca"]["params"]["mask_var"])
        V = np.asarray(adata.varm["PCs"])[mask].T
    np.save(spec["out"], np.asarray(V, dtype=np.float64))
    return {**out, "seconds": time.perf_counter() - t0, "peak_rss_mib": process_peak_mib()}


def hvg(rounds: int) -> tuple[dict, str]:
    """scanpy's everyday PCA: the highly variable genes of the 1M-cell file, bigdr against scanpy.

    ``rounds`` rounds of the three runs in turn (read, bigdr, scanpy), each in a fresh process; medians."""
    import statistics
    import tempfile

    t0 = time.perf_counter()
    path = hvg_data()
    out: dict = {"data_seconds": time.perf_counter() - t0, "rounds": []}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for _ in range(rounds):
            runs = {}
            for task, threads in (("hvg-read", 2), ("hvg-bigdr", 2), ("hvg-scanpy", 1)):
                spec = {"task": task, "path": str(path), "k": 50, "threads": threads, "out": f"{tmp}/{task}.npy"}
                runs[task] = run_child(SCRIPT, json.dumps(spec), env=ONE_BLAS, timeout=7200)
                print(task, runs[task], flush=True)
            runs["angle"] = largest_angle(np.load(f"{tmp}/hvg-bigdr.npy"), np.load(f"{tmp}/hvg-scanpy.npy"))
            runs["time_ratio"] = runs["hvg-bigdr"]["seconds"] / runs["hvg-scanpy"]["seconds"]
            out["rounds"].append(runs)

    def med(task: str, key: str) -> float:
        return statistics.median(r[task][key] for r in out["rounds"])

    r, b, c = ({key: med(task, key) for key in out["rounds"][0][task] if isinstance(out["rounds"][0][task][key], float)}
               for task in ("hvg-read", "hvg-bigdr", "hvg-scanpy"))  # fmt: skip
    first = out["rounds"][0]
    ratios = [x["time_ratio"] for x in out["rounds"]]
    md = (
        f"## The highly variable genes of `cells-1M.h5ad`: {N_HVG:,} of 20,000, top 50 components\n\n"
        f"The 1M file with scanpy's `var['highly_variable']` set on the {N_HVG:,} genes of largest variance "
        "(`cells-1M-hvg.h5ad`), what a scanpy user has after `sc.pp.highly_variable_genes`. bigdr: "
        "`PCA(50).fit` then `transform` of the view `adata[:, adata.var['highly_variable']]` of the backed file "
        "(the command line's default does the same), 2 dask threads; scanpy: `read_h5ad` then its default "
        "`sc.pp.pca(adata, n_comps=50)`, which takes those genes itself. Each run in a fresh process, BLAS on "
        f"one thread per thread; {rounds} rounds of the three runs in turn, medians (the file in the page "
        "cache after the first read).\n\n"
        "| run | time (s) | peak RSS (GiB) | notes |\n| --- | --- | --- | --- |\n"
        f"| read every block of the file (all genes) | {r['read_seconds']:.1f} | {r['peak_rss_mib'] / 1024:.2f} | "
        f"the same read keeping the {N_HVG:,} genes of each block: {r['select_seconds']:.1f} s |\n"
        f"| bigdr PCA(50) of the view, fit + transform | {b['seconds']:.1f} | {b['peak_rss_mib'] / 1024:.2f} | "
        f"fit {b['fit_seconds']:.1f} s (solver {first['hvg-bigdr']['solver']}, {first['hvg-bigdr']['genes']:,} "
        f"genes), transform {b['transform_seconds']:.1f} s; memory estimate {b['estimate_mib'] / 1024:.2f} GiB "
        f"against the fit's measured peak above the RSS before it, {b['fit_above_before_mib'] / 1024:.2f} GiB |\n"
        f"| scanpy sc.pp.pca, in memory | {c['seconds']:.1f} | {c['peak_rss_mib'] / 1024:.2f} | read_h5ad "
        f"{c['read_seconds']:.1f} s; mask_var {first['hvg-scanpy']['mask_var']!r} |\n\n"
        f"Largest principal angle between the two sets of components: {first['angle']:.1e} rad. Time ratio "
        f"bigdr / scanpy per round: {', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f}); "
        f"memory ratio {b['peak_rss_mib'] / c['peak_rss_mib']:.2f}.\n"
    )
    return out, md


def lsa_child(spec: dict) -> dict:
    """LSA (100 factors) of the TF-IDF rows by one library: on the 1M file (time, memory) or a 100k-row subset."""
    task, k, path = spec["task"], spec["k"], spec["path"]
    t0 = time.perf_counter()
    if spec.get("subset"):
        from bigdr.io.anndata import open_anndata_csr

        X = open_anndata_csr(path)[: spec["subset"]].compute()
    elif task != "lsa-bigdr":
        import anndata

        X = anndata.read_h5ad(path).X
    else:
        X = path
    read = time.perf_counter() - t0
    if task == "lsa-bigdr":
        import bigdr

        model = bigdr.TruncatedSVD(k, random_state=0).fit(X)
        V, s = model.components_, model.singular_values_
    elif task == "lsa-sklearn":
        from sklearn.decomposition import TruncatedSVD

        model = TruncatedSVD(k, random_state=0).fit(X)
        V, s = model.components_, model.singular_values_
    elif task == "lsa-gensim":
        from gensim.matutils import Sparse2Corpus
        from gensim.models import LsiModel

        corpus = Sparse2Corpus(X, documents_columns=False)
        model = LsiModel(corpus, num_topics=k, id2word={i: str(i) for i in range(X.shape[1])}, random_seed=0)
        V, s = model.projection.u.T, model.projection.s
    else:  # the exact reference: ARPACK to machine precision
        from scipy.sparse.linalg import svds

        v0 = np.random.default_rng(0).uniform(-1, 1, min(X.shape))
        _, s, V = svds(X.astype(np.float64), k=k, tol=0, v0=v0)
        order = np.argsort(s)[::-1]
        s, V = s[order], V[order]
    np.save(spec["out"], np.asarray(V, dtype=np.float64))
    return {"read_seconds": read, "seconds": time.perf_counter() - t0, "peak_rss_mib": process_peak_mib(),
            "singular_values": np.asarray(s, dtype=np.float64).tolist()}  # fmt: skip


def lsa(rounds: int) -> tuple[dict, str]:
    """LSA of the 1M x 100,000 TF-IDF rows: bigdr, scikit-learn and gensim; accuracy on a 100k-row subset."""
    import tempfile

    path, k, sub = str(path_of("tfidf-1M")), 100, 100_000
    libraries = {"bigdr TruncatedSVD": "lsa-bigdr", "scikit-learn TruncatedSVD": "lsa-sklearn",
                 "gensim LsiModel": "lsa-gensim"}  # fmt: skip
    out: dict = {"full": {}, "subset": {}}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for part, extra in (("subset", {"subset": sub}), ("full", {})):
            tasks = {**libraries, **({"exact (ARPACK, tol=0)": "lsa-exact"} if part == "subset" else {})}
            for name, task in tasks.items():
                spec = {"task": task, "path": path, "k": k, "threads": 2, "out": f"{tmp}/{part}-{task}.npy", **extra}
                try:
                    out[part][name] = run_child(SCRIPT, json.dumps(spec), env=ONE_BLAS, timeout=14400)
                    out[part][name]["V"] = np.load(spec["out"])
                except RuntimeError as exc:
                    out[part][name] = {"failed": str(exc)[-800:]}
                print(part, name, {a: b for a, b in out[part][name].items() if a not in ("V", "singular_values")})
        exact = out["subset"]["exact (ARPACK, tol=0)"]
        rows = []
        for name in libraries:
            f, s_ = out["full"][name], out["subset"][name]
            if "failed" in s_ or "failed" in f:
                rows.append(f"| {name} | failed | | | | |")
                continue
            s_["angle_top100"] = largest_angle(s_.pop("V"), exact["V"])
            s_["angle_top10"] = largest_angle(np.load(f"{tmp}/subset-{libraries[name]}.npy")[:10], exact["V"][:10])
            rel = np.abs(np.array(s_["singular_values"]) / np.array(exact["singular_values"]) - 1)
            s_["sv_rel_error_max"], s_["sv_rel_error_top10"] = float(rel.max()), float(rel[:10].max())
            f.pop("V", None)
            rows.append(f"| {name} | {f['seconds']:.0f} | {f['peak_rss_mib'] / 1024:.2f} | {s_['angle_top10']:.1e} | "
                        f"{s_['angle_top100']:.1e} | {s_['sv_rel_error_top10']:.1e} / {s_['sv_rel_error_max']:.1e} |")  # fmt: skip
        exact.pop("V", None)
        for r in out["full"].values():
            r.pop("V", None)
    sv = exact["singular_values"]
    md = (
        "## LSA: 1,000,000 x 100,000 TF-IDF rows (`tfidf-1M.h5ad`, 0.1% nonzero), 100 factors\n\n"
        "Time and peak RSS on the 1M file, one run each (BLAS on one thread; bigdr on 2 dask threads, reading "
        "the file block by block; scikit-learn and gensim read it whole first, read included). Accuracy of "
        "each library fitted on the first 100,000 rows, against ARPACK's SVD to machine precision (tol=0): "
        "largest principal angle (rad) of the top 10 and top 100 right singular vectors, and the largest "
        "relative error of the singular values (top 10 / all 100). Each library with its defaults.\n\n"
        "| library | time, 1M (s) | peak RSS, 1M (GiB) | angle, top 10 | angle, top 100 | singular values |\n"
        "| --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n\n"
        f"Exact singular values of the subset at 10, 99, 100: {sv[9]:.4g}, {sv[98]:.4g}, {sv[99]:.4g}.\n"
    )
    return out, md


def newcomer_child(spec: dict) -> dict:
    """One newcomer's case in a fresh process."""
    import warnings

    import bigdr
    from bigdr.datasets import make_cells, make_documents

    case, out = spec["case"], {}
    if case == "flat":  # one cell type, no programs: log-counts whose spectrum has no structure
        X = make_cells(50_000, 5_000, n_types=1, n_programs=0, seed=1)[0].compute()
        X64 = X.astype(np.float64)  # the reference in float64 (a float32 product is 1e-3 rad off)
        G = (X64.T @ X64).toarray()
        mean = np.asarray(X64.sum(axis=0)).ravel() / X.shape[0]  # summed in float64 too
        G -= X.shape[0] * np.outer(mean, mean)
        import scipy.linalg

        exact = scipy.linalg.eigh(G, subset_by_index=[G.shape[0] - 50, G.shape[0] - 1])[1][:, ::-1].T
        for solver in ("auto", "randomized"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                model = bigdr.PCA(50, svd_solver=solver, random_state=0).fit(X)
                seconds = time.perf_counter() - t0
            out[solver] = {"solver": model.svd_solver_, "seconds": seconds, "angle": largest_angle(model.components_, exact),
                           "angle_estimate": model.angle_, "passes": model.n_iter_,
                           "warnings": [str(w.message)[:300] for w in caught]}  # fmt: skip
        return out
    if case == "anndata":
        import anndata

        X = make_cells(50_000, 5_000, seed=2)[0].compute()
        adata = anndata.AnnData(X)
        for name, data in (("X", X), ("AnnData", adata), ("X", X), ("AnnData", adata)):
            t0 = time.perf_counter()
            bigdr.PCA(50).fit(data)
            out.setdefault(name, []).append(time.perf_counter() - t0)
        return out
    import psutil

    if case == "dense":
        X = np.random.default_rng(0).standard_normal((30_000, 20_000), dtype=np.float32)
        model: Any = bigdr.PCA(50, random_state=0)
    else:
        X = make_documents(100_000, 50_000, density=0.002, seed=3)[0].compute()
        model = bigdr.TruncatedSVD(100, random_state=0)
    from _harness import PeakRSS

    estimate = model.estimate_memory(X)
    before = psutil.Process().memory_info().rss
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        model.fit(X)
        seconds = time.perf_counter() - t0
    return {"estimate_mib": estimate.total / 2**20, "estimate": estimate.describe(), "measured_mib": (rss.peak - before) / 2**20,
            "seconds": seconds, "solver": getattr(model, "svd_solver_", getattr(model, "algorithm", ""))}  # fmt: skip


def newcomer(rounds: int) -> tuple[dict, str]:
    """The newcomer's cases of issue 32: a flat spectrum, two memory estimates, an AnnData object."""
    out = {case: run_child(SCRIPT, json.dumps({"task": "newcomer", "case": case, "threads": 2}), env=ONE_BLAS, timeout=7200)
           for case in ("flat", "dense", "tfidf", "anndata")}  # fmt: skip
    f, d, t, a = out["flat"], out["dense"], out["tfidf"], out["anndata"]
    x, obj = statistics.median(a["X"]), statistics.median(a["AnnData"])

    def warned(r: dict) -> str:
        return r["warnings"][0][:160] + "..." if r["warnings"] else "none"

    md = (
        "## The newcomer's cases\n\n"
        "Fresh process each, 2 dask threads, BLAS on one thread per thread.\n\n"
        "| case | result |\n| --- | --- |\n"
        f"| 50,000 x 5,000 flat-spectrum log-counts, `PCA(50)` defaults | solver {f['auto']['solver']}, "
        f"{f['auto']['seconds']:.1f} s, angle to exact {f['auto']['angle']:.1e} rad; warning: {warned(f['auto'])} |\n"
        f"| the same, `svd_solver='randomized'` | {f['randomized']['passes']} passes, {f['randomized']['seconds']:.1f} s, "
        f"angle {f['randomized']['angle']:.1e} rad (estimated {f['randomized']['angle_estimate']:.1e}); warning: "
        f"{warned(f['randomized'])} |\n"
        f"| 30,000 x 20,000 dense float32 `PCA(50)` | solver {d['solver']}, estimate {d['estimate_mib'] / 1024:.2f} GiB, "
        f"measured peak above the data {d['measured_mib'] / 1024:.2f} GiB (ratio {d['estimate_mib'] / d['measured_mib']:.2f}), "
        f"{d['seconds']:.0f} s |\n"
        f"| 100,000 x 50,000 TF-IDF `TruncatedSVD(100)` | estimate {t['estimate_mib'] / 1024:.2f} GiB, measured "
        f"{t['measured_mib'] / 1024:.2f} GiB (ratio {t['estimate_mib'] / t['measured_mib']:.2f}), {t['seconds']:.0f} s |\n"
        f"| 50,000-cell AnnData object to `PCA(50)` | {obj:.2f} s against {x:.2f} s for its `X` "
        f"(ratio {obj / x:.2f}; medians of 2) |\n"
    )
    return out, md


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sections", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="atlas: bigdr and the floor only")
    args = parser.parse_args()
    if args.sections == ["data"]:
        make_data(list(DATASETS))
        return
    run_sections(
        "sparse",
        {
            "subset": lambda: subset(args.rounds),
            "atlas": lambda: atlas(1, args.quick),
            "atlas-scanpy-dask": atlas_scanpy_dask,
            "lsa": lambda: lsa(1),
            "newcomer": lambda: newcomer(1),
            "hvg": lambda: hvg(args.rounds),
        },
        args.sections,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
    else:
        main()
