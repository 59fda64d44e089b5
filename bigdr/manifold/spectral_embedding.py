"""Laplacian eigenmaps (Belkin & Niyogi 2003) of data of any size, scikit-learn's ``SpectralEmbedding``.

The smallest nontrivial eigenvectors of ``L = D - W`` (``unnormalized``), of
``I - D^-1/2 W D^-1/2`` (``symmetric``), or of the generalised problem ``L v =
lambda D v``, i.e. of ``I - D^-1 W`` (``random_walk``, scikit-learn's choice).
The graph, the solve and the extension are :mod:`bigdr.manifold.spectral`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_real
from ..graph.affinity import WEIGHTINGS
from ..graph.given import GIVEN, laplacian_graph, rbf_gamma, whole_affinity
from ..io import from_numpy
from .spectral import _SpectralBase

#: The tightest ``eigen_tol`` LOBPCG is asked for (scikit-learn's 0 means machine precision).
EIGEN_TOL_FLOOR = 1e-12


class SpectralEmbedding(_SpectralBase):
    """Laplacian eigenmaps (Belkin & Niyogi 2003) with a Nyström ``transform``.

    Parameters
    ----------
    n_components : int
        Coordinates of the embedding (the trivial constant vector dropped).
    affinity : {"nearest_neighbors", "gaussian", "rbf", "precomputed", "precomputed_nearest_neighbors"} or callable
        ``nearest_neighbors``: 0/1 kNN adjacency symmetrised as ``(A + A^T)/2``
        (scikit-learn's). ``gaussian``: the heat kernel truncated to the kNN
        graph, which scales to any number of rows (the truncated weights are
        below ``e^-2`` of the nearest with ``epsilon="auto"``). The others are
        scikit-learn's and hold a whole n x n affinity in memory (the memory
        check refuses what does not fit): ``rbf``, the dense kernel
        ``exp(-gamma |x - y|^2)``; ``precomputed``, ``X`` is the affinity
        (dense or sparse); ``precomputed_nearest_neighbors``, ``X`` is a
        sparse distance graph of which the ``n_neighbors`` smallest stored
        entries of each row are kept (a stored diagonal counts, as in
        scikit-learn) and joined as ``nearest_neighbors``; a callable,
        ``affinity(X)`` returns the affinity. These fit all rows and have no
        ``transform`` (scikit-learn's has none either). A stored diagonal is
        kept in ``affinity_matrix_`` and ignored by the Laplacian, as in
        scikit-learn; an asymmetric affinity is symmetrised with a warning.
    n_neighbors : int or None
        Other rows per row. scikit-learn's ``n_neighbors`` counts the row
        itself: its ``n_neighbors=k`` is this ``k - 1``. None: scikit-learn's
        default ``max(n / 10, 1)`` with the row, so ``max(n / 10 - 1, 1)``
        others for ``n`` rows of the graph (the landmarks, in landmark mode).
    laplacian : {"random_walk", "symmetric", "unnormalized"}
        ``random_walk``: the generalised problem ``L v = lambda D v``
        (scikit-learn's embedding). ``symmetric``: eigenvectors of ``I -
        D^-1/2 W D^-1/2``. ``unnormalized``: of ``D - W``.
    epsilon : "auto" or float
        Kernel scale of the ``gaussian`` affinity.
    gamma : None or float
        The scale of the Gaussian affinity, ``exp(-gamma |x - y|^2)``. With
        ``rbf``: None is ``1 / n_features`` (scikit-learn's). With
        ``gaussian``: when given, ``epsilon = 1 / sqrt(2 gamma)``; None:
        ``epsilon`` decides (the ``"auto"`` rule follows the neighbour
        distances).
    eigen_tol : "auto" or float
        Tolerance of the iterative eigensolvers (LOBPCG, AMG-LOBPCG); ``"auto"``:
        1e-6; 0 (scikit-learn's "machine precision") and anything below 1e-12
        mean 1e-12. ARPACK runs to 1e-10 either way.
    n_jobs : None or int
        Accepted for scikit-learn's signature; the parallelism is dask's
        scheduler's (threads, processes or a cluster), not a count given here.
    landmarks : "auto", None or int
        None: all rows form the graph (held in this process); an int: that many
        landmarks, the rest placed by the Nystrom extension; ``"auto"``: all rows
        up to a size, landmarks above (as in :class:`DiffusionMap`).
    eigen_solver : {"auto", "dense", "arpack", "lobpcg", "amg"} or None
        As in :class:`DiffusionMap`; None (scikit-learn's default) is ``"auto"``.
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
    graph_recall_ : float or None, the fitted graph's :attr:`bigdr.KNNGraph.recall` (None with ``partitions``
        or a whole affinity)
    eigenvalues_ : (n_components,) the Laplacian's eigenvalues, ascending (trivial 0 dropped)
    affinity_matrix_ : ndarray or sparse matrix
        The affinity of the graph rows: scikit-learn's dense or sparse matrix
        for its affinities, the kNN kernel (sparse) for the others.
    embedding_, eigenvectors_, reference_embedding_, epsilon_, mode_, intrinsic_dimension_ : as in
        :class:`DiffusionMap`

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
        n_neighbors: int | None = 10,
        laplacian: str = "random_walk",
        epsilon: Any = "auto",
        landmarks: Any = "auto",
        eigen_solver: str = "auto",
        metric: str = "euclidean",
        neighbor_method: str = "auto",
        on_disconnected: str = "warn",
        random_state: int = 0,
        partitions: Any = None,
        gamma: float | None = None,
        eigen_tol: Any = "auto",
        n_jobs: int | None = None,
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
        self.gamma = gamma
        self.eigen_tol = eigen_tol
        self.n_jobs = n_jobs

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.affinity in GIVEN  # cross-validation slices the affinity [train][:, train]
        return tags

    def _fit(self, X: Any) -> Any:
        if callable(self.affinity) or self.affinity in (*GIVEN, "rbf"):
            return self._fit_affinity(X)
        self.__dict__.pop("affinity_matrix_", None)  # from an earlier fit with a whole affinity
        return super()._fit(X)

    def _fit_affinity(self, X: Any) -> Any:
        """Laplacian eigenmaps of a whole n x n affinity (scikit-learn's affinities), held in memory."""
        self._check_common()
        k = self._k(np.shape(X)[0])
        W, dtype = whole_affinity(X, self.affinity, self.gamma, k, type(self).__name__)
        n = W.shape[0]
        if self.n_components >= n:
            raise ValueError(f"n_components={self.n_components} must be less than the number of rows ({n}).")
        for name in ("reference_rows_", "graph_indices_", "graph_distances_", "affinity_data_"):
            self.__dict__.pop(name, None)  # from an earlier fit with a kNN affinity
        self.__dict__["affinity_matrix_"] = W  # scikit-learn's attribute, kept as given
        self.graph_recall_ = None  # no neighbour search of bigdr's
        graph = laplacian_graph(W)
        self.n_neighbors_, self.alpha_, self.kernel_, self.operator_ = k, 0.0, "given", self._kind
        self.intrinsic_dimension_ = float("nan")
        # exp(-gamma d^2) is the Gaussian of scale epsilon = 1 / sqrt(2 gamma); the other affinities have none
        rbf = self.affinity == "rbf"
        self.epsilon_ = 1.0 / np.sqrt(2.0 * rbf_gamma(self.gamma, X.shape[1])) if rbf else float("nan")
        embedding = self._embed_graph(graph, None, graph.nnz / n, float("nan")).astype(dtype)
        self.mode_, self.n_samples_seen_ = "affinity", n
        self.n_features_in_ = int(X.shape[1])
        self._ext = None
        self.embedding_ = embedding
        return from_numpy(embedding, (n,))

    def _make_extension(self) -> Any:
        if self.mode_ == "affinity":
            raise ValueError(
                f"SpectralEmbedding(affinity={self.affinity!r}) embeds the rows of its affinity matrix and "
                f"places no new rows (scikit-learn's has no transform). Use fit_transform, or affinity="
                f"'nearest_neighbors' or 'gaussian', whose Nystrom extension places new rows."
            )
        return super()._make_extension()

    @property
    def affinity_matrix_(self) -> Any:
        """The affinity of the graph rows (see Attributes)."""
        if "affinity_matrix_" in self.__dict__:
            return self.__dict__["affinity_matrix_"]
        if "affinity_data_" not in self.__dict__:
            raise AttributeError("affinity_matrix_ (fit first; a partitioned fit keeps no whole affinity)")
        return self._kernel_matrix()

    def _epsilon(self, distances: np.ndarray) -> float:
        if self.gamma is None:
            return super()._epsilon(distances)
        gamma = check_real(self.gamma, "gamma (None or a positive number)", 0, low_open=True)
        return 1.0 / np.sqrt(2.0 * gamma)

    def _eigen_tol(self) -> dict[str, Any]:
        if isinstance(self.eigen_tol, str) and self.eigen_tol == "auto":
            return {}
        tol = check_real(self.eigen_tol, "eigen_tol ('auto' or a number >= 0)", 0)
        return {"tol": max(tol, EIGEN_TOL_FLOOR)}  # 0, scikit-learn's "machine precision", is the floor

    @property
    def _kernel(self) -> str:  # type: ignore[override]  # a class attribute in DiffusionMap
        if self.affinity == "nearest_neighbors":
            return "connectivity"
        if self.affinity not in WEIGHTINGS:
            raise ValueError(
                f"affinity must be 'nearest_neighbors', 'gaussian', 'rbf', 'precomputed', "
                f"'precomputed_nearest_neighbors' or a callable; got {self.affinity!r}."
            )
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
