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
memory    Isomap on the 10M-row swiss roll store with 2 workers limited to
          2 GiB each: completes? wall time, peak RSS of each worker (sampled
          every 0.5 s) and of the driver.

Usage: python benchmarks/bench_cluster.py [overhead|memory|all]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
PCA_STORE = DATA / "spiked-1M-100-f32.zarr"


def job(method, store):
    import bigdr

    out = Path(tempfile.mkdtemp(dir=DATA)) / "y.zarr"
    model = bigdr.PCA(10) if method == "pca" else bigdr.Isomap()
    Y = model.fit_transform(f"{store}/X")
    bigdr.write_zarr(Y, out)
    shutil.rmtree(out.parent)


def busy_intervals(stream):
    """Union of task intervals (seconds), by prefix of the task key."""
    spans = sorted((s["start"], s["stop"]) for t in stream for s in t["startstops"] if s["action"] == "compute")
    total, end = 0.0, None
    for a, b in spans:
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    by_prefix = {}
    for t in stream:
        name = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
        prefix = str(name).rsplit("-", 1)[0]
        for s in t["startstops"]:
            if s["action"] == "compute":
                by_prefix[prefix] = by_prefix.get(prefix, 0.0) + s["stop"] - s["start"]
    return total, by_prefix


def child(args):
    what = args[0]
    if what == "overhead":
        method, where = args[1], args[2]
        store = PCA_STORE if method == "pca" else swiss_roll_store(1_000_000)
        if where == "threads":
            job(method, store)  # untimed first call: imports, thread pools, page cache
            t0 = time.perf_counter()
            job(method, store)
            return {"seconds": time.perf_counter() - t0}
        import dask
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client, \
                dask.config.set(scheduler=client.get):
            job(method, store)  # untimed first call on the workers too
            from distributed import get_task_stream

            with get_task_stream(client) as ts:
                t0 = time.perf_counter()
                job(method, store)
                seconds = time.perf_counter() - t0
            busy, by_prefix = busy_intervals(ts.data)
        return {"seconds": seconds, "busy_seconds": busy, "task_seconds": by_prefix}
    if what == "memory":
        import dask
        import psutil
        from distributed import Client, LocalCluster

        store = swiss_roll_store(10_000_000)
        peaks: dict = {}
        stop = threading.Event()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None, memory_limit="2GiB") as cluster, Client(cluster) as client, \
                dask.config.set(scheduler=client.get):

            def sample():
                while not stop.wait(0.5):
                    try:
                        for w, rss in client.run(lambda: psutil.Process().memory_info().rss).items():
                            peaks[w] = max(peaks.get(w, 0), rss)
                    except Exception:
                        pass

            thread = threading.Thread(target=sample, daemon=True)
            thread.start()
            with PeakRSS() as rss:
                t0 = time.perf_counter()
                job("isomap", store)
                seconds = time.perf_counter() - t0
            stop.set()
            thread.join()
        return {"seconds": seconds, "driver_peak_rss_mib": rss.peak / 2**20,
                "worker_peak_rss_mib": sorted(v / 2**20 for v in peaks.values())}
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
    lines = ["## 2-worker local cluster against the threaded scheduler, 1M rows (fit + embedding written to zarr)\n",
             "| method | threads (2) | cluster (2 processes x 1 thread) | ratio | cluster: any worker busy | "
             "cluster: driver alone | cluster: worker utilisation |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for m in ("pca", "isomap"):
        th = statistics.median(r["seconds"] for r in res[f"{m}/threads"])
        cl_runs = res[f"{m}/cluster"]
        cl = statistics.median(r["seconds"] for r in cl_runs)
        busy = statistics.median(r["busy_seconds"] / r["seconds"] for r in cl_runs)
        util = statistics.median(sum(r["task_seconds"].values()) / (2 * r["seconds"]) for r in cl_runs)
        lines.append(f"| {m} | {th:.2f} s | {cl:.2f} s | {cl / th:.2f} | {100 * busy:.0f}% | {100 * (1 - busy):.0f}% | "
                     f"{100 * util:.0f}% |")
    lines.append("\nMedians of 3 interleaved rounds, each in a fresh process; the cluster is started before the "
                 "timer. 'Any worker busy': share of wall time when at least one task ran; 'driver alone': the rest "
                 "(building graphs, in-memory graph and eigenproblems), which more workers do not shorten; "
                 "'utilisation': task time summed over both workers / (2 x wall).")
    for m in ("pca", "isomap"):
        r = res[f"{m}/cluster"][-1]
        total = sum(r["task_seconds"].values())
        top = sorted(r["task_seconds"].items(), key=lambda kv: -kv[1])[:5]
        lines.append(f"\n{m}, task time by kind (last round, summed over workers, {total:.1f} s in all): "
                     + ", ".join(f"`{k[:40]}` {v:.1f} s" for k, v in top))
    return "\n".join(lines) + "\n"


def run_memory():
    r = run_child(SCRIPT, "memory", timeout=7200)
    print(r, flush=True)
    lines = ["## 10M-row Isomap on workers limited to 2 GiB (2 workers x 1 thread, zarr store on disk)\n",
             "| rows | wall time | worker peak RSS (MiB, each) | driver peak RSS (MiB) |", "| --- | --- | --- | --- |",
             f"| 10,000,000 | {r['seconds']:.1f} s | {', '.join(f'{v:.0f}' for v in r['worker_peak_rss_mib'])} | "
             f"{r['driver_peak_rss_mib']:.0f} |"]
    return r, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["overhead", "memory", "all"], nargs="*", default=["all"])
    args = ap.parse_args()
    run_sections("cluster", {"overhead": run_overhead, "memory": run_memory}, args.case)


if __name__ == "__main__":
    main()
