"""The data-safety battery: every case of "nothing lost, nothing silent", through the CLI and the Python API.

Each test names the case it covers. The checks: exit code, one line on
stderr, no traceback, the input byte for byte unchanged, no stray file or
directory left, and the resumable partial where one is promised.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pytest
import zarr

import bigdr
import bigdr.datasets
import bigdr.io
from bigdr.cli import main
from bigdr.exceptions import ExtrapolationWarning, MemoryBudgetError, SparseGraphWarning
from bigdr.io import partial_path, write_zarr

# -- helpers -----------------------------------------------------------------------


def tree_digest(path: Path) -> str:
    """A digest of every file name and byte under ``path`` (a file or a directory)."""
    h = hashlib.sha256()
    paths = [path] if path.is_file() else sorted(p for p in path.rglob("*"))
    for p in paths:
        h.update(str(p.relative_to(path.parent)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def listing(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


def ctrl_c_works() -> None:
    """In a child: SIGINT as in a terminal (a shell's background job inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc: int, err: str, *needles: str) -> None:
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("bigdr: error:") and "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture(scope="module")
def good_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("safety") / "good.zarr"
    bigdr.datasets.generate("swiss-roll", path, 4000, noise=0.05, chunk_rows=1000)
    return path


@pytest.fixture
def work(tmp_path, good_store) -> Path:
    """A fresh directory holding a copy of the input store."""
    shutil.copytree(good_store, tmp_path / "good.zarr")
    return tmp_path


@pytest.fixture
def readonly_dir(tmp_path):
    """A directory that refuses writes even to root: a read-only tmpfs mount, else a path under a regular file."""
    target = tmp_path / "ro"
    target.mkdir()
    if os.geteuid() == 0 and shutil.which("mount"):
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)], capture_output=True)
        if done.returncode == 0:
            yield target
            subprocess.run(["umount", str(target)], check=False)
            return
    blocker = tmp_path / "regular-file"
    blocker.write_text("not a directory")
    yield blocker / "sub"


# -- 1. outputs that cannot destroy data -------------------------------------------


def test_overwrite_refuses_a_directory_bigdr_did_not_write(work, capsys):
    photos = work / "photos"
    photos.mkdir()
    (photos / "holiday.jpg").write_bytes(b"\xff\xd8 a photo")
    before = tree_digest(photos), tree_digest(work / "good.zarr")
    rc, _, err = cli(capsys, "fit-transform", work / "good.zarr", photos, "--overwrite")
    assert_one_line_error(rc, err, "not a zarr store written by bigdr", "--overwrite")
    assert (tree_digest(photos), tree_digest(work / "good.zarr")) == before
    with pytest.raises(ValueError, match="not a zarr store written by bigdr"):
        write_zarr(np.zeros((3, 2)), photos, overwrite=True)
    assert tree_digest(photos) == before[0]
    assert listing(work) == {"good.zarr", "photos"}


def test_overwrite_refuses_a_zarr_store_bigdr_did_not_write(work, capsys):
    theirs = work / "theirs.zarr"
    zarr.create_array(str(theirs), shape=(4, 2), chunks=(2, 2), dtype="f8")[...] = 1.0
    before = tree_digest(theirs)
    rc, _, err = cli(capsys, "fit-transform", work / "good.zarr", theirs, "--overwrite")
    assert_one_line_error(rc, err, "not a zarr store written by bigdr")
    assert tree_digest(theirs) == before


def test_output_that_is_the_input_is_refused_before_any_work(work, capsys, monkeypatch):
    reads = []
    monkeypatch.setattr(bigdr.PCA, "read_input", classmethod(lambda cls, *a: reads.append(a)))
    store = work / "good.zarr"
    before = tree_digest(store)
    for output in (store, store / "inside", work):  # the input, inside it, containing it
        rc, _, err = cli(capsys, "fit-transform", store, output, "--overwrite")
        assert_one_line_error(rc, err, "input")
    assert not reads and tree_digest(store) == before
    monkeypatch.undo()
    X = bigdr.io.as_array(str(store / "X"))
    with pytest.raises(ValueError, match="destroy the input"):
        write_zarr(X * 2, store / "X", overwrite=True)
    assert tree_digest(store) == before


def test_overwriting_a_regular_file_is_refused_and_a_png_leaves_no_hidden_copy(work, capsys):
    text = work / "f.txt"
    text.write_text("mine")
    rc, _, err = cli(capsys, "fit-transform", work / "good.zarr", text, "--overwrite")
    assert_one_line_error(rc, err, ".txt")
    assert text.read_text() == "mine"
    rc, _, err = cli(capsys, "fit-transform", work / "good.zarr", work / "e.zarr", "--scree", text, "--overwrite")
    assert_one_line_error(rc, err, ".png")
    args = ("fit-transform", work / "good.zarr", work / "e.zarr", "--scree", work / "s.png", "--save-model", work / "m")
    assert cli(capsys, *args)[0] == 0
    assert cli(capsys, *args, "--overwrite")[0] == 0  # replaces the embedding, model and PNG bigdr wrote
    assert listing(work) == {"good.zarr", "f.txt", "e.zarr", "s.png", "m"}  # no hidden .tmp or .partial copies


def test_outputs_must_be_distinct(work, capsys):
    rc, _, err = cli(capsys, "fit-transform", work / "good.zarr", work / "e.zarr", "--save-model", work / "e.zarr")
    assert_one_line_error(rc, err, "overlap")
    assert listing(work) == {"good.zarr"}


# -- 2. failures before the work ---------------------------------------------------


@pytest.mark.parametrize("which", ["embedding", "save-model", "scree", "generate"])
def test_read_only_location_fails_before_work_with_one_line(work, readonly_dir, capsys, monkeypatch, which):
    reads = []
    monkeypatch.setattr(bigdr.PCA, "read_input", classmethod(lambda cls, *a: reads.append(a)))
    store = work / "good.zarr"
    before, entries = tree_digest(store), listing(work)
    argv = {
        "embedding": ("fit-transform", store, readonly_dir / "e.zarr"),
        "save-model": ("fit-transform", store, work / "e.zarr", "--save-model", readonly_dir / "m"),
        "scree": ("fit-transform", store, work / "e.zarr", "--scree", readonly_dir / "s.png"),
        "generate": ("generate", "blobs", readonly_dir / "g.zarr", "-n", "100"),
    }[which]
    rc, _, err = cli(capsys, *argv)
    assert_one_line_error(rc, err, str(readonly_dir))
    assert not reads and tree_digest(store) == before and listing(work) == entries


def test_scree_in_a_missing_directory_publishes_nothing(work, capsys):
    rc, _, err = cli(
        capsys, "fit-transform", work / "good.zarr", work / "e.zarr", "--save-model", work / "m", "--scree",
        work / "nodir" / "s.png",
    )  # fmt: skip
    assert_one_line_error(rc, err, "nodir")
    assert listing(work) == {"good.zarr"}


def test_failure_while_writing_publishes_nothing_and_keeps_the_partial(work, capsys, monkeypatch):
    import bigdr.io.blocks as blocks_module

    calls = []

    def failing(start, *blocks, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(work / "e.zarr"))
        return original(start, *blocks, **kwargs)

    original = blocks_module._write_row_block
    monkeypatch.setattr(blocks_module, "_write_row_block", failing)
    blocks = ("--scheduler", "sync", "--chunk-mib", "0.03")  # four row blocks, written in order
    rc, _, err = cli(capsys, "fit-transform", work / "good.zarr", work / "e.zarr", "--save-model", work / "m", *blocks)
    assert_one_line_error(rc, err, "No space left on device", "--resume", str(partial_path(work / "e.zarr")))
    assert listing(work) == {"good.zarr", ".e.zarr.partial"}  # no model published, no temporary model left
    monkeypatch.undo()
    argv = ("fit-transform", work / "good.zarr", work / "e.zarr", "--save-model", work / "m", "--resume", *blocks)
    assert cli(capsys, *argv)[0] == 0 and listing(work) == {"good.zarr", "e.zarr", "m"}


def test_interrupted_generate_keeps_its_partial_and_resumes(tmp_path):
    out = tmp_path / "g.zarr"
    cmd = [sys.executable, "-m", "bigdr.cli", "generate", "spiked", str(out), "-n", "200000", "-p", "100",
           "--chunk-rows", "4096", "--no-progress"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stderr=subprocess.PIPE, text=True, env={**os.environ, "BIGDR_SCHEDULER": "sync"}, preexec_fn=ctrl_c_works
    )
    done_dir = partial_path(out) / ".bigdr-done"
    deadline = time.time() + 120
    while time.time() < deadline and not (done_dir.exists() and len(list(done_dir.iterdir())) > 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert str(partial_path(out)) in err and "--resume" in err and "Traceback" not in err
    assert not out.exists() and partial_path(out).exists()
    subprocess.run([*cmd, "--resume"], check=True, capture_output=True)
    assert not partial_path(out).exists()
    whole = tmp_path / "whole.zarr"
    bigdr.datasets.generate("spiked", whole, 200_000, n_features=100, chunk_rows=4096)
    np.testing.assert_array_equal(zarr.open(str(out))["X"][::997], zarr.open(str(whole))["X"][::997])


# -- 3. honest inputs ----------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_truncated_chunk_is_named_with_its_rows(tmp_path, capsys, zarr_format):
    store = tmp_path / "in.zarr"
    arr = zarr.create_array(str(store), shape=(4000, 3), chunks=(1000, 3), dtype="f8", zarr_format=zarr_format)
    arr[...] = np.random.default_rng(0).standard_normal((4000, 3))
    key = arr.metadata.encode_chunk_key((2, 0))
    chunk = store / key
    chunk.write_bytes(chunk.read_bytes()[:20])
    rc, _, err = cli(capsys, "fit-transform", store, tmp_path / "e.zarr")
    assert_one_line_error(rc, err, key, "rows 2000 to 2999", str(store))
    assert listing(tmp_path) == {"in.zarr"}
    with pytest.raises(ValueError, match="rows 2000 to 2999"):
        bigdr.PCA(2).fit(str(store))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_missing_chunk_is_refused_unless_allowed(tmp_path, capsys, zarr_format):
    store = tmp_path / "in.zarr"
    arr = zarr.create_array(str(store), shape=(4000, 3), chunks=(1000, 3), dtype="f8", zarr_format=zarr_format)
    arr[...] = np.random.default_rng(0).standard_normal((4000, 3))
    (store / arr.metadata.encode_chunk_key((1, 0))).unlink()
    rc, _, err = cli(capsys, "fit-transform", store, tmp_path / "e.zarr")
    assert_one_line_error(rc, err, "lacks 1 of its 4 chunk files", "rows 1000 to 1999", "--allow-missing-chunks")
    assert listing(tmp_path) == {"in.zarr"}
    with pytest.raises(ValueError, match="allow_missing_chunks=True"):
        bigdr.PCA(2).fit(str(store))
    rc, _, err = cli(capsys, "fit-transform", store, tmp_path / "e.zarr", "--allow-missing-chunks")
    assert rc == 0 and "1 of the 4 chunks" in err
    with dask.config.set({"bigdr.allow-missing-chunks": True}), pytest.warns(UserWarning, match="1 of the 4"):
        bigdr.PCA(2).fit(str(store))


def test_bigdr_stores_write_every_chunk(tmp_path):
    out = write_zarr(da.zeros((4000, 3), chunks=(1000, 3)), tmp_path / "z.zarr", chunk_rows=1000)
    assert bigdr.io.missing_chunks(zarr.open(str(out))) == []  # zero chunks are written too


@pytest.mark.parametrize("solver", ["covariance", "tsqr", "randomized"])
def test_nan_error_names_the_global_row(tmp_path, solver):
    X = np.random.default_rng(0).standard_normal((30_000, 5))
    X[29_990, 3] = np.nan
    with dask.config.set({"bigdr.chunk-bytes": 2**16}), pytest.raises(ValueError, match="row 29990, column 3"):
        bigdr.PCA(2, svd_solver=solver).fit(X)
    write_zarr(da.from_array(X, chunks=(4000, 5)), tmp_path / "nan.zarr")
    with pytest.raises(ValueError, match="row 29990, column 3"):
        bigdr.GaussianRandomProjection(2).fit_transform(str(tmp_path / "nan.zarr")).compute()


# -- 4. memory predicted, not discovered --------------------------------------------


def test_large_neighbour_graph_is_refused_up_front(tmp_path, capsys):
    X = np.random.default_rng(0).standard_normal((20_000, 3))
    t0 = time.perf_counter()
    with dask.config.set({"bigdr.memory-limit": "4GiB"}), pytest.raises(MemoryBudgetError, match="n_neighbors"):
        bigdr.Isomap(n_neighbors=5000).fit(X)
    assert time.perf_counter() - t0 < 10  # refused before the graph, which would take minutes
    np.save(tmp_path / "x.npy", X)
    rc, _, err = cli(
        capsys, "fit-transform", tmp_path / "x.npy", tmp_path / "e.zarr", "--method", "isomap", "--n-neighbors",
        "5000", "--memory-limit", "4GiB",
    )  # fmt: skip
    assert_one_line_error(rc, err, "--n-neighbors", "--memory-limit none")
    rc, out, _ = cli(
        capsys, "fit-transform", tmp_path / "x.npy", tmp_path / "e.zarr", "--method", "isomap", "--n-neighbors",
        "5000", "--dry-run",
    )  # fmt: skip
    assert rc == 0 and "estimated peak memory: about" in out and "nothing was written" in out
    assert listing(tmp_path) == {"x.npy"}


def test_fit_over_a_2gb_worker_limit_is_refused_not_killed():
    from distributed import Client, LocalCluster

    X = np.random.default_rng(0).standard_normal((20_000, 3))
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, memory_limit="2GB", host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster),
    ):  # fmt: skip
        with pytest.raises(MemoryBudgetError, match="smallest worker's memory limit"):
            bigdr.Isomap(n_neighbors=3000).fit(X)  # about 3 GiB of neighbour graph
        assert bigdr.Isomap(n_neighbors=10).fit(X[:3000]).embedding_.shape == (3000, 2)


# -- 5. a cluster that cannot trap a script ----------------------------------------


def test_local_cluster_without_main_guard_says_what_to_do(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np, bigdr
            X = np.random.default_rng(0).standard_normal((100, 3))
            with bigdr.use_scheduler("local-cluster"):
                bigdr.PCA(2).fit(X)
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr.splitlines()[-1]
    assert "Nanny failed to start" not in done.stderr and len(done.stderr.splitlines()) < 15


# -- 6. honest results --------------------------------------------------------------


def product_of_rolls(n: int, seed: int = 0) -> np.ndarray:
    from bigdr.datasets import make_swiss_roll

    a, _ = make_swiss_roll(n, seed=2 * seed)
    b, _ = make_swiss_roll(n, seed=2 * seed + 1)
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((6, 6)))[0]  # rotated: no axis is special
    return np.hstack([np.asarray(a), np.asarray(b)]) @ Q.T


def test_isomap_sample_grows_with_the_manifold_dimension_and_warns_when_too_small(monkeypatch):
    import bigdr.core.dimension as dimension
    import bigdr.manifold.isomap as isomap

    # The rule at a scale a test can afford: 100 rows resolve a 2-D manifold.
    monkeypatch.setattr(isomap, "GRAPH_ALL_MAX", 2000)
    monkeypatch.setattr(isomap, "DEFAULT_GRAPH_SAMPLE", 1000)
    monkeypatch.setattr(dimension, "NEED_BASE", 100)
    X4 = product_of_rolls(12_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparseGraphWarning)
        model = bigdr.Isomap(4).fit(X4)
    assert 3.5 < model.intrinsic_dimension_ < 5
    assert len(model.reference_rows_) > 2000  # grew from 1000 to what a 4-D manifold needs
    with pytest.warns(SparseGraphWarning, match="dimensional"):
        bigdr.Isomap(4, max_samples=1000).fit(X4)
    roll = np.asarray(bigdr.datasets.make_swiss_roll(12_000, noise=0.05)[0])
    flat = bigdr.Isomap(2).fit(roll)
    assert len(flat.reference_rows_) == 1000 and flat.intrinsic_dimension_ < 3  # a 2-D roll keeps the default


def test_the_sample_check_measures_the_gain_from_half_the_sample_to_all():
    from bigdr.metrics._sample import sample_check

    rng = np.random.default_rng(0)
    held = rng.standard_normal((3000, 5))
    same = sample_check(held, held[:, :2], held[:, :2], 10, 500)
    assert same.gain == 0 and same.error == 0 and not same.rising and same.n_queries == 1000 and same.n_rows == 500
    noise = rng.standard_normal((3000, 2))  # the fit on half the sample places rows at random
    worse = sample_check(held, held[:, :2], noise, 10, 500)
    assert worse.rising and abs(worse.half) < 0.02 and worse.gain == pytest.approx(worse.full - worse.half)
    assert worse.gain > 10 * worse.error
    assert sample_check(held, held[:, :2], np.full((3000, 2), np.nan), 10, 500) is None  # nothing to compare


def test_a_roll_sampled_densely_enough_does_not_warn(tmp_path):
    roll = np.asarray(bigdr.datasets.make_swiss_roll(12_000, noise=0.05)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparseGraphWarning)
        model = bigdr.Isomap(2, max_samples=4000, check_sample=True).fit(roll)
    check = model.sample_check_
    assert model.mode_ == "sampled" and check["n_rows"] == 4000 and check["n_held"] == 8000
    assert not check["rising"] and check["full"] > 0.5 and abs(check["gain"]) < 0.05, check
    assert bigdr.Isomap(2, max_samples=4000).fit(roll).sample_check_ is None  # off by default
    path = tmp_path / "checked.bigdr"
    model.save(path)
    assert bigdr.load(path).sample_check_ == check  # kept, as JSON, by a saved model


def test_the_sample_check_warns_where_halving_the_sample_loses_structure(monkeypatch):
    """The check's own decision, on a fit whose half-sample refit is made to lose the structure."""
    import bigdr.metrics._sample as sample

    roll = np.asarray(bigdr.datasets.make_swiss_roll(12_000, noise=0.05)[0])
    real = bigdr.Isomap.transform

    def scrambled(model, X):  # the fit on half the sample places rows at random
        Y = real(model, X)
        return np.random.default_rng(0).permutation(Y) if len(model.reference_rows_) == 2000 else Y

    monkeypatch.setattr(bigdr.Isomap, "transform", scrambled)
    with pytest.warns(SparseGraphWarning, match=r"R_NX\(10\)"):
        model = bigdr.Isomap(2, max_samples=4000, check_sample=True).fit(roll)
    check = model.sample_check_
    assert check["rising"] and check["gain"] > sample.MIN_GAIN and check["full"] > 0.5 and abs(check["half"]) < 0.05


def slowly_decaying(n: int) -> np.ndarray:
    X = np.random.default_rng(0).standard_normal((n, 60)) / np.sqrt(np.arange(1, 61))
    sq = (X * X).sum(1)
    D = np.sqrt(np.maximum(sq[:, None] + sq[None] - 2 * X @ X.T, 0))
    np.fill_diagonal(D, 0.0)
    return (D + D.T) / 2


def test_classical_mds_precomputed_is_exact_in_memory_and_converged_lazily():
    import scipy.linalg

    from bigdr.core.triangulation import double_centre

    D = slowly_decaying(2500)
    exact = scipy.linalg.eigh(double_centre(D**2), eigvals_only=True)[::-1][:4]
    in_memory = bigdr.ClassicalMDS(4, metric="precomputed").fit(D)
    np.testing.assert_allclose(in_memory.eigenvalues_, exact, rtol=1e-10)
    lazy = bigdr.ClassicalMDS(4, metric="precomputed").fit(da.from_array(D, chunks=(500, 2500)))
    np.testing.assert_allclose(lazy.eigenvalues_, exact, rtol=1e-9)  # 4 fixed iterations erred by ~1e-5
    assert lazy.eigen_residual_ <= 1e-6


@pytest.mark.parametrize("cls", [bigdr.DiffusionMap, bigdr.SpectralEmbedding])
def test_spectral_transform_depends_only_on_fitted_state(cls):
    rng = np.random.default_rng(1)
    X, new = rng.standard_normal((1500, 2)), rng.standard_normal((200, 2))
    model = cls(n_neighbors=8, landmarks=None).fit(X)
    before = model.transform(new)
    model.set_params(n_neighbors=20, metric="manhattan", n_components=3)
    if cls is bigdr.DiffusionMap:
        model.set_params(alpha=0.0, t=3)
    else:
        model.set_params(affinity="gaussian", laplacian="symmetric")
    fresh = cls(n_neighbors=8, landmarks=None).fit(X)
    fresh.set_params(**model.get_params())
    np.testing.assert_array_equal(model.transform(new), before)
    np.testing.assert_array_equal(fresh.transform(new), before)


def uneven_density(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.standard_normal((1900, 2)) * 0.3, rng.uniform(-3, 3, (100, 2))])
    return X, rng.standard_normal((300, 2)) * 0.8


@pytest.mark.parametrize("cls", [bigdr.DiffusionMap, bigdr.SpectralEmbedding])
def test_nystrom_candidates_are_the_query_and_the_nearest_rows_graph_neighbours(cls):
    X, new = uneven_density()
    model = cls(n_neighbors=10, landmarks=None).fit(X)
    ext = model._extension()
    ind, dist = ext.candidates(new)
    D = np.sqrt(((new[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    W = ext.W.tocsr()
    for b in range(len(new)):
        nearest = np.argsort(D[b], kind="stable")[: ext.k_query]
        want = np.union1d(nearest, W.indices[W.indptr[nearest[0]] : W.indptr[nearest[0] + 1]])
        held = np.isfinite(dist[b])
        got = ind[b][held]
        np.testing.assert_array_equal(np.sort(got), want)
        np.testing.assert_allclose(dist[b][held], D[b, got], rtol=1e-6)  # reference rows kept in float32
        assert held[: held.sum()].all() and np.all(np.diff(dist[b][held]) >= 0)  # nearest first, padding last


def test_nystrom_finds_the_reverse_edges_of_well_sampled_data():
    """On evenly sampled data nearly every reverse edge lies among the candidates (rule applied densely)."""
    rng = np.random.default_rng(3)
    X, new = rng.uniform(size=(3000, 2)), rng.uniform(size=(300, 2))
    model = bigdr.SpectralEmbedding(n_neighbors=10, landmarks=None).fit(X)
    ext = model._extension()
    ind, dist = ext.candidates(new)
    D = np.sqrt(((new[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    reverse = D <= ext.radius[None, :]
    found = sum(reverse[b, ind[b][np.isfinite(dist[b])]].sum() for b in range(len(new)))
    assert found / reverse.sum() > 0.99


def test_rows_far_from_the_training_data_are_flagged():
    X, _ = uneven_density()
    model = bigdr.DiffusionMap(n_neighbors=10, landmarks=None).fit(X)
    far = np.array([[40.0, 40.0], [0.0, 0.1]])
    with pytest.warns(ExtrapolationWarning, match="1 of 2 rows"):
        model.transform(far)
    ratio = model.distance_ratio(far)
    assert ratio[0] > 3 > 1 > ratio[1]
    assert np.all(model.distance_ratio(X[:100]) == 0)


def test_model_checksum_is_integrity_and_a_keyed_signature_is_authenticity(tmp_path):
    X = np.random.default_rng(0).standard_normal((200, 5))
    key = "a-secret-key-of-32-characters!!!"
    bigdr.PCA(2).fit(X).save(str(tmp_path / "m"), key=key)
    meta_path = tmp_path / "m" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["attributes"]["params"]["whiten"] = True  # an edit, with the unkeyed checksum recomputed
    from bigdr.io.model import _meta_digest

    meta["attributes"]["sha256"] = _meta_digest(meta["attributes"])
    meta_path.write_text(json.dumps(meta))
    assert bigdr.load(str(tmp_path / "m")).whiten  # integrity only: an edit with its checksum is not noticed
    with pytest.raises(ValueError, match="not signed with this key"):
        bigdr.load(str(tmp_path / "m"), key=key)
    bigdr.PCA(2).fit(X).save(str(tmp_path / "ok"), key=key)
    assert bigdr.load(str(tmp_path / "ok"), key=key).n_components_ == 2
    with pytest.raises(ValueError, match="not signed with this key"):
        bigdr.load(str(tmp_path / "ok"), key="another-key-of-enough-length")


def test_a_pickle_in_a_model_is_reported_as_not_bigdrs(tmp_path):
    import pickle

    X = np.random.default_rng(0).standard_normal((200, 5))
    bigdr.PCA(2).fit(X).save(str(tmp_path / "m"))
    array = tmp_path / "m" / "components_"
    shutil.rmtree(array)
    array.mkdir()  # an object array in zarr's format 2 with a pickle codec, as other tools write them
    (array / ".zarray").write_text(
        json.dumps(
            {"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "compressor": None, "fill_value": 0,
             "order": "C", "filters": [{"id": "pickle", "protocol": 5}]}
        )
    )  # fmt: skip
    (array / "0").write_bytes(pickle.dumps(np.array([print, print], dtype=object)))
    with pytest.raises(ValueError, match="not bigdr's") as caught:
        bigdr.load(str(tmp_path / "m"))
    assert "truncated" not in str(caught.value)


# -- 7. messages in the user's language ---------------------------------------------


def test_cli_errors_name_flags_and_python_errors_name_parameters(work, capsys):
    rc, _, err = cli(
        capsys, "fit-transform", work / "good.zarr", work / "e.zarr", "--method", "isomap", "--n-neighbors", "1",
    )  # fmt: skip
    assert_one_line_error(rc, err, "--n-neighbors", "--on-disconnected")
    assert "on_disconnected" not in err and "n_neighbors" not in err
    X = np.asarray(bigdr.io.as_array(str(work / "good.zarr")).compute())
    with pytest.raises(ValueError, match="on_disconnected="):
        bigdr.Isomap(n_neighbors=1).fit(X)
    rc, _, err = cli(capsys, "fit-transform", work / "good.zarr", work / "good.zarr")
    assert "overwrite=True" not in err
    for flag, value in (("--on-disconnected", "join"), ("--metric", "manhattan")):
        rc, _, err = cli(
            capsys, "fit-transform", work / "good.zarr", work / f"{flag[2:]}.zarr", "--method", "isomap", flag, value,
            "--n-neighbors", "8",
        )  # fmt: skip
        assert rc == 0, err
    rc, _, err = cli(
        capsys, "fit-transform", work / "good.zarr", work / "dm.zarr", "--method", "diffusion-map", "--epsilon", "2",
        "--alpha", "0.5",
    )  # fmt: skip
    assert rc == 0, err
    assert zarr.open(str(work / "dm.zarr")).attrs["params"]["alpha"] == 0.5
