"""The command line's arguments: option types, the parser, and messages spelled with its flags."""

from __future__ import annotations

import argparse

from .._version import __version__
from ..registry import METHODS

#: Options of ``fit-transform`` passed to the estimator (``--n-neighbors`` -> ``n_neighbors``).
METHOD_OPTIONS = (
    "svd_solver",
    "whiten",
    "n_neighbors",
    "landmarks",
    "eps",
    "density",
    "graph_sample",
    "random_state",
    "on_disconnected",
    "metric",
    "epsilon",
    "alpha",
    "partitions",
    "kernel",
    "gamma",
    "approximation",
    "n_fourier",
    "variant",
    "reg",
    "reference_size",
    "rotation",
    "sample_size",
    "n_centres",
    "n_vertices",
    "span",
    "dim",
    "bandwidth",
    "density_threshold",
    "n_queries",
    "support_size",
    "projection",
)
#: Python parameters the command line spells otherwise (everything else: ``a_b`` -> ``--a-b``).
FLAG_OF = {"n_landmarks": "--landmarks", "n_components": "-k/--n-components"}
USER_ERRORS = (ValueError, TypeError, KeyError, OSError)


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
            f"expected an int, a fraction in (0, 1), 'mp', 'mp-whitened' or 'none'; got {text!r}"
        ) from None


def _bandwidth(text: str):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive number; got {text!r}") from None


def _landmarks(text: str):
    if text in ("auto", "none", "None"):
        return None if text.lower() == "none" else "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'auto', 'none' (exact) or a number of landmarks; got {text!r}"
        ) from None


def _partitions(text: str):
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number of cells (>= 1); got {text!r}")
    return value


def _gamma(text: str):
    if text in ("scale", "auto"):
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'scale', 'auto' or a number; got {text!r}") from None


def _graph_sample(text: str):
    if text in ("auto", "all"):
        return None if text == "all" else "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto', 'all' or a number of rows; got {text!r}") from None


def _epsilon(text: str):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive kernel width; got {text!r}") from None


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers; got {text!r}") from None


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
    p.add_argument(
        "--model-key-file", default=None, metavar="FILE", help="check the model's signature (update: and re-sign it)"
    )
    p.add_argument("--resume", action="store_true", help="finish an interrupted write or append of the same command")
    p.add_argument("--allow-missing-chunks", action="store_true", help="accept absent chunk files in the input")
    _common(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bigdr", description="Dimensionality reduction for data larger than memory.")
    parser.add_argument("--version", action="version", version=f"bigdr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

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
        choices=list(METHODS),
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
        "--svd-solver", default=argparse.SUPPRESS, choices=["auto", "covariance", "tsqr", "samples", "randomized"]
    )
    f.add_argument("--whiten", action="store_const", const=True, default=argparse.SUPPRESS, help="pca only")
    f.add_argument(
        "--n-neighbors",
        type=int,
        default=argparse.SUPPRESS,
        help="isomap, diffusion-map, spectral-embedding, lle: neighbours per row in the graph "
        "(default: the method's own, 5, 10 or 15)",
    )
    f.add_argument(
        "--landmarks",
        type=_landmarks,
        default=argparse.SUPPRESS,
        help="isomap: 'auto', 'none' (exact) or a count; landmark-mds: a count (default 500); kernel-pca: a count; "
        "diffusion-map, spectral-embedding, lle: 'auto', 'none' (all rows) or a count",
    )
    f.add_argument(
        "--partitions",
        type=_partitions,
        default=argparse.SUPPRESS,
        help="diffusion-map, spectral-embedding: embed every row from the graph of all rows built by cells "
        "on the workers: 'auto' (one cell per 250,000 rows) or a number of cells",
    )
    f.add_argument(
        "--kernel",
        default=argparse.SUPPRESS,
        choices=["rbf", "laplacian", "poly", "sigmoid", "cosine", "linear", "precomputed"],
        help="kernel-pca: the kernel (default rbf)",
    )
    f.add_argument(
        "--gamma", type=_gamma, default=argparse.SUPPRESS, help="kernel-pca: 'scale' (default), 'auto' or a number"
    )
    f.add_argument(
        "--approximation",
        default=argparse.SUPPRESS,
        choices=["auto", "exact", "nystroem", "fourier"],
        help="kernel-pca: exact up to 20,000 rows with 'auto', Nystroem above; or random Fourier features",
    )
    f.add_argument("--n-fourier", type=int, default=argparse.SUPPRESS, help="kernel-pca: random features (4000)")
    f.add_argument(
        "--sample-size",
        type=int,
        default=argparse.SUPPRESS,
        help="ica, principal-curve, principal-manifold: iterate on a uniform sample of this many rows first, "
        "then finish with passes over all rows",
    )
    f.add_argument(
        "--rotation",
        default=argparse.SUPPRESS,
        choices=["varimax", "quartimax"],
        help="factor-analysis: orthogonal rotation of the loadings (default none)",
    )
    f.add_argument(
        "--variant",
        default=argparse.SUPPRESS,
        choices=["standard", "modified", "hessian", "ltsa"],
        help="lle: the local model (default standard)",
    )
    f.add_argument(
        "--reg",
        type=float,
        default=argparse.SUPPRESS,
        help="lle: regulariser relative to the local trace (1e-3); principal-curve, principal-manifold: the "
        "smoothness penalty lambda (1e-3)",
    )
    f.add_argument(
        "--n-centres",
        type=int,
        default=argparse.SUPPRESS,
        help="principal-curve, principal-manifold: kernel centres per latent axis (20; 10 for a manifold)",
    )
    f.add_argument(
        "--n-vertices", type=int, default=argparse.SUPPRESS, help="hastie-stuetzle: vertices of the polyline (100)"
    )
    f.add_argument(
        "--span",
        type=float,
        default=argparse.SUPPRESS,
        help="hastie-stuetzle: the smoother's final bandwidth as a fraction of the curve's length (0.02)",
    )
    f.add_argument("--dim", type=int, default=argparse.SUPPRESS, help="ridge: dimension of the ridge (1: filaments)")
    f.add_argument(
        "--bandwidth",
        type=_bandwidth,
        default=argparse.SUPPRESS,
        help="ridge: kernel bandwidth h, or 'auto' (Silverman's rule on the support)",
    )
    f.add_argument(
        "--density-threshold",
        type=float,
        default=argparse.SUPPRESS,
        help="ridge: drop query points below this fraction of the highest density (0.05)",
    )
    f.add_argument("--n-queries", type=int, default=argparse.SUPPRESS, help="ridge: points moved onto the ridge (5000)")
    f.add_argument(
        "--support-size",
        type=int,
        default=argparse.SUPPRESS,
        help="ridge: rows of the density's support; more rows are sampled down to this (50,000)",
    )
    f.add_argument(
        "--projection",
        default=argparse.SUPPRESS,
        choices=["nearest", "scms"],
        help="ridge: each row's ridge point: the nearest fitted one, or SCMS from the row",
    )
    f.add_argument(
        "--reference-size",
        type=int,
        default=argparse.SUPPRESS,
        help="lle with landmarks: rows among which each row's neighbours are found (100,000)",
    )
    f.add_argument(
        "--eps", type=float, default=argparse.SUPPRESS, help="gaussian-rp, sparse-rp: distortion for -k auto"
    )
    f.add_argument(
        "--density", type=_density, default=argparse.SUPPRESS, help="sparse-rp: 'auto' (1/sqrt(p)) or a fraction"
    )
    f.add_argument(
        "--report", action="store_true", help="gaussian-rp, sparse-rp: print and store the distortion of sampled pairs"
    )
    f.add_argument(
        "--graph-sample",
        type=_graph_sample,
        default=argparse.SUPPRESS,
        help="isomap: rows the graph is built on: 'auto', 'all' or a count",
    )
    f.add_argument(
        "--on-disconnected",
        choices=["raise", "warn", "largest", "join"],
        default=argparse.SUPPRESS,
        help="isomap (raise, largest, join), diffusion-map, spectral-embedding and lle (warn, raise): what to do "
        "when the neighbour graph falls apart",
    )
    f.add_argument(
        "--metric",
        default=argparse.SUPPRESS,
        help="distance between rows (default euclidean): classical-mds, landmark-mds, isomap, diffusion-map, "
        "spectral-embedding",
    )
    f.add_argument(
        "--epsilon",
        type=_epsilon,
        default=argparse.SUPPRESS,
        help="diffusion-map, spectral-embedding: Gaussian kernel width, or 'auto' (from neighbour distances)",
    )
    f.add_argument(
        "--alpha", type=float, default=argparse.SUPPRESS, help="diffusion-map: density normalisation in [0, 1]"
    )
    f.add_argument(
        "--random-state",
        type=int,
        default=None,
        help="seed of the methods that draw (default 0: the same command gives the same output, so --resume "
        "can continue it)",
    )
    f.add_argument("--dataset", default=None, help="array inside a zarr group or HDF5 file")
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
        help="also draw the spectrum: PCA's scree plot, Isomap's residual variance, the other methods' eigenvalues",
    )
    f.add_argument(
        "--biplot",
        default=None,
        metavar="PNG",
        help="pca, factor-analysis: also draw the biplot (scores as a density, loadings as labelled arrows)",
    )
    f.add_argument(
        "--structure",
        default=None,
        metavar="PNG",
        help="principal-curve, principal-manifold, ridge: also draw the data's density (its first two "
        "columns) with the fitted curve, manifold or ridge over it",
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
    pl.add_argument("--bins", type=int, default=None, help="pixels per side (default sqrt(rows)/2 within 100..800)")
    pl.add_argument("--title", default=None)
    pl.add_argument("--columns", default="0,1", metavar="I,J", help="the two columns drawn (default 0,1)")
    pl.add_argument("--dataset", default=None, help="array inside the EMBEDDING group")
    pl.add_argument("--overwrite", action="store_true", help="replace a PNG that bigdr wrote")
    _common(pl)

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
    return parser


def _density(text: str):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number in (0, 1]; got {text!r}") from None


def user_message(exc: BaseException) -> str:
    """One line for the user of the command line: OS errors name path and cause, parameters become flags."""
    from ..io import describe_os_error

    if isinstance(exc, OSError) and exc.filename:
        text = describe_os_error(exc)
    elif isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    else:
        text = str(exc).strip()
    text = text.splitlines()[0] if text else type(exc).__name__
    return cli_words(text)


def _flag(param: str) -> str:
    return FLAG_OF.get(param, "--" + param.replace("_", "-"))


def cli_words(text: str) -> str:
    """Rewrite Python spellings in a message as command-line ones.

    ``pass overwrite=True (command line: --overwrite)`` -> ``pass --overwrite``;
    ``on_disconnected='largest'`` -> ``--on-disconnected largest``; a bare
    ``n_neighbors`` -> ``--n-neighbors``.
    """
    import re

    text = re.sub(r"[\w.-]+=\S+? \(command line: ([^)]*)\)", r"\1", text)
    text = text.replace("bigdr.memory-limit", "--memory-limit")

    def assignment(m: re.Match) -> str:
        param, value = m.group(1), m.group(2).strip("'\"")
        if value == "True":
            return _flag(param)
        return f"{_flag(param)} {'none' if value == 'None' else value}"

    text = re.sub(r"\b([a-z]+_[a-z_]+)=('[^']*'|\"[^\"]*\"|[\w.+-]+)", assignment, text)
    text = re.sub(r"(?<![-\w])(" + "|".join(map(re.escape, _cli_params())) + r")\b", lambda m: _flag(m.group(1)), text)
    return text


def _cli_params() -> list[str]:
    """Parameter names with an underscore that the command line takes as flags."""
    names = {n for n in METHOD_OPTIONS if "_" in n} | {"allow_missing_chunks", "n_components", "n_landmarks"}
    return sorted(names, key=len, reverse=True)
