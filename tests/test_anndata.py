"""AnnData stores read lazily (.h5ad and zarr, dense and CSR) and obsm written back, with the real anndata."""

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
    with pytest.raises(ValueError, match="zarr stores only"):
        bigdr.write_obsm(Y, h5ad, "X_bigdr")
    bigdr.write_obsm(Y[:, :2], store, "X_bigdr", overwrite=True)
    back = anndata.read_zarr(store)
    assert back.obsm["X_bigdr"].shape == (400, 2) and set(back.obsm) == {"X_pca", "X_bigdr"}


def test_command_line_writes_obsm(cells, capsys):
    store, h5ad, _ = cells
    argv = ["fit-transform", store, "--obsm", "X_diffmap", "--method", "diffusion-map", "--n-neighbors", "10"]
    assert main(argv) == 0
    assert "obsm['X_diffmap']" in capsys.readouterr().out
    assert anndata.read_zarr(store).obsm["X_diffmap"].shape == (400, 2)
    assert main(["fit-transform", h5ad, "--obsm", "X_pca2"]) == 2
    assert "zarr stores only" in capsys.readouterr().err


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
