"""Density ridges by SCMS (issue 17): a million cosmic-web-like rows, the support, and CRISPy side by side.

scale    bigdr.datasets.make_filaments (29 filaments between 16 nodes in the unit cube,
         noise 0.01; 15% clumps at the nodes, 15% uniform background), 1M rows in a
         float32 zarr store. DensityRidge() with its defaults (bandwidth "auto", 5,000
         queries, a 50,000-row support, kernel cut at 4 h) fitted from the store, then
         every row placed on the ridge and written to a zarr store. Fresh process; wall
         time of each phase, peak RSS, distances to the true filaments. Also SCMS per
         row (projection="scms") on 20,000 rows, for its cost.
support  the same 1M rows in memory: the support size (10k .. 200k rows) against fit
         time and distance to the true filaments.
crispy   CRISPy (crispy-learn, an in-memory SCMS for astronomy), in its own virtual
         environment (CRISPY_PYTHON), on the first n rows of the same data, n = 2k, 5k,
         10k, 30k until it fails or takes over 15 minutes (a first run with 2,000 walkers
         did not finish 10k rows in 20 minutes; bigdr took 1.2 s there); 500 walkers
         (rows drawn uniformly), the bandwidth bigdr chose at 1M rows, its default
         eps, f_h and maxT (1,000 iterations), unit weights (its default weights=None fails
         in version 1.3.1: "invalid index to scalar variable"). bigdr on the same rows and walkers with the whole of them as support
         and no density threshold. Peak RSS of CRISPy's process tree (it forks workers).

figure   docs/_static/ridge-filaments.png.

Distances: "ridge -> truth" from each ridge point to the nearest true filament (median,
95%, max: the max is the one-sided Hausdorff distance); "truth -> ridge" from points
every 0.005 along the filaments (outside the clumps: farther than 0.05 from a node) to
the nearest ridge point (its max: coverage); Hausdorff = the larger of the two maxima.

Usage: CRISPY_PYTHON=/path/to/python python benchmarks/bench_ridge.py [scale|support|crispy|figure|all]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, run_child, run_sections  # noqa: E402

SCRIPT = Path(__file__).resolve()
ROWS = 1_000_000
SEED = 0
WALKERS = 500


def store() -> Path:
    from bigdr.datasets import generate

    path = DATA / "filaments-1M.zarr"
    if not path.exists():
        generate("filaments", path, ROWS, seed=SEED, dtype=np.float32)
    return path


def segments() -> np.ndarray:
    from bigdr.datasets import filament_segments

    return filament_segments(16, 3, 1.0, SEED)


def to_segments(P: np.ndarray, S: np.ndarray) -> np.ndarray:
    """Distance from each point to the nearest segment."""
    out = []
    a, ab = S[:, 0][None], (S[:, 1] - S[:, 0])[None]
    for s in range(0, len(P), 20_000):
        q = P[s : s + 20_000, None, :]
        t = np.clip(((q - a) * ab).sum(axis=2) / (ab**2).sum(axis=2), 0, 1)
        out.append(np.linalg.norm(q - (a + t[..., None] * ab), axis=2).min(axis=1))
    return np.concatenate(out)


def truth_points(S: np.ndarray) -> np.ndarray:
    nodes = np.unique(S.reshape(-1, 3), axis=0)
    pts = np.concatenate([a + np.linspace(0, 1, int(np.linalg.norm(b - a) / 0.005))[:, None] * (b - a) for a, b in S])
    far = np.linalg.norm(pts[:, None] - nodes[None], axis=2).min(axis=1) > 0.05
    return pts[far]


def ridge_scores(R: np.ndarray) -> dict:
    from scipy.spatial import cKDTree

    S = segments()
    d = to_segments(R, S)
    cover = cKDTree(R).query(truth_points(S))[0]
    return {
        "ridge_points": len(R),
        "ridge_to_truth_median": float(np.median(d)),
        "ridge_to_truth_95": float(np.quantile(d, 0.95)),
        "ridge_to_truth_max": float(d.max()),
        "truth_to_ridge_max": float(cover.max()),
        "hausdorff": float(max(d.max(), cover.max())),
    }


def child(args):
    import dask.array as da

    import bigdr
    from bigdr.curves.density_ridge import DensityRidge
    from bigdr.io import open_zarr

    case = args[0]
    path = store()
    if case == "scale":
        out = Path(tempfile.mkdtemp(dir=DATA)) / "ridge.zarr"
        model = DensityRidge(random_state=0)
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            model.fit(f"{path}/X")
            fit_s = time.perf_counter() - t0
            bigdr.write_zarr(model.transform(f"{path}/X"), out)
            total = time.perf_counter() - t0
        Y = np.asarray(da.from_zarr(open_zarr(str(out))).compute())
        X = np.asarray(da.from_zarr(open_zarr(str(path), dataset="X")).compute(), dtype=np.float64)
        label = np.asarray(da.from_zarr(open_zarr(str(path), dataset="coords"))[:, 0].compute())
        on = label >= 0
        S = segments()
        a, b = S[label[on].astype(int), 0], S[label[on].astype(int), 1]
        t = np.clip(((Y[on] - a) * (b - a)).sum(axis=1) / ((b - a) ** 2).sum(axis=1), 0, 1)
        own = np.linalg.norm(Y[on] - (a + t[:, None] * (b - a)), axis=1)
        t1 = time.perf_counter()
        scms_rows = model.set_params(projection="scms").transform(X[:20_000])
        scms_s = time.perf_counter() - t1
        import shutil

        shutil.rmtree(out.parent)
        return {
            "rows": ROWS,
            "fit_seconds": fit_s,
            "transform_write_seconds": total - fit_s,
            "total_seconds": total,
            "peak_rss_mib": rss.peak / 2**20,
            "bandwidth": model.bandwidth_,
            "n_iter": model.n_iter_,
            "dropped": model.n_dropped_,
            "ridge_spacing": model.ridge_spacing_,
            **ridge_scores(model.ridge_points_),
            "filament_rows_to_own_filament_median": float(np.median(own)),
            "filament_rows_moved_median": float(np.median(np.linalg.norm(Y[on] - X[on], axis=1))),
            "scms_projection_20k_seconds": scms_s,
            "scms_projection_to_truth_median": float(np.median(to_segments(scms_rows[on[:20_000]], S))),
        }
    raise ValueError(case)


def run_scale():
    r = run_child(SCRIPT, "scale", timeout=3 * 3600)
    print(r, flush=True)
    lines = [
        "## One million cosmic-web-like rows in 3-D, from a zarr store: DensityRidge() defaults\n",
        "Fit (support sample, queries thinned and moved onto the ridge) then every row placed on the ridge "
        "(its nearest ridge point) and written to zarr; one fresh process.\n",
        "| rows | fit (s) | place + write (s) | total (s) | peak RSS (MiB) | bandwidth | ridge points | "
        "ridge -> truth median / 95% / max | truth -> ridge max | Hausdorff |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        f"| {r['rows']:,} | {r['fit_seconds']:.1f} | {r['transform_write_seconds']:.1f} | {r['total_seconds']:.1f} | "
        f"{r['peak_rss_mib']:.0f} | {r['bandwidth']:.4f} | {r['ridge_points']:,} | "
        f"{r['ridge_to_truth_median']:.4f} / {r['ridge_to_truth_95']:.4f} / {r['ridge_to_truth_max']:.4f} | "
        f"{r['truth_to_ridge_max']:.4f} | {r['hausdorff']:.4f} |",
        "",
        f"Rows of a filament, placed: median distance to their own filament {r['filament_rows_to_own_filament_median']:.4f} "
        f"(they moved {r['filament_rows_moved_median']:.4f}). Query points left out: {r['dropped']}. "
        f"Ridge points {r['ridge_spacing']:.4f} apart (median). SCMS from each row instead "
        f"(projection='scms'): {r['scms_projection_20k_seconds']:.1f} s for 20,000 rows; their ridge points lie "
        f"{r['scms_projection_to_truth_median']:.4f} from the filaments (median).\n",
    ]
    return r, "\n".join(lines) + "\n"


def run_support():
    import dask.array as da

    from bigdr.curves.density_ridge import DensityRidge
    from bigdr.io import open_zarr

    X = np.asarray(da.from_zarr(open_zarr(str(store()), dataset="X")).compute(), dtype=np.float64)
    rows = []
    for m in (10_000, 20_000, 50_000, 200_000):
        t0 = time.perf_counter()
        model = DensityRidge(max_samples=m, random_state=0).fit(X)
        rows.append({"support": m, "seconds": time.perf_counter() - t0, "bandwidth": model.bandwidth_,
                     **ridge_scores(model.ridge_points_)})  # fmt: skip
        print(rows[-1], flush=True)
    lines = [
        "## The support: a uniform sample of the 1M rows (in memory), bandwidth by the rule for its size\n",
        "| support rows | fit (s) | bandwidth | ridge -> truth median / 95% / max | truth -> ridge max |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['support']:,} | {r['seconds']:.1f} | {r['bandwidth']:.4f} | {r['ridge_to_truth_median']:.4f} / "
            f"{r['ridge_to_truth_95']:.4f} / {r['ridge_to_truth_max']:.4f} | {r['truth_to_ridge_max']:.4f} |"
        )
    return rows, "\n".join(lines) + "\n"


CRISPY_CHILD = """
import sys, time, json, numpy as np
from crispy import scms
X = np.load(sys.argv[1]); G = np.load(sys.argv[2]); h = float(sys.argv[3])
t0 = time.perf_counter()
conv, unconv = scms.find_ridge(X[:, :, None], G[:, :, None], D=3, h=h, d=1, weights=np.ones(len(X), np.float32))
print(json.dumps({"seconds": time.perf_counter() - t0, "converged": conv[:, :, 0].tolist(),
                  "unconverged": len(unconv)}))
"""


def tree_rss(pid: int) -> int:
    import psutil

    try:
        p = psutil.Process(pid)
        return sum(q.memory_info().rss for q in [p, *p.children(recursive=True)])
    except psutil.Error:
        return 0


def run_crispy_once(python: str, X: np.ndarray, G: np.ndarray, h: float, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        np.save(f"{tmp}/X.npy", X.astype(np.float32))
        np.save(f"{tmp}/G.npy", G.astype(np.float32))
        script = Path(tmp) / "crispy_child.py"
        script.write_text(CRISPY_CHILD)
        proc = subprocess.Popen([python, str(script), f"{tmp}/X.npy", f"{tmp}/G.npy", str(h)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        peak, stop = [0], threading.Event()

        def sample():
            while not stop.wait(0.2):
                peak[0] = max(peak[0], tree_rss(proc.pid))

        threading.Thread(target=sample, daemon=True).start()
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            import psutil

            for child in psutil.Process(proc.pid).children(recursive=True):  # its joblib workers too
                child.kill()
            proc.kill()
            proc.communicate()
            return {"failed": f"over {timeout:.0f} s", "peak_rss_mib": peak[0] / 2**20}
        finally:
            stop.set()
        if proc.returncode != 0:
            return {"failed": err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}",
                    "peak_rss_mib": peak[0] / 2**20}  # fmt: skip
        r = json.loads(out.strip().splitlines()[-1])
        R = np.asarray(r.pop("converged")).reshape(-1, 3)
        return {**r, "peak_rss_mib": peak[0] / 2**20, "ridge": R}


def run_crispy():
    import dask.array as da

    from bigdr.curves.density_ridge import DensityRidge
    from bigdr.io import open_zarr

    python = os.environ.get("CRISPY_PYTHON")
    if not python:
        raise SystemExit("Set CRISPY_PYTHON to a Python with crispy-learn installed.")
    full = np.asarray(da.from_zarr(open_zarr(str(store()), dataset="X")).compute(), dtype=np.float64)
    h = DensityRidge(random_state=0).fit(full).bandwidth_
    rows = []
    for n in (2_000, 5_000, 10_000, 30_000):
        X = full[:n]
        G = X[np.sort(np.random.default_rng(1).choice(n, WALKERS, replace=False))]
        c = run_crispy_once(python, X, G, h, timeout=900)
        with PeakRSS() as rss:
            t0 = time.perf_counter()
            model = DensityRidge(bandwidth=h, max_samples=n, density_threshold=0.0).fit(X, queries=G)
            seconds = time.perf_counter() - t0
        row = {"rows": n, "walkers": len(G), "bandwidth": h,
               "bigdr": {"seconds": seconds, "peak_rss_mib": rss.peak / 2**20, **ridge_scores(model.ridge_points_)}}  # fmt: skip
        if "ridge" in c:
            from scipy.spatial import cKDTree

            R = c.pop("ridge")
            c.update(ridge_scores(R))
            c["to_bigdr_median"] = float(np.median(cKDTree(model.ridge_points_).query(R)[0]))
        row["crispy"] = c
        rows.append(row)
        print(row, flush=True)
        if "failed" in c:
            break
    lines = [
        f"## CRISPy (crispy-learn 1.3.1, in memory) and bigdr on the first n rows, {WALKERS} walkers, the same "
        "bandwidth\n",
        "bigdr with all n rows as support (the same density as CRISPy's) and no density threshold. CRISPy "
        "uses its defaults (eps 1e-6, f_h 5, all CPUs through joblib); peak RSS over its process tree.\n",
        "| rows | CRISPy (s) | CRISPy peak (MiB) | bigdr (s) | bigdr peak (MiB) | ridge -> truth median, CRISPy / bigdr | "
        "CRISPy ridge to bigdr's (median) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        c, b = r["crispy"], r["bigdr"]
        if "failed" in c:
            lines.append(f"| {r['rows']:,} | failed: {c['failed']} | {c['peak_rss_mib']:.0f} | {b['seconds']:.1f} | "
                         f"{b['peak_rss_mib']:.0f} | - / {b['ridge_to_truth_median']:.4f} | - |")  # fmt: skip
        else:
            lines.append(
                f"| {r['rows']:,} | {c['seconds']:.1f} | {c['peak_rss_mib']:.0f} | {b['seconds']:.1f} | "
                f"{b['peak_rss_mib']:.0f} | {c['ridge_to_truth_median']:.4f} / {b['ridge_to_truth_median']:.4f} | "
                f"{c['to_bigdr_median']:.5f} |"
            )
    return rows, "\n".join(lines) + "\n"


def run_figure():
    """docs/_static/ridge-filaments.png: the 1M rows' density (x, y) with the ridge found by the defaults."""
    from bigdr.curves.density_ridge import DensityRidge
    from bigdr.plot import structure

    path = store()
    model = DensityRidge(random_state=0).fit(f"{path}/X")
    out = Path(__file__).resolve().parents[1] / "docs" / "_static" / "ridge-filaments.png"
    t0 = time.perf_counter()
    structure(model, f"{path}/X", out, title="DensityRidge on 1M cosmic-web-like rows (x, y)")
    r = {"figure": str(out.name), "seconds": time.perf_counter() - t0}
    return r, f"Figure `docs/_static/{out.name}` drawn in {r['seconds']:.1f} s (1M rows, two passes).\n"


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:]), default=float))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["scale", "support", "crispy", "figure", "all"], nargs="*", default="all")
    args = ap.parse_args()
    runners = {"scale": run_scale, "support": run_support, "crispy": run_crispy, "figure": run_figure}
    run_sections("ridge", runners, args.case)


if __name__ == "__main__":
    main()
