"""Neighbour graphs and blockwise queries (issue 3).

Cases:

graph   all-rows kNN graphs, k = 15: a 1M-row swiss roll (3-D, noise 0.05) and
        200k rows on a 5-D manifold embedded in 50-D plus noise 0.01. bigdr
        (auto, and each method where feasible) against plain single-process
        pynndescent and scikit-learn's exact search. Recall@15 on 10,000
        sampled rows against exact neighbours (scikit-learn KDTree / brute
        force), wall time, peak resident memory, numba compilation separately.
sweep   kd-tree against NN-descent over dimensions 3..50 (50k rows): where the
        ``auto`` threshold comes from.
query   blockwise query of a zarr swiss roll of 1M and 10M rows against a
        20k-landmark index, k = 10, result written to a zarr store: wall time
        and peak resident memory at each size.
warmup  pynndescent's numba compilation: first use in a fresh process with an
        empty cache, and again with the cache filled.
backends  each search back end building the all-rows k = 15 graph in a fresh
        process with an empty numba cache (first use included: imports,
        compilation, build and queries), on 200k x 50 and 1M x 50 (5-D
        manifolds), 200k x 784 (a 10-D manifold) and the 1M-row swiss roll:
        wall time, peak RSS, recall@15 on 10,000 rows against exact neighbours.
hnsw      faiss HNSW settings (graph degree M, efConstruction, efSearch): build
        time, query time of 50,000 rows and recall@15 on 1,000 rows, on 200k x 50
        (5-D manifold), 50k x 784 (10-D) and 100k x 50 (12-D), 2 OpenMP threads.
cells     faiss's HNSW on single-cell PCs (bigdr's 50 PCs of cells-100k.h5ad and
        cells-1M.h5ad, about 17 intrinsic dimensions), k = 14 as in the single-cell
        path: recall@14 on 2,000 rows against exact neighbours for efSearch 64
        (the default), 128 and 256, with the query time of 50,000 rows; bigdr's
        all-rows graph (its re-search of far rows included) and scanpy's
        ``pp.neighbors`` graph (NN-descent) on the same PCs.
cluster   per-worker first use: an index on 200k x 50 rows built in the
        driver, 200k other rows queried (k = 15) on a LocalCluster of 2
        worker processes x 1 thread started with an empty numba cache; the
        first query against the same query again.

firstuse  Isomap(n_components=4) on 300k x 40 (a 4-D manifold): fit_transform
        in a fresh process with an empty numba cache, then the same fit again
        in that process; recall@15 of the model's graph on 2,000 reference rows.

Usage: python benchmarks/bench_neighbors.py [graph|sweep|query|warmup|backends|firstuse|hnsw|cells|cluster|all]
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
from _harness import (  # noqa: E402
    DATA,
    PeakRSS,
    process_peak_mib,
    run_child,
    run_sections,
    run_with_empty_numba_cache,
    swiss_roll_store,
)  # noqa: E402

SCRIPT = Path(__file__).resolve()
K = 15
N_RECALL = 10_000


def swiss_roll_1m():
    from bigdr.datasets import make_swiss_roll

    return np.ascontiguousarray(make_swiss_roll(1_000_000, noise=0.05, seed=0)[0].compute())


def manifold(n=200_000, dim=50, intrinsic=5, seed=0):
    rng = np.random.default_rng(seed)
    latent = rng.uniform(-1, 1, size=(n, intrinsic))
    lift = rng.standard_normal((intrinsic, dim))
    return np.ascontiguousarray(np.tanh(latent @ lift) + 0.01 * rng.standard_normal((n, dim)))


DATASETS = {
    "swissroll-1M": swiss_roll_1m,
    "manifold-200k-50d": manifold,
    "manifold-1M-50d": lambda: manifold(1_000_000),
    "manifold-200k-784d": lambda: manifold(200_000, 784, 10),
}


def warm_numba():
    """Compile pynndescent once (reported separately from the timed work)."""
    from pynndescent import NNDescent

    t0 = time.perf_counter()
    X = np.random.default_rng(0).standard_normal((2000, 10)).astype(np.float32)
    _ = NNDescent(X, n_neighbors=K + 1, random_state=0).neighbor_graph
    return time.perf_counter() - t0


def all_rows(method, X):
    """Returns (indices without self, seconds)."""
    t0 = time.perf_counter()
    if method.startswith("bigdr-"):
        from bigdr.graph.knn import knn_graph

        g = knn_graph(X, K, method=method.split("-", 1)[1], random_state=0)
        ind, _ = g.compute()
        label = g.method
    elif method == "pynndescent":
        from pynndescent import NNDescent

        ind, _ = NNDescent(X, n_neighbors=K + 1, random_state=0).neighbor_graph
        ind = ind[:, 1:]
        label = "nndescent"
    elif method.startswith("sklearn-"):
        from sklearn.neighbors import NearestNeighbors

        nn = NearestNeighbors(n_neighbors=K + 1, algorithm=method.split("-", 1)[1], n_jobs=2).fit(X)
        ind = nn.kneighbors(X, return_distance=False)[:, 1:]
        label = method
    else:
        raise ValueError(method)
    return ind, time.perf_counter() - t0, label


def exact_sample(X, rows):
    from sklearn.neighbors import NearestNeighbors

    algo = "kd_tree" if X.shape[1] <= 15 else "brute"
    nn = NearestNeighbors(n_neighbors=K + 1, algorithm=algo).fit(X)
    return nn.kneighbors(X[rows], return_distance=False)[:, 1:]


def recall(found, exact):
    return float(np.mean([len(np.intersect1d(f, e)) / K for f, e in zip(found, exact)]))


def child(args):
    what = args[0]
    if what == "graph":
        dataset, method = args[1], args[2]
        X = DATASETS[dataset]()
        from bigdr.graph.neighbors import choose_method

        uses_numba = "nndescent" in method or (
            method == "bigdr-auto" and choose_method(*X.shape, "euclidean") == "nndescent"
        )
        compile_s = warm_numba() if uses_numba else None
        rows = np.random.default_rng(1).choice(len(X), N_RECALL, replace=False)
        ref_file = DATA / f"exact-{dataset}.npy"
        if not ref_file.exists():
            np.save(ref_file, exact_sample(X, rows))
        exact = np.load(ref_file)
        all_rows(method, X[:5000])  # untimed: first-call imports and thread pools
        with PeakRSS() as rss:
            ind, seconds, label = all_rows(method, X)
        return {
            "seconds": seconds,
            "numba_compile_seconds": compile_s,
            "peak_rss_mib": rss.peak / 2**20,
            "recall": recall(ind[rows], exact),
            "method_used": label,
        }
    if what == "sweep":
        dim, method = int(args[1]), args[2]
        X = manifold(50_000, dim, min(5, dim), seed=dim)
        if method == "bigdr-nndescent":
            warm_numba()
        rows = np.random.default_rng(1).choice(len(X), 2000, replace=False)
        all_rows(method, X[:5000])  # untimed: first-call imports and thread pools
        ind, seconds, _ = all_rows(method, X)
        return {"seconds": seconds, "recall": recall(ind[rows], exact_sample(X, rows))}
    if what == "landmarks":
        from bigdr.blockwise.sampling import select_landmarks

        store = Path(args[1])
        select_landmarks(np.zeros((100, 3)), 10)  # untimed first call
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            landmarks, _ = select_landmarks(str(store), 20_000, random_state=0)
            seconds = time.perf_counter() - t0
        np.save(DATA / f"landmarks-{store.stem}.npy", landmarks)
        return {"seconds": seconds, "peak_rss_mib": rss.peak / 2**20, "ru_maxrss_mib": process_peak_mib()}
    if what == "query":
        import bigdr
        from bigdr.graph.neighbors import NeighborIndex

        store = Path(args[1])
        landmarks = np.load(DATA / f"landmarks-{store.stem}.npy")
        out = Path(tempfile.mkdtemp(dir=DATA)) / "q.zarr"
        NeighborIndex().fit(np.zeros((100, 3))).query(np.zeros((10, 3)), 5)  # untimed first call
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            index = NeighborIndex().fit(landmarks)
            ind, dist = index.query(str(store), 10)
            bigdr.write_zarr({"indices": ind, "distances": dist}, out)
            total = time.perf_counter() - t0
        shutil.rmtree(out.parent)
        return {
            "seconds": total,
            "peak_rss_mib": rss.peak / 2**20,
            "ru_maxrss_mib": process_peak_mib(),
            "method": index.method_,
            "chunk_rows": int(ind.chunks[0][0]),
        }
    if what == "backends":
        dataset, method = args[1], args[2]
        X = DATASETS[dataset]()
        rows = np.random.default_rng(1).choice(len(X), N_RECALL, replace=False)
        ref_file = DATA / f"exact-{dataset}.npy"
        if not ref_file.exists():
            np.save(ref_file, exact_sample(X, rows))
        exact = np.load(ref_file)
        with PeakRSS() as rss:  # first use included: nothing is warmed up
            ind, seconds, label = all_rows(method, X)
        return {"seconds": seconds, "peak_rss_mib": rss.peak / 2**20, "recall": recall(ind[rows], exact)}
    if what == "firstuse":
        method = args[1]
        X = manifold(300_000, 40, 4)
        t0 = time.perf_counter()
        import bigdr

        model = bigdr.Isomap(n_components=4, neighbor_method=method)
        model.fit_transform(X)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        bigdr.Isomap(n_components=4, neighbor_method=method).fit_transform(X)
        again = time.perf_counter() - t0
        ref = model.reference_rows_
        rows = np.random.default_rng(1).choice(len(ref), 2000, replace=False)
        found = model.graph_indices_[rows]
        k = found.shape[1]  # the model's n_neighbors
        exact = exact_sample(ref, rows)[:, :k]
        return {
            "first_seconds": first,
            "again_seconds": again,
            "graph_rows": len(ref),
            "recall": float(np.mean([len(np.intersect1d(f, e)) / k for f, e in zip(found, exact)])),
            "k": k,
        }
    if what == "cluster":
        import dask.array as da
        from distributed import Client, LocalCluster

        from bigdr.graph.neighbors import NeighborIndex

        X = manifold(400_000, 50)
        with (
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
            Client(cluster) as client,
        ):
            client.wait_for_workers(2)
            t0 = time.perf_counter()
            index = NeighborIndex(method=args[1]).fit(X[:200_000])
            build = time.perf_counter() - t0
            Q = da.from_array(X[200_000:], chunks=20_000)
            times = []
            for _ in range(2):
                t0 = time.perf_counter()
                ind, _ = index.query(Q, K)
                ind.compute()
                times.append(time.perf_counter() - t0)
        return {"build_seconds": build, "first_query_seconds": times[0], "again_seconds": times[1]}
    if what == "hnsw":
        import faiss
        from sklearn.neighbors import NearestNeighbors

        out = []
        for n, dim, intrinsic in HNSW_DATA:
            X = manifold(n, dim, intrinsic).astype(np.float32)
            rows = np.random.default_rng(1).choice(n, 1000, replace=False)
            exact = NearestNeighbors(n_neighbors=K + 1, algorithm="brute").fit(X).kneighbors(X[rows])[1][:, 1:]
            for m, efc, efs in HNSW_SETTINGS:
                t0 = time.perf_counter()
                index = faiss.IndexHNSWFlat(dim, m)
                index.hnsw.efConstruction = efc
                index.add(X)
                build = time.perf_counter() - t0
                index.hnsw.efSearch = efs
                t0 = time.perf_counter()
                index.search(X[:50_000], K + 1)
                query = time.perf_counter() - t0
                found = index.search(X[rows], K + 1)[1][:, 1:]
                out.append(
                    {"data": f"{n // 1000}k x {dim} ({intrinsic}-D)", "m": m, "ef_construction": efc,
                     "ef_search": efs, "build_seconds": build, "query_seconds": query,
                     "recall": recall(found, exact)}
                )  # fmt: skip
        return out
    if what == "cells":
        return cells_child(args[1])
    if what == "warmup":
        t = warm_numba()
        return {"seconds": t}
    raise ValueError(what)


GRAPH_METHODS = {
    "swissroll-1M": ["bigdr-auto", "bigdr-nndescent", "pynndescent", "sklearn-kd_tree"],
    "manifold-200k-50d": ["bigdr-auto", "pynndescent", "sklearn-brute"],
}


def render_graph(res):
    lines = [
        "## All-rows kNN graph, k = 15\n",
        "| data | method | chosen | time | numba compile (paid once per process, before the timed run) | peak RSS (MiB) | recall@15 (10k rows) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key, r in res.items():
        dataset, m = key.split("/")
        compile_s = r["numba_compile_seconds"]
        shown = (
            "none (no numba)" if compile_s is None or r["method_used"] not in ("nndescent",) else f"{compile_s:.1f} s"
        )
        lines.append(
            f"| {dataset} | {m} | {r['method_used']} | {r['seconds']:.1f} s | {shown} | "
            f"{r['peak_rss_mib']:.0f} | {r['recall']:.4f} |"
        )
    lines.append(
        "\nTimes exclude an untimed first call on 5000 rows (imports, thread pools) and numba compilation; "
        "one run each."
    )
    return "\n".join(lines) + "\n"


def run_graph():
    res = {}
    for dataset, methods in GRAPH_METHODS.items():
        for m in methods:
            r = run_child(SCRIPT, "graph", dataset, m, env={"NUMBA_CACHE_DIR": str(DATA / "numba-cache")})
            res[f"{dataset}/{m}"] = r
            print(dataset, m, r, flush=True)
    return res, render_graph(res)


def run_sweep():
    res = {}
    lines = [
        "## kd-tree against NN-descent by dimension (50k rows, 5-D manifold or fewer, k = 15)\n",
        "| dim | kd-tree time | NN-descent time | NN-descent recall |",
        "| --- | --- | --- | --- |",
    ]
    for dim in (3, 10, 15, 20, 30, 50):
        kd = run_child(SCRIPT, "sweep", str(dim), "bigdr-kdtree")
        nn = run_child(SCRIPT, "sweep", str(dim), "bigdr-nndescent", env={"NUMBA_CACHE_DIR": str(DATA / "numba-cache")})
        res[dim] = {"kdtree": kd, "nndescent": nn}
        print(dim, kd, nn, flush=True)
        lines.append(f"| {dim} | {kd['seconds']:.1f} s | {nn['seconds']:.1f} s | {nn['recall']:.4f} |")
    return res, "\n".join(lines) + "\n"


def run_query():
    res = {}
    lines = [
        "## Blockwise query against a 20k-landmark index (k = 10), zarr swiss roll on disk, result written to zarr\n",
        "Landmark selection and the query run in separate processes, so each peak is its own.\n",
        "| rows | landmark pass: time | landmark pass: peak RSS (MiB) | query + write: time | query + write: peak RSS (MiB) | index | rows per chunk |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for n in (1_000_000, 10_000_000):
        store = swiss_roll_store(n)
        lm = run_child(SCRIPT, "landmarks", str(store))
        q = run_child(SCRIPT, "query", str(store))
        res[n] = {"landmarks": lm, "query": q}
        print(n, res[n], flush=True)
        lines.append(
            f"| {n:,} | {lm['seconds']:.1f} s | {lm['peak_rss_mib']:.0f} | {q['seconds']:.1f} s | "
            f"{q['peak_rss_mib']:.0f} | {q['method']} | {q['chunk_rows']:,} |"
        )
    return res, "\n".join(lines) + "\n"


def run_warmup():
    cache = Path(tempfile.mkdtemp(prefix="numba-cache-"))
    env = {"NUMBA_CACHE_DIR": str(cache)}
    cold = [run_child(SCRIPT, "warmup", env=env)["seconds"]]
    warm = [run_child(SCRIPT, "warmup", env=env)["seconds"] for _ in range(2)]
    shutil.rmtree(cache)
    res = {"empty_cache_seconds": cold, "filled_cache_seconds": warm}
    lines = [
        "## pynndescent warm-up (first NNDescent on 2000 x 10 in a fresh process)\n",
        f"- empty NUMBA_CACHE_DIR: {cold[0]:.1f} s",
        f"- cache filled by the previous run: {statistics.median(warm):.1f} s (median of 2)",
    ]
    return res, "\n".join(lines) + "\n"


BACKEND_CASES = {
    "manifold-200k-50d": ["bigdr-nndescent", "bigdr-faiss"],
    "swissroll-1M": ["bigdr-kdtree", "bigdr-nndescent", "bigdr-faiss"],
    "manifold-1M-50d": ["bigdr-nndescent", "bigdr-faiss"],
    "manifold-200k-784d": ["bigdr-nndescent", "bigdr-faiss"],
}


def run_backends():
    res: dict = {}
    for dataset, methods in BACKEND_CASES.items():
        for method in methods:
            res[f"{dataset}/{method}"] = run_with_empty_numba_cache(SCRIPT, "backends", dataset, method)
    lines = [
        "## Back ends: all-rows kNN graph (k = 15) in a fresh process, first use included\n",
        "Empty numba cache, imports, compilation, index build and every query, 2 vCPU: index builds use both",
        "(numba's or OpenMP's threads), queries run as dask tasks of one thread each. Recall@15 on 10,000 rows",
        "against exact neighbours.\n",
        "| data | back end | seconds | peak RSS (MiB) | recall@15 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key, r in res.items():
        dataset, method = key.split("/")
        lines.append(f"| {dataset} | {method[6:]} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} | {r['recall']:.4f} |")
    return res, "\n".join(lines) + "\n"


def run_firstuse():
    res = {method: run_with_empty_numba_cache(SCRIPT, "firstuse", method) for method in ("nndescent", "faiss")}
    lines = [
        "## First use: Isomap(n_components=4) of 300k x 40 (4-D manifold) in a fresh process, empty numba cache\n",
        "| neighbour search | first fit_transform (s) | the same fit again in that process (s) | ratio | graph rows "
        "| recall@k of the graph (k = 10) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for method, r in res.items():
        lines.append(
            f"| {method} | {r['first_seconds']:.1f} | {r['again_seconds']:.1f} | "
            f"{r['first_seconds'] / r['again_seconds']:.2f} | {r['graph_rows']:,} | {r['recall']:.4f} |"
        )
    return res, "\n".join(lines) + "\n"


HNSW_DATA = [(200_000, 50, 5), (50_000, 784, 10), (100_000, 50, 12)]
HNSW_SETTINGS = [(32, 200, 64), (16, 64, 32), (16, 64, 64), (16, 100, 64), (24, 100, 64)]


def run_hnsw():
    res = run_child(SCRIPT, "hnsw")
    lines = [
        "## faiss HNSW settings (2 OpenMP threads; the default is M 16, efConstruction 64, efSearch 64)\n",
        "| data | M | efConstruction | efSearch | build (s) | query 50k rows (s) | recall@15 (1,000 rows) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in res:
        lines.append(
            f"| {r['data']} | {r['m']} | {r['ef_construction']} | {r['ef_search']} | {r['build_seconds']:.1f} | "
            f"{r['query_seconds']:.1f} | {r['recall']:.4f} |"
        )
    return res, "\n".join(lines) + "\n"


CELLS_K = 14  # the single-cell path's n_neighbors (scanpy's 15 counts the cell itself)
CELLS_EF_SEARCH = (64, 128, 256)


def cells_child(name: str) -> dict:
    import anndata
    import dask
    import faiss
    import scanpy as sc

    import bigdr
    from bigdr.core.dimension import intrinsic_dimension
    from bigdr.graph.knn import knn_graph
    from bigdr.runtime.compute import compute

    dask.config.set(scheduler="threads", num_workers=2)
    (P,) = compute(bigdr.PCA(50, random_state=0).fit_transform(str(DATA / f"{name}.h5ad")))
    P = np.ascontiguousarray(P, dtype=np.float32)
    n, k = len(P), CELLS_K
    rows = np.random.default_rng(1).choice(n, 2000, replace=False)
    P64 = P.astype(np.float64)
    sq = (P64**2).sum(axis=1)
    exact, kth = [], []
    for s in range(0, len(rows), 250):  # exact search of the sampled rows, in float64
        q = rows[s : s + 250]
        D = sq[None, :] - 2 * P64[q] @ P64.T + sq[q, None]
        D[np.arange(len(q)), q] = np.inf
        part = np.argpartition(D, k, axis=1)[:, : k + 1]
        order = np.argsort(np.take_along_axis(D, part, axis=1), axis=1)
        exact.append(np.take_along_axis(part, order, axis=1)[:, :k])
        kth.append(np.sqrt(np.maximum(np.take_along_axis(D, part, axis=1), 0)))
    exact = np.vstack(exact)
    dims = np.sort(np.vstack(kth), axis=1)[:, :k]

    def scores(found):
        hits = np.array([len(np.intersect1d(f, e)) for f, e in zip(found, exact)])
        return {"recall": float(hits.mean() / k), "rows_missing": float(np.mean(hits < k))}

    out = {"data": name, "rows": n, "k": k, "dimension": float(intrinsic_dimension(dims)), "faiss": []}
    faiss.omp_set_num_threads(2)
    t0 = time.perf_counter()
    index = faiss.IndexHNSWFlat(P.shape[1], 16)
    index.hnsw.efConstruction = 64
    index.add(P)
    out["build_seconds"] = time.perf_counter() - t0
    Q = P[: min(50_000, n)]
    for efs in CELLS_EF_SEARCH:
        index.hnsw.efSearch = efs
        t0 = time.perf_counter()
        index.search(Q, k + 1)
        query = time.perf_counter() - t0
        found = index.search(P[rows], k + 1)[1]
        found = [f[f != r][:k] for f, r in zip(found, rows)]
        out["faiss"].append({"ef_search": efs, "query_seconds": query, **scores(found)})
    del index
    t0 = time.perf_counter()
    graph = knn_graph(P, k, random_state=0)
    ind, _ = graph.compute()
    out["bigdr"] = {"seconds": time.perf_counter() - t0, **scores(ind[rows])}
    out["bigdr"].update(ef_search=graph.index._backend.options["ef_search"], recall_estimate=graph.index.recall_)
    del ind
    adata = anndata.AnnData(obsm={"X_pca": P})
    t0 = time.perf_counter()
    sc.pp.neighbors(adata, use_rep="X_pca", random_state=0)  # compiles NN-descent first, as a user's call does
    seconds = time.perf_counter() - t0
    D = adata.obsp["distances"].tocsr()
    found = [D.indices[D.indptr[r] : D.indptr[r + 1]] for r in rows]
    out["scanpy"] = {"seconds": seconds, **scores(found)}
    return out


def run_cells():
    res = [run_child(SCRIPT, "cells", name) for name in ("cells-100k", "cells-1M")]
    lines = [
        "## faiss HNSW on single-cell PCs (k = 14; recall on 2,000 rows against exact neighbours)\n",
        "bigdr's `PCA(50)` of the file; faiss's index with bigdr's defaults (M 16, efConstruction 64) on 2 OpenMP "
        "threads, queries of 50,000 rows on 2 threads. bigdr's graph: `knn_graph(P, 14)` with its defaults (faiss, "
        "efSearch widened from 64 until 500 sampled rows find 0.99 of their neighbours, far rows searched again 4x "
        "wider; the width chosen and the sample's estimate below). scanpy: `pp.neighbors(use_rep='X_pca')` on the same PCs "
        "(NN-descent; numba's compilation included). Rows missing: the share of sampled rows with at least one "
        "true neighbour missed.\n",
        "| data | estimated dimension | search | build (s) | query 50k rows / graph (s) | recall@14 | rows missing |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in res:
        head = f"| {r['data']} ({r['rows']:,} x 50) | {r['dimension']:.1f} |"
        for f in r["faiss"]:
            lines.append(
                f"{head} faiss efSearch {f['ef_search']} | {r['build_seconds']:.1f} | {f['query_seconds']:.1f} | "
                f"{f['recall']:.4f} | {f['rows_missing']:.3f} |"
            )
        for who in ("bigdr", "scanpy"):
            g = r[who]
            label = "bigdr knn_graph (defaults)" if who == "bigdr" else "scanpy pp.neighbors (defaults)"
            lines.append(f"{head} {label} |  | {g['seconds']:.1f} | {g['recall']:.4f} | {g['rows_missing']:.3f} |")
    for r in res:
        b = r["bigdr"]
        lines.append(
            f"\n{r['data']}: bigdr's graph chose efSearch {b['ef_search']}; its estimated recall on 500 rows "
            f"{b['recall_estimate']:.4f}."
        )
    return res, "\n".join(lines) + "\n"


def run_cluster():
    res = {method: run_with_empty_numba_cache(SCRIPT, "cluster", method) for method in ("nndescent", "faiss")}
    lines = [
        "## Per-worker first use: 200k rows queried (k = 15) against a 200k x 50 index on 2 worker processes\n",
        "Driver, workers and the numba cache all fresh and empty; the query is computed twice.\n",
        "| back end | index build in the driver (s) | first query (s) | same query again (s) | first-use cost (s) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for method, r in res.items():
        lines.append(
            f"| {method} | {r['build_seconds']:.1f} | {r['first_query_seconds']:.1f} | {r['again_seconds']:.1f} | "
            f"{r['first_query_seconds'] - r['again_seconds']:.1f} |"
        )
    return res, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "case",
        choices=["graph", "sweep", "query", "warmup", "backends", "firstuse", "hnsw", "cells", "cluster", "all"],
        nargs="*",
        default="all",
    )
    args = ap.parse_args()
    runners = {
        "warmup": run_warmup,
        "graph": run_graph,
        "sweep": run_sweep,
        "query": run_query,
        "backends": run_backends,
        "firstuse": run_firstuse,
        "hnsw": run_hnsw,
        "cells": run_cells,
        "cluster": run_cluster,
    }
    run_sections("neighbors", runners, args.case)


if __name__ == "__main__":
    main()
