"""FastICA (issue 16): 10M x 50 from disk, passes over the data, scikit-learn side by side, source recovery.

Data: 10 independent sources (Laplace, uniform, Student t5, bimodal,
exponential with random sign, and again with other scales) mixed by a
random 50 x 10 matrix ``A`` plus Gaussian noise of standard deviation 0.05,
written as a float32 zarr store (2 GB), the sources beside it. Recovery is
Amari's distance between the fitted unmixing and ``A`` (0: perfect).

disk     bigdr FastICA(10) on the 10M-row store: with ``sample_size=200,000``
         (iterations on a sample, then full passes) and with full passes only;
         wall time, iterations, passes over the data, peak RSS; and a plain read
         pass of the store for scale. Fresh process each.
memory   the first 1M and all 10M rows in memory (float64): scikit-learn's FastICA
         (whiten_solver="eigh") against bigdr's with the same whitening, on the same array.
figure   the recovered sources against the true ones on 200,000 rows (bigdr, from
         the store, sample phase): docs/_static/ica-recovery.png.

Threads: dask runs use 2 threads with BLAS at 1 thread each; scikit-learn runs with
2 BLAS threads.

Usage: python benchmarks/bench_ica.py [disk|memory|figure|all]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, PeakRSS, read_pass, run_child, run_sections, timed  # noqa: E402

SCRIPT = Path(__file__).resolve()
ROWS, P, K = 10_000_000, 50, 10
STORE = DATA / "ica-10M-50-f32.zarr"
SOURCES = DATA / "ica-10M-sources-f32.zarr"
FIGURE = SCRIPT.parent.parent / "docs" / "_static" / "ica-recovery.png"
SAMPLE = 200_000
BLOCK = 500_000


def mixing() -> np.ndarray:
    return np.random.default_rng(12).standard_normal((P, K))


def _sources_block(block_id: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng([5, block_id])
    kinds = [
        lambda m: rng.laplace(size=m),
        lambda m: rng.uniform(-1.7, 1.7, m),
        lambda m: rng.standard_t(5, m) / 1.3,
        lambda m: np.sign(rng.standard_normal(m)) * (1 + 0.3 * rng.standard_normal(m)),
        lambda m: np.sign(rng.standard_normal(m)) * rng.exponential(size=m),
    ]
    return np.column_stack([kinds[j % 5](rows) for j in range(K)]).astype(np.float32)


def generate() -> None:
    import dask
    import dask.array as da

    import bigdr

    chunks = [BLOCK] * (ROWS // BLOCK)
    S = da.concatenate(
        [da.from_delayed(dask.delayed(_sources_block)(i, c), (c, K), np.float32) for i, c in enumerate(chunks)]
    )
    A = mixing().astype(np.float32)

    def mix(s: np.ndarray, block_info=None) -> np.ndarray:
        seed = block_info[0]["chunk-location"][0] if block_info else 0
        noise = np.random.default_rng([6, seed]).standard_normal((len(s), P)).astype(np.float32)
        return s @ A.T + 0.05 * noise

    X = S.map_blocks(mix, chunks=(S.chunks[0], (P,)), dtype=np.float32)
    bigdr.write_zarr(S, SOURCES)
    bigdr.write_zarr(X, STORE)


def child(args: list[str]) -> dict:
    case = args[0]
    import bigdr
    from bigdr.core.ica import amari_distance

    if case == "read":
        with PeakRSS() as rss:
            times, _ = timed(lambda: read_pass(STORE))
        return {"case": case, "seconds": times[0], "peak_rss_mib": rss.peak / 2**20}
    if case in ("disk-sample", "disk-full"):
        sample = SAMPLE if case == "disk-sample" else None
        model = bigdr.FastICA(K, sample_size=sample, random_state=0)
        with PeakRSS() as rss:
            times, model = timed(lambda: model.fit(str(STORE)))
        return {
            "case": case,
            "seconds": times[0],
            "peak_rss_mib": rss.peak / 2**20,
            "n_iter": model.n_iter_,
            "n_passes": model.n_passes_,
            "convergence": model.convergence_,
            "amari": amari_distance(model.components_, mixing()),
        }
    if case == "memory":
        method, n = args[1], int(args[2])
        X = np.ascontiguousarray(bigdr.as_array(str(STORE))[:n].compute(), dtype=np.float64)
        if method == "sklearn":
            from sklearn.decomposition import FastICA

            model = FastICA(K, whiten_solver="eigh", random_state=0)
        else:
            model = bigdr.FastICA(K, whiten_solver="eigh", random_state=0)  # the same whitening as scikit-learn here
        with PeakRSS() as rss:
            times, model = timed(lambda: model.fit(X))
        return {
            "method": method,
            "rows": n,
            "seconds": times[0],
            "peak_rss_mib": rss.peak / 2**20,
            "data_mib": X.nbytes / 2**20,
            "n_iter": int(model.n_iter_),
            "amari": amari_distance(model.components_, mixing()),
        }
    raise ValueError(case)


def run_disk():
    if not STORE.exists():
        t0 = time.perf_counter()
        generate()
        print(f"generated {STORE} in {time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    for case in ("read", "disk-sample", "disk-full"):
        rows.append(run_child(SCRIPT, case, timeout=4 * 3600))
        print(rows[-1], flush=True)
    read = rows[0]
    lines = [
        f"## {ROWS:,} x {P} float32 zarr store (2 GB), FastICA({K}), logcosh, parallel\n",
        f"A plain read pass of the store: {read['seconds']:.1f} s (page cache warm after generation). "
        "Passes: the whitening pass, the sample's pass (sample phase only), one per full-data iteration.\n",
        "| run | wall (s) | iterations | passes over the data | final change | peak RSS (MiB) | Amari distance to the true mixing |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    names = {"disk-sample": f"sample phase ({SAMPLE:,} rows) then full passes", "disk-full": "full passes only"}
    for r in rows[1:]:
        lines.append(
            f"| {names[r['case']]} | {r['seconds']:.1f} | {r['n_iter']} | {r['n_passes']} | {r['convergence']:.2g} | "
            f"{r['peak_rss_mib']:.0f} | {r['amari']:.4f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_memory():
    rows = []
    for n in (1_000_000, ROWS):
        for method in ("bigdr", "sklearn"):
            blas = {"OPENBLAS_NUM_THREADS": "2" if method == "sklearn" else "1"}
            rows.append(run_child(SCRIPT, "memory", method, str(n), env=blas, timeout=4 * 3600))
            print(rows[-1], flush=True)
    lines = [
        f"## In memory, float64, FastICA({K}): bigdr against scikit-learn (whiten_solver='eigh') on the same array\n",
        "Peak RSS includes the array (data column) and the read of it from the store.\n",
        "| rows | data (MiB) | method | fit (s) | peak RSS (MiB) | iterations | Amari distance |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['rows']:,} | {r['data_mib']:.0f} | {r['method']} | {r['seconds']:.1f} | {r['peak_rss_mib']:.0f} | "
            f"{r['n_iter']} | {r['amari']:.4f} |"
        )
    return rows, "\n".join(lines) + "\n"


def run_figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import bigdr

    model = bigdr.FastICA(K, sample_size=SAMPLE, random_state=0).fit(str(STORE))
    X = bigdr.as_array(str(STORE))[:SAMPLE].compute()
    S = bigdr.as_array(str(SOURCES))[:SAMPLE].compute().astype(np.float64)
    Y = model.transform(X).astype(np.float64)
    corr = np.corrcoef(S.T, Y.T)[:K, K:]
    match = np.argmax(np.abs(corr), axis=1)
    fig, axes = plt.subplots(2, 5, figsize=(14, 6), dpi=100)
    for j, ax in enumerate(axes.ravel()):
        y = Y[:, match[j]] * np.sign(corr[j, match[j]])
        ax.hist2d(S[:, j], y, bins=120, cmap="Greys", norm=matplotlib.colors.LogNorm())
        ax.set_title(f"source {j + 1}: r = {abs(corr[j, match[j]]):.4f}", fontsize=9)
        ax.set_xlabel("true")
        ax.set_ylabel("recovered")
    fig.suptitle(f"FastICA on {ROWS:,} x {P} from disk: recovered against true sources ({SAMPLE:,} rows shown)")
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, format="png", metadata={"Software": "bigdr"})
    plt.close(fig)
    r = np.abs(corr[np.arange(K), match])
    text = (
        f"## Source recovery\n\n`docs/_static/ica-recovery.png`: each true source against the recovered one it "
        f"correlates with most, on {SAMPLE:,} rows; |r| from {r.min():.4f} to {r.max():.4f}; every source matched "
        f"to a different recovered one: {len(set(match)) == K}.\n"
    )
    return {"abs_correlation": r.tolist(), "distinct": bool(len(set(match)) == K)}, text


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        print(json.dumps(child(sys.argv[2:])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["disk", "memory", "figure", "all"], nargs="*", default="all")
    args = ap.parse_args()
    run_sections("ica", {"disk": run_disk, "memory": run_memory, "figure": run_figure}, args.case)


if __name__ == "__main__":
    main()
