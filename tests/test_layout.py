"""The package layout: layers by package, no upward import, no cycle, no file over 600 lines.

Layers (docs/architecture.md), lowest first; a module may import its own layer and below:

0. the base modules: ``_version``, ``exceptions``, ``_validation``, ``_random``, ``_deprecated``;
1. ``runtime/``: how graphs run (compute, scheduler, memory);
2. ``core/`` (numpy and scipy only) and ``io/``;
3. ``blockwise/``: passes over row blocks (reductions, linear algebra, extension, sampling);
4. ``graph/``: neighbours and the geometry built on them;
5. ``base``: the estimator contract;
6. the estimators: ``decomposition/``, ``manifold/``, ``curves/``, ``random_projection``;
7. the front ends: ``registry``, ``persist``, ``plot``, ``datasets``, ``cli/``;
8. ``bigdr`` itself.

Within one layer a module imports only its own package (core <-> core, not core -> io).
Estimators may use one another's public classes (ClassicalMDS composes PCA), never private
helpers. The layer of a module follows from its package: there is no per-file table.
"""

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "bigdr"

#: Layer of each package or top-level module (longest prefix wins).
LAYERS = {
    "bigdr._version": 0,
    "bigdr.exceptions": 0,
    "bigdr._validation": 0,
    "bigdr._random": 0,
    "bigdr._deprecated": 0,
    "bigdr.runtime": 1,
    "bigdr.core": 2,
    "bigdr.io": 2,
    "bigdr.blockwise": 3,
    "bigdr.graph": 4,
    "bigdr.base": 5,
    "bigdr.metrics": 5,
    "bigdr.decomposition": 6,
    "bigdr.manifold": 6,
    "bigdr.curves": 6,
    "bigdr.random_projection": 6,
    "bigdr.registry": 7,
    "bigdr.persist": 7,
    "bigdr.plot": 7,
    "bigdr.datasets": 7,
    "bigdr.cli": 7,
    "bigdr": 8,
}
ESTIMATOR_LAYER = 6
FRONT_LAYER = 7
#: Top-level modules allowed (``__init__`` included): the rest lives in packages.
MAX_TOP_LEVEL = 12


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


MODULES = modules(ROOT)


def layer(name: str) -> int:
    best = max((k for k in LAYERS if name == k or name.startswith(k + ".")), key=len)
    return LAYERS[best]


def package(name: str) -> str:
    """The package (or top-level module) that gives ``name`` its layer."""
    return max((k for k in LAYERS if name == k or name.startswith(k + ".")), key=len)


def imports(name: str, mods: dict[str, Path]) -> list[tuple[str, list[str]]]:
    """Every bigdr module ``name`` imports (at any depth of the file), with the names taken from it."""
    path = mods[name]
    is_pkg = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.split(".")[0] == "bigdr"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "bigdr":
                continue
            taken = [a.name for a in node.names]
            subs = [f"{target}.{t}" for t in taken if f"{target}.{t}" in mods]
            found += [(s, []) for s in subs] or [(target, taken)]
    return [(t if t in mods else t.rsplit(".", 1)[0], names) for t, names in found]


def violations(root: Path) -> list[str]:
    """Every import in the tree at ``root`` that breaks the layering rules."""
    mods = modules(root)
    found = []
    for name in mods:
        own = layer(name)
        for target, taken in imports(name, mods):
            other = layer(target)
            if other > own:
                found.append(f"{name} (layer {own}) imports {target} (layer {other})")
            elif other == own and own < ESTIMATOR_LAYER and package(name) != package(target):
                found.append(f"{name} imports {target} across packages of one layer")
            elif other == own == ESTIMATOR_LAYER and package(name) != package(target):
                private = [t for t in taken if t.startswith("_")]
                if private or target.rsplit(".", 1)[-1].startswith("_"):
                    found.append(f"{name} imports private {private or target} from the estimator family {target}")
    return found


def test_no_upward_import():
    assert violations(ROOT) == []


@pytest.mark.parametrize(
    "planted, text",
    [
        ("core/planted.py", "from ..manifold import Isomap\n"),
        ("graph/planted.py", "from ..decomposition.pca import PCA\n"),
        ("io/planted.py", "from ..core import stats\n"),
        ("decomposition/planted.py", "from ..manifold.isomap import _private_helper\n"),
        ("runtime/planted.py", "import bigdr.base\n"),
    ],
)
def test_a_planted_upward_import_is_caught(tmp_path, planted, text):
    copy = tmp_path / "bigdr"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert violations(copy) == []
    (copy / planted).write_text(text)
    found = violations(copy)
    assert len(found) == 1 and found[0].startswith(f"bigdr.{planted[:-3].replace('/', '.')} ")


def test_no_import_cycle():
    graph = {name: {t for t, _ in imports(name, MODULES) if t != name} for name in MODULES}
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_files_stay_short(name):
    lines = MODULES[name].read_text().count("\n")
    assert lines <= 600, f"{name} has {lines} lines; split it (one module per mechanism)"


def test_top_level_stays_small():
    top = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"{len(top)} modules at the top of bigdr/: {top}; put them in a package"


def test_every_module_has_a_layer():
    unplaced = [name for name in MODULES if package(name) == "bigdr" and name != "bigdr"]
    assert unplaced == [], f"modules without a layer: {unplaced}; add their package to LAYERS"


def test_estimators_live_in_families():
    from bigdr.registry import METHODS

    families = ("decomposition.", "manifold.", "curves.", "random_projection:")
    assert all(m.target.startswith(families) for m in METHODS.values())
