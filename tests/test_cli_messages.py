"""The command line as a newcomer meets it: one clear line for every mistake, and no silent damage.

Each case here was met by a new user on an earlier release: a typo printed
forty lines of usage, a CSV file got zarr's internal error, an impossible
neighbour count got a memory error, a repeated append silently misaligned an
embedding with its input, and an update that could not learn advised options
it does not take.
"""

import numpy as np
import pytest
import zarr

from bigdr.cli import main
from bigdr.cli.args import parse_value
from bigdr.registry import METHODS, parameters


@pytest.fixture(scope="module")
def roll(tmp_path_factory):
    base = tmp_path_factory.mktemp("roll")
    data, new = base / "roll.zarr", base / "new.zarr"
    assert main(["generate", "swiss-roll", str(data), "-n", "6000", "--noise", "0.05", "--seed", "1"]) == 0
    assert main(["generate", "swiss-roll", str(new), "-n", "1000", "--noise", "0.05", "--seed", "2"]) == 0
    far = base / "far.npy"
    np.save(far, zarr.open(str(new), mode="r")["X"][:300] + [0.0, 40.0, 0.0])
    return data, new, far


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("bigdr: error:") and len(err.strip().splitlines()) == 1, err
    assert "usage:" not in err and "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--method", "isomapp"], "unknown method 'isomapp' (did you mean 'isomap'?)"),
        (["-k", "mpp"], "(did you mean 'mp'?)"),
        (["--n-neighbours", "5"], "unrecognized arguments: --n-neighbours 5 (did you mean '--n-neighbors'?)"),
        (["--method", "lle", "--variant", "hesian"], "lle takes one of standard, modified, hessian, ltsa (did you"),
        (["--method", "isomap", "--svd-solver", "full"], "--svd-solver applies to --method pca, not isomap"),
    ],
)
def test_a_typo_gets_one_line_with_the_nearest_name(roll, tmp_path, capsys, extra, expected):
    out = tmp_path / "out.zarr"
    try:
        code = main(["fit-transform", str(roll[0]), str(out), "--dataset", "X", *extra])
    except SystemExit as exc:  # argparse's own errors leave through exit(2)
        code = exc.code
    assert code == 2 and expected in one_line_error(capsys)
    assert not out.exists()


def test_an_unknown_flag_of_a_command_names_that_command(roll, capsys):
    with pytest.raises(SystemExit) as refused:
        main(["update", "m.zarr", str(roll[1]), "--n-neighbors", "5"])
    assert refused.value.code == 2
    assert "(see 'bigdr update --help')" in one_line_error(capsys)


def test_a_csv_input_is_refused_with_the_conversion(tmp_path, capsys):
    csv = tmp_path / "x.csv"
    csv.write_text("1,2,3\n4,5,6\n")
    assert main(["fit-transform", str(csv), str(tmp_path / "o.zarr")]) == 2
    err = one_line_error(capsys)
    assert "not CSV" in err and "np.loadtxt" in err and "StorePath" not in err


@pytest.mark.parametrize("dry_run", [False, True])
def test_more_neighbours_than_rows_is_named_before_memory(roll, tmp_path, capsys, dry_run):
    argv = ["fit-transform", str(roll[0]), str(tmp_path / "o.zarr"), "--dataset", "X", "--method", "isomap"]
    assert main(argv + ["--n-neighbors", "1000000"] + (["--dry-run"] if dry_run else [])) == 2
    err = one_line_error(capsys)
    assert "--n-neighbors 1000000 must be below the number of rows (6,000)" in err and "TiB" not in err


def test_dry_run_into_obsm_names_the_target(tmp_path, capsys):
    anndata = pytest.importorskip("anndata")
    store = tmp_path / "cells.zarr"
    anndata.AnnData(X=np.random.default_rng(0).standard_normal((300, 8)).astype(np.float32)).write_zarr(store)
    assert main(["fit-transform", str(store), "--obsm", "X_pca", "--dry-run"]) == 0
    assert f"outputs checked: obsm['X_pca'] of {store}; nothing was written" in capsys.readouterr().out


def snapshot(*stores):
    return {p: p.read_bytes() for s in stores for p in s.rglob("*") if p.is_file()}


def test_a_repeated_append_is_refused_and_changes_nothing(roll, tmp_path, capsys):
    data, new, _ = roll
    model, emb, out = tmp_path / "m.zarr", tmp_path / "emb.zarr", tmp_path / "t.zarr"
    fit = ["fit-transform", str(data), str(emb), "--method", "isomap", "--landmarks", "64", "--save-model", str(model)]
    assert main(fit) == 0
    assert main(["transform", str(model), str(new), str(out), "--append"]) == 0  # creates the store
    capsys.readouterr()
    before = snapshot(model, emb, out)
    for argv in (
        ["transform", str(model), str(new), str(out), "--append"],  # the same batch again
        ["update", str(model), str(data), "--embedding", str(emb)],  # the training rows again
        ["update", str(model), str(data), "--embedding", str(emb), "--policy", "freeze"],
    ):
        assert main(argv) == 2
        err = one_line_error(capsys)
        assert "already" in err and "--allow-repeat" in err and "allow_repeat" not in err
    assert snapshot(model, emb, out) == before
    assert not list(tmp_path.glob(".*"))  # nothing staged
    # a new batch is appended and recorded; the same one after it is refused; --allow-repeat appends it
    assert main(["update", str(model), str(new), "--embedding", str(emb)]) == 0
    assert main(["update", str(model), str(new), "--embedding", str(emb)]) == 2
    assert "its rows 6000-6999" in one_line_error(capsys)
    assert main(["transform", str(model), str(new), str(out), "--append", "--allow-repeat"]) == 0
    store = zarr.open(str(out), mode="r")
    assert store.shape == (2000, 2) and store.attrs["bigdr_appends"][0]["rows"] == [1000, 2000]


def test_an_update_that_cannot_learn_says_what_update_can_do(roll, tmp_path, capsys):
    data, _, far = roll
    model, emb = tmp_path / "m.zarr", tmp_path / "emb.zarr"
    fit = ["fit-transform", str(data), str(emb), "--method", "isomap", "--landmarks", "64", "--save-model", str(model)]
    assert main(fit) == 0
    capsys.readouterr()
    before = snapshot(model, emb)
    assert main(["update", str(model), str(far), "--embedding", str(emb)]) == 2
    err = one_line_error(capsys)
    assert "2 connected components" in err and "--policy freeze" in err and "bigdr fit-transform" in err
    assert "drift: 300 of 300 rows" in err and "refit advised" in err
    assert "--n-neighbors" not in err and "--on-disconnected" not in err  # update takes neither
    assert snapshot(model, emb) == before
    assert main(["update", str(model), str(far), "--embedding", str(emb), "--policy", "freeze"]) == 0


def test_help_of_one_method_lists_its_parameters_with_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["fit-transform", "--method", "isomap", "--help"])
    text = capsys.readouterr().out
    assert "isomap options" in text and "--max-samples" in text and "(default auto)" in text
    assert "--variant" not in text  # lle's, not isomap's


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_parameter_is_an_option_with_its_default(method, capsys, monkeypatch):
    # The options are generated from the estimator: its signature and numpydoc Parameters section.

    monkeypatch.setenv("COLUMNS", "2000")  # argparse wraps at the terminal's width
    with pytest.raises(SystemExit):
        main(["fit-transform", "--method", method, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for p in parameters(METHODS[method].cls):
        if p.name == "n_components" or not p.on_command_line:
            continue
        if p.default == "deprecated":  # a 0.1 name: still accepted, no longer offered
            assert p.flag not in text
            continue
        assert p.flag in text, p.flag
        shown = "none" if p.default is None else str(p.default).lower() if isinstance(p.default, bool) else p.default
        assert f"(default {shown})" in text, (p.flag, shown)
        assert parse_value("none" if p.default is None else str(p.default)) == p.default or isinstance(p.default, str)


def test_one_word_parameters_the_command_line_takes_are_spelled_as_flags():
    from bigdr.cli.args import cli_words

    text = cli_words("increase n_neighbors, or pass kernel='umap' (a scale per row); the kernel weights; x=3 foo='bar'")
    assert text == "increase --n-neighbors, or pass --kernel umap (a scale per row); the kernel weights; x=3 foo='bar'"
