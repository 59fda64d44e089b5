"""Pictures: the embedding's pixel grid against numpy, the PNG's content, the command line."""

import dask.array as da
import numpy as np
import pytest

import bigdr
from bigdr.cli import main
from bigdr.plot import bin_embedding, embedding


@pytest.fixture(scope="module")
def roll():
    from bigdr.datasets import make_swiss_roll

    X, coords = make_swiss_roll(30_000, noise=0.05, seed=1)
    return X.compute()[:, [0, 2]], coords.compute()[:, 0]


def test_grid_equals_numpy_histogram(roll):
    Y, t = roll
    grid, extent, _, n = bin_embedding(da.from_array(Y, chunks=(7_000, 2)), bins=64)
    assert n == len(Y) and grid.counts.sum() == len(Y)
    assert max(grid.counts.shape) == 64  # square pixels: 64 along the longer side
    expected, _, _ = np.histogram2d(Y[:, 1], Y[:, 0], bins=grid.counts.shape, range=[extent[2:], extent[:2]])
    np.testing.assert_array_equal(grid.counts, expected)
    grid, _, _, _ = bin_embedding(Y, color_by=t, bins=64)
    sums, _, _ = np.histogram2d(Y[:, 1], Y[:, 0], bins=grid.counts.shape, range=[extent[2:], extent[:2]], weights=t)
    np.testing.assert_allclose(grid.sums, sums, rtol=1e-12)


def test_categories_counted_per_pixel(roll):
    Y, t = roll
    codes = np.digitize(t, np.quantile(t, [1 / 3, 2 / 3]))  # three categories
    grid, _, categories, _ = bin_embedding(Y, color_by=codes, categorical=True, bins=32)
    assert categories.tolist() == [0, 1, 2] and grid.counts.shape[0] == 3 and max(grid.counts.shape[1:]) == 32
    np.testing.assert_array_equal(grid.counts.sum(axis=(1, 2)), np.bincount(codes))


def test_pixels_are_square_so_shapes_keep_their_proportions():
    from bigdr.plot import square_pixels

    rng = np.random.default_rng(0)
    Y = rng.standard_normal((20_000, 2)) * [92.0, 23.0]  # an unrolled roll's proportions
    grid, extent, _, _ = bin_embedding(Y, bins=200)
    ny, nx = grid.counts.shape
    assert nx == 200 and abs(ny / nx - np.ptp(Y[:, 1]) / np.ptp(Y[:, 0])) < 0.02
    assert (extent[1] - extent[0]) / nx == pytest.approx((extent[3] - extent[2]) / ny, rel=1e-12)
    assert extent[0] <= Y[:, 0].min() and extent[1] >= Y[:, 0].max() and extent[2] <= Y[:, 1].min()
    # a line of points still gets a picture 16 pixels high
    assert square_pixels(np.zeros(2), np.array([10.0, 0.0]), 100)[1] == (16, 100)


def _colours(path):
    import matplotlib.image

    img = matplotlib.image.imread(str(path))[..., :3]
    return img.reshape(-1, 3)


def test_pictures_have_content(roll, tmp_path):
    import matplotlib.pyplot as plt

    Y, t = roll
    codes = np.digitize(t, np.quantile(t, [1 / 3, 2 / 3]))
    for name, kwargs in [
        ("density", {}),
        ("value", {"color_by": t}),
        ("categories", {"color_by": codes, "categorical": True}),
    ]:
        path = embedding(Y, tmp_path / f"{name}.png", bins=200, **kwargs)
        px = _colours(path)
        assert (px.min(axis=1) < 0.9).mean() > 0.02  # not blank: the roll covers part of the axes
    # Each category's colour is in the picture (dense pixels are drawn opaque).
    px = _colours(tmp_path / "categories.png")
    palette = plt.get_cmap("tab20")(np.arange(3))[:, :3]
    for colour in palette:
        assert (np.abs(px - colour).max(axis=1) < 0.02).sum() > 20


def test_bad_input(roll, tmp_path):
    Y, t = roll
    with pytest.raises(ValueError, match="categories"):
        embedding(Y, tmp_path / "a.png", color_by=np.arange(len(Y)), categorical=True)
    with pytest.raises(ValueError, match="values for"):
        embedding(Y, tmp_path / "a.png", color_by=t[:10])
    with pytest.raises(ValueError, match="needs 2"):
        embedding(Y[:, :1], tmp_path / "a.png")
    assert not (tmp_path / "a.png").exists()


def test_command_line(roll, tmp_path, capsys):
    Y, t = roll
    emb, col = tmp_path / "emb.zarr", tmp_path / "t.zarr"
    bigdr.write_zarr(da.from_array(Y, chunks=(10_000, 2)), emb)
    bigdr.write_zarr(da.from_array(t[:, None], chunks=(10_000, 1)), col)
    out = tmp_path / "emb.png"
    assert main(["plot", str(emb), str(out), "--color-by", f"{col}:0", "--bins", "100"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "30,000 rows drawn" in capsys.readouterr().out
    assert main(["plot", str(emb), str(out)]) == 2  # exists: refused without --overwrite
    assert "--overwrite" in capsys.readouterr().err
    foreign = tmp_path / "notes.png"
    foreign.write_bytes(b"not a png")
    assert main(["plot", str(emb), str(foreign), "--overwrite"]) == 2
    assert foreign.read_bytes() == b"not a png"


@pytest.mark.parametrize("method", ["isomap", "diffusion-map", "lle"])
def test_spectrum_of_each_method_from_the_command_line(roll, method, tmp_path):
    import matplotlib.image

    Y, _ = roll
    X = np.column_stack([Y, np.zeros(len(Y))])[:3000]
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(X, chunks=(1000, 3)), store)
    png = tmp_path / "s.png"
    argv = ["fit-transform", str(store), str(tmp_path / "e.zarr"), "--method", method, "--n-neighbors", "10"]
    assert main([*argv, "--scree", str(png)]) == 0
    img = matplotlib.image.imread(str(png))[..., :3]
    assert (img.min(axis=2) < 0.5).mean() > 0.001  # axes, line and labels are drawn


# -- biplot -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def factors():
    """20,000 rows of 3 factors in 8 features with noise of one variance per feature."""
    rng = np.random.default_rng(3)
    W = rng.standard_normal((3, 8))
    return rng.standard_normal((20_000, 3)) @ W + rng.uniform(0.3, 1.0, 8) * rng.standard_normal((20_000, 8))


@pytest.mark.parametrize("cls", [bigdr.PCA, bigdr.FactorAnalysis])
def test_biplot_draws_the_scores_and_labelled_arrows(factors, cls, tmp_path):
    model = cls(3).fit(factors)
    names = [f"gene{j}" for j in range(8)]
    drawn = bigdr.plot.biplot(model, da.from_array(factors, chunks=5000), tmp_path / "b.png", feature_names=names,
                              max_arrows=5)  # fmt: skip
    # the five longest loadings on components 1 and 2, longest first, at one common scale
    L = model.components_[:2].T * (np.sqrt(model.explained_variance_[:2]) if cls is bigdr.PCA else 1.0)
    longest = np.argsort(-np.hypot(L[:, 0], L[:, 1]))[:5]
    assert drawn.labels == [names[j] for j in longest]
    np.testing.assert_allclose(drawn.arrows, L[longest] * drawn.scale)
    px = _colours(drawn.path)
    assert (px.min(axis=1) < 0.9).mean() > 0.05  # the density of the scores
    red = np.array([0.839, 0.153, 0.157])  # matplotlib's C3, the arrows and their labels
    assert (np.abs(px - red).max(axis=1) < 0.05).sum() > 200


def test_biplot_from_the_command_line_and_its_refusals(factors, tmp_path, capsys):
    store = tmp_path / "x.zarr"
    bigdr.write_zarr(da.from_array(factors, chunks=(5000, 8)), store)
    png, scree = tmp_path / "b.png", tmp_path / "s.png"
    argv = ["fit-transform", str(store), str(tmp_path / "e.zarr"), "--method", "factor-analysis", "-k", "3"]
    assert main([*argv, "--rotation", "varimax", "--biplot", str(png), "--scree", str(scree)]) == 0
    assert "biplot written" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and scree.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    iso = ["fit-transform", str(store), str(tmp_path / "i.zarr"), "--method", "isomap", "--biplot", str(png)]
    assert main(iso) == 2
    assert "--biplot" in capsys.readouterr().err and not (tmp_path / "i.zarr").exists()
    with pytest.raises(TypeError, match="PCA or FactorAnalysis"):
        bigdr.plot.biplot(bigdr.GaussianRandomProjection(2).fit(factors), factors, tmp_path / "r.png")
    with pytest.raises(ValueError, match="components"):
        bigdr.plot.biplot(bigdr.PCA(2).fit(factors), factors, tmp_path / "r.png", components=(0, 2))


@pytest.mark.parametrize("which", ["PrincipalCurve", "PrincipalManifold", "HastieStuetzleCurve", "DensityRidge"])
def test_structure_draws_the_density_and_the_fitted_curve_or_ridge(which, tmp_path):
    rng = np.random.default_rng(2)
    t = rng.uniform(0, 1.5 * np.pi, 6_000)
    X = np.column_stack([np.cos(t), np.sin(t), 0.3 * rng.standard_normal(6_000)])
    X += 0.05 * rng.standard_normal(X.shape)
    settings = {
        "DensityRidge": {"n_queries": 1000},
        "PrincipalManifold": {"n_centres": 6, "max_iter": 5},
        "PrincipalCurve": {"max_iter": 20},
    }
    model = getattr(bigdr, which)(**settings.get(which, {})).fit(X)
    red = np.array([0.839, 0.153, 0.157])  # matplotlib's C3: the curve, grid lines or ridge points
    for kwargs in ({}, {"basis": np.eye(3)[:, :2]}):
        png = bigdr.plot.structure(model, da.from_array(X, chunks=2000), tmp_path / "s.png", **kwargs)
        px = _colours(png)
        assert (px.min(axis=1) < 0.9).mean() > 0.05  # the density of the rows
        assert (np.abs(px - red).max(axis=1) < 0.08).sum() > 300
    with pytest.raises(ValueError, match="basis must be 3 x 2"):
        bigdr.plot.structure(model, X, tmp_path / "no.png", basis=np.eye(2))
    with pytest.raises(TypeError, match="PrincipalManifold, HastieStuetzleCurve or DensityRidge"):
        bigdr.plot.structure(bigdr.PCA(2).fit(X), X, tmp_path / "no.png")
