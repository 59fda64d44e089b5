"""The same jobs on dask's threaded scheduler and on a local distributed cluster (issue 7).

Cases:

overhead  PCA (1M x 100 float32 store, 10 components) and Isomap (1M-row
          swiss roll store, defaults: sampled graph, 256 landmarks), fit and
          embedding written to zarr: threaded scheduler (2 threads) against a
          LocalCluster of 2 worker processes x 1 thread (started before the
          timer). 3 interleaved rounds, medians; fresh process each. On the
          cluster, the task stream splits the wall time into time when
          workers ran tasks (the parallel part) and time when none did (the
          driver: graph building, the in-memory solves).
dijkstra  Why Isomap's shortest paths gain from worker processes: 8 groups
          of 8 scipy Dijkstra sources over a 100k-row kNN graph (k = 10),
          run one after another, on 2 threads and on 2 processes.
memory    Isomap on the 10M-row swiss roll store with 2 workers limited to
          2 GiB each: completes? wall time, peak RSS of each worker (sampled
          every 0.5 s) and of the driver.

Usage: python benchmarks/bench_cluster.py [overhead|dijkstra|memory|all]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, WorkerPeakRSS, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
PCA_STORE = DATA / "spiked-1M-100-f32.zarr"


def job(method, store):
    import bigdr

    out = Path(tempfile.mkdtemp(dir=DATA)) / "y.zarr"
    model = bigdr.PCA(10) if method == "pca" else bigdr.Isomap()
    Y = model.fit_transform(f"{store}/X")
    bigdr.write_zarr(Y, out)
    shutil.rmtree(out.parent)


def _union(spans):
    """Total length of the union of (start, stop) intervals."""
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def split_time(records):
    """From (kind, start, stop) task records: seconds when any task ran, and per kind the
    seconds when a task of that kind ran (its phase's wall time) and its summed task time."""
    kinds = {}
    for kind, a, b in records:
        kinds.setdefault(kind, []).append((a, b))
    return _union([(a, b) for _, a, b in records]), {
        k: {"wall": _union(v), "task": sum(b - a for a, b in v)} for k, v in kinds.items()
    }


def _kind(key):
    name = key[0] if isinstance(key, tuple) else key
    return str(name).rsplit("-", 1)[0]


def child(args):
    what = args[0]
    if what == "overhead":
        method, where = args[1], args[2]
        store = PCA_STORE if method == "pca" else swiss_roll_store(1_000_000)
        if where == "threads":
            from dask.diagnostics import Profiler

            job(method, store)  # untimed first call: imports, thread pools, page cache
            with Profiler() as prof:
                t0 = time.perf_counter()
                job(method, store)
                seconds = time.perf_counter() - t0
            busy, kinds = split_time([(_kind(t.key), t.start_time, t.end_time) for t in prof.results])
            return {"seconds": seconds, "busy_seconds": busy, "kinds": kinds}
        import dask
        from distributed import Client, LocalCluster

        with (
            LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
            dask.config.set(scheduler=client.get),
        ):
            job(method, store)  # untimed first call on the workers too
            from distributed import get_task_stream

            with get_task_stream(client) as ts:
                t0 = time.perf_counter()
                job(method, store)
                seconds = time.perf_counter() - t0
            busy, kinds = split_time(
                [
                    (_kind(t["key"]), st["start"], st["stop"])
                    for t in ts.data
                    for st in t["startstops"]
                    if st["action"] == "compute"
                ]
            )
        return {"seconds": seconds, "busy_seconds": busy, "kinds": kinds}
    if what == "dijkstra":
        from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

        import numpy as np

        from bigdr.datasets import make_swiss_roll
        from bigdr.graph.knn import knn_graph
        from bigdr.graph.sparse import _dijkstra_group, to_csr

        X = make_swiss_roll(100_000, noise=0.05, seed=0)[0].compute()
        graph = to_csr(knn_graph(X, 10), "union", "distance")
        groups = [np.arange(8 * i, 8 * i + 8) for i in range(8)]
        out = {"sequential": [], "threads": [], "processes": []}
        with ThreadPoolExecutor(2) as threads, ProcessPoolExecutor(2) as procs:
            list(procs.map(_dijkstra_group, [graph] * 2, groups[:2]))  # start the processes
            for _ in range(3):
                t0 = time.perf_counter()
                for g in groups:
                    _dijkstra_group(graph, g)
                out["sequential"].append(time.perf_counter() - t0)
                for name, pool in (("threads", threads), ("processes", procs)):
                    t0 = time.perf_counter()
                    list(pool.map(_dijkstra_group, [graph] * len(groups), groups))
                    out[name].append(time.perf_counter() - t0)
        return out
    if what == "memory":
        import dask
        from distributed import Client, LocalCluster

        store = swiss_roll_store(10_000_000)
        with (
            LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                memory_limit="2GiB",
            ) as cluster,
            Client(cluster) as client,
            dask.config.set(scheduler=client.get),
        ):
            with WorkerPeakRSS(client) as workers, PeakRSS() as rss:
                t0 = time.perf_counter()
                job("isomap", store)
                seconds = time.perf_counter() - t0
        return {
            "seconds": seconds,
            "driver_peak_rss_mib": rss.peak / 2**20,
            "worker_peak_rss_mib": workers.peaks_mib,
        }
    raise ValueError(what)


def run_overhead():
    if not PCA_STORE.exists():
        from bigdr.datasets import generate

        generate("spiked", PCA_STORE, 1_000_000, n_features=100, dtype="float32", seed=0)
    runs = {(m, w): [] for m in ("pca", "isomap") for w in ("threads", "cluster")}
    for _ in range(3):
        for key in runs:
            r = run_child(SCRIPT, "overhead", *key)
            runs[key].append(r)
            print(key, json.dumps(r)[:300], flush=True)
    res = {f"{m}/{w}": v for (m, w), v in runs.items()}
    return res, render_overhead(res)


def render_overhead(res):
    med = statistics.median
    lines = [
        "## 2-worker local cluster against the threaded scheduler, 1M rows (fit + embedding written to zarr)\n",
        "| method | threads (2) | cluster (2 processes x 1 thread) | ratio | threads: driver alone | "
        "cluster: driver alone | cluster: worker utilisation |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in ("pca", "isomap"):
        th_runs, cl_runs = res[f"{m}/threads"], res[f"{m}/cluster"]
        th, cl = med(r["seconds"] for r in th_runs), med(r["seconds"] for r in cl_runs)
        alone = {
            w: med(1 - r["busy_seconds"] / r["seconds"] for r in runs)
            for w, runs in (("threads", th_runs), ("cluster", cl_runs))
        }
        util = med(sum(k["task"] for k in r["kinds"].values()) / (2 * r["seconds"]) for r in cl_runs)
        lines.append(
            f"| {m} | {th:.2f} s | {cl:.2f} s | {cl / th:.2f} | {100 * alone['threads']:.0f}% | "
            f"{100 * alone['cluster']:.0f}% | {100 * util:.0f}% |"
        )
    lines.append(
        "\nMedians of 3 interleaved rounds, each in a fresh process; the cluster is started before the "
        "timer. 'Driver alone': share of wall time when no task ran (building graphs, in-memory graph and "
        "eigenproblems in the driver), which more workers do not shorten. 'Utilisation': task time summed "
        "over both workers / (2 x wall).\n"
    )
    lines += [
        "### Where the time goes: wall time of each kind of task (median of 3)\n",
        "| method | task kind | what it does | threads | cluster |",
        "| --- | --- | --- | --- | --- |",
    ]
    for m in ("pca", "isomap"):
        th_runs, cl_runs = res[f"{m}/threads"], res[f"{m}/cluster"]
        walls = {}
        for w, runs in (("threads", th_runs), ("cluster", cl_runs)):
            for k in set().union(*(r["kinds"] for r in runs)):
                walls.setdefault(k, {})[w] = med(r["kinds"].get(k, {"wall": 0.0})["wall"] for r in runs)
        top = sorted(walls.items(), key=lambda kv: -max(kv[1].values()))[:4]
        for k, v in top:
            lines.append(
                f"| {m} | `{k[:48]}` | {WHAT.get(k, '')} | {v.get('threads', 0):.2f} s | {v.get('cluster', 0):.2f} s |"
            )
        for w, runs in (("threads", th_runs), ("cluster", cl_runs)):
            walls.setdefault("(driver alone)", {})[w] = med(r["seconds"] - r["busy_seconds"] for r in runs)
        v = walls["(driver alone)"]
        lines.append(
            f"| {m} | (driver alone) | serial: graph, CSR, components, eigenproblems, scheduling | "
            f"{v['threads']:.2f} s | {v['cluster']:.2f} s |"
        )
    return "\n".join(lines) + "\n"


#: What the main kinds of task do (for the table).
WHAT = {
    "_state_of_block": "PCA: per-block covariance statistics (parallel)",
    "matmul-getitem": "PCA: projection of each block (parallel)",
    "write_row_block-sum": "write of each row block to zarr (parallel)",
    "_embed_block": "Isomap: place each row block (neighbours, geodesics, triangulation; parallel)",
    "from-zarr-_embed_block": "Isomap: read and place each row block (parallel)",
    "_dijkstra_group": "Isomap: Dijkstra from groups of 8 landmarks (parallel on processes)",
    "_query_records": "kNN query of each block (parallel)",
    "from-zarr": "read of the sample (parallel)",
}


def run_dijkstra():
    r = run_child(SCRIPT, "dijkstra")
    med = {k: statistics.median(v) for k, v in r.items()}
    lines = [
        "## scipy Dijkstra on threads and on processes (64 sources in 8 groups, 100k-row graph)\n",
        "| one after another | 2 threads | 2 processes (graph sent with each task) |",
        "| --- | --- | --- |",
        f"| {med['sequential']:.2f} s | {med['threads']:.2f} s | {med['processes']:.2f} s |",
        "\nMedians of 3. scipy's Dijkstra holds the GIL, so threads run it one at a time; worker processes "
        "run it in parallel.",
    ]
    return r, "\n".join(lines) + "\n"


def run_memory():
    r = run_child(SCRIPT, "memory", timeout=7200)
    print(r, flush=True)
    lines = [
        "## 10M-row Isomap on workers limited to 2 GiB (2 workers x 1 thread, zarr store on disk)\n",
        "| rows | wall time | worker peak RSS (MiB, each) | driver peak RSS (MiB) |",
        "| --- | --- | --- | --- |",
        f"| 10,000,000 | {r['seconds']:.1f} s | {', '.join(f'{v:.0f}' for v in r['worker_peak_rss_mib'])} | "
        f"{r['driver_peak_rss_mib']:.0f} |",
    ]
    return r, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["overhead", "dijkstra", "memory", "all"], nargs="*", default="all")
    args = ap.parse_args()
    run_sections("cluster", {"overhead": run_overhead, "dijkstra": run_dijkstra, "memory": run_memory}, args.case)


if __name__ == "__main__":
    main()
