"""Module paths and names of bigdr before 0.2 (layout v2), usable for one more release with a warning.

``import bigdr.isomap`` (and ``from bigdr.isomap import Isomap``) still work
and give the module at its new place, with a :class:`DeprecationWarning`
naming that place. A renamed public name (``RidgeEstimator``, now
``DensityRidge``) is still found under its old name, with a warning, and
models saved under it still load. The old paths and names go in 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

#: Public names renamed in 0.2 -> today's name. Saved models carrying an old class name load too.
RENAMED: dict[str, str] = {
    "RidgeEstimator": "DensityRidge",  # read as ridge regression by every scikit-learn user
}

#: Old module -> its place since 0.2.
MOVED: dict[str, str] = {
    "bigdr._compute": "bigdr.runtime.compute",
    "bigdr.scheduler": "bigdr.runtime.scheduler",
    "bigdr.memory": "bigdr.runtime.memory",
    "bigdr.reduce": "bigdr.blockwise.reduce",
    "bigdr.linalg": "bigdr.blockwise.linalg",
    "bigdr.extension": "bigdr.blockwise.extension",
    "bigdr.graph.landmarks": "bigdr.blockwise.sampling",
    "bigdr.graph.update": "bigdr.graph.incremental",
    "bigdr.graph.lle": "bigdr.graph.barycentric",
    "bigdr.core.lle": "bigdr.core.local_linear",
    "bigdr.pca": "bigdr.decomposition.pca",
    "bigdr.factor_analysis": "bigdr.decomposition.factor_analysis",
    "bigdr.ica": "bigdr.decomposition.ica",
    "bigdr.kernel_pca": "bigdr.decomposition.kernel_pca",
    "bigdr.mds": "bigdr.manifold.mds",
    "bigdr.isomap": "bigdr.manifold.isomap",
    "bigdr.spectral": "bigdr.manifold",  # DiffusionMap, SpectralEmbedding and diffusion_distance
    "bigdr.spectral_partitioned": "bigdr.manifold.spectral_partitioned",
    "bigdr.nystrom": "bigdr.manifold.nystrom",
    "bigdr.lle": "bigdr.manifold.lle",
    "bigdr.principal_curve": "bigdr.curves.principal_curve",
    "bigdr.hastie_stuetzle": "bigdr.curves.hastie_stuetzle",
    "bigdr.ridge": "bigdr.curves.density_ridge",
    "bigdr.projection": "bigdr.random_projection",
    "bigdr.methods": "bigdr.registry",
    "bigdr.cliargs": "bigdr.cli.args",
    "bigdr.cliinfo": "bigdr.cli.info",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old module path to the module at its new place (the same object).

    The import system sets ``__spec__`` on whatever the loader creates; the
    module's own spec is put back after it, so the module keeps its real name
    and package (relative imports inside it, ``importlib.reload``).
    """

    def __init__(self) -> None:
        self._specs: dict[str, Any] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new} in bigdr 0.2; import from {new} (or the package's public names, "
            f"such as bigdr.{new.split('.')[1]}): the old path goes in 0.3.",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module at the new place is already executed): restore its own spec."""
        module.__spec__ = self._specs[module.__name__]


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())


def renamed(name: str, namespace: dict[str, Any], module: str) -> Any:
    """The object an old name now has in ``namespace``, with a warning (a module's ``__getattr__``)."""
    new = RENAMED.get(name)
    if new is None or new not in namespace:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} is {module}.{new} since bigdr 0.2; the old name goes in 0.3.", DeprecationWarning,
                  stacklevel=3)  # fmt: skip
    return namespace[new]
