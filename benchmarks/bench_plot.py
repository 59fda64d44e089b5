"""Pictures of millions of points (issue 15): ``bigdr plot`` from a zarr store.

The shared 10M-row swiss roll store (float64; columns 0 and 2, the spiral, drawn),
density, coloured by the roll coordinate, and by five categories of it; one
fresh process per case, the command line as a user runs it (peak RSS of the
process, seconds). The pictures are written to ``benchmarks/data/``; the one
coloured by the roll coordinate is ``docs/_static/plot-10M-value.png``.

Section aggregate: the pixel counts by category, bigdr's against datashader's,
and each one's whole picture, interleaved over 3 rounds.

Usage: python benchmarks/bench_plot.py [plot|aggregate|all]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import dask

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
N = 10_000_000
#: Category colours of the datashader picture (matplotlib's tab10).
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
#: The aggregate section's runs: the pixel counts alone, then the whole picture of each engine.
ENGINES = ("bigdr", "datashader", "bigdr picture", "datashader picture")


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


def aggregate_child(engine: str) -> dict:
    """The pixel counts per category of 10M rows from the zarr store: bigdr's tree-reduced bincounts
    (what ``bigdr plot`` draws from) against datashader's ``Canvas.points`` on a dask DataFrame of the
    same columns, 800 pixels along the longer side (bigdr's pixels are square) and 800 x 800."""
    import dask.array as da
    import numpy as np

    import bigdr
    from bigdr.io import open_zarr

    store = str(swiss_roll_store(N))
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        X = bigdr.as_array(f"{store}/X")
        codes = (da.from_zarr(open_zarr(store, dataset="coords"))[:, 0] // 2.5).astype(np.float64)
        cols = da.concatenate([X[:, [0, 2]], codes.rechunk((X.chunks[0],))[:, None]], axis=1)
        if engine == "bigdr":
            from bigdr.plot import bin_embedding

            grid = bin_embedding(cols[:, :2], color_by=cols[:, 2], categorical=True, bins=800)[0].counts
        else:
            import dask.dataframe as dd
            import datashader as ds
            import pandas as pd

            lo, hi, cats = dask.compute(cols[:, :2].min(0), cols[:, :2].max(0), da.unique(cols[:, 2]))
            ddf = dd.from_dask_array(cols, columns=["x", "y", "c"])
            ddf["c"] = ddf["c"].astype(pd.CategoricalDtype(cats))
            canvas = ds.Canvas(plot_width=800, plot_height=800, x_range=(lo[0], hi[0]), y_range=(lo[1], hi[1]))
            agg = canvas.points(ddf, "x", "y", agg=ds.by("c", ds.count()))
            grid = agg.values
            if engine == "datashader picture":  # shaded by category, written as a PNG
                from datashader import transfer_functions as tf

                image = tf.set_background(tf.shade(agg, color_key=PALETTE[: len(cats)], how="eq_hist"), "white")
                image.to_pil().save(DATA / "plot-10M-categories-datashader.png")
        seconds = time.perf_counter() - t0
    return {"engine": engine, "seconds": seconds, "peak_rss_mib": rss.peak / 2**20, "rows": int(grid.sum())}


def run_aggregate():
    rounds = [[run_child(SCRIPT, "aggregate", e, timeout=3600) for e in ENGINES] for _ in range(3)]
    lines = [
        "## Aggregating 10,000,000 rows by category: bigdr's bincounts against datashader\n",
        "Counts per pixel and category (5 categories; 800 pixels along the longer side, square, for bigdr, 800 x 800 "
        "for datashader) of the 10M swiss roll's columns 0 and 2 "
        "from the zarr store, extent and categories included; a fresh process each, the four runs interleaved "
        "over 3 rounds, 2 dask threads. bigdr: `bigdr.plot.bin_embedding` (a tree reduction of `np.bincount` per block); "
        "datashader: `Canvas.points(ddf, agg=ds.by('c', ds.count()))` on `dask.dataframe.from_dask_array` of the "
        "same columns. The pictures: bigdr's `bigdr plot --color-by ... --categorical` as the plot section "
        "runs it (axes, legend, title; `plot-10M-categories.png`), and datashader's aggregate shaded by "
        "category (`tf.shade(agg, color_key=..., how='eq_hist')` on white, written by PIL; no axes or legend; "
        "`plot-10M-categories-datashader.png`).\n",
        "| engine | median seconds | median peak RSS (MiB) | rows counted |",
        "| --- | --- | --- | --- |",
    ]
    import numpy as np

    for i, engine in enumerate(ENGINES):
        runs = [r[i] for r in rounds]
        sec, rss = np.median([r["seconds"] for r in runs]), np.median([r["peak_rss_mib"] for r in runs])
        counted = f"{runs[0]['rows']:,}" if "rows" in runs[0] else "-"
        lines.append(f"| {engine} | {sec:.1f} | {rss:.0f} | {counted} |")
    return rounds, "\n".join(lines) + "\n"


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
        engine = sys.argv[3] if sys.argv[2] == "aggregate" else None
        out = (
            child(["categories"])
            if engine == "bigdr picture"
            else aggregate_child(engine)
            if engine
            else child(sys.argv[2:])
        )
        print(json.dumps(out))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["plot", "aggregate", "all"], nargs="*", default="all")
    args = ap.parse_args()
    run_sections("plot", {"plot": run_plot, "aggregate": run_aggregate}, args.case)


if __name__ == "__main__":
    main()
