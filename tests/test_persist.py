import json

import numpy as np
import pytest
import zarr
from conftest import correlated

import bigdr
from bigdr import PCA


def _fitted(rng, **kw):
    X = correlated(rng, 500, 6)
    return PCA(3, **kw).fit(X), X


@pytest.mark.parametrize("solver", ["covariance", "tsqr", "randomized"])
def test_roundtrip_gives_the_same_model(tmp_path, rng, solver):
    model, X = _fitted(rng, svd_solver=solver, random_state=0, whiten=True)
    model.save(str(tmp_path / "m"))
    loaded = bigdr.load(str(tmp_path / "m"))
    assert type(loaded) is PCA and loaded.get_params() == model.get_params()
    for name in ("components_", "explained_variance_", "mean_", "singular_values_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
    assert loaded.n_components_ == 3 and loaded.svd_solver_ == solver
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


def test_loaded_model_continues_partial_fit(tmp_path, rng):
    X = correlated(rng, 1000, 5)
    PCA(2).partial_fit(X[:600]).save(str(tmp_path / "m"))
    resumed = bigdr.load(str(tmp_path / "m")).partial_fit(X[600:])
    np.testing.assert_allclose(resumed.components_, PCA(2).fit(X).components_, atol=1e-10)


def test_no_pickle_in_the_store(tmp_path, rng):
    model, _ = _fitted(rng)
    model.save(str(tmp_path / "m"))
    for f in (tmp_path / "m").rglob("*"):
        if f.is_file():
            assert b"\x80\x04\x95" not in f.read_bytes()  # pickle protocol 4 header


def test_missing_and_not_a_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="No saved model"):
        bigdr.load(str(tmp_path / "nothing"))
    zarr.create_array(str(tmp_path / "arr.zarr"), shape=(2, 2), dtype="f8")
    with pytest.raises(ValueError, match="not a saved bigdr model"):
        bigdr.load(str(tmp_path / "arr.zarr"))


def test_tampered_array_is_detected(tmp_path, rng):
    model, _ = _fitted(rng)
    model.save(str(tmp_path / "m"))
    z = zarr.open_array(str(tmp_path / "m" / "components_"), mode="r+")
    z[0, 0] = z[0, 0] + 1e-9
    with pytest.raises(ValueError, match="components_.*checksum"):
        bigdr.load(str(tmp_path / "m"))


def test_truncated_store_is_detected(tmp_path, rng):
    model, _ = _fitted(rng)
    model.save(str(tmp_path / "m"))
    for chunk in (tmp_path / "m" / "mean_" / "c").rglob("*"):
        if chunk.is_file():
            chunk.unlink()  # zarr would silently read the fill value
    with pytest.raises(ValueError, match="mean_"):
        bigdr.load(str(tmp_path / "m"))


def _edit_attributes(path, edit, resign=False):
    """Change the saved model's JSON attributes in place (as an attacker or a bad disk would)."""
    from bigdr.io.model import _meta_digest

    meta_file = path / "zarr.json"
    meta = json.loads(meta_file.read_text())
    edit(meta["attributes"])
    if resign:
        meta["attributes"]["sha256"] = _meta_digest(meta["attributes"])
    meta_file.write_text(json.dumps(meta))


def test_tampered_parameters_are_detected(tmp_path, rng):
    model, _ = _fitted(rng)
    model.save(str(tmp_path / "m"))
    _edit_attributes(tmp_path / "m", lambda a: a["params"].update(whiten=True))
    with pytest.raises(ValueError, match="parameters do not match"):
        bigdr.load(str(tmp_path / "m"))


def test_unknown_class_and_newer_format(tmp_path, rng):
    model, _ = _fitted(rng)
    model.save(str(tmp_path / "m"))
    _edit_attributes(tmp_path / "m", lambda a: a.update({"class": "os.system"}), resign=True)
    with pytest.raises(ValueError, match="unknown model class"):
        bigdr.load(str(tmp_path / "m"))
    _edit_attributes(tmp_path / "m", lambda a: a.update(format_version=99))
    with pytest.raises(ValueError, match="Upgrade bigdr"):
        bigdr.load(str(tmp_path / "m"))


def test_save_unfitted_or_existing(tmp_path, rng):
    with pytest.raises(ValueError, match="not fitted"):
        PCA().save(str(tmp_path / "m"))
    model, _ = _fitted(rng)
    model.save(str(tmp_path / "m"))
    with pytest.raises(FileExistsError):
        model.save(str(tmp_path / "m"))
    model.save(str(tmp_path / "m"), overwrite=True)


def test_a_faiss_model_saves_without_pickle_and_rebuilds_its_index(tmp_path, manifold_50d):
    X = manifold_50d
    model = bigdr.Isomap(n_components=2, neighbor_method="faiss", landmarks=100).fit(X[:1500])
    model.save(str(tmp_path / "m"))
    for f in (tmp_path / "m").rglob("*"):
        if f.is_file():
            assert b"\x80\x04\x95" not in f.read_bytes()  # no pickle, of the index or anything else
    loaded = bigdr.load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded.transform(X[1500:]), model.transform(X[1500:]), atol=1e-8)
