"""Locally linear embedding (issue 14): solvers, all rows at scale, landmarks at scale, landmark accuracy.

Data: the shared swiss roll (noise 0.05, float64 zarr stores made by
``bigdr.datasets.generate``); the score is the largest |Spearman| between an
embedding axis and the roll coordinate. Every case runs in a fresh process
(peak RSS of that process); threads; BLAS one thread per dask thread.

solvers    100,000 rows, standard LLE, k = 10, d = 2: the eigensolvers on the same
           factor (``eigen_solver`` = lu, arpack (shift-invert, scikit-learn's),
           amg, lobpcg): seconds of the whole fit, eigenvalues, Spearman.
allrows    all-rows fit + embedding written to zarr: standard at 250k, 500k and 1M
           rows; modified, hessian and ltsa at 250k and 1M (k = 10, d = 2).
landmarks  landmark mode (2,000 landmarks, 100,000-row reference sample, the
           defaults above 1,000,000 rows) on 1M and 10M rows: fit + embedding
           written to zarr, peak RSS.
ordering   1M rows, standard: the sparse LU of I - W in SuperLU's COLAMD order against
           METIS nested dissection (what eigen_solver="lu" uses): entries per row, seconds,
           peak RSS.
accuracy   20,000 rows: landmark mode with m = 250 .. 4,000 landmarks (reference
           sample = all rows) against the all-rows fit: Procrustes disparity,
           Spearman, seconds.

Usage: python benchmarks/bench_lle.py [solvers|allrows|landmarks|ordering|accuracy|all]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, embed_store, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
K, D = 10, 2


def store(n: int) -> Path:
    if n % 1_000_000 == 0:
        return swiss_roll_store(n)
    from bigdr.datasets import generate

    path = DATA / f"lle-swissroll-{n}.zarr"
    if not path.exists():
        generate("swiss-roll", path, n, noise=0.05, seed=0)
    return path


def spearman(Y: np.ndarray, t: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return float(max(abs(spearmanr(Y[:, j], t).statistic) for j in range(Y.shape[1])))


def small(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, roll coordinate, height."""
    import bigdr.datasets

    X, coords = bigdr.datasets.make_swiss_roll(n, noise=0.05, seed=0)
    coords = np.asarray(coords)
    return np.asarray(X), coords[:, 0], coords[:, 1]


def child(args):
    from bigdr import LocallyLinearEmbedding

    what = args[0]
    if what == "solver":
        X, t, _ = small(100_000)
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            model = LocallyLinearEmbedding(D, K, eigen_solver=args[1])
            Y = model.fit_transform(X)
            seconds = time.perf_counter() - t0
        return {"solver": args[1], "seconds": seconds, "peak_rss_mib": rss.peak / 2**20,
                "eigenvalues": model.eigenvalues_.tolist(), "spearman": spearman(Y, t)}  # fmt: skip
    if what in ("allrows", "landmarks"):
        method, n = args[1], int(args[2])
        landmarks = None if what == "allrows" else 2000
        r = embed_store(LocallyLinearEmbedding(D, K, method=method, landmarks=landmarks), str(store(n)))
        step = max(1, n // 1_000_000)  # Spearman on at most 1M rows
        return {"method": method, "rows": n, "seconds": r["seconds"], "fit_seconds": r["fit_seconds"],
                "peak_rss_mib": r["peak_rss_mib"], "spearman": spearman(r["embedding"][::step], r["truth"][::step])}  # fmt: skip
    if what == "ordering":
        import scipy.sparse as sp
        from scipy.sparse.linalg import splu

        from bigdr.core.sparse_eigen import nested_dissection
        from bigdr.graph.barycentric import factors
        from bigdr.graph.knn import knn_graph

        X, _, _ = small(1_000_000)
        ind, _ = knn_graph(X, K).compute()
        C = factors(X, ind, "standard", D, 1e-3) + 1e-12 * sp.identity(len(X), format="csr")
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            if args[1] == "colamd":
                lu = splu(C.tocsc(), permc_spec="COLAMD")
            else:
                perm = nested_dissection(C)
                lu = splu(C[perm][:, perm].tocsc(), permc_spec="NATURAL", diag_pivot_thresh=0.01,
                          options={"SymmetricMode": True})  # fmt: skip
            seconds = time.perf_counter() - t0
        return {"ordering": args[1], "seconds": seconds, "peak_rss_mib": rss.peak / 2**20,
                "per_row": (lu.L.nnz + lu.U.nnz) / len(X)}  # fmt: skip
    if what == "accuracy":
        from scipy.spatial import procrustes

        X, t, h = small(20_000)
        t0 = time.perf_counter()
        exact = LocallyLinearEmbedding(D, K, landmarks=None).fit_transform(X)
        out = [{"m": "all rows", "seconds": time.perf_counter() - t0, "disparity": 0.0, "first": 1.0,
                "spearman": spearman(exact, t), "height": spearman(exact, h)}]  # fmt: skip
        for m in (250, 500, 1000, 2000, 4000):
            t0 = time.perf_counter()
            Y = LocallyLinearEmbedding(D, K, landmarks=m, max_samples=len(X)).fit_transform(X)
            seconds = time.perf_counter() - t0
            out.append({"m": m, "seconds": seconds, "disparity": float(procrustes(exact, Y)[2]),
                        "first": float(abs(np.corrcoef(exact[:, 0], Y[:, 0])[0, 1])),
                        "spearman": spearman(Y, t), "height": spearman(Y, h)})  # fmt: skip
        return out
    raise ValueError(what)


def run_solvers():
    rows = [run_child(SCRIPT, "solver", s, timeout=3600) for s in ("lu", "arpack", "amg", "lobpcg")]
    lines = [
        f"## Eigensolvers, standard LLE of 100,000 rows (k = {K}, d = {D})\n",
        "The same factor C = I - W; the whole fit (graph, weights, solve) in one fresh process.\n",
        "| eigen_solver | seconds | peak RSS (MiB) | eigenvalues | Spearman |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        ev = ", ".join(f"{v:.3e}" for v in r["eigenvalues"])
        lines.append(f"| {r['solver']} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} | {ev} | {r['spearman']:.4f} |")
    return rows, "\n".join(lines) + "\n"


def _scale_table(rows, title):
    lines = [
        title,
        "| method | rows | fit + write (s) | fit (s) | peak RSS (MiB) | Spearman |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['method']} | {r['rows']:,} | {r['seconds']:.1f} | {r['fit_seconds']:.1f} | "
            f"{r['peak_rss_mib']:.0f} | {r['spearman']:.4f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_allrows():
    cases = [("standard", n) for n in (250_000, 500_000, 1_000_000)]
    # The variants' LOBPCG is preconditioned by the LU of their own assembled M (with I - W it ran
    # 234-275 s at 250k rows and had not finished after 20 minutes at 1M).
    cases += [(m, n) for n in (250_000, 1_000_000) for m in ("modified", "hessian", "ltsa")]
    rows = [run_child(SCRIPT, "allrows", m, str(n), timeout=3 * 3600) for m, n in cases]
    title = f"## All rows, swiss roll from zarr (k = {K}, d = {D}), embedding written to zarr\n"
    return _scale_table(rows, title)


def run_landmarks():
    rows = [run_child(SCRIPT, "landmarks", "standard", str(n), timeout=4 * 3600) for n in (1_000_000, 10_000_000)]
    title = (
        f"## Landmark mode (2,000 landmarks, 100,000-row reference sample), swiss roll from zarr "
        f"(k = {K}, d = {D})\n\nSpearman on 1M rows evenly spaced.\n"
    )
    return _scale_table(rows, title)


def run_ordering():
    rows = [run_child(SCRIPT, "ordering", o, timeout=3600) for o in ("colamd", "metis")]
    lines = [
        f"## Sparse LU of I - W, 1,000,000-row swiss roll (k = {K}): orderings\n",
        "| ordering | seconds | entries of L + U per row | peak RSS (MiB) |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['ordering']} | {r['seconds']:.1f} | {r['per_row']:.0f} | {r['peak_rss_mib']:.0f} |")
    return rows, "\n".join(lines) + "\n"


def run_accuracy():
    rows = run_child(SCRIPT, "accuracy", timeout=3600)
    lines = [
        f"## Landmark mode against all rows, 20,000-row swiss roll (k = {K}, d = {D}, reference sample = all rows)\n",
        "Disparity: Procrustes disparity to the all-rows embedding; first axis: |correlation| of the first",
        "coordinates; Spearman: best axis against the roll coordinate; height: best axis against the roll's height.\n",
        "| landmarks | seconds | disparity | first axis | Spearman | height |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['m']} | {r['seconds']:.1f} | {r['disparity']:.2e} | {r['first']:.4f} | "
            f"{r['spearman']:.4f} | {r['height']:.4f} |"
        )
    return rows, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    cases = ["solvers", "allrows", "landmarks", "ordering", "accuracy", "all"]
    ap.add_argument("case", choices=cases, nargs="*", default="all")
    args = ap.parse_args()
    runners = {"solvers": run_solvers, "allrows": run_allrows, "landmarks": run_landmarks,
               "ordering": run_ordering, "accuracy": run_accuracy}  # fmt: skip
    run_sections("lle", runners, args.case)


if __name__ == "__main__":
    main()
