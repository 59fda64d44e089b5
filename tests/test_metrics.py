import dask.array as da
import numpy as np
import pytest
from sklearn.manifold import trustworthiness as sk_trustworthiness

import bigdr
from bigdr.metrics import continuity, evaluate, trustworthiness


@pytest.fixture(scope="module")
def held_out():
    """A 3-D curved sheet in 10-D and a PCA of it to 2-D: an embedding with some errors."""
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 3 * np.pi, 600)
    h = rng.uniform(0, 5, 600)
    Z = np.column_stack([t * np.cos(t), h, t * np.sin(t)]) + 0.05 * rng.standard_normal((600, 3))
    Q = np.linalg.qr(rng.standard_normal((10, 3)))[0]
    X = Z @ Q.T
    Y = bigdr.PCA(2).fit_transform(X)
    return X, np.asarray(Y)


@pytest.mark.parametrize("k", [1, 5, 12])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_trustworthiness_equals_scikit_learn(held_out, k, metric):
    X, Y = held_out
    assert trustworthiness(X, Y, n_neighbors=k, metric=metric) == pytest.approx(
        sk_trustworthiness(X, Y, n_neighbors=k, metric=metric), abs=1e-12
    )
    # continuity is trustworthiness with the spaces swapped
    assert continuity(X, Y, n_neighbors=k) == pytest.approx(sk_trustworthiness(Y, X, n_neighbors=k), abs=1e-12)


def test_measures_equal_zadu(held_out):
    zadu = pytest.importorskip("zadu")
    from zadu.measures import (
        local_continuity_meta_criteria,
        mean_relative_rank_error,
        spearman_rho,
        stress,
        trustworthiness_continuity,
    )

    X, Y = held_out
    X, Y = X[:300], Y[:300]  # pairs: 2,000 queries would take every row; here all 300 are in
    report = evaluate(X, Y, (5, 20), n_queries=None)
    for k in (5, 20):
        tc = trustworthiness_continuity.measure(X, Y, k=k)
        assert report.values["trustworthiness"][k] == pytest.approx(tc["trustworthiness"], abs=1e-12)
        assert report.values["continuity"][k] == pytest.approx(tc["continuity"], abs=1e-12)
        mr = mean_relative_rank_error.measure(X, Y, k=k)
        assert report.values["mrre_false"][k] == pytest.approx(mr["mrre_false"], abs=1e-12)
        assert report.values["mrre_missing"][k] == pytest.approx(mr["mrre_missing"], abs=1e-12)
        lc = local_continuity_meta_criteria.measure(X, Y, k=k)
        assert report.values["lcmc"][k] == pytest.approx(lc["lcmc"], abs=1e-12)
    # stress and Spearman: ZADU on the same query groups' pairs, one group at a time
    from bigdr.metrics._measures import pair_measures

    got = pair_measures(X, Y, 1)
    assert got["stress"][0] == pytest.approx(stress.measure(X, Y)["stress"], rel=1e-10)
    assert got["shepard_spearman"][0] == pytest.approx(spearman_rho.measure(X, Y)["spearman_rho"], rel=1e-10)
    assert zadu is not None


def test_linear_subspace_scores_one_and_random_scores_chance():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((800, 2)) @ rng.standard_normal((2, 6))  # a plane in 6-D
    Y = bigdr.PCA(2).fit_transform(X)
    r = evaluate(X, np.asarray(Y), (5, 20), n_queries=None)
    for k in (5, 20):
        for m in ("trustworthiness", "continuity", "knn_jaccard", "q_nx", "r_nx", "mrre_false"):
            assert r.values[m][k] == pytest.approx(1.0, abs=1e-12)
        assert r.values["b_nx"][k] == 0
    assert r.auc == pytest.approx(1.0, abs=1e-12)
    rand = evaluate(X, rng.standard_normal((800, 2)), (5, 20), n_queries=None)
    for k in (5, 20):
        # chance: trustworthiness about 0.5, Q_NX about K / (n - 1), R_NX about 0
        assert abs(rand.values["trustworthiness"][k] - 0.5) < 0.05
        assert abs(rand.values["q_nx"][k] - k / 799) < 0.02
        assert abs(rand.values["r_nx"][k]) < 0.02


def test_sampled_estimates_cover_the_exact_value(held_out):
    X, Y = held_out
    exact = evaluate(X, Y, (5, 20), n_queries=None, distances=False)
    inside = {m: 0 for m in ("trustworthiness", "continuity", "knn_jaccard", "r_nx")}
    seeds = 20
    for seed in range(seeds):
        s = evaluate(X, Y, (5, 20), n_queries=150, random_state=seed, distances=False)
        assert s.n_queries == 150 and not s.exact
        for m in inside:
            inside[m] += abs(s.values[m][20] - exact.values[m][20]) <= 2 * s.errors[m][20]
    assert all(v >= 0.8 * seeds for v in inside.values()), inside


def test_results_do_not_depend_on_chunking_or_input_kind(held_out, tmp_path):
    X, Y = held_out
    a = evaluate(X, Y, (3, 10), n_queries=200, random_state=3)
    b = evaluate(da.from_array(X, chunks=(77, 4)), da.from_array(Y, chunks=(150, 2)), (3, 10), n_queries=200,
                 random_state=3)  # fmt: skip
    path = str(tmp_path / "y.zarr")
    bigdr.io.write_zarr(da.from_array(Y, chunks=100), path)
    c = evaluate(X, path, (3, 10), n_queries=200, random_state=3)
    for r in (b, c):
        assert r.values == a.values and r.errors == a.errors and r.pairs == a.pairs


def test_ties_go_to_the_lower_row_as_a_stable_sort():
    # Points on a line with duplicates: many equal distances, ranked as ZADU's stable sort ranks them
    # (scikit-learn's argsort is not stable, so its value depends on how ties fall).
    pytest.importorskip("zadu")
    from zadu.measures import trustworthiness_continuity

    X = np.repeat(np.arange(20.0), 3)[:, None] * np.ones((1, 2))
    Y = np.sqrt(X[:, :1]) * 2
    r = evaluate(X, Y, 4, n_queries=None, distances=False)
    tc = trustworthiness_continuity.measure(X, Y, k=4)
    assert r.values["trustworthiness"][4] == pytest.approx(tc["trustworthiness"], abs=1e-12)
    assert r.values["continuity"][4] == pytest.approx(tc["continuity"], abs=1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"Y": np.zeros((99, 2))}, "99 rows and the data 100"),
        ({"n_neighbors": 50}, "less than half"),
        ({"n_neighbors": 0}, "positive integers"),
        ({"n_queries": 1}, "n_queries"),
        ({"metric": "manhattan"}, "metric must be"),
    ],
)
def test_bad_input(kwargs, match):
    rng = np.random.default_rng(0)
    args = {"X": rng.standard_normal((100, 3)), "Y": rng.standard_normal((100, 2)), "n_neighbors": 5, **kwargs}
    with pytest.raises(ValueError, match=match):
        evaluate(**args)


def test_coranking_block_holds_the_shared_neighbours(held_out):
    X, Y = held_out
    r = evaluate(X, Y, (5, 20), n_queries=None, distances=False)
    Q = np.asarray(r.coranking)
    assert Q.shape == (20, 20)
    # pairs with both ranks <= K are Q_NX(K) * K per query
    for k in (5, 20):
        assert Q[:k, :k].sum() == round(r.values["q_nx"][k] * k * len(X))
    # a perfect embedding puts every pair on the diagonal
    perfect = np.asarray(evaluate(X, X, 10, n_queries=None, distances=False).coranking)
    assert np.trace(perfect) == perfect.sum() == 10 * len(X)


def test_sparse_data_is_refused_with_the_way_out():
    import scipy.sparse as sp

    X = sp.random(200, 50, density=0.1, format="csr", random_state=0)
    with pytest.raises(TypeError, match="X is sparse.*PCA or TruncatedSVD"):
        evaluate(X, np.zeros((200, 2)), 5)


def test_nan_in_either_is_refused():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((100, 3)), rng.standard_normal((100, 2))
    Y[57, 1] = np.nan
    with pytest.raises(ValueError, match="(?i)row 57"):
        evaluate(X, Y, 5)
    # lazily read rows are checked in the passes, block by block (bigdr.as_array's check)
    with pytest.raises(ValueError, match="(?i)row 57"):
        evaluate(da.from_array(X, chunks=30), da.from_array(Y, chunks=30), 5)
    Y[57, 1] = 0
    X[3, 0] = np.inf
    with pytest.raises(ValueError, match="(?i)row 3,"):
        evaluate(da.from_array(X, chunks=30), da.from_array(Y, chunks=30), 5, n_queries=10)


def test_assess_scores_a_fitted_model_on_its_own_embedding(held_out):
    from bigdr.metrics import assess

    X, _ = held_out
    model = bigdr.Isomap(n_components=2, n_neighbors=10).fit(X)
    report = assess(model, da.from_array(X, chunks=200), (5, 10), n_queries=None)
    direct = evaluate(X, np.asarray(model.transform(X)), (5, 10), n_queries=None)
    assert report.values == direct.values and report.exact


def test_evaluate_command(held_out, tmp_path, capsys):
    import json

    from bigdr.cli.main import main

    X, Y = held_out
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    np.save(tmp_path / "r.npy", np.random.default_rng(0).standard_normal(Y.shape))
    out = tmp_path / "q.json"
    args = [str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), str(tmp_path / "r.npy"), "--k", "5,20"]
    png = tmp_path / "q.png"
    assert main(["evaluate", *args, "--json", str(out), "--plot", str(png), "--no-progress"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not list(tmp_path.glob(".*partial*"))
    text = capsys.readouterr().out
    assert "trustworthiness" in text and "Ranked by the area under R_NX" in text
    got = json.load(open(out))["embeddings"][str(tmp_path / "y.npy")]
    assert got["values"]["trustworthiness"]["20"] == evaluate(X, Y, (5, 20)).values["trustworthiness"][20]
    # a JSON file bigdr wrote is replaced only with --overwrite; another file never
    assert main(["evaluate", *args[:2], "--k", "5", "--json", str(out), "--no-progress"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["evaluate", *args[:2], "--k", "5", "--json", str(out), "--overwrite", "--no-progress"]) == 0
    other = tmp_path / "notes.json"
    other.write_text('{"mine": 1}')
    assert main(["evaluate", *args[:2], "--k", "5", "--json", str(other), "--overwrite", "--no-progress"]) == 2
    assert json.load(open(other)) == {"mine": 1}
    # the spelling: --compare E2 ... ranks more embeddings beside the first, as extra positionals do
    plain, again = tmp_path / "plain.json", tmp_path / "again.json"
    assert main(["evaluate", *args, "--json", str(plain), "--no-progress"]) == 0
    compare = [*args[:2], "--compare", args[2], "--k", "5,20", "--json", str(again), "--no-progress"]
    assert main(["evaluate", *compare]) == 0
    assert json.load(open(again))["embeddings"] == json.load(open(plain))["embeddings"]
    assert "Ranked by the area under R_NX" in capsys.readouterr().out
    np.save(tmp_path / "short.npy", Y[:-1])
    assert main(["evaluate", str(tmp_path / "x.npy"), str(tmp_path / "short.npy"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "rows" in err and "Traceback" not in err


def test_on_a_cluster_equals_threads(cluster_client, held_out, tmp_path):
    import dask

    X, Y = held_out
    path = str(tmp_path / "y.zarr")
    bigdr.io.write_zarr(da.from_array(Y, chunks=150), path)
    local = evaluate(da.from_array(X, chunks=200), path, (5, 20), n_queries=300, random_state=1)
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        remote = evaluate(da.from_array(X, chunks=200), path, (5, 20), n_queries=300, random_state=1)
    assert remote.values == local.values and remote.errors == local.errors and remote.pairs == local.pairs


def test_anndata_file_and_its_obsm(held_out, tmp_path):
    anndata = pytest.importorskip("anndata")

    X, Y = held_out
    path = str(tmp_path / "cells.h5ad")
    anndata.AnnData(X=X.astype(np.float32), obsm={"X_emb": Y}).write_h5ad(path)
    got = evaluate(path, bigdr.as_array(path, dataset="obsm/X_emb"), (5, 20), n_queries=None, distances=False)
    want = evaluate(X.astype(np.float32), Y, (5, 20), n_queries=None, distances=False)
    assert got.values == want.values
