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

Usage: python benchmarks/bench_spectral.py [solvers|allrows|landmarks|accuracy|all]
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


def run_solvers():
    import scipy.sparse as sp

    from bigdr.core.eigen import smallest_eigh
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
    return {"all_rows_seconds": full_s, "rows": rows}, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["solvers", "allrows", "landmarks", "accuracy", "all"], nargs="*", default=["all"])
    args = ap.parse_args()
    runners = {"solvers": run_solvers, "allrows": run_allrows, "landmarks": run_landmarks, "accuracy": run_accuracy}
    run_sections("spectral", runners, args.case)


if __name__ == "__main__":
    main()
