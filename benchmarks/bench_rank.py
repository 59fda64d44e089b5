"""Choosing the number of components (issue 16): rules on a battery of spiked models with known rank.

Each model is ``bigdr.datasets.make_spiked_covariance`` (spikes along random
orthonormal directions, Gaussian noise with one standard deviation per
feature) for 5 seeds; every spike is above the detection threshold of its
model. Rules:

mp           ``PCA(n_components="mp")``: the Marchenko-Pastur edge, noise level by
             median matching; also whether it warned that the bulk does not fit.
mp-whitened  ``PCA(n_components="mp-whitened")``: the edge (Tracy-Widom 99.9%) after
             whitening each feature's noise by factor analysis (adopted).
er           Ahn & Horenstein (2013): argmax of lambda_k / lambda_(k+1), k <= m/2.
pa           parallel analysis (Horn 1965; Buja & Eyuboglu 1992): eigenvalues above
             the 95th percentile of 10 column-permuted copies of a 20,000-row sample.

The cell says the rule's answer for each seed; "all 5" when every seed gave
the true rank. Seconds are the median per fit (the PCA rules include the
covariance pass; er and pa start from the data in memory).

calibration: how often mp-whitened counts one component too many, 500 seeds of three models,
             at its level (99.9%) and at 99% (the level first chosen).
power        how often a single spike at 1.2 to 3 times the detection threshold is found, at both
             levels, 100 seeds, with the squared cosine of its sample direction to the true one.
fresh        mp-whitened on the battery's models with 20 seeds never used in choosing the level.

Usage: python benchmarks/bench_rank.py [battery|calibration|power|fresh|all]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import run_sections  # noqa: E402

SEEDS = (1, 2, 3, 4, 5)


def models():
    """(name, n, p, spikes, noise standard deviations, true rank)."""
    return [
        ("equal noise, 5 spikes 20..2, p = 200", 20_000, 200, (20, 10, 5, 3, 2), 1.0, 5),
        ("noise sd 0.5..1.0, 5 spikes 20..2, p = 200", 20_000, 200, (20, 10, 5, 3, 2), np.linspace(0.5, 1, 200), 5),
        ("noise sd 0.5..1.0, 5 weak spikes 5..0.3, p = 200", 20_000, 200, (5, 2, 1, 0.5, 0.3), np.linspace(0.5, 1, 200), 5),
        ("noise sd 0.5..1.0, no spike, p = 200", 20_000, 200, (), np.linspace(0.5, 1, 200), 0),
        ("noise sd 0.2..2.0 (geometric), 3 spikes 10, 5, 2, p = 100", 20_000, 100, (10, 5, 2), np.geomspace(0.2, 2, 100), 3),
        ("noise sd 0.5..1.0, 8 spikes 10..1, p = 500", 20_000, 500, tuple(np.linspace(10, 1, 8)), np.linspace(0.5, 1, 500), 8),
        ("wide: n = 500, p = 1,000, equal noise, 3 spikes 50, 20, 10", 500, 1000, (50, 20, 10), 1.0, 3),
        ("equal noise, spikes 5, 2 and 0.05 (below threshold 0.1), p = 200", 20_000, 200, (5, 2, 0.05), 1.0, 2),
        ("noise-free, rank 10, p = 50", 2_000, 50, tuple(np.linspace(10, 1, 10)), 0.0, 10),
    ]  # fmt: skip


def ratio_rule(values: np.ndarray, m: int) -> int:
    """Ahn & Horenstein's eigenvalue ratio: the k <= m/2 with the largest lambda_k / lambda_(k+1)."""
    kmax = max(1, m // 2)
    v = np.maximum(values[: kmax + 1], np.finfo(float).tiny)
    return int(np.argmax(v[:kmax] / v[1 : kmax + 1]) + 1)


def parallel_analysis(X: np.ndarray, permutations: int = 10, rows: int = 20_000, seed: int = 0) -> int:
    """How many leading eigenvalues exceed the 95th percentile of column-permuted copies at the same index."""
    rng = np.random.default_rng(seed)
    sample = X[rng.choice(len(X), min(rows, len(X)), replace=False)]

    def spectrum(A):
        A = A - A.mean(axis=0)
        return np.linalg.eigvalsh(A.T @ A / len(A))[::-1]

    values = spectrum(sample)
    null = np.percentile(
        [spectrum(np.column_stack([rng.permutation(c) for c in sample.T])) for _ in range(permutations)], 95, axis=0
    )
    above = values > null
    return int(np.argmin(above)) if not above.all() else len(values)


def run_battery():
    import bigdr
    from bigdr.datasets import make_spiked_covariance
    from bigdr.exceptions import RankSelectionWarning

    rules = ("mp", "mp-whitened", "er", "pa")
    rows = []
    for name, n, p, spikes, noise, true in models():
        answers = {r: [] for r in rules}
        seconds = {r: [] for r in rules}
        warned = 0
        for seed in SEEDS:
            X = make_spiked_covariance(n, p, spikes=spikes, noise=noise, seed=seed)[0].compute()
            for rule in ("mp", "mp-whitened"):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t0 = time.perf_counter()
                    model = bigdr.PCA(rule).fit(X)
                    seconds[rule].append(time.perf_counter() - t0)
                answers[rule].append(model.n_components_rule_)
                if rule == "mp":
                    warned += any(issubclass(w.category, RankSelectionWarning) for w in caught)
                    spectrum = model.spectrum_.astype(np.float64)
            t0 = time.perf_counter()
            answers["er"].append(ratio_rule(spectrum, min(n, p)))
            seconds["er"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            answers["pa"].append(parallel_analysis(X, seed=seed))
            seconds["pa"].append(time.perf_counter() - t0)
        rows.append(
            {
                "model": name,
                "n": n,
                "p": p,
                "true": true,
                "answers": answers,
                "seconds": {r: float(np.median(s)) for r, s in seconds.items()},
                "mp_warned": warned,
            }
        )
        print(rows[-1], flush=True)
    lines = [
        "## Rank selection on spiked models (5 seeds each)\n",
        "Each cell: the number of components the rule chose for each seed (`all 5`: every seed gave the true "
        'rank); in brackets, the median seconds per fit. "mp warned": seeds on which `mp` raised '
        "RankSelectionWarning (its bulk does not fit the Marchenko-Pastur law).\n",
        "| model | n | true rank | mp | mp warned | mp-whitened | eigenvalue ratio | parallel analysis |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def cell(r, rule):
        got = r["answers"][rule]
        shown = "all 5" if all(g == r["true"] for g in got) else ", ".join(str(g) for g in got)
        return f"{shown} ({r['seconds'][rule]:.2f} s)"

    for r in rows:
        lines.append(
            f"| {r['model']} | {r['n']:,} | {r['true']} | {cell(r, 'mp')} | {r['mp_warned']}/5 | "
            f"{cell(r, 'mp-whitened')} | {cell(r, 'er')} | {cell(r, 'pa')} |"
        )
    correct = {rule: sum(all(g == r["true"] for g in r["answers"][rule]) for r in rows) for rule in rules}
    lines.append("")
    lines.append(
        "Models on which every seed gave the true rank: "
        + ", ".join(f"{rule} {correct[rule]}/{len(rows)}" for rule in rules)
        + ". For `mp` and `mp-whitened` the answer is `n_components_rule_`, what the rule says (0 on the "
        "model without spikes); the fitted PCA keeps one component there.\n"
    )
    return rows, "\n".join(lines) + "\n"


LEVELS = (0.999, 0.99)


def covariance(X: np.ndarray) -> np.ndarray:
    Xc = X - X.mean(axis=0)
    return Xc.T @ Xc / len(X)


def run_calibration():
    """How often mp-whitened counts one component too many, over 500 seeds of three models, at both levels."""
    from bigdr.core.spectrum import n_components_whitened
    from bigdr.datasets import make_spiked_covariance

    cases = [
        ("equal noise, no spike, p = 200", 20_000, 200, (), 1.0, 0),
        ("noise sd 0.5..1.0, no spike, p = 200", 20_000, 200, (), np.linspace(0.5, 1, 200), 0),
        ("wide: n = 500, p = 1,000, equal noise, 3 spikes 50, 20, 10", 500, 1000, (50, 20, 10), 1.0, 3),
    ]
    rows = []
    for name, n, p, spikes, noise, true in cases:
        answers = {level: [] for level in LEVELS}
        for seed in range(1000, 1500):
            S = covariance(make_spiked_covariance(n, p, spikes=spikes, noise=noise, seed=seed)[0].compute())
            for level in LEVELS:
                answers[level].append(n_components_whitened(S, n, level=level)[0])
        rows.append({"model": name, "true": true, "answers": {str(k): v for k, v in answers.items()}})
        print(name, {k: np.bincount(v).tolist() for k, v in answers.items()}, flush=True)
    lines = [
        "## How often mp-whitened adds a component (500 seeds each, 1000..1499)\n",
        "Its edge is a percentile of the largest eigenvalue of white noise: at 99.9% (the rule's level) about one "
        "fit in a thousand should count one too many on data with no signal beyond the spikes, at 99% (the level "
        "first chosen) one in a hundred. Both from the same fits.\n",
        "| model | true rank | level | fits with the true rank | one too many | other |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        for level in LEVELS:
            a = np.asarray(r["answers"][str(level)])
            lines.append(
                f"| {r['model']} | {r['true']} | {level:.1%} | {int((a == r['true']).sum())} | "
                f"{int((a == r['true'] + 1).sum())} | {int(((a != r['true']) & (a != r['true'] + 1)).sum())} |"
            )
    return rows, "\n".join(lines) + "\n"


def run_power():
    """A single spike beta at 1.2..3 times the threshold sqrt(p/n): how often each level finds it."""
    from bigdr.core.spectrum import n_components_whitened
    from bigdr.datasets import make_spiked_covariance, spike_directions

    n, p = 20_000, 200
    threshold = np.sqrt(p / n)
    rows = []
    for times in (1.2, 1.5, 2.0, 3.0):
        beta = times * threshold
        found = {level: 0 for level in LEVELS}
        cosines = []
        for seed in range(2000, 2100):
            S = covariance(make_spiked_covariance(n, p, spikes=(beta,), noise=1.0, seed=seed)[0].compute())
            for level in LEVELS:
                found[level] += n_components_whitened(S, n, level=level)[0] >= 1
            top = np.linalg.eigh(S)[1][:, -1]
            cosines.append(float(top @ spike_directions(p, 1, seed)[0]) ** 2)
        gamma = p / n
        rows.append(
            {
                "times_threshold": times,
                "beta": beta,
                "found": {str(k): int(v) for k, v in found.items()},
                "cos2_measured": float(np.median(cosines)),
                "cos2_theory": (1 - gamma / beta**2) / (1 + gamma / beta),
            }
        )
        print(rows[-1], flush=True)
    lines = [
        "## Power near the detection threshold (n = 20,000, p = 200, equal noise, one spike; 100 seeds)\n",
        "How many of 100 fits of mp-whitened find the spike (rank 1 or more) at each level, and how well its "
        "sample direction estimates the true one: the median squared cosine, and Paul's (2007) limit "
        "(1 - gamma/beta^2) / (1 + gamma/beta).\n",
        "| spike / threshold | found at 99.9% | found at 99% | cos^2 measured | cos^2 limit |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['times_threshold']:.1f} | {r['found']['0.999']} | {r['found']['0.99']} | "
            f"{r['cos2_measured']:.2f} | {r['cos2_theory']:.2f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_fresh():
    """mp-whitened on the battery's models with 20 seeds (6..25) not used when its level was chosen."""
    import bigdr
    from bigdr.datasets import make_spiked_covariance

    rows = []
    for name, n, p, spikes, noise, true in models():
        answers = []
        for seed in range(6, 26):
            X = make_spiked_covariance(n, p, spikes=spikes, noise=noise, seed=seed)[0].compute()
            answers.append(int(bigdr.PCA("mp-whitened").fit(X).n_components_rule_))
        rows.append({"model": name, "true": true, "answers": answers})
        print(rows[-1], flush=True)
    lines = [
        "## mp-whitened on 20 fresh seeds (6..25) of each model\n",
        "The level (99.9%), the noise variances' correction for fitted factors and the check of each component "
        "against the noise fitted without it were set after the battery above missed at 99% (the wide model, "
        "seed 5, 4 for 3); these seeds were not used in those choices.\n",
        "| model | true rank | fits with the true rank | the others' answers |",
        "| --- | --- | --- | --- |",
    ]
    for r in rows:
        wrong = [a for a in r["answers"] if a != r["true"]]
        lines.append(
            f"| {r['model']} | {r['true']} | {len(r['answers']) - len(wrong)} of {len(r['answers'])} | "
            f"{', '.join(map(str, wrong)) or '-'} |"
        )
    return rows, "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["battery", "calibration", "power", "fresh", "all"], nargs="*", default="all")
    args = ap.parse_args()
    sections = {"battery": run_battery, "calibration": run_calibration, "power": run_power, "fresh": run_fresh}
    run_sections("rank", sections, args.case)


if __name__ == "__main__":
    main()
