"""bigdr: dimensionality reduction for data larger than memory or spread over a dask cluster."""

from ._version import __version__
from .io import as_array, write_zarr
from .isomap import Isomap
from .landmarks import select_landmarks
from .mds import ClassicalMDS, LandmarkMDS
from .neighbors import KNNGraph, NeighborIndex, knn_graph
from .pca import PCA
from .persist import load
from .scheduler import use_scheduler
from .projection import (
    GaussianRandomProjection,
    SparseRandomProjection,
    distortion_report,
    johnson_lindenstrauss_min_dim,
)
from .spectral import DiffusionMap, SpectralEmbedding, diffusion_distance

__all__ = ["PCA", "ClassicalMDS", "LandmarkMDS", "Isomap", "DiffusionMap", "SpectralEmbedding", "diffusion_distance", "GaussianRandomProjection", "SparseRandomProjection", "distortion_report",
           "johnson_lindenstrauss_min_dim", "KNNGraph", "NeighborIndex", "as_array", "knn_graph", "load", "use_scheduler", "select_landmarks", "write_zarr",
           "__version__"]
