"""Principal curves and manifolds, and density ridges: one-dimensional (or two-dimensional)
structure through the data, fitted with one pass over the rows per iteration."""

from .hastie_stuetzle import HastieStuetzleCurve
from .principal_curve import PrincipalCurve, PrincipalManifold
from .ridge import RidgeEstimator

__all__ = ["HastieStuetzleCurve", "PrincipalCurve", "PrincipalManifold", "RidgeEstimator"]
