"""Kernel PCA against scikit-learn (exact), its approximations against exact, updates, a cluster run."""

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.metrics.pairwise import laplacian_kernel

import bigdr

GAMMA = 0.2


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    latent = rng.uniform(-1, 1, (1200, 2))
    return np.column_stack([latent, np.sin(3 * latent[:, :1]), 0.1 * rng.standard_normal((1200, 2))])


def _aligned(Y, ref):
    """``Y`` with each column's sign matched to ``ref`` (eigenvectors are defined up to sign)."""
    return Y * np.sign(np.sum(Y * ref, axis=0))


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "poly", "sigmoid", "cosine", "linear"])
def test_exact_equals_scikit_learn(data, kernel):
    if kernel == "laplacian":  # scikit-learn's KernelPCA takes it as a precomputed kernel
        K = laplacian_kernel(data, gamma=GAMMA)
        ref = SkKernelPCA(4, kernel="precomputed", eigen_solver="dense").fit(K)
        Y_ref = ref.transform(K)
    else:
        ref = SkKernelPCA(4, kernel=kernel, gamma=GAMMA, degree=3, coef0=1, eigen_solver="dense").fit(data)
        Y_ref = ref.transform(data)
    model = bigdr.KernelPCA(4, kernel=kernel, gamma=GAMMA, method="exact")
    Y = model.fit_transform(data)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(_aligned(Y, Y_ref), Y_ref, atol=1e-8 * np.abs(Y_ref).max())
    np.testing.assert_allclose(model.transform(data[:300]), Y[:300], atol=1e-10 * np.abs(Y).max())


def test_precomputed_kernel_from_a_store(data, tmp_path):
    K = laplacian_kernel(data, gamma=GAMMA)
    store = tmp_path / "k.zarr"
    bigdr.write_zarr(da.from_array(K, chunks=(300, 1200)), store)
    model = bigdr.KernelPCA(3, kernel="precomputed")
    Y = model.fit_transform(str(store))
    assert isinstance(Y, da.Array) and model.method_ == "exact"
    direct = bigdr.KernelPCA(3, kernel="laplacian", gamma=GAMMA).fit_transform(data)
    np.testing.assert_allclose(Y.compute(), direct, atol=1e-10)
    np.testing.assert_allclose(model.transform(K[:50]), direct[:50], atol=1e-10)


def test_inverse_transform_equals_scikit_learn(data):
    ref = SkKernelPCA(3, kernel="rbf", gamma=GAMMA, eigen_solver="dense", fit_inverse_transform=True, alpha=0.5)
    Y_ref = ref.fit_transform(data)
    model = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="exact", fit_inverse_transform=True, alpha=0.5)
    Y = model.fit_transform(data)
    signs = np.sign(np.sum(Y * Y_ref, axis=0))
    np.testing.assert_allclose(model.inverse_transform(Y[:100]), ref.inverse_transform(Y_ref[:100]), atol=1e-8)
    np.testing.assert_allclose(signs * Y[:5], Y_ref[:5], atol=1e-8)


def test_gamma_scale_is_one_over_p_times_the_variance(data):
    model = bigdr.KernelPCA(2, kernel="rbf", gamma="scale", method="fourier", n_fourier=50).fit(data)
    assert model.gamma_ == pytest.approx(1 / (data.shape[1] * data.var()), rel=1e-12)
    assert bigdr.KernelPCA(2, kernel="rbf", gamma="auto", method="exact").fit(data).gamma_ == 1 / data.shape[1]


@pytest.mark.parametrize("method, sizes", [("nystroem", (20, 100, 500)), ("fourier", (20, 200, 2000))])
def test_approximations_approach_exact_as_they_grow(data, method, sizes):
    exact = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="exact").fit(data).eigenvalues_
    errors = []
    for size in sizes:  # the variance the 3 components capture, mean over three draws (one can be lucky)
        errors.append(np.mean([
            abs(bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method=method, landmarks=size, n_fourier=size,
                                random_state=seed).fit(data).eigenvalues_.sum() / exact.sum() - 1)
            for seed in range(3)
        ]))  # fmt: skip
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.05


@pytest.mark.parametrize("method", ["nystroem", "fourier"])
def test_transform_of_training_rows_reproduces_the_embedding(data, method, tmp_path):
    model = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method=method, landmarks=300, n_fourier=500)
    Y = model.fit_transform(da.from_array(data, chunks=250))
    assert isinstance(Y, da.Array)
    np.testing.assert_allclose(model.transform(data), Y.compute(), atol=1e-12)
    model.save(tmp_path / "m.zarr")
    np.testing.assert_array_equal(bigdr.load(tmp_path / "m.zarr").transform(data[:40]), model.transform(data[:40]))


@settings(max_examples=8, deadline=None)
@given(chunk=st.integers(37, 1200), cut=st.integers(3, 1199))
def test_fourier_is_the_same_for_any_chunking_and_batches(data, chunk, cut):
    whole = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="fourier", n_fourier=200).fit(data)
    chunked = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="fourier", n_fourier=200).fit(
        da.from_array(data, chunks=chunk)
    )
    batches = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="fourier", n_fourier=200).fit(data[:cut])
    batches.partial_fit(data[cut:])
    for other in (chunked, batches):
        np.testing.assert_allclose(other.eigenvalues_, whole.eigenvalues_, rtol=1e-10)
        np.testing.assert_allclose(np.abs(other.components_), np.abs(whole.components_), atol=1e-8)
    assert batches.n_samples_seen_ == len(data)


def test_nystroem_partial_fit_merges_rows_exactly(data):
    model = bigdr.KernelPCA(2, kernel="rbf", gamma=GAMMA, method="nystroem", landmarks=200).fit(data[:600])
    model.partial_fit(data[600:])
    F = model._feature_map().embed_block(data)
    centred = F - F.mean(axis=0)
    top = np.linalg.eigvalsh(centred.T @ centred)[::-1][:2]
    np.testing.assert_allclose(model.eigenvalues_, top, rtol=1e-9)


def test_fourier_on_a_real_cluster(cluster_client, data, tmp_path):
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(data, chunks=(200, 5)), store)
    local = bigdr.KernelPCA(2, kernel="rbf", gamma=GAMMA, method="fourier", n_fourier=300).fit(data)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = bigdr.KernelPCA(2, kernel="rbf", gamma=GAMMA, method="fourier", n_fourier=300)
        Y = remote.fit_transform(str(store)).compute()
    np.testing.assert_allclose(remote.eigenvalues_, local.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(Y, local.transform(data), atol=1e-10)


@pytest.mark.parametrize(
    "params, X, match",
    [
        ({"gamma": 0}, None, "gamma"),
        ({"gamma": -1.0}, None, "gamma"),
        ({"kernel": "chi2"}, None, "kernel"),
        ({"kernel": "poly", "method": "fourier"}, None, "shift-invariant"),
        ({"kernel": "precomputed", "method": "nystroem"}, None, "exact only"),
        ({"kernel": "precomputed"}, np.ones((4, 3)), "square"),
        ({"kernel": "precomputed"}, np.triu(np.ones((4, 4))), "symmetric"),
        ({"alpha": 0}, None, "alpha"),
        ({"method": "eigen"}, None, "method"),
    ],
)
def test_bad_input_is_refused(data, params, X, match):
    with pytest.raises(ValueError, match=match):
        bigdr.KernelPCA(2, **{"kernel": "rbf", **params}).fit(data if X is None else X)


def test_exact_partial_fit_solves_the_kept_and_new_rows(data):
    model = bigdr.KernelPCA(2, kernel="rbf", gamma=GAMMA, method="exact").fit(data[:700]).partial_fit(data[700:])
    whole = bigdr.KernelPCA(2, kernel="rbf", gamma=GAMMA, method="exact").fit(data)
    np.testing.assert_allclose(model.eigenvalues_, whole.eigenvalues_, rtol=1e-10)
    assert model.n_samples_seen_ == len(data)


def test_what_a_model_cannot_do_is_refused(data):
    exact = bigdr.KernelPCA(2, kernel="precomputed").fit(data @ data.T)
    with pytest.raises(ValueError, match="cannot be updated"):
        exact.partial_fit(data[:10] @ data.T)
    with pytest.raises(ValueError, match="fit_inverse_transform=True"):
        exact.inverse_transform(np.zeros((3, 2)))


@pytest.fixture(scope="module")
def noisy_circle():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 2 * np.pi, 300)
    clean = np.column_stack([np.cos(a), np.sin(a)])
    return clean + 0.1 * rng.standard_normal(clean.shape), clean


def test_rbf_preimage_is_the_textbook_fixed_point(noisy_circle):
    X, _ = noisy_circle
    gamma = 2.0
    model = bigdr.KernelPCA(4, kernel="rbf", gamma=gamma, method="exact").fit(X)
    rows = np.arange(0, 300, 15)
    Z = model.preimage(model.transform(X[rows]))
    # Dense textbook formulas (Mika et al. 1998): kernel, centring, projection, fixed point.
    n = len(X)
    K = np.exp(-gamma * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    J = np.eye(n) - 1.0 / n
    values, vectors = np.linalg.eigh(J @ K @ J)
    alpha = vectors[:, ::-1][:, :4] / np.sqrt(values[::-1][:4])  # <alpha, Kc alpha> = 1
    for z, i in zip(Z, rows):
        beta = (J @ K[:, i] - J @ K @ np.ones(n) / n) @ alpha  # the projection of phi(x_i)
        g = alpha @ beta
        g = g - g.mean() + 1.0 / n
        x = X[i].copy()  # the training row is the basis row nearest its own embedding
        for _ in range(500):
            w = g * np.exp(-gamma * ((X - x) ** 2).sum(1))
            x = w @ X / w.sum()
        np.testing.assert_allclose(z, x, atol=1e-6)
    lazy = model.preimage(da.from_array(model.transform(X[rows]), chunks=7))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), Z, atol=1e-12)


def test_preimage_nystroem_with_every_landmark_equals_exact(noisy_circle):
    X, _ = noisy_circle
    exact = bigdr.KernelPCA(3, kernel="rbf", gamma=2.0, method="exact").fit(X)
    approx = bigdr.KernelPCA(3, kernel="rbf", gamma=2.0, method="nystroem", landmarks=len(X)).fit(X)
    Y = exact.transform(X[:30])
    Ya = _aligned(approx.transform(X[:30]), Y)
    np.testing.assert_allclose(Ya, Y, atol=1e-6)
    np.testing.assert_allclose(approx.preimage(approx.transform(X[:30])), exact.preimage(Y), atol=1e-5)


def test_preimage_refuses_other_kernels(noisy_circle):
    X, _ = noisy_circle
    model = bigdr.KernelPCA(2, kernel="laplacian", gamma=1.0).fit(X)
    with pytest.raises(ValueError, match="rbf"):
        model.preimage(model.transform(X[:5]))


@pytest.mark.parametrize("solver", ["auto", "dense", "arpack", "randomized"])
def test_eigen_solvers_equal_scikit_learn(data, solver):
    """scikit-learn's eigen_solver names mean the same solver; each gives the dense answer."""
    X = data[:400]
    ref = SkKernelPCA(5, kernel="rbf", gamma=GAMMA, eigen_solver="dense").fit(X)
    model = bigdr.KernelPCA(5, kernel="rbf", gamma=GAMMA, method="exact", eigen_solver=solver, random_state=1)
    Y = model.fit_transform(X)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-6 if solver == "randomized" else 1e-9)
    Y_ref = ref.transform(X)
    np.testing.assert_allclose(_aligned(Y, Y_ref), Y_ref, atol=1e-5 * np.abs(Y_ref).max())


def test_sklearn_meanings_of_none_callables_and_zero_eigenvalues():
    rng = np.random.default_rng(0)
    X = rng.random((12, 4))
    # gamma=None is 1/n_features, as in scikit-learn
    assert bigdr.KernelPCA(2, kernel="rbf", gamma=None).fit(X).gamma_ == 0.25

    # a callable kernel of two rows, with its kernel_params
    def histogram(x, y, power):
        return np.minimum(x, y).sum() ** power

    model = bigdr.KernelPCA(3, kernel=histogram, kernel_params={"power": 2}).fit(X)
    ref = SkKernelPCA(3, kernel=histogram, kernel_params={"power": 2}, eigen_solver="dense").fit(X)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(np.abs(model.transform(X[:3])), np.abs(ref.transform(X[:3])), atol=1e-10)

    # rank-1 data: every eigenvalue but one is round-off, set to 0; removed on request or for n_components=None
    flat = np.outer(rng.random(6), [1.0, 2.0])
    assert bigdr.KernelPCA(3, kernel="linear").fit_transform(flat).shape == (6, 3)
    kept = bigdr.KernelPCA(3, kernel="linear", remove_zero_eig=True).fit(flat)
    assert kept.eigenvalues_.shape == (1,) and kept.transform(flat).shape == (6, 1)
    assert bigdr.KernelPCA(None, kernel="linear").fit_transform(flat).shape == (6, 1)


def test_kernels_that_are_not_positive_semi_definite():
    """A significant negative eigenvalue among those asked for is an error (scikit-learn's rule); a
    non-symmetric precomputed kernel whose centred form is symmetric is accepted, as scikit-learn does."""
    K = np.diag([5.0, 3.0, -2.0, 0.0])
    K -= K.mean(axis=0)
    K -= K.mean(axis=1)[:, None]
    with pytest.raises(ValueError, match="significant negative eigenvalues"):
        bigdr.KernelPCA(4, kernel="precomputed", eigen_solver="dense").fit(K)  # 5, 3, 0 (centring), -2
    assert bigdr.KernelPCA(2, kernel="precomputed").fit(K).eigenvalues_.min() > 0
    a = bigdr.KernelPCA(1, kernel="precomputed").fit([[1.0, 2.0], [3.0, 40.0]])
    b = bigdr.KernelPCA(1, kernel="precomputed").fit([[9.0, -9.0], [-9.0, 9.0]])
    np.testing.assert_array_equal(a.eigenvalues_, b.eigenvalues_)
    with pytest.raises(ValueError, match="Cannot fit_inverse_transform with a precomputed kernel"):
        bigdr.KernelPCA(2, kernel="precomputed", fit_inverse_transform=True).fit(K)


def test_a_precomputed_kernel_is_cut_as_pairwise_in_cross_validation():
    from sklearn.datasets import make_circles
    from sklearn.linear_model import Perceptron
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    X, y = make_circles(n_samples=300, factor=0.3, noise=0.05, random_state=0)
    pipe = Pipeline([("kpca", bigdr.KernelPCA(2, kernel="precomputed")), ("clf", Perceptron(max_iter=5))])
    search = GridSearchCV(pipe, {"clf__max_iter": [3, 5]}, cv=3).fit(rbf_kernel(X, gamma=2.0), y)
    assert search.best_score_ == 1


def test_defaults_are_scikit_learns():
    X = np.random.default_rng(5).random((60, 5))
    model, ref = bigdr.KernelPCA(), SkKernelPCA()
    assert (model.n_components, model.kernel, model.gamma) == (ref.n_components, ref.kernel, ref.gamma)
    Y, Y_ref = model.fit_transform(X), ref.fit_transform(X)
    assert Y.shape == Y_ref.shape == (60, 5)  # every nonzero component: rank 5
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(_aligned(Y, Y_ref), Y_ref, atol=1e-9)


@pytest.fixture(scope="module")
def sparse_rows():
    import scipy.sparse as sp

    fit = sp.random(400, 60, density=0.08, format="csr", random_state=1, dtype=np.float64)
    new = sp.random(30, 60, density=0.08, format="csr", random_state=2, dtype=np.float64)
    return fit, new


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly", "sigmoid", "cosine"])
def test_sparse_rows_give_scikit_learns_answer_without_densifying(sparse_rows, kernel, monkeypatch):
    import scipy.sparse as sp

    fit, new = sparse_rows
    ref = SkKernelPCA(4, kernel=kernel, gamma=GAMMA, eigen_solver="dense").fit(fit)
    model = bigdr.KernelPCA(4, kernel=kernel, gamma=GAMMA, method="exact")
    dense = sp.csr_matrix.toarray
    monkeypatch.setattr(sp.csr_matrix, "toarray", _refusing_rows(dense, fit.shape[1]))  # kernel blocks only
    Y = model.fit_transform(fit)
    assert sp.issparse(model.reference_rows_)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(_aligned(Y, ref.transform(fit)), ref.transform(fit), atol=1e-9)
    np.testing.assert_allclose(_aligned(model.transform(new), ref.transform(new)), ref.transform(new), atol=1e-9)


def _refusing_rows(toarray, width):
    def checked(self, *args, **kwargs):
        assert self.shape[1] != width, "rows were densified"
        return toarray(self, *args, **kwargs)

    return checked


@pytest.mark.parametrize("method", ["nystroem", "fourier"])
def test_sparse_approximations_equal_the_dense_ones(sparse_rows, method, tmp_path):
    fit, new = sparse_rows
    params = {"kernel": "rbf", "gamma": "scale", "method": method, "landmarks": 100, "n_fourier": 200}
    sparse, dense = bigdr.KernelPCA(3, **params).fit(fit), bigdr.KernelPCA(3, **params).fit(fit.toarray())
    assert sparse.gamma_ == pytest.approx(dense.gamma_, rel=1e-12)
    np.testing.assert_allclose(sparse.eigenvalues_, dense.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(sparse.transform(new), dense.transform(new.toarray()), atol=1e-9)
    sparse.save(tmp_path / "model")  # nystroem keeps its landmarks as CSR; they are saved as CSR
    loaded = bigdr.load(tmp_path / "model")
    # equal up to rounding: the reloaded arrays' alignment may pick another BLAS kernel (3e-16 seen)
    np.testing.assert_allclose(loaded.transform(new), sparse.transform(new), rtol=0, atol=1e-13)


def test_sparse_anndata_file_and_updates(sparse_rows, tmp_path):
    anndata = pytest.importorskip("anndata")
    fit, new = sparse_rows
    path = tmp_path / "cells.h5ad"
    anndata.AnnData(X=fit.astype(np.float32)).write_h5ad(path)
    from_file = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="exact").fit(str(path))
    in_memory = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="exact").fit(fit.astype(np.float32))
    np.testing.assert_allclose(from_file.eigenvalues_, in_memory.eigenvalues_, rtol=1e-9)
    updated = bigdr.KernelPCA(3, kernel="rbf", gamma=GAMMA, method="exact").fit(fit[:300]).partial_fit(fit[300:])
    np.testing.assert_allclose(updated.eigenvalues_, in_memory.eigenvalues_, rtol=1e-5)  # float32 file vs float64
    with pytest.raises(TypeError, match="sparse"):
        updated.partial_fit(new.toarray())
    with pytest.raises(NotImplementedError, match="sparse"):
        bigdr.KernelPCA(3, kernel="rbf", fit_inverse_transform=True).fit(fit)
