"""Diffusion maps and Laplacian eigenmaps of all rows from the partitioned graph and the blocked operator."""

import dask
import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone

import bigdr

#: With at most 3 cells every row is searched in every cell (n_probe 3), so a kd-tree per cell gives the exact graph.
CELLS = 3


@pytest.fixture(scope="module")
def in_process(swiss_roll_small):
    X, _ = swiss_roll_small
    models = {
        "diffusion": bigdr.DiffusionMap(n_components=3, landmarks=None, neighbor_method="kdtree"),
        "laplacian": bigdr.SpectralEmbedding(n_components=2, landmarks=None, neighbor_method="kdtree"),
    }
    return {name: (m, m.fit_transform(X)) for name, m in models.items()}


def _partitioned(reference):
    return clone(reference).set_params(landmarks="auto", partitions=CELLS)


@pytest.mark.parametrize("name", ["diffusion", "laplacian"])
def test_partitioned_fit_equals_the_in_process_fit(swiss_roll_small, in_process, name):
    X, _ = swiss_roll_small
    reference, Y_ref = in_process[name]
    model = _partitioned(reference)
    Y = model.fit_transform(da.from_array(X, chunks=700))
    assert isinstance(Y, da.Array) and model.mode_ == "partitioned"
    np.testing.assert_allclose(model.eigenvalues_, reference.eigenvalues_, atol=1e-8)
    Y = Y.compute()
    assert np.linalg.norm(Y - Y_ref) / np.linalg.norm(Y_ref) < 1e-4
    assert model.all_rows_epsilon_ == pytest.approx(reference.epsilon_, rel=1e-6)
    assert model.lobpcg_residual_ < 1e-4


def test_transform_is_the_landmark_model_mapped_onto_the_all_rows_map(swiss_roll_small, in_process, tmp_path):
    X, _ = swiss_roll_small
    model = _partitioned(in_process["diffusion"][0])
    Y = model.fit_transform(X)
    assert isinstance(Y, np.ndarray) and Y.shape == (len(X), 3)
    landmarks = model.reference_indices_
    np.testing.assert_array_equal(X[landmarks], model.reference_rows_)
    moved = model.transform(X)
    on_landmarks = np.linalg.norm(moved[landmarks] - Y[landmarks]) / np.linalg.norm(Y[landmarks])
    # The affine map was fitted on exactly these rows, so its residual is the one reported.
    assert on_landmarks == pytest.approx(model.landmark_residual_, rel=1e-6)
    assert 0 < model.landmark_residual_ < 0.2
    assert np.linalg.norm(moved - Y) / np.linalg.norm(Y) < 0.5
    model.save(tmp_path / "model.zarr")
    np.testing.assert_array_equal(bigdr.load(tmp_path / "model.zarr").transform(X[:200]), moved[:200])


def test_partitioned_fit_from_a_store_on_a_real_cluster(cluster_client, swiss_roll_small, in_process, tmp_path):
    X, _ = swiss_roll_small
    store = tmp_path / "roll.zarr"
    bigdr.write_zarr(da.from_array(X, chunks=(600, 3)), store)
    reference, Y_ref = in_process["diffusion"]
    with cluster_client.as_current(), dask.config.set(scheduler=cluster_client.get):
        model = _partitioned(reference)
        Y = model.fit_transform(store).compute()
    np.testing.assert_allclose(model.eigenvalues_, reference.eigenvalues_, atol=1e-8)
    assert np.linalg.norm(Y - Y_ref) / np.linalg.norm(Y_ref) < 1e-4


@pytest.mark.parametrize(
    "params, match",
    [
        ({"landmarks": 500}, "landmarks must be None or 'auto'"),
        ({"eigen_solver": "amg"}, "eigen_solver must be 'auto' or 'lobpcg'"),
    ],
)
def test_partitioned_refuses_what_it_cannot_do(swiss_roll_small, params, match):
    X, _ = swiss_roll_small
    with pytest.raises(ValueError, match=match):
        bigdr.DiffusionMap(partitions=2, **params).fit(X)


def test_partitioned_needs_more_rows_than_its_start(swiss_roll_small):
    X, _ = swiss_roll_small
    with pytest.raises(ValueError, match="set partitions=None"):
        bigdr.DiffusionMap(partitions=2, n_neighbors=15).fit(X[:60])


def test_a_partitioned_model_cannot_be_updated(swiss_roll_small, in_process):
    X, _ = swiss_roll_small
    model = _partitioned(in_process["laplacian"][0]).fit(X)
    with pytest.raises(ValueError, match="fitted with partitions"):
        model.partial_fit(X[:100])
