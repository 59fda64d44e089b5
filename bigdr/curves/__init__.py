"""Principal curves and manifolds, and density ridges: one-dimensional (or two-dimensional)
structure through the data, fitted with one pass over the rows per iteration."""

from typing import Any

from .. import _deprecated
from .density_ridge import DensityRidge
from .hastie_stuetzle import HastieStuetzleCurve
from .principal_curve import PrincipalCurve, PrincipalManifold

__all__ = ["HastieStuetzleCurve", "PrincipalCurve", "PrincipalManifold", "DensityRidge"]


def __getattr__(name: str) -> Any:  # the names renamed in 0.2, with a warning
    return _deprecated.renamed(name, globals(), __name__)
