"""Embedding quality measures (issue 34): exact against scikit-learn and ZADU, sampled at 10M rows.

Sections
--------
exact
    20,000 rows of a 5-D manifold in 50-D and a PCA of them to 2-D: bigdr's exact mode, scikit-learn's
    ``trustworthiness`` and ZADU's trustworthiness/continuity, each in a fresh process under an 8 GB
    address-space limit: value, time, peak RSS; and the largest of 10k, 15k, 20k, 30k, 50k rows each
    completes within the limit.
sampled
    A 10M-row Isomap embedding of the 10M swiss roll (zarr, written by ``bigdr fit-transform``):
    ``bigdr.metrics.evaluate`` with 10,000 queries, K = 10, 30, 100, in a fresh process: time, peak RSS,
    standard errors.
fourd
    The 4-D manifold of ``bench_sampling`` (300,000 x 40): Isomap with the old 100,000-row graph against
    all rows as the graph, both scored with 10,000 queries: do the measures tell them apart?

Usage: python benchmarks/bench_metrics.py [exact] [sampled] [fourd]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, run_child, run_sections, swiss_roll_store  # noqa: E402

SCRIPT = Path(__file__).resolve()
LIMIT = 8 * 2**30
SIZES = (10_000, 15_000, 20_000, 30_000, 50_000)
SIDE_ROWS = 20_000
SIDE_LIMIT = 20 * 2**30
KS = (10, 30, 100)


def manifold_pair(n: int) -> tuple:
    import numpy as np
    from bench_neighbors import manifold

    X = np.asarray(manifold(n), dtype=np.float64)
    Xc = X - X.mean(0)
    V = np.linalg.svd(Xc[:5000], full_matrices=False)[2][:2]
    return X, Xc @ V.T


def exact_child(tool: str, n: str, limit: str = str(LIMIT)) -> dict:
    resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
    X, Y = manifold_pair(int(n))
    t0 = time.perf_counter()
    if tool == "bigdr":
        from bigdr.metrics import evaluate

        r = evaluate(X, Y, 10, n_queries=None, distances=False)
        out = {"trustworthiness": r.values["trustworthiness"][10], "continuity": r.values["continuity"][10]}
    elif tool == "sklearn":
        from sklearn.manifold import trustworthiness

        out = {"trustworthiness": float(trustworthiness(X, Y, n_neighbors=10))}
    else:
        from zadu.measures import trustworthiness_continuity

        tc = trustworthiness_continuity.measure(X, Y, k=10)
        out = {"trustworthiness": float(tc["trustworthiness"]), "continuity": float(tc["continuity"])}
    out["seconds"] = time.perf_counter() - t0
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_exact():
    res: dict = {}
    for tool in ("bigdr", "sklearn", "zadu"):
        for n in SIZES:
            try:
                r = run_child(SCRIPT, "exact", tool, str(n), timeout=1800)
            except RuntimeError as exc:  # out of memory under the limit: the size is beyond the tool
                if "MemoryError" not in str(exc) and "allocate" not in str(exc):
                    raise
                r = {"failed": str(exc)[-300:]}
            res[f"{tool}-{n}"] = r
            print(tool, n, r, file=sys.stderr, flush=True)
            if "failed" in r:
                break
    side = {}
    for tool in ("bigdr", "sklearn", "zadu"):  # side by side at 20,000 rows, within the machine's memory
        try:
            side[tool] = run_child(SCRIPT, "exact", tool, str(SIDE_ROWS), str(SIDE_LIMIT), timeout=3600)
        except RuntimeError as exc:
            if "MemoryError" not in str(exc) and "allocate" not in str(exc):
                raise
            side[tool] = {"failed": str(exc)[-300:]}
        print(tool, SIDE_ROWS, side[tool], file=sys.stderr, flush=True)
    res["side_by_side"] = side
    lines = [
        f"## Exact mode: 5-D manifold in 50-D and its PCA to 2-D, K = 10, {SIDE_ROWS:,} rows side by side\n",
        f"Each tool in a fresh process under a {SIDE_LIMIT / 2**30:.0f} GiB address-space limit (the machine has "
        "23.5 GiB).\n",
        "| tool | trustworthiness | continuity | time (s) | peak RSS (MiB) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for tool, r in side.items():
        if "failed" in r:
            lines.append(f"| {tool} | failed within {SIDE_LIMIT / 2**30:.0f} GiB | | | |")
            continue
        cont = f"{r['continuity']:.15f}" if "continuity" in r else ""
        lines.append(
            f"| {tool} | {r['trustworthiness']:.15f} | {cont} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} |"
        )
    lines += [
        "\n### The largest size each completes under an 8 GB address-space limit\n",
        "Each run a fresh process (BLAS on one thread; bigdr on 2 dask threads). bigdr: `evaluate(n_queries=None)` "
        "(trustworthiness and continuity and every other measure from the same two passes); scikit-learn: "
        "`sklearn.manifold.trustworthiness`; ZADU: `trustworthiness_continuity.measure`.\n",
        "| tool | rows | trustworthiness | continuity | time (s) | peak RSS (MiB) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    largest = {}
    for key, r in res.items():
        if key == "side_by_side":
            continue
        tool, n = key.rsplit("-", 1)
        if "failed" in r:
            lines.append(f"| {tool} | {int(n):,} | failed within 8 GB | | | |")
            continue
        largest[tool] = int(n)
        cont = f"{r['continuity']:.15f}" if "continuity" in r else ""
        lines.append(
            f"| {tool} | {int(n):,} | {r['trustworthiness']:.15f} | {cont} | {r['seconds']:.1f} | "
            f"{r['peak_rss_mib']:.0f} |"
        )
    lines.append(
        "\nLargest size of " + ", ".join(f"{n:,}" for n in SIZES) + " completed within 8 GB: "
        + ", ".join(f"{t} {n:,}" for t, n in largest.items()) + "."
    )  # fmt: skip
    return res, "\n".join(lines) + "\n"


def isomap_store(n: int) -> Path:
    """The Isomap embedding of the n-row swiss roll store, written once by the command line."""
    store = swiss_roll_store(n)
    out = DATA / f"isomap-embedding-{n // 1_000_000}M.zarr"
    if not out.exists():
        cmd = [sys.executable, "-m", "bigdr.cli", "fit-transform", "--method", "isomap", "--no-progress",
               f"{store}/X", str(out)]  # fmt: skip
        subprocess.run(cmd, check=True, env=os.environ)
    return out


def sampled_child(n: str) -> dict:
    from bigdr.metrics import evaluate

    store = swiss_roll_store(int(n))
    emb = isomap_store(int(n))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    r = evaluate(f"{store}/X", str(emb), KS, n_queries=10_000, random_state=0)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_before_mib": before,
        "report": r.to_dict(),
    }


def run_sampled():
    n = 10_000_000
    isomap_store(n)  # outside the timed child
    res = run_child(SCRIPT, "sampled", str(n), timeout=3600)
    rep = res["report"]
    lines = [
        f"## Sampled mode: Isomap embedding of the {n // 1_000_000}M-row swiss roll, both from zarr\n",
        "`bigdr.metrics.evaluate(store, embedding, (10, 30, 100), n_queries=10_000)` in a fresh process, 2 dask "
        "threads, BLAS on one thread; the embedding written beforehand by `bigdr fit-transform --method isomap`.\n",
        f"Time {res['seconds']:.1f} s, peak RSS {res['peak_rss_mib']:.0f} MiB ({res['rss_before_mib']:.0f} MiB "
        "before the call).\n",
        "| measure | " + " | ".join(f"K = {k}" for k in KS) + " |",
        "| --- |" + " --- |" * len(KS),
    ]
    for m, vals in rep["values"].items():
        cells = " | ".join(f"{vals[str(k)]:.5f} ± {rep['errors'][m][str(k)]:.5f}" for k in KS)
        lines.append(f"| {m} | {cells} |")
    lines.append(f"\nAUC of R_NX (log K): {rep['auc_r_nx']:.5f} ± {rep['auc_r_nx_error']:.5f}; "
                 + "; ".join(f"{m} {v:.4f} ± {rep['pair_errors'][m]:.4f}" for m, v in rep["pairs"].items()))  # fmt: skip
    return res, "\n".join(lines) + "\n"


def fourd_child(case: str) -> dict:
    import numpy as np
    from bench_sampling import canonical_correlations, product_of_rolls

    import bigdr
    from bigdr.metrics import evaluate

    X, T = product_of_rolls(300_000, 0)
    model = bigdr.Isomap(4, max_samples=100_000 if case == "sampled graph" else None, random_state=0)
    Y = np.asarray(model.fit_transform(X))
    t0 = time.perf_counter()
    r = evaluate(X, Y, KS, n_queries=10_000, random_state=0)
    return {"seconds": time.perf_counter() - t0, "report": r.to_dict(), "cc": canonical_correlations(Y, T)}


def run_fourd():
    res = {case: run_child(SCRIPT, "fourd", case, timeout=3600) for case in ("sampled graph", "all rows")}
    lines = [
        "## Telling two Isomap embeddings apart: 300,000 x 40 (a 4-D product of swiss rolls)\n",
        "Isomap(4) with the old 100,000-row graph sample and with all rows as the graph, seed 0; each embedding "
        "scored with 10,000 queries (value ± standard error).\n",
        "| measure | K | sampled graph | all rows | difference / combined standard error |",
        "| --- | --- | --- | --- | --- |",
    ]
    a, b = res["sampled graph"]["report"], res["all rows"]["report"]
    for m in ("trustworthiness", "continuity", "knn_jaccard", "r_nx"):
        for k in KS:
            va, vb = a["values"][m][str(k)], b["values"][m][str(k)]
            ea, eb = a["errors"][m][str(k)], b["errors"][m][str(k)]
            z = (vb - va) / max((ea**2 + eb**2) ** 0.5, 1e-300)
            lines.append(f"| {m} | {k} | {va:.4f} ± {ea:.4f} | {vb:.4f} ± {eb:.4f} | {z:.1f} |")
    z = (b["auc_r_nx"] - a["auc_r_nx"]) / max((a["auc_r_nx_error"] ** 2 + b["auc_r_nx_error"] ** 2) ** 0.5, 1e-300)
    lines.append(f"| AUC R_NX | 1-100 | {a['auc_r_nx']:.4f} ± {a['auc_r_nx_error']:.4f} | "
                 f"{b['auc_r_nx']:.4f} ± {b['auc_r_nx_error']:.4f} | {z:.1f} |")  # fmt: skip
    cc = {c: ", ".join(f"{v:.3f}" for v in r["cc"]) for c, r in res.items()}
    secs = ", ".join(f"{c} {r['seconds']:.1f} s" for c, r in res.items())
    lines.append(f"\nCanonical correlations with the true coordinates: sampled graph {cc['sampled graph']}; "
                 f"all rows {cc['all rows']}. Evaluation time: {secs}.")  # fmt: skip
    return res, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        kind, args = sys.argv[2], sys.argv[3:]
        fn = {"exact": exact_child, "sampled": sampled_child, "fourd": fourd_child}[kind]
        print(json.dumps(fn(*args)))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["exact", "sampled", "fourd", "all"], nargs="*", default="all")
    args = ap.parse_args()
    run_sections("metrics", {"exact": run_exact, "sampled": run_sampled, "fourd": run_fourd}, args.case)


if __name__ == "__main__":
    main()
