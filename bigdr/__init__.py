"""bigdr: dimensionality reduction for data larger than memory or spread over a dask cluster.

The estimators live in families, as in scikit-learn: :mod:`bigdr.decomposition`
(PCA, factor analysis, ICA, kernel PCA), :mod:`bigdr.manifold` (MDS, Isomap,
diffusion maps, Laplacian eigenmaps, LLE), :mod:`bigdr.curves` (principal
curves and density ridges) and :mod:`bigdr.random_projection`. Each is also
``bigdr.ClassName``, imported on first use from the table of methods
(:data:`bigdr.registry.METHODS`), so ``import bigdr`` stays quick.
"""

from typing import TYPE_CHECKING, Any

from . import _deprecated
from ._version import __version__
from .blockwise.sampling import select_landmarks
from .graph import KNNGraph, NeighborIndex, knn_graph
from .io import append_zarr, as_array, write_obsm, write_zarr
from .persist import load
from .random_projection import distortion_report, johnson_lindenstrauss_min_dim
from .registry import METHODS
from .runtime.scheduler import use_scheduler

if TYPE_CHECKING:  # so that type checkers and IDEs resolve bigdr.Isomap and friends
    # ruff: noqa: F401
    from .curves import DensityRidge, HastieStuetzleCurve, PrincipalCurve, PrincipalManifold
    from .decomposition import PCA, FactorAnalysis, FastICA, KernelPCA, TruncatedSVD
    from .manifold import (
        ClassicalMDS,
        DiffusionMap,
        Isomap,
        LandmarkMDS,
        LocallyLinearEmbedding,
        SpectralEmbedding,
        diffusion_distance,
    )
    from .random_projection import GaussianRandomProjection, SparseRandomProjection

_deprecated.install()
_ESTIMATORS = {m.target.split(":")[1]: m for m in METHODS.values()}

__all__ = sorted(_ESTIMATORS) + [
    "KNNGraph",
    "NeighborIndex",
    "__version__",
    "append_zarr",
    "as_array",
    "diffusion_distance",
    "distortion_report",
    "johnson_lindenstrauss_min_dim",
    "knn_graph",
    "load",
    "metrics",
    "select_landmarks",
    "use_scheduler",
    "write_obsm",
    "write_zarr",
]


def __getattr__(name: str) -> Any:
    if name in _ESTIMATORS:
        return _ESTIMATORS[name].cls
    if name in _deprecated.RENAMED and _deprecated.RENAMED[name] in _ESTIMATORS:
        return _deprecated.renamed(name, {_deprecated.RENAMED[name]: __getattr__(_deprecated.RENAMED[name])}, "bigdr")
    if name == "diffusion_distance":
        from .manifold.diffusion_map import diffusion_distance

        return diffusion_distance
    if name == "metrics":  # imported on first use, as the estimators are
        import importlib

        return importlib.import_module(".metrics", __name__)
    raise AttributeError(f"module 'bigdr' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ESTIMATORS) | {"diffusion_distance", "metrics"})
