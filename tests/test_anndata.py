"""AnnData stores read lazily (.h5ad and zarr, dense and CSR) and obsm written back, with the real anndata."""

import warnings
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp

import bigdr
from bigdr.cli import main

anndata = pytest.importorskip("anndata")


@pytest.fixture(params=[2, 3], ids=["zarr-v2", "zarr-v3"])
def cells(request, tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(400, 30, density=0.2, format="csr", random_state=1, dtype=np.float32)
    adata = anndata.AnnData(X=X, layers={"dense": X.toarray() * 2}, obsm={"X_pca": rng.standard_normal((400, 5))})
    path = tmp_path / "cells.zarr"
    with anndata.settings.override(zarr_write_format=request.param):
        adata.write_zarr(path)
    adata.write_h5ad(tmp_path / "cells.h5ad")
    return str(path), str(tmp_path / "cells.h5ad"), adata


def test_reads_every_element_lazily(cells):
    store, h5ad, adata = cells
    for path in (store, h5ad):
        X = bigdr.as_array(path, chunk_bytes=30 * 4 * 64)  # 64 rows a block: the CSR is read block by block
        assert isinstance(X, da.Array) and len(X.chunks[0]) > 1
        np.testing.assert_array_equal(X.compute(), adata.X.toarray())
        np.testing.assert_array_equal(bigdr.as_array(path, dataset="layers/dense").compute(), adata.layers["dense"])
        np.testing.assert_array_equal(bigdr.as_array(path, dataset="obsm/X_pca").compute(), adata.obsm["X_pca"])
    with pytest.raises(ValueError, match="no element 'obsm/X_umap'"):
        bigdr.as_array(store, dataset="obsm/X_umap")


def test_write_obsm_is_seen_by_anndata(cells):
    store, h5ad, adata = cells
    Y = bigdr.PCA(3).fit_transform(store)
    bigdr.write_obsm(Y, store, "X_bigdr")
    back = anndata.read_zarr(store)
    np.testing.assert_allclose(back.obsm["X_bigdr"], Y.compute())
    np.testing.assert_array_equal(back.obsm["X_pca"], adata.obsm["X_pca"])  # the others untouched
    with pytest.raises(FileExistsError, match="overwrite"):
        bigdr.write_obsm(Y, store, "X_bigdr")
    with pytest.raises(FileExistsError, match="not written by bigdr"):
        bigdr.write_obsm(Y, store, "X_pca", overwrite=True)
    with pytest.raises(ValueError, match="400 cells"):
        bigdr.write_obsm(Y[:10], store, "X_short")
    bigdr.write_obsm(Y[:, :2], store, "X_bigdr", overwrite=True)
    back = anndata.read_zarr(store)
    assert back.obsm["X_bigdr"].shape == (400, 2) and set(back.obsm) == {"X_pca", "X_bigdr"}
    bigdr.write_obsm(Y, h5ad, "X_bigdr")  # into an .h5ad file as well, in place
    back = anndata.read_h5ad(h5ad)
    np.testing.assert_allclose(back.obsm["X_bigdr"], Y.compute())
    np.testing.assert_array_equal(back.obsm["X_pca"], adata.obsm["X_pca"])
    with pytest.raises(FileExistsError, match="not written by bigdr"):
        bigdr.write_obsm(Y, h5ad, "X_pca", overwrite=True)
    with pytest.raises(ValueError, match="not an AnnData store"):
        bigdr.write_obsm(Y, str(Path(store).parent / "plain.zarr"), "X_bigdr")


@pytest.fixture(scope="module")
def scanpy_written(tmp_path_factory):
    """Cells with structure, written by anndata as .h5ad and zarr, then PCA and a diffusion map written by bigdr."""
    rng = np.random.default_rng(0)
    usage = rng.dirichlet(np.full(4, 0.3), size=600)
    counts = rng.poisson(2.0 * usage @ rng.gamma(0.6, 1.0, size=(4, 80)))
    adata = anndata.AnnData(X=sp.csr_matrix(np.log1p(counts).astype(np.float32)))
    adata.obs["program"] = np.argmax(usage, axis=1).astype(str)
    paths = [str(tmp_path_factory.mktemp("scanpy") / name) for name in ("cells.h5ad", "cells.zarr")]
    adata.write_h5ad(paths[0])
    adata.write_zarr(paths[1])
    for path in paths:
        assert main(["fit-transform", path, "--obsm", "X_pca", "-k", "20"]) == 0
        argv = ["fit-transform", path, "--dataset", "obsm/X_pca", "--obsm", "X_diffmap", "--method", "diffusion-map"]
        assert main([*argv, "-k", "10", "--landmarks", "none", "--kernel", "umap", "--n-neighbors", "14"]) == 0
    return paths, adata


def test_scanpy_conventions_are_kept_when_writing(scanpy_written):
    paths, adata = scanpy_written
    reference = bigdr.PCA(20).fit(adata.X)
    for path in paths:
        back = anndata.read_h5ad(path) if path.endswith(".h5ad") else anndata.read_zarr(path)
        assert back.varm["PCs"].shape == (80, 20)  # n_vars x n_comps, as sc.pp.pca
        np.testing.assert_allclose(back.varm["PCs"], reference.components_.T, atol=1e-5)
        np.testing.assert_allclose(back.uns["pca"]["variance_ratio"], reference.explained_variance_ratio_, rtol=1e-5)
        assert back.uns["pca"]["params"]["zero_center"] and back.uns["pca"]["params"]["svd_solver"] == "auto"
        assert back.obsm["X_diffmap"].shape == (600, 11)  # the trivial component first, as scanpy's
        np.testing.assert_array_equal(back.obsm["X_diffmap"][:, 0], 1.0)
        assert back.uns["diffmap_evals"][0] == 1.0 and back.uns["diffmap_evals"].shape == (11,)
        assert np.all(np.diff(back.uns["diffmap_evals"]) <= 0)


def test_scanpy_next_steps_run_on_what_bigdr_wrote(scanpy_written):
    sc = pytest.importorskip("scanpy")
    import matplotlib

    matplotlib.use("Agg")
    paths, _ = scanpy_written
    for path in paths:
        back = anndata.read_h5ad(path) if path.endswith(".h5ad") else anndata.read_zarr(path)
        sc.pp.neighbors(back, use_rep="X_pca")  # crashed with KeyError 'diffmap_evals' before
        back.uns["iroot"] = 0
        sc.tl.dpt(back, n_dcs=10)  # reads X_diffmap and diffmap_evals
        assert np.isfinite(back.obs["dpt_pseudotime"]).all()
        sc.pl.embedding(back, basis="X_diffmap", color="program", show=False)
        sc.pl.pca(back, color="program", show=False)
    sc.tl.umap(back)  # once: its numba functions compile on first use
    assert back.obsm["X_umap"].shape == (600, 2)


def test_the_graph_is_written_as_scanpys_neighbors(scanpy_written, tmp_path):
    """kernel='umap' on all rows: obsp and uns['neighbors'] as sc.pp.neighbors(n_neighbors=15) leaves them,
    so scanpy's next steps run on bigdr's graph without recomputing it."""
    sc = pytest.importorskip("scanpy")
    paths, _ = scanpy_written
    for path in paths:
        back = anndata.read_h5ad(path) if path.endswith(".h5ad") else anndata.read_zarr(path)
        assert back.uns["neighbors"]["params"]["n_neighbors"] == 15
        ours = back.obsp["connectivities"]
        theirs = back.copy()
        sc.pp.neighbors(theirs, n_neighbors=15, use_rep="X_pca")  # exact neighbours at 600 cells, as bigdr's
        assert abs(ours - theirs.obsp["connectivities"]).max() < 1e-5
        assert abs(back.obsp["distances"] - theirs.obsp["distances"]).max() < 1e-4
        back.uns["iroot"] = 0
        sc.tl.dpt(back, n_dcs=10)  # on bigdr's graph and diffusion map, no sc.pp.neighbors
        assert np.isfinite(back.obs["dpt_pseudotime"]).all()
    # A store with neighbours of its own keeps them, whole, and says so.
    del theirs.obsm["X_diffmap"], theirs.uns["diffmap_evals"]
    own = str(tmp_path / "own.h5ad")
    theirs.write_h5ad(own)
    model = bigdr.DiffusionMap(3, n_neighbors=14, kernel="umap", landmarks=None).fit(theirs.obsm["X_pca"])
    with pytest.warns(UserWarning, match="obsp/connectivities, obsp/distances, uns/neighbors already in"):
        bigdr.write_obsm(model.embedding_, own, "X_diffmap", model=model)
    again = anndata.read_h5ad(own)
    assert abs(again.obsp["connectivities"] - theirs.obsp["connectivities"]).max() == 0
    assert again.obsm["X_diffmap"].shape == (600, 4)


def test_command_line_writes_obsm(cells, capsys):
    store, h5ad, _ = cells
    argv = ["fit-transform", store, "--obsm", "X_diffmap", "--method", "diffusion-map", "--n-neighbors", "10"]
    assert main(argv) == 0
    assert "obsm['X_diffmap']" in capsys.readouterr().out
    assert anndata.read_zarr(store).obsm["X_diffmap"].shape == (400, 3)  # with scanpy's trivial first column
    assert main(["fit-transform", h5ad, "--obsm", "X_pca2", "-k", "3"]) == 0
    back = anndata.read_h5ad(h5ad)
    assert back.obsm["X_pca2"].shape == (400, 3) and back.varm["X_pca2"].shape == (30, 3)  # scanpy's key_added
    assert main(["fit-transform", h5ad, "--obsm", "X_pca", "-k", "3", "--overwrite"]) == 2  # not bigdr's
    assert "not written by bigdr" in capsys.readouterr().err


def test_scanpy_bundled_data_round_trip(tmp_path):
    """scanpy's pbmc68k_reduced: a diffusion map of its X_pca written to obsm, read back by scanpy's reader."""
    sc = pytest.importorskip("scanpy")
    adata = sc.datasets.pbmc68k_reduced()
    store = str(tmp_path / "pbmc.zarr")
    adata.write_zarr(store)
    assert main(["fit-transform", store, "--dataset", "obsm/X_pca", "--method", "diffusion-map", "-k", "5",
                 "--obsm", "X_bigdr_diffmap"]) == 0  # fmt: skip
    back = anndata.read_zarr(store)
    assert back.obsm["X_bigdr_diffmap"].shape == (adata.n_obs, 5)
    np.testing.assert_array_equal(back.obsm["X_pca"], adata.obsm["X_pca"])


def test_info_describes_h5ad_files_and_anndata_stores(cells, capsys):
    store, h5ad, adata = cells
    for path in (store, h5ad):
        assert main(["info", path]) == 0
        out = capsys.readouterr().out
        assert f"{path}: AnnData" in out and "400 cells" in out
        assert "X: csr_matrix 400 x 30, float32" in out and "nonzeros (20.00%)" in out
        assert "layers/dense: dense 400 x 30, float32" in out and "obsm/X_pca: dense 400 x 5, float64" in out


def test_command_line_reads_a_layer_by_name(cells, tmp_path, capsys):
    import zarr

    store, h5ad, adata = cells
    for path in (store, h5ad):
        out = tmp_path / f"layer-{path.rsplit('.', 1)[1]}.zarr"
        assert main(["fit-transform", path, str(out), "--layer", "dense", "-k", "3"]) == 0
        expected = bigdr.PCA(3).fit_transform(adata.layers["dense"])
        np.testing.assert_allclose(np.abs(zarr.open(str(out), mode="r")[:]), np.abs(expected), atol=1e-5)
    capsys.readouterr()
    assert main(["fit-transform", h5ad, str(tmp_path / "n.zarr"), "--layer", "counts"]) == 2
    assert "no element 'layers/counts'" in capsys.readouterr().err
    assert main(["fit-transform", h5ad, str(tmp_path / "n.zarr"), "--layer", "dense", "--dataset", "X"]) == 2
    assert "not both" in capsys.readouterr().err and not (tmp_path / "n.zarr").exists()


def test_write_anndata_streams_a_sparse_matrix_into_h5ad_and_zarr(tmp_path):
    import pandas as pd

    from bigdr.datasets import make_cells
    from bigdr.io.anndata import write_anndata

    X, coords = make_cells(2600, 300, density=0.05, seed=1)
    ref = X.compute()
    obs = pd.DataFrame(
        {"cell_type": coords[:, 0].compute().astype(int).astype(str)}, index=[f"c{i}" for i in range(2600)]
    )
    for name in ("atlas.h5ad", "atlas.zarr"):
        path = tmp_path / name
        write_anndata(X, path, obs=obs, chunk_nnz=10_000)  # several blocks, several chunks
        back = anndata.read_h5ad(path) if name.endswith(".h5ad") else anndata.read_zarr(path)
        assert (back.X != ref).nnz == 0 and list(back.obs["cell_type"]) == list(obs["cell_type"])
        model = bigdr.PCA(5).fit(str(path))  # read back sparse, block by block
        np.testing.assert_allclose(model.explained_variance_, bigdr.PCA(5).fit(ref).explained_variance_, rtol=1e-6)
        with pytest.raises(FileExistsError, match="overwrite"):
            write_anndata(X, path)
        write_anndata(X[:100], path, overwrite=True)  # bigdr wrote it: replaced
    foreign = tmp_path / "foreign.h5ad"
    anndata.AnnData(ref[:10]).write_h5ad(foreign)
    with pytest.raises(ValueError, match="not an AnnData file written by bigdr"):
        write_anndata(X, foreign, overwrite=True)
    with pytest.raises(ValueError, match="obs has 3 rows"):
        write_anndata(X, tmp_path / "bad.h5ad", obs=obs.iloc[:3])
    assert not (tmp_path / "bad.h5ad").exists() and not list(tmp_path.glob(".bad*"))  # nothing half-written


def test_scanpy_lazy_normalisation_feeds_pca_as_documented(tmp_path):
    sc = pytest.importorskip("scanpy")
    import h5py
    from anndata.experimental import read_elem_lazy

    counts = sp.csr_matrix(np.random.default_rng(0).poisson(0.3, (3000, 200)).astype(np.float32))
    anndata.AnnData(counts).write_h5ad(tmp_path / "raw.h5ad")
    with h5py.File(tmp_path / "raw.h5ad", "r") as f:
        adata = anndata.AnnData(X=read_elem_lazy(f["X"], chunks=(1000, 200)))
        sc.pp.normalize_total(adata, target_sum=1e4)
        sc.pp.log1p(adata)
        assert isinstance(adata.X, da.Array) and sp.issparse(adata.X._meta)
        lazy = bigdr.PCA(10).fit(adata.X)
    ref = anndata.AnnData(counts.copy())
    sc.pp.normalize_total(ref, target_sum=1e4)
    sc.pp.log1p(ref)
    np.testing.assert_allclose(lazy.explained_variance_, bigdr.PCA(10).fit(ref.X).explained_variance_, rtol=1e-5)


def test_a_view_of_a_backed_file_reads_only_its_cells_and_genes(tmp_path):
    """``adata[cells, genes]`` of a backed file is read from the file, restricted block by block, as the
    same subset in memory would be: sparse X (PCA's implicit centring) and a dense layer (dense rows)."""
    anndata = pytest.importorskip("anndata")
    X = sp.random(3_000, 120, density=0.08, format="csr", random_state=1, dtype=np.float64)
    X.data = np.log1p(100 * X.data)
    dense = X.toarray()
    adata = anndata.AnnData(X=X, layers={"dense": dense})
    adata.var["highly_variable"] = np.arange(120) % 3 == 0
    path = tmp_path / "cells.h5ad"
    adata.write_h5ad(path)
    backed = anndata.read_h5ad(path, backed="r")
    genes = backed.var["highly_variable"].to_numpy()
    cells = np.zeros(3_000, dtype=bool)
    cells[[5, 17, 600, *range(1_000, 2_500)]] = True
    for rows, cols in ((slice(None), genes), (cells, slice(None)), (cells, genes)):
        view = backed[rows, cols]
        assert view.is_view and view.isbacked
        ref = bigdr.PCA(4).fit_transform(X[rows][:, cols])
        Y = bigdr.PCA(4).fit_transform(view)
        assert isinstance(Y, da.Array) and Y.shape == ref.shape
        np.testing.assert_allclose(np.abs(Y.compute()), np.abs(ref), atol=1e-9)
        on_layer = bigdr.as_array(view, dataset="layers/dense").compute()
        np.testing.assert_array_equal(on_layer, dense[rows][:, cols])
    with pytest.raises(ValueError, match="out of the file's order"):
        bigdr.PCA(2).fit(backed[[40, 3, 7, 900]])
    backed.file.close()


@pytest.fixture
def flagged(tmp_path):
    """Log-counts whose var flags highly variable genes (scanpy's highly_variable_genes), as h5ad and zarr."""
    rng = np.random.default_rng(3)
    X = sp.random(1_500, 90, density=0.1, format="csr", random_state=3, dtype=np.float64)
    X.data = np.log1p(50 * X.data)
    X = sp.csr_matrix(X + sp.csr_matrix(np.outer(rng.random(1_500) < 0.4, rng.random(90) < 0.3) * 2.0))
    adata = anndata.AnnData(X=X)
    adata.var_names = [f"gene{i}" for i in range(90)]
    adata.var["highly_variable"] = rng.random(90) < 0.4
    adata.write_h5ad(tmp_path / "cells.h5ad")
    adata.write_zarr(tmp_path / "cells.zarr")
    return str(tmp_path / "cells.h5ad"), str(tmp_path / "cells.zarr"), adata


def _angle(A, B):
    from scipy.linalg import subspace_angles

    return float(subspace_angles(np.asarray(A), np.asarray(B)).max())


def test_loadings_land_on_their_genes_as_scanpy_writes_them(flagged):
    """A PCA of the highly variable genes (a view of the backed file) is written as scanpy's default
    sc.pp.pca writes it: varm["PCs"] a row per gene, zeros outside the mask, mask_var in the params."""
    from bigdr.exceptions import GeneSelectionWarning

    sc = pytest.importorskip("scanpy")
    h5ad, _, adata = flagged
    hvg = adata.var["highly_variable"].to_numpy()
    flags = f"uses all 90 genes, but var\\['highly_variable'\\] flags {hvg.sum()}"
    with pytest.warns(GeneSelectionWarning, match=flags):
        whole = bigdr.PCA(4).fit(h5ad)  # the path: every gene, with scanpy's default named
    np.testing.assert_array_equal(whole.feature_names_in_, adata.var_names)
    backed = anndata.read_h5ad(h5ad, backed="r")
    pca = bigdr.PCA(4).fit(backed[:, hvg])  # a view: its genes only, and no warning
    Y = pca.transform(backed[:, hvg])
    assert list(pca.feature_names_in_) == list(adata.var_names[hvg])
    backed.file.close()
    bigdr.write_obsm(Y, h5ad, "X_pca", model=pca)
    written = anndata.read_h5ad(h5ad)
    ref = adata.copy()
    sc.pp.pca(ref, n_comps=4)  # scanpy's default: the highly variable genes
    assert written.varm["PCs"].shape == (90, 4) and not written.varm["PCs"][~hvg].any()
    assert _angle(written.varm["PCs"], ref.varm["PCs"]) <= 1e-8
    np.testing.assert_allclose(written.uns["pca"]["variance"], ref.uns["pca"]["variance"], rtol=1e-6)
    params = written.uns["pca"]["params"]
    assert params["mask_var"] == "highly_variable" and params["use_highly_variable"]
    sc.pp.neighbors(written, use_rep="X_pca")  # scanpy's next step on what bigdr wrote
    # Another subset is named by its mask; loadings without gene names and of another width are refused.
    some = np.arange(90) < 30
    bigdr.write_obsm(bigdr.PCA(3).fit(adata[:, some]).transform(adata[:, some].X), h5ad, "X_pca30",
                     model=bigdr.PCA(3).fit(adata[:, some]))  # fmt: skip
    back = anndata.read_h5ad(h5ad)
    np.testing.assert_array_equal(back.uns["X_pca30"]["params"]["mask_var"], some)
    assert back.varm["X_pca30"].shape == (90, 3) and not back.varm["X_pca30"][30:].any()
    unnamed = bigdr.PCA(3).fit(adata.X[:, :30])
    with pytest.raises(ValueError, match="cannot tell which genes they are"):
        bigdr.write_obsm(unnamed.transform(adata.X[:, :30]), h5ad, "X_bad", model=unnamed)
    assert "X_bad" not in anndata.read_h5ad(h5ad).obsm


def test_command_line_takes_scanpys_mask_var(flagged, tmp_path, capsys):
    """fit-transform uses var['highly_variable'] by default (sc.pp.pca's rule), --mask-var none every gene;
    a saved model transforms new files by its genes' names; --mask-var on a plain store is refused."""
    import zarr

    sc = pytest.importorskip("scanpy")
    _, store, adata = flagged
    hvg = adata.var["highly_variable"].to_numpy()
    model = tmp_path / "model.zarr"
    assert main(["fit-transform", store, "--obsm", "X_pca", "-k", "4", "--save-model", str(model)]) == 0
    assert f"on 1500 x {hvg.sum()}" in capsys.readouterr().out
    ref = adata.copy()
    sc.pp.pca(ref, n_comps=4)
    written = anndata.read_zarr(store)
    assert _angle(written.varm["PCs"], ref.varm["PCs"]) <= 1e-8
    saved = bigdr.load(model)
    assert saved.feature_names_in_.dtype == object and list(saved.feature_names_in_) == list(adata.var_names[hvg])
    shuffled = adata[:, ::-1].copy()  # the same genes in another order: taken by name
    shuffled.write_h5ad(tmp_path / "new.h5ad")
    assert main(["transform", str(model), str(tmp_path / "new.h5ad"), str(tmp_path / "new.zarr")]) == 0
    np.testing.assert_allclose(zarr.open(str(tmp_path / "new.zarr"), mode="r")[:], written.obsm["X_pca"], atol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 'none' asked for every gene: no warning about it
        assert main(["fit-transform", store, str(tmp_path / "all.zarr"), "-k", "4", "--mask-var", "none"]) == 0
    assert "on 1500 x 90" in capsys.readouterr().out
    assert main(["fit-transform", store, str(tmp_path / "m.zarr"), "--mask-var", "chosen"]) == 2
    assert "no var['chosen']" in capsys.readouterr().err and not (tmp_path / "m.zarr").exists()
    plain = tmp_path / "plain.zarr"
    bigdr.write_zarr(adata.X.toarray(), str(plain))
    assert main(["fit-transform", str(plain), str(tmp_path / "p.zarr"), "--mask-var", "highly_variable"]) == 2
    assert "not one" in capsys.readouterr().err


def test_loadings_of_every_gene_are_written_whatever_the_names(tmp_path):
    """Repeated gene names (common in gene-symbol indices) do not stop a PCA of every gene from being written;
    placing a subset by name among them is refused with the reason."""
    X = sp.random(300, 12, density=0.3, format="csr", random_state=2, dtype=np.float64)
    adata = anndata.AnnData(X=X)
    adata.var_names = ["a", "b", "a", *[f"g{i}" for i in range(9)]]
    path = str(tmp_path / "dup.h5ad")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # anndata's own "not unique" warning
        adata.write_h5ad(path)
    pca = bigdr.PCA(3).fit(path)
    bigdr.write_obsm(pca.transform(path), path, "X_pca", model=pca)
    np.testing.assert_allclose(anndata.read_h5ad(path).varm["PCs"], pca.components_.T)
    some = bigdr.PCA(2).fit(adata[:, 3:].copy())
    with pytest.raises(ValueError, match="repeats var names"):
        bigdr.write_obsm(some.transform(adata[:, 3:].X), path, "X_some", model=some)
