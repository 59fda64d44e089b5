"""TruncatedSVD (latent semantic analysis) against scikit-learn's and an exact SVD, sparse and dense."""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import counted_blocks
from sklearn.decomposition import TruncatedSVD as SkTruncatedSVD

import bigdr
from bigdr.exceptions import ConvergenceWarning


def documents(n=3000, p=400, topics=5, seed=0):
    """TF-IDF-like: words drawn from a few topics, sparse, with a gap after ``topics`` singular values."""
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(topics, 0.2), size=n)
    words = rng.dirichlet(np.full(p, 0.05), size=topics)
    counts = rng.poisson(30 * weights @ words)
    tf = sp.csr_matrix(counts.astype(float))
    idf = np.log((1 + n) / (1 + (counts > 0).sum(axis=0))) + 1
    X = sp.csr_matrix(tf.multiply(idf[None, :]))
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    return sp.csr_matrix(X.multiply(1 / np.maximum(norms, 1e-12)[:, None]))


def angle(A, B):
    Qa, Qb = np.linalg.qr(A.T)[0], np.linalg.qr(B.T)[0]
    return float(np.arcsin(min(1.0, np.linalg.norm(Qb - Qa @ (Qa.T @ Qb), 2))))


@pytest.fixture(scope="module")
def data():
    X = documents()
    _, s, Vt = np.linalg.svd(X.toarray(), full_matrices=False)
    assert s[4] / s[5] > 1.5  # a gap after the topics
    return X, s, Vt


@pytest.mark.parametrize("algorithm", ["covariance", "arpack", "randomized"])
def test_equals_an_exact_svd_and_scikit_learn(data, algorithm):
    X, s, Vt = data
    kw = {"n_iter": 20} if algorithm == "randomized" else {}
    model = bigdr.TruncatedSVD(5, algorithm=algorithm, random_state=0, **kw).fit(X)
    tol = 1e-6 if algorithm == "randomized" else 1e-10
    assert angle(model.components_, Vt[:5]) <= tol
    np.testing.assert_allclose(model.singular_values_, s[:5], rtol=tol)
    ref = SkTruncatedSVD(5, algorithm="arpack", random_state=0).fit(X)
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=max(tol, 1e-9))
    np.testing.assert_allclose(model.explained_variance_ratio_, ref.explained_variance_ratio_, rtol=max(tol, 1e-9))
    Y, Yref = model.transform(X), ref.transform(X)
    assert isinstance(Y, np.ndarray)
    np.testing.assert_allclose(np.abs(Y), np.abs(Yref), atol=1e-8 if algorithm != "randomized" else 1e-5)


def test_dense_sparse_and_lazy_inputs_agree(data):
    X, _, Vt = data
    dense = bigdr.TruncatedSVD(5, algorithm="covariance").fit(X.toarray())
    lazy = bigdr.TruncatedSVD(5, algorithm="covariance").fit(da.from_array(X, chunks=(700, X.shape[1]), asarray=False))
    assert angle(dense.components_, Vt[:5]) <= 1e-10 and angle(lazy.components_, Vt[:5]) <= 1e-10
    Y = lazy.transform(da.from_array(X, chunks=(700, X.shape[1]), asarray=False))
    assert isinstance(Y, da.Array)
    np.testing.assert_allclose(Y.compute(), dense.transform(X.toarray()), atol=1e-10)


def test_partial_fit_over_batches_equals_fit(data):
    X, s, Vt = data
    model = bigdr.TruncatedSVD(5)
    for start in range(0, X.shape[0], 800):
        model.partial_fit(X[start : start + 800])
    assert angle(model.components_, Vt[:5]) <= 1e-10
    np.testing.assert_allclose(model.singular_values_, s[:5], rtol=1e-10)
    assert model.n_samples_seen_ == X.shape[0]


def test_float32_stays_float32_and_inverse_transform(data):
    X, _, _ = data
    model = bigdr.TruncatedSVD(5, algorithm="covariance").fit(X.astype(np.float32))
    Y = model.transform(X.astype(np.float32))
    assert Y.dtype == np.float32 and model.components_.dtype == np.float32
    back = model.inverse_transform(Y)
    assert back.shape == X.shape


def test_the_randomized_regime_warns_when_it_cannot_reach_tol():
    X = sp.random(3000, 2000, density=0.01, format="csr", random_state=0)  # noise: a flat spectrum
    # 21 passes of 30 columns fill the Krylov space allowed; the 20-column block of cached data takes 31
    with pytest.warns(ConvergenceWarning, match="after 31 passes .* above tol"):
        bigdr.TruncatedSVD(30, n_oversamples=0, tol=1e-14, random_state=0).fit(X)


def test_randomized_reads_the_data_once_per_product(data, monkeypatch):
    """The column statistics (explained_variance_ratio_) share the first product's pass: n_iter + 1 reads
    of data too large to hold between passes (held, it is read once: tests/test_pca_sparse.py)."""
    import bigdr.blockwise.linalg as linalg

    X, _, _ = data
    monkeypatch.setattr(linalg, "HELD_BYTES_PER_THREAD", 0)
    blocks, reads = counted_blocks(X, 1000)
    model = bigdr.TruncatedSVD(5, n_iter=3, random_state=0).fit(blocks)
    assert sorted(reads) == sorted(list(range(0, X.shape[0], 1000)) * 4)
    total = model.explained_variance_ / model.explained_variance_ratio_  # from the carried column statistics
    np.testing.assert_allclose(total, X.toarray().var(axis=0).sum(), rtol=1e-12)


def test_bad_input_is_named(data, tmp_path):
    X, _, _ = data
    with pytest.raises(ValueError, match="in memory"):
        bigdr.TruncatedSVD(5, algorithm="arpack").fit(da.from_array(X.toarray(), chunks=500))
    with pytest.raises(ValueError, match="at most the number of features"):
        bigdr.TruncatedSVD(500).fit(X)
    with pytest.raises(ValueError, match="algorithm"):
        bigdr.TruncatedSVD(2, algorithm="lanczos").fit(X)
    with pytest.raises(ValueError, match="features"):
        bigdr.TruncatedSVD(2).fit(X).transform(X[:, :5])
