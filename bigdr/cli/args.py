"""The command line's arguments: option types, the parser, and messages spelled with its flags.

The options of ``fit-transform`` that set an estimator's parameters are not
written here: they are generated from each estimator's signature (defaults)
and numpydoc ``Parameters`` section (descriptions, choices) through
:func:`bigdr.registry.parameters`, so a parameter added to an estimator
appears in ``bigdr fit-transform --help`` with no edit in this package.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, NoReturn

from .._version import __version__
from ..base import DEPRECATED
from ..registry import METHODS, Parameter, parameters, suggest

USER_ERRORS = (ValueError, TypeError, KeyError, OSError)
#: What the command line adds to a parameter's own description.
NOTES = {
    "random_state": "; the command line passes 0 when it is not given, so the same command gives the same output "
    "and --resume can continue it",
}


class CommandLineError(ValueError):
    """A message already written in the command line's words (shown as it is)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the reason and where the options are listed, never the whole usage."""

    #: The parsers of the subcommands, by name (set by :func:`build_parser`).
    commands: dict[str, Parser] = {}

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"bigdr: error: {message} (see '{self.prog} --help')\n")


def parse_value(text: str) -> Any:
    """A parameter's value from its text: none/true/false, a JSON list or object, an int, a float, else the text."""
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    if text.strip()[:1] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected JSON; got {text!r}") from None
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _method_name(text: str) -> str:
    if text not in METHODS:
        raise argparse.ArgumentTypeError(
            f"unknown method {text!r}{suggest(text, METHODS)}; choose one of {', '.join(METHODS)}"
        )
    return text


def _shown(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def method_options() -> dict[str, list[tuple[str, Parameter]]]:
    """Every estimator parameter the command line can set, by option (``n_neighbors``), with the methods taking it.

    ``n_components`` is ``-k`` and is left out here; so are parameters whose
    values are arrays or callables.
    """
    options: dict[str, list[tuple[str, Parameter]]] = {}
    for m in METHODS.values():
        for p in parameters(m.cls):
            if p.name != "n_components" and p.on_command_line:
                options.setdefault(p.option, []).append((m.name, p))
    return options


def _option_help(dest: str, takers: list[tuple[str, Parameter]], only: str | None) -> str:
    groups: dict[str, list[tuple[str, Parameter]]] = {}
    for method, p in takers:
        groups.setdefault(p.description if only else p.summary, []).append((method, p))
    parts = []
    for sentence, group in groups.items():
        defaults = {_shown(p.default) for _, p in group}
        if len(defaults) == 1:
            default = f"default {defaults.pop()}"
        else:
            default = "default " + ", ".join(f"{method} {_shown(p.default)}" for method, p in group)
        who = "" if only else ", ".join(method for method, _ in group) + ": "
        parts.append(f"{who}{sentence.rstrip('.;')} ({default})")
    return ("; ".join(parts) + NOTES.get(dest, "")).replace("%", "%%")


def _add_method_options(f: argparse.ArgumentParser, only: str | None) -> None:
    """Every method's options; with ``only``, the help lists that method's alone (the others still parse)."""
    group = f.add_argument_group(
        f"{only} options" if only else "method options",
        None
        if only
        else "parameters of the methods, as their estimators name them ('bigdr fit-transform "
        "--method NAME --help' lists one method's); values: numbers, words, none, true/false, JSON",
    )
    for dest, every in sorted(method_options().items()):
        takers = [(m, p) for m, p in every if only is None or m == only]
        choices: list[str] = []
        for _, p in takers or every:
            choices += [_shown(c) for c in p.choices or () if _shown(c) not in choices]
        flag_bool = any(isinstance(p.default, bool) for _, p in every)
        deprecated = all(p.default == DEPRECATED for _, p in every)  # still accepted, no longer offered
        group.add_argument(
            "--" + dest.replace("_", "-"),
            dest=dest,
            type=parse_value,
            default=argparse.SUPPRESS,
            nargs="?" if flag_bool else None,
            const=True if flag_bool else None,
            metavar="{" + ",".join(choices) + "}" if choices else dest.upper(),
            help=_option_help(dest, takers, only) if takers and not deprecated else argparse.SUPPRESS,
        )


def fit_transform_method(argv: Sequence[str]) -> str | None:
    """The ``--method`` given in ``argv`` (for a parser of that method's options alone), or None."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--method" and i + 1 < len(argv) else arg.partition("=")[2]
        if (arg == "--method" or arg.startswith("--method=")) and value in METHODS:
            return value
    return None


def _n_components(text: str):
    if text == "auto":
        return "auto"
    if text in ("mp", "mp-whitened", "none", "None"):
        return None if text.lower() == "none" else text
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an int, a fraction in (0, 1), 'mp', 'mp-whitened', 'auto' or 'none'; got {text!r}"
            + suggest(text, ("mp", "mp-whitened", "auto", "none"))
        ) from None


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers; got {text!r}") from None


def _layer(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--layer",
        default=None,
        metavar="NAME",
        help="AnnData input: read layers/NAME instead of X (scanpy's word; the same as --dataset layers/NAME)",
    )


def dataset_of(args: argparse.Namespace) -> str | None:
    """The element to read: ``--dataset``, or ``layers/NAME`` for ``--layer NAME`` (not both)."""
    layer = getattr(args, "layer", None)
    if layer is None:
        return args.dataset
    if args.dataset is not None:
        raise ValueError("Give --layer NAME or --dataset, not both (--layer NAME is --dataset layers/NAME).")
    return f"layers/{layer}"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scheduler",
        default=None,
        help="where to run: 'threads' (default, or $BIGDR_SCHEDULER), 'local-cluster', "
        "a scheduler address tcp://host:port, or a scheduler file",
    )
    p.add_argument(
        "--no-progress",
        "--quiet",
        dest="no_progress",
        action="store_true",
        help="no progress (default: a bar on a terminal, a line every 10 s otherwise)",
    )
    p.add_argument(
        "--memory-limit",
        default=None,
        metavar="SIZE",
        help="memory a fit may use, like 8GiB (default: what is available, and on a cluster the smallest "
        "worker's limit); 'none' turns the check off",
    )
    p.add_argument(
        "--chunk-mib",
        type=float,
        default=None,
        help="input chunk size in MiB (default 128, or $DASK_BIGDR__CHUNK_BYTES); smaller for workers "
        "with little memory",
    )


def _model_input(p: argparse.ArgumentParser) -> None:
    """Options of the commands that apply a saved model to rows (transform, update)."""
    p.add_argument("--dataset", default=None, help="array of a zarr group or HDF5 file to read")
    _layer(p)
    p.add_argument(
        "--model-key-file", default=None, metavar="FILE", help="check the model's signature (update: and re-sign it)"
    )
    p.add_argument("--resume", action="store_true", help="finish an interrupted write or append of the same command")
    p.add_argument(
        "--allow-repeat",
        action="store_true",
        help="append rows whose input the store already holds (refused by default: it would misalign the store)",
    )
    p.add_argument("--allow-missing-chunks", action="store_true", help="accept absent chunk files in the input")
    _common(p)


def build_parser(argv: Sequence[str] | None = None) -> Parser:
    """The parser of every command; ``fit-transform``'s method options are generated when ``argv`` runs it.

    Building them imports every estimator, so ``bigdr info`` and ``bigdr --help`` do not
    pay for it; with ``--method NAME`` in ``argv``, the help lists that method's options alone.
    """
    argv = list(argv or [])
    parser = Parser(prog="bigdr", description="Dimensionality reduction for data larger than memory.")
    parser.add_argument("--version", action="version", version=f"bigdr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub.choices
    _add_generate(sub)
    _add_fit_transform(sub, argv)
    _add_transform(sub)
    _add_update(sub)
    _add_info(sub)
    _add_plot(sub)
    _add_evaluate(sub)
    _add_demo(sub)
    return parser


def _add_generate(sub: Any) -> None:
    """The ``generate`` command."""
    g = sub.add_parser(
        "generate",
        help="write a synthetic data set to a zarr store",
        description="Write a synthetic data set (group with arrays X and coords) chunk by chunk.",
    )
    g.add_argument("kind", choices=["swiss-roll", "s-curve", "spiked", "blobs", "filaments"])
    g.add_argument("output", help="destination zarr store (a new directory)")
    g.add_argument("-n", "--n-samples", type=int, required=True)
    g.add_argument("-p", "--n-features", type=int, default=None, help="spiked and blobs only (default 100 and 10)")
    g.add_argument("--noise", type=float, default=None, help="noise level")
    g.add_argument("--spikes", type=_floats, default=None, help="spiked: comma-separated spike strengths")
    g.add_argument("--centers", type=int, default=None, help="blobs: number of clusters")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--dtype", choices=["float32", "float64"], default="float64")
    g.add_argument(
        "--chunk-rows", type=int, default=None, help="rows per stored chunk (default: chunks of at most 64 MiB)"
    )
    g.add_argument("--overwrite", action="store_true", help="replace a store that bigdr wrote (nothing else)")
    g.add_argument("--resume", action="store_true", help="continue an interrupted run of the same command")
    _common(g)


def _add_fit_transform(sub: Any, argv: Sequence[str]) -> None:
    """The ``fit-transform`` command."""
    f = sub.add_parser(
        "fit-transform",
        help="fit a method and write the embedding",
        description="Fit a method to INPUT and write the embedding of every row to OUTPUT (zarr).",
    )
    f.add_argument("input", help="zarr store, .npy or HDF5 file (file.h5:/dataset)")
    f.add_argument("output", nargs="?", help="destination zarr store for the embedding (or --obsm)")
    f.add_argument(
        "--obsm",
        default=None,
        metavar="KEY",
        help="write the embedding into obsm[KEY] of the INPUT AnnData zarr store instead of OUTPUT",
    )
    f.add_argument(
        "--method",
        type=_method_name,
        default="pca",
        help="; ".join(f"{m.name}: {m.summary}" for m in METHODS.values()),
    )
    f.add_argument(
        "-k",
        "--n-components",
        type=_n_components,
        default=argparse.SUPPRESS,
        help="int, fraction of variance in (0,1), 'mp', 'mp-whitened' (pca) or 'none' (default 2; "
        "principal-curve: its latent dimensions, 1; not for ridge)",
    )
    f.add_argument(
        "--report",
        action="store_true",
        help=f"print and store the distortion of sampled pairs{_takers('distortion', argv)}",
    )
    f.add_argument(
        "--dataset",
        default=None,
        help="array inside a zarr group or HDF5 file; of an AnnData file: X (default), layers/NAME or obsm/NAME",
    )
    _layer(f)
    f.add_argument(
        "--mask-var",
        default=None,
        metavar="NAME",
        help="AnnData input: use only the genes where the boolean var[NAME] is true (scanpy's mask_var); 'none': "
        "all genes. Default, as scanpy's pca: var['highly_variable'] when present, for pca and truncated-svd",
    )
    f.add_argument("--save-model", default=None, metavar="PATH", help="also save the fitted model here")
    f.add_argument(
        "--model-key-file",
        default=None,
        metavar="FILE",
        help="sign the saved model with the key in FILE (HMAC-SHA256), so others can check it with 'bigdr info'",
    )
    f.add_argument(
        "--scree",
        default=None,
        metavar="PNG",
        help="also draw the spectrum: PCA's scree plot, Isomap's residual variance, the other methods' "
        f"eigenvalues{_takers('spectrum', argv)}",
    )
    f.add_argument(
        "--biplot",
        default=None,
        metavar="PNG",
        help=f"also draw the biplot (scores as a density, loadings as labelled arrows){_takers('loadings', argv)}",
    )
    f.add_argument(
        "--structure",
        default=None,
        metavar="PNG",
        help="also draw the data's density (its first two columns) with the fitted curve, manifold or ridge "
        f"over it{_takers('structure', argv)}",
    )
    f.add_argument(
        "--overwrite", action="store_true", help="replace outputs that bigdr wrote earlier (never anything else)"
    )
    f.add_argument(
        "--dry-run",
        action="store_true",
        help="check the input and the outputs and print the estimated peak memory; compute nothing",
    )
    f.add_argument(
        "--allow-missing-chunks",
        action="store_true",
        help="accept an input zarr store whose absent chunk files are meant to read as its fill value",
    )
    f.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run of the same command: write only the missing blocks",
    )
    _common(f)
    if "fit-transform" in argv:
        _add_method_options(f, fit_transform_method(argv))


def _add_transform(sub: Any) -> None:
    """The ``transform`` command."""
    t = sub.add_parser(
        "transform",
        help="embed rows with a saved model",
        description="Embed the rows of INPUT with a saved model (no learning) into a new store, or append "
        "them to an embedding store bigdr wrote; prints the rows' drift from the training data.",
    )
    t.add_argument("model", help="a model saved by --save-model or model.save()")
    t.add_argument("input", help="rows to embed: zarr store, .npy or HDF5 (file.h5:/dataset)")
    t.add_argument("output", help="destination store (a new directory, or with --append an existing one)")
    t.add_argument("--append", action="store_true", help="append to OUTPUT when it exists (atomically)")
    t.add_argument("--overwrite", action="store_true", help="replace an output store that bigdr wrote")
    _model_input(t)


def _add_update(sub: Any) -> None:
    """The ``update`` command."""
    u = sub.add_parser(
        "update",
        help="update a saved model with new rows",
        description="Learn from NEW_ROWS (--policy refresh, the default: the model is updated by partial_fit, "
        "written anew and swapped in atomically) or only place them (--policy freeze: the model is unchanged), "
        "and append their coordinates to an embedding store.",
    )
    u.add_argument("model", help="a model saved by --save-model or model.save(); replaced by the updated one")
    u.add_argument("new_rows", metavar="NEW_ROWS", help="rows to add: zarr store, .npy or HDF5")
    u.add_argument("--embedding", default=None, metavar="STORE", help="embedding store to append the rows to")
    u.add_argument(
        "--policy",
        choices=["refresh", "freeze"],
        default="refresh",
        help="refresh: learn from the rows (default); freeze: keep the model, only place the rows",
    )
    _model_input(u)


def _add_info(sub: Any) -> None:
    """The ``info`` command."""
    i = sub.add_parser(
        "info",
        help="describe a data store or a saved model",
        description="Print shape, chunks, dtype and attributes of a store, file or saved model.",
    )
    i.add_argument("path")
    i.add_argument(
        "--model-key-file", default=None, metavar="FILE", help="check a saved model's signature with the key in FILE"
    )
    _common(i)  # accepted everywhere for uniform scripts; info reads metadata only and computes nothing


def _add_plot(sub: Any) -> None:
    """The ``plot`` command."""
    pl = sub.add_parser(
        "plot",
        help="draw a 2-D embedding of any number of rows",
        description="A PNG of the first two columns of EMBEDDING: rows per pixel (log scale), or the mean of a "
        "value per pixel (--color-by), or the most frequent category per pixel (--categorical); two passes, "
        "memory independent of the number of rows.",
    )
    pl.add_argument("embedding", help="the embedding: zarr store, .npy or HDF5")
    pl.add_argument("output", help="the PNG to write")
    pl.add_argument("--color-by", default=None, metavar="STORE[:COLUMN]",
                    help="one number per row: a store (its first column, or COLUMN)")  # fmt: skip
    pl.add_argument("--color-dataset", default=None, help="array inside the --color-by group (e.g. coords)")
    pl.add_argument("--categorical", action="store_true", help="--color-by holds category codes (at most 20)")
    pl.add_argument("--bins", type=int, default=None,
                    help="pixels along the longer side, square (default sqrt(rows)/2 within 100..800)")  # fmt: skip
    pl.add_argument("--title", default=None)
    pl.add_argument("--columns", default="0,1", metavar="I,J", help="the two columns drawn (default 0,1)")
    pl.add_argument("--dataset", default=None, help="array inside the EMBEDDING group")
    pl.add_argument("--overwrite", action="store_true", help="replace a PNG that bigdr wrote")
    _common(pl)


def _add_evaluate(sub: Any) -> None:
    """The ``evaluate`` command."""
    e = sub.add_parser(
        "evaluate",
        help="measure how faithful an embedding is (trustworthiness, continuity, R_NX, ...)",
        description="Neighbourhood measures of EMBEDDING against INPUT with standard errors: every row a query up "
        "to 20,000 rows, else a uniform sample of queries ranked among all rows in two passes over both stores.",
    )
    e.add_argument("input", help="the data: zarr store, .npy, HDF5 or AnnData file")
    e.add_argument("embedding", nargs="+", help="one embedding of INPUT's rows, or several to compare")
    e.add_argument("--compare", nargs="+", default=[], metavar="EMBEDDING",
                   help="more embeddings of INPUT's rows, ranked beside the first")  # fmt: skip
    e.add_argument("--k", default="10,30,100", metavar="K1,K2,...", help="neighbourhood sizes (default 10,30,100)")
    e.add_argument("--queries", default="auto", metavar="N", help="query rows: a number, 'all' or 'auto' (default)")
    e.add_argument("--metric", default="euclidean", choices=["euclidean", "sqeuclidean", "cosine"])
    e.add_argument("--seed", type=int, default=0, help="seeds the queries (the same for every embedding)")
    e.add_argument("--dataset", default=None, help="array inside the INPUT group")
    e.add_argument("--embedding-dataset", default=None, help="array inside each EMBEDDING group")
    e.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON (a new file)")
    e.add_argument("--plot", default=None, metavar="PNG", help="also draw the R_NX(K) curves and the co-ranking block")
    e.add_argument("--overwrite", action="store_true", help="replace a JSON or PNG file that bigdr wrote")
    _common(e)


def _add_demo(sub: Any) -> None:
    """The ``demo`` command."""
    d = sub.add_parser(
        "demo",
        help="generate data, embed it, write the embedding and a scree plot",
        description="The end-to-end job: spiked-covariance data -> PCA (components chosen by the "
        "Marchenko-Pastur edge) -> embedding store, saved model and scree plot.",
    )
    d.add_argument("--out", default="bigdr-demo", help="output directory (default ./bigdr-demo)")
    d.add_argument("-n", "--n-samples", type=int, default=1_000_000)
    d.add_argument("-p", "--n-features", type=int, default=100)
    d.add_argument("--seed", type=int, default=0)
    _common(d)


def input_file(input_path: str) -> str:
    """The file or store an input argument names (``file.h5:/dataset`` -> ``file.h5``)."""
    import re

    return re.sub(r"(?i)(\.(h5|hdf5|hdf)):.*$", r"\1", str(input_path))


def user_message(exc: BaseException) -> str:
    """One line for the user of the command line: OS errors name path and cause, parameters become flags."""
    from ..io import describe_os_error

    if isinstance(exc, CommandLineError):
        return str(exc).strip().splitlines()[0]
    if isinstance(exc, OSError) and exc.filename:
        text = describe_os_error(exc)
    elif isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    else:
        text = str(exc).strip()
    text = text.splitlines()[0] if text else type(exc).__name__
    return cli_words(text)


def _takers(capability: str, argv: Sequence[str]) -> str:
    """`` (methods: a, b)`` for the help of an option that needs ``capability`` (only when fit-transform runs)."""
    if "fit-transform" not in argv:
        return ""
    from ..registry import with_capability

    return f" (methods: {', '.join(with_capability(capability))})"


def _flags() -> dict[str, str]:
    """Parameter -> flag wherever the command line spells a parameter otherwise (or it is unambiguous)."""
    spelled: dict[str, set[str]] = {"n_components": {"-k/--n-components"}}
    for takers in method_options().values():
        for _, p in takers:
            spelled.setdefault(p.name, set()).add(p.flag)
    return {name: flags.pop() for name, flags in spelled.items() if len(flags) == 1}


def _flag(param: str) -> str:
    return _flags().get(param, "--" + param.replace("_", "-"))


def cli_words(text: str) -> str:
    """Rewrite Python spellings in a message as command-line ones.

    ``pass overwrite=True (command line: --overwrite)`` -> ``pass --overwrite``;
    ``on_disconnected='largest'`` -> ``--on-disconnected largest``, and
    ``kernel='umap'`` -> ``--kernel umap`` (a one-word name only when the
    command line takes it); a bare ``n_neighbors`` -> ``--n-neighbors``.
    """
    import re

    text = re.sub(r"[\w.-]+=\S+? \(command line: ([^)]*)\)", r"\1", text)
    text = text.replace("bigdr.memory-limit", "--memory-limit")

    def assignment(m: re.Match) -> str:
        param, value = m.group(1), m.group(2).strip("'\"")
        if "_" not in param and param not in _flags():  # a one-word name: only a parameter the line takes
            return m.group(0)
        if value == "True":
            return _flag(param)
        return f"{_flag(param)} {'none' if value == 'None' else value}"

    text = re.sub(r"\b([a-z]+(?:_[a-z_]+)?)=('[^']*'|\"[^\"]*\"|[\w.+-]+)", assignment, text)
    text = re.sub(r"(?<![-\w])(" + "|".join(map(re.escape, _cli_params())) + r")\b", lambda m: _flag(m.group(1)), text)
    # A message that opens with a one-word parameter ("landmarks must be an int") names its flag.
    return re.sub(r"^([a-z]+)(?= must\b)", lambda m: _flags().get(m.group(1), m.group(1)), text)


def _cli_params() -> list[str]:
    """Parameter names with an underscore that the command line takes as flags."""
    names = {n for n in _flags() if "_" in n} | {"allow_missing_chunks"}
    return sorted(names, key=len, reverse=True)
