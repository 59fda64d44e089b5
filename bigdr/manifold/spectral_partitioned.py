"""Diffusion maps and Laplacian eigenmaps of all rows on a cluster: ``partitions=...``.

With ``partitions`` set, :class:`~bigdr.DiffusionMap` and
:class:`~bigdr.SpectralEmbedding` embed every row from the kNN graph of all
rows, and no process holds the graph or the rows:

1. A landmark fit (``min(100,000, n / 4)`` landmarks drawn in one pass, the
   estimator's own parameters) solves the eigenproblem of the landmark graph.
2. The kNN graph of all rows is built by cells on the workers
   (:func:`bigdr.knn_graph` with ``partitions``).
3. Kernel, symmetrisation and normalisation are formed in row blocks where the
   graph's chunks are (:func:`bigdr.graph.blocked.blocked_affinity`), with the
   same formulas as the in-process path.
4. The landmarks' eigenvectors are carried to every row by ``t = 8`` steps of
   the all-rows Markov matrix (:func:`propagate`): LOBPCG's start.
5. LOBPCG (Knyazev 2001; :func:`bigdr.blockwise.lobpcg.lobpcg`) finds the
   smallest eigenpairs of ``I - S`` (or ``D - W``) orthogonal to the known
   null vector. Its ``n x d`` blocks and the degrees stay on the workers as
   row blocks aligned with the operator's; the driver holds their ``3d x
   3d`` Gram matrices. The embedding is left on the workers too, as a dask
   array over those blocks.

The embedding of the training rows is the all-rows one. New rows are
embedded by the landmark model (an index of all rows would not fit in one
process), mapped onto the all-rows coordinates by the affine map ``y A + b``
(``rotation_``, ``offset_``) fitted by least squares on the landmarks, where
the landmark model's coordinates need no extension. ``landmark_residual_``
is the relative residual of that fit; ``reference_indices_`` are the
landmarks' row numbers.

References
----------
Knyazev, A. V. (2001). Toward the optimal preconditioned eigensolver: locally
optimal block preconditioned conjugate gradient method. SIAM J. Sci. Comput.
23(2), 517-541. doi:10.1137/S1064827500366124

Coifman, R. R. & Lafon, S. (2006). Diffusion maps. Applied and Computational
Harmonic Analysis 21(1), 5-30. doi:10.1016/j.acha.2006.04.006
"""

from __future__ import annotations

import warnings
from typing import Any

import dask
import dask.array as da
import numpy as np
from sklearn.base import clone

from ..base import wants_numpy
from ..blockwise.lobpcg import lobpcg
from ..blockwise.rowblocks import RowBlocks
from ..blockwise.sampling import row_keys
from ..core.dimension import intrinsic_dimension
from ..exceptions import DisconnectedGraphWarning
from ..graph.blocked import BlockedOperator, blocked_affinity, blocked_operator
from ..graph.knn import knn_graph
from ..io import as_array
from ..runtime.compute import compute, shared
from ..runtime.memory import MemoryEstimate, Part, check_memory

#: Landmarks of the starting fit: ``min(START_LANDMARKS, n // START_FRACTION)``.
START_LANDMARKS = 100_000
START_FRACTION = 4
#: LOBPCG on the blocked operator: residual tolerance and most iterations (one blockwise product each).
TOL = 1e-6
MAXITER = 3000
#: Steps of the Markov matrix that carry the landmark fit's eigenvectors to every row (LOBPCG's start).
STEPS = 8
#: Rows of the graph the intrinsic dimension is estimated on (every ``n // DIMENSION_ROWS``-th).
DIMENSION_ROWS = 200_000
#: n-vectors of float64 the driver holds at its peak (the k-th neighbour distances the kernel's scale is
#: taken from, and their copies); the iteration's blocks are on the workers.
DRIVER_VECTORS = 4


def landmark_rows(keys: np.ndarray, n: int, seed: int) -> np.ndarray:
    """The row numbers of the rows with these keys (:func:`bigdr.blockwise.sampling.row_keys`), in their order."""
    every = row_keys(0, n, seed)
    order = np.argsort(every)
    rows = order[np.searchsorted(every, keys, sorter=order)]
    if not np.array_equal(every[rows], keys):  # pragma: no cover - keys are distinct uniform draws
        raise RuntimeError("landmark keys do not match the rows' keys")
    return rows


def _seeded(start: int, stop: int, known: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Rows ``start:stop`` of ``[values on rows, 0 elsewhere | 1 on rows, 0 elsewhere]`` (``known``: the
    sorted rows and their values)."""
    rows, values = known
    Z = np.zeros((stop - start, values.shape[1] + 1))
    a, b = np.searchsorted(rows, [start, stop])
    Z[rows[a:b] - start, :-1], Z[rows[a:b] - start, -1] = values[a:b], 1.0
    return Z


def _reached_average(Z: np.ndarray) -> np.ndarray:
    out = np.zeros((len(Z), Z.shape[1] - 1))
    reached = Z[:, -1] > 0
    out[reached] = Z[reached, :-1] / Z[reached, -1:]
    return out


def propagate(op: BlockedOperator, root: RowBlocks, rows: np.ndarray, values: np.ndarray) -> RowBlocks:
    """Values known on ``rows`` spread to every row by ``STEPS`` steps of the Markov matrix, on the workers.

    ``M^t [values on rows, 0 elsewhere] / M^t [1 on rows, 0 elsewhere]``: per
    row, the average of the known values the random walk reaches in ``t``
    steps (0 where it reaches none). ``M = D^-1/2 S D^1/2`` (``S`` the
    operator's matrix, ``root = D^1/2 1``), or ``M = Q^-1 W`` for
    ``unnormalized``.
    """
    order = np.argsort(rows)
    known = shared((rows[order], values[order]))
    Z = RowBlocks.from_blocks(_seeded, op.matrix.starts, values.shape[1] + 1, known).persist()
    for _ in range(STEPS):
        if op.d is None:
            Z = op.matrix.times(Z).map(np.divide, op.q).persist()
        else:
            Z = op.matrix.times(Z.map(np.multiply, root)).map(np.divide, root).persist()
    return Z.map(_reached_average, width=values.shape[1])


def _embedded(U: np.ndarray, root: np.ndarray, factor: np.ndarray, symmetric: bool) -> np.ndarray:
    """One row block of the embedding: ``phi = U / root`` (times ``root`` again for ``symmetric``), scaled."""
    return (U if symmetric else U / root) * factor


def _largest(block: np.ndarray) -> float:
    return float(block.max())


def fit_partitioned(est: Any, X: Any) -> tuple[dict[str, Any], da.Array]:
    """Fit on every row by the blocked operator (what ``fit`` does when ``partitions`` is set).

    Parameters
    ----------
    est : DiffusionMap or SpectralEmbedding
        Its parameters, ``partitions`` among them (read, not changed).
    X : array-like, dask array or path of a store
        The rows.

    Returns
    -------
    attributes : dict
        The fitted attributes for the estimator to set: the landmark model that
        places new rows (transform, saving), and the all-rows results.
    embedding : dask.array.Array
        The n x n_components embedding of every row (the eigenvectors ``phi_k
        = D^-1/2 v_k`` of ``S v_k = (1 - mu_k) v_k``, scaled as the estimator
        scales them), its row blocks persisted on the workers.
    """
    if not (est.landmarks is None or (isinstance(est.landmarks, str) and est.landmarks == "auto")):
        raise ValueError(
            f"partitions={est.partitions!r} embeds all rows; landmarks must be None or 'auto' "
            f"(got {est.landmarks!r}). Set partitions=None for a landmark fit."
        )
    if est.eigen_solver not in ("auto", "lobpcg"):
        raise ValueError(
            f"partitions solves with LOBPCG on the blocked operator; eigen_solver must be 'auto' or 'lobpcg' "
            f"(got {est.eigen_solver!r})."
        )
    est._check_common()
    Xd = as_array(X, name="X")
    n = Xd.shape[0]
    k, d = int(est.n_neighbors), int(est.n_components)
    m = max(min(START_LANDMARKS, n // START_FRACTION), 4 * (k + 1), d + 2)
    if m >= n:
        raise ValueError(
            f"partitions needs more rows than a landmark fit of {m} (n_neighbors={k}); "
            f"{n} rows fit in one process: set partitions=None."
        )
    driver = Part(DRIVER_VECTORS * n * 8, f"n-vectors of the graph's scale ({n:,} rows)", "")
    check_memory(MemoryEstimate(type(est).__name__, {"vectors": driver}), in_driver=True)  # not on a worker

    start = clone(est).set_params(landmarks=m, partitions=None)
    start._fit(Xd if wants_numpy(X) else X)  # lazy: only the landmarks are solved
    landmarks = landmark_rows(start.reference_keys_, n, start.seed_)
    graph = knn_graph(Xd, k, metric=est.metric, method=est.neighbor_method,
                      random_state=est.seed_, partitions=est.partitions)  # fmt: skip
    dist = graph.distances.astype(np.float64)
    step = max(1, n // DIMENSION_ROWS)
    kth, sample = compute(dist[:, -1:], dist[::step])
    eps = est._epsilon(kth)
    del kth
    kind, alpha = start.operator_, start.alpha_
    W = blocked_affinity(graph.indices, dist, start.kernel_, eps, est._self_loops)
    del graph, dist  # W is persisted: the graph's blocks may leave the workers
    op = blocked_operator(W, kind, alpha)
    root = op.root().persist()
    phi0 = propagate(op, root, landmarks, start.eigenvectors_)
    eig = lobpcg(op.laplacian, phi0.map(np.multiply, root), constraint=root, tol=TOL, maxiter=MAXITER)
    mu, U = eig.values, eig.vectors
    if op.d is not None:
        bound = 2.0
    else:  # Gershgorin bound of D - W
        (peaks,) = compute([dask.delayed(_largest, pure=True)(b) for b in op.q.blocks])
        bound = 2.0 * max(peaks)
    n_unit = 1 + int(np.sum(mu < 1e-9 * bound))  # the constraint (null vector) is the first
    if n_unit > 1:
        message = (
            f"{n_unit} eigenvalues of the Markov matrix equal 1 (the kernel graph of all rows is "
            f"disconnected); the leading coordinates indicate components, not geometry."
        )
        if est.on_disconnected == "raise":
            raise ValueError(message + " Raise n_neighbors (or epsilon).")
        warnings.warn(message, DisconnectedGraphWarning, stacklevel=4)
    signs = U.map(np.divide, root).sign_of_peaks()  # of phi = D^-1/2 v, as flip_signs
    scale = est._scale(mu)
    Y = U.map(_embedded, root, signs * scale, kind == "symmetric").persist()

    # The model is the landmark one (transform, saving), plus the all-rows results.
    fitted = {name: value for name, value in vars(start).items() if name.endswith("_")}
    fitted["extension_eigenvalues_"] = start.laplacian_eigenvalues_
    fitted["laplacian_eigenvalues_"], fitted["all_rows_scale_"] = mu, scale
    fitted["all_rows_epsilon_"], fitted["lobpcg_residual_"] = eps, eig.residual
    fitted["lobpcg_iterations_"] = eig.n_iter
    fitted["n_unit_eigenvalues_"] = n_unit
    fitted["graph_recall_"] = None  # the cells' estimates only warn (knn_graph)
    fitted["intrinsic_dimension_"] = intrinsic_dimension(sample)
    # A landmark's coordinates in the landmark model need no extension: the map is fitted on the landmarks.
    design = np.column_stack([start.eigenvectors_ * start.scale_, np.ones(len(landmarks))])
    if kind == "symmetric":  # SpectralEmbedding: alpha is 0, so the degrees of W are those of W_alpha
        design[:, :d] *= np.sqrt(start.degrees_)[:, None]
    target = Y.rows(landmarks)
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    fitted["rotation_"], fitted["offset_"] = coef[:d], coef[d]
    fitted["landmark_residual_"] = float(np.linalg.norm(design @ coef - target) / np.linalg.norm(target))
    fitted["reference_indices_"] = landmarks
    fitted["mode_"] = "partitioned"
    return fitted, Y.to_dask()
