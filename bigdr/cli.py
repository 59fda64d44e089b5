"""The ``bigdr`` command line.

Every command takes ``--scheduler`` (default ``$BIGDR_SCHEDULER`` or
``threads``). Bad input ends with a one-line ``bigdr: error: ...`` on stderr
and exit status 2, never a traceback, and leaves no output behind.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ._version import __version__
from .methods import METHODS, make_estimator

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
)
#: Python parameters the command line spells otherwise (everything else: ``a_b`` -> ``--a-b``).
FLAG_OF = {"n_landmarks": "--landmarks", "n_components": "-k/--n-components"}
USER_ERRORS = (ValueError, TypeError, KeyError, OSError)


def _n_components(text: str):
    if text == "auto":
        return "auto"
    if text in ("mp", "none", "None"):
        return None if text.lower() == "none" else "mp"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an int, a fraction in (0, 1), 'mp' or 'none'; got {text!r}"
        ) from None


def _landmarks(text: str):
    if text in ("auto", "none", "None"):
        return None if text.lower() == "none" else "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'auto', 'none' (exact) or a number of landmarks; got {text!r}"
        ) from None


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
    p.add_argument("--no-progress", action="store_true", help="do not show progress bars")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bigdr", description="Dimensionality reduction for data larger than memory.")
    parser.add_argument("--version", action="version", version=f"bigdr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    g = sub.add_parser(
        "generate",
        help="write a synthetic data set to a zarr store",
        description="Write a synthetic data set (group with arrays X and coords) chunk by chunk.",
    )
    g.add_argument("kind", choices=["swiss-roll", "s-curve", "spiked", "blobs"])
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
    f.add_argument("output", help="destination zarr store for the embedding")
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
        default=2,
        help="int, fraction of variance in (0,1), 'mp' or 'none' (default 2)",
    )
    f.add_argument(
        "--svd-solver", default=argparse.SUPPRESS, choices=["auto", "covariance", "tsqr", "samples", "randomized"]
    )
    f.add_argument("--whiten", action="store_const", const=True, default=argparse.SUPPRESS, help="pca only")
    f.add_argument(
        "--n-neighbors",
        type=int,
        default=argparse.SUPPRESS,
        help="isomap, diffusion-map, spectral-embedding: neighbours per row in the graph "
        "(default: the method's own, 10 or 15)",
    )
    f.add_argument(
        "--landmarks",
        type=_landmarks,
        default=argparse.SUPPRESS,
        help="isomap: 'auto', 'none' (exact) or a count; landmark-mds: a count (default 500); "
        "diffusion-map, spectral-embedding: 'auto', 'none' (all rows) or a count",
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
        help="isomap (raise, largest, join), diffusion-map and spectral-embedding (warn, raise): what to do "
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
        default=0,
        help="seed (default 0: the same command gives the same output, so --resume can continue it)",
    )
    f.add_argument("--dataset", default=None, help="array inside a zarr group or HDF5 file")
    f.add_argument("--save-model", default=None, metavar="PATH", help="also save the fitted model here")
    f.add_argument(
        "--model-key-file",
        default=None,
        metavar="FILE",
        help="sign the saved model with the key in FILE (HMAC-SHA256), so others can check it with 'bigdr info'",
    )
    f.add_argument("--scree", default=None, metavar="PNG", help="also write a scree plot")
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


def _cmd_generate(args) -> int:
    from .datasets import generate

    params = {"seed": args.seed, "dtype": args.dtype}
    if args.noise is not None:
        params["noise"] = args.noise
    if args.kind in ("spiked", "blobs"):
        if args.n_features is not None:
            params["n_features"] = args.n_features
    elif args.n_features not in (None, 3):
        raise ValueError(f"{args.kind} data are 3-D; drop --n-features.")
    if args.spikes is not None:
        if args.kind != "spiked":
            raise ValueError("--spikes applies to 'spiked' data only.")
        params["spikes"] = args.spikes
    if args.centers is not None:
        if args.kind != "blobs":
            raise ValueError("--centers applies to 'blobs' data only.")
        params["centers"] = args.centers
    if args.chunk_rows is not None and args.chunk_rows < 1:
        raise ValueError(f"--chunk-rows must be positive; got {args.chunk_rows}.")
    t0 = time.perf_counter()
    path = generate(
        args.kind,
        args.output,
        args.n_samples,
        chunk_rows=args.chunk_rows,
        overwrite=args.overwrite,
        resume=args.resume,
        **params,
    )
    print(f"wrote {args.kind} data, {args.n_samples} rows, to {path} ({time.perf_counter() - t0:.1f} s)")
    return 0


def _density(text: str):
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number in (0, 1]; got {text!r}") from None


def _input_file(input_path) -> str:
    """The file or store an input argument names (``file.h5:/dataset`` -> ``file.h5``)."""
    import re

    return re.sub(r"(?i)(\.(h5|hdf5|hdf)):.*$", r"\1", str(input_path))


def _read_key(path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        key = Path(path).read_bytes().strip()
    except OSError as exc:
        raise ValueError(f"cannot read the key file {path}: {exc.strerror}") from None
    if len(key) < 16:
        raise ValueError(f"The key in {path} is shorter than 16 bytes; use a long random key.")
    return key


def _fit_transform(
    input_path,
    output,
    *,
    n_components,
    method="pca",
    dataset=None,
    save_model=None,
    model_key=None,
    scree=None,
    overwrite=False,
    report=False,
    resume=False,
    dry_run=False,
    **options,
):
    """Fit a method on a store and write the embedding; shared by ``fit-transform`` and ``demo``.

    Every output is checked before the input is read; the model and the plot
    are written under hidden names first and published only after the
    embedding, so a failure anywhere publishes nothing new.
    """
    from .io import check_output, publish, write_zarr
    from .io.outputs import remove, temporary_sibling

    model = make_estimator(method, {"n_components": n_components, **options})
    if scree and method != "pca":
        raise ValueError("--scree applies to --method pca only.")
    if report and not method.endswith("-rp"):
        raise ValueError("--report applies to --method gaussian-rp and sparse-rp only.")
    if model_key is not None and not save_model:
        raise ValueError("--model-key-file signs the model written by --save-model; add --save-model PATH.")
    inputs = [_input_file(input_path)]
    outputs = {"store": output, "model": save_model, "png": scree}
    for kind, path in outputs.items():
        if path:
            others = [q for k, q in outputs.items() if q and k != kind]
            check_output(path, kind, overwrite=overwrite, inputs=inputs, others=others)
    X = model.read_input(input_path, dataset)
    if dry_run:
        from .memory import format_bytes, memory_limit

        estimate = model.estimate_memory(X)
        limit, source = memory_limit()
        shown = f"{format_bytes(limit)} ({source})" if limit is not None else "not checked"
        print(f"{type(model).__name__} on {X.shape[0]} x {X.shape[1]} {X.dtype} (chunks of {max(X.chunks[0])} rows)")
        print(f"  estimated peak memory: {estimate.describe()}")
        print(f"  memory limit: {shown}; {'fits' if limit is None or estimate.total <= limit else 'refused'}")
        print(f"  outputs checked: {', '.join(str(p) for p in outputs.values() if p)}; nothing was written")
        return model, X.shape, 0.0, 0.0
    t0 = time.perf_counter()
    Y = model.fit_transform(X)
    t_fit = time.perf_counter() - t0
    attrs = {
        "method": method,
        "params": model.get_params(),
        "input": str(input_path),
        "input_shape": list(X.shape),
        **model.summary(),
    }
    if report:
        from .projection import distortion_report

        attrs["distortion"] = model._distortion = distortion_report(model, X)
    staged: list[tuple[Path, Path]] = []
    try:
        if save_model:
            from .io.model import stage_model

            staged.append((stage_model(model, Path(save_model), key=model_key), Path(save_model)))
        if scree:
            from .plot import scree_plot

            tmp = temporary_sibling(Path(scree))
            staged.append((tmp, Path(scree)))
            scree_plot(model, tmp)
        t0 = time.perf_counter()
        write_zarr(Y, output, attrs=attrs, overwrite=overwrite, resume=resume)
        t_write = time.perf_counter() - t0
        for tmp, final in staged:
            publish(tmp, final, overwrite)
    finally:
        for tmp, _ in staged:
            if tmp.exists():
                remove(tmp)
    return model, X.shape, t_fit, t_write


def _cmd_fit_transform(args) -> int:
    # Options not given are absent (argparse.SUPPRESS): the method's own defaults apply.
    options = {name: getattr(args, name) for name in METHOD_OPTIONS if hasattr(args, name)}
    model, shape, t_fit, t_write = _fit_transform(
        args.input,
        args.output,
        n_components=args.n_components,
        method=args.method,
        dataset=args.dataset,
        save_model=args.save_model,
        model_key=_read_key(args.model_key_file),
        scree=args.scree,
        overwrite=args.overwrite,
        report=args.report,
        resume=args.resume,
        dry_run=args.dry_run,
        **options,
    )
    if args.dry_run:
        return 0
    print(
        f"{model.describe()} on {shape[0]} x {shape[1]}; fit {t_fit:.1f} s, embedding written to {args.output} "
        f"in {t_write:.1f} s"
    )
    if args.report:
        r = model._distortion
        q = r["quantiles"]
        print(
            f"distortion |f(x)-f(y)|^2/|x-y|^2 over {r['n_pairs']} pairs: median {q['50%']:.4f}, 1%-99% "
            f"[{q['1%']:.4f}, {q['99%']:.4f}], min {q['min']:.4f}, max {q['max']:.4f}; "
            f"{100 * r['within_eps']:.2f}% within 1 +- {r['eps']}"
        )
    if args.save_model:
        print(f"model saved to {args.save_model}")
    if args.scree:
        print(f"scree plot written to {args.scree}")
    return 0


def _describe_array(name: str, a) -> str:
    return f"{name}: shape {tuple(a.shape)}, dtype {a.dtype}, chunks {tuple(a.chunks) if a.chunks else None}"


def _cmd_info(args) -> int:
    path = args.path
    lower = path.lower()
    if lower.endswith(".npy"):
        import numpy as np

        a = np.load(path, mmap_mode="r", allow_pickle=False)
        print(f"{path}: npy, shape {a.shape}, dtype {a.dtype}")
        return 0
    if lower.endswith((".h5", ".hdf5")) or ".h5:" in lower:
        import h5py

        with h5py.File(path.split(":")[0], "r") as fh:
            fh.visititems(lambda n, o: print(_describe_array(n, o)) if isinstance(o, h5py.Dataset) else None)
        return 0
    import zarr

    if not os.path.exists(path) and "://" not in path:
        raise FileNotFoundError(f"No such store or file: {path!r}")
    try:
        node = zarr.open(path, mode="r")
    except Exception as exc:
        raise ValueError(f"{path!r} is not a zarr store, .npy or HDF5 file ({exc}).") from exc
    attrs = dict(node.attrs)
    if attrs.get("format") == "bigdr-model":
        from .persist import load

        key = _read_key(args.model_key_file)
        model = load(path, key=key)
        signed = "signature checked" if key else ("signed" if "hmac_sha256" in attrs else "unsigned")
        print(
            f"{path}: bigdr model {attrs['class']} (format {attrs['format_version']}, bigdr {attrs['bigdr_version']}, "
            f"{signed})"
        )
        print(f"  params: {json.dumps(attrs['params'])}")
        for name in ("n_components_", "n_features_in_", "n_samples_seen_", "svd_solver_"):
            if hasattr(model, name):
                print(f"  {name} = {getattr(model, name)}")
        if hasattr(model, "explained_variance_ratio_"):
            print(f"  explained_variance_ratio_ = {[round(float(v), 4) for v in model.explained_variance_ratio_]}")
        return 0
    fmt = node.metadata.zarr_format
    if isinstance(node, zarr.Array):
        print(f"{path}: zarr v{fmt} array")
        print("  " + _describe_array("array", node))
    else:
        print(f"{path}: zarr v{fmt} group")
        for name in sorted(node.array_keys()):
            print("  " + _describe_array(name, node[name]))
    if attrs:
        print(f"  attributes: {json.dumps(attrs, default=str)}")
    return 0


def _cmd_demo(args) -> int:
    from .datasets import generate

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data, emb, model_path, png = out / "data.zarr", out / "embedding.zarr", out / "model.zarr", out / "scree.png"
    print(
        f"bigdr {__version__} demo: {args.n_samples} x {args.n_features} spiked-covariance data "
        f"(spikes 20, 10, 5 over unit noise), PCA with components chosen by the Marchenko-Pastur edge"
    )
    t0 = time.perf_counter()
    generate(
        "spiked", data, args.n_samples, n_features=args.n_features, seed=args.seed, dtype="float32", overwrite=True
    )
    print(f"  data written to {data} ({time.perf_counter() - t0:.1f} s)")
    model, shape, t_fit, t_write = _fit_transform(
        data, emb, n_components="mp", save_model=model_path, scree=png, overwrite=True
    )
    print(
        f"  PCA fit in one pass: {t_fit:.1f} s; kept {model.n_components_} components "
        f"(noise variance {model.mp_noise_variance_:.3f}, bulk edge {model.mp_edge_:.3f}), "
        f"variances {[round(float(v), 2) for v in model.explained_variance_]}"
    )
    print(f"  embedding ({shape[0]} x {model.n_components_}) written to {emb} ({t_write:.1f} s)")
    print(f"  model saved to {model_path}")
    print(f"  scree plot written to {png}")
    return 0


COMMANDS = {"generate": _cmd_generate, "fit-transform": _cmd_fit_transform, "info": _cmd_info, "demo": _cmd_demo}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    import warnings

    with warnings.catch_warnings():
        # Warnings reach the user as one line each, like errors, without source lines.
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        return _run(parser, args)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"bigdr: warning: {cli_words(str(message))}", file=sys.stderr)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        if args.command == "info":
            return COMMANDS["info"](args)
        import dask

        from ._compute import progress
        from .scheduler import use_scheduler

        config: dict = {}
        if getattr(args, "allow_missing_chunks", False):
            config["bigdr.allow-missing-chunks"] = True
        if getattr(args, "memory_limit", None) is not None:
            config["bigdr.memory-limit"] = args.memory_limit
        if getattr(args, "chunk_mib", None) is not None:
            if not args.chunk_mib > 0:
                raise ValueError(f"--chunk-mib must be positive; got {args.chunk_mib}.")
            config["bigdr.chunk-bytes"] = int(args.chunk_mib * 2**20)
        with (
            dask.config.set(config),
            use_scheduler(args.scheduler),
            progress(not args.no_progress and sys.stderr.isatty()),
        ):
            return COMMANDS[args.command](args)
    except USER_ERRORS as exc:
        print(f"bigdr: error: {user_message(exc)}{_resume_hint(args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bigdr: interrupted; nothing was published.{_resume_hint(args)}", file=sys.stderr)
        return 130
    except Exception as exc:
        if not _resume_hint(args):
            raise
        # A lost scheduler or workers: say how to continue, not a traceback.
        print(
            f"bigdr: error: the run failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})."
            f"{_resume_hint(args)}",
            file=sys.stderr,
        )
        return 1


def user_message(exc: BaseException) -> str:
    """One line for the user of the command line: OS errors name path and cause, parameters become flags."""
    from .io import describe_os_error

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


def _resume_hint(args) -> str:
    output = getattr(args, "output", None)
    if output is None or args.command not in ("fit-transform", "generate"):
        return ""
    from .io import partial_path

    part = partial_path(output)
    if not part.exists():
        return ""
    return (
        f" The blocks written so far are kept in {part}; rerun the same command with --resume to finish, "
        f"or remove that directory."
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
