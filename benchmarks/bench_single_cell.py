"""The whole single-cell path on an atlas (issue 32): h5ad -> PCA 50 -> all-rows kNN -> diffusion map -> written back.

bigdr reads the ``.h5ad`` file block by block (``PCA(50)``), embeds every
cell with ``DiffusionMap(kernel="umap", n_neighbors=14)`` (scanpy's
connectivities: scanpy's ``n_neighbors=15`` counts the cell itself) on its
all-rows kNN graph (faiss HNSW), and writes ``obsm["X_pca"]``,
``varm["PCs"]``, ``uns["pca"]``, ``obsm["X_diffmap"]`` and
``uns["diffmap_evals"]`` into the file. scanpy does what its tutorials do:
``read_h5ad``, ``sc.pp.pca``, ``sc.pp.neighbors``, ``sc.tl.diffmap``,
``write_h5ad``, all defaults. Each runs on its own copy of the file, in a
fresh process (peak RSS its own), BLAS on one thread per thread.

Agreement: Spearman's rank correlation between the first two diffusion
components of both, as written, and in one basis. The two ``X_diffmap`` differ
in basis: bigdr's columns are ``lambda^t phi`` with ``phi`` the right
eigenvectors of the Markov matrix ``D^-1 W``; scanpy's are the unit
eigenvectors ``u`` of its symmetric conjugate ``D^-1/2 W D^-1/2``, so
``phi = u / sqrt(d)`` row by row, which changes the ranks. "One basis" divides
scanpy's columns by the ``sqrt(d)`` of its own kernel (its connectivities,
density-normalised as ``tl.diffmap`` does). The ceiling is scanpy against
itself: the same PCs, ``neighbors`` and ``diffmap`` with another
``random_state`` (NN-descent's and ARPACK's seeds).

``python benchmarks/bench_single_cell.py path`` (``cells-1M``) or ``path-100k``
(``cells-100k``): the data of ``bench_sparse.py data``. ``solvers``: ARPACK against
AMG-LOBPCG (and what ``auto`` picks) on the 100k cells' graph.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import DATA, process_peak_mib, run_child, run_sections  # noqa: E402
from bench_sparse import ONE_BLAS, path_of  # noqa: E402

SCRIPT = Path(__file__).resolve()
K_PCA, K_DIFFMAP = 50, 15  # scanpy's defaults: 50 PCs, 15 diffusion components (the trivial one included)


def bigdr_path(spec: dict) -> dict:
    import dask

    import bigdr
    from bigdr.io.obsm import write_obsm
    from bigdr.runtime.compute import compute

    dask.config.set(scheduler="threads", num_workers=spec["threads"])
    path, times = spec["path"], {}
    t0 = time.perf_counter()
    pca = bigdr.PCA(K_PCA, random_state=0)
    (P,) = compute(pca.fit_transform(path))
    times["pca"] = time.perf_counter() - t0
    t = time.perf_counter()
    dm = bigdr.DiffusionMap(K_DIFFMAP - 1, n_neighbors=14, kernel="umap", random_state=0)
    E = dm.fit_transform(P)
    times["neighbors_diffmap"] = time.perf_counter() - t
    t = time.perf_counter()
    write_obsm(P, path, "X_pca", model=pca)
    write_obsm(E, path, "X_diffmap", model=dm)
    times["write"] = time.perf_counter() - t
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "steps": times,
        "peak_rss_mib": process_peak_mib(),  # the path and its writes; the parent reads back what was written
        "pca_passes": pca.n_iter_,
        "eigenvalues": [1.0, *map(float, dm.eigenvalues_)],
        "n_unit_eigenvalues": int(dm.n_unit_eigenvalues_),
    }


def scanpy_path(spec: dict) -> dict:
    import anndata
    import scanpy as sc

    times = {}
    t0 = time.perf_counter()
    if spec.get("pcs"):  # the ceiling: scanpy's own PCs, its graph and diffusion map with another seed
        adata = anndata.AnnData(obsm={"X_pca": np.load(spec["pcs"])})
    else:
        adata = anndata.read_h5ad(spec["path"])
        times["read"] = time.perf_counter() - t0
        t = time.perf_counter()
        sc.pp.pca(adata, n_comps=K_PCA)
        times["pca"] = time.perf_counter() - t
    seed = spec.get("seed", 0)
    t = time.perf_counter()
    # (its default representation for 10,000 genes is X_pca; an AnnData of PCs alone must name it)
    sc.pp.neighbors(adata, random_state=seed, use_rep="X_pca")
    times["neighbors"] = time.perf_counter() - t
    t = time.perf_counter()
    sc.tl.diffmap(adata, n_comps=K_DIFFMAP, random_state=seed)
    times["diffmap"] = time.perf_counter() - t
    if not spec.get("pcs"):
        t = time.perf_counter()
        adata.write_h5ad(spec["path"])
        times["write"] = time.perf_counter() - t
        np.save(spec["out"] + ".pcs.npy", adata.obsm["X_pca"])
    seconds = time.perf_counter() - t0
    basis = np.asarray(adata.obsm["X_diffmap"][:, :3], dtype=np.float64)
    np.save(spec["out"], basis)
    np.save(spec["out"] + ".markov.npy", basis / markov_root_degrees(adata.obsp["connectivities"])[:, None])
    return {
        "seconds": seconds,
        "steps": times,
        "peak_rss_mib": process_peak_mib(),
        "eigenvalues": np.asarray(adata.uns["diffmap_evals"], dtype=np.float64).tolist(),
    }


def markov_root_degrees(connectivities) -> np.ndarray:
    """``sqrt(d)`` of scanpy's diffusion kernel: its connectivities ``W``, density-normalised
    (``K = Q^-1 W Q^-1``, ``q`` the column sums), ``d`` the column sums of ``K`` (``Neighbors.compute_transitions``)."""
    W = connectivities.tocsr().astype(np.float64)
    q = np.asarray(W.sum(axis=0)).ravel()
    K = W.multiply(1.0 / q[:, None]).multiply(1.0 / q[None, :])
    return np.sqrt(np.asarray(K.sum(axis=0)).ravel())


def spearman(A: np.ndarray, B: np.ndarray) -> list[float]:
    """|Spearman| between diffusion components 1 and 2 of A and B (column 0 is the trivial one)."""
    from scipy.stats import spearmanr

    return [float(abs(spearmanr(A[:, j], B[:, j]).statistic)) for j in (1, 2)]


def versions() -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in ("scanpy", "anndata", "scipy", "pynndescent", "faiss-cpu", "umap-learn")}


def path_section(data: str) -> tuple[dict, str]:
    import tempfile

    source = path_of(data)
    out: dict = {"data": str(source.name), "versions": versions()}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        runs = {
            "bigdr": {"task": "bigdr", "threads": 2},
            "scanpy": {"task": "scanpy"},
        }
        for name, spec in runs.items():
            copy = Path(tmp) / f"{name}.h5ad"
            shutil.copyfile(source, copy)  # each writes into its own copy; the copy is not timed
            # Flushed to disk before the clock starts, so the copy's writeback cannot overlap the timed steps.
            descriptor = os.open(copy, os.O_RDONLY)
            os.fsync(descriptor)
            os.close(descriptor)
            spec.update(path=str(copy), out=f"{tmp}/{name}.npy")
            out[name] = run_child(SCRIPT, json.dumps(spec), env=ONE_BLAS, timeout=14400)
            if name == "bigdr":  # read back from the file bigdr wrote, in this process: not part of its peak
                import anndata

                written = anndata.read_h5ad(copy, backed="r")
                np.save(spec["out"], np.asarray(written.obsm["X_diffmap"][:, :3], dtype=np.float64))
                written.file.close()
            copy.unlink()
            print(name, out[name], flush=True)
        reseed = {"task": "scanpy", "pcs": f"{tmp}/scanpy.npy.pcs.npy", "seed": 1, "out": f"{tmp}/reseed.npy"}
        out["scanpy_reseeded"] = run_child(SCRIPT, json.dumps(reseed), env=ONE_BLAS, timeout=14400)
        print("scanpy_reseeded", out["scanpy_reseeded"], flush=True)
        ours, theirs, again = (np.load(f"{tmp}/{n}.npy") for n in ("bigdr", "scanpy", "reseed"))
        theirs_m, again_m = (np.load(f"{tmp}/{n}.npy.markov.npy") for n in ("scanpy", "reseed"))
    out["spearman_bigdr_scanpy"] = spearman(ours, theirs)
    out["spearman_scanpy_reseeded"] = spearman(theirs, again)
    out["spearman_bigdr_scanpy_one_basis"] = spearman(ours, theirs_m)
    out["spearman_scanpy_reseeded_one_basis"] = spearman(theirs_m, again_m)
    b, s = out["bigdr"], out["scanpy"]
    out["time_ratio"] = b["seconds"] / s["seconds"]
    out["memory_ratio"] = b["peak_rss_mib"] / s["peak_rss_mib"]

    def steps(r: dict) -> str:
        return ", ".join(f"{k} {v:.0f} s" for k, v in r["steps"].items())

    def pair(v: list[float]) -> str:
        return f"{v[0]:.3f}, {v[1]:.3f}"

    def evals(r: dict) -> str:
        return ", ".join(f"{v:.5f}" for v in r["eigenvalues"][1:6])

    v = out["versions"]
    md = (
        f"## The whole single-cell path: `{source.name}` -> PCA 50 -> kNN graph -> diffusion map -> written back\n\n"
        "Each library on its own copy of the file, in a fresh process, BLAS on one thread per thread (bigdr on 2 "
        "dask threads; its eigensolver, which runs while they are idle, on 2 BLAS threads). bigdr: `PCA(50)` from the file, `DiffusionMap(14, n_neighbors=14, kernel='umap')` on every "
        "cell (scanpy's connectivities; scanpy's `n_neighbors=15` counts the cell itself), `write_obsm` of "
        "`X_pca` and `X_diffmap` with scanpy's companions. scanpy (defaults): `read_h5ad`, `pp.pca`, "
        "`pp.neighbors`, `tl.diffmap`, `write_h5ad`; its time includes numba's compilation of NN-descent, "
        f"as a user's first call does. scanpy {v['scanpy']}, anndata {v['anndata']}, scipy {v['scipy']}, "
        f"pynndescent {v['pynndescent']}, faiss-cpu {v['faiss-cpu']}. Peak RSS: the process's maximum over its "
        "steps and writes (bigdr's written `X_diffmap` is read back for the comparison by the parent process).\n\n"
        "| run | time (s) | peak RSS (GiB) | steps | eigenvalues 1-5 |\n| --- | --- | --- | --- | --- |\n"
        f"| bigdr | {b['seconds']:.0f} | {b['peak_rss_mib'] / 1024:.2f} | {steps(b)} | {evals(b)} |\n"
        f"| scanpy | {s['seconds']:.0f} | {s['peak_rss_mib'] / 1024:.2f} | {steps(s)} | {evals(s)} |\n"
        f"| scanpy again, another seed (from its PCs) | {out['scanpy_reseeded']['seconds']:.0f} | "
        f"{out['scanpy_reseeded']['peak_rss_mib'] / 1024:.2f} | {steps(out['scanpy_reseeded'])} | "
        f"{evals(out['scanpy_reseeded'])} |\n\n"
        f"bigdr / scanpy: time {out['time_ratio']:.2f}, peak memory {out['memory_ratio']:.2f}.\n\n"
        "|Spearman| of diffusion components 1 and 2 (bigdr's columns are `lambda^t phi`, `phi` the Markov "
        "matrix's right eigenvectors; scanpy's the unit eigenvectors `u = sqrt(d) phi` of its symmetric "
        "conjugate; one basis: scanpy's divided by the `sqrt(d)` of its own kernel):\n\n"
        "| pair | as written | one basis (`phi`) |\n| --- | --- | --- |\n"
        f"| bigdr against scanpy | {pair(out['spearman_bigdr_scanpy'])} | "
        f"{pair(out['spearman_bigdr_scanpy_one_basis'])} |\n"
        f"| scanpy against itself, another seed | {pair(out['spearman_scanpy_reseeded'])} | "
        f"{pair(out['spearman_scanpy_reseeded_one_basis'])} |\n"
    )
    return out, md


def solvers_child(spec: dict) -> dict:
    """The eigensolvers on one graph: cells-100k's 50 PCs, DiffusionMap(14, n_neighbors=14, kernel='umap')."""
    import dask

    import bigdr
    from bigdr.runtime.compute import compute

    dask.config.set(scheduler="threads", num_workers=2)
    (P,) = compute(bigdr.PCA(K_PCA, random_state=0).fit_transform(str(path_of("cells-100k"))))
    out = {}
    for solver in ("auto", "arpack", "amg"):
        model = bigdr.DiffusionMap(K_DIFFMAP - 1, n_neighbors=14, kernel="umap", eigen_solver=solver)
        t0 = time.perf_counter()
        model.fit(P)
        out[solver] = {"seconds": time.perf_counter() - t0, "chosen": model.eigen_solver_,
                       "eigenvalues": model.eigenvalues_.tolist(), "dimension": model.intrinsic_dimension_}  # fmt: skip
    return out


def solvers_section() -> tuple[dict, str]:
    out = run_child(SCRIPT, json.dumps({"task": "solvers"}), env=ONE_BLAS, timeout=3600)
    gap = max(abs(a - b) for a, b in zip(out["arpack"]["eigenvalues"], out["amg"]["eigenvalues"]))
    md = (
        "## Eigensolvers on a single-cell graph: `cells-100k` -> PCA 50 -> `DiffusionMap(14, n_neighbors=14, "
        "kernel='umap')`\n\nOne fresh process, 2 dask threads, BLAS on one thread (the eigensolver on 2, while they "
        "are idle); each time is the whole fit "
        "(the kNN graph included, the same for every solver).\n\n| eigen_solver | chosen | fit (s) |\n"
        "| --- | --- | --- |\n"
        + "\n".join(f"| {s} | {r['chosen']} | {r['seconds']:.1f} |" for s, r in out.items())
        + f"\n\nEstimated dimension {out['auto']['dimension']:.1f}; largest difference between ARPACK's and "
        f"AMG-LOBPCG's eigenvalues {gap:.1e}.\n"
    )
    return out, md


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sections", nargs="+")
    args = parser.parse_args()
    runners = {
        "path": lambda: path_section("cells-1M"),
        "path-100k": lambda: path_section("cells-100k"),
        "solvers": solvers_section,
    }
    run_sections("single_cell", runners, args.sections)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        spec = json.loads(sys.argv[2])
        tasks = {"bigdr": bigdr_path, "solvers": solvers_child}
        print(json.dumps(tasks.get(spec["task"], scanpy_path)(spec)))
    else:
        main()
