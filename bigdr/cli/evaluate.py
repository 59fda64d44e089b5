"""The ``bigdr evaluate`` command: quality measures of one or more embeddings of the same rows."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path


def _ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        raise ValueError(f"--k takes comma-separated neighbourhood sizes, e.g. 10,30,100; got {text!r}.") from None
    return ks


def _queries(text: str) -> int | str | None:
    if text in ("auto", "all"):
        return None if text == "all" else "auto"
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--queries takes a number, 'all' or 'auto'; got {text!r}.") from None


def cmd_evaluate(args) -> int:
    from ..io import as_array, check_output
    from ..io.outputs import REPORT_MARKER, publish
    from ..metrics import evaluate
    from .args import input_file

    ks, n_queries = _ks(args.k), _queries(args.queries)
    final = picture = None
    paths = list(dict.fromkeys([*args.embedding, *args.compare]))  # in order, each once
    inputs = [input_file(args.input)] + [input_file(e) for e in paths]
    if args.json:  # checked before any work
        final = check_output(args.json, "report", overwrite=args.overwrite, inputs=inputs)
    if args.plot:
        others = [final] if final is not None else []
        picture = check_output(args.plot, "png", overwrite=args.overwrite, inputs=inputs, others=others)
    X = as_array(args.input, dataset=args.dataset, name="input")
    embeddings = [as_array(e, dataset=args.embedding_dataset, name="embedding") for e in paths]
    for path, Y in zip(paths, embeddings):
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"{path} has {Y.shape[0]:,} rows and {args.input} {X.shape[0]:,}; give embeddings of "
                             f"INPUT's rows, in their order.")  # fmt: skip
    reports = {}
    for path, Y in zip(paths, embeddings):
        t0 = time.perf_counter()
        report = evaluate(X, Y, ks, n_queries=n_queries, metric=args.metric, random_state=args.seed)
        print(f"{path} ({time.perf_counter() - t0:.1f} s)\n{report}\n")
        reports[path] = report
    if len(reports) > 1:
        _compare(reports, ks)
    if picture is not None:
        from ..plot import quality

        fd, tmp = tempfile.mkstemp(dir=picture.parent, prefix=f".{picture.name}.", suffix=".partial.png")
        os.close(fd)
        try:
            quality(reports, tmp)
            publish(Path(tmp), picture, args.overwrite)
        finally:
            Path(tmp).unlink(missing_ok=True)
        print(f"drawn to {picture}")
    if final is not None:
        out = {
            REPORT_MARKER: "evaluate",
            "input": args.input,
            "embeddings": {p: r.to_dict() for p, r in reports.items()},
        }
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".partial")
        with os.fdopen(fd, "w") as fh:
            json.dump(out, fh, indent=1)
        publish(Path(tmp), final, args.overwrite)
        print(f"written to {final}")
    return 0


def _compare(reports: dict, ks: tuple[int, ...]) -> None:
    """Embeddings ranked by the area under R_NX(K), then the measures side by side at the largest K."""
    k = max(ks)
    ranked = sorted(reports.items(), key=lambda item: -item[1].auc)
    print(f"Ranked by the area under R_NX(K) (log K); measures at K = {k}")
    print("| rank | embedding | AUC R_NX | trustworthiness | continuity | knn_jaccard |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, (path, r) in enumerate(ranked, 1):
        cells = " | ".join(f"{r.values[m][k]:.4f} ± {r.errors[m][k]:.4f}" for m in ("trustworthiness", "continuity",
                                                                                      "knn_jaccard"))  # fmt: skip
        print(f"| {i} | {path} | {r.auc:.4f} ± {r.auc_error:.4f} | {cells} |")
