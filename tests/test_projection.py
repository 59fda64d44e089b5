import dask
import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.random_projection import johnson_lindenstrauss_min_dim as sk_jl

from bigdr import (
    GaussianRandomProjection,
    SparseRandomProjection,
    distortion_report,
    johnson_lindenstrauss_min_dim,
    load,
)
from bigdr.exceptions import DataDimensionalityWarning
from bigdr.io import write_sparse_zarr


@pytest.fixture(scope="module")
def wide():
    return np.random.default_rng(0).standard_normal((600, 2500))


def test_jl_bounds():
    for n in (10, 1000, 10**6):
        for eps in (0.05, 0.1, 0.5):
            # scikit-learn truncates the bound; k >= bound needs rounding up.
            assert johnson_lindenstrauss_min_dim(n, eps) == int(np.ceil(4 * np.log(n) / (eps**2 / 2 - eps**3 / 3)))
            assert 0 <= johnson_lindenstrauss_min_dim(n, eps) - sk_jl(n, eps=eps) <= 1
            assert johnson_lindenstrauss_min_dim(n, eps, bound="chernoff") == int(np.ceil(32 * np.log(n) / eps**2))
    assert (johnson_lindenstrauss_min_dim([100, 1000], 0.2) - sk_jl([100, 1000], eps=0.2) <= 1).all()
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match="eps"):
            johnson_lindenstrauss_min_dim(100, bad)
    with pytest.raises(ValueError, match="bound"):
        johnson_lindenstrauss_min_dim(100, 0.1, bound="x")


@settings(max_examples=6, deadline=None)
@given(rows=st.integers(50, 600), cols=st.integers(100, 2500), sparse=st.booleans())
def test_same_output_for_any_chunking(wide, rows, cols, sparse):
    model = SparseRandomProjection(40, random_state=3) if sparse else GaussianRandomProjection(40, random_state=3)
    model.fit(wide)
    ref = model.transform(wide)
    got = model.transform(da.from_array(wide, chunks=(rows, cols))).compute()
    # The same matrix whatever the chunks; only the rounding of BLAS and of
    # the sum over column blocks changes.
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_projection_matrix_entries_match_sklearn_in_distribution():
    p, k = 20000, 50
    g = GaussianRandomProjection(k, random_state=0).fit(np.zeros((2, p)))
    R = g.components_
    assert R.shape == (k, p)
    assert abs(R.mean()) < 4 / np.sqrt(R.size) / np.sqrt(k)
    assert R.var() * k == pytest.approx(1.0, abs=0.01)  # sklearn: N(0, 1/k)
    for density, expected in (("auto", 1 / np.sqrt(p)), (1 / 3, 1 / 3)):
        s = SparseRandomProjection(k, density=density, random_state=0).fit(np.zeros((2, p)))
        Rs = s.components_
        assert s.density_ == pytest.approx(expected)
        assert Rs.nnz / (k * p) == pytest.approx(expected, rel=0.05)
        np.testing.assert_allclose(np.unique(Rs.data), [-1, 1] / np.sqrt(expected * k))  # sklearn's values
        assert abs(np.mean(Rs.data > 0) - 0.5) < 0.02


@pytest.mark.parametrize("model", [GaussianRandomProjection(eps=0.25), SparseRandomProjection(eps=0.25)])
def test_distortion_within_eps_at_the_jl_dimension(model):
    # Synthetic wide data: 1000 points in 8000 dimensions; k from the bound is about 1000.
    X = np.random.default_rng(1).standard_normal((1000, 8000)).astype(np.float32)
    model.fit(X)
    assert model.n_components_ == johnson_lindenstrauss_min_dim(1000, 0.25) < 8000
    report = distortion_report(model, X, n_pairs=500)
    assert report["within_eps"] >= 0.99 and abs(report["mean"] - 1) < 0.02


def test_distortion_on_digits_made_wide():
    from sklearn.datasets import load_digits

    digits = load_digits().data
    # A fixed random feature map (random Fourier features) makes real data 6000 wide.
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((64, 6000)) / 8.0, rng.uniform(0, 2 * np.pi, 6000)
    X = np.sqrt(2 / 6000) * np.cos(digits @ W + b) * 30
    model = GaussianRandomProjection(eps=0.3, random_state=2).fit(X)
    report = distortion_report(model, X, n_pairs=800)
    assert model.n_components_ < 6000 and report["within_eps"] >= 0.99


def test_sparse_input_in_memory_dask_and_zarr(tmp_path):
    M = sp.random(1500, 30000, density=2e-3, format="csr", random_state=0, dtype=np.float32)
    model = SparseRandomProjection(32, random_state=5).fit(M)
    a = model.transform(M)
    assert isinstance(a, np.ndarray) and a.shape == (1500, 32)
    write_sparse_zarr(M, tmp_path / "m.zarr")
    b = model.transform(str(tmp_path / "m.zarr")).compute()
    c = model.transform(M.toarray())
    np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c, a, rtol=1e-5, atol=1e-5)
    # Written from a generator of row blocks, the same store.
    write_sparse_zarr((M[i : i + 400] for i in range(0, 1500, 400)), tmp_path / "g.zarr", 30000)
    np.testing.assert_array_equal(model.transform(str(tmp_path / "g.zarr")).compute(), b)


@pytest.mark.parametrize("cls", [SparseRandomProjection, GaussianRandomProjection])
def test_dask_sparse_and_anndata_sparse_input(tmp_path, cls):
    anndata = pytest.importorskip("anndata")
    M = sp.random(1500, 3000, density=5e-3, format="csr", random_state=1, dtype=np.float32)
    model = cls(16, random_state=2).fit(M)
    ref = model.transform(M)
    blocks = da.from_array(M, chunks=(400, 3000), asarray=False)  # a dask array of CSR blocks
    assert sp.issparse(blocks._meta)
    np.testing.assert_allclose(model.transform(blocks).compute(), ref, rtol=1e-5, atol=1e-6)
    adata = anndata.AnnData(M)
    np.testing.assert_allclose(model.transform(adata), ref, rtol=1e-5, atol=1e-6)  # in memory: numpy out
    for name in ("m.h5ad", "m.zarr"):
        path = tmp_path / name
        adata.write_h5ad(path) if name.endswith(".h5ad") else adata.write_zarr(path)
        np.testing.assert_allclose(model.transform(str(path)).compute(), ref, rtol=1e-5, atol=1e-6)
        backed = anndata.read_h5ad(path, backed="r") if name.endswith(".h5ad") else None
        if backed is not None:
            np.testing.assert_allclose(np.asarray(model.transform(backed)), ref, rtol=1e-5, atol=1e-6)
            backed.file.close()


def test_threads_and_distributed_agree(cluster_client, wide):
    model = GaussianRandomProjection(20, random_state=9).fit(wide)
    Xd = da.from_array(wide, chunks=(200, 1000))
    local = model.transform(Xd).compute(scheduler="threads")
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = model.transform(Xd).compute()
    np.testing.assert_allclose(remote, local, rtol=0, atol=1e-12 * np.abs(local).max())  # BLAS rounding only


def test_stateless_partial_fit_and_persistence(tmp_path, wide):
    model = SparseRandomProjection(16, density=1 / 3, random_state=4)
    model.partial_fit(wide[:100]).partial_fit(wide[100:])
    ref = model.transform(wide)
    model.save(str(tmp_path / "rp"))
    back = load(str(tmp_path / "rp"))
    np.testing.assert_array_equal(back.transform(wide), ref)
    assert zarr.open_group(str(tmp_path / "rp"), mode="r").attrs["arrays"] == {}  # seed and shape only
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(wide[:, :10])


def test_bad_input(wide):
    with pytest.raises(ValueError, match="eps"):
        GaussianRandomProjection(eps=1.5).fit(wide)
    with pytest.raises(ValueError, match="more than the 2500 features"):
        GaussianRandomProjection(eps=0.05).fit(wide)  # the JL dimension exceeds p
    with pytest.warns(DataDimensionalityWarning):
        GaussianRandomProjection(3000).fit(wide)
    import sklearn.exceptions

    with pytest.warns(sklearn.exceptions.DataDimensionalityWarning):  # scikit-learn's class catches bigdr's
        GaussianRandomProjection(3000).fit(wide)
    with pytest.raises(ValueError, match="density"):
        SparseRandomProjection(10, density=0).fit(wide)
    bad = wide.copy()
    bad[3, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        GaussianRandomProjection(10).fit(bad).transform(bad)
    M = sp.random(100, 50, density=0.1, format="csr", random_state=0)
    M.data[0] = np.inf
    with pytest.raises(ValueError, match="NaN"):
        SparseRandomProjection(5).fit(M).transform(M)


@pytest.mark.parametrize("cls", [GaussianRandomProjection, SparseRandomProjection])
def test_inverse_components_and_inverse_transform(cls):
    """scikit-learn's compute_inverse_components: the pseudo-inverse of components_, used by inverse_transform."""
    X = np.random.default_rng(0).standard_normal((60, 12)).astype(np.float32)
    with pytest.warns(DataDimensionalityWarning):
        model = cls(30, compute_inverse_components=True, random_state=1).fit(X)  # k > p: R has full column rank
    R = model.components_
    R = R.toarray() if hasattr(R, "toarray") else R
    np.testing.assert_allclose(model.inverse_components_, np.linalg.pinv(R), atol=1e-5)
    assert model.inverse_components_.dtype == np.float32
    back = model.inverse_transform(model.transform(X))
    np.testing.assert_allclose(back, X, atol=1e-4)  # pinv(R) R = I when k >= p
    lazy = cls(30, random_state=1).fit(X)  # computed on demand, the same numbers
    assert not hasattr(lazy, "inverse_components_")
    np.testing.assert_allclose(lazy.inverse_transform(da.from_array(model.transform(X))).compute(), back, atol=1e-5)
