"""Module paths of bigdr before 0.2 (layout v2), importable for one more release with a warning.

``import bigdr.isomap`` (and ``from bigdr.isomap import Isomap``) still work
and give the module at its new place, with a :class:`DeprecationWarning`
naming that place. Public names (``bigdr.Isomap``, ``bigdr.decomposition.PCA``,
the command line, saved models) never moved. The old paths go in 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

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
    "bigdr.spectral": "bigdr.manifold.spectral",
    "bigdr.spectral_partitioned": "bigdr.manifold.spectral_partitioned",
    "bigdr.nystrom": "bigdr.manifold.nystrom",
    "bigdr.lle": "bigdr.manifold.lle",
    "bigdr.principal_curve": "bigdr.curves.principal_curve",
    "bigdr.hastie_stuetzle": "bigdr.curves.hastie_stuetzle",
    "bigdr.ridge": "bigdr.curves.ridge",
    "bigdr.projection": "bigdr.random_projection",
    "bigdr.methods": "bigdr.registry",
    "bigdr.cliargs": "bigdr.cli.args",
    "bigdr.cliinfo": "bigdr.cli.info",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old module path to the module at its new place (the same object)."""

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
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new place is already executed."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
