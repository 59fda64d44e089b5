"""Dense wide data larger than memory (issue 33): 10M x 768 float32 on disk, more than this machine's RAM.

Data: embedding-like rows, as sentence or image encoders give: 64 clusters in a
32-dimensional latent space (cluster centres plus spread), mapped to 768
columns by a fixed random matrix, with noise on every column, each row scaled
to unit length; float32, written by ``bigdr.write_zarr`` in 16,384-row chunks
(about 31 GB; the page cache cannot hold it, so every pass reads from disk).

Runs, each in a fresh process, 2 dask threads, BLAS on one thread per thread,
the page cache dropped before each (root only):

* ``read``: a plain pass over every block (``_harness.read_pass``), the floor;
* ``pca``: ``PCA(50).fit`` (the solver ``auto`` picks for 768 columns);
* ``srp``: ``SparseRandomProjection(64).fit_transform`` written to a zarr store;
* ``chain``: ``PCA(50)`` fitted, every row transformed and written (10M x 50),
  then ``Isomap(2, max_samples=100_000, on_disconnected="join")`` (a sampled graph
  of 100,000 rows, landmarks; the clusters are components of the graph, joined) fitted on that
  store and every row embedded and written: time and peak RSS of each step;
* ``raw``: the same store written with ``compressors=None`` (the raw bytes, no
  zstd to decode): three read passes and three ``PCA(50).fit`` interleaved, two
  SRP runs;
* ``floor``: the processor time of a read pass and of ``PCA(50).fit``, and the
  covariance's arithmetic alone on blocks held in memory: what a fit cannot
  go below on this machine.

Usage: python benchmarks/bench_wide.py [main|raw|floor|all] [--rows N]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, drop_page_cache, read_pass, run_child, run_sections  # noqa: E402

SCRIPT = Path(__file__).resolve()
WIDTH, LATENT, CLUSTERS, CHUNK = 768, 32, 64, 16_384


def store(n: int, raw: bool = False) -> Path:
    """The store of ``n`` rows: zarr's default codec (zstd), or the raw bytes (``compressors=None``)."""
    return DATA / f"wide-{n // 1_000_000}M-{WIDTH}{'-raw' if raw else ''}.zarr"


def generate(n: int, raw: bool = False) -> float:
    """Write the store block by block (one 16,384-row block per task); returns the seconds."""
    import dask.array as da

    import bigdr

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((CLUSTERS, LATENT)) * 2.0
    spread = rng.uniform(0.3, 1.0, CLUSTERS)
    mix = rng.standard_normal((LATENT, WIDTH)) / np.sqrt(LATENT)

    def block(block_id=None):
        i = block_id[0]
        r = np.random.default_rng([1, i])
        rows = min(CHUNK, n - i * CHUNK)
        c = r.integers(CLUSTERS, size=rows)
        z = centres[c] + spread[c, None] * r.standard_normal((rows, LATENT))
        x = z @ mix + 0.3 * r.standard_normal((rows, WIDTH))
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    chunks = (tuple(min(CHUNK, n - s) for s in range(0, n, CHUNK)), (WIDTH,))
    X = da.map_blocks(block, chunks=chunks, dtype=np.float32)
    t0 = time.perf_counter()
    bigdr.write_zarr(X, store(n, raw), chunk_rows=CHUNK, compressors=None if raw else "auto")
    return time.perf_counter() - t0


def child(case: str, n: int, raw: bool = False) -> dict:
    import bigdr

    path = str(store(n, raw))
    cold = drop_page_cache()
    out: dict = {"case": case, "cold": cold}
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        if case == "read":
            read_pass(path)
        elif case == "pca":
            model = bigdr.PCA(50).fit(path)
            out.update(solver=model.svd_solver_, variance_ratio=float(model.explained_variance_ratio_.sum()))
        elif case == "srp":
            target = DATA / "wide-srp.zarr"
            shutil.rmtree(target, ignore_errors=True)
            bigdr.write_zarr(bigdr.SparseRandomProjection(64, random_state=0).fit_transform(path), target)
            shutil.rmtree(target, ignore_errors=True)
        elif case == "chain":
            pcs, emb = DATA / "wide-pca50.zarr", DATA / "wide-isomap.zarr"
            for p in (pcs, emb):
                shutil.rmtree(p, ignore_errors=True)
            pca = bigdr.PCA(50).fit(path)
            out["pca_fit_seconds"] = time.perf_counter() - t0
            bigdr.write_zarr(pca.transform(path), pcs)
            out["pca_written_seconds"] = time.perf_counter() - t0
            out["peak_after_pca_mib"] = rss.peak / 2**20
            # clusters: the graph has a component each; the sample capped (the default grows it with the
            # estimated dimension, to 1M rows for data like these)
            iso = bigdr.Isomap(2, max_samples=100_000, on_disconnected="join")
            bigdr.write_zarr(iso.fit_transform(str(pcs)), emb)
            out.update(isomap_mode=iso.mode_, graph_rows=len(iso.reference_rows_), dimension=iso.intrinsic_dimension_)
            for p in (pcs, emb):
                shutil.rmtree(p, ignore_errors=True)
        out["seconds"] = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_seconds"] = usage.ru_utime + usage.ru_stime  # all threads, the process's start included
    out["peak_rss_mib"] = rss.peak / 2**20
    return out


def covariance_floor(n: int, blocks: int = 64) -> dict:
    """The covariance's arithmetic alone: bigdr's block kernel on 2 threads over blocks already in memory.

    The first ``blocks`` 16,384-row blocks of the store are read first (not timed), then each is reduced
    by :func:`bigdr.core.stats.moments_block` on 2 threads, BLAS on one each; the time is scaled to the
    store's rows.
    """
    from concurrent.futures import ThreadPoolExecutor

    import zarr
    from threadpoolctl import threadpool_limits

    from bigdr.core.stats import moments_block

    z = zarr.open(str(store(n)), mode="r")
    held = [np.asarray(z[i * CHUNK : (i + 1) * CHUNK]) for i in range(blocks)]
    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(2) as pool:
        list(pool.map(moments_block, held[:4]))  # warm
        t0 = time.perf_counter()
        list(pool.map(moments_block, held))
        seconds = time.perf_counter() - t0
    return {"seconds_per_block": seconds / blocks, "seconds": seconds / blocks * n / CHUNK, "blocks_timed": blocks}


def run_floor(n: int) -> tuple[dict, str]:
    """Where a PCA's time goes on this machine: processor time of a read and a fit, and the arithmetic alone.

    With the raw store present (section ``raw``), its read and fit are measured too: there the read costs
    little processor time, and the arithmetic alone sets the fit's time.
    """
    res = {case: run_child(SCRIPT, case, str(n), timeout=3600) for case in ("read", "pca", "floor")}
    if store(n, raw=True).exists():
        res.update({f"{case}_raw": run_child(SCRIPT, case, str(n), "raw", timeout=3600) for case in ("read", "pca")})
    read, pca, floor = res["read"], res["pca"], res["floor"]
    busy = read["cpu_seconds"] / read["seconds"]
    least = (read["cpu_seconds"] + 2 * floor["seconds"]) / 2
    res["processor_floor_seconds"] = least

    def row(name: str, r: dict) -> str:
        return f"| {name} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['cpu_seconds'] / r['seconds']:.2f} |\n"

    md = (
        f"## Where a PCA's time goes ({n:,} x {WIDTH})\n\n"
        "One run each, as above (fresh process, page cache dropped, 2 dask threads, BLAS on one thread each). "
        "Processor time: user plus system time of the whole process. Arithmetic alone: bigdr's covariance "
        f"kernel on 2 threads over {floor['blocks_timed']} blocks of 16,384 rows already in memory, scaled to "
        "the store's rows.\n\n"
        "| run | wall (s) | processor time (s) | cores busy |\n| --- | --- | --- | --- |\n"
        + row("read pass (zstd store)", read)
        + row("PCA(50).fit (zstd store)", pca)
        + "".join(
            row(f"{c} (raw store)", res[f"{k}_raw"])
            for c, k in (("read pass", "read"), ("PCA(50).fit", "pca"))
            if f"{k}_raw" in res
        )
        + f"| covariance arithmetic alone, in memory | {floor['seconds']:.1f} | {2 * floor['seconds']:.1f} | 2 |\n\n"
        f"On the zstd store the read keeps {busy:.1f} of the 2 cores busy by itself, so the arithmetic cannot hide "
        f"behind it: a fit needs at least (read's processor time + the arithmetic's) / 2 = {least:.1f} s of wall "
        f"time, {least / read['seconds']:.2f} read passes; the fit took {pca['seconds'] / least:.2f}x that."
    )
    if "read_raw" in res:
        raw_read, raw_pca = res["read_raw"], res["pca_raw"]
        raw_least = max(raw_read["seconds"], (raw_read["cpu_seconds"] + 2 * floor["seconds"]) / 2)
        res["processor_floor_seconds_raw"] = raw_least
        md += (
            f" On the raw store the read takes {raw_read['seconds']:.1f} s and {raw_read['cpu_seconds']:.1f} s of "
            f"processor time, and the arithmetic alone {floor['seconds']:.1f} s: a fit needs at least "
            f"{raw_least:.1f} s, {raw_least / raw_read['seconds']:.2f} of its read passes; the fit took "
            f"{raw_pca['seconds'] / raw_least:.2f}x that."
        )
    return res, md + "\n"


def run_main(n: int, raw: bool = False) -> tuple[dict, str]:
    """The zstd store: reads, PCA, SRP and the chain; the raw store: three reads and PCAs interleaved, two SRPs."""
    flag = ["raw"] if raw else []
    generated = None if store(n, raw).exists() else run_child(SCRIPT, "generate", str(n), *flag, timeout=4 * 3600)
    res = {"generate": generated}
    order = (
        ("read", "pca", "read", "pca", "read", "pca", "srp", "srp") if raw else ("read", "pca", "read", "srp", "chain")
    )
    for case in order:
        r = run_child(SCRIPT, case, str(n), *flag, timeout=4 * 3600)
        res.setdefault(case, []).append(r)
        print(case, json.dumps(r), flush=True)

    def median(case: str, key: str = "seconds") -> float:
        return float(np.median([r[key] for r in res[case]]))

    read = median("read")
    size = sum(f.stat().st_size for f in store(n, raw).rglob("*") if f.is_file()) / 2**30
    pca = res["pca"][0]
    cold = "" if all(r["cold"] for k in order for r in res[k]) else " (page cache not dropped)"
    runs = (
        "Times are medians of three runs (read and PCA interleaved) and of two (SRP)"
        if raw
        else ("The read pass is the median of two runs")
    )
    codec = "as raw bytes (`compressors=None`)" if raw else "with zarr's default codec (zstd)"
    lines = [
        f"## {n:,} x {WIDTH} float32 on disk, {codec} ({size:.1f} GiB as stored; more than the machine's RAM)\n",
        "Embedding-like rows (64 clusters in a 32-D latent space, mapped to 768 columns, noise on every column, "
        f"unit length), written by `bigdr.write_zarr` in 16,384-row chunks {codec}. Each run in a fresh process, "
        f"2 dask threads, BLAS on one thread per thread, the page cache dropped first{cold}. {runs}. Processor "
        "time: user plus system time of the whole process.\n",
        "| run | time (s) | / read pass | processor time (s) | peak RSS (MiB) | notes |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| read pass | {read:.1f} | 1.00 | {median('read', 'cpu_seconds'):.0f} | "
        f"{median('read', 'peak_rss_mib'):.0f} | |",
        f"| PCA(50).fit | {median('pca'):.1f} | {median('pca') / read:.2f} | {median('pca', 'cpu_seconds'):.0f} | "
        f"{median('pca', 'peak_rss_mib'):.0f} | solver {pca['solver']}; variance kept {pca['variance_ratio']:.3f} |",
        f"| SparseRandomProjection(64), written | {median('srp'):.1f} | {median('srp') / read:.2f} | "
        f"{median('srp', 'cpu_seconds'):.0f} | {median('srp', 'peak_rss_mib'):.0f} | |",
    ]
    if not raw:
        chain = res["chain"][0]
        lines.append(
            f"| PCA(50) fit, transform written, then Isomap(2) fit and every row written | {chain['seconds']:.0f} | "
            f"{chain['seconds'] / read:.2f} | {chain['cpu_seconds']:.0f} | {chain['peak_rss_mib']:.0f} | PCA fit "
            f"{chain['pca_fit_seconds']:.0f} s, written at {chain['pca_written_seconds']:.0f} s (peak "
            f"{chain['peak_after_pca_mib']:.0f} MiB); Isomap {chain['isomap_mode']}, graph of {chain['graph_rows']:,} "
            f"rows, estimated dimension {chain['dimension']:.1f} |"
        )
    if raw:
        times = ", ".join(f"{r['seconds']:.1f}" for r in res["pca"])
        reads = ", ".join(f"{r['seconds']:.1f}" for r in res["read"])
        lines.append(f"\nThe runs: read {reads} s; PCA {times} s.")
    if generated:
        lines.append(f"\nGenerating and writing the store took {generated['seconds']:.0f} s.")
    return res, "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        n, raw = int(sys.argv[3]), sys.argv[4:] == ["raw"]
        if sys.argv[2] == "generate":
            out = {"seconds": generate(n, raw)}
        else:
            out = covariance_floor(n) if sys.argv[2] == "floor" else child(sys.argv[2], n, raw)
        print(json.dumps(out))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["main", "raw", "floor", "all"], nargs="*", default="all")
    ap.add_argument("--rows", type=int, default=10_000_000)
    args = ap.parse_args()
    run_sections(
        "wide",
        {
            "main": lambda: run_main(args.rows),
            "raw": lambda: run_main(args.rows, raw=True),
            "floor": lambda: run_floor(args.rows),
        },
        args.case,
    )


if __name__ == "__main__":
    main()
