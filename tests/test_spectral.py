import dask
import dask.array as da
import numpy as np
import pytest
import scipy.linalg
from scipy.spatial import procrustes
from scipy.spatial.distance import cdist
from scipy.stats import spearmanr
from sklearn.manifold import SpectralEmbedding as SkSpectralEmbedding

from bigdr import DiffusionMap, SpectralEmbedding, diffusion_distance, load
from bigdr.exceptions import DisconnectedGraphWarning
from bigdr.graph.affinity import affinity, auto_epsilon
from bigdr.graph.knn import knn_graph
from bigdr.graph.operators import laplacian


@pytest.fixture(scope="module")
def roll():
    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(1500, noise=0.05, seed=4)
    return X.compute(), coords.compute()[:, 0]


def _dense_reference(X, k, alpha, n):
    """Eigenpairs of the diffusion kernel by the textbook formulas on dense matrices."""
    ind, dist = knn_graph(X, k).compute()
    dist = dist.astype(np.float64)
    W = affinity(ind, dist, "gaussian", auto_epsilon(dist), True).W.toarray()
    q = W.sum(axis=1)
    Wa = W / np.outer(q, q) ** alpha
    d = Wa.sum(axis=1)
    M = Wa / d[:, None]
    lam, V = scipy.linalg.eigh(Wa / np.sqrt(np.outer(d, d)))
    order = np.argsort(lam)[::-1][: n + 1]
    return M, lam[order], V[:, order] / np.sqrt(d)[:, None]


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0])
def test_diffusion_map_matches_dense_reference(roll, alpha):
    X, _ = roll
    M, lam, phi = _dense_reference(X, 10, alpha, 3)
    model = DiffusionMap(3, n_neighbors=10, alpha=alpha, t=2).fit(X)
    np.testing.assert_allclose(model.eigenvalues_, lam[1:], atol=1e-10)
    # Right eigenvectors of M, scaled by lambda^t, equal up to sign.
    for j in range(3):
        ref = lam[j + 1] ** 2 * phi[:, j + 1]
        got = model.embedding_[:, j]
        assert min(np.abs(got - ref).max(), np.abs(got + ref).max()) < 1e-8
    np.testing.assert_allclose(M @ model.eigenvectors_, model.eigenvectors_ * model.eigenvalues_, atol=1e-10)


@pytest.mark.parametrize("solver", ["arpack", "lobpcg", "amg"])
def test_iterative_solvers_agree_with_dense(roll, solver):
    X, _ = roll
    dense = DiffusionMap(2, n_neighbors=10, eigen_solver="dense").fit(X)
    it = DiffusionMap(2, n_neighbors=10, eigen_solver=solver).fit(X)
    np.testing.assert_allclose(it.eigenvalues_, dense.eigenvalues_, atol=1e-6)
    assert procrustes(dense.embedding_, it.embedding_)[2] < 1e-6


def test_first_coordinate_follows_the_roll(roll):
    X, t = roll
    Y = DiffusionMap(2, n_neighbors=10).fit_transform(X)
    assert abs(spearmanr(Y[:, 0], t).statistic) > 0.99


def test_theorem_4_8_diffusion_distance(roll):
    X = roll[0][:300]
    full = DiffusionMap(299, n_neighbors=10, t=3).fit(X)
    D = diffusion_distance(X, t=3, n_neighbors=10)
    np.testing.assert_allclose(cdist(full.embedding_, full.embedding_), D, atol=1e-6 * D.max())


def test_matches_sklearn_spectral_embedding(roll):
    X, _ = roll
    ref = SkSpectralEmbedding(2, affinity="nearest_neighbors", n_neighbors=10, random_state=0).fit_transform(X)
    ours = SpectralEmbedding(2, n_neighbors=9).fit_transform(X)  # scikit-learn counts the row itself
    assert procrustes(ref, ours)[2] < 1e-10


@pytest.mark.parametrize("kind", ["random_walk", "symmetric", "unnormalized"])
def test_laplacian_eigenmaps_against_dense_laplacians(roll, kind):
    X, _ = roll
    model = SpectralEmbedding(2, affinity="gaussian", n_neighbors=10, laplacian=kind).fit(X)
    ind, dist = knn_graph(X, 10).compute()
    dist = dist.astype(np.float64)
    W = affinity(ind, dist, "gaussian", auto_epsilon(dist), False).W
    if kind == "random_walk":  # the generalised problem L v = mu D v
        d = np.asarray(W.sum(axis=1)).ravel()
        mu = scipy.linalg.eigh(laplacian(W, "unnormalized").toarray(), np.diag(d), eigvals_only=True)
    else:
        mu = np.linalg.eigvalsh(laplacian(W, kind).toarray())
    np.testing.assert_allclose(model.eigenvalues_, mu[1:3], atol=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DiffusionMap(2, n_neighbors=10),
        lambda: DiffusionMap(2, n_neighbors=10, kernel="umap"),
        lambda: SpectralEmbedding(2, n_neighbors=10, laplacian="symmetric"),
        lambda: SpectralEmbedding(2, affinity="gaussian", n_neighbors=10, laplacian="unnormalized"),
    ],
)
def test_nystrom_transform_reproduces_training_rows(roll, make):
    X, _ = roll
    model = make().fit(X)
    again = model.transform(da.from_array(X, chunks=400)).compute()
    np.testing.assert_allclose(again, model.embedding_, atol=1e-9 * np.abs(model.embedding_).max())


def test_umap_kernel_is_scanpys_diffmap(roll):
    """scanpy's neighbors (its n_neighbors counts the cell itself) then tl.diffmap: the same eigenpairs.

    scanpy keeps the eigenvectors ``v`` of the symmetric conjugate; bigdr's are ``phi = v / sqrt(d)``
    with ``d`` the degrees after the alpha = 1 normalisation, computed here from scanpy's own graph.
    """
    import anndata
    import scanpy as sc

    X, _ = roll
    adata = anndata.AnnData(X=X.astype(np.float32))
    sc.pp.neighbors(adata, n_neighbors=11, use_rep="X")
    sc.tl.diffmap(adata, n_comps=4)
    model = DiffusionMap(3, n_neighbors=10, kernel="umap").fit(X)
    np.testing.assert_allclose(model.eigenvalues_, adata.uns["diffmap_evals"][1:], atol=2e-5)
    conn = adata.obsp["connectivities"].astype(np.float64)
    q = np.asarray(conn.sum(axis=1)).ravel()
    d = np.asarray((conn.multiply(1 / np.outer(q, q))).sum(axis=1)).ravel()
    theirs = adata.obsm["X_diffmap"][:, 1:] / np.sqrt(d)[:, None]
    ours = model.embedding_ / model.eigenvalues_
    cos = np.abs(np.sum(theirs * ours, axis=0)) / np.linalg.norm(theirs, axis=0) / np.linalg.norm(ours, axis=0)
    np.testing.assert_allclose(cos, 1.0, atol=1e-4)


def test_held_out_rows_and_landmark_mode(roll):
    X, t = roll
    full = DiffusionMap(2, n_neighbors=10).fit(X)
    part = DiffusionMap(2, n_neighbors=10).fit(X[:1300])
    assert procrustes(full.embedding_[1300:], part.transform(X[1300:]))[2] < 5e-3
    lm = DiffusionMap(2, n_neighbors=10, landmarks=700, random_state=3)
    Y = lm.fit_transform(da.from_array(X, chunks=500))
    assert lm.mode_ == "landmarks" and lm.reference_rows_.shape == (700, 3)
    assert isinstance(Y, da.Array) and procrustes(full.embedding_, Y.compute())[2] < 2e-2


def test_disconnected_graph_is_reported():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.standard_normal((300, 3)), rng.standard_normal((200, 3)) + 40])
    with pytest.warns(DisconnectedGraphWarning) as record:
        model = DiffusionMap(2, n_neighbors=8).fit(X)
    assert any("sizes 300, 200" in str(r.message) for r in record)
    assert model.n_graph_components_ == 2 and model.n_unit_eigenvalues_ == 2
    with pytest.raises(ValueError, match="2 connected components"):
        DiffusionMap(2, n_neighbors=8, on_disconnected="raise").fit(X)


@pytest.mark.parametrize("solver", ["dense", "arpack", "amg"])
def test_a_row_the_kernel_leaves_apart_counts_as_a_component(roll, solver):
    """An outlying row whose Gaussian kernel weights all fall below 1e-10 is connected in the kNN graph but
    not for any eigensolver: it is reported as a component, with the fix, and its null vector is found
    (ARPACK's single start vector missed it; on 100,000 cells' PCs with 163 such rows it did not stop)."""
    X = np.vstack([roll[0], roll[0][:1] + 40.0])
    bulk = DiffusionMap(2, n_neighbors=10, eigen_solver="dense").fit(roll[0])
    with pytest.warns(DisconnectedGraphWarning) as record:
        model = DiffusionMap(3, n_neighbors=10, eigen_solver=solver, epsilon=bulk.epsilon_).fit(X)
    assert any("2 connected components (sizes 1500, 1)" in str(r.message) and "kernel='umap'" in str(r.message)
               for r in record)  # fmt: skip
    assert model.n_graph_components_ == 2 and model.n_unit_eigenvalues_ == 2
    first = model.eigenvectors_[:, 0]  # the outlier's null vector: zero on the roll
    assert np.count_nonzero(first) == 1 and first[-1] != 0
    assert np.allclose(model.laplacian_eigenvalues_[1:], bulk.laplacian_eigenvalues_, rtol=1e-6)
    with pytest.raises(ValueError, match="2 connected components.*kernel='umap'"):
        DiffusionMap(3, n_neighbors=10, eigen_solver=solver, on_disconnected="raise").fit(X)


def test_duplicate_points(roll):
    X = roll[0][:1000]
    X = np.vstack([X, X[:50]])  # 50 exact duplicates: zero distances
    model = DiffusionMap(2, n_neighbors=10).fit(X)
    assert np.isfinite(model.embedding_).all() and model.n_unit_eigenvalues_ == 1
    # Copies are joined with weight K(0) = 1 and land together; not exactly, because a third row's k-th
    # neighbour slot can hold one copy but not the other (ties are broken by index).
    gap = np.abs(model.embedding_[1000:] - model.embedding_[:50]).max(axis=0)
    assert (gap < 0.01 * np.ptp(model.embedding_, axis=0)).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(epsilon=0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(alpha=1.5), "alpha"),
        (dict(alpha=-0.1), "alpha"),
        (dict(t=-1), "t must"),
        (dict(n_components=600), "n_components"),
        (dict(n_neighbors=0), "n_neighbors"),
        (dict(eigen_solver="x"), "eigen_solver"),
        (dict(landmarks=1), "landmarks"),
    ],
)
def test_bad_input(kwargs, match):
    X = np.random.default_rng(0).standard_normal((600, 3))
    with pytest.raises(ValueError, match=match):
        DiffusionMap(**kwargs).fit(X)


def test_nan_input_fails_clearly():
    X = np.random.default_rng(0).standard_normal((100, 3))
    X[5, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DiffusionMap().fit(X)


def test_persistence_round_trip(tmp_path, roll):
    X, _ = roll
    model = DiffusionMap(2, n_neighbors=10, landmarks=500).fit(X)
    model.save(str(tmp_path / "dm"))
    back = load(str(tmp_path / "dm"))
    np.testing.assert_array_equal(back.transform(X[:100]), model.transform(X[:100]))
    np.testing.assert_array_equal(back.eigenvalues_, model.eigenvalues_)


def test_distributed_cluster_gives_the_same_embedding(cluster_client, roll):
    X, _ = roll
    Xd = da.from_array(X, chunks=300)
    local = DiffusionMap(2, n_neighbors=10, landmarks=800).fit(Xd)
    Y_local = local.transform(Xd).compute(scheduler="threads")
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = DiffusionMap(2, n_neighbors=10, landmarks=800)
        Y_remote = remote.fit_transform(Xd).compute()
    np.testing.assert_allclose(remote.eigenvalues_, local.eigenvalues_, atol=1e-12)
    np.testing.assert_allclose(Y_remote, Y_local, atol=1e-10)


# -- partial_fit ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def roll8k():
    from bigdr.datasets import make_swiss_roll

    X, _ = make_swiss_roll(8000, noise=0.05, seed=5)
    return np.asarray(X.compute())


@pytest.mark.parametrize(
    "make",
    [
        lambda: DiffusionMap(2, landmarks=2500, eigen_solver="amg"),
        lambda: DiffusionMap(2, landmarks=None, eigen_solver="amg"),
        lambda: SpectralEmbedding(2, landmarks=None, eigen_solver="amg"),
    ],
    ids=["diffusion-landmarks", "diffusion-all-rows", "eigenmaps-all-rows"],
)
def test_partial_fit_agrees_with_a_fit_on_the_same_reference_set(roll8k, make):
    full = make().fit(roll8k)
    inc = make().fit(roll8k[:4000])
    for batch in np.split(roll8k[4000:], [1500, 1501]):  # a one-row batch too
        inc.partial_fit(batch)
    assert inc.n_samples_seen_ == 8000 and len(inc.drift_history_) == 3
    full_keys = np.sort(full.reference_keys_)
    np.testing.assert_array_equal(np.sort(inc.reference_keys_), full_keys)
    assert procrustes(inc.transform(roll8k), full.transform(roll8k))[2] < 1e-3


def test_partial_fit_aligns_saves_and_flags_drift(roll8k, tmp_path):
    model = DiffusionMap(2, landmarks=None, eigen_solver="amg").fit(roll8k[:5000])
    before = model.transform(roll8k[:2000])
    model.partial_fit(roll8k[5000:5500])
    after = model.transform(roll8k[:2000])
    assert np.abs(after - before).max() < 0.05 * np.ptp(before)  # aligned: earlier rows stay put
    # The alignment's target, the reference rows' stored coordinates, is what their transform gives.
    placed = model.reference_embedding_ @ model.rotation_ + model.offset_
    np.testing.assert_allclose(model.transform(model.reference_rows_), placed, atol=1e-8 * np.abs(placed).max())
    model.save(str(tmp_path / "m"))
    loaded = load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded.transform(roll8k[:300]), model.transform(roll8k[:300]), atol=1e-12)
    assert not model.drift_["refit_advised"]
    state = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(model).items() if k != "_ext"}
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(roll8k[:5, :2])
    assert all(
        np.array_equal(vars(model)[k], v) if isinstance(v, np.ndarray) else vars(model)[k] == v
        for k, v in state.items()
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # far rows also warn that they are extrapolated
        report = model.measure_drift(roll8k[:500] + np.array([0.0, 40.0, 0.0]))
    assert report["refit_advised"] and report["score"] == "nearest-reference distance"


def test_graph_solver_follows_the_manifolds_dimension(roll):
    """Lanczos where the small eigenvalues sit far from 0 (many dimensions), AMG-LOBPCG on a thin manifold."""
    from bigdr.core.sparse_eigen import graph_solver

    assert graph_solver(1500, 10, 2.0) == "dense"
    assert graph_solver(100_000, 15, 2.3) == "amg" and graph_solver(1_000_000, 14, 17.0) == "arpack"
    assert graph_solver(100_000, 15, float("nan")) == "amg"
    rng = np.random.default_rng(0)
    blobs = rng.standard_normal((2500, 20))  # a 20-dimensional cloud
    model = DiffusionMap(3, n_neighbors=10, kernel="umap").fit(blobs)
    assert model.eigen_solver_ == "arpack" and model.intrinsic_dimension_ > 10
    amg = DiffusionMap(3, n_neighbors=10, kernel="umap", eigen_solver="amg").fit(blobs)
    np.testing.assert_allclose(model.eigenvalues_, amg.eigenvalues_, atol=1e-6)
    from bigdr.datasets import make_swiss_roll

    thin = DiffusionMap(2, n_neighbors=10).fit(make_swiss_roll(3000, noise=0.05, seed=1)[0].compute())
    assert thin.eigen_solver_ == "amg" and thin.intrinsic_dimension_ < 3  # growth (300)^(1/2) = 17


def test_scikit_learns_spectral_embedding_parameters(roll):
    """gamma sets the Gaussian scale (exp(-gamma d^2)), eigen_tol the iterative solver's tolerance,
    n_jobs is accepted (dask schedules)."""
    X, _ = roll
    ours = SpectralEmbedding(2, affinity="gaussian", n_neighbors=10, epsilon=0.5, eigen_solver="amg").fit(X)
    theirs = SpectralEmbedding(2, affinity="gaussian", n_neighbors=10, gamma=2.0, eigen_solver="amg",
                               eigen_tol=1e-8, n_jobs=-1).fit(X)  # fmt: skip
    assert theirs.epsilon_ == pytest.approx(0.5)  # 1 / sqrt(2 gamma)
    np.testing.assert_allclose(np.abs(theirs.embedding_), np.abs(ours.embedding_), atol=1e-4)
    with pytest.raises(ValueError, match="gamma"):
        SpectralEmbedding(2, affinity="rbf", gamma=-1.0).fit(X)
    with pytest.raises(TypeError, match="eigen_tol"):
        SpectralEmbedding(2, eigen_tol="tight").fit(X)
    assert SpectralEmbedding(2, eigen_tol=0.0)._eigen_tol() == {"tol": 1e-12}
    with pytest.raises(ValueError, match="'rbf'"):
        SpectralEmbedding(2, affinity="cosine").fit(X)


def test_scikit_learns_whole_affinities(roll):
    """'rbf' (the dense kernel, gamma 1/p by default), 'precomputed' (dense or sparse), a callable and
    'precomputed_nearest_neighbors' embed as scikit-learn's do; float32 stays float32; there is no
    transform, and an asymmetric affinity is symmetrised with scikit-learn's warning."""
    import scipy.sparse as sp
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.neighbors import NearestNeighbors

    X = roll[0][:600]

    def same(a, b, atol=1e-6):
        np.testing.assert_allclose(np.abs(a), np.abs(b), atol=atol)

    ref = SkSpectralEmbedding(2, affinity="rbf", eigen_solver="arpack", random_state=0).fit(X)
    rbf = SpectralEmbedding(2, affinity="rbf").fit(X)
    np.testing.assert_allclose(rbf.affinity_matrix_, rbf_kernel(X, gamma=1 / 3), rtol=1e-12)
    same(rbf.embedding_, ref.embedding_)
    K = rbf_kernel(X, gamma=0.5)
    for given in (K, sp.csr_matrix(K)):
        before = given.copy()
        model = SpectralEmbedding(2, affinity="precomputed").fit(given)
        assert abs(given - before).max() == 0  # the caller's matrix is left as it was
        same(model.embedding_, SpectralEmbedding(2, affinity="rbf", gamma=0.5).fit_transform(X))
    same(SpectralEmbedding(2, affinity=lambda A: rbf_kernel(A, gamma=0.5)).fit_transform(X), model.embedding_)
    graph = NearestNeighbors(n_neighbors=10).fit(X).kneighbors_graph(X, mode="distance")
    ref = SkSpectralEmbedding(2, affinity="precomputed_nearest_neighbors", n_neighbors=8, eigen_solver="arpack",
                              random_state=0).fit(graph)  # fmt: skip
    ours = SpectralEmbedding(2, affinity="precomputed_nearest_neighbors", n_neighbors=8).fit(graph)
    assert abs(ours.affinity_matrix_ - ref.affinity_matrix_).max() == 0
    same(ours.embedding_, ref.embedding_)
    small = SpectralEmbedding(2, affinity="rbf").fit(X.astype(np.float32))
    assert small.embedding_.dtype == small.affinity_matrix_.dtype == np.float32
    with pytest.raises(ValueError, match="places no new rows"):
        small.transform(X[:5])
    with pytest.warns(UserWarning, match="not symmetric"):
        SpectralEmbedding(2, affinity="precomputed").fit(K + np.triu(K, 1))
    with pytest.raises(ValueError, match="square n x n matrix"):
        SpectralEmbedding(2, affinity="precomputed").fit(X)
    knn = SpectralEmbedding(2, n_neighbors=10).fit(X)
    assert sp.issparse(knn.affinity_matrix_) and knn.affinity_matrix_.shape == (600, 600)


def test_n_neighbors_none_is_scikit_learns_tenth_of_the_rows():
    X = np.random.default_rng(0).random((300, 5))
    model = SpectralEmbedding(n_neighbors=None)
    Y = model.fit_transform(X)
    assert model.n_neighbors_ == 29  # scikit-learn's 30 counts the row itself
    ref = SkSpectralEmbedding(random_state=0).fit_transform(X)
    for j in range(2):
        assert abs(np.corrcoef(Y[:, j], ref[:, j])[0, 1]) > 1 - 1e-9
