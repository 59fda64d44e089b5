"""Pictures of millions of points (issue 15): ``bigdr plot`` from a zarr store.

The shared 10M-row swiss roll store (float64; columns 0 and 2, the spiral, drawn),
density, coloured by the roll coordinate, and by four categories of it; one
fresh process per case, the command line as a user runs it (peak RSS of the
process, seconds). The pictures are written to ``benchmarks/data/``; the one
coloured by the roll coordinate is ``docs/_static/plot-10M-value.png``.

Usage: python benchmarks/bench_plot.py [plot|all]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
N = 10_000_000


def child(args):
    import dask.array as da
    import numpy as np

    from bigdr.cli.main import main
    from bigdr.io import open_zarr

    store = str(swiss_roll_store(N))
    out = DATA / f"plot-10M-{args[0]}.png"
    out.unlink(missing_ok=True)
    argv = ["plot", f"{store}/X", str(out), "--columns", "0,2", "--no-progress",
            "--title", f"10M-row swiss roll ({args[0]})"]  # fmt: skip
    if args[0] == "categories":
        codes = (da.from_zarr(open_zarr(store, dataset="coords"))[:, 0] // 2.5).astype(np.float64)
        tmp = Path(store).parent / "plot-categories.zarr"
        if not tmp.exists():
            import bigdr

            bigdr.write_zarr(codes[:, None], tmp)
        argv += ["--color-by", f"{tmp}:0", "--categorical"]
    elif args[0] == "value":
        argv += ["--color-by", f"{store}:0", "--color-dataset", "coords"]
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        assert main(argv) == 0
        seconds = time.perf_counter() - t0
    return {"case": args[0], "seconds": seconds, "peak_rss_mib": rss.peak / 2**20, "picture": out.name}


def run_plot():
    rows = [run_child(SCRIPT, c, timeout=3600) for c in ("density", "value", "categories")]
    lines = [
        "## bigdr plot, 10,000,000 rows from a zarr store (fresh process each)\n",
        "| colour | seconds | peak RSS (MiB) | picture |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['case']} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} | `{r['picture']}` |")
    return rows, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["plot", "all"], nargs="*", default=["all"])
    args = ap.parse_args()
    run_sections("plot", {"plot": run_plot}, args.case)


if __name__ == "__main__":
    main()
