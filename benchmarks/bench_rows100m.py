"""100 million rows end to end through the command line (issue 33).

A 100M x 3 swiss roll (noise 0.05, float64) in a zarr store on disk, and the
10M store for comparison: ``bigdr fit-transform`` of Isomap and of a
diffusion map in landmark mode, each in a fresh process (generation, fit,
transform of every row and the written embedding all streaming). Reported:
wall time, the process's peak RSS, and the Spearman correlation of the first
coordinate with the roll's angle on 1M rows spread over the output.

Usage: python benchmarks/bench_rows100m.py [run]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
METHODS = {
    "isomap": ["--method", "isomap"],
    "diffusion-map": ["--method", "diffusion-map", "--landmarks", "20000", "--n-neighbors", "15"],
}
SAMPLE = 1_000_000


def child(method, store):
    """Run the CLI in a process of its own; report its wall time and peak RSS, and score the output."""
    import zarr
    from scipy.stats import spearmanr

    out = DATA / f"embedding-{method}-{Path(store).stem}.zarr"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "bigdr.cli",
        "fit-transform",
        *METHODS[method],
        "--no-progress",
        f"{store}/X",
        str(out),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    Y = zarr.open_array(str(out), mode="r")
    n = Y.shape[0]
    step = max(n // SAMPLE, 1)
    y = Y[::step, 0][:SAMPLE]
    t = zarr.open_group(str(store), mode="r")["coords"][::step, 0][:SAMPLE]
    shutil.rmtree(out, ignore_errors=True)
    return {
        "seconds": seconds,
        "peak_rss_mib": peak,
        "rows": int(n),
        "us_per_row": seconds / n * 1e6,
        "spearman_first": float(abs(spearmanr(y, t).statistic)),
        "stderr_tail": proc.stderr[-600:],
    }


#: Runs of each case: the 10M ones take under a minute (their peak RSS varies by about 5% from run to run:
#: 579-619 MiB for the diffusion map), the 100M ones six.
REPEATS = {10_000_000: 3, 100_000_000: 1}


def run_run():
    res = {}
    for n in (10_000_000, 100_000_000):
        t0 = time.perf_counter()
        store = swiss_roll_store(n)
        res[f"generate_{n}"] = time.perf_counter() - t0
        for method in METHODS:
            runs = [run_child(SCRIPT, method, str(store), timeout=7200) for _ in range(REPEATS[n])]
            for r in runs:
                print(method, n, {k: v for k, v in r.items() if k != "stderr_tail"}, flush=True)
            res[f"{method}_{n}"] = {
                **{
                    key: float(np.median([r[key] for r in runs]))
                    for key in ("seconds", "peak_rss_mib", "us_per_row", "spearman_first")
                },
                "rows": runs[0]["rows"],
                "runs": runs,
            }
    lines = [
        "## 100M x 3 swiss roll from zarr through `bigdr fit-transform`, against 10M\n",
        "Float64 stores (noise 0.05, seed 0) on local disk; one fresh process per run, 2 dask threads, BLAS on "
        "one thread. `bigdr fit-transform --method isomap` (defaults) and `--method diffusion-map --landmarks "
        "20000 --n-neighbors 15`: fit, transform of every row, embedding written to zarr. Peak RSS of the CLI "
        "process; Spearman of the first coordinate with the roll's angle on 1M rows evenly spread. "
        f"Medians of {REPEATS[10_000_000]} runs at 10M (range of the peak RSS in brackets) and "
        f"{REPEATS[100_000_000]} at 100M.\n",
        "| method | rows | runs | wall (s) | us per row | peak RSS (MiB) | Spearman, first coordinate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for method in METHODS:
        for n in (10_000_000, 100_000_000):
            r = res[f"{method}_{n}"]
            peaks = [x["peak_rss_mib"] for x in r["runs"]]
            spread = f" ({min(peaks):.0f}-{max(peaks):.0f})" if len(peaks) > 1 else ""
            lines.append(
                f"| {method} | {n:,} | {len(peaks)} | {r['seconds']:.1f} | {r['us_per_row']:.2f} | "
                f"{r['peak_rss_mib']:.0f}{spread} | {r['spearman_first']:.5f} |"
            )
    for method in METHODS:
        a, b = res[f"{method}_10000000"]["peak_rss_mib"], res[f"{method}_100000000"]["peak_rss_mib"]
        lines.append(f"\n{method}: peak RSS at 100M / at 10M (medians) = {b / a:.2f}.")
    return res, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["run", "all"], nargs="*", default="all")
    args = ap.parse_args()
    run_sections("rows100m", {"run": run_run}, args.case)


if __name__ == "__main__":
    main()
