"""Isomap's sampled graph on a manifold of more than two dimensions (issue 12).

Data: the product of two swiss rolls (each 3-D with coordinates (t, height),
noise 0), so a 4-D manifold in 6-D, rotated into 40-D by a random orthonormal
map; 300,000 rows. Truth: the four coordinates (t1, h1, t2, h2).

Score: the canonical correlations between the 4-D embedding and the truth
(1 = the embedding is a linear image of the true coordinates); the smallest
(fourth) is the one that collapses when the graph is too sparse.

Cases, each in a fresh process:

* ``old default``: ``max_samples=100000`` (what ``"auto"`` meant before it
  adapted to the manifold);
* ``auto``: the default now (a first 100,000-row sample, its estimated
  dimension, and a larger sample or all rows when the manifold needs it);
* ``all rows``: ``max_samples=None``.

Usage: python benchmarks/bench_sampling.py [--rounds N] [--n ROWS]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, run_child, run_sections  # noqa: E402

SCRIPT = Path(__file__).resolve()
CASES = {"old default": 100_000, "auto": "auto", "all rows": None}


def product_of_rolls(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from bigdr.datasets import make_swiss_roll

    a, ca = make_swiss_roll(n, noise=0.0, seed=2 * seed)
    b, cb = make_swiss_roll(n, noise=0.0, seed=2 * seed + 1)
    Z = np.hstack([np.asarray(a), np.asarray(b)])
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((40, 6)))[0]
    return np.ascontiguousarray(Z @ Q.T), np.hstack([np.asarray(ca), np.asarray(cb)])


def canonical_correlations(Y: np.ndarray, T: np.ndarray) -> list[float]:
    qy = np.linalg.qr(Y - Y.mean(0))[0]
    qt = np.linalg.qr(T - T.mean(0))[0]
    return [float(c) for c in np.linalg.svd(qy.T @ qt, compute_uv=False)]


def child(case: str, n: int, seed: int) -> None:
    import bigdr

    X, T = product_of_rolls(n, seed)
    with warnings.catch_warnings(record=True) as caught, PeakRSS() as rss:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        model = bigdr.Isomap(4, max_samples=CASES[case], random_state=seed)
        Y = model.fit_transform(X)
        seconds = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss_mib": rss.peak / 2**20,
                "graph_rows": len(model.reference_rows_),
                "mode": model.mode_,
                "intrinsic_dimension": model.intrinsic_dimension_,
                "canonical_correlations": canonical_correlations(Y, T),
                "warnings": [f"{type(w.message).__name__}: {w.message}" for w in caught],
            }
        )
    )


def run(n: int, rounds: int):
    results: dict = {case: [] for case in CASES}
    for seed in range(rounds):
        for case in CASES:
            r = run_child(SCRIPT, case, str(n), str(seed), timeout=7200)
            r["seed"] = seed
            results[case].append(r)
            print(case, seed, json.dumps(r)[:300], flush=True)
    lines = [
        f"## Isomap on a 4-D manifold: {n:,} rows of a product of two swiss rolls in 40-D\n",
        "Canonical correlations between the 4-D embedding and the true coordinates (1 is perfect); "
        f"{rounds} seeds, each case in a fresh process.\n",
        "| case | seed | graph rows | estimated dimension | 4th canonical correlation | all four | time (s) | "
        "peak RSS (MiB) | warning |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case, runs in results.items():
        for r in runs:
            cc = r["canonical_correlations"]
            warned = "yes" if any("SparseGraph" in w for w in r["warnings"]) else "no"
            lines.append(
                f"| {case} | {r['seed']} | {r['graph_rows']:,} | {r['intrinsic_dimension']:.2f} | {cc[-1]:.3f} | "
                f"{', '.join(f'{c:.3f}' for c in cc)} | {r['seconds']:.0f} | {r['peak_rss_mib']:.0f} | {warned} |"
            )
    medians = {c: statistics.median(r["canonical_correlations"][-1] for r in runs) for c, runs in results.items()}
    lines.append("\nMedian 4th canonical correlation: " + ", ".join(f"{c} {v:.3f}" for c, v in medians.items()) + ".\n")
    return {"n": n, "results": results, "median_4th": medians}, "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--n", type=int, default=300_000)
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    run_sections("sampling", {"product4d": lambda: run(args.n, args.rounds)}, ["all"])


if __name__ == "__main__":
    main()
