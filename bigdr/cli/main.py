"""The ``bigdr`` command line.

Every command takes ``--scheduler`` (default ``$BIGDR_SCHEDULER`` or
``threads``). Bad input ends with a one-line ``bigdr: error: ...`` on stderr
and exit status 2, never a traceback, and leaves no output behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .._version import __version__
from ..registry import METHODS, make_estimator, suggest, with_capability
from .args import (
    USER_ERRORS,
    CommandLineError,
    build_parser,
    cli_words,
    dataset_of,
    input_file,
    method_options,
    user_message,
)
from .evaluate import cmd_evaluate
from .info import cmd_info, read_key


def _cmd_generate(args) -> int:
    from ..datasets import generate

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


#: ``-k`` when not given, for the methods that have ``n_components`` (the others are left without it).
DEFAULT_COMPONENTS = 2
_NOT_GIVEN = object()  # -k absent (None is "-k none": every component)


def _fit_transform(
    input_path,
    output,
    *,
    n_components=_NOT_GIVEN,
    method="pca",
    dataset=None,
    save_model=None,
    model_key=None,
    scree=None,
    biplot=None,
    structure=None,
    overwrite=False,
    report=False,
    resume=False,
    dry_run=False,
    obsm=None,
    mask_var=None,
    **options,
):
    """Fit a method on a store and write the embedding; shared by ``fit-transform`` and ``demo``.

    Every output is checked before the input is read; the model and the plot
    are written under hidden names first and published only after the
    embedding, so a failure anywhere publishes nothing new.
    """
    from ..io import batch_identity, check_output, publish, write_zarr
    from ..io.outputs import remove, temporary_sibling

    if n_components is not _NOT_GIVEN:
        options = {"n_components": n_components, **options}
    elif method in METHODS and "n_components" in METHODS[method].cls().get_params():
        options = {"n_components": DEFAULT_COMPONENTS, **options}
    model = make_estimator(method, options)
    for asked, capability, flag, what in (
        (scree, "spectrum", "--scree", "draws a spectrum"),
        (biplot, "loadings", "--biplot", "draws loadings"),
        (structure, "structure", "--structure", "draws a fitted curve or ridge"),
        (report, "distortion", "--report", "measures a random projection's distortion"),
    ):
        if asked and capability not in model._capabilities:
            takers = ", ".join(with_capability(capability))
            raise ValueError(f"{flag} {what}: it applies to --method {takers}, not {method}.")
    if model_key is not None and not save_model:
        raise ValueError("--model-key-file signs the model written by --save-model; add --save-model PATH.")
    inputs = [input_file(input_path)]
    if (output is None) == (obsm is None):
        raise ValueError("Give an OUTPUT store or --obsm KEY (into the input AnnData store), one of them.")
    if obsm is not None:
        from ..io.obsm import check_obsm

        check_obsm(str(input_path), obsm, overwrite, also=model._anndata_names(obsm))
    outputs = {"store": output, "model": save_model, "png": scree, "biplot": biplot, "structure": structure}
    for kind, path in outputs.items():
        if path:
            others = [q for k, q in outputs.items() if q and k != kind]
            check_output(
                path,
                "png" if kind in ("biplot", "structure") else kind,
                overwrite=overwrite,
                inputs=inputs,
                others=others,
            )
    from ..io.anndata import model_genes

    X = model_genes(model, model.read_input(input_path, dataset), input_path, dataset, mask_var)
    if dry_run:
        from ..runtime.memory import format_bytes, memory_limit

        estimate = model.estimate_memory(X)
        limit, source = memory_limit()
        shown = f"{format_bytes(limit)} ({source})" if limit is not None else "not checked"
        print(f"{type(model).__name__} on {X.shape[0]} x {X.shape[1]} {X.dtype} (chunks of {max(X.chunks[0])} rows)")
        print(f"  estimated peak memory: {estimate.describe()}")
        print(f"  memory limit: {shown}; {'fits' if limit is None or estimate.total <= limit else 'refused'}")
        checked = [f"obsm[{obsm!r}] of {input_path}"] if obsm is not None else []
        checked += [str(p) for p in outputs.values() if p]
        print(f"  outputs checked: {', '.join(checked)}; nothing was written")
        return model, X.shape, 0.0, 0.0
    import warnings

    from ..exceptions import GeneSelectionWarning

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        if mask_var == "none":  # every gene, as asked
            warnings.simplefilter("ignore", GeneSelectionWarning)
        Y = model.fit_transform(X)
    t_fit = time.perf_counter() - t0
    attrs = {
        "method": method,
        "params": model.get_params(),
        "input": str(input_path),
        "input_shape": list(X.shape),
        "batch": batch_identity(X),
        **model.summary(),
    }
    if report:
        from ..random_projection import distortion_report

        attrs["distortion"] = model._distortion = distortion_report(model, X)
    staged: list[tuple[Path, Path]] = []
    try:
        if save_model:
            from ..io.model import stage_model

            staged.append((stage_model(model, Path(save_model), key=model_key), Path(save_model)))
        if scree:
            from ..plot import spectrum_plot

            tmp = temporary_sibling(Path(scree))
            staged.append((tmp, Path(scree)))
            spectrum_plot(model, tmp)
        t0 = time.perf_counter()
        if obsm is not None:
            from ..io import write_obsm

            write_obsm(Y, input_path, obsm, overwrite=overwrite, model=model)
        else:
            write_zarr(Y, output, attrs=attrs, overwrite=overwrite, resume=resume)
        t_write = time.perf_counter() - t0
        if biplot:  # from the embedding just written, so the input is not read again
            from ..plot import biplot as draw_biplot

            tmp = temporary_sibling(Path(biplot))
            staged.append((tmp, Path(biplot)))
            draw_biplot(model, None, tmp, scores=Y if obsm is not None else output)
        if structure:  # the input's density: a second read of the input
            from ..plot import structure as draw_structure

            tmp = temporary_sibling(Path(structure))
            staged.append((tmp, Path(structure)))
            draw_structure(model, X, tmp)
        for tmp, final in staged:
            publish(tmp, final, overwrite)
    finally:
        for tmp, _ in staged:
            if tmp.exists():
                remove(tmp)
    return model, X.shape, t_fit, t_write


def _cmd_fit_transform(args) -> int:
    # Options not given are absent (argparse.SUPPRESS): the method's own defaults apply.
    options = {name: getattr(args, name) for name in method_options() if hasattr(args, name)}
    if options.get("random_state") is None:  # not given: 0 for the methods that draw, nothing for the others
        options.pop("random_state", None)
        if args.method in METHODS and "random_state" in METHODS[args.method].cls().get_params():
            options["random_state"] = 0
    model, shape, t_fit, t_write = _fit_transform(
        args.input,
        args.output,
        n_components=getattr(args, "n_components", _NOT_GIVEN),
        method=args.method,
        dataset=dataset_of(args),
        save_model=args.save_model,
        model_key=read_key(args.model_key_file),
        scree=args.scree,
        biplot=args.biplot,
        structure=args.structure,
        overwrite=args.overwrite,
        report=args.report,
        resume=args.resume,
        dry_run=args.dry_run,
        obsm=args.obsm,
        mask_var=args.mask_var,
        **options,
    )
    if args.dry_run:
        return 0
    where = f"obsm[{args.obsm!r}] of {args.input}" if args.obsm else args.output
    print(
        f"{model.describe()} on {shape[0]} x {shape[1]}; fit {t_fit:.1f} s, embedding written to {where} "
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
    if args.biplot:
        print(f"biplot written to {args.biplot}")
    if args.structure:
        print(f"picture of the fitted structure written to {args.structure}")
    return 0


def _load_model(path: str, key_file: str | None):
    from ..persist import load

    return load(path, key=read_key(key_file))


def _print_drift(model, n_rows: int, beyond) -> None:
    if beyond is None:
        return
    from ..core.drift import describe_drift, drift_report

    if not isinstance(beyond, (int, float)) and hasattr(beyond, "compute"):  # resumed: not computed with the rows
        beyond = beyond.compute()
    print("  " + describe_drift(drift_report(n_rows, int(beyond), *model._drift_rule())))


def _cmd_transform(args) -> int:
    from ..io import append_zarr, batch_identity, check_growable, check_output, check_repeat, write_zarr

    model = _load_model(args.model, args.model_key_file)
    inputs = [input_file(args.input), args.model]
    append = args.append and Path(args.output).exists()
    if append:
        check_growable(args.output, inputs)
    else:
        check_output(args.output, "store", overwrite=args.overwrite, inputs=inputs)
    from ..io.anndata import model_genes

    X = model_genes(model, model.read_input(args.input, dataset_of(args)), args.input, dataset_of(args))
    batch = batch_identity(X)
    if append:
        check_repeat(args.output, batch, args.allow_repeat)
    t0 = time.perf_counter()
    Y, beyond = model.embed_with_drift(X)
    also = {"beyond": beyond} if beyond is not None else None
    if append:
        append_zarr(Y, args.output, resume=args.resume, source=f"{args.input} (bigdr transform with {args.model})",
                    also=also, batch=batch, allow_repeat=args.allow_repeat)  # fmt: skip
        done = "appended to"
    else:
        attrs = {"model": str(args.model), "class": type(model).__name__, "input": str(args.input), "batch": batch}
        write_zarr(Y, args.output, attrs=attrs, overwrite=args.overwrite, resume=args.resume, also=also)
        done = "written to"
    print(
        f"{X.shape[0]} rows embedded with {model.describe()}; {done} {args.output} in {time.perf_counter() - t0:.1f} s"
    )
    _print_drift(model, X.shape[0], also["beyond"] if also else None)
    return 0


def _cmd_update(args) -> int:
    from ..io import append_zarr, batch_identity, check_growable, check_repeat
    from ..io.model import stage_model
    from ..io.outputs import publish, remove

    key = read_key(args.model_key_file)
    model = _load_model(args.model, args.model_key_file)
    inputs = [input_file(args.new_rows), args.model]
    if args.embedding:
        check_growable(args.embedding, inputs)
    if args.policy == "refresh" and not hasattr(model, "partial_fit"):
        raise ValueError(f"{type(model).__name__} cannot learn from new rows; use --policy freeze (place them only).")
    import zarr

    if "hmac_sha256" in zarr.open(args.model, mode="r").attrs and key is None and args.policy == "refresh":
        raise ValueError("The model is signed; give --model-key-file to check it and sign the updated model.")
    from ..io.anndata import model_genes

    X = model_genes(model, model.read_input(args.new_rows, dataset_of(args)), args.new_rows, dataset_of(args))
    batch = batch_identity(X)
    if args.embedding:
        check_repeat(args.embedding, batch, args.allow_repeat)
    t0 = time.perf_counter()
    if args.policy == "refresh":
        _learn(model, X, args.new_rows)
        t_learn = time.perf_counter() - t0
        report = getattr(model, "drift_", None)
        Y, beyond = model.transform(X), None
    else:
        t_learn = 0.0
        report = None
        Y, beyond = model.embed_with_drift(X)
    also = {"beyond": beyond} if beyond is not None else None
    staged = stage_model(model, Path(args.model), key=key) if args.policy == "refresh" else None
    try:
        if args.embedding:
            source = f"{args.new_rows} (bigdr update of {args.model}, {args.policy})"
            append_zarr(Y, args.embedding, resume=args.resume, source=source, also=also, batch=batch,
                        allow_repeat=args.allow_repeat)  # fmt: skip
        if staged is not None:
            publish(staged, Path(args.model), overwrite=True)  # the old model is replaced only now, atomically
    finally:
        if staged is not None and staged.exists():
            remove(staged)
    what = "learnt by" if args.policy == "refresh" else "placed by (frozen)"
    n_seen = getattr(model, "n_samples_seen_", None)
    print(
        f"{X.shape[0]} rows {what} {model.describe()} in {t_learn:.1f} s"
        + (f"; {n_seen} rows seen" if n_seen is not None and args.policy == "refresh" else "")
        + (f"; embedding appended to {args.embedding}" if args.embedding else "")
        + f" ({time.perf_counter() - t0:.1f} s in all)"
    )
    if report is not None:
        from ..core.drift import describe_drift

        print("  " + describe_drift(report))
    else:
        _print_drift(model, X.shape[0], also["beyond"] if also else None)
    return 0


def _learn(model, X, name: str) -> None:
    """``model.partial_fit(X)``; a refusal says what update can do about it, with the batch's drift."""
    try:
        model.partial_fit(X)
    except ValueError as exc:
        drift = ""
        if model._drift_rule() is not None:
            from ..core.drift import describe_drift, drift_report
            from ..runtime.compute import compute

            (beyond,) = compute(model.drift_count(X))
            drift = " Its " + describe_drift(drift_report(X.shape[0], int(beyond), *model._drift_rule())) + "."
        raise CommandLineError(
            f"{type(model).__name__} cannot learn from {name}: {str(exc).strip()} Those are parameters of the "
            f"saved model, which update keeps: refit with 'bigdr fit-transform' to change them, or place the "
            f"rows without learning with --policy freeze. Nothing was changed.{drift}"
        ) from exc


def _cmd_demo(args) -> int:
    from ..datasets import generate
    from ..io import check_output

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data, emb, model_path, png = out / "data.zarr", out / "embedding.zarr", out / "model.zarr", out / "scree.png"
    picture = check_output(out / "embedding.png", "png", overwrite=True)
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
    t0 = time.perf_counter()
    _draw(str(emb), picture, True, title=f"PCA of {shape[0]:,} rows: the first two components")
    print(f"  picture of the embedding written to {picture} ({time.perf_counter() - t0:.1f} s)")
    return 0


def _draw(Y, final: Path, overwrite: bool, **kwargs) -> None:
    """The embedding's picture, written aside and moved in (``final`` already checked)."""
    from ..io import publish, temporary_sibling
    from ..plot import embedding

    tmp = temporary_sibling(final)
    try:
        embedding(Y, tmp, **kwargs)
        publish(tmp, final, overwrite)
    finally:
        if tmp.exists():
            tmp.unlink()


def _cmd_plot(args) -> int:
    from ..io import as_array, check_output

    colour_path, column = args.color_by, 0
    if colour_path and ":" in Path(colour_path).name:
        colour_path, _, col = colour_path.rpartition(":")
        column = int(col)
    inputs = [input_file(args.embedding)] + ([input_file(colour_path)] if colour_path else [])
    final = check_output(args.output, "png", overwrite=args.overwrite, inputs=inputs)
    Y = as_array(args.embedding, dataset=args.dataset, name="embedding", min_rows=1)
    colour = None
    if colour_path:
        colour = as_array(colour_path, dataset=args.color_dataset, name="--color-by", min_rows=1)[:, column]
    t0 = time.perf_counter()
    bins = "auto" if args.bins is None else args.bins
    try:
        i, j = (int(c) for c in args.columns.split(","))
    except ValueError:
        raise ValueError(f"--columns takes two column numbers, e.g. 0,2; got {args.columns!r}.") from None
    _draw(Y, final, args.overwrite, color_by=colour, categorical=args.categorical, bins=bins, title=args.title,
          columns=(i, j))  # fmt: skip
    print(f"{Y.shape[0]:,} rows drawn to {final} in {time.perf_counter() - t0:.1f} s")
    return 0


COMMANDS = {
    "plot": _cmd_plot,
    "generate": _cmd_generate,
    "fit-transform": _cmd_fit_transform,
    "transform": _cmd_transform,
    "update": _cmd_update,
    "info": cmd_info,
    "evaluate": cmd_evaluate,
    "demo": _cmd_demo,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # reported by the command's own parser, with the nearest of its options
        own = parser.commands.get(args.command, parser)
        flags = [s for a in own._actions for s in a.option_strings]  # argparse lists its options nowhere public
        own.error(f"unrecognized arguments: {' '.join(unknown)}{suggest(unknown[0].split('=')[0], flags)}")
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

        from ..runtime.compute import progress
        from ..runtime.scheduler import use_scheduler

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
            progress(False if args.no_progress else ("bar" if sys.stderr.isatty() else "lines")),
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


def _resume_hint(args) -> str:
    output = getattr(args, "output", None)
    if output is None or args.command not in ("fit-transform", "generate"):
        return ""
    from ..io import partial_path

    part = partial_path(output)
    if not part.exists():
        return ""
    return (
        f" The blocks written so far are kept in {part}; rerun the same command with --resume to finish, "
        f"or remove that directory."
    )


def run() -> None:
    """The console entry point: :func:`main`, then exit; after an interrupt, at once.

    After Ctrl-C, dask's worker threads may still be finishing blocks, or be
    stuck on a lock the interrupted main thread held; waiting for them at
    interpreter exit once hung a process for over a minute. Blocks already
    staged are safe for ``--resume`` (a hard kill leaves the same state).
    """
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
