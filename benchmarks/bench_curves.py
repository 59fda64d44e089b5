"""Principal curves (issue 17): accuracy against n, and time per iteration against a read pass at scale.

growth  a noisy three-quarter circle in 3-D and a noisy sine in 2-D (noise 0.05 per
        axis), n = 1,000 .. 1,000,000: the median distance from the fitted curve (over the
        latent range the rows use) to the true curve; PrincipalCurve(20, reg=1e-3) iterated
        to tol 1e-5, from both starts (init="geodesic", "pca"). In memory.
converge  the growth section's fits from the default start to tol 1e-7: mean and median distance.
reg     the held-out rule for lambda (RegPath.chosen) on the same curves, 1,000 .. 1,000,000 rows,
        against the default 1e-3: the median distance to the true curve at each.
figure  docs/_static/curve-spiral.png from the 10M-row store.
defaults  every curve estimator with its defaults on 20,000 rows of a noisy closed circle (radius 1, noise
        0.1), scikit-learn's swiss roll (noise 0.5) and S-curve (noise 0.05): iterations, convergence,
        the warnings raised, and for PrincipalCurve the objective against a run of 400 iterations (tol 0).
hs      HastieStuetzleCurve() on the growth curves (1,000 .. 1,000,000 rows) and on the spiral stores
        (fit from the store, then its pass against a read).
scale   a noisy 2-D spiral arc (radius 1 + t, angle 1.5 pi t) embedded in 10-D by a random
        orthonormal map, noise 0.05 in every coordinate, float32 zarr stores of 1M and 10M
        rows: a plain read pass, PrincipalCurve(20) with 5 iterations (tol 0): seconds
        per iteration, peak RSS, distance to the true curve; and the same with a sample
        phase (sample_size=200_000, tol=1e-4). Fresh process each.

Usage: python benchmarks/bench_curves.py [growth|converge|reg|scale|figure|defaults|hs|all]
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, drop_page_cache, read_pass, run_child, run_sections, timed  # noqa: E402

SCRIPT = Path(__file__).resolve()
ITERATIONS = 5


def circle(t):
    a = 1.5 * np.pi * t
    return np.column_stack([np.cos(a), np.sin(a), 0.3 * a])


def sine(t):
    return np.column_stack([4 * t, np.sin(2 * np.pi * t)])


def spiral_map() -> np.ndarray:
    return np.linalg.qr(np.random.default_rng(4).standard_normal((10, 2)))[0].T  # (2, 10), orthonormal rows


def spiral(t):
    a = 1.5 * np.pi * t
    return np.column_stack([(1 + t) * np.cos(a), (1 + t) * np.sin(a)]) @ spiral_map()


def curve_gaps(model, X, truth) -> np.ndarray:
    """Distance to the true curve of 500 points of the fitted curve across the latent range the rows use."""
    Z = model.transform(X)
    z = np.linspace(float(np.min(Z)), float(np.max(Z)), 500)
    curve = model.inverse_transform(z)
    true = truth(np.linspace(0, 1, 5000))
    return np.sqrt(((curve[:, None, :] - true[None]) ** 2).sum(axis=2)).min(axis=1)


def row_gaps(model, X, truth, size: int = 5_000) -> np.ndarray:
    """Distance to the true curve of the fitted curve's points at the projections of ``size`` rows (evenly
    drawn): the curve where the rows lie, each part weighted by the rows that project there."""
    rows = X[np.linspace(0, len(X) - 1, min(size, len(X))).astype(int)]
    curve = model.inverse_transform(np.clip(model.transform(rows), 0.0, 1.0))
    true = truth(np.linspace(0, 1, 5000))
    return np.concatenate(
        [np.sqrt(((part[:, None, :] - true[None]) ** 2).sum(axis=2)).min(axis=1) for part in np.array_split(curve, 10)]
    )


def distance_to(model, X, truth) -> float:
    """Median distance from the fitted curve, over the latent range the rows use, to the true curve."""
    return float(np.median(curve_gaps(model, X, truth)))


def growth_sets():
    """The rows of the growth, converge, reg and hs sections: (name, truth, n, X), noise 0.05 per axis."""
    for name, truth in (("three-quarter circle in 3-D", circle), ("sine in 2-D", sine)):
        for n in (1_000, 10_000, 100_000, 1_000_000):
            rng = np.random.default_rng(n)
            X = truth(rng.uniform(0, 1, n))
            yield name, truth, n, X + 0.05 * rng.standard_normal(X.shape)


def store(n: int) -> Path:
    path = DATA / f"spiral-{n // 1_000_000}M-10d.zarr"
    if not path.exists():
        import dask
        import dask.array as da

        import bigdr

        def block(i, m):
            rng = np.random.default_rng([9, i])
            return (spiral(rng.uniform(0, 1, m)) + 0.05 * rng.standard_normal((m, 10))).astype(np.float32)

        rows = 500_000
        X = da.concatenate([da.from_delayed(dask.delayed(block)(i, rows), (rows, 10), np.float32)
                            for i in range(n // rows)])  # fmt: skip
        bigdr.write_zarr(X, path)
    return path


def child(args):
    import bigdr
    from bigdr.curves.principal_curve import PrincipalCurve

    case, n = args[0], int(args[1])
    path = store(n)
    if case == "read":
        with PeakRSS() as rss:
            times, _ = timed(lambda: read_pass(path))
        return {"case": case, "rows": n, "seconds": times[0], "peak_rss_mib": rss.peak / 2**20}
    if case == "hs":
        return hs_child(path, n)
    if case == "sampled":  # iterate on a 200k-row sample until R settles, then full passes to tol 1e-4
        model = PrincipalCurve(20, max_iter=50, tol=1e-4, sample_size=200_000, random_state=0)
    else:
        model = PrincipalCurve(20, max_iter=ITERATIONS, tol=0.0)
    with PeakRSS() as rss:
        times, model = timed(lambda: model.fit(str(path)))
    rounds = iteration_rounds(model, path) if case == "fit" else []
    sample = bigdr.as_array(str(path))[:200_000].compute().astype(np.float64)
    return {
        "rounds": rounds,
        "case": case,
        "rows": n,
        "seconds": times[0],
        "passes": model.n_passes_,
        "iterations": model.n_iter_,
        "sample_iterations": model.n_sample_iter_,
        "converged": bool(model.converged_),
        "peak_rss_mib": rss.peak / 2**20,
        "distance": distance_to(model, sample, spiral),
        "objective": model.objective_,
    }


def blas_floor(block, mean, K):
    """The alpha-step's two matrix products alone, with the kernel matrix ``K`` given (no exponentials, no
    projection): the centred float64 pieces of ``block``, ``K^T K`` by a symmetric rank-k update (half a
    general product) and ``K^T X``. What any exact coefficient step computes per row, at BLAS speed."""
    from scipy.linalg.blas import dsyrk

    from bigdr.curves.principal_curve import _centred_pieces

    gram, cross = np.zeros((K.shape[1], K.shape[1])), np.zeros((K.shape[1], len(mean)))
    for X in _centred_pieces(block, mean):
        k = K[: len(X)]
        gram = dsyrk(1.0, k, beta=1.0, c=gram, trans=1, overwrite_c=1)
        cross += k.T @ X
    return gram, cross


def add_pair(a, b):
    return a[0] + b[0], a[1] + b[1]


def iteration_rounds(model, path, rounds: int = 3) -> list[dict]:
    """One iteration's pass (projections and sums of every row, as ``fit`` runs it) beside a read, per round."""
    import dask

    import bigdr
    from bigdr.blockwise.reduce import tree_reduce
    from bigdr.core import curves
    from bigdr.core.curves import PIECE_ROWS, kernel, merge_curve_sums
    from bigdr.curves.principal_curve import CHUNK_BYTES, _initial_sums, _iteration_sums
    from bigdr.io import chunk_budget
    from bigdr.runtime.compute import compute

    c, width, grid = model._settings()
    X = bigdr.as_array(str(path), check_finite=False, chunk_bytes=chunk_budget(CHUNK_BYTES))
    step = functools.partial(_iteration_sums, c=c, width=width, grid=grid)
    shared = (dask.delayed(model.mean_), dask.delayed(model.alpha_))
    # The floor of any projection: the alpha-step's sums with the latent coordinates given by one dot
    # product per row (the PCA start's pass), so the projection costs next to nothing.
    direction = np.linalg.svd(np.diff(model.inverse_transform(np.linspace(0, 1, 3)), axis=0))[2][:1].T
    sums_only = functools.partial(_initial_sums, c=c, width=width)
    shared_sums = (dask.delayed(model.mean_), dask.delayed(direction), dask.delayed(np.array([[-2.0], [2.0]])))
    iterate = lambda: compute(tree_reduce(X, step, merge_curve_sums, shared=shared))  # noqa: E731
    K = kernel(np.linspace(0.0, 1.0, PIECE_ROWS), c, width)  # a piece's kernel matrix, spread over the curve
    floor = lambda: compute(tree_reduce(X, blas_floor, add_pair, shared=(dask.delayed(model.mean_), dask.delayed(K))))  # noqa: E731
    out = []
    for _ in range(rounds):
        # cold: the page cache dropped first, so the pass reads the store from disk, as every pass over a
        # store larger than memory does; warm: straight after, the store in the page cache
        cold = drop_page_cache()
        read_cold = timed(lambda: read_pass(path))[0][0]
        read = timed(lambda: read_pass(path))[0][0]
        drop_page_cache()
        iteration_cold = timed(iterate)[0][0]
        iteration = timed(iterate)[0][0]
        sums = timed(lambda: compute(tree_reduce(X, sums_only, merge_curve_sums, shared=shared_sums)))[0][0]
        products = timed(floor)[0][0]
        curves.REFINE_STEPS, steps = 0, curves.REFINE_STEPS  # the same pass without the Newton steps
        try:
            unrefined = timed(iterate)[0][0]
        finally:
            curves.REFINE_STEPS = steps
        out.append(
            {"read": read, "sums_only": sums, "iteration": iteration, "ratio": iteration / read,
             "sums_ratio": sums / read, "products": products, "products_ratio": products / read, "cold": cold, "read_cold": read_cold, "iteration_cold": iteration_cold,
             "ratio_cold": iteration_cold / read_cold, "unrefined": unrefined}
        )  # fmt: skip
    return out


def run_growth():
    from bigdr.curves.principal_curve import PrincipalCurve

    rows = []
    for name, truth, n, X in growth_sets():
        sample = 100_000 if n > 100_000 else None  # a million rows: iterate on a sample, finish on all
        for init in ("geodesic", "pca"):
            t0 = time.perf_counter()
            model = PrincipalCurve(20, reg=1e-3, max_iter=300, tol=1e-5, sample_size=sample, init=init,
                                       random_state=0).fit(X)  # fmt: skip
            rows.append({"curve": name, "rows": n, "init": init, "seconds": time.perf_counter() - t0,
                             "converged": model.converged_, "iterations": model.n_iter_ + model.n_sample_iter_,
                             "distance": distance_to(model, X, truth)})  # fmt: skip
            print(rows[-1], flush=True)
    lines = [
        "## Distance to the true curve against n (noise 0.05 per axis; PrincipalCurve(20, reg=1e-3), tol 1e-5)\n",
        "Iterated to convergence (R[f] changing by less than 1e-5, at most 300 iterations); the million-row fits "
        'iterate on a 100,000-row sample first. In memory. init="geodesic" is the default start; "pca" the first '
        "principal component.\n",
        "| curve | rows | init | median distance of the fitted curve to the true one | iterations | converged | "
        "seconds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['curve']} | {r['rows']:,} | {r['init']} | {r['distance']:.4f} | {r['iterations']} | "
            f"{r['converged']} | {r['seconds']:.1f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_converge():
    """The growth section's fits from the default start, iterated to a tighter tolerance: mean and median distance."""
    from bigdr.curves.principal_curve import PrincipalCurve

    rows = []
    for name, truth, n, X in growth_sets():
        sample = 100_000 if n > 100_000 else None
        t0 = time.perf_counter()
        model = PrincipalCurve(20, reg=1e-3, max_iter=2000, tol=1e-7, sample_size=sample,
                                   random_state=0).fit(X)  # fmt: skip
        gaps = curve_gaps(model, X, truth)
        rows.append({"curve": name, "rows": n, "seconds": time.perf_counter() - t0,
                         "converged": model.converged_, "iterations": model.n_iter_,
                         "sample_iterations": model.n_sample_iter_, "median": float(np.median(gaps)),
                         "mean": float(np.mean(gaps)),
                         "row_mean": float(np.mean(row_gaps(model, X, truth)))})  # fmt: skip
        print(rows[-1], flush=True)
    lines = [
        "## Distance to the true curve against n, iterated to tol 1e-7 (PrincipalCurve(20, reg=1e-3))\n",
        "The growth section's rows and default start, iterated until R[f] changes by less than 1e-7 (at most "
        "2,000 iterations; the million-row fits on a 100,000-row sample first, then on all rows). The mean and "
        "median, over 500 points of the fitted curve across the rows' latent range, of the distance to the "
        "true curve; and the mean at the curve's points where 5,000 of the rows project (each part of the "
        "curve weighted by the rows that use it).\n",
        "| curve | rows | mean distance | median distance | mean at the rows' projections | "
        "iterations (on the sample) | converged | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['curve']} | {r['rows']:,} | {r['mean']:.4f} | {r['median']:.4f} | {r['row_mean']:.4f} | "
            f"{r['iterations']} "
            f"({r['sample_iterations']}) | {r['converged']} | {r['seconds']:.1f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_reg():
    """The held-out rule for lambda (RegPath.chosen) against the fixed default, by the distance to the true curve."""
    from bigdr.curves.principal_curve import PrincipalCurve, reg_path

    regs = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
    rows = []
    for name, truth, n, X in growth_sets():
        settings = {"n_centres": 20, "max_iter": 300, "tol": 1e-5, "random_state": 0}
        t0 = time.perf_counter()
        path = reg_path(X[:100_000], regs, **settings)  # a million rows: the path on 100,000 of them
        seconds = time.perf_counter() - t0
        lam = path.chosen()
        if n > 100_000:  # all rows with a sample phase, as the growth table; only the chosen and the default
            fit = {**settings, "sample_size": 100_000}
            distance = {r: distance_to(PrincipalCurve(reg=r, **fit).fit(X), X, truth) for r in {lam, 1e-3}}
        else:
            distance = {r: distance_to(PrincipalCurve(reg=r, **settings).fit(X), X, truth) for r in regs}
        rows.append({"curve": name, "rows": n, "chosen": lam, "path_seconds": seconds,
                         "held_out": path.held_out.tolist(), "distance": {str(r): d for r, d in distance.items()}})  # fmt: skip
        print(rows[-1], flush=True)
    lines = [
        "## Choosing lambda by held-out rows (RegPath.chosen) against the default 1e-3\n",
        "reg_path over lambda = 1e-6 .. 1e-1 (fits on 80% of the rows, the mean squared distance of the other "
        "20%; at a million rows, of the first 100,000); the rule takes the largest lambda within 1% of the "
        "smallest held-out distance. Then a fit on all rows at each lambda (at a million rows only the chosen "
        "and 1e-3, with a 100,000-row sample phase), and the median distance of the fitted curve to the true "
        "one. PrincipalCurve(20), tol 1e-5, in memory.\n",
        "| curve | rows | chosen lambda | distance at the chosen | distance at 1e-3 | best distance on the path "
        "(its lambda) | seconds for the path |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        best = min(r["distance"], key=r["distance"].get)
        lines.append(
            f"| {r['curve']} | {r['rows']:,} | {r['chosen']:g} | {r['distance'][str(r['chosen'])]:.4f} | "
            f"{r['distance']['0.001']:.4f} | "
            + (f"{r['distance'][best]:.4f} ({float(best):g})" if len(r["distance"]) > 2 else "-")
            + f" | {r['path_seconds']:.1f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_figure():
    """docs/_static/curve-spiral.png: the 10M-row spiral's density in its plane with the fitted curve."""
    from bigdr.curves.principal_curve import PrincipalCurve
    from bigdr.plot import structure

    path = store(10_000_000)
    model = PrincipalCurve(20, max_iter=50, tol=1e-4, sample_size=200_000, random_state=0).fit(str(path))
    out = Path(__file__).resolve().parents[1] / "docs" / "_static" / "curve-spiral.png"
    t0 = time.perf_counter()
    structure(model, str(path), out, basis=spiral_map().T, title="PrincipalCurve on 10M rows of a noisy spiral in 10-D")
    r = {"figure": str(out.name), "seconds": time.perf_counter() - t0}
    return r, f"Figure `docs/_static/{out.name}` drawn in {r['seconds']:.1f} s (10M rows, two passes).\n"


def run_scale():
    rows = []
    for n in (1_000_000, 10_000_000):
        for case in ("read", "fit", "sampled"):
            rows.append(run_child(SCRIPT, case, str(n), timeout=4 * 3600))
            print(rows[-1], flush=True)
    lines = [
        f"## Noisy spiral arc in 10-D, float32 zarr store: {ITERATIONS} iterations of PrincipalCurve(20)\n",
        "Passes: covariance, the sample that starts the curve, then one per iteration. "
        "Seconds per pass: the fit's wall time over its passes.\n",
        "| rows | read pass (s) | fit (s) | passes | seconds per pass | per pass / read | peak RSS fit (MiB) | "
        "median distance to the true curve |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    reads = {r["rows"]: r for r in rows if r["case"] == "read"}
    for fit in (r for r in rows if r["case"] == "fit"):
        read, per = reads[fit["rows"]], fit["seconds"] / fit["passes"]
        lines.append(
            f"| {fit['rows']:,} | {read['seconds']:.1f} | {fit['seconds']:.1f} | {fit['passes']} | {per:.1f} | "
            f"{per / read['seconds']:.1f} | {fit['peak_rss_mib']:.0f} | {fit['distance']:.4f} |"
        )
    lines += [
        "",
        "## One iteration's pass against a read, in the same process (after the fit above)\n",
        "The pass every iteration runs (each row's projection onto the curve and the alpha-step's sums), timed "
        "against a plain read of the same store, three rounds; medians of the times and of the per-round "
        "ratios. Cold: the page cache dropped before the pass, so it reads the store from disk, as every pass "
        "over a store larger than memory does. Warm: the same pass straight after, the store in the page "
        "cache. The sums-only pass (warm) is the floor of any projection: the same pass with each row's "
        "latent coordinate given by one dot product (the PCA start's pass), so it is the read, the kernel at "
        "the latent coordinates and the alpha-step's sums alone. The products-only pass (warm) is the floor "
        "of any exact alpha-step: the read, the centring in float64 and the two matrix products K^T K (a "
        "symmetric rank-k update) and K^T X with a fixed kernel matrix: no exponentials, no projection.\n",
        "| rows | cold read (s) | cold iteration (s) | cold iteration / read | warm read (s) | warm iteration (s) "
        "| warm iteration / read | sums-only pass (s) | sums-only / warm read | products-only pass (s) "
        "| products-only / warm read |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for fit in (r for r in rows if r["case"] == "fit"):
        keys = ("read_cold", "iteration_cold", "ratio_cold", "read", "iteration", "ratio", "sums_only", "sums_ratio", "products",
                "products_ratio")  # fmt: skip
        med = {k: float(np.median([r[k] for r in fit["rounds"]])) for k in keys}
        cold = "" if all(r["cold"] for r in fit["rounds"]) else " (page cache not dropped: not root)"
        lines.append(
            f"| {fit['rows']:,}{cold} | {med['read_cold']:.2f} | {med['iteration_cold']:.2f} | "
            f"{med['ratio_cold']:.2f} | {med['read']:.2f} | {med['iteration']:.2f} | {med['ratio']:.2f} | "
            f"{med['sums_only']:.2f} | {med['sums_ratio']:.2f} | {med['products']:.2f} | "
            f"{med['products_ratio']:.2f} |"
        )
    lines += [
        "",
        "Where a warm iteration's time goes (medians of the same rounds): the sums-only pass (read, kernel, "
        "sums), then the grid search (the iteration without its Newton steps, less the sums-only pass), then "
        "the Newton steps (the iteration less the pass without them).\n",
        "| rows | warm read (s) | sums-only pass (s) | grid search (s) | Newton steps (s) | iteration (s) "
        "| iteration / sums-only |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for fit in (r for r in rows if r["case"] == "fit" and "unrefined" in r["rounds"][0]):
        med = {
            k: float(np.median([r[k] for r in fit["rounds"]])) for k in ("read", "sums_only", "unrefined", "iteration")
        }
        ratio = float(np.median([r["iteration"] / r["sums_only"] for r in fit["rounds"]]))
        lines.append(
            f"| {fit['rows']:,} | {med['read']:.2f} | {med['sums_only']:.2f} | "
            f"{med['unrefined'] - med['sums_only']:.2f} | {med['iteration'] - med['unrefined']:.2f} | "
            f"{med['iteration']:.2f} | {ratio:.2f} |"
        )
    lines += [
        "",
        "## The same stores with a sample phase: PrincipalCurve(20, sample_size=200_000, tol=1e-4, max_iter=50)\n",
        "Iterations on the 200k-row sample (in memory) until R changes by less than 1e-4, then passes over all "
        "rows until it does again.\n",
        "| rows | fit (s) | sample iterations | passes over all rows | converged | peak RSS (MiB) | "
        "median distance to the true curve |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for fit in (r for r in rows if r["case"] == "sampled"):
        lines.append(
            f"| {fit['rows']:,} | {fit['seconds']:.1f} | {fit['sample_iterations']} | {fit['passes']} | "
            f"{fit['converged']} | {fit['peak_rss_mib']:.0f} | {fit['distance']:.4f} |"
        )
    return rows, "\n".join(lines) + "\n"


def hs_child(path, n: int) -> dict:
    """HastieStuetzleCurve() fitted from the store, then its pass timed against a read (three rounds)."""
    import dask

    import bigdr
    from bigdr.blockwise.reduce import tree_reduce
    from bigdr.core.polyline import merge_polyline_sums
    from bigdr.curves.hastie_stuetzle import CHUNK_BYTES, HastieStuetzleCurve, _pass_sums
    from bigdr.io import chunk_budget
    from bigdr.runtime.compute import compute

    model = HastieStuetzleCurve()
    with PeakRSS() as rss:
        times, model = timed(lambda: model.fit(str(path)))
    X = bigdr.as_array(str(path), check_finite=False, chunk_bytes=chunk_budget(CHUNK_BYTES))
    step = functools.partial(_pass_sums, n_bins=10 * len(model.vertices_))
    shared = (dask.delayed(model.vertices_),)
    rounds = []
    for _ in range(3):
        read = timed(lambda: read_pass(path))[0][0]
        iteration = timed(lambda: compute(tree_reduce(X, step, merge_polyline_sums, shared=shared)))[0][0]
        rounds.append({"read": read, "iteration": iteration, "ratio": iteration / read})
    sample = bigdr.as_array(str(path))[:200_000].compute().astype(np.float64)
    return {
        "case": "hs", "rows": n, "seconds": times[0], "passes": model.n_passes_, "iterations": model.n_iter_,
        "converged": bool(model.converged_), "peak_rss_mib": rss.peak / 2**20, "rounds": rounds,
        "distance": distance_to(model, sample, spiral), "objective": model.objective_,
    }  # fmt: skip


def run_hs():
    """The Hastie-Stuetzle curve: distance against n on the growth curves, and the spiral stores."""
    from bigdr.curves.hastie_stuetzle import HastieStuetzleCurve

    growth = []
    for name, truth, n, X in growth_sets():
        t0 = time.perf_counter()
        model = HastieStuetzleCurve().fit(X)
        growth.append({"curve": name, "rows": n, "seconds": time.perf_counter() - t0,
                           "converged": model.converged_, "iterations": model.n_iter_,
                           "distance": distance_to(model, X, truth)})  # fmt: skip
        print(growth[-1], flush=True)
    scale = []
    for n in (1_000_000, 10_000_000):
        scale.append(run_child(SCRIPT, "hs", str(n), timeout=4 * 3600))
        print(scale[-1], flush=True)
    lines = [
        "## Hastie-Stuetzle curve: distance to the true curve against n (HastieStuetzleCurve(), defaults)\n",
        "The growth section's rows (noise 0.05 per axis); 100 vertices, final span 0.02, tol 1e-5. In memory.\n",
        "| curve | rows | median distance of the fitted curve to the true one | iterations | converged | seconds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in growth:
        lines.append(
            f"| {r['curve']} | {r['rows']:,} | {r['distance']:.4f} | {r['iterations']} | {r['converged']} | "
            f"{r['seconds']:.1f} |"
        )
    lines += [
        "",
        "## Hastie-Stuetzle curve on the spiral stores (float32 zarr, 10-D)\n",
        "A fit from the store in a fresh process (covariance, range, then one pass per iteration until D^2 "
        "settles to 1e-5), then one iteration's pass timed against a plain read of the store, three rounds "
        "(medians).\n",
        "| rows | fit (s) | iterations | passes | converged | peak RSS (MiB) | median distance to the true curve | "
        "read (s) | iteration (s) | iteration / read |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in scale:
        med = {k: float(np.median([x[k] for x in r["rounds"]])) for k in ("read", "iteration", "ratio")}
        lines.append(
            f"| {r['rows']:,} | {r['seconds']:.1f} | {r['iterations']} | {r['passes']} | {r['converged']} | "
            f"{r['peak_rss_mib']:.0f} | {r['distance']:.4f} | {med['read']:.2f} | {med['iteration']:.2f} | "
            f"{med['ratio']:.2f} |"
        )
    return {"growth": growth, "scale": scale}, "\n".join(lines) + "\n"


def default_sets(n: int = 20_000) -> dict:
    from sklearn.datasets import make_s_curve, make_swiss_roll

    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, n)
    return {
        "noisy circle": np.column_stack([np.cos(t), np.sin(t)]) + 0.1 * rng.standard_normal((n, 2)),
        "swiss roll": make_swiss_roll(n, noise=0.5, random_state=0)[0],
        "S-curve": make_s_curve(n, noise=0.05, random_state=0)[0],
    }


def run_defaults():
    import warnings

    import bigdr

    rows = []
    for data, X in default_sets().items():
        for name in ("PrincipalCurve", "PrincipalManifold", "HastieStuetzleCurve", "DensityRidge"):
            cls = getattr(bigdr, name)
            model = cls(random_state=0) if "random_state" in cls().get_params() else cls()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                model.fit(X)
                seconds = time.perf_counter() - t0
            row = {"data": data, "estimator": name, "seconds": seconds, "n_iter": int(model.n_iter_),
                   "max_iter": int(model.max_iter), "tol": float(model.tol),
                   "converged": getattr(model, "converged_", None),
                   "warnings": [f"{type(w.message).__name__}: {w.message}" for w in caught]}  # fmt: skip
            if name == "PrincipalCurve":
                long = cls(max_iter=400, tol=0.0, random_state=0)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    long.fit(X)
                row["objective"] = float(model.objective_[-1])
                row["objective_400"] = float(min(long.objective_))
            if name == "DensityRidge":
                row["dropped"] = dict(model.n_dropped_)
            rows.append(row)
            print({k: v for k, v in row.items() if k != "warnings"}, row["warnings"][:1], flush=True)
    lines = [
        "## Every curve estimator with its defaults (20,000 rows each)\n",
        "A noisy closed circle (radius 1, noise 0.1 per axis), scikit-learn's swiss roll (noise 0.5) and S-curve "
        "(noise 0.05); `random_state=0` where there is one, every other parameter at its default. In memory, "
        "one process. For PrincipalCurve, the objective R[f] at the stop against the lowest of a run of 400 "
        "iterations with tol 0 from the same start.\n",
        "| data | estimator | iterations | max_iter | tol | converged | warnings | R[f] above the 400-iteration "
        "run | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        gap = f"{(r['objective'] - r['objective_400']) / r['objective_400']:.1%}" if "objective" in r else ""
        warned = "; ".join(w[:140] for w in r["warnings"]) or "none"
        dropped = r.get("dropped", {}).get("not converged")
        converged = r["converged"] if dropped is None else f"{dropped:,} query points did not"
        lines.append(
            f"| {r['data']} | {r['estimator']} | {r['n_iter']} | {r['max_iter']} | {r['tol']:g} | {converged} "
            f"| {warned} | {gap} | {r['seconds']:.1f} |"
        )
    return rows, "\n".join(lines) + "\n"


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    choices = ["growth", "converge", "reg", "scale", "figure", "defaults", "hs", "all"]
    ap.add_argument("case", choices=choices, nargs="*", default="all")
    args = ap.parse_args()
    sections = {"growth": run_growth, "converge": run_converge, "reg": run_reg, "scale": run_scale,
                "figure": run_figure, "defaults": run_defaults, "hs": run_hs}  # fmt: skip
    run_sections("curves", sections, args.case)


if __name__ == "__main__":
    main()
