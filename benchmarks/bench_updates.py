"""Incremental updates (issue 13): growing stores and models that learn from new rows.

Cases (each in one fresh process, BLAS at one thread):

isomap  The 10M-row swiss roll store (noise 0.05) copied, Isomap fitted with its
        defaults, then 20 batches of 100k rows (new seeds, same distribution)
        appended to the store (append_zarr) and learnt one by one
        (partial_fit). Per batch: append, update and transform wall time, the
        update's peak RSS (VmHWM reset before it), the drift flag. Then a
        batch shifted off the roll (height + 40) is measured for drift. At
        the end a uniform 10k-row sample of all 12M rows is embedded by the
        updated model and by a refit on all 12M rows (fit, and the embedding
        of every row written to a store: what keeping the embedding current
        by refitting costs): Procrustes disparity, and how far the first
        batch's rows moved between their placement and the end.
pca     100 batches of 100k x 100 (spiked covariance, spikes 20, 10, 5)
        appended to a store and merged by PCA.partial_fit (covariance state);
        per-batch times, then the cost of one partial_fit against the batch
        size (25k-400k rows) on the model that has seen 10M rows, and the
        model against a one-pass fit of the whole store.

diffusion  The same sequence for DiffusionMap in landmark mode (20,000
        landmarks, as in results/spectral.md).

umap    umap-learn's UMAP.update against Isomap.partial_fit on 200k swiss-roll rows
        then 20 batches of 10k: time per batch and how far earlier rows move.

relax   Isomap's geodesic relaxation: seconds and accuracy against a full
        Dijkstra re-solve, for several propagation thresholds.

Usage: python benchmarks/bench_updates.py [isomap|diffusion|relax|pca|umap|all]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
BATCHES = 20
BATCH_ROWS = 100_000
DIFFUSION_LANDMARKS = 20_000


def reset_peak() -> None:
    """Reset this process's peak-RSS counter (VmHWM) to the current RSS."""
    Path("/proc/self/clear_refs").write_text("5")


def high_water_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def roll_batch(seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(BATCH_ROWS, noise=0.05, seed=seed)
    X, coords = np.ascontiguousarray(X.compute()), np.ascontiguousarray(coords.compute())
    X[:, 1] += shift  # the height axis: outside the trained range 0..21
    return X, coords


def disparity(A: np.ndarray, B: np.ndarray) -> float:
    from scipy.spatial import procrustes

    return float(procrustes(A, B)[2])


def make_model(kind: str):
    import bigdr

    if kind == "isomap":
        return bigdr.Isomap()  # defaults: a sampled graph of 100k rows, 256 landmarks at 10M rows
    return bigdr.DiffusionMap(landmarks=DIFFUSION_LANDMARKS)  # as in results/spectral.md


def child_graph(kind: str) -> dict:
    import dask.array as da
    import zarr

    import bigdr

    work = Path(tempfile.mkdtemp(dir=DATA))
    store = work / "all.zarr"
    shutil.copytree(swiss_roll_store(10_000_000), store)
    try:
        model = make_model(kind)
        t0 = time.perf_counter()
        model.fit(f"{store}/X")
        fit_s = time.perf_counter() - t0
        steps, first_rows, first_placed = [], None, None
        for i in range(BATCHES):
            X, coords = roll_batch(1000 + i)
            t0 = time.perf_counter()
            bigdr.append_zarr({"X": X, "coords": coords}, store, source=f"batch {i}")
            append_s = time.perf_counter() - t0
            reset_peak()
            t0 = time.perf_counter()
            model.partial_fit(X)
            update_s = time.perf_counter() - t0
            peak = high_water_mib()
            t0 = time.perf_counter()
            Y = model.transform(X)
            transform_s = time.perf_counter() - t0
            if i == 0:
                first_rows, first_placed = X[:10_000], Y[:10_000]
            steps.append(
                {
                    "batch": i,
                    "append_s": append_s,
                    "update_s": update_s,
                    "transform_s": transform_s,
                    "update_peak_rss_mib": peak,
                    "reference_rows": len(model.reference_rows_),
                    "drift_fraction": model.drift_["fraction"],
                    "refit_advised": model.drift_["refit_advised"],
                }
            )
            print(json.dumps(steps[-1]), file=sys.stderr)
        shifted, _ = roll_batch(5000, shift=40.0)
        shifted_report = model.measure_drift(shifted)
        moved = model.transform(first_rows) - first_placed
        spread = float(np.ptp(first_placed, axis=0).max())
        n_all = zarr.open(str(store), mode="r")["X"].shape[0]
        rng = np.random.default_rng(7)
        sample_idx = np.sort(rng.choice(n_all, size=10_000, replace=False))
        sample = zarr.open(str(store), mode="r")["X"].get_orthogonal_selection((sample_idx, slice(None)))
        Y_updated = model.transform(sample)
        t0 = time.perf_counter()
        refit = make_model(kind).fit(f"{store}/X")
        refit_fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        bigdr.write_zarr(refit.transform(da.from_zarr(str(store), component="X")), work / "refit.zarr")
        refit_embed_s = time.perf_counter() - t0
        Y_refit = refit.transform(sample)
        return {
            "rows_fitted": 10_000_000,
            "rows_at_end": int(n_all),
            "fit_s": fit_s,
            "graph_rows": len(model.reference_rows_),
            "landmarks": len(getattr(model, "landmark_indices_", model.reference_rows_)),
            "steps": steps,
            "shifted_drift": shifted_report,
            "disparity_updated_vs_refit": disparity(Y_updated, Y_refit),
            "first_batch_moved_max": float(np.abs(moved).max()),
            "first_batch_moved_median": float(np.median(np.linalg.norm(moved, axis=1))),
            "embedding_spread": spread,
            "refit_fit_s": refit_fit_s,
            "refit_embed_write_s": refit_embed_s,
            "store_appends": len(zarr.open(str(store), mode="r").attrs["bigdr_appends"]),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


RELAX_RTOLS = (0.5, 0.1, 1e-2, 1e-3, 1e-4)


def child_relax() -> dict:
    """Geodesic relaxation thresholds against a full Dijkstra re-solve of the updated graph."""
    import bigdr
    from bigdr.blockwise.sampling import row_keys
    from bigdr.core.triangulation import landmark_mds, triangulate_distances
    from bigdr.graph.incremental import relax_geodesics, reservoir, update_knn
    from bigdr.graph.sparse import csr_from_lists, landmark_geodesics

    X = _roll(1_010_000, 0)
    model = bigdr.Isomap(landmarks=256, max_samples=100_000).fit(X[:1_000_000])
    batch = X[1_000_000:]
    keys = row_keys(1_000_000, 1_010_000, model.seed_)
    protected = np.zeros(len(model.reference_rows_), bool)
    protected[model.landmark_indices_] = True
    keep, enter = reservoir(model.reference_keys_, protected, keys, model.reference_cap_)
    upd = update_knn(model.reference_rows_, model.graph_indices_, model.graph_distances_, keep, batch[enter])
    graph = csr_from_lists(upd.indices, upd.distances)
    landmarks = upd.old_position[model.landmark_indices_]
    t0 = time.perf_counter()
    G_full = landmark_geodesics(graph, landmarks)
    full_s = time.perf_counter() - t0

    def embed(G):
        sq = G[landmarks].astype(np.float64) ** 2
        return triangulate_distances(G, landmark_mds((sq + sq.T) / 2, 2, 0))

    Y_full = embed(G_full)
    start = np.vstack([model.geodesics_[keep], np.full((int(enter.sum()), len(landmarks)), np.inf, np.float32)])
    out = []
    for rtol in RELAX_RTOLS:
        G = start.copy()
        t0 = time.perf_counter()
        touched = relax_geodesics(graph, G, upd.changed, rtol=rtol)
        seconds = time.perf_counter() - t0
        ok = np.isfinite(G_full)
        out.append(
            {
                "rtol": rtol,
                "seconds": seconds,
                "rows_touched": touched,
                "max_rel_difference": float(np.abs(G[ok] - G_full[ok]).max() / G_full[ok].max()),
                "disparity_to_full": disparity(embed(G), Y_full),
            }
        )
        print(json.dumps(out[-1]), file=sys.stderr)
    return {
        "reference_rows": len(upd.rows),
        "entering": int(enter.sum()),
        "changed_lists": len(upd.changed),
        "full_resolve_s": full_s,
        "thresholds": out,
    }


def run_relax() -> tuple[dict, str]:
    r = run_child(SCRIPT, "relax", env=ONE_THREAD, timeout=7200)
    rows = "\n".join(
        f"| {t['rtol']:g} | {t['seconds']:.2f} | {t['rows_touched']:,} | {t['max_rel_difference']:.1e} | "
        f"{t['disparity_to_full']:.1e} |"
        for t in r["thresholds"]
    )
    md = f"""## Geodesic relaxation: which decreases to propagate

A 1M-row swiss roll, Isomap with a sampled graph of {r["reference_rows"]:,} reference rows and 256 landmarks; a
batch of 10,000 rows of which {r["entering"]:,} enter the reference set ({r["changed_lists"]:,} neighbour lists
change). The geodesics are relaxed from the changed rows, propagating only decreases larger than the
threshold, and compared with a full Dijkstra re-solve of the updated graph ({r["full_resolve_s"]:.1f} s): the
largest geodesic difference (relative to the largest geodesic) and the Procrustes disparity of the landmark
embeddings. The default threshold is 0.1.

| threshold | seconds | rows whose distances changed | largest difference | disparity to the re-solve |
| --- | --- | --- | --- | --- |
{rows}
"""
    return r, md


UMAP_BASE, UMAP_BATCH, UMAP_BUDGET_S = 200_000, 10_000, 2700


def _roll(n: int, seed: int) -> np.ndarray:
    from bigdr.datasets import make_swiss_roll

    X, _ = make_swiss_roll(n, noise=0.05, seed=seed)
    return np.ascontiguousarray(X.compute())


def _moved(before: np.ndarray, after: np.ndarray) -> dict:
    """How far earlier points moved, as a fraction of the embedding's extent."""
    extent = float(np.ptp(before, axis=0).max())
    step = np.linalg.norm(after - before, axis=1) / extent
    return {"median": float(np.median(step)), "p99": float(np.quantile(step, 0.99)), "max": float(step.max())}


def child_umap(which: str) -> dict:
    """200k swiss-roll rows fitted, then 20 batches of 10k: umap-learn's UMAP.update or bigdr's Isomap.partial_fit."""
    import bigdr

    X0 = _roll(UMAP_BASE, 0)
    batches = [_roll(UMAP_BATCH, 3000 + i) for i in range(BATCHES)]
    t0 = time.perf_counter()
    if which == "umap":
        import umap

        model = umap.UMAP(n_components=2, random_state=0).fit(X0)
        embed_base = lambda: np.asarray(model.embedding_[:UMAP_BASE])  # noqa: E731
    else:
        model = bigdr.Isomap().fit(X0)
        embed_base = lambda: model.transform(X0)  # noqa: E731
    fit_s = time.perf_counter() - t0
    first = previous = embed_base()
    steps, started = [], time.perf_counter()
    for i, X in enumerate(batches):
        t0 = time.perf_counter()
        if which == "umap":
            model.update(X)  # appends the rows and re-optimises the embedding of all rows
        else:
            model.partial_fit(X)
            model.transform(X)  # place the batch, as UMAP.update does
        seconds = time.perf_counter() - t0
        now = embed_base()
        steps.append({"batch": i, "seconds": seconds, "moved_since_last": _moved(previous, now)})
        print(json.dumps(steps[-1]), file=sys.stderr)
        previous = now
        if time.perf_counter() - started > UMAP_BUDGET_S:
            break
    version = __import__("umap").__version__ if which == "umap" else bigdr.__version__
    return {
        "which": which,
        "version": version,
        "fit_s": fit_s,
        "steps": steps,
        "moved_since_fit": _moved(first, previous),
    }


def spiked_batch(b: int, rows: int = BATCH_ROWS, p: int = 100) -> np.ndarray:
    from bigdr.datasets import spike_directions

    V = spike_directions(p, 3, seed=0)
    rng = np.random.default_rng([0, 7, b])
    G = rng.standard_normal((rows, 3))
    return rng.standard_normal((rows, p)) + (G * np.sqrt([20.0, 10.0, 5.0])) @ V


def child_pca() -> dict:
    import bigdr

    work = Path(tempfile.mkdtemp(dir=DATA))
    store = work / "pca.zarr"
    try:
        model = bigdr.PCA(10, svd_solver="covariance")
        steps = []
        for b in range(100):
            X = spiked_batch(b)
            t0 = time.perf_counter()
            if b == 0:
                bigdr.write_zarr(X, store, chunk_rows=BATCH_ROWS)
            else:
                bigdr.append_zarr(X, store)
            append_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            model.partial_fit(X)
            steps.append({"batch": b, "append_s": append_s, "update_s": time.perf_counter() - t0})
        by_size = {}
        for rows in (25_000, 50_000, 100_000, 200_000, 400_000):
            X = spiked_batch(10_000 + rows, rows=rows)
            times = []
            for _ in range(3):
                trial = bigdr.PCA(10, svd_solver="covariance")
                trial.__dict__.update(
                    {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(model).items()}
                )
                t0 = time.perf_counter()
                trial.partial_fit(X)
                times.append(time.perf_counter() - t0)
            by_size[rows] = statistics.median(times)
        t0 = time.perf_counter()
        full = bigdr.PCA(10, svd_solver="covariance").fit(str(store))
        fit_s = time.perf_counter() - t0
        return {
            "steps": steps,
            "update_s_by_batch_rows": by_size,
            "rows_seen": model.n_samples_seen_,
            "one_pass_fit_s": fit_s,
            "max_component_difference": float(np.abs(full.components_ - model.components_).max()),
            "max_variance_rel_difference": float(
                np.abs(full.explained_variance_ / model.explained_variance_ - 1).max()
            ),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def child(args: list[str]) -> None:
    if args[0] == "pca":
        out = child_pca()
    elif args[0] == "relax":
        out = child_relax()
    elif args[0] in ("umap", "bigdr-isomap"):
        out = child_umap(args[0])
    else:
        out = child_graph(args[0])
    print(json.dumps(out, default=float))


def _med(values: list[float]) -> float:
    return statistics.median(values)


def run_isomap() -> tuple[dict, str]:
    return run_graph("isomap")


def run_diffusion() -> tuple[dict, str]:
    return run_graph("diffusion")


def run_graph(kind: str) -> tuple[dict, str]:
    r = run_child(SCRIPT, kind, env=ONE_THREAD, timeout=7200)
    steps = r["steps"]
    upd = [s["update_s"] for s in steps]
    tr = [s["transform_s"] for s in steps]
    ratio_tr = [s["update_s"] / s["transform_s"] for s in steps]
    refit = r["refit_fit_s"] + r["refit_embed_write_s"]
    peaks = [s["update_peak_rss_mib"] for s in steps]
    r["summary"] = {
        "median_update_s": _med(upd),
        "median_transform_s": _med(tr),
        "median_update_over_transform": _med(ratio_tr),
        "refit_s": refit,
        "refit_over_median_update": refit / _med(upd),
        "refit_fit_only_over_median_update": r["refit_fit_s"] / _med(upd),
        "peak_rss_min_max_mib": [min(peaks), max(peaks)],
        "drift_flags_in_distribution": sum(s["refit_advised"] for s in steps),
    }
    s = r["summary"]
    rows = "\n".join(
        f"| {t['batch']} | {t['append_s']:.2f} | {t['update_s']:.2f} | {t['transform_s']:.2f} | "
        f"{t['update_s'] / t['transform_s']:.2f} | {t['update_peak_rss_mib']:.0f} | {t['reference_rows']:,} | "
        f"{100 * t['drift_fraction']:.2f}% | {t['refit_advised']} |"
        for t in steps
    )
    what = (
        f"Isomap with its defaults (sampled graph of {r['graph_rows']:,} rows, {r['landmarks']} landmarks, k = 10)"
        if kind == "isomap"
        else f"DiffusionMap in landmark mode ({r['graph_rows']:,} landmarks, k = 15, alpha = 1, t = 1)"
    )
    title = "Isomap" if kind == "isomap" else "DiffusionMap"
    steps_done = "geodesic relaxation, landmark MDS" if kind == "isomap" else "kernel, warm-started eigensolver"
    md = f"""## {title}: 10M-row swiss roll, then {BATCHES} batches of {BATCH_ROWS:,} rows (`refresh`)

{what}; BLAS one thread.
Fit on 10M rows: {r["fit_s"]:.1f} s. Each batch is appended to the store (`append_zarr`, X and coords
together), then learnt (`partial_fit`: drift, reservoir, kNN lists, {steps_done}, alignment), then placed
(`transform`, to numpy).

| batch | append (s) | update (s) | transform (s) | update / transform | update peak RSS (MiB) | reference rows | rows beyond 99th pct | refit advised |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
{rows}

- Median update {s["median_update_s"]:.2f} s; median transform of the batch {s["median_transform_s"]:.2f} s;
  median ratio update / transform **{s["median_update_over_transform"]:.2f}** (goal: at most 3).
- Refit on all {r["rows_at_end"]:,} rows: fit {r["refit_fit_s"]:.1f} s + embedding of every row written
  {r["refit_embed_write_s"]:.1f} s = {refit:.1f} s, **{s["refit_over_median_update"]:.0f}x** the median update
  (goal: at least 20x); the fit alone is {s["refit_fit_only_over_median_update"]:.1f}x.
- Peak RSS of the updates: {s["peak_rss_min_max_mib"][0]:.0f} to {s["peak_rss_min_max_mib"][1]:.0f} MiB.
- After the last update, a uniform 10k-row sample of all rows embedded by the updated model and by the
  refit: Procrustes disparity **{r["disparity_updated_vs_refit"]:.2e}** (goal: at most 1e-3).
- The first batch's rows moved between their placement and the end by at most
  {r["first_batch_moved_max"]:.3f} (median {r["first_batch_moved_median"]:.4f}) on an embedding
  {r["embedding_spread"]:.1f} wide.
- Drift: refit advised on {s["drift_flags_in_distribution"]} of {BATCHES} in-distribution batches; on a batch
  shifted off the roll (height + 40): {100 * r["shifted_drift"]["fraction"]:.1f}% of rows beyond the training
  99th percentile, refit advised = **{r["shifted_drift"]["refit_advised"]}**.
"""
    return r, md


def run_umap() -> tuple[dict, str]:
    runs = {w: run_child(SCRIPT, w, env=ONE_THREAD, timeout=7200) for w in ("bigdr-isomap", "umap")}
    return runs, umap_markdown(runs)


def umap_markdown(runs: dict) -> str:
    rows = []
    per_batch = {w: _med([x["seconds"] for x in r["steps"][1:]]) for w, r in runs.items()}
    for w, r in runs.items():
        st = r["steps"]
        moved = [x["moved_since_last"]["median"] for x in st]
        rows.append(
            f"| {w} | {r['fit_s']:.1f} | {len(st)} | {st[0]['seconds']:.2f} | "
            f"{_med([x['seconds'] for x in st[1:]]):.2f} | {moved[0]:.1e} | {_med(moved[1:]):.1e} | "
            f"{r['moved_since_fit']['median']:.1e} | {r['moved_since_fit']['p99']:.1e} |"
        )
    return f"""## Side by side with umap-learn: {UMAP_BASE:,} swiss-roll rows, then {BATCHES} batches of {UMAP_BATCH:,}

umap-learn {runs["umap"]["version"]} `UMAP(n_components=2)` with its `update(X)` per batch (the closest it
offers to learning from new rows: it appends them, updates its neighbour index and re-optimises the embedding),
against bigdr's `Isomap()` with `partial_fit(X)` then `transform(X)` per batch. Movement: how far the first
{UMAP_BASE:,} rows' coordinates moved, as a fraction of the embedding's extent (median row). BLAS one thread;
numba may use both vCPUs for UMAP. Each method in a fresh process.

| method | fit (s) | batches | first batch (s) | median of the other batches (s) | movement in the first batch | median movement per later batch | movement fit -> end (median row) | (99th pct row) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
{chr(10).join(rows)}

In this run, umap-learn's first `update` moved the earlier points by a fifth of the embedding's extent, so any coordinates
stored or shown before it are stale; later updates barely moved them (its optimisation then hardly touches old
points). bigdr's updates move earlier rows by about 1e-5 of the extent per batch (aligned by Procrustes), and
cost {per_batch["bigdr-isomap"] / per_batch["umap"]:.2f} of UMAP's per batch here (medians of the later batches).
"""


def run_pca() -> tuple[dict, str]:
    r = run_child(SCRIPT, "pca", env=ONE_THREAD, timeout=7200)
    steps = r["steps"]
    first, last = steps[1:11], steps[-10:]
    by = {int(k): v for k, v in r["update_s_by_batch_rows"].items()}
    r["summary"] = {
        "median_update_batches_1_10": _med([s["update_s"] for s in first]),
        "median_update_batches_90_99": _med([s["update_s"] for s in last]),
        "median_append_s": _med([s["append_s"] for s in steps[1:]]),
    }
    s = r["summary"]
    size_rows = "\n".join(f"| {k:,} | {v:.3f} | {1e6 * v / k:.2f} |" for k, v in sorted(by.items()))
    md = f"""## PCA: 100 batches of 100k x 100 appended and merged (`partial_fit`, covariance state)

BLAS one thread. Median `partial_fit` of a 100k-row batch: {s["median_update_batches_1_10"]:.3f} s over
batches 1-10 (up to 1.1M rows seen) and {s["median_update_batches_90_99"]:.3f} s over batches 90-99 (up to
10M rows seen): the cost does not grow with the rows seen. Median append of a batch to the store:
{s["median_append_s"]:.2f} s.

Cost of one more `partial_fit` on the model that has seen {r["rows_seen"]:,} rows, by batch size (median of 3):

| batch rows | seconds | microseconds per row |
| --- | --- | --- |
{size_rows}

The merged model against a one-pass fit of the {r["rows_seen"]:,}-row store ({r["one_pass_fit_s"]:.1f} s):
largest component difference {r["max_component_difference"]:.1e}, largest relative variance difference
{r["max_variance_rel_difference"]:.1e}.
"""
    return r, md


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*", default="all")
    args = parser.parse_args()
    os.environ.update(ONE_THREAD)
    runners = {"isomap": run_isomap, "diffusion": run_diffusion, "relax": run_relax, "pca": run_pca, "umap": run_umap}
    run_sections("updates", runners, args.cases)


if __name__ == "__main__":
    main()
