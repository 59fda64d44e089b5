"""The package layout: layers, no upward import, no cycle, no file over 600 lines.

Rules (docs/architecture.md): front ends use estimators; estimators use
graph/, extension, linalg, reduce, core/ and io/; graph/ uses core/, linalg,
reduce and io/; core/ uses numpy and scipy only (plus the base modules);
io/ uses the base modules and _compute. Estimators may use one another's
public classes (ClassicalMDS composes PCA), never private helpers.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "bigdr"

#: Layer of each module (prefix match, longest first); a module may import its own layer and below.
LAYERS = {
    "bigdr._version": 0,
    "bigdr.exceptions": 0,
    "bigdr._validation": 0,
    "bigdr._random": 0,
    "bigdr._compute": 1,
    "bigdr.scheduler": 1,
    "bigdr.memory": 2,
    "bigdr.core": 2,
    "bigdr.io": 2,
    "bigdr.reduce": 3,
    "bigdr.linalg": 3,
    "bigdr.graph": 4,
    "bigdr.extension": 4,
    "bigdr.base": 5,
    "bigdr.nystrom": 5,
    "bigdr.pca": 6,
    "bigdr.factor_analysis": 6,
    "bigdr.ica": 6,
    "bigdr.principal_curve": 6,
    "bigdr.hastie_stuetzle": 6,
    "bigdr.ridge": 6,
    "bigdr.mds": 6,
    "bigdr.isomap": 6,
    "bigdr.kernel_pca": 6,
    "bigdr.lle": 6,
    "bigdr.spectral": 6,
    "bigdr.spectral_partitioned": 6,
    "bigdr.projection": 6,
    "bigdr.persist": 7,
    "bigdr.methods": 7,
    "bigdr.cli": 7,
    "bigdr.cliargs": 7,
    "bigdr.cliinfo": 7,
    "bigdr.plot": 7,
    "bigdr.datasets": 7,
    "bigdr": 8,
}
#: Same-layer imports allowed only inside one package (core <-> core), not across (core -> io).
PACKAGES = ("bigdr.core", "bigdr.io", "bigdr.graph")
ESTIMATOR_LAYER = 6


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(name: str) -> int:
    best = max((k for k in LAYERS if name == k or name.startswith(k + ".")), key=len)
    return LAYERS[best]


def imports(name: str) -> list[tuple[str, list[str]]]:
    """Every bigdr module ``name`` imports (at any depth of the file), with the names taken from it."""
    path = MODULES[name]
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
            subs = [f"{target}.{t}" for t in taken if f"{target}.{t}" in MODULES]
            found += [(s, []) for s in subs] or [(target, taken)]
    return [(t if t in MODULES else t.rsplit(".", 1)[0], names) for t, names in found]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_upward_import(name):
    own = layer(name)
    for target, taken in imports(name):
        other = layer(target)
        assert other <= own, f"{name} (layer {own}) imports {target} (layer {other})"
        if other == own and own != ESTIMATOR_LAYER and own < 7:
            same = [p for p in PACKAGES if name.startswith(p) and target.startswith(p)]
            assert same or target == name, f"{name} imports {target} across packages of one layer"
        if other == own == ESTIMATOR_LAYER and target != name:
            private = [t for t in taken if t.startswith("_")]
            assert not private, f"{name} imports private {private} from the estimator module {target}"


def test_no_import_cycle():
    graph = {name: {t for t, _ in imports(name) if t != name} for name in MODULES}
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


def test_every_module_has_a_layer():
    assert all(layer(name) is not None for name in MODULES)
