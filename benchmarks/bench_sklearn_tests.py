"""scikit-learn's own tests, run against bigdr's estimators (issue 35): how much of a drop-in bigdr is.

For each estimator with a scikit-learn counterpart, the installed scikit-learn's
test module for it is copied, and one line placed after its imports rebinds the
class name to bigdr's (``PCA = bigdr.PCA``); nothing else changes. pytest runs
the copy in a fresh process; every test case's outcome and, for a failure, the
exception's first line are kept, and each failure is put in a class by its
message:

* ``parameter``: a keyword scikit-learn passes that bigdr does not take;
* ``attribute``: an attribute or method scikit-learn's test reads that bigdr lacks;
* ``value``: a value (parameter value, input form) bigdr refuses;
* ``exception``: another exception or warning, or another message, than scikit-learn's;
* ``numerical``: an assertion on numbers;
* ``private``: the test imports scikit-learn's private functions or solver internals
  (collection errors included), which do not apply;
* ``other``: anything else (read the message).

``python benchmarks/bench_sklearn_tests.py run`` writes ``results/sklearn_tests.{json,md}``,
which lists every failure with its message: the work list of issue 35.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import run_sections  # noqa: E402

#: scikit-learn test module (relative to the package) -> the classes swapped for bigdr's.
MODULES = {
    "decomposition/tests/test_pca.py": ["PCA"],
    "decomposition/tests/test_truncated_svd.py": ["TruncatedSVD"],
    "decomposition/tests/test_kernel_pca.py": ["KernelPCA"],
    "decomposition/tests/test_factor_analysis.py": ["FactorAnalysis"],
    "decomposition/tests/test_fastica.py": ["FastICA"],
    "manifold/tests/test_isomap.py": ["Isomap"],
    "manifold/tests/test_locally_linear.py": ["LocallyLinearEmbedding"],
    "manifold/tests/test_spectral_embedding.py": ["SpectralEmbedding"],
    "manifold/tests/test_classical_mds.py": ["ClassicalMDS"],
    "tests/test_random_projection.py": ["GaussianRandomProjection", "SparseRandomProjection"],
}
#: Seconds per module (bigdr's dask graphs make scikit-learn's many tiny fits slower).
TIMEOUT = 1200


def swapped(source: str, names: list[str]) -> str:
    """The module's source with ``NAME = bigdr.NAME`` after its last top-level import."""
    import ast

    imports = [node for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    end = max(node.end_lineno or node.lineno for node in imports)
    lines = source.splitlines()
    swap = ["import bigdr as _bigdr  # swapped in by bench_sklearn_tests.py", *(f"{n} = _bigdr.{n}" for n in names)]
    return "\n".join([*lines[:end], *swap, *lines[end:]]) + "\n"


def private_functions(source: str) -> set[str]:
    """Names the module imports from the estimators' own packages that are private there
    (``sklearn.decomposition._pca._assess_dimension``, ``sklearn.random_projection._sparse_random_matrix``);
    scikit-learn's testing helpers (``sklearn.utils._testing``) are not."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and re.match(r"sklearn\.(decomposition|manifold|random_projection)",
                                                          node.module or ""):  # fmt: skip
            private_module = any(part.startswith("_") for part in (node.module or "").split("."))
            names |= {a.asname or a.name for a in node.names if private_module or a.name.startswith("_")}
    return names


def kind(message: str, private: bool) -> str:
    if private:
        return "private"
    if re.search(r"DID NOT RAISE|DID NOT WARN|Regex pattern did not match|No warnings of type", message):
        return "exception"
    if re.search(r"unexpected keyword argument|got an unexpected keyword", message):
        return "parameter"
    if re.search(r"has no attribute|object has no attribute", message):
        return "attribute"
    if message.startswith(("AssertionError", "assert ")) or re.search(r"Not equal to tolerance|Mismatched elements|"
                                                                      r"Arrays are not", message):  # fmt: skip
        return "numerical"
    if message.startswith(("ValueError", "TypeError")):
        return "value"
    return "other"


def run_module(relative: str, names: list[str]) -> dict:
    import sklearn

    source = (Path(sklearn.__file__).parent / relative).read_text()
    private_names = private_functions(source)
    with tempfile.TemporaryDirectory() as tmp:
        test = Path(tmp) / Path(relative).name
        test.write_text(swapped(source, names))
        report = Path(tmp) / "report.xml"
        cmd = [sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "sklearn.conftest",
               f"--junitxml={report}", "-W", "ignore"]  # fmt: skip
        try:
            env = {**os.environ, "SKLEARN_RUN_FLOAT32_TESTS": "1"}  # float32 cases too (opt-in in scikit-learn)
            subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            return {"module": relative, "timeout": TIMEOUT}
        if not report.exists():
            return {"module": relative, "error": "no report"}
        cases = []
        for case in ET.parse(report).getroot().iter("testcase"):
            name = case.get("name", "")
            outcome, message = "passed", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed" if child.tag == "failure" else "error"
                    lines = [ln for ln in (child.text or "").strip().splitlines() if ln.startswith("E ")]
                    message = (child.get("message") or "").strip()
                    if message in ("collection failure", "") or message.startswith("failed on setup"):
                        message = lines[0][1:].strip() if lines else message  # the error itself
                elif child.tag == "skipped":
                    outcome = "skipped"
            body = source[source.find(f"def {name.split('[')[0]}(") :][:4000]
            uses_private = bool(private_names) and any(re.search(rf"\b{n}\b", body) for n in private_names)
            cases.append({"name": name, "outcome": outcome, "message": message[:300],
                          "kind": kind(message, uses_private) if outcome in ("failed", "error") else ""})  # fmt: skip
    return {"module": relative, "classes": names, "cases": cases}


def summary(result: dict) -> dict:
    cases = result.get("cases", [])
    counts = Counter(c["outcome"] for c in cases)
    kinds = Counter(c["kind"] for c in cases if c["kind"])
    ran = counts["passed"] + counts["failed"] + counts["error"]
    applicable = ran - kinds["private"]
    return {"passed": counts["passed"], "failed": counts["failed"] + counts["error"], "skipped": counts["skipped"],
            "applicable": applicable, "pass_rate": counts["passed"] / applicable if applicable else float("nan"),
            "kinds": dict(kinds)}  # fmt: skip


def run_all() -> tuple[dict, str]:
    import sklearn

    out: dict = {"scikit-learn": sklearn.__version__, "modules": {}}
    rows, failures = [], []
    for relative, names in MODULES.items():
        result = run_module(relative, names)
        result["summary"] = summary(result)
        out["modules"][relative] = result
        s = result["summary"]
        print(relative, s, flush=True)
        if "timeout" in result or "error" in result:
            rows.append(f"| {', '.join(names)} | `{relative}` | {result.get('timeout', result.get('error'))} | | | | |")
            continue
        k = ", ".join(f"{n} {c}" for n, c in sorted(s["kinds"].items()))
        rows.append(f"| {', '.join(names)} | `{relative}` | {s['passed']} | {s['failed']} | {s['skipped']} | "
                    f"{100 * s['pass_rate']:.0f}% | {k} |")  # fmt: skip
        for c in result["cases"]:
            if c["kind"]:
                failures.append(f"| `{Path(relative).name}::{c['name']}` | {c['kind']} | "
                                f"{c['message'].replace('|', '/').replace(chr(10), ' ')[:160]} |")  # fmt: skip
    md = (
        f"## scikit-learn {sklearn.__version__}'s test modules with bigdr's classes swapped in\n\n"
        "Each module copied from the installed scikit-learn with one line after its imports binding the "
        "class names to bigdr's; nothing else changed; scikit-learn's conftest loaded, float32 cases on "
        "(`SKLEARN_RUN_FLOAT32_TESTS=1`). Applicable: passed + failed, less the failures of "
        "tests that use scikit-learn's private functions.\n\n"
        "| classes | module | passed | failed | skipped | pass rate (applicable) | failures by kind |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n\n"
        "### Every failure\n\n| test | kind | message |\n| --- | --- | --- |\n" + "\n".join(failures) + "\n"
    )
    return out, md


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sections", nargs="+", help="run")
    args = parser.parse_args()
    run_sections("sklearn_tests", {"run": run_all}, args.sections)


if __name__ == "__main__":
    main()
