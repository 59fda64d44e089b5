"""Laplacian eigenmaps (Belkin & Niyogi 2003) of data of any size, scikit-learn's ``SpectralEmbedding``.

The smallest nontrivial eigenvectors of ``L = D - W`` (``unnormalized``), of
``I - D^-1/2 W D^-1/2`` (``symmetric``), or of the generalised problem ``L v =
lambda D v``, i.e. of ``I - D^-1 W`` (``random_walk``, scikit-learn's choice).
The graph, the solve and the extension are :mod:`bigdr.manifold.spectral`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.affinity import WEIGHTINGS
from .spectral import _SpectralBase


class SpectralEmbedding(_SpectralBase):
    """Laplacian eigenmaps (Belkin & Niyogi 2003) with a Nyström ``transform``.

    Parameters
    ----------
    n_components : int
        Coordinates of the embedding (the trivial constant vector dropped).
    affinity : {"nearest_neighbors", "gaussian"}
        ``nearest_neighbors``: 0/1 kNN adjacency symmetrised as ``(A + A^T)/2``
        (scikit-learn's). ``gaussian``: the kNN-truncated heat kernel.
    n_neighbors : int
        Other rows per row. scikit-learn's ``n_neighbors`` counts the row
        itself: its ``n_neighbors=k`` is this ``k - 1``.
    laplacian : {"random_walk", "symmetric", "unnormalized"}
        ``random_walk``: the generalised problem ``L v = lambda D v``
        (scikit-learn's embedding). ``symmetric``: eigenvectors of ``I -
        D^-1/2 W D^-1/2``. ``unnormalized``: of ``D - W``.
    epsilon : "auto" or float
        Kernel scale of the ``gaussian`` affinity.
    landmarks : "auto", None or int
        None: all rows form the graph (held in this process); an int: that many
        landmarks, the rest placed by the Nystrom extension; ``"auto"``: all rows
        up to a size, landmarks above (as in :class:`DiffusionMap`).
    eigen_solver : {"auto", "dense", "arpack", "lobpcg", "amg"}
        As in :class:`DiffusionMap`.
    metric : str
        Distance of the neighbour search (:func:`bigdr.knn_graph`).
    neighbor_method : {"auto", "kdtree", "brute", "faiss", "nndescent"}
        Neighbour search (:func:`bigdr.knn_graph`).
    on_disconnected : {"warn", "raise"}
        A disconnected neighbour graph: warn and embed each component on its own, or refuse.
    random_state : int
        Seed of the landmark draw, the eigensolver's start and NN-descent.
    partitions : None, int or "auto"
        Embed every row from the graph of all rows built by cells on the
        workers (as in :class:`DiffusionMap`); None: in this process.

    Attributes
    ----------
    eigenvalues_ : (n_components,) the Laplacian's eigenvalues, ascending (trivial 0 dropped)
    embedding_, eigenvectors_, epsilon_, mode_, intrinsic_dimension_ : as in :class:`DiffusionMap`

    References
    ----------
    Belkin, M. & Niyogi, P. (2003). Laplacian eigenmaps for dimensionality
    reduction and data representation. Neural Computation 15(6), 1373-1396.
    doi:10.1162/089976603321780317

    von Luxburg, U. (2007). A tutorial on spectral clustering. Statistics and
    Computing 17(4), 395-416.

    Bengio, Y., Paiement, J.-F., Vincent, P., Delalleau, O., Le Roux, N. &
    Ouimet, M. (2004). Out-of-sample extensions for LLE, Isomap, MDS,
    Eigenmaps, and spectral clustering. Advances in Neural Information
    Processing Systems 16, 177-184.
    """

    _self_loops = False

    def __init__(
        self,
        n_components: int = 2,
        affinity: str = "nearest_neighbors",
        n_neighbors: int = 10,
        laplacian: str = "random_walk",
        epsilon: Any = "auto",
        landmarks: Any = "auto",
        eigen_solver: str = "auto",
        metric: str = "euclidean",
        neighbor_method: str = "auto",
        on_disconnected: str = "warn",
        random_state: int = 0,
        partitions: Any = None,
    ) -> None:
        self.n_components = n_components
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.laplacian = laplacian
        self.epsilon = epsilon
        self.landmarks = landmarks
        self.eigen_solver = eigen_solver
        self.metric = metric
        self.neighbor_method = neighbor_method
        self.on_disconnected = on_disconnected
        self.random_state = random_state
        self.partitions = partitions

    @property
    def _kernel(self) -> str:  # type: ignore[override]  # a class attribute in DiffusionMap
        if self.affinity == "nearest_neighbors":
            return "connectivity"
        if self.affinity not in WEIGHTINGS:
            raise ValueError(f"affinity must be 'nearest_neighbors' or 'gaussian'; got {self.affinity!r}.")
        return self.affinity

    @property
    def _kind(self) -> str:  # type: ignore[override]  # a class attribute in DiffusionMap
        kinds = {"random_walk": "markov", "symmetric": "symmetric", "unnormalized": "unnormalized"}
        if self.laplacian not in kinds:
            raise ValueError(f"laplacian must be 'random_walk', 'symmetric' or 'unnormalized'; got {self.laplacian!r}.")
        return kinds[self.laplacian]

    @property
    def eigenvalues_(self) -> np.ndarray:
        self._check_fitted()
        return self.laplacian_eigenvalues_
