"""bigdr: dimensionality reduction for data larger than memory or spread over a dask cluster.

The estimators (``bigdr.PCA``, ``bigdr.Isomap``, ...) are the classes of
:data:`bigdr.methods.METHODS`, imported on first use.
"""

from typing import Any

from ._version import __version__
from .graph import KNNGraph, NeighborIndex, knn_graph, select_landmarks
from .io import append_zarr, as_array, write_obsm, write_zarr
from .methods import METHODS
from .persist import load
from .projection import distortion_report, johnson_lindenstrauss_min_dim
from .scheduler import use_scheduler
from .spectral import diffusion_distance

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
    "select_landmarks",
    "use_scheduler",
    "write_obsm",
    "write_zarr",
]


def __getattr__(name: str) -> Any:
    if name in _ESTIMATORS:
        return _ESTIMATORS[name].cls
    raise AttributeError(f"module 'bigdr' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ESTIMATORS))
