"""The 0.1 names still work for one release, with a warning that names the new place."""

import importlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import bigdr
from bigdr._deprecated import MOVED
from bigdr.io.model import _meta_digest


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_path_imports_the_new_module_with_a_warning(old):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    new = importlib.import_module(MOVED[old])
    assert module is new
    assert new.__spec__.name == MOVED[old]  # the module keeps its own spec (relative imports, reload)


def test_from_old_module_import_a_class():
    sys.modules.pop("bigdr.isomap", None)
    with pytest.warns(DeprecationWarning, match="bigdr.manifold.isomap"):
        from bigdr.isomap import Isomap
    assert Isomap is bigdr.Isomap
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new paths do not warn
        from bigdr.decomposition import PCA
        from bigdr.manifold import DiffusionMap, Isomap  # noqa: F811
    assert PCA is bigdr.PCA and DiffusionMap is bigdr.DiffusionMap


def test_a_renamed_class_is_found_under_its_old_name():
    for owner in (
        bigdr,
        importlib.import_module("bigdr.curves"),
        importlib.import_module("bigdr.curves.density_ridge"),
    ):
        with pytest.warns(DeprecationWarning, match="DensityRidge since bigdr 0.2"):
            assert owner.RidgeEstimator is bigdr.DensityRidge
    with pytest.raises(AttributeError):
        bigdr.curves.NoSuchThing  # noqa: B018


def test_a_model_saved_under_the_old_class_name_loads(tmp_path):
    X = np.random.default_rng(0).standard_normal((400, 2))
    model = bigdr.DensityRidge(n_queries=50, max_samples=400, random_state=0).fit(X)
    path = tmp_path / "ridge.zarr"
    model.save(str(path))
    meta_file = path / "zarr.json"
    doc = json.loads(meta_file.read_text())
    assert doc["attributes"]["class"] == "DensityRidge"
    doc["attributes"]["class"] = "RidgeEstimator"  # what bigdr 0.1 wrote, with its digest
    doc["attributes"]["sha256"] = _meta_digest(doc["attributes"])
    meta_file.write_text(json.dumps(doc))
    loaded = bigdr.load(str(path))
    assert type(loaded) is bigdr.DensityRidge
    np.testing.assert_array_equal(loaded.transform(X[:20]), model.transform(X[:20]))


def test_the_package_is_typed():
    assert (Path(bigdr.__file__).parent / "py.typed").exists()


@pytest.mark.parametrize(
    "cls, old, new, value",
    [
        ("Isomap", "graph_sample", "max_samples", 300),
        ("LocallyLinearEmbedding", "reference_size", "max_samples", 300),
        ("DensityRidge", "support_size", "max_samples", 300),
        ("LandmarkMDS", "n_landmarks", "landmarks", 40),
        ("KernelPCA", "n_landmarks", "landmarks", 40),
    ],
)
def test_a_renamed_parameter_still_works_with_a_warning(cls, old, new, value, tmp_path):
    from sklearn.datasets import make_swiss_roll

    X = make_swiss_roll(600, noise=0.05, random_state=0)[0]
    est = getattr(bigdr, cls)
    extra = {"landmarks": 100} if cls in ("Isomap", "LocallyLinearEmbedding") else {}
    extra |= {"n_queries": 100, "random_state": 0} if cls == "DensityRidge" else {}
    extra |= {"method": "nystroem"} if cls == "KernelPCA" else {}
    with pytest.warns(FutureWarning, match=f"{old}=...\\) is {new} since bigdr 0.2"):
        by_old = est(**{old: value}, **extra).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        by_new = est(**{new: value}, **extra).fit(X)
    np.testing.assert_array_equal(by_old.transform(X[:50]), by_new.transform(X[:50]))
    # a model saved by 0.1 carries the old name in its parameters: it loads under the new one, silently
    path = tmp_path / "model.zarr"
    by_new.save(str(path))
    doc = json.loads((path / "zarr.json").read_text())
    params = doc["attributes"]["params"]
    params[old] = params.pop(new)
    doc["attributes"]["sha256"] = _meta_digest(doc["attributes"])
    (path / "zarr.json").write_text(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        loaded = bigdr.load(str(path))
        np.testing.assert_array_equal(loaded.transform(X[:50]), by_new.transform(X[:50]))
    assert getattr(loaded, new) == value
