import os
import subprocess
import sys

import numpy as np
import pytest
import zarr
from sklearn.decomposition import PCA as SkPCA

import bigdr
from bigdr.cli import main


@pytest.fixture(scope="module")
def spiked_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "spiked.zarr"
    assert main(["generate", "spiked", str(path), "-n", "30000", "-p", "20", "--spikes", "9,4", "--seed", "3"]) == 0
    return path


def test_generate_then_fit_transform_matches_sklearn(spiked_store, tmp_path, capsys):
    out, model_path, png = tmp_path / "emb.zarr", tmp_path / "model", tmp_path / "scree.png"
    rc = main(
        ["fit-transform", str(spiked_store), str(out), "-k", "2", "--save-model", str(model_path), "--scree", str(png)]
    )
    assert rc == 0
    assert "2 components" in capsys.readouterr().out
    X = zarr.open(str(spiked_store), mode="r")["X"][:]
    emb = zarr.open(str(out), mode="r")
    np.testing.assert_allclose(emb[:], SkPCA(2, svd_solver="full").fit_transform(X), atol=1e-8)
    assert emb.attrs["method"] == "pca" and emb.attrs["input_shape"] == [30000, 20]
    assert emb.attrs["params"]["n_components"] == 2 and emb.attrs["bigdr_version"] == bigdr.__version__
    assert bigdr.load(str(model_path)).n_components_ == 2
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fraction_and_mp_options(spiked_store, tmp_path):
    assert main(["fit-transform", str(spiked_store), str(tmp_path / "a.zarr"), "-k", "mp"]) == 0
    assert zarr.open(str(tmp_path / "a.zarr"), mode="r").shape == (30000, 2)
    assert (
        main(["fit-transform", str(spiked_store), str(tmp_path / "b.zarr"), "-k", "0.5", "--svd-solver", "tsqr"]) == 0
    )
    assert main(["fit-transform", str(spiked_store), str(tmp_path / "c.zarr"), "-k", "mp-whitened"]) == 0
    assert zarr.open(str(tmp_path / "c.zarr"), mode="r").shape == (30000, 2)


def test_ica_from_the_command_line(spiked_store, tmp_path, capsys):
    out = tmp_path / "s.zarr"
    argv = ["fit-transform", str(spiked_store), str(out), "--method", "ica", "-k", "2", "--sample-size", "5000"]
    assert main(argv) == 0
    assert "passes over the data" in capsys.readouterr().out
    np.testing.assert_allclose(zarr.open(str(out), mode="r")[:].std(axis=0), 1.0, rtol=1e-5)


def test_random_state_goes_only_to_methods_that_draw(spiked_store, tmp_path, capsys):
    hs = [
        "fit-transform",
        str(spiked_store),
        str(tmp_path / "f.zarr"),
        "--method",
        "hastie-stuetzle",
        "--n-vertices",
        "20",
    ]
    assert main(hs) == 0  # the default seed is not passed to a method without one
    assert main([*hs, "--overwrite", "--random-state", "3"]) == 2
    assert "--random-state applies to" in capsys.readouterr().err


def test_info_on_store_and_model(spiked_store, tmp_path, capsys):
    assert main(["info", str(spiked_store)]) == 0
    text = capsys.readouterr().out
    assert "X: shape (30000, 20)" in text and "spiked" in text and "compressors zstd" in text
    bigdr.write_zarr(np.ones((10, 3), np.float32), tmp_path / "raw.zarr", compressors=None)
    assert main(["info", str(tmp_path / "raw.zarr")]) == 0
    assert "chunks (10, 3), compressors none (raw bytes)" in capsys.readouterr().out
    main(["fit-transform", str(spiked_store), str(tmp_path / "e.zarr"), "--save-model", str(tmp_path / "m")])
    capsys.readouterr()
    assert main(["info", str(tmp_path / "m")]) == 0
    assert "bigdr model PCA" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["fit-transform", "/nonexistent.zarr", "OUT"], "No such zarr store"),
        (["fit-transform", "SPIKED", "OUT", "-k", "0"], "must be between 1 and min"),
        (["fit-transform", "SPIKED", "OUT", "-k", "500"], "must be between 1 and min"),
        (["fit-transform", "SPIKED", "OUT", "--svd-solver", "randomized", "-k", "0.5"], "int -k/--n-components"),
        (["fit-transform", "SPIKED", "OUT", "--scheduler", "nonsense"], "Unknown scheduler"),
        (["generate", "blobs", "OUT", "-n", "1"], "n_samples"),
        (["generate", "swiss-roll", "OUT", "-n", "10", "--spikes", "1"], "--spikes"),
        (["info", "/nonexistent"], "No such"),
        (["fit-transform", "SPIKED", "OUT", "--method", "isomap", "-k", "0.5"], "must be an int"),
        (
            ["fit-transform", "SPIKED", "OUT", "--method", "sparse-rp", "--scree", "S.png"],
            "--scree draws a spectrum: it applies to",
        ),
        (
            ["fit-transform", "SPIKED", "OUT", "--method", "landmark-mds", "--landmarks", "none"],
            "--landmarks must be an int",
        ),
    ],
)
def test_bad_input_one_line_error_and_nothing_written(spiked_store, tmp_path, capsys, argv, message):
    out = tmp_path / "out.zarr"
    argv = [str(spiked_store) if a == "SPIKED" else str(out) if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("bigdr: error:") and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_nan_in_store_fails_cleanly(tmp_path, capsys):
    X = np.ones((1000, 4))
    X[500, 2] = np.nan
    zarr.create_array(str(tmp_path / "nan.zarr"), shape=X.shape, chunks=(100, 4), dtype="f8")[:] = X
    assert main(["fit-transform", str(tmp_path / "nan.zarr"), str(tmp_path / "out.zarr")]) == 2
    assert "NaN" in capsys.readouterr().err
    assert not (tmp_path / "out.zarr").exists()


def test_existing_output_needs_overwrite(spiked_store, tmp_path, capsys):
    out = tmp_path / "e.zarr"
    assert main(["fit-transform", str(spiked_store), str(out)]) == 0
    assert main(["fit-transform", str(spiked_store), str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["fit-transform", str(spiked_store), str(out), "--overwrite", "-k", "3"]) == 0
    assert zarr.open(str(out), mode="r").shape[1] == 3


def test_scheduler_address_runs_on_the_cluster(cluster_client, spiked_store, tmp_path):
    address = cluster_client.scheduler.address

    def count():
        return cluster_client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)

    before = count()
    rc = main(["fit-transform", str(spiked_store), str(tmp_path / "d.zarr"), "--scheduler", address, "-k", "2"])
    assert rc == 0
    assert count() > before + 10  # the fit and the write ran as tasks on that scheduler
    local = tmp_path / "l.zarr"
    assert main(["fit-transform", str(spiked_store), str(local), "-k", "2"]) == 0
    np.testing.assert_allclose(zarr.open(str(tmp_path / "d.zarr"))[:], zarr.open(str(local))[:], atol=1e-10)


def test_isomap_and_landmark_mds_through_the_cli(tmp_path, capsys):
    from scipy.stats import spearmanr

    roll = tmp_path / "roll.zarr"
    assert main(["generate", "swiss-roll", str(roll), "-n", "6000", "--noise", "0.05", "--seed", "2"]) == 0
    out, model = tmp_path / "iso.zarr", tmp_path / "iso-model"
    rc = main(
        [
            "fit-transform",
            str(roll),
            str(out),
            "--dataset",
            "X",
            "--method",
            "isomap",
            "--landmarks",
            "128",
            "--max-samples",
            "3000",
            "--save-model",
            str(model),
        ]
    )
    assert rc == 0 and "Isomap (sampled, 128 landmarks, graph of 3000 rows)" in capsys.readouterr().out
    emb = zarr.open(str(out), mode="r")
    t = zarr.open(str(roll), mode="r")["coords"][:, 0]
    assert emb.shape == (6000, 2) and emb.attrs["mode"] == "sampled"
    assert abs(spearmanr(emb[:, 0], t).statistic) > 0.99
    X = zarr.open(str(roll), mode="r")["X"][:]
    np.testing.assert_allclose(bigdr.load(str(model)).transform(X[:50]), emb[:50], atol=1e-9)
    assert (
        main(
            [
                "fit-transform",
                str(roll),
                str(tmp_path / "l.zarr"),
                "--dataset",
                "X",
                "--method",
                "landmark-mds",
                "--landmarks",
                "50",
            ]
        )
        == 0
    )
    assert zarr.open(str(tmp_path / "l.zarr"), mode="r").attrs["negative_mass"] < 1e-9
    assert (
        main(
            [
                "fit-transform",
                str(roll),
                str(tmp_path / "dm.zarr"),
                "--dataset",
                "X",
                "--method",
                "diffusion-map",
                "--landmarks",
                "2000",
                "--n-neighbors",
                "12",
            ]
        )
        == 0
    )
    dm = zarr.open(str(tmp_path / "dm.zarr"), mode="r")
    assert dm.attrs["mode"] == "landmarks" and abs(spearmanr(dm[:, 0], t).statistic) > 0.99
    argv = ["fit-transform", str(roll), str(tmp_path / "all.zarr"), "--dataset", "X", "--method", "diffusion-map"]
    assert main(argv + ["--partitions", "2", "--n-neighbors", "12"]) == 0
    assert "DiffusionMap (partitioned, graph of 6000 rows)" in capsys.readouterr().out
    every = zarr.open(str(tmp_path / "all.zarr"), mode="r")
    assert every.attrs["mode"] == "partitioned" and abs(spearmanr(every[:, 0], t).statistic) > 0.99
    capsys.readouterr()
    assert main(argv[:2] + [str(tmp_path / "no.zarr")] + argv[3:] + ["--partitions", "0"]) == 2
    assert "partitions must be None, 'auto' or a positive int" in capsys.readouterr().err
    assert not (tmp_path / "no.zarr").exists()


def test_options_not_given_keep_the_method_defaults(spiked_store, tmp_path):
    # Regression: --method diffusion-map used the CLI's 10 neighbours, not DiffusionMap's 15.
    out = tmp_path / "dm.zarr"
    argv = ["fit-transform", str(spiked_store), str(out), "--dataset", "X", "--method", "diffusion-map"]
    assert main(argv + ["--landmarks", "3000", "--save-model", str(tmp_path / "m.zarr")]) == 0
    params = zarr.open(str(out), mode="r").attrs["params"]
    assert params["n_neighbors"] == bigdr.DiffusionMap().n_neighbors == 15
    refused = tmp_path / "w.zarr"
    argv[2] = str(refused)
    assert main(argv + ["--whiten"]) == 2 and not refused.exists()  # an option the method does not take


def test_the_default_seed_makes_runs_repeatable(spiked_store, tmp_path):
    # --resume relies on two runs of one command computing the same output; the randomized solver draws.
    runs = []
    for name in ("a.zarr", "b.zarr"):
        argv = ["fit-transform", str(spiked_store), str(tmp_path / name), "--dataset", "X", "-k", "2"]
        assert main(argv + ["--svd-solver", "randomized"]) == 0
        runs.append(zarr.open(str(tmp_path / name), mode="r")[:])
    np.testing.assert_array_equal(*runs)


def test_random_projection_with_report(tmp_path, capsys):
    import scipy.sparse as sp

    from bigdr.io import write_sparse_zarr

    wide = tmp_path / "wide.zarr"
    X = np.random.default_rng(0).standard_normal((2000, 3000)).astype(np.float32)
    zarr.create_array(str(wide), shape=X.shape, chunks=(500, 1000), dtype="f4")[:] = X
    out = tmp_path / "rp.zarr"
    rc = main(
        [
            "fit-transform",
            str(wide),
            str(out),
            "--method",
            "gaussian-rp",
            "-k",
            "auto",
            "--eps",
            "0.3",
            "--report",
            "--save-model",
            str(tmp_path / "rp-model"),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "within 1 +- 0.3" in text
    emb = zarr.open(str(out), mode="r")
    assert emb.shape[1] == bigdr.johnson_lindenstrauss_min_dim(2000, 0.3)
    assert emb.attrs["distortion"]["within_eps"] >= 0.99
    np.testing.assert_allclose(bigdr.load(str(tmp_path / "rp-model")).transform(X[:10]), emb[:10], rtol=1e-4, atol=1e-4)
    M = sp.random(1000, 20000, density=1e-3, format="csr", random_state=1, dtype=np.float32)
    write_sparse_zarr(M, tmp_path / "sparse.zarr")
    assert (
        main(
            [
                "fit-transform",
                str(tmp_path / "sparse.zarr"),
                str(tmp_path / "s.zarr"),
                "--method",
                "sparse-rp",
                "-k",
                "24",
            ]
        )
        == 0
    )
    assert zarr.open(str(tmp_path / "s.zarr"), mode="r").shape == (1000, 24)
    assert main(["fit-transform", str(wide), str(tmp_path / "x.zarr"), "--method", "pca", "--report"]) == 2
    assert "--report measures a random projection's distortion: it applies" in capsys.readouterr().err


def test_demo_and_help_via_the_installed_entry_point(tmp_path, capsys):
    env = {**os.environ, "BIGDR_SCHEDULER": "threads"}
    run = subprocess.run(
        [sys.executable, "-m", "bigdr.cli", "demo", "--out", str(tmp_path / "d"), "-n", "20000"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "kept 3 components" in run.stdout
    for name in ("data.zarr", "embedding.zarr", "model.zarr", "scree.png", "embedding.png"):
        assert (tmp_path / "d" / name).exists()
    helped = subprocess.run([sys.executable, "-m", "bigdr.cli", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "usage: bigdr" in helped.stdout
    for cmd in ("generate", "fit-transform", "info", "demo"):  # the same parser, without a process each
        with pytest.raises(SystemExit) as done:
            main([cmd, "--help"])
        assert done.value.code == 0 and "usage: bigdr" in capsys.readouterr().out


# -- transform, update, info of updated models ---------------------------------------------
@pytest.fixture()
def rolls(tmp_path):
    base, new, shifted = tmp_path / "roll.zarr", tmp_path / "new.zarr", tmp_path / "shifted.npy"
    assert main(["generate", "swiss-roll", str(base), "-n", "8000", "--noise", "0.05", "--seed", "1"]) == 0
    assert main(["generate", "swiss-roll", str(new), "-n", "2000", "--noise", "0.05", "--seed", "2"]) == 0
    np.save(shifted, zarr.open(str(new), mode="r")["X"][:500] + [0.0, 40.0, 0.0])
    model = tmp_path / "m.zarr"
    argv = ["fit-transform", str(base), str(tmp_path / "emb.zarr"), "--method", "isomap", "--landmarks", "64"]
    assert main([*argv, "--save-model", str(model)]) == 0
    return base, new, shifted, model, tmp_path / "emb.zarr"


def test_transform_command_equals_model_transform_and_appends(rolls, tmp_path, capsys):
    _, new, shifted, model, _ = rolls
    out = tmp_path / "t.zarr"
    capsys.readouterr()
    assert main(["transform", str(model), str(new), str(out)]) == 0
    text = capsys.readouterr().out
    assert "2000 rows embedded" in text and "in distribution" in text
    X = zarr.open(str(new), mode="r")["X"][:]
    expected = bigdr.load(str(model)).transform(X)
    np.testing.assert_allclose(zarr.open(str(out), mode="r")[:], expected, atol=1e-12)
    assert main(["transform", str(model), str(shifted), str(out), "--append"]) == 0
    assert "refit advised" in capsys.readouterr().out
    store = zarr.open(str(out), mode="r")
    assert store.shape == (2500, 2) and store.attrs["bigdr_appends"][0]["rows"] == [2000, 2500]
    np.testing.assert_allclose(store[:2000], expected, atol=1e-12)


def test_update_refresh_equals_partial_fit_and_freeze_leaves_the_model(rolls, capsys):
    _, new, shifted, model, emb = rolls
    X = zarr.open(str(new), mode="r")["X"][:]
    in_memory = bigdr.load(str(model)).partial_fit(X)
    assert main(["update", str(model), str(new), "--embedding", str(emb)]) == 0
    assert "2000 rows learnt" in capsys.readouterr().out
    updated = bigdr.load(str(model))
    assert updated.n_samples_seen_ == 10000 and len(updated.drift_history_) == 1
    np.testing.assert_allclose(updated.transform(X[:300]), in_memory.transform(X[:300]), atol=1e-9)
    store = zarr.open(str(emb), mode="r")
    assert store.shape == (10000, 2)
    np.testing.assert_allclose(store[8000:], in_memory.transform(X), atol=1e-9)
    before = {p.name: p.stat().st_mtime_ns for p in model.rglob("*")}
    assert main(["update", str(model), str(shifted), "--embedding", str(emb), "--policy", "freeze"]) == 0
    assert "refit advised" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in model.rglob("*")} == before  # the model is untouched
    assert zarr.open(str(emb), mode="r").shape == (10500, 2)
    assert main(["info", str(model)]) == 0
    text = capsys.readouterr().out
    assert "n_samples_seen_ = 10000" in text and "updates: 1 recorded" in text


def test_update_refuses_bad_rows_and_foreign_stores_changing_nothing(rolls, tmp_path, capsys):
    base, _, _, model, emb = rolls
    narrow = tmp_path / "narrow.npy"
    np.save(narrow, np.zeros((10, 2)))
    foreign = tmp_path / "mine.zarr"
    zarr.create_array(str(foreign), shape=(5, 2), dtype="float64")
    snapshot = {p: p.read_bytes() for p in [*model.rglob("*"), *emb.rglob("*")] if p.is_file()}
    for argv, message in [
        (["update", str(model), str(narrow), "--embedding", str(emb)], "features"),
        (["update", str(model), str(base), "--embedding", str(foreign)], "not written by bigdr"),
        (["update", str(model), str(base), "--embedding", str(base)], "is the input"),
        (["transform", str(model), str(base), str(foreign), "--append"], "not written by bigdr"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("bigdr: error:") and message in err and len(err.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in snapshot} == snapshot
    assert not list(tmp_path.glob(".*"))  # nothing staged is left behind


def test_kernel_pca_through_the_cli(spiked_store, tmp_path, capsys):
    out, model = tmp_path / "k.zarr", tmp_path / "k-model"
    argv = ["fit-transform", str(spiked_store), str(out), "--dataset", "X", "--method", "kernel-pca", "-k", "3"]
    options = [
        "--kernel",
        "rbf",
        "--approximation",
        "fourier",
        "--n-fourier",
        "300",
        "--gamma",
        "0.05",
        "--save-model",
        str(model),
    ]
    assert main(argv + options) == 0
    assert "KernelPCA (fourier, rbf)" in capsys.readouterr().out
    emb = zarr.open(str(out), mode="r")
    X = zarr.open(str(spiked_store), mode="r")["X"][:100]
    np.testing.assert_allclose(bigdr.load(str(model)).transform(X), emb[:100], atol=1e-10)
    refused = tmp_path / "no.zarr"
    argv[2] = str(refused)
    assert main(argv + ["--approximation", "fourier", "--kernel", "poly"]) == 2 and not refused.exists()
    assert "shift-invariant" in capsys.readouterr().err


def test_ridges_and_principal_curves_through_the_cli(tmp_path, capsys):
    data = tmp_path / "fil.zarr"
    assert main(["generate", "filaments", str(data), "-n", "3000", "--seed", "1"]) == 0
    out, model = tmp_path / "r.zarr", tmp_path / "r-model"
    argv = ["fit-transform", str(data), str(out), "--dataset", "X", "--method", "ridge", "--n-queries", "300"]
    png = tmp_path / "ridge.png"
    assert main(argv + ["--bandwidth", "0.05", "--save-model", str(model), "--structure", str(png)]) == 0
    assert "DensityRidge: " in capsys.readouterr().out and png.stat().st_size > 10_000
    pca = [
        "fit-transform",
        str(data),
        str(tmp_path / "p.zarr"),
        "--dataset",
        "X",
        "--structure",
        str(tmp_path / "p.png"),
    ]
    assert main(pca) == 2 and "--structure draws a fitted curve or ridge" in capsys.readouterr().err
    assert not (tmp_path / "p.zarr").exists()
    X = zarr.open(str(data), mode="r")["X"][:]
    ridge = bigdr.load(str(model))
    assert ridge.bandwidth_ == 0.05 and zarr.open(str(out), mode="r").shape == (3000, 3)
    np.testing.assert_allclose(zarr.open(str(out), mode="r")[:100], ridge.transform(X[:100]))
    more = tmp_path / "more.zarr"  # new rows: `bigdr update` learns them by partial_fit and appends their points
    assert main(["generate", "filaments", str(more), "-n", "1000", "--seed", "2"]) == 0
    in_memory = bigdr.load(str(model)).partial_fit(zarr.open(str(more), mode="r")["X"][:])
    assert main(["update", str(model), str(more), "--dataset", "X", "--embedding", str(out)]) == 0
    updated = bigdr.load(str(model))
    assert updated.n_samples_seen_ == 4000 and zarr.open(str(out), mode="r").shape == (4000, 3)
    np.testing.assert_allclose(updated.ridge_points_, in_memory.ridge_points_, atol=1e-12)
    refused = tmp_path / "no.zarr"
    assert main(["fit-transform", str(data), str(refused), "--dataset", "X", "--method", "ridge", "-k", "2"]) == 2
    assert "--n-components applies to --method pca" in capsys.readouterr().err and not refused.exists()
    for method, width in (("principal-curve", 1), ("principal-manifold", 2)):
        emb = tmp_path / f"{method}.zarr"
        assert (
            main(["fit-transform", str(data), str(emb), "--dataset", "X", "--method", method, "--n-centres", "6"]) == 0
        )
        assert zarr.open(str(emb), mode="r").shape == (3000, width)
    hs, hs_model = tmp_path / "hs.zarr", tmp_path / "hs-model"
    argv = ["fit-transform", str(data), str(hs), "--dataset", "X", "--method", "hastie-stuetzle", "--n-vertices", "30"]
    assert main([*argv, "--span", "0.05", "--save-model", str(hs_model)]) == 0
    assert "HastieStuetzleCurve: 30 vertices" in capsys.readouterr().out
    curve = bigdr.load(str(hs_model))
    assert curve.span == 0.05 and zarr.open(str(hs), mode="r").shape == (3000, 1)
    np.testing.assert_allclose(zarr.open(str(hs), mode="r")[:100], curve.transform(X[:100]), atol=1e-12)
    capsys.readouterr()
