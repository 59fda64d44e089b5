"""Diffusion maps (Coifman & Lafon 2006) of data of any size.

The eigenpairs ``S v_k = lambda_k v_k`` of the symmetric conjugate ``S =
D^-1/2 W_alpha D^-1/2`` give the right eigenvectors ``phi_k = D^-1/2 v_k``
of the Markov matrix ``M = D^-1 W_alpha``; the map at time ``t`` is
``(lambda_2^t phi_2(x), ..., lambda_{d+1}^t phi_{d+1}(x))``, the trivial
``phi_1 = 1`` dropped. Euclidean distance in the full map is the diffusion
distance (:func:`diffusion_distance`). The graph, the solve and the extension
are :mod:`bigdr.manifold.spectral`'s.
"""

from __future__ import annotations

from typing import Any

import dask.array as da
import numpy as np
import scipy.sparse as sp

from ..graph.affinity import affinity, auto_epsilon, check_alpha
from ..graph.knn import knn_graph
from ..graph.operators import normalise
from ..io import as_array
from ..runtime.compute import compute
from .spectral import _SpectralBase

#: What :meth:`DiffusionMap._neighbors_entries` writes next to ``X_diffmap`` (scanpy's ``pp.neighbors``).
NEIGHBORS_NAMES = ["obsp/connectivities", "obsp/distances", "uns/neighbors"]


class DiffusionMap(_SpectralBase):
    """Diffusion map on a kNN-truncated kernel, exact or by landmarks.

    Parameters
    ----------
    n_components : int
        ``d``: coordinates kept after dropping the trivial one.
    n_neighbors : int or None
        Other rows per row in the kernel graph (union-symmetrised). None:
        ``max(n / 10 - 1, 1)`` for ``n`` rows of the graph (as
        :class:`SpectralEmbedding`'s, scikit-learn's default).
    epsilon : "auto" or float
        Scale of the Gaussian kernel ``exp(-|x - y|^2 / (2 epsilon^2))``.
        ``"auto"``: half the median distance to the ``n_neighbors``-th
        neighbour (the kernel is ``e^-2`` there).
    kernel : {"gaussian", "umap"}
        ``gaussian``: one scale, ``epsilon``, for every row. ``umap``: UMAP's
        fuzzy union, each row's scale set by its own neighbours (no
        ``epsilon``): scanpy's ``obsp["connectivities"]`` and so its
        ``tl.diffmap`` (scanpy's ``n_neighbors=15`` counts the cell itself,
        so it is ``n_neighbors=14`` here). On data with far-apart groups or
        isolated rows (single cells) one global scale leaves such rows
        joined by edges of weight ~0, whose eigenvalues are ~1 and whose
        coordinates mark them instead of the geometry; the adaptive kernel
        does not (:func:`bigdr.graph.affinity.fuzzy_scales`).
    alpha : float in [0, 1]
        Coifman–Lafon normalisation: 0 graph Laplacian, 0.5 Fokker–Planck,
        1 Laplace–Beltrami (default: the geometry without the sampling density).
    t : float >= 0
        Diffusion time: coordinates are ``lambda_k^t phi_k``.
    landmarks : "auto", None or int
        None: all rows form the graph (held in this process). int ``m``: the
        map is fitted on ``m`` rows drawn uniformly in one pass and every row
        is embedded by the Nyström extension, blockwise (memory independent
        of n). ``"auto"``: all rows up to 1,500,000, else 100,000 landmarks,
        or more (up to 1,000,000) when the manifold's estimated dimension
        asks for more (:func:`bigdr.core.dimension.rows_needed`). An int
        below that rule does not warn: the rule sizes Isomap's geodesics, and
        the Nyström extension degrades far more gently (on 200,000 rows of a
        5-D manifold, where the rule asks for 520,000, 20,000 landmarks come
        within a Procrustes disparity of 0.006 of the all-rows map).
    eigen_solver : {"auto", "dense", "arpack", "lobpcg", "amg"}
        See :func:`bigdr.core.sparse_eigen.smallest_eigh`; ``auto``: dense up to 2000
        graph rows, else by the manifold's estimated dimension
        (:func:`bigdr.core.sparse_eigen.graph_solver`): LOBPCG with an AMG
        preconditioner on low-dimensional manifolds, whose wanted eigenvalues
        crowd near 1, ARPACK on high-dimensional data such as single cells.
        ``eigen_solver_`` records the choice.
    metric : str
        Distance of the neighbour search (:func:`bigdr.knn_graph`).
    neighbor_method : {"auto", "kdtree", "brute", "faiss", "nndescent"}
        Neighbour search (:func:`bigdr.knn_graph`); ``auto`` picks from the rows and width.
    on_disconnected : {"warn", "raise"}
        A disconnected neighbour graph: warn and embed each component on its
        own (the package's policy, :func:`bigdr.graph.sparse.resolve_components`), or refuse.
    random_state : int
        Seed of the landmark draw, the eigensolver's start and NN-descent.
    partitions : None, int or "auto"
        None: the graph is built in this process. An int or ``"auto"``: every
        row is embedded from the graph of all rows, built by cells on the
        workers (:func:`bigdr.knn_graph`), with LOBPCG on the operator held
        in row blocks (:mod:`bigdr.manifold.spectral_partitioned`).

    Attributes
    ----------
    graph_recall_ : float or None, the fitted graph's :attr:`bigdr.KNNGraph.recall` (None with ``partitions``)
    eigenvalues_ : (n_components,) eigenvalues ``lambda_k`` of M, descending (``<= 1``)
    eigenvectors_ : (n_ref, n_components) ``phi_k`` on the reference rows
    reference_embedding_ : (n_ref, n_components) the reference rows' fitted coordinates (before
        ``rotation_`` and ``offset_``), which their ``transform`` reproduces
    embedding_ : (n, n_components), when ``X`` is in memory
    epsilon_ : float, the scale used
    n_unit_eigenvalues_ : int, how many eigenvalues equal 1 (components of the graph)
    mode_ : {"all-rows", "landmarks", "partitioned"}
    landmark_residual_, all_rows_epsilon_ : with ``partitions`` (:mod:`bigdr.manifold.spectral_partitioned`)
    intrinsic_dimension_ : float, Levina-Bickel estimate of the manifold's dimension from the graph

    References
    ----------
    Coifman, R. R. & Lafon, S. (2006). Diffusion maps. Applied and Computational
    Harmonic Analysis 21(1), 5-30. doi:10.1016/j.acha.2006.04.006

    Nadler, B., Lafon, S., Coifman, R. R. & Kevrekidis, I. G. (2006). Diffusion
    maps, spectral clustering and reaction coordinates of dynamical systems.
    Applied and Computational Harmonic Analysis 21(1), 113-127.

    Bengio, Y., Paiement, J.-F., Vincent, P., Delalleau, O., Le Roux, N. &
    Ouimet, M. (2004). Out-of-sample extensions for LLE, Isomap, MDS,
    Eigenmaps, and spectral clustering. Advances in Neural Information
    Processing Systems 16, 177-184.

    Levina, E. & Bickel, P. J. (2005). Maximum likelihood estimation of
    intrinsic dimension. Advances in Neural Information Processing Systems 17.

    McInnes, L., Healy, J. & Melville, J. (2018). UMAP: Uniform manifold
    approximation and projection for dimension reduction. arXiv:1802.03426.
    """

    _self_loops = True
    _disconnected_hint = _SpectralBase._disconnected_hint + ", or pass kernel='umap' (a scale per row)"
    #: Written with ``X_diffmap`` where the store has none of its own (:func:`bigdr.io.obsm.write_obsm`).
    _anndata_optional = NEIGHBORS_NAMES
    _kind = "markov"

    def __init__(
        self,
        n_components: int = 2,
        n_neighbors: int | None = 15,
        epsilon: Any = "auto",
        alpha: float = 1.0,
        t: float = 1,
        kernel: str = "gaussian",
        landmarks: Any = "auto",
        eigen_solver: str = "auto",
        metric: str = "euclidean",
        neighbor_method: str = "auto",
        on_disconnected: str = "warn",
        random_state: int = 0,
        partitions: Any = None,
    ) -> None:
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.epsilon = epsilon
        self.alpha = alpha
        self.t = t
        self.kernel = kernel
        self.landmarks = landmarks
        self.eigen_solver = eigen_solver
        self.metric = metric
        self.neighbor_method = neighbor_method
        self.on_disconnected = on_disconnected
        self.random_state = random_state
        self.partitions = partitions

    @property
    def _kernel(self) -> str:  # type: ignore[override]  # a class attribute in the base
        if self.kernel not in ("gaussian", "umap"):
            raise ValueError(f"kernel must be 'gaussian' or 'umap'; got {self.kernel!r}.")
        return str(self.kernel)

    def _alpha(self) -> float:
        return check_alpha(self.alpha)

    def _scale(self, mu: np.ndarray) -> np.ndarray:
        t = self.t
        if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not t >= 0:
            raise ValueError(f"t must be a number >= 0; got {t!r}.")
        lam = 1.0 - mu
        if float(t).is_integer():
            return lam ** int(t)
        return np.sign(lam) * np.abs(lam) ** t  # a fractional power of a negative eigenvalue: keep its sign

    def _anndata_names(self, key: str) -> list[str]:
        # The graph's entries are optional: a store's own neighbours are kept (write_obsm)
        return ["uns/diffmap_evals"] if key == "X_diffmap" else [f"uns/{key}"]

    def _writes_neighbors(self) -> bool:
        """Whether the fitted graph is scanpy's neighbours of every cell (umap kernel, one graph row per cell)."""
        return getattr(self, "kernel_", None) == "umap" and getattr(self, "mode_", None) == "all-rows"

    def _anndata_parts(self, Y: Any, key: str) -> tuple[Any, dict[str, Any]]:
        """Under ``X_diffmap``, scanpy's layout: the trivial component first and ``uns["diffmap_evals"]``.

        scanpy keeps the stationary component in column 0 (eigenvalue 1) and
        reads ``uns["diffmap_evals"]`` whenever ``X_diffmap`` exists. bigdr's
        coordinates are ``lambda_k^t phi_k`` with ``phi`` the right
        eigenvectors of the Markov matrix, so the trivial one is the constant
        ``1``; scanpy's columns are the eigenvectors of the symmetric
        conjugate instead, which differ from ``phi`` by ``sqrt(degree)`` per
        cell. With ``kernel="umap"`` on all rows the graph is scanpy's
        neighbours, written as ``pp.neighbors`` writes them
        (:meth:`_neighbors_entries`). Other keys get the coordinates as they
        are and ``uns[key]`` with the eigenvalues and parameters.
        """
        evals = np.asarray(self.eigenvalues_, dtype=np.float64)
        if key != "X_diffmap":
            return Y, {f"uns/{key}": {"eigenvalues": evals, "params": self._anndata_params()}}
        if isinstance(Y, da.Array):
            ones = da.ones((Y.shape[0], 1), chunks=(Y.chunks[0], 1), dtype=Y.dtype)
            full: Any = da.concatenate([ones, Y.rechunk({1: -1})], axis=1)
        else:
            full = np.column_stack([np.ones(len(Y), dtype=np.asarray(Y).dtype), Y])
        entries: dict[str, Any] = {"uns/diffmap_evals": np.r_[1.0, evals]}
        if self._writes_neighbors():
            entries.update(self._neighbors_entries())
        return full, entries

    def _neighbors_entries(self) -> dict[str, Any]:
        """scanpy's ``sc.pp.neighbors`` output from the fitted graph: ``obsp`` and ``uns["neighbors"]``.

        ``connectivities`` is the fitted affinity (UMAP's fuzzy union);
        ``distances`` each cell's ``n_neighbors`` nearest others, as scanpy
        keeps them (float32, no self-loops). scanpy's ``n_neighbors`` counts
        the cell itself, so it is written as ``n_neighbors + 1``; ``tl.umap``,
        ``tl.leiden`` and ``tl.dpt`` then run on bigdr's graph.
        """
        W = self._kernel_matrix().astype(np.float32)
        ind, dist = self.graph_indices_, self.graph_distances_
        n, k = ind.shape
        D = sp.csr_matrix((dist.ravel().astype(np.float32), ind.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
        D.sort_indices()
        params = {"n_neighbors": k + 1, "method": "umap", "metric": str(self.metric_), "random_state": self.seed_}
        return {
            "obsp/connectivities": W,
            "obsp/distances": D,
            "uns/neighbors": {"connectivities_key": "connectivities", "distances_key": "distances", "params": params},
        }

    @property
    def eigenvalues_(self) -> np.ndarray:
        self._check_fitted()
        return 1.0 - self.laplacian_eigenvalues_


def diffusion_distance(
    X: Any,
    t: float = 1,
    n_neighbors: int = 15,
    epsilon: Any = "auto",
    alpha: float = 1.0,
    metric: str = "euclidean",
    max_samples: int = 5000,
) -> np.ndarray:
    """Diffusion distances of a small set by their definition (Coifman & Lafon 2006).

    ``D_t(i, j)^2 = sum_l (M^t[i, l] - M^t[j, l])^2 / deg(l)`` with ``M`` and
    ``deg`` from the same kernel graph as :class:`DiffusionMap` (integer
    ``t``). Equal to the Euclidean distances of the full diffusion map.
    """
    Xd = as_array(X, name="X")
    n = Xd.shape[0]
    if n > max_samples:
        raise ValueError(f"diffusion_distance forms n x n matrices; {n} rows is more than max_samples={max_samples}.")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
        raise ValueError(f"t must be a non-negative int here (a matrix power); got {t!r}.")
    alpha = check_alpha(alpha)
    (data,) = compute(Xd)
    ind, dist = knn_graph(data, n_neighbors, metric=metric).compute()
    dist = dist.astype(np.float64)
    eps = auto_epsilon(dist) if isinstance(epsilon, str) else float(epsilon)
    norm = normalise(affinity(ind, dist, "gaussian", eps, True).W, alpha)
    S = norm.S.toarray()
    sd = np.sqrt(norm.d)
    Mt = np.linalg.matrix_power(S, t) * (sd[None, :] / sd[:, None])  # M^t = D^-1/2 S^t D^1/2
    scaled = Mt / sd[None, :]
    sq = np.einsum("ij,ij->i", scaled, scaled)
    D2 = sq[:, None] + sq[None, :] - 2.0 * scaled @ scaled.T
    return np.sqrt(np.maximum(D2, 0.0))
