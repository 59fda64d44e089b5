"""Isomap and landmark MDS at scale (issue 4).

Cases:

compare20k  20k-point swiss roll (noise 0.05, k = 10): scikit-learn's Isomap
            (exact, dense geodesics) against bigdr's default (landmark mode,
            256 landmarks) and the sampled-graph mode; wall time, peak RSS,
            Procrustes disparity to scikit-learn, Spearman of the first axis
            with the roll coordinate. Each run in a fresh process.
accuracy    5k swiss roll: disparity of landmark mode (by number of landmarks)
            and of the sampled-graph mode (by sample size) against exact
            Isomap; and at 1M rows, the sampled-graph default against the
            landmark mode on the graph of all rows.
scale       1M, 10M and 20M-row swiss rolls from zarr stores on disk: fit and
            embedding of every row written to a zarr store, in a fresh
            process; wall time (fit, embed + write), peak RSS, Spearman.

Usage: python benchmarks/bench_isomap.py [compare20k|accuracy|scale|all]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, embed_store, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
K = 10
ROUNDS = 3


def roll(n, seed=0):
    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(n, noise=0.05, seed=seed)
    return np.ascontiguousarray(X.compute()), coords[:, 0].compute()


def spearman(Y, t):
    from scipy.stats import spearmanr

    return float(max(abs(spearmanr(Y[:, j], t).statistic) for j in range(Y.shape[1])))


def disparity(A, B):
    from scipy.spatial import procrustes

    return float(procrustes(A, B)[2])


def fit_embed(method, X):
    if method == "sklearn":
        from sklearn.manifold import Isomap

        return Isomap(n_neighbors=K, n_components=2).fit_transform(X), "exact (dense)"
    import bigdr

    kw = {"bigdr-auto": {}, "bigdr-sampled-5k": {"max_samples": 5000}}[method]
    model = bigdr.Isomap(n_neighbors=K, **kw)
    return model.fit_transform(X), model.mode_


def child(args):
    what = args[0]
    if what == "compare":
        method = args[1]
        X, t = roll(20_000)
        fit_embed(method, X[:500])  # untimed first call: imports, thread pools
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            Y, mode = fit_embed(method, X)
            seconds = time.perf_counter() - t0
        out = DATA / f"isomap20k-{method}.npy"
        np.save(out, Y)
        return {
            "seconds": seconds,
            "peak_rss_mib": rss.peak / 2**20,
            "mode": mode,
            "spearman": spearman(Y, t),
            "embedding": str(out),
        }
    if what == "scale":
        import bigdr

        store = args[1]
        bigdr.Isomap(n_neighbors=K).fit(np.random.default_rng(0).standard_normal((300, 3)))  # untimed first call
        model = bigdr.Isomap(n_neighbors=K)
        r = embed_store(model, store)
        Yn, t = r.pop("embedding"), r.pop("truth")
        return {
            **r,
            "mode": model.mode_,
            "neighbor_method": model._ext.index.method_,
            "spearman": spearman(Yn, t),
            "residual_variance": model.residual_variance_.tolist(),
            "n_landmarks": len(model.landmark_indices_),
            "n_reference": len(model.reference_rows_),
        }
    raise ValueError(what)


def run_compare():
    methods = ["bigdr-auto", "bigdr-sampled-5k"]
    sk = run_child(SCRIPT, "compare", "sklearn", timeout=7200)
    print("sklearn", sk, flush=True)
    runs = {m: [] for m in methods}
    for _ in range(ROUNDS):
        for m in methods:
            r = run_child(SCRIPT, "compare", m)
            r["disparity_to_sklearn"] = disparity(np.load(sk["embedding"]), np.load(r["embedding"]))
            runs[m].append(r)
            print(m, r, flush=True)
    res = {"sklearn": sk, **runs}
    lines = [
        "## 20k-point swiss roll (noise 0.05, k = 10): bigdr against scikit-learn's Isomap\n",
        "| method | mode | time (median) | speed-up over scikit-learn | peak RSS (MiB) | Procrustes disparity to scikit-learn | Spearman, axis vs roll coordinate |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        f"| scikit-learn Isomap | {sk['mode']} | {sk['seconds']:.1f} s | 1x | {sk['peak_rss_mib']:.0f} | 0 | {sk['spearman']:.5f} |",
    ]
    for m in methods:
        sec = statistics.median(r["seconds"] for r in runs[m])
        r0 = runs[m][0]
        lines.append(
            f"| {m} | {r0['mode']} | {sec:.2f} s | {sk['seconds'] / sec:.0f}x | "
            f"{statistics.median(r['peak_rss_mib'] for r in runs[m]):.0f} | "
            f"{statistics.median(r['disparity_to_sklearn'] for r in runs[m]):.2e} | {r0['spearman']:.5f} |"
        )
    lines.append(
        f"\nscikit-learn ran once (it takes minutes); bigdr {ROUNDS} rounds, medians. Each run in a fresh "
        "process after an untimed call on 500 rows."
    )
    return res, "\n".join(lines) + "\n"


def run_accuracy():
    import bigdr

    X, t = roll(5000, seed=1)
    exact = bigdr.Isomap(n_neighbors=K, landmarks=None).fit_transform(X)
    rows = []
    for m in (16, 32, 64, 128, 256, 512, 1024):
        t0 = time.perf_counter()
        Y = bigdr.Isomap(n_neighbors=K, landmarks=m).fit_transform(X)
        rows.append(
            {
                "mode": "landmark",
                "landmarks": m,
                "graph_rows": 5000,
                "seconds": time.perf_counter() - t0,
                "disparity": disparity(exact, Y),
                "spearman": spearman(Y, t),
            }
        )
        print(rows[-1], flush=True)
    for size in (500, 1000, 2500):
        t0 = time.perf_counter()
        Y = bigdr.Isomap(n_neighbors=K, landmarks=128, max_samples=size).fit_transform(X)
        rows.append(
            {
                "mode": "sampled",
                "landmarks": 128,
                "graph_rows": size,
                "seconds": time.perf_counter() - t0,
                "disparity": disparity(exact, Y),
                "spearman": spearman(Y, t),
            }
        )
        print(rows[-1], flush=True)
    big = run_child(SCRIPT, "compare1m")
    lines = [
        "## Accuracy of the modes\n",
        "5k-point swiss roll (noise 0.05, k = 10) against exact Isomap "
        "(every row a landmark; equal to scikit-learn to 1e-16):\n",
        "| mode | landmarks | rows in the graph | time | Procrustes disparity to exact | Spearman |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['mode']} | {r['landmarks']} | {r['graph_rows']} | {r['seconds']:.2f} s | "
            f"{r['disparity']:.2e} | {r['spearman']:.5f} |"
        )
    lines += [
        "",
        "1M-row swiss roll: the default sampled graph (100k rows, 256 landmarks) against landmark mode "
        "on the graph of all 1M rows (64 landmarks: Dijkstra over 1M nodes costs 0.43 s per landmark):",
        "",
        "| mode | time | peak RSS (MiB) | Spearman | Procrustes disparity between the two |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key in ("sampled", "landmark"):
        r = big[key]
        lines.append(
            f"| {key} | {r['seconds']:.1f} s | {r['peak_rss_mib']:.0f} | {r['spearman']:.5f} | {big['disparity']:.2e} |"
        )
    return {"5k": rows, "1M": big}, "\n".join(lines) + "\n"


def child_compare1m():
    import bigdr

    X, t = roll(1_000_000)
    out = {}
    emb = {}
    for key, kw in (("sampled", {}), ("landmark", {"max_samples": None, "landmarks": 64})):
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            emb[key] = bigdr.Isomap(n_neighbors=K, **kw).fit_transform(X)
            out[key] = {
                "seconds": time.perf_counter() - t0,
                "peak_rss_mib": rss.peak / 2**20,
                "spearman": spearman(emb[key], t),
            }
    out["disparity"] = disparity(emb["landmark"], emb["sampled"])
    return out


def run_scale():
    res = {}
    lines = [
        "## 1M, 10M and 20M-row swiss rolls from zarr stores on disk (float64, noise 0.05, k = 10), defaults\n",
        "Fit, then the embedding of every row written to a zarr store; one fresh process per size.\n",
        "| rows | mode | graph rows / landmarks | neighbour search | fit | embed + write | total | numba compile | peak RSS (MiB) | Spearman | residual variance (1, 2 dims) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    # 20M: the peak is bounded by the chunk size (128 MiB input chunks, about
    # 5M rows here), so it stops growing once chunks reach that cap.
    for n in (1_000_000, 10_000_000, 20_000_000):
        store = swiss_roll_store(n)
        r = run_child(SCRIPT, "scale", str(store), timeout=7200)
        res[n] = r
        print(n, r, flush=True)
        numba = "none (kd-tree, no numba)" if r["neighbor_method"] == "kdtree" else "see neighbors.md"
        rv = ", ".join(f"{v:.2e}" for v in r["residual_variance"])
        lines.append(
            f"| {n:,} | {r['mode']} | {r['n_reference']:,} / {r['n_landmarks']} | {r['neighbor_method']} | "
            f"{r['fit_seconds']:.1f} s | {r['embed_write_seconds']:.1f} s | {r['seconds']:.1f} s | {numba} | "
            f"{r['peak_rss_mib']:.0f} | {r['spearman']:.5f} | {rv} |"
        )
    return res, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        result = child_compare1m() if sys.argv[2] == "compare1m" else child(sys.argv[2:])
        print(json.dumps(result))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["compare20k", "accuracy", "scale", "all"], nargs="*", default="all")
    args = ap.parse_args()
    runners = {"compare20k": run_compare, "accuracy": run_accuracy, "scale": run_scale}
    run_sections("isomap", runners, args.case)


if __name__ == "__main__":
    main()
