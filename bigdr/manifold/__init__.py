"""Manifold learning on neighbour graphs and landmarks: MDS, Isomap, diffusion maps,
Laplacian eigenmaps and locally linear embedding.

As in scikit-learn, each estimator lives in a module of its own and is imported from here
(``from bigdr.manifold import Isomap``) or from ``bigdr``. The spectral methods' partitioned
solver and their Nystrom extension sit beside their only user, :mod:`~bigdr.manifold.spectral`.
"""

from .isomap import Isomap
from .lle import LocallyLinearEmbedding
from .mds import ClassicalMDS, LandmarkMDS
from .spectral import DiffusionMap, SpectralEmbedding, diffusion_distance

__all__ = [
    "ClassicalMDS",
    "DiffusionMap",
    "Isomap",
    "LandmarkMDS",
    "LocallyLinearEmbedding",
    "SpectralEmbedding",
    "diffusion_distance",
]
