"""bigdr: dimensionality reduction for data larger than memory or spread over a dask cluster."""

from ._version import __version__
from .io import as_array, write_zarr
from .landmarks import select_landmarks
from .neighbors import KNNGraph, NeighborIndex, knn_graph
from .pca import PCA
from .persist import load

__all__ = ["PCA", "KNNGraph", "NeighborIndex", "as_array", "knn_graph", "load", "select_landmarks", "write_zarr",
           "__version__"]
