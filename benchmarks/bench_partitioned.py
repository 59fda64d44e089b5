"""kNN graphs that no process holds whole (issue 18): knn_graph(partitions=...) on a cluster.

Cases:

graph     the k = 15 graph of 10M x 50 rows (a 5-D manifold, float32 zarr store),
          written to a zarr store, in one process (one faiss HNSW index of all
          rows, threads) and then partitioned on a LocalCluster of 2 worker
          processes x 1 thread limited to 4 GiB each, each in a fresh process:
          wall time, ratio, rows searched outside their own cell, peak RSS of
          each worker (sampled every 0.5 s) and of the driver, recall@15 on
          5,000 rows against exact neighbours (brute force over the store,
          after the timed run). ``--rows`` and ``--partitions`` give a smaller trial.

solver    the diffusion map's eigenproblem (alpha 0.5, k = 10, 5 eigenpairs) of a
          200k-row swiss roll on the blocked operator (graph.blocked, threads):
          LOBPCG without preconditioner from a random start and warm-started
          from the landmark-mode map (20,000 landmarks) extended to all rows,
          against AMG-preconditioned LOBPCG on the same matrix in one process:
          operator products, seconds, eigenvalues.

diffusion the all-rows diffusion map (DiffusionMap(n_components=5, partitions="auto"),
          k = 15, alpha 1) of 5M rows of the same manifold on the same cluster:
          wall time by stage, blockwise operator products, LOBPCG residual,
          peak RSS of workers and driver; its eigenvalues against those of the
          landmark fit it starts from (100,000 landmarks), and the relative
          residual of the landmark embedding mapped onto the all-rows one by
          the best affine map on the landmarks (landmark_residual_), and of
          transform on 20,000 other rows. ``--rows`` for a trial.

landmarks the default fit of the same 5M rows on the same cluster (landmarks
          "auto"), every row embedded: wall time and peak RSS.

Usage: python benchmarks/bench_partitioned.py [graph|solver|diffusion|landmarks|all] [--rows N] [--partitions P]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, WorkerPeakRSS, run_child, run_sections  # noqa: E402

SCRIPT = Path(__file__).resolve()
K = 15
DIM, INTRINSIC = 50, 5
CHUNK = 131_072
N_RECALL = 5_000
N_TRANSFORM = 20_000


def _manifold_block(block_id, n, seed=0):
    """Rows of a 5-D manifold in 50-D: the same map for every block, its own latent draws."""
    lift = np.random.default_rng(seed).standard_normal((INTRINSIC, DIM))
    b = block_id[0]
    start = b * CHUNK
    rows = min(CHUNK, n - start)
    rng = np.random.default_rng([seed, b])
    latent = rng.uniform(-1, 1, size=(rows, INTRINSIC))
    return (np.tanh(latent @ lift) + 0.01 * rng.standard_normal((rows, DIM))).astype(np.float32)


def manifold_store(n: int) -> Path:
    """The on-disk manifold of ``n`` rows, generated once blockwise."""
    import dask.array as da

    import bigdr

    path = DATA / f"manifold-{n // 1_000_000}M-50d.zarr"
    if not path.exists():
        chunks = ((CHUNK,) * (n // CHUNK) + ((n % CHUNK,) if n % CHUNK else ()), (DIM,))
        X = da.map_blocks(lambda block_id=None: _manifold_block(block_id, n), chunks=chunks, dtype=np.float32)
        bigdr.write_zarr(X, path)
    return path


def rows_of(store: Path, rows: np.ndarray) -> np.ndarray:
    """The sorted ``rows`` of the store, read one chunk at a time (zarr's ``oindex`` on 20,000 rows scattered
    over a 5M-row store held about 525 MiB at once, more than the partitioned fit's driver)."""
    import zarr

    arr = zarr.open_array(str(store), mode="r")
    parts = []
    for start in range(0, arr.shape[0], CHUNK):
        here = rows[(rows >= start) & (rows < start + CHUNK)]
        if len(here):
            parts.append(np.asarray(arr[start : start + CHUNK])[here - start])
    return np.vstack(parts)


def exact_rows(store: Path, rows: np.ndarray) -> np.ndarray:
    """Exact k nearest other rows of ``rows`` by brute force over the store, chunk by chunk (faiss's exact
    search on every core, the k + 1 best kept in a heap across chunks)."""
    import os

    import faiss
    import zarr

    faiss.omp_set_num_threads(os.cpu_count() or 1)  # after the timed run: nothing else is running
    arr = zarr.open_array(str(store), mode="r")
    Q = np.asarray(arr.oindex[np.sort(rows)], dtype=np.float32)
    order = np.argsort(rows)
    Q = np.ascontiguousarray(Q[np.argsort(order)])  # back in the order of rows
    heap = faiss.ResultHeap(len(Q), K + 1)
    for start in range(0, arr.shape[0], CHUNK):
        block = np.ascontiguousarray(arr[start : start + CHUNK], dtype=np.float32)
        dist, ind = faiss.knn(Q, block, K + 1)
        heap.add_result(dist, ind + start)
    heap.finalize()
    return np.array([[j for j in r if j != q][:K] for r, q in zip(heap.I, rows)])


def graph_case(n: int, partitions: str, where: str) -> dict:
    """The k = 15 graph of the store, written to zarr: in this process (one HNSW index of all rows, the
    threaded scheduler) or partitioned on the cluster; recall@15 on 5,000 rows after the timed run."""
    from bigdr.graph import partitioned
    from bigdr.graph.knn import knn_graph

    store = manifold_store(n)
    out = Path(tempfile.mkdtemp(dir=DATA)) / "graph.zarr"
    routed = []
    probe_round = partitioned._Cells.probe_round

    def counted(cells, routes, best):  # rows searched outside their own cell, counted from the routes
        import dask

        (per_block,) = dask.compute([dask.delayed(lambda r: int((r >= 0).sum()))(r) for r in routes])
        routed.append(sum(per_block))
        return probe_round(cells, routes, best)

    partitioned._Cells.probe_round = counted
    cells = "auto" if partitions == "auto" else int(partitions)

    def timed():
        t0 = time.perf_counter()
        g = (
            knn_graph(str(store), K, random_state=0)
            if where == "single"
            else knn_graph(str(store), K, partitions=cells, random_state=0)
        )
        g.to_zarr(str(out))
        return g, time.perf_counter() - t0

    if where == "single":
        workers = None
        with PeakRSS() as rss:
            g, seconds = timed()
    else:
        with _on_cluster() as (workers, rss):
            g, seconds = timed()
    import zarr

    ind = zarr.open_group(str(out), mode="r")["indices"]
    rows = np.sort(np.random.default_rng(1).choice(n, N_RECALL, replace=False))
    found = np.asarray(ind.oindex[rows])
    exact = exact_rows(store, rows)
    recall = float(np.mean([len(np.intersect1d(f, e)) / K for f, e in zip(found, exact)]))
    shutil.rmtree(out.parent)
    return {
        "rows": n,
        "where": where,
        "partitions": partitions,
        "method": g.method,
        "seconds": seconds,
        "driver_peak_rss_mib": rss.peak / 2**20,
        "worker_peak_rss_mib": workers.peaks_mib if workers is not None else None,
        "recall": recall,
        "searched_elsewhere_per_row": routed[0] / n if routed else 0.0,
        "missing": int((found < 0).sum()),
    }


def child(args):
    what = args[0]
    if what == "graph":
        return graph_case(int(args[1]), args[2], args[3])
    if what == "solver":
        return solver_case(int(args[1]))
    if what == "diffusion":
        return diffusion_case(int(args[1]))
    if what == "landmarks":
        return landmarks_case(int(args[1]))
    raise ValueError(what)


@contextlib.contextmanager
def _on_cluster():
    """A LocalCluster of 2 worker processes x 1 thread limited to 4 GiB, as the scheduler; (workers', driver's) peak RSS."""
    import dask
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit="4GiB", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        with (
            WorkerPeakRSS(client) as workers,
            PeakRSS() as rss,
            client.as_current(),
            dask.config.set(scheduler=client.get),
        ):
            yield workers, rss


class _Stages:
    """Wall time of the partitioned fit's stages and its blockwise products (wrappers around the real calls)."""

    def __init__(self, rss=None):
        import bigdr.manifold.spectral_partitioned as sp_mod
        from bigdr.graph.blocked import BlockedMatrix

        self.mod, self.cls = sp_mod, BlockedMatrix
        self.marks: dict = {}
        self.peaks: dict = {}  # the driver's peak RSS up to each mark (MiB)
        self.rss = rss
        self.products = 0

    def mark(self, name):
        self.marks[name] = time.perf_counter()
        if self.rss is not None:
            self.peaks[name] = self.rss.peak / 2**20

    def __enter__(self):
        from distributed import futures_of, wait

        graph, solve, times = self.mod.knn_graph, self.mod.lobpcg, self.cls.times
        self.saved = graph, solve, times

        def timed_graph(*a, **kw):
            self.mark("graph_start")
            g = graph(*a, **kw)
            wait(futures_of(g.indices) + futures_of(g.distances))
            self.mark("graph_end")
            return g

        def timed_solve(*a, **kw):
            self.mark("solve_start")
            e = solve(*a, **kw)
            self.mark("solve_end")
            return e

        def counted(obj, *a, **kw):
            self.products += 1
            return times(obj, *a, **kw)

        self.mod.knn_graph, self.mod.lobpcg, self.cls.times = timed_graph, timed_solve, counted
        return self

    def __exit__(self, *exc):
        self.mod.knn_graph, self.mod.lobpcg, self.cls.times = self.saved


def diffusion_case(n: int) -> dict:
    import bigdr

    store = manifold_store(n)
    with _on_cluster() as (workers, rss):
        with _Stages(rss) as stages:
            t0 = time.perf_counter()
            model = bigdr.DiffusionMap(n_components=5, n_neighbors=K, partitions="auto", random_state=0)
            out = Path(tempfile.mkdtemp(dir=DATA)) / "embedding.zarr"
            try:
                # written by the workers, as a user keeps an embedding of every row
                bigdr.write_zarr(model.fit_transform(str(store)), out)
                seconds = time.perf_counter() - t0
                stages.mark("written")
                # transform (the landmark model mapped onto the all-rows map) on rows that are not landmarks
                import zarr

                others = np.setdiff1d(np.arange(n), model.reference_indices_)
                rows = np.sort(np.random.default_rng(2).choice(others, N_TRANSFORM, replace=False))
                moved = model.transform(rows_of(store, rows))
                embedded = zarr.open_array(str(out), mode="r")
                finite = sum(int(np.isfinite(embedded[a : a + CHUNK]).all(axis=1).sum()) for a in range(0, n, CHUNK))
                at_rows = np.asarray(embedded.oindex[rows])
            finally:
                shutil.rmtree(out.parent)
    m = stages.marks
    return {
        "rows": n,
        "seconds": seconds,
        "start_fit_seconds": m["graph_start"] - t0,
        "graph_seconds": m["graph_end"] - m["graph_start"],
        "extension_and_operator_seconds": m["solve_start"] - m["graph_end"],
        "solve_seconds": m["solve_end"] - m["solve_start"],
        "products": stages.products,
        "lobpcg_iterations": model.lobpcg_iterations_,
        "lobpcg_residual": model.lobpcg_residual_,
        "eigenvalues": model.eigenvalues_.tolist(),
        "landmark_eigenvalues": (1 - model.extension_eigenvalues_).tolist(),
        "epsilon": model.all_rows_epsilon_,
        "landmark_epsilon": model.epsilon_,
        "landmarks": len(model.reference_rows_),
        "landmark_residual": model.landmark_residual_,
        "finite_rows": finite,
        "transform_residual": float(np.linalg.norm(moved - at_rows) / np.linalg.norm(at_rows)),
        "driver_peak_rss_mib": rss.peak / 2**20,
        "driver_peak_by_stage_mib": stages.peaks,
        "worker_peak_rss_mib": workers.peaks_mib,
    }


def landmarks_case(n: int) -> dict:
    """The default fit at this size (landmark mode) on the same cluster, every row's coordinates computed."""
    import bigdr

    store = manifold_store(n)
    with _on_cluster() as (workers, rss):
        t0 = time.perf_counter()
        model = bigdr.DiffusionMap(n_components=5, n_neighbors=K, random_state=0)
        Y = model.fit_transform(str(store)).compute()
        seconds = time.perf_counter() - t0
    return {
        "rows": n,
        "seconds": seconds,
        "mode": model.mode_,
        "landmarks": len(model.reference_rows_),
        "eigenvalues": model.eigenvalues_.tolist(),
        "finite_rows": int(np.isfinite(Y).all(axis=1).sum()),
        "driver_peak_rss_mib": rss.peak / 2**20,
        "worker_peak_rss_mib": workers.peaks_mib,
    }


def solver_case(n: int) -> dict:
    import bigdr
    from bigdr.blockwise.lobpcg import lobpcg
    from bigdr.blockwise.rowblocks import RowBlocks
    from bigdr.core.sparse_eigen import smallest_eigh
    from bigdr.datasets import make_swiss_roll
    from bigdr.graph.affinity import affinity, auto_epsilon
    from bigdr.graph.blocked import blocked_affinity, blocked_operator
    from bigdr.graph.knn import knn_graph
    from bigdr.graph.operators import symmetric_operator

    X = make_swiss_roll(n, noise=0.05, seed=0)[0].compute()
    g = knn_graph(X, 10, partitions=4, random_state=0)
    ind, dist = g.indices.persist(), g.distances.persist()
    eps = auto_epsilon(dist.compute())
    W = blocked_affinity(ind, dist, "gaussian", eps, True)
    op = blocked_operator(W, "markov", 0.5)
    root = op.root().compute()
    t0 = time.perf_counter()
    dm = bigdr.DiffusionMap(n_components=4, n_neighbors=10, landmarks=20_000, random_state=0).fit(X)
    phi = dm.transform(X) / dm.scale_
    warm = phi * root
    out: dict = {"rows": n, "warm_start_seconds": time.perf_counter() - t0}
    cold = np.random.default_rng(0).standard_normal((n, 4))
    for name, start in (("warm", warm), ("cold", cold)):
        t0 = time.perf_counter()
        e = lobpcg(op.laplacian, RowBlocks.scatter(start, W.starts), constraint=op.root(), tol=1e-6,
                   maxiter=2000)  # fmt: skip
        out[name] = {
            "products": e.products,
            "seconds": time.perf_counter() - t0,
            "eigenvalues": [1.0] + (1 - e.values).tolist(),
        }
    ref = symmetric_operator(
        affinity(ind.compute(), dist.compute().astype(float), "gaussian", eps, True).W, "markov", 0.5
    )
    t0 = time.perf_counter()
    e = smallest_eigh(ref.L, 5, "amg", 0, ref.null_vector)
    out["amg"] = {"seconds": time.perf_counter() - t0, "eigenvalues": (1 - e.values).tolist()}
    return out


def run_solver():
    r = run_child(SCRIPT, "solver", "200000")
    amg = np.array(r["amg"]["eigenvalues"])
    lines = [
        "## Diffusion-map eigenproblem on the blocked operator (200k-row swiss roll, threads)\n",
        "LOBPCG (tol 1e-6, at most 2000 iterations; blockwise.lobpcg, its blocks held as row blocks, orthogonal",
        "to the known null vector) on graph.blocked's operator, against AMG-preconditioned",
        "LOBPCG on the same matrix in one process. The warm start (landmark mode, 20,000 landmarks, extended",
        f"to all rows) took {r['warm_start_seconds']:.1f} s.\n",
        "| solver | operator products | seconds | largest error of the Markov eigenvalues 2-5 against AMG |",
        "| --- | --- | --- | --- |",
    ]
    for name in ("warm", "cold"):
        err = float(np.abs(np.array(r[name]["eigenvalues"]) - amg)[1:].max())
        lines.append(f"| blocked LOBPCG, {name} start | {r[name]['products']} | {r[name]['seconds']:.1f} | {err:.1e} |")
    lines.append(f"| in-process AMG LOBPCG | - | {r['amg']['seconds']:.1f} | 0 |")
    return r, "\n".join(lines) + "\n"


def run_graph(rows: int, partitions: str):
    single = run_child(SCRIPT, "graph", str(rows), partitions, "single", timeout=4 * 3600)
    cluster = run_child(SCRIPT, "graph", str(rows), partitions, "cluster", timeout=4 * 3600)
    r = {"single": single, "cluster": cluster, "ratio": cluster["seconds"] / single["seconds"]}
    lines = [
        "## kNN graph of all rows (k = 15): one process against 2 workers\n",
        "knn_graph(store, 15), written to zarr, each in a fresh process, one after the other: in one process",
        "(one faiss HNSW index of all rows built on both threads, rows queried as dask tasks on the threaded",
        f"scheduler), and with partitions={partitions!r} on a LocalCluster of 2 worker processes x 1 thread limited",
        "to 4 GiB each (n_probe = 3, the default: the home cell, then at most 2 more that the routing bounds",
        "leave; faiss per cell, its efSearch calibrated on 500 of its members as the single index's is on 500 rows).",
        "'Searched elsewhere': rows searched outside their own cell, per row.\n",
        "| rows x dims | where | wall time (s) | ratio to one process | searched elsewhere (per row) "
        "| peak RSS per worker (MiB) | driver peak RSS (MiB) | recall@15 (5,000 rows) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in (single, cluster):
        workers = ", ".join(f"{v:.0f}" for v in c["worker_peak_rss_mib"]) if c["worker_peak_rss_mib"] else "-"
        lines.append(
            f"| {c['rows']:,} x {DIM} | {'one process' if c['where'] == 'single' else '2 workers'} | "
            f"{c['seconds']:.0f} | {c['seconds'] / single['seconds']:.2f} | "
            f"{c['searched_elsewhere_per_row']:.2f} | {workers} | {c['driver_peak_rss_mib']:.0f} | {c['recall']:.4f} |"
        )
    return r, "\n".join(lines) + "\n"


def run_diffusion(rows: int):
    r = run_child(SCRIPT, "diffusion", str(rows), timeout=6 * 3600)
    lam, lam_l = np.array(r["eigenvalues"]), np.array(r["landmark_eigenvalues"])
    lines = [
        "## All-rows diffusion map on 2 workers limited to 4 GiB each\n",
        f"DiffusionMap(n_components=5, n_neighbors=15, partitions='auto') on {r['rows']:,} x {DIM} rows of the",
        "5-D manifold (float32 zarr store), the embedding written to a zarr store by the workers; LOBPCG (tol",
        "1e-6; its blocks on the workers) on the blocked operator, started from a landmark",
        f"fit of {r['landmarks']:,} landmarks. Landmark residual: the relative residual of the landmark model's",
        "coordinates of the landmarks mapped onto their all-rows coordinates by the best affine map (least",
        "squares); transform residual: the same for 20,000 rows that are not landmarks, embedded by transform",
        "(the landmark model's Nyström extension and that map), against their all-rows coordinates.\n",
        "| rows | wall time (s) | landmark start (s) | graph (s) | extension + operator (s) | LOBPCG (s) "
        "| products | LOBPCG residual | peak RSS per worker (MiB) | driver peak RSS (MiB) | landmark residual "
        "| transform residual |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {r['rows']:,} | {r['seconds']:.0f} | {r['start_fit_seconds']:.0f} | {r['graph_seconds']:.0f} | "
        f"{r['extension_and_operator_seconds']:.0f} | {r['solve_seconds']:.0f} | {r['products']} | "
        f"{r['lobpcg_residual']:.1e} | {', '.join(f'{v:.0f}' for v in r['worker_peak_rss_mib'])} | "
        f"{r['driver_peak_rss_mib']:.0f} | {r['landmark_residual']:.4f} | {r['transform_residual']:.4f} |\n",
        "Driver peak RSS up to the end of each stage (MiB): landmark start {graph_start:.0f}, graph {graph_end:.0f}, "
        "extension + operator {solve_start:.0f}, LOBPCG {solve_end:.0f}, embedding written {written:.0f}; the "
        "transform check after the timed run makes up the rest of the peak.\n".format(**r["driver_peak_by_stage_mib"]),
        f"Eigenvalues 1 - lambda_k (epsilon {r['epsilon']:.4f} for all rows, {r['landmark_epsilon']:.4f} for the "
        "landmarks; the kernel scale differs, so compare the ratios to the first):\n",
        "| k | all rows | landmarks | ratio to k = 1, all rows | ratio to k = 1, landmarks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for j in range(len(lam)):
        lines.append(
            f"| {j + 1} | {1 - lam[j]:.4e} | {1 - lam_l[j]:.4e} | {(1 - lam[j]) / (1 - lam[0]):.3f} | "
            f"{(1 - lam_l[j]) / (1 - lam_l[0]):.3f} |"
        )
    return r, "\n".join(lines) + "\n"


def run_landmarks(rows: int):
    r = run_child(SCRIPT, "landmarks", str(rows), timeout=6 * 3600)
    lines = [
        "## The default fit of the same rows on the same cluster (landmark mode)\n",
        f"DiffusionMap(n_components=5, n_neighbors=15) on the {r['rows']:,}-row store: landmarks='auto' chose",
        f"{r['landmarks']:,} landmarks (mode {r['mode']}); every row embedded by the Nyström extension and",
        "gathered in the driver.\n",
        "| rows | wall time (s) | peak RSS per worker (MiB) | driver peak RSS (MiB) | rows with finite coordinates |",
        "| --- | --- | --- | --- | --- |",
        f"| {r['rows']:,} | {r['seconds']:.0f} | {', '.join(f'{v:.0f}' for v in r['worker_peak_rss_mib'])} | "
        f"{r['driver_peak_rss_mib']:.0f} | {r['finite_rows']:,} |",
    ]
    return r, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["graph", "solver", "diffusion", "landmarks", "all"], nargs="*", default="all")
    ap.add_argument("--rows", type=int, default=None, help="10M for graph, 5M for diffusion")
    ap.add_argument("--partitions", default="auto")
    args = ap.parse_args()
    name = "partitioned" if args.rows is None else f"partitioned-trial-{args.rows}"
    runners = {
        "graph": lambda: run_graph(args.rows or 10_000_000, args.partitions),
        "solver": run_solver,
        "diffusion": lambda: run_diffusion(args.rows or 5_000_000),
        "landmarks": lambda: run_landmarks(args.rows or 5_000_000),
    }
    run_sections(name, runners, args.case)


if __name__ == "__main__":
    main()
