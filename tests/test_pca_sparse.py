"""PCA of sparse data, centred implicitly: it equals PCA of the densified data, and never densifies.

References are scikit-learn's exact PCA of the dense matrix and, for the
shapes bigdr reads, real files: AnnData ``.h5ad`` and zarr stores written by
anndata, and bigdr's own CSR stores.
"""

import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import counted_blocks
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import PCA as SkPCA

import bigdr
from bigdr.core import stats
from bigdr.io import as_sparse_array, is_sparse_input, write_sparse_zarr
from bigdr.runtime.compute import progress


def cells(n=2000, p=120, rank=4, seed=0):
    """Log-counts of cells from ``rank`` gene programs: sparse, with a spectral gap after ``rank``."""
    rng = np.random.default_rng(seed)
    programs = rng.gamma(0.6, 1.0, size=(rank, p))
    usage = rng.dirichlet(np.full(rank, 0.3), size=n) * rng.lognormal(0.0, 0.3, size=(n, 1))
    counts = rng.poisson(0.4 * usage @ programs)
    return sp.csr_matrix(np.log1p(counts))


def angles(A, B):
    """Largest principal angle between the row spaces of ``A`` and ``B`` (radians), from its sine
    ``|(I - P_A) Q_B|`` (the arccos of the cosines cannot resolve angles below about 1e-8)."""
    Qa, Qb = np.linalg.qr(A.T)[0], np.linalg.qr(B.T)[0]
    return float(np.arcsin(min(1.0, np.linalg.norm(Qb - Qa @ (Qa.T @ Qb), 2))))


@pytest.fixture(scope="module")
def data():
    X = cells()
    assert 0.05 < X.nnz / np.prod(X.shape) < 0.5
    return X, SkPCA(4, svd_solver="full").fit(X.toarray())


def check_equal(model, ref, atol=1e-10):
    assert angles(model.components_, ref.components_) <= atol
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(model.mean_, ref.mean_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["csr_matrix", "csc_matrix", "csr_array", "csc_array", "dask", "counts"])
def test_sparse_in_memory_equals_dense(data, kind):
    X, ref = data
    given_ = {
        "csr_matrix": X,
        "csc_matrix": sp.csc_matrix(X),
        "csr_array": sp.csr_array(X),
        "csc_array": sp.csc_array(X),
        "dask": da.from_array(X, chunks=(333, X.shape[1]), asarray=False),
        "counts": None,
    }[kind]
    if kind == "counts":  # integer counts are cast, not refused
        counts = sp.csr_matrix(np.expm1(X.toarray()).round().astype(np.int32))
        ref = SkPCA(4, svd_solver="full").fit(counts.toarray().astype(float))
        given_ = counts
    model = bigdr.PCA(4).fit(given_)
    assert model.svd_solver_ == "covariance"
    check_equal(model, ref)
    Y = model.transform(given_)
    dense = ref.transform((X if kind != "counts" else counts).toarray().astype(float))
    Y = Y.compute() if kind == "dask" else Y
    assert isinstance(Y, np.ndarray) and Y.shape == (X.shape[0], 4)
    np.testing.assert_allclose(Y * np.sign(Y[0]) * np.sign(dense[0]), dense, atol=1e-9)


def test_sparse_blocks_are_densified_only_in_bounded_pieces(data, monkeypatch):
    X, ref = data
    p = X.shape[1]
    monkeypatch.setattr(stats, "DENSE_PART_BYTES", 8 * p * 100)  # pieces of 256 rows (the least the gemm takes)
    shapes = []

    def bounded(self, *args, **kwargs):  # the p x p Gram of a block may be made dense; rows only in pieces
        assert self.shape == (p, p) or self.shape[0] <= 256, f"a {self.shape} block of rows was densified"
        shapes.append(self.shape)
        return original(self, *args, **kwargs)

    original = sp.csr_matrix.toarray
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        monkeypatch.setattr(cls, "toarray", bounded)
    model = bigdr.PCA(4).fit(X)
    assert (256, p) in shapes  # the covariance of these 19%-dense rows went through dense pieces
    check_equal(model, ref)
    model.transform(X)
    Y, beyond = model.embed_with_drift(X)
    da.compute(Y, beyond)
    bigdr.PCA(4, svd_solver="randomized", n_iter=4, random_state=0).fit(X)


@pytest.mark.parametrize("density", [0.0, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("route", ["gemm", "sparse product"])
def test_both_routes_of_a_blocks_scatter_equal_the_dense_formula(density, route, monkeypatch):
    """Dense pieces and the sparse product ``X^T X`` give the same scatter, whichever the density decides."""
    monkeypatch.setattr(stats, "DENSE_GRAM_DENSITY", 0.0 if route == "gemm" else 2.0)
    monkeypatch.setattr(stats, "DENSE_PART_BYTES", 8 * 30 * 300)  # several pieces: 300 rows each of 30 columns
    rng = np.random.default_rng(7)
    X = sp.random(1000, 30, density=density, format="csr", random_state=3, dtype=np.float32)
    X.data = np.log1p(rng.poisson(3.0, X.nnz)).astype(np.float32)
    got = stats.sparse_moments(X)
    D = X.toarray().astype(np.float64)
    mean = D.mean(axis=0)
    expected = (D - mean).T @ (D - mean)
    assert got.n == 1000
    np.testing.assert_allclose(got.mean, mean, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got.scatter, expected, rtol=0, atol=1e-12 * max(1.0, np.abs(expected).max()))


def test_randomized_regime_equals_the_dense_one_and_reaches_the_exact_components(data):
    X, ref = data
    for n_iter in (4, 20):
        model = bigdr.PCA(4, svd_solver="randomized", n_iter=n_iter, random_state=0).fit(X)
        dense = bigdr.PCA(4, svd_solver="randomized", n_iter=n_iter, random_state=0).fit(X.toarray())
        assert angles(model.components_, dense.components_) <= 1e-12  # implicit centring is exact
    # the gap after 4 components is a ratio of 0.51: 20 power iterations reach the exact subspace
    assert angles(model.components_, ref.components_) <= 1e-6
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-6)


@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_the_column_statistics_ride_the_first_product_unless_digits_would_cancel(data, offset, monkeypatch):
    """Sparse, unscaled: the mean comes with the first product, which is centred after it (n_iter + 1 reads);
    with a mean far above the spread (every entry stored, 1e4 + log-counts) that product is made again."""
    import bigdr.blockwise.linalg as linalg

    X, _ = data
    if offset:
        X = sp.csr_matrix(X.toarray() + offset)  # all stored: n |m|^2 is 1e8 times the scatter's trace
    monkeypatch.setattr(linalg, "HELD_BYTES_PER_THREAD", 0)  # data too large to hold: read on every pass
    blocks, reads = counted_blocks(X, 500)
    model = bigdr.PCA(4, svd_solver="randomized", n_iter=3, tol=0, random_state=0).fit(blocks)
    assert sorted(reads) == sorted(list(range(0, X.shape[0], 500)) * (4 if not offset else 5))
    dense = bigdr.PCA(4, svd_solver="randomized", n_iter=3, tol=0, random_state=0).fit(X.toarray())
    assert angles(model.components_, dense.components_) <= 1e-10
    np.testing.assert_allclose(model.mean_, dense.mean_, rtol=1e-14)
    np.testing.assert_allclose(model.explained_variance_, dense.explained_variance_, rtol=1e-10)


def test_small_sparse_data_is_read_once_for_all_the_passes(data, monkeypatch):
    """Four float64 blocks, counted at SPARSE_CHUNK_NNZ nonzeros each, are held after one read when two worker
    threads would hold as much streaming them (two blocks in flight at 24 bytes a nonzero), with the same
    result as reading them on every pass; on one thread, or with a smaller allowance, they are read every pass."""
    import bigdr.blockwise.linalg as linalg

    X, _ = data
    blocks, reads = counted_blocks(X, 500)
    assert linalg.stored_bytes(blocks) == 4 * linalg.SPARSE_CHUNK_NNZ * 12
    fits = {}
    for threads, allowance, expected in ((2, None, 4), (1, None, 16), (2, linalg.stored_bytes(blocks) // 2 - 1, 16)):
        if allowance is not None:
            monkeypatch.setattr(linalg, "HELD_BYTES_PER_THREAD", allowance)
        with dask.config.set(scheduler="threads", num_workers=threads):
            reads.clear()
            pca = bigdr.PCA(4, svd_solver="randomized", n_iter=3, tol=0, random_state=0).fit(blocks)
            assert len(reads) == expected and sorted(set(reads)) == list(range(0, X.shape[0], 500))
            reads.clear()
            tsvd = bigdr.TruncatedSVD(4, n_iter=3, random_state=0).fit(blocks)
            assert len(reads) == expected  # TruncatedSVD: n_iter + 1 passes, the first with the column sums
        fits[(threads, allowance)] = pca, tsvd
    (held, held_tsvd), *others = fits.values()
    for pca, tsvd in others:
        np.testing.assert_array_equal(held.components_, pca.components_)
        np.testing.assert_array_equal(held.explained_variance_, pca.explained_variance_)
        np.testing.assert_array_equal(held_tsvd.components_, tsvd.components_)


def test_small_sparse_data_is_held_on_a_real_clusters_workers(data, cluster_client, tmp_path):
    """On a distributed cluster the held blocks are futures on the workers, and the fits equal the threads'."""
    import distributed

    import bigdr.blockwise.linalg as linalg

    X, _ = data
    store = str(tmp_path / "x.zarr")
    write_sparse_zarr(X, store)
    local = bigdr.PCA(4, svd_solver="randomized", tol=1e-9, random_state=0).fit(store)
    local_tsvd = bigdr.TruncatedSVD(4, random_state=0).fit(store)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        held = linalg.held_for_passes(as_sparse_array(store))
        assert any(isinstance(v, distributed.Future) for v in dict(held.__dask_graph__()).values())
        remote = bigdr.PCA(4, svd_solver="randomized", tol=1e-9, random_state=0).fit(store)
        remote_tsvd = bigdr.TruncatedSVD(4, random_state=0).fit(store)
    assert angles(remote.components_, local.components_) <= 1e-12
    np.testing.assert_allclose(remote.explained_variance_, local.explained_variance_, rtol=1e-12)
    assert remote.n_iter_ == local.n_iter_
    np.testing.assert_allclose(remote_tsvd.singular_values_, local_tsvd.singular_values_, rtol=1e-12)


def test_randomized_iterates_to_its_accuracy_target_and_reports_it(data):
    X, ref = data
    model = bigdr.PCA(4, svd_solver="randomized", n_iter=0, tol=1e-9, random_state=0).fit(X)
    true = angles(model.components_, ref.components_)
    assert model.n_iter_ > 1 and model.angle_ <= 1e-9  # went on past n_iter=0 until the target
    assert true <= 2 * model.angle_ + 1e-12  # the Davis-Kahan estimate bounds the true angle
    fixed = bigdr.PCA(4, svd_solver="randomized", n_iter=2, tol=0, random_state=0).fit(X)
    assert fixed.n_iter_ == 3 and fixed.angle_ > 0  # tol=0: the passes asked for, the angle still reported
    exact = bigdr.PCA(4, svd_solver="covariance").fit(X)
    assert exact.n_iter_ == 1 and exact.angle_ == 0.0


def test_cached_data_takes_a_narrow_krylov_block_to_the_same_components(monkeypatch):
    import bigdr.blockwise.linalg as linalg

    X = cells(n=4000, p=1000, rank=60, seed=5)
    Xd = as_sparse_array(X)
    assert linalg.krylov_plan(Xd, 60, 1e-6, "auto", 4) == (20, 92)  # cached: 20 columns, the space of 31 x 60
    assert linalg.krylov_plan(Xd, 60, 0.0, 30, 4) == (60, 4)  # no target: scikit-learn's sketch, n_iter passes
    assert linalg.krylov_plan(Xd, 12, 1e-6, 7, 4) == (12, 7)  # a sketch narrower than the block stays
    dense = da.from_array(X.toarray(), chunks=(1000, 1000))
    assert linalg.krylov_plan(dense, 60, 1e-6, "auto", 4) == (60, 30)  # a dense pass costs the same at 20 columns
    exact = SkPCA(50, svd_solver="full").fit(X.toarray())
    narrow = bigdr.PCA(50, svd_solver="randomized", tol=1e-8, random_state=0).fit(X)
    monkeypatch.setattr(linalg, "available_memory", lambda: 1 << 20)  # a machine where the data is not cached
    assert linalg.krylov_plan(Xd, 60, 1e-6, None, 4) == (60, 30)
    wide = bigdr.PCA(50, svd_solver="randomized", tol=1e-8, random_state=0).fit(X)
    for model in (narrow, wide):
        assert model.angle_ <= 1e-8 and angles(model.components_, exact.components_) <= 1e-7
        np.testing.assert_allclose(model.explained_variance_, exact.explained_variance_, rtol=1e-9)
    assert narrow.n_iter_ * 20 < wide.n_iter_ * 60  # fewer products of a column in all
    assert narrow.n_iter_ > wide.n_iter_


def test_randomized_warns_with_the_angle_on_a_flat_spectrum():
    rng = np.random.default_rng(3)
    X = sp.random(3000, 300, density=0.05, random_state=4, format="csr")
    X.data = np.log1p(rng.poisson(3.0, X.nnz) + 1.0)  # no program: a flat spectrum, no gap after 20
    with pytest.warns(bigdr.exceptions.ConvergenceWarning, match=r"after 6 passes .* within an estimated"):
        model = bigdr.PCA(20, svd_solver="randomized", max_iter=5, random_state=0).fit(X)
    assert model.angle_ > 1e-6 and model.n_iter_ == 6


def test_auto_takes_the_exact_covariance_while_its_states_fit(data):
    X, _ = data
    assert bigdr.PCA(4).fit(X).svd_solver_ == "covariance"
    with dask.config.set({"bigdr.memory-limit": "1MiB"}):  # 120 x 120 states no longer fit: randomized
        assert bigdr.PCA(4)._choose_solver(2000, 120, sparse=True) == "randomized"
        assert bigdr.PCA(4)._choose_solver(50_000, 120) == "randomized"
    assert bigdr.PCA(4).estimate_memory(X).total > 0  # sparse input is estimated as the fit reads it
    assert bigdr.TruncatedSVD(4).estimate_memory(X).total > 0
    wide = bigdr.PCA(50).estimate_memory(da.zeros((100_000, 30_000), chunks=(2000, 30_000)))
    assert "scatter" not in wide.describe()  # the randomized route forms no p x p matrix
    assert wide.total < 4 * 2**30


def test_progress_covers_the_eigendecomposition(data, capsys):
    X, _ = data
    with progress("lines"):
        bigdr.PCA(4).fit(X)
        assert "eigendecomposition" not in capsys.readouterr().err  # 120 x 120: too short to announce
        bigdr.PCA(4).fit(sp.random(2100, 2100, density=0.002, format="csr", random_state=0))
    err = capsys.readouterr().err
    assert "eigendecomposition of the 2,100 x 2,100 covariance ..." in err
    assert "eigendecomposition of the 2,100 x 2,100 covariance:" in err


def test_partial_fit_over_sparse_batches_equals_fit(data):
    X, ref = data
    model = bigdr.PCA(4)
    for start in range(0, X.shape[0], 700):
        model.partial_fit(X[start : start + 700])
    check_equal(model, ref)
    assert model.n_samples_seen_ == X.shape[0]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 600), min_size=1, max_size=6))
def test_result_does_not_depend_on_the_chunking(cuts):
    X = cells(n=900, p=40, seed=3)
    bounds = sorted({0, X.shape[0], *[c for c in cuts if c < X.shape[0]]})
    chunks = tuple(b - a for a, b in zip(bounds, bounds[1:]))
    Xd = da.from_array(X, chunks=(chunks, X.shape[1]), asarray=False)
    a, b = bigdr.PCA(3).fit(Xd), bigdr.PCA(3).fit(X)
    assert angles(a.components_, b.components_) <= 1e-10
    np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-12)


def test_files_on_disk_are_read_sparse(data, tmp_path):
    anndata = pytest.importorskip("anndata")
    X, ref = data
    adata = anndata.AnnData(X=X, layers={"float32": X.astype(np.float32)})
    adata.write_h5ad(tmp_path / "cells.h5ad")
    adata.write_zarr(tmp_path / "cells.zarr")
    write_sparse_zarr(X, tmp_path / "csr.zarr")
    ref32 = SkPCA(4, svd_solver="full").fit(X.astype(np.float32).toarray().astype(np.float64))
    for path, dataset, expected, tol in [
        (tmp_path / "cells.h5ad", None, ref, 1e-10),
        (tmp_path / "cells.zarr", None, ref, 1e-10),
        (tmp_path / "csr.zarr", None, ref, 1e-10),
        # float32 data: sums in float64, the components kept in float32 as the input
        (tmp_path / "cells.h5ad", "layers/float32", ref32, 1e-6),
        (tmp_path / "cells.zarr", "layers/float32", ref32, 1e-6),
    ]:
        assert is_sparse_input(str(path), dataset)
        Xd = bigdr.PCA.read_input(str(path), dataset)
        assert sp.issparse(Xd._meta)
        model = bigdr.PCA(4).fit(Xd)
        assert angles(model.components_, expected.components_) <= tol
        np.testing.assert_allclose(model.explained_variance_, expected.explained_variance_, rtol=tol)


def test_the_command_line_fits_pca_on_an_h5ad_file_sparse(data, tmp_path, capsys):
    anndata = pytest.importorskip("anndata")
    import zarr

    from bigdr.cli import main

    X, ref = data
    anndata.AnnData(X=X).write_h5ad(tmp_path / "cells.h5ad")
    out = tmp_path / "pcs.zarr"
    assert main(["fit-transform", str(tmp_path / "cells.h5ad"), str(out), "-k", "4"]) == 0
    Y = zarr.open(str(out), mode="r")[:]
    dense = ref.transform(X.toarray())
    np.testing.assert_allclose(np.abs(Y), np.abs(dense), atol=1e-8)


def test_bad_sparse_input_gets_a_clear_error(data, tmp_path):
    X, _ = data
    bad = X.copy()
    bad.data[5] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity among its stored values"):
        bigdr.PCA(2).fit(bad)
    with pytest.raises(TypeError, match="needs dense rows"):  # scikit-learn's TypeError for its 'full'
        bigdr.PCA(2, svd_solver="tsqr").fit(X)
    with pytest.raises(ValueError, match="features"):
        bigdr.PCA(2).fit(X).transform(X[:, :10])
    # duplicate and unsorted entries mean their sum, as in scipy's canonical form
    dup = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3, 3])), shape=(2, 3))
    block = as_sparse_array(dup, min_rows=1).compute()
    np.testing.assert_array_equal(block.toarray(), [[2.0, 0.0, 4.0], [0.0, 0.0, 0.0]])
    anndata = pytest.importorskip("anndata")
    anndata.AnnData(X=X).write_zarr(tmp_path / "cells.zarr")
    with pytest.raises(ValueError, match="no element 'layers/counts'"):
        bigdr.PCA(2).fit(as_sparse_array(str(tmp_path / "cells.zarr"), dataset="layers/counts"))


def test_equals_scanpy_pca_on_the_same_cells(data):
    sc = pytest.importorskip("scanpy")
    anndata = pytest.importorskip("anndata")
    X, _ = data
    adata = anndata.AnnData(X=X.copy())
    sc.pp.pca(adata, n_comps=4, svd_solver="arpack", zero_center=True)  # implicit centring, in memory
    model = bigdr.PCA(4).fit(X)
    assert angles(model.components_, adata.varm["PCs"].T) <= 1e-8
    np.testing.assert_allclose(model.explained_variance_, adata.uns["pca"]["variance"], rtol=1e-8)
    np.testing.assert_allclose(model.explained_variance_ratio_, adata.uns["pca"]["variance_ratio"], rtol=1e-8)


def test_an_anndata_object_is_read_as_its_matrix(data, tmp_path):
    anndata = pytest.importorskip("anndata")
    X, ref = data
    adata = anndata.AnnData(X=X, layers={"dense": X.toarray()})
    by_matrix = bigdr.PCA(4).fit_transform(X)
    Y = bigdr.PCA(4).fit_transform(adata)  # in memory: numpy out, the same numbers as its X
    assert isinstance(Y, np.ndarray)
    np.testing.assert_allclose(Y, by_matrix, atol=1e-12)
    assert is_sparse_input(adata) and not is_sparse_input(adata, "layers/dense")
    np.testing.assert_allclose(np.abs(bigdr.as_array(adata, dataset="layers/dense").compute()), X.toarray())
    adata.write_h5ad(tmp_path / "cells.h5ad")
    backed = anndata.read_h5ad(tmp_path / "cells.h5ad", backed="r")
    lazy = bigdr.PCA(4).fit_transform(backed)  # backed: read lazily from its file, lazy out
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), by_matrix, atol=1e-10)
    with pytest.raises(TypeError, match="Reduce it first with a method that takes sparse data"):
        bigdr.Isomap().fit(adata)  # a method that needs dense rows says which route works
    with pytest.raises(ValueError, match="no layers\\['counts'\\]"):
        bigdr.PCA(2).fit(bigdr.as_array(adata, dataset="layers/counts"))


def test_implicit_scaling_equals_pca_of_the_standardised_matrix(data):
    X, _ = data
    X = X.tolil()
    X[:, 7] = 0.0  # a constant feature keeps scale 1, as in scanpy
    X = X.tocsr()
    dense = X.toarray()
    sd = dense.std(axis=0, ddof=1)
    sd[sd == 0] = 1.0
    standardised = (dense - dense.mean(axis=0)) / sd
    ref = SkPCA(4, svd_solver="full").fit(standardised)
    for solver in ("covariance", "tsqr", "randomized"):
        data_in = dense if solver == "tsqr" else X
        model = bigdr.PCA(4, scale=True, svd_solver=solver, random_state=0, tol=1e-12, max_iter=100).fit(data_in)
        assert angles(model.components_, ref.components_) <= 1e-8, solver
        np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-8)
        np.testing.assert_allclose(model.scale_, sd, rtol=1e-10)
        Y = model.transform(data_in)
        np.testing.assert_allclose(np.abs(Y), np.abs(ref.transform(standardised)), rtol=1e-6, atol=1e-8)
    batches = bigdr.PCA(4, scale=True)
    for start in range(0, X.shape[0], 700):
        batches.partial_fit(X[start : start + 700])  # the unscaled state merges; scaled at the eigensolve
    assert angles(batches.components_, ref.components_) <= 1e-8
    back = model.inverse_transform(model.transform(X))  # the scaled space's projection, mapped back
    np.testing.assert_allclose(back, ref.inverse_transform(ref.transform(standardised)) * sd + dense.mean(0), atol=1e-8)
    with pytest.raises(ValueError, match="scale=True needs"):
        bigdr.PCA(4, scale=True, svd_solver="samples").fit(dense)


def test_implicit_scaling_equals_scanpy_scale_then_pca(data):
    sc = pytest.importorskip("scanpy")
    anndata = pytest.importorskip("anndata")
    X, _ = data
    adata = anndata.AnnData(X.toarray())
    sc.pp.scale(adata)  # zero_center=True, no max_value
    sc.pp.pca(adata, n_comps=4, svd_solver="arpack")
    model = bigdr.PCA(4, scale=True).fit(X)  # X stays sparse
    assert angles(model.components_, adata.varm["PCs"].T) <= 1e-6
    np.testing.assert_allclose(model.explained_variance_, adata.uns["pca"]["variance"], rtol=1e-5)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 40),
    p=st.integers(1, 30),
    k=st.integers(1, 50),  # column tiles of 20: one, several, the last padded
    density=st.floats(0.0, 1.0),
    dtype=st.sampled_from([np.float32, np.float64, np.int64]),
    big_index=st.booleans(),
    seed=st.integers(0, 2**16),
    chunk=st.integers(1, 50),
)
def test_fused_normal_product_equals_the_dense_formula(n, p, k, density, dtype, big_index, seed, chunk):
    """``Xc^T (Xc Z)`` from the fused CSR kernel, and the column means and variances, equal the dense formulas,
    for float32 values read as stored, integer counts, 64-bit indices, empty rows, and duplicate, unsorted
    entries (which add up)."""
    import numba

    from bigdr.core.sparse_products import centred_normal_product
    from bigdr.core.stats import sparse_column_moments

    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, format="coo", random_state=rng, dtype=np.float64)
    X.data = np.round(10 * X.data) if dtype is np.int64 else X.data
    coo = sp.coo_matrix((np.r_[X.data, X.data[:3]], (np.r_[X.row, X.row[:3]], np.r_[X.col, X.col[:3]])), shape=(n, p))
    M = sp.csr_matrix((coo.data.astype(dtype), (coo.row, coo.col)), shape=(n, p))
    M.has_sorted_indices = False  # the kernel must not rely on sorted indices
    if big_index:
        M.indices, M.indptr = M.indices.astype(np.int64), M.indptr.astype(np.int64)
    dense = M.toarray().astype(np.float64)
    Z, mean = rng.standard_normal((p, k)), rng.standard_normal(p)
    Xc = dense - mean
    expected = Xc.T @ (Xc @ Z)
    slp = numba.core.config.SLP_VECTORIZE
    got = centred_normal_product(M, Z, mean, chunk=chunk)  # rows gathered, then scattered, chunk by chunk
    assert numba.core.config.SLP_VECTORIZE == slp  # switched on only while the kernel compiles
    assert got.dtype == np.float64 and got.shape == (p, k)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * (1 + np.abs(expected).max()))
    moments = sparse_column_moments(M)  # the column statistics' kernel, on the same blocks
    np.testing.assert_allclose(moments.mean, dense.mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(moments.scatter, n * dense.var(axis=0), rtol=1e-9, atol=1e-9 * (1 + dense.max() ** 2))
