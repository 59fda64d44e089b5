"""bigdr: dimensionality reduction for data larger than memory or spread over a dask cluster."""

from ._version import __version__
from .io import as_array, write_zarr
from .pca import PCA
from .persist import load

__all__ = ["PCA", "as_array", "write_zarr", "load", "__version__"]
