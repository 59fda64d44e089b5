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

Section ``check``: Isomap's opt-in sample check (``check_sample=True``: a fit
on half the sample, 20,000 held-out rows embedded by both fits, R_NX(10)
compared) on the 4-D manifold at several sample sizes and on the 1M-row
swiss roll (2-D) with its default 100,000-row sample; each fit also without
the check, for its cost.

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
#: Graph samples of the 4-D manifold the check is measured at.
CHECK_SAMPLES = (20_000, 50_000, 100_000, 200_000)


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


def child(case: str, n: int, seed: int, check: str = "off") -> None:
    import bigdr

    if case.startswith("roll"):  # the check section's 2-D manifold, with its default sample
        import bigdr.datasets

        X, T = (np.asarray(a) for a in bigdr.datasets.make_swiss_roll(n, noise=0.05, seed=seed))
        model = bigdr.Isomap(2, random_state=seed, check_sample=check == "on")
    else:
        X, T = product_of_rolls(n, seed)
        samples = CASES[case] if case in CASES else int(case)
        model = bigdr.Isomap(4, max_samples=samples, random_state=seed, check_sample=check == "on")
    with warnings.catch_warnings(record=True) as caught, PeakRSS() as rss:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        Y = model.fit_transform(X)
        seconds = time.perf_counter() - t0
    check_result = model.sample_check_
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
                "sample_check": check_result,  # plain figures (None without the check)
            }
        )
    )


def run_cases(cases: list[tuple[str, int, str]], rounds: int) -> dict:
    """Each (case, rows, check) in a fresh process per seed: {"case rows check": [results]}."""
    results: dict = {}
    for seed in range(rounds):
        for case, n, check in cases:
            r = run_child(SCRIPT, case, str(n), str(seed), check, timeout=7200)
            r["seed"] = seed
            results.setdefault(f"{case} {n} {check}", []).append(r)
            print(case, n, check, seed, json.dumps(r)[:300], flush=True)
    return results


def run_check(rounds: int):
    cases = [(c, n, check) for c, n in (("roll", 1_000_000), *((str(m), 300_000) for m in CHECK_SAMPLES))
             for check in ("on", "off")]  # fmt: skip
    results = run_cases(cases, rounds)
    lines = [
        "## Isomap's sample check (`check_sample=True`): what halving the sample costs\n",
        "A fit on a random half of the graph sample; 20,000 rows held out from the sample embedded by both fits; "
        "R_NX(10) of the two embeddings (the share of each row's 10 nearest neighbours kept, above chance) on 1,000 "
        "of them, and the paired gain with its standard error; the check warns at a gain of 0.05 or more. The "
        "4-D manifold of the section above (300,000 x 40) at several sample sizes, and the 1M-row swiss roll "
        f"(noise 0.05) with its default 100,000-row sample. {rounds} seeds; each fit in a fresh process with the "
        "check and without (its cost: time and peak RSS of fit_transform).\n",
        "| data | graph rows | seed | R_NX(10), half the sample | all of it | gain ± error | warns | "
        "4th canonical correlation | time with / without the check (s) | peak RSS with / without (MiB) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case, n in (("roll", 1_000_000), *((str(m), 300_000) for m in CHECK_SAMPLES)):
        for on, off in zip(results[f"{case} {n} on"], results[f"{case} {n} off"]):
            c = on["sample_check"]
            data = "swiss roll, 1M rows" if case == "roll" else "4-D manifold, 300k rows"
            warns = "yes" if c["rising"] else "no"
            lines.append(
                f"| {data} | {on['graph_rows']:,} | {on['seed']} | {c['half']:.3f} | {c['full']:.3f} | "
                f"{c['gain']:+.3f} ± {c['error']:.3f} | {warns} | {on['canonical_correlations'][-1]:.3f} | "
                f"{on['seconds']:.0f} / {off['seconds']:.0f} | {on['peak_rss_mib']:.0f} / {off['peak_rss_mib']:.0f} |"
            )
    return {"results": results}, "\n".join(lines) + "\n"


def run(n: int, rounds: int):
    found = run_cases([(case, n, "off") for case in CASES], rounds)
    results = {case: found[f"{case} {n} off"] for case in CASES}
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
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *sys.argv[5:6])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--n", type=int, default=300_000)
    parser.add_argument("sections", nargs="*", default="all", choices=["product4d", "check", "all"])
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    sections = {"product4d": lambda: run(args.n, args.rounds), "check": lambda: run_check(args.rounds)}
    run_sections("sampling", sections, args.sections)


if __name__ == "__main__":
    main()
