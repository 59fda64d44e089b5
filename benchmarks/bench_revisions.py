"""The same jobs on two revisions of bigdr in one session, alternating fresh processes.

Machines here are noisy from hour to hour (the same scipy ARPACK solve took 15.5 s one
day and 26.6 s the next), so a change is judged by ratios taken in one run: the
baseline revision is checked out into a temporary git worktree and put first on
PYTHONPATH; the current tree is the other side.

    python bench_revisions.py BASELINE_REV [isomap1m] [dm1m] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import run_sections, swiss_roll_store  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

JOBS = {
    "pca1m": (
        "PCA (covariance), 1M x 100 float64 in memory, 10 components, fit (median of 5 fits per process)",
        r"""
import time, json, resource, statistics, sys
import numpy as np
import bigdr
X = np.random.default_rng(0).standard_normal((1_000_000, 100)) * np.geomspace(10, 0.1, 100)
bigdr.PCA(10).fit(X[:1000])
times = []
for _ in range(5):
    t0 = time.perf_counter()
    bigdr.PCA(10, svd_solver="covariance").fit(X)
    times.append(time.perf_counter() - t0)
t = statistics.median(times)
print(json.dumps({"fit": t, "total": t, "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""",
    ),
    "isomap1m": (
        "Isomap (defaults: sampled graph, 256 landmarks), 1M-row swiss roll from zarr, fit + embedding written",
        r"""
import time, shutil, tempfile, sys, json, resource
import bigdr
t0 = time.perf_counter()
Y = bigdr.Isomap(n_neighbors=10).fit_transform(sys.argv[1] + "/X")
t1 = time.perf_counter()
out = tempfile.mkdtemp() + "/e.zarr"
bigdr.write_zarr(Y, out)
t2 = time.perf_counter()
shutil.rmtree(out)
print(json.dumps({"fit": t1 - t0, "total": t2 - t0, "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""",
    ),
    "dm1m": (
        "DiffusionMap of all rows (k = 15), 1M-row swiss roll in memory, fit",
        r"""
import time, json, resource, sys
import numpy as np, zarr
import bigdr
X = np.asarray(zarr.open(sys.argv[1], mode="r")["X"][:])
t0 = time.perf_counter()
bigdr.DiffusionMap(2, n_neighbors=15, landmarks=None).fit_transform(X)
t1 = time.perf_counter()
print(json.dumps({"fit": t1 - t0, "total": t1 - t0, "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""",
    ),
}


def run(job: str, sides: dict[str, Path], store: Path, rounds: int) -> dict:
    out: dict[str, list] = {side: [] for side in sides}
    for r in range(rounds):
        for side, path in sides.items():
            env = dict(os.environ, PYTHONPATH=str(path), OMP_NUM_THREADS="1")
            proc = subprocess.run(
                [sys.executable, "-c", JOBS[job][1], str(store)],
                env=env,
                capture_output=True,
                text=True,
                cwd=tempfile.gettempdir(),
                check=True,
            )
            out[side].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(job, r, side, out[side][-1], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("baseline")
    ap.add_argument("jobs", nargs="*", default=list(JOBS))
    ap.add_argument("--section", default="ab", help="results section (so several runs can be kept)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    base = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline], capture_output=True, text=True, check=True
    ).stdout.strip()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    store = swiss_roll_store(1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), base], check=True)
        try:

            def section() -> tuple[dict, str]:
                results, rows = {"baseline": base, "current": head}, []
                for job in args.jobs:
                    r = run(job, {"baseline": tree, "current": ROOT}, store, args.rounds)
                    results[job] = r
                    med = {s: statistics.median(x["total"] for x in r[s]) for s in r}
                    ratios = [c["total"] / b["total"] for b, c in zip(r["baseline"], r["current"])]
                    mem = {s: max(x["maxrss_mib"] for x in r[s]) for s in r}
                    rows.append(
                        f"| {JOBS[job][0]} | {med['baseline']:.1f} s | {med['current']:.1f} s | "
                        f"{', '.join(f'{x:.2f}' for x in ratios)} | {mem['baseline']:.0f} | "
                        f"{mem['current']:.0f} |"
                    )
                md = (
                    f"## Baseline {base} against current {head} (alternating fresh processes, {args.rounds} "
                    f"rounds)\n\n| job | baseline (median) | current (median) | current / baseline, per round | "
                    f"peak RSS baseline (MiB) | peak RSS current (MiB) |\n| --- | --- | --- | --- | --- | --- |\n"
                    + "\n".join(rows)
                    + "\n"
                )
                return results, md

            run_sections("revisions", {"ab": section, args.section: section}, [args.section])
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


if __name__ == "__main__":
    main()
