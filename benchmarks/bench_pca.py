"""PCA: bigdr against scikit-learn PCA, IncrementalPCA and dask-ml PCA.

Cases (issue 2):

memory   1M x 100 float64 in memory (spiked covariance), 10 components:
         fit time (median of 3 fits in each of ROUNDS fresh processes) and
         accuracy against scikit-learn's exact SVD.
disk     21M x 100 float32 zarr store (8.4 GB of data) on disk: a plain dask
         read pass against bigdr's fit, each with a cold page cache (dropped
         before the run) and warm (second run), peak resident memory.
illcond  200k x 50, singular values 1 .. 1e-7 (geometric) with a mean of 5:
         which solver keeps the small components.

Threads: 2 vCPU. dask-based runs use 2 dask threads with BLAS capped at 1
thread each (bigdr does this itself; dask-ml is wrapped in threadpool_limits
so it is not oversubscribed); scikit-learn runs with 2 BLAS threads.

Usage: python benchmarks/bench_pca.py [memory|disk|illcond|all] [--rounds N]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (  # noqa: E402
    DATA,
    PeakRSS,
    drop_page_cache,
    machine,
    process_peak_mib,
    read_pass,
    run_child,
    stamped,
    timed,
    write_results,
)

SCRIPT = Path(__file__).resolve()
MEMORY_METHODS = [
    "bigdr-covariance",
    "bigdr-tsqr",
    "sklearn-pca",
    "sklearn-incremental",
    "daskml-tsqr",
    "daskml-randomized",
]
ILL_METHODS = [
    "bigdr-covariance",
    "bigdr-tsqr",
    "sklearn-pca-full",
    "sklearn-pca-auto",
    "sklearn-incremental",
    "daskml-tsqr",
    "daskml-randomized",
]
DISK_ROWS = 21_000_000
DISK_STORE = DATA / f"spiked-{DISK_ROWS // 1_000_000}M-float32.zarr"


# ---------------------------------------------------------------- fitting ---
def fit(method: str, X, k: int, seed: int = 0):
    """Fit one method; returns (components, singular values, explained variance)."""
    import dask.array as da
    from threadpoolctl import threadpool_limits

    if method.startswith("bigdr-"):
        import bigdr

        m = bigdr.PCA(k, svd_solver=method.split("-", 1)[1], random_state=seed).fit(X)
    elif method.startswith("sklearn-"):
        from sklearn.decomposition import PCA, IncrementalPCA

        if method == "sklearn-incremental":
            m = IncrementalPCA(k, batch_size=20_000).fit(X)
        else:
            m = PCA(k, svd_solver="full" if method.endswith("full") else "auto", random_state=seed).fit(X)
    elif method.startswith("daskml-"):
        from dask_ml.decomposition import PCA

        dX = da.from_array(X, chunks=(max(1, (128 * 2**20) // (X.shape[1] * X.itemsize)), X.shape[1]))
        with threadpool_limits(1, user_api="blas"):
            m = PCA(k, svd_solver=method.split("-", 1)[1], random_state=seed).fit(dX)
    else:
        raise ValueError(method)
    return np.asarray(m.components_), np.asarray(m.singular_values_), np.asarray(m.explained_variance_)


def memory_data():
    from bigdr.datasets import make_spiked_covariance

    X, _ = make_spiked_covariance(1_000_000, 100, spikes=(50, 20, 10, 5, 2, 1, 0.5, 0.3, 0.2, 0.1), seed=0)
    return np.ascontiguousarray(X.compute())


def ill_data(n=200_000, p=50):
    rng = np.random.default_rng(0)
    s = np.geomspace(1, 1e-7, p)
    G = rng.standard_normal((n, p))
    U, _ = np.linalg.qr(G - G.mean(0))  # orthonormal columns orthogonal to the ones vector
    V, _ = np.linalg.qr(rng.standard_normal((p, p)))
    return (U * s) @ V.T + 5.0, s, V.T


def child(args: list[str]) -> dict:
    case, method = args[0], args[1]
    if case == "memory-ref":
        X = memory_data()
        comps, sv, ev = fit("sklearn-pca-full", X, 10)
        np.savez(DATA / "memory-ref.npz", components=comps, ev=ev)
        return {"ok": True}
    if case == "memory":
        X = memory_data()
        ref = np.load(DATA / "memory-ref.npz")
        fit(method, X[:200_000], 10)  # warm-up: imports, thread pools
        with PeakRSS() as rss:
            times, (comps, sv, ev) = timed(lambda: fit(method, X, 10), repeats=3)
        import scipy.linalg

        angle = float(scipy.linalg.subspace_angles(comps.T, ref["components"].T).max())
        return {
            "times": times,
            "seconds": statistics.median(times),
            "peak_rss_mib": rss.peak / 2**20,
            "max_angle": angle,
            "ev_rel_err": float(np.abs(ev / ref["ev"] - 1).max()),
        }
    if case == "illcond":
        X, s, Vt = ill_data()
        try:
            t0 = time.perf_counter()
            comps, sv, ev = fit(method, X, X.shape[1])
            seconds = time.perf_counter() - t0
        except Exception as exc:  # report what the library says
            return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        rel = np.abs(sv / s - 1)
        cos = np.abs(np.sum(comps * Vt, axis=1)).clip(0, 1)
        sin = np.sqrt(1 - cos**2)

        def leading_within(tol):
            return int(np.argmax(rel > tol)) if (rel > tol).any() else len(s)

        return {
            "leading_components_within_1e-6": leading_within(1e-6),
            "seconds": seconds,
            "sv_rel_err": rel.tolist(),
            "component_sin": sin.tolist(),
            "smallest_sv_rel_err": float(rel[-1]),
            "smallest_component_sin": float(sin[-1]),
            "leading_components_within_1e-3": leading_within(1e-3),
        }
    if case in ("disk-read", "disk-fit", "disk-fit-tsqr"):
        import bigdr

        solver = "tsqr" if case.endswith("tsqr") else "covariance"
        work = (
            (lambda: read_pass(DISK_STORE))
            if case == "disk-read"
            else lambda: bigdr.PCA(10, svd_solver=solver).fit(str(DISK_STORE))
        )
        with PeakRSS() as rss:
            times, model = timed(work)
        out = {"seconds": times[0], "peak_rss_mib": rss.peak / 2**20, "ru_maxrss_mib": process_peak_mib()}
        if case != "disk-read":
            out["explained_variance"] = [float(v) for v in model.explained_variance_]
        return out
    raise ValueError(case)


# ----------------------------------------------------------------- driver ---
def run_memory(rounds: int) -> tuple[dict, str]:
    DATA.mkdir(parents=True, exist_ok=True)
    run_child(SCRIPT, "memory-ref", "-")
    runs = {m: [] for m in MEMORY_METHODS}
    for r in range(rounds):
        for m in MEMORY_METHODS:
            runs[m].append(run_child(SCRIPT, "memory", m))
            print(f"memory round {r} {m}: {runs[m][-1]['seconds']:.2f} s", flush=True)
    summary = {}
    for m, rs in runs.items():
        summary[m] = {
            "seconds_median": statistics.median(r["seconds"] for r in rs),
            "seconds_all": [t for r in rs for t in r["times"]],
            "peak_rss_mib": max(r["peak_rss_mib"] for r in rs),
            "max_angle": max(r["max_angle"] for r in rs),
            "ev_rel_err": max(r["ev_rel_err"] for r in rs),
        }
    base = summary["bigdr-covariance"]["seconds_median"]
    # Ratios per round (same machine state), then their median.
    per_round = {
        m: statistics.median(runs[m][i]["seconds"] / runs["bigdr-covariance"][i]["seconds"] for i in range(rounds))
        for m in MEMORY_METHODS
    }
    lines = [
        "## 1M x 100 float64 in memory, 10 components\n",
        "| method | fit time (median) | time / bigdr covariance (median of per-round ratios) | "
        "peak RSS (MiB, incl. 763 MiB data) | max principal angle vs exact SVD | max rel. error of explained variance |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for m in MEMORY_METHODS:
        s = summary[m]
        lines.append(
            f"| {m} | {s['seconds_median']:.2f} s | {per_round[m]:.2f}x | {s['peak_rss_mib']:.0f} | "
            f"{s['max_angle']:.1e} | {s['ev_rel_err']:.1e} |"
        )
    lines.append(
        f"\n{rounds} rounds x 3 fits, each method in a fresh process per round; bigdr covariance median {base:.2f} s.\n"
    )
    return {"runs": runs, "summary": summary, "ratio_to_bigdr_covariance": per_round}, "\n".join(lines)


def run_disk(rounds: int, with_tsqr: bool) -> tuple[dict, str]:
    DATA.mkdir(parents=True, exist_ok=True)
    gen = None
    if not DISK_STORE.exists():
        from bigdr.datasets import generate

        t0 = time.perf_counter()
        generate("spiked", DISK_STORE, DISK_ROWS, n_features=100, dtype="float32", seed=0)
        gen = time.perf_counter() - t0
        print(f"generated {DISK_STORE} in {gen:.0f} s", flush=True)
    on_disk = sum(f.stat().st_size for f in DISK_STORE.rglob("*") if f.is_file())
    runs = {k: [] for k in ("read-cold", "read-warm", "fit-cold", "fit-warm")}
    can_drop = True
    for r in range(rounds):
        for what in ("read", "fit"):
            can_drop &= drop_page_cache()
            runs[f"{what}-cold"].append(run_child(SCRIPT, f"disk-{what}", "-"))
            runs[f"{what}-warm"].append(run_child(SCRIPT, f"disk-{what}", "-"))
            print(
                f"disk round {r} {what}: cold {runs[f'{what}-cold'][-1]['seconds']:.1f} s, "
                f"warm {runs[f'{what}-warm'][-1]['seconds']:.1f} s",
                flush=True,
            )
    tsqr = None
    if with_tsqr:
        drop_page_cache()
        run_child(SCRIPT, "disk-read", "-")  # warm the cache for a like-for-like compute comparison
        tsqr = run_child(SCRIPT, "disk-fit-tsqr", "-")
        print(f"disk tsqr warm: {tsqr['seconds']:.1f} s", flush=True)
    med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    ratio = {
        c: statistics.median(runs[f"fit-{c}"][i]["seconds"] / runs[f"read-{c}"][i]["seconds"] for i in range(rounds))
        for c in ("cold", "warm")
    }
    peak = max(r["peak_rss_mib"] for r in runs["fit-cold"] + runs["fit-warm"])
    maxrss = max(r["ru_maxrss_mib"] for r in runs["fit-cold"] + runs["fit-warm"])
    raw = DISK_ROWS * 100 * 4
    lines = [
        f"## {DISK_ROWS:,} x 100 float32 zarr store on disk ({raw / 1e9:.1f} GB of data, "
        f"{on_disk / 1e9:.2f} GB on disk, zstd), 10 components\n",
        "| run | read pass (median) | bigdr fit (median) | fit / read (median of per-round ratios) |",
        "| --- | --- | --- | --- |",
        f"| cold page cache (dropped before each run) | {med['read-cold']:.1f} s | {med['fit-cold']:.1f} s | {ratio['cold']:.2f} |",
        f"| warm page cache | {med['read-warm']:.1f} s | {med['fit-warm']:.1f} s | {ratio['warm']:.2f} |",
        f"\nPeak resident memory of the fit process: {peak:.0f} MiB sampled every 10 ms, "
        f"{maxrss:.0f} MiB ru_maxrss (whole process lifetime). {rounds} rounds.",
    ]
    if not can_drop:
        lines.append("\nThe page cache could not be dropped (not root): 'cold' runs were not cold.")
    if tsqr:
        lines.append(
            f"\nbigdr tsqr solver on the same store (warm cache): {tsqr['seconds']:.1f} s, "
            f"peak RSS {tsqr['peak_rss_mib']:.0f} MiB."
        )
    if gen:
        lines.append(f"\nGenerating the store (`bigdr.datasets.generate`) took {gen:.0f} s.")
    return (
        {
            "store": str(DISK_STORE.name),
            "rows": DISK_ROWS,
            "bytes_data": raw,
            "bytes_on_disk": on_disk,
            "runs": runs,
            "median_seconds": med,
            "fit_over_read": ratio,
            "fit_peak_rss_mib": peak,
            "fit_ru_maxrss_mib": maxrss,
            "page_cache_dropped": can_drop,
            "tsqr": tsqr,
            "generate_seconds": gen,
        },
        "\n".join(lines) + "\n",
    )


def run_illcond() -> tuple[dict, str]:
    res = {m: run_child(SCRIPT, "illcond", m) for m in ILL_METHODS}
    lines = [
        "## Ill-conditioned: 200k x 50, singular values 1 .. 1e-7, mean 5, all 50 components\n",
        "| method | time | leading components with singular value within 1e-3 | within 1e-6 | rel. error of smallest singular value | sin(angle) of smallest component to truth |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for m, r in res.items():
        if "error" in r:
            lines.append(f"| {m} | fails: {r['error']} | | | | |")
        else:
            lines.append(
                f"| {m} | {r['seconds']:.2f} s | {r['leading_components_within_1e-3']} / 50 | "
                f"{r['leading_components_within_1e-6']} / 50 | "
                f"{r['smallest_sv_rel_err']:.1e} | {r['smallest_component_sin']:.1e} |"
            )
    return res, "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["memory", "disk", "illcond", "all"], default="all", nargs="?")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-tsqr", action="store_true", help="skip the tsqr fit of the disk store")
    args = ap.parse_args()
    path = Path(__file__).resolve().parent / "results" / "pca.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    payload = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        **{k: previous.get(k) for k in ("memory", "disk", "illcond")},
    }
    sections = dict(previous.get("_markdown", {}))
    if args.case in ("memory", "all"):
        payload["memory"], sections["memory"] = run_memory(args.rounds)
        sections["memory"] = stamped(sections["memory"])
    if args.case in ("disk", "all"):
        payload["disk"], sections["disk"] = run_disk(args.rounds, not args.no_tsqr)
        sections["disk"] = stamped(sections["disk"])
    if args.case in ("illcond", "all"):
        payload["illcond"], sections["illcond"] = run_illcond()
        sections["illcond"] = stamped(sections["illcond"])
    payload["_markdown"] = sections
    notes = (
        "Threads: dask runs use 2 dask threads x 1 BLAS thread; scikit-learn uses 2 BLAS threads. "
        "IncrementalPCA uses batch_size=20000. dask-ml PCA gets dask arrays with the same 128 MiB row chunks.\n\n"
    )
    write_results(
        "pca", payload, notes + "\n".join(sections[k] for k in ("memory", "disk", "illcond") if k in sections)
    )


if __name__ == "__main__":
    main()
