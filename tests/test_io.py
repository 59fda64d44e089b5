import dask.array as da
import h5py
import numpy as np
import pytest
import zarr

import bigdr
from bigdr import as_array, write_zarr
from bigdr.io import open_zarr


def test_numpy_int_becomes_float64_and_float32_stays(rng):
    X = rng.integers(0, 10, size=(100, 4))
    assert as_array(X).dtype == np.float64
    assert as_array(X.astype(np.float32)).dtype == np.float32
    assert as_array(X.astype(np.float16)).dtype == np.float32


def test_row_chunks_follow_byte_budget():
    X = da.zeros((100_000, 50), chunks=(1000, 10))
    A = as_array(X, chunk_bytes=8 * 50 * 25_000)
    assert A.chunks[1] == (50,)  # column-chunked input is rechunked to full rows
    assert set(A.chunks[0][:-1]) == {25_000}


def test_zarr_v2_and_v3_paths_align_with_storage_chunks(tmp_path, rng):
    X = rng.standard_normal((1000, 3))
    for fmt in (2, 3):
        path = tmp_path / f"x{fmt}.zarr"
        z = zarr.create_array(str(path), shape=X.shape, chunks=(70, 3), dtype="f8", zarr_format=fmt)
        z[:] = X
        A = as_array(str(path), chunk_bytes=200 * 3 * 8)
        assert all(c % 70 == 0 for c in A.chunks[0][:-1])
        np.testing.assert_array_equal(A.compute(), X)


def test_fsspec_url(tmp_path, rng):
    X = rng.standard_normal((50, 2))
    path = tmp_path / "u.zarr"
    zarr.create_array(str(path), shape=X.shape, chunks=(10, 2), dtype="f8")[:] = X
    np.testing.assert_array_equal(as_array(f"file://{path}").compute(), X)


def test_npy_is_memory_mapped_and_hdf5(tmp_path, rng):
    X = rng.standard_normal((300, 5))
    np.save(tmp_path / "x.npy", X)
    np.testing.assert_array_equal(as_array(str(tmp_path / "x.npy")).compute(), X)
    with h5py.File(tmp_path / "x.h5", "w") as f:
        f["data"] = X
        f["other"] = X[:, :2]
    np.testing.assert_array_equal(as_array(f"{tmp_path / 'x.h5'}:data").compute(), X)
    with pytest.raises(ValueError, match="name the one"):
        as_array(str(tmp_path / "x.h5"))


def test_group_picks_X_or_asks(tmp_path):
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    g.create_array("a", shape=(4, 2), dtype="f8")
    g.create_array("b", shape=(4, 2), dtype="f8")
    with pytest.raises(ValueError, match="dataset="):
        open_zarr(str(tmp_path / "g.zarr"))
    assert open_zarr(str(tmp_path / "g.zarr"), dataset="b").shape == (4, 2)


@pytest.mark.parametrize(
    "bad, exc, match",
    [
        (np.zeros(5), ValueError, "2-D"),
        (np.zeros((1, 3)), ValueError, "at least 2"),
        (np.zeros((5, 0)), ValueError, "0 feature"),
        (np.array([["a", "b"], ["c", "d"]]), TypeError, "non-numeric"),
        (np.zeros((3, 2), dtype=complex), ValueError, "Complex data not supported"),
        ("/nonexistent/store.zarr", FileNotFoundError, "No such"),
    ],
)
def test_bad_input_is_named(bad, exc, match):
    with pytest.raises(exc, match=match):
        as_array(bad)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_detected_lazily_inside_the_pass(value):
    X = np.ones((1000, 3))
    X[777, 1] = value
    A = as_array(da.from_array(X, chunks=(100, 3)))  # no error yet: checked in the pass
    with pytest.raises(ValueError, match="NaN or infinity"):
        A.sum().compute()


def test_rows_in_memory_gives_numpy_input_itself_after_the_check(rng):
    from bigdr.io import rows_in_memory

    X = rng.standard_normal((1000, 5)).astype(np.float32)
    A = as_array(X, chunk_bytes=4096)
    assert A.numblocks[0] > 1
    assert rows_in_memory(A) is X  # no copy of the rows
    assert rows_in_memory(as_array(X, check_finite=False)) is X
    Y = X.copy()
    Y[777, 2] = np.nan
    with pytest.raises(ValueError, match="row 777, column 2"):  # the check still runs, on its blocks
        rows_in_memory(as_array(Y, chunk_bytes=4096))


@pytest.mark.parametrize(
    "make", [np.asfortranarray, lambda X: X.astype(np.float16), lambda X: da.from_array(X, chunks=(300, 5))]
)
def test_rows_in_memory_computes_what_is_not_one_c_array(rng, make):
    from bigdr.io import rows_in_memory

    X = rng.standard_normal((1000, 5)).astype(np.float32)
    given = make(X)
    rows = rows_in_memory(as_array(given))
    assert rows is not given and rows.flags.c_contiguous
    np.testing.assert_allclose(rows, X, rtol=1e-3)
    np.testing.assert_array_equal(rows_in_memory(as_array(X)[:500]), X[:500])  # part of the array: computed


def test_all_rows_models_keep_numpy_input_without_a_copy(rng):
    X = rng.standard_normal((400, 3))
    assert bigdr.DiffusionMap(2, n_neighbors=10).fit(X).reference_rows_ is X


def test_huge_finite_values_are_not_flagged():
    X = np.full((10, 2), 1e308)  # the sum overflows; the values are finite
    assert np.isfinite(as_array(X).compute()).all()


def test_write_is_atomic_and_records_attrs(tmp_path, rng):
    X = da.from_array(rng.standard_normal((500, 4)), chunks=(128, 4))
    out = write_zarr(X, tmp_path / "out.zarr", attrs={"method": "test", "params": {"k": 2}})
    z = zarr.open(str(out), mode="r")
    np.testing.assert_array_equal(z[:], X.compute())
    assert z.attrs["method"] == "test" and z.attrs["bigdr_version"]
    with pytest.raises(FileExistsError, match="overwrite"):
        write_zarr(X, out)
    write_zarr(X * 2, out, overwrite=True)
    np.testing.assert_array_equal(zarr.open(str(out), mode="r")[:], 2 * X.compute())
    assert [p.name for p in tmp_path.iterdir()] == ["out.zarr"]


def test_failed_write_leaves_nothing(tmp_path):
    X = np.ones((1000, 3))
    X[900, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        write_zarr(as_array(da.from_array(X, chunks=(100, 3))), tmp_path / "out.zarr")
    assert list(tmp_path.iterdir()) == []


def test_failed_overwrite_keeps_the_old_store(tmp_path):
    good = np.ones((100, 2))
    write_zarr(good, tmp_path / "out.zarr")
    bad = good.copy()
    bad[50, 1] = np.inf
    with pytest.raises(ValueError):
        write_zarr(as_array(da.from_array(bad, chunks=(10, 2))), tmp_path / "out.zarr", overwrite=True)
    np.testing.assert_array_equal(zarr.open(str(tmp_path / "out.zarr"), mode="r")[:], good)
    assert [p.name for p in tmp_path.iterdir()] == ["out.zarr"]


def test_write_group(tmp_path, rng):
    a, b = rng.standard_normal((20, 3)), rng.standard_normal((20, 1))
    write_zarr({"X": a, "coords": b}, tmp_path / "g.zarr", attrs={"generator": "x"})
    np.testing.assert_array_equal(as_array(str(tmp_path / "g.zarr")).compute(), a)
    assert zarr.open(str(tmp_path / "g.zarr"), mode="r").attrs["generator"] == "x"


def test_write_rejects_urls(tmp_path):
    with pytest.raises(ValueError, match="URL"):
        write_zarr(np.ones((2, 2)), "s3://bucket/x.zarr")


def test_extra_row_bytes_shrinks_row_chunks():
    X = da.zeros((1_000_000, 4), chunks=(1_000_000, 4))
    plain = as_array(X, chunk_bytes=8 * 2**20)
    wide_output = as_array(X, chunk_bytes=8 * 2**20, extra_row_bytes=96)
    assert max(wide_output.chunks[0]) * (32 + 96) <= 8 * 2**20 < max(plain.chunks[0]) * (32 + 96)


def test_a_checked_array_is_not_checked_again():
    # Regression: estimators handed as_array's output to the sampling pass, which added a second
    # (and third) NaN/Inf check layer to the same graph.
    Xd = as_array(np.ones((1000, 3)))
    again = as_array(as_array(Xd, chunk_bytes=8000))
    checks = [k for k in again.__dask_graph__().layers if str(k).startswith("bigdr-check-finite-")]
    assert len(checks) == 1, checks
    bad = np.ones((1000, 3))
    bad[999, 2] = np.nan
    with pytest.raises(ValueError, match="row 999, column 2"):
        as_array(as_array(bad), chunk_bytes=8000).sum().compute()


def test_a_store_opened_by_as_array_is_opened_again_at_the_chunking_a_pass_asks_for(tmp_path):
    from bigdr.io.read import source_paths

    X = np.random.default_rng(0).standard_normal((40_000, 4))
    zarr.create_array(str(tmp_path / "x.zarr"), data=X, chunks=(1000, 4))
    wide = as_array(str(tmp_path / "x.zarr"))
    assert wide.numblocks[0] == 1  # the default budget holds every row in one chunk
    narrow = as_array(wide, chunk_bytes=8 * 4 * 5000)
    assert max(narrow.chunks[0]) == 5000 and narrow.name != wide.name
    assert wide.name not in narrow.__dask_graph__().layers  # merged from the storage chunks anew, not sliced
    np.testing.assert_array_equal(narrow.compute(), X)
    assert source_paths(narrow) == source_paths(wide)
    assert as_array(wide) is wide  # the same chunking: the same array
    assert as_array(wide[:30_000], chunk_bytes=8 * 4 * 5000).shape == (30_000, 4)  # a slice is not the store
    bigdr.append_zarr(X[:1000], str(tmp_path / "x.zarr"))  # the store grows: the array keeps its rows
    np.testing.assert_array_equal(as_array(wide, chunk_bytes=8 * 4 * 5000).compute(), X)
