"""Manifold learning on neighbour graphs and landmarks: MDS, Isomap, diffusion maps,
Laplacian eigenmaps and locally linear embedding.

As in scikit-learn, each estimator lives in a module of its own and is imported from here
(``from bigdr.manifold import Isomap``) or from ``bigdr``. The spectral methods' partitioned
solver and their Nystrom extension sit beside their shared machinery, :mod:`~bigdr.manifold.spectral`.
"""

from .diffusion_map import DiffusionMap, diffusion_distance
from .isomap import Isomap
from .lle import LocallyLinearEmbedding
from .mds import ClassicalMDS, LandmarkMDS
from .spectral_embedding import SpectralEmbedding

__all__ = [
    "ClassicalMDS",
    "DiffusionMap",
    "Isomap",
    "LandmarkMDS",
    "LocallyLinearEmbedding",
    "SpectralEmbedding",
    "diffusion_distance",
]
