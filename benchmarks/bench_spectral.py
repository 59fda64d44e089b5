"""Diffusion maps and Laplacian eigenmaps at scale (issue 5).

Cases:

solvers    eigensolvers on the diffusion-map kernel of a 100k-row swiss roll
           (k = 15): ARPACK, LOBPCG, LOBPCG + AMG; time and eigenvalues.
allrows    1M-row swiss roll (noise 0.05), diffusion map on all rows (k = 15,
           alpha = 1): wall time, peak RSS, Spearman of the first coordinate
           with the roll coordinate. Fresh process.
landmarks  landmark mode from zarr stores on disk, 1M, 10M and 20M rows, 20k
           landmarks, embedding of every row written to zarr: wall time, peak
           RSS, Spearman. Fresh process per size.
accuracy   200k-row swiss roll: Procrustes disparity of landmark mode
           (2k..100k landmarks) to the all-rows diffusion map.
transform  cost per row of the Nystrom transform against Isomap's on the same
           rows: a 3-D swiss roll (fit on 1M rows, 20k landmarks, every row
           placed) and 200k x 50 rows of a 5-D manifold (50k held-out rows
           placed); the training rows' coordinates reproduced; the share of
           reverse edges found and the distance to the kernel rule applied
           against every reference row. Fresh process per data set.

partial    partial_fit of 10k-row batches against a refit on the same
           reference set (the landmarks after the update), interleaved:
           DiffusionMap and SpectralEmbedding, 20k landmarks of a 1M-row
           swiss roll, 10 batches each.

Usage: python benchmarks/bench_spectral.py [solvers|allrows|landmarks|accuracy|transform|partial|all]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import PeakRSS, embed_store, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
K = 15
LANDMARKS = 20_000
PARTIAL_ROWS = 10_000
PARTIAL_BATCHES = 10


def roll(n, seed=0):
    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(n, noise=0.05, seed=seed)
    return np.ascontiguousarray(X.compute()), coords[:, 0].compute()


def spearman_first(Y, t):
    from scipy.stats import spearmanr

    return float(abs(spearmanr(Y[:, 0], t).statistic))


def disparity(A, B):
    from scipy.spatial import procrustes

    return float(procrustes(A, B)[2])


def child(args):
    import bigdr

    what = args[0]
    bigdr.DiffusionMap(2, n_neighbors=K).fit(roll(3000)[0])  # untimed first call: imports, thread pools
    if what == "allrows":
        X, t = roll(int(args[1]))
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            model = bigdr.DiffusionMap(2, n_neighbors=K, landmarks=None)
            Y = model.fit_transform(X)
            seconds = time.perf_counter() - t0
        return {
            "seconds": seconds,
            "peak_rss_mib": rss.peak / 2**20,
            "spearman_first": spearman_first(Y, t),
            "spearman_second": spearman_first(Y[:, 1:], t),
            "eigenvalues": model.eigenvalues_.tolist(),
            "epsilon": model.epsilon_,
        }
    if what == "transform":
        return transform_child(args[1])
    if what == "partial":
        return partial_child()
    if what == "landmarks":
        model = bigdr.DiffusionMap(2, n_neighbors=K, landmarks=LANDMARKS)
        r = embed_store(model, args[1])
        Yn, t = r.pop("embedding"), r.pop("truth")
        return {
            **r,
            "spearman_first": spearman_first(Yn, t),
            "eigenvalues": model.eigenvalues_.tolist(),
        }
    raise ValueError(what)


def manifold(n, seed=0):
    """Rows of a 5-D manifold in 50-D (tanh of a random lift plus noise 0.01), float64."""
    sys.path.insert(0, str(SCRIPT.parent))
    from bench_neighbors import manifold as make

    return make(n, 50, 5, seed)


def rule_check(model, rows):
    """Share of reverse edges among the candidates, and the distance to the rule applied densely.

    The dense rule: every reference row a candidate (``k_query`` = all of them).
    """
    ext = model._make_extension()
    ref = ext.reference.astype(np.float64)
    found = total = 0
    for s in range(0, len(rows), 200):
        q = rows[s : s + 200]
        D = np.sqrt(np.maximum((q**2).sum(1)[:, None] + (ref**2).sum(1)[None] - 2 * q @ ref.T, 0))
        reverse = D <= ext.radius[None, :]
        ind, dist = ext.candidates(q)
        found += sum(int(reverse[b, ind[b][np.isfinite(dist[b])]].sum()) for b in range(len(q)))
        total += int(reverse.sum())
    fast = ext.embed_piece(rows)
    ext.k_query = len(ref)
    dense = np.vstack([ext.embed_piece(rows[s : s + 100]) for s in range(0, len(rows), 100)])
    spread = dense.std(axis=0)
    return {
        "reverse_edge_recall": found / max(total, 1),
        "max_difference_over_std": float((np.abs(fast - dense) / spread).max()),
        "rms_difference_over_std": float(np.sqrt((((fast - dense) / spread) ** 2).mean())),
    }


def transform_child(data):
    import warnings

    import bigdr

    if data == "roll":
        X, _ = roll(1_000_000)
        new = X
    else:
        both = manifold(250_000)
        X, new = both[:200_000], np.ascontiguousarray(both[200_000:])
    models = {
        "Isomap (defaults)": bigdr.Isomap(2, n_neighbors=K),
        "DiffusionMap": bigdr.DiffusionMap(2, n_neighbors=K, landmarks=LANDMARKS),
        "SpectralEmbedding": bigdr.SpectralEmbedding(2, n_neighbors=K, landmarks=LANDMARKS),
    }
    out = {}
    for name, model in models.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            model.fit(X)
            fit = time.perf_counter() - t0
        np.asarray(model.transform(new[:2000]))  # untimed: the extension is built once per model
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            np.asarray(model.transform(new))
            times.append(time.perf_counter() - t0)
        r = {
            "fit_seconds": fit,
            "transform_seconds": times,
            "us_per_row": float(np.median(times)) / len(new) * 1e6,
            "warnings": sorted({f"{type(w.message).__name__}: {w.message}" for w in caught}),
        }
        if name != "Isomap (defaults)":
            ref = model.reference_rows_
            fitted = model.eigenvectors_ * model.scale_
            again = np.asarray(model.transform(ref))
            r["training_rows_relative_error"] = float(np.abs(again - fitted).max() / np.abs(fitted).max())
            r["graph_rows"] = len(ref)
            r.update(rule_check(model, np.ascontiguousarray(new[:2000], dtype=np.float64)))
        else:
            r["graph_rows"] = int(model.reference_cap_ or len(X))
        out[name] = r
        print(name, {k: v for k, v in r.items() if k != "warnings"}, file=sys.stderr, flush=True)
    return {"rows_fitted": len(X), "rows_placed": len(new), "models": out}


def run_transform():
    res = {"roll": run_child(SCRIPT, "transform", "roll", timeout=7200)}
    res["manifold"] = run_child(SCRIPT, "transform", "manifold", timeout=7200)
    lines = [
        "## Transform cost per row: the Nystrom extension against Isomap's on the same rows\n",
        f"k = {K}; DiffusionMap and SpectralEmbedding with {LANDMARKS:,} landmarks, Isomap with its defaults "
        "(landmark Isomap on a graph sample sized to the manifold). Fresh process per data set, 2 dask threads, "
        "BLAS on one thread; median of 3 transforms. Swiss roll: fit on 1M rows (noise 0.05), all 1M placed. "
        "5-D manifold: 200,000 x 50 fitted (float64), 50,000 held-out rows placed. Training rows: largest "
        "difference between the transform of the reference rows and their fitted coordinates, over the largest "
        "coordinate. Reverse edges and the dense rule on 2,000 of the placed rows: the share of reverse edges "
        "(reference rows whose k-th-neighbour distance reaches the row) among the candidates, and the largest and "
        "root-mean-square difference of the coordinates from the kernel rule applied against every reference row, "
        "over each coordinate's standard deviation.\n",
        "| data | method | graph rows | fit (s) | transform (us/row) | ratio to Isomap | training rows | "
        "reverse edges found | difference to dense rule, max / rms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for data, label in (("roll", "3-D swiss roll, 1M"), ("manifold", "5-D manifold, 200k x 50")):
        models = res[data]["models"]
        base = models["Isomap (defaults)"]["us_per_row"]
        for name, r in models.items():
            extra = (
                f"{r['training_rows_relative_error']:.1e} | {r['reverse_edge_recall']:.4f} | "
                f"{r['max_difference_over_std']:.1e} / {r['rms_difference_over_std']:.1e}"
                if "reverse_edge_recall" in r
                else " |  | "
            )
            lines.append(
                f"| {label} | {name} | {r['graph_rows']:,} | {r['fit_seconds']:.1f} | {r['us_per_row']:.1f} | "
                f"{r['us_per_row'] / base:.2f} | {extra} |"
            )
    warned = sorted({w for d in res.values() for r in d["models"].values() for w in r["warnings"]})
    if warned:
        lines.append("\nWarnings raised by the fits:\n")
        lines += [f"- {w}" for w in warned]
    return res, "\n".join(lines) + "\n"


def partial_child():
    import warnings

    import bigdr

    X, _ = roll(1_000_000)
    out = {}
    for cls in (bigdr.DiffusionMap, bigdr.SpectralEmbedding):
        model = cls(2, n_neighbors=K, landmarks=LANDMARKS).fit(X)
        steps = []
        for b in range(PARTIAL_BATCHES):
            batch, _ = roll(PARTIAL_ROWS, seed=100 + b)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.partial_fit(batch)
            update = time.perf_counter() - t0
            params = {**model.get_params(), "landmarks": None}
            t0 = time.perf_counter()
            cls(**params).fit(model.reference_rows_)
            refit = time.perf_counter() - t0
            steps.append({"update_s": update, "refit_s": refit, "ratio": update / refit})
            print(cls.__name__, steps[-1], file=sys.stderr, flush=True)
        out[cls.__name__] = {
            "steps": steps,
            "median_update_s": float(np.median([s["update_s"] for s in steps])),
            "median_refit_s": float(np.median([s["refit_s"] for s in steps])),
            "median_ratio": float(np.median([s["ratio"] for s in steps])),
        }
    return out


def run_partial():
    res = run_child(SCRIPT, "partial", timeout=3600)
    lines = [
        f"## partial_fit of {PARTIAL_ROWS:,}-row batches against a refit on the same reference set\n",
        f"1M-row swiss roll (noise 0.05), {LANDMARKS:,} landmarks, k = {K}; {PARTIAL_BATCHES} batches from new "
        "seeds, each learnt by `partial_fit` (drift, reservoir, kNN lists, kernel, warm-started eigensolver, "
        "alignment), then a fit with `landmarks=None` on the model's reference rows after the update (what a "
        "refit on that reference set costs), interleaved; one fresh process, 2 dask threads, BLAS on one thread "
        "(the eigensolvers on 2, while they are idle).\n",
        "| method | median partial_fit (s) | median refit (s) | median ratio |",
        "| --- | --- | --- | --- |",
    ]
    for name, r in res.items():
        lines.append(f"| {name} | {r['median_update_s']:.3f} | {r['median_refit_s']:.3f} | {r['median_ratio']:.2f} |")
    return res, "\n".join(lines) + "\n"


def run_solvers():
    import scipy.sparse as sp

    from bigdr.core.sparse_eigen import smallest_eigh
    from bigdr.graph.affinity import affinity, auto_epsilon
    from bigdr.graph.knn import knn_graph
    from bigdr.graph.operators import normalise

    X, _ = roll(100_000)
    ind, dist = knn_graph(X, K).compute()
    dist = dist.astype(np.float64)
    norm = normalise(affinity(ind, dist, "gaussian", auto_epsilon(dist), True).W, 1.0)
    L = (sp.identity(len(X), format="csr") - norm.S).tocsr()
    known = np.sqrt(norm.d) / np.linalg.norm(np.sqrt(norm.d))
    res = {}
    for solver in ("arpack", "lobpcg", "amg"):
        t0 = time.perf_counter()
        mu = smallest_eigh(L, 3, solver, 0, known).values
        res[solver] = {"seconds": time.perf_counter() - t0, "eigenvalues_of_M": (1 - mu).tolist()}
        print(solver, res[solver], flush=True)
    lines = [
        "## Eigensolvers: 3 leading eigenpairs of the diffusion kernel, 100k-row swiss roll, k = 15\n",
        "| solver | time | eigenvalues of M |",
        "| --- | --- | --- |",
    ]
    for s, r in res.items():
        lines.append(f"| {s} | {r['seconds']:.1f} s | {', '.join(f'{v:.8f}' for v in r['eigenvalues_of_M'])} |")
    lines.append("\nLOBPCG stops at 500 iterations (tolerance 1e-6) when it has not converged.")
    return res, "\n".join(lines) + "\n"


def run_allrows():
    r = run_child(SCRIPT, "allrows", "1000000", timeout=3600)
    print(r, flush=True)
    lines = [
        "## Diffusion map of all rows: 1M-row swiss roll (noise 0.05, k = 15, alpha = 1, t = 1), fresh process\n",
        "| rows | time | peak RSS (MiB) | epsilon | eigenvalues | Spearman: 1st coordinate vs roll coordinate |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| 1,000,000 | {r['seconds']:.1f} s | {r['peak_rss_mib']:.0f} | {r['epsilon']:.4f} | "
        f"{', '.join(f'{v:.7f}' for v in r['eigenvalues'])} | {r['spearman_first']:.5f} |",
    ]
    return r, "\n".join(lines) + "\n"


def run_landmarks():
    res = {}
    lines = [
        f"## Landmark mode from zarr stores on disk ({LANDMARKS:,} landmarks, k = {K}), every row embedded and "
        "written to zarr, fresh process per size\n",
        "| rows | fit | embed + write | total | peak RSS (MiB) | Spearman: 1st coordinate |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n in (1_000_000, 10_000_000, 20_000_000):
        r = run_child(SCRIPT, "landmarks", str(swiss_roll_store(n)), timeout=7200)
        res[n] = r
        print(n, r, flush=True)
        lines.append(
            f"| {n:,} | {r['fit_seconds']:.1f} s | {r['embed_write_seconds']:.1f} s | {r['seconds']:.1f} s | "
            f"{r['peak_rss_mib']:.0f} | {r['spearman_first']:.5f} |"
        )
    return res, "\n".join(lines) + "\n"


def run_accuracy():
    import bigdr

    X, t = roll(200_000, seed=1)
    t0 = time.perf_counter()
    full = bigdr.DiffusionMap(2, n_neighbors=K, landmarks=None).fit_transform(X)
    full_s = time.perf_counter() - t0
    rows = []
    for m in (2_000, 5_000, 10_000, 20_000, 50_000, 100_000):
        t0 = time.perf_counter()
        Y = bigdr.DiffusionMap(2, n_neighbors=K, landmarks=m).fit_transform(X)
        rows.append(
            {
                "landmarks": m,
                "seconds": time.perf_counter() - t0,
                "disparity": disparity(full, Y),
                "spearman_first": spearman_first(Y, t),
            }
        )
        print(rows[-1], flush=True)
    lines = [
        "## Landmark mode against the all-rows fit: 200k-row swiss roll (noise 0.05, k = 15)\n",
        f"All rows: {full_s:.1f} s, Spearman {spearman_first(full, t):.5f}.\n",
        "| landmarks | time | Procrustes disparity to all rows | Spearman: 1st coordinate |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['landmarks']:,} | {r['seconds']:.1f} s | {r['disparity']:.2e} | {r['spearman_first']:.5f} |"
        )
    manifold_part, manifold_lines = accuracy_manifold()
    return {"all_rows_seconds": full_s, "rows": rows, "manifold": manifold_part}, "\n".join(
        lines + manifold_lines
    ) + "\n"


def accuracy_manifold():
    """The same sweep on 200k x 50 rows of a 5-D manifold, 4 coordinates, with the sample-size rule's figure."""
    import bigdr
    from bigdr.core.dimension import rows_needed

    X = manifold(200_000)
    t0 = time.perf_counter()
    model = bigdr.DiffusionMap(4, n_neighbors=K, landmarks=None)
    full = model.fit_transform(X)
    full_s = time.perf_counter() - t0
    dim = model.intrinsic_dimension_
    rows = []
    for m in (2_000, 5_000, 20_000, 50_000):
        t0 = time.perf_counter()
        Y = bigdr.DiffusionMap(4, n_neighbors=K, landmarks=m).fit_transform(X)
        rows.append({"landmarks": m, "seconds": time.perf_counter() - t0, "disparity": disparity(full, Y)})
        print(rows[-1], flush=True)
    lines = [
        "\n### The same on 200,000 x 50 rows of a 5-D manifold (4 coordinates)\n",
        f"All rows: {full_s:.1f} s; estimated dimension {dim:.1f}, for which the graph-size rule of Isomap's "
        f"sample (`rows_needed`) asks for {rows_needed(dim, K):,} rows.\n",
        "| landmarks | time | Procrustes disparity to all rows |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {r['landmarks']:,} | {r['seconds']:.1f} s | {r['disparity']:.2e} |" for r in rows]
    return {"all_rows_seconds": full_s, "dimension": dim, "rows_needed": rows_needed(dim, K), "rows": rows}, lines


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    cases = ["solvers", "allrows", "landmarks", "accuracy", "transform", "partial", "all"]
    ap.add_argument("case", choices=cases, nargs="*", default="all")
    args = ap.parse_args()
    runners = {
        "solvers": run_solvers,
        "allrows": run_allrows,
        "landmarks": run_landmarks,
        "accuracy": run_accuracy,
        "transform": run_transform,
        "partial": run_partial,
    }
    run_sections("spectral", runners, args.case)


if __name__ == "__main__":
    main()
