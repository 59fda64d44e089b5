"""The package's structure at two commits (issue 31): modules at the top, packages, import arrows, largest pieces.

Counts are read from the source (``ast``), as ``tests/test_layout.py`` reads
imports: a module's arrows are the bigdr modules it imports at any depth of
the file; a *box* is a top-level module or a package (``bigdr.graph``), and an
arrow between boxes is one between modules of different boxes. Each commit's
tree is taken from git (``git archive``), so the figures are of the committed
code.

Usage: python benchmarks/bench_structure.py [BEFORE [AFTER]]   (default 385fe76 HEAD)
"""

from __future__ import annotations

import ast
import datetime
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine, write_results  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def tree_of(rev: str, into: Path) -> Path:
    """The ``bigdr/`` package of commit ``rev`` extracted under ``into``."""
    archive = subprocess.run(["git", "archive", rev, "bigdr"], cwd=REPO, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "bigdr"


def structure(root: Path) -> dict:
    mods = {}
    for p in sorted(root.rglob("*.py")):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p

    def imports(name: str) -> set[str]:
        path = mods[name]
        is_pkg = path.name == "__init__.py"
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    t = ".".join(base + ([node.module] if node.module else []))
                else:
                    t = node.module or ""
                if t.split(".")[0] != "bigdr":
                    continue
                targets = [f"{t}.{a.name}" for a in node.names if f"{t}.{a.name}" in mods] or [t]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "bigdr"]
            for s in targets:
                while s not in mods:
                    s = s.rsplit(".", 1)[0]
                out.add(s)
        out.discard(name)
        return out

    def box(m: str) -> str:
        return ".".join(m.split(".")[:2])

    edges = {(m, t) for m in mods for t in imports(m)}
    lines = {m: p.read_text().count("\n") for m, p in mods.items()}
    top = [m for m, p in mods.items() if p.parent == root]
    top_lines = sum(lines[m] for m in top)
    functions = []
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{m}.{node.name}"))
    largest_file = max(lines, key=lambda m: lines[m])
    size, function = max(functions)
    return {
        "modules": len(mods),
        "top_level_modules": len(top),
        "top_level_share": top_lines / sum(lines.values()),
        "lines": sum(lines.values()),
        "packages": sum(1 for _ in root.rglob("__init__.py")) - 1,
        "boxes": len({box(m) for m in mods}),
        "module_arrows": len(edges),
        "box_arrows": len({(box(a), box(b)) for a, b in edges if box(a) != box(b)}),
        "largest_file": [largest_file, lines[largest_file]],
        "largest_function": [function, size],
    }


def main() -> None:
    revs = (sys.argv[1:] + ["385fe76", "HEAD"][len(sys.argv[1:]) :])[:2]
    shas = [subprocess.run(["git", "rev-parse", "--short", r], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.strip() for r in revs]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        result = {sha: structure(tree_of(sha, Path(tmp) / sha)) for sha in shas}
    rows = [
        ("modules", "modules"),
        ("top_level_modules", "modules at the top of bigdr/"),
        ("top_level_share", "share of the lines at the top"),
        ("lines", "lines"),
        ("packages", "packages"),
        ("boxes", "boxes (top-level modules + packages)"),
        ("module_arrows", "import arrows between modules"),
        ("box_arrows", "import arrows between boxes"),
        ("largest_file", "largest file (lines)"),
        ("largest_function", "largest function (lines)"),
    ]

    def shown(v):
        if isinstance(v, float):
            return f"{100 * v:.0f}%"
        if isinstance(v, list):
            return f"{v[0]} ({v[1]})"
        return f"{v:,}"

    md = f"| | {shas[0]} | {shas[1]} |\n| --- | --- | --- |\n"
    md += "".join(f"| {label} | {shown(result[shas[0]][k])} | {shown(result[shas[1]][k])} |\n" for k, label in rows)
    payload = {"date": datetime.date.today().isoformat(), "machine": machine(), "revisions": shas, **result}
    write_results("structure", payload, "## Package structure at two commits\n\n" + md)
    print(md)


if __name__ == "__main__":
    main()
