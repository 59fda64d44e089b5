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
5. LOBPCG (Knyazev 2001) finds the smallest eigenpairs of ``I - S`` (or ``D -
   W``); each product ``S X`` runs blockwise on the workers, and only the
   ``n x (d + 1)`` blocks of the iteration are in the driver.

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

import numpy as np
from sklearn.base import clone

from ..base import wants_numpy
from ..blockwise.sampling import row_keys
from ..core.dimension import intrinsic_dimension
from ..core.eigen import flip_signs, smallest_eigh
from ..exceptions import DisconnectedGraphWarning
from ..graph.blocked import BlockedMatrix, blocked_affinity, blocked_operator
from ..graph.knn import knn_graph
from ..io import as_array
from ..runtime.compute import compute
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
#: Blocks of n x (d + 1) floats the driver holds at its peak (LOBPCG's blocks, degrees, the start, the
#: embedding; calibrated: 4617 MiB measured at 5M rows, d = 5, in benchmarks/results/partitioned.md).
DRIVER_COPIES = 20


def landmark_rows(keys: np.ndarray, n: int, seed: int) -> np.ndarray:
    """The row numbers of the rows with these keys (:func:`bigdr.blockwise.sampling.row_keys`), in their order."""
    every = row_keys(0, n, seed)
    order = np.argsort(every)
    rows = order[np.searchsorted(every, keys, sorter=order)]
    if not np.array_equal(every[rows], keys):  # pragma: no cover - keys are distinct uniform draws
        raise RuntimeError("landmark keys do not match the rows' keys")
    return rows


def propagate(
    B: BlockedMatrix, q: np.ndarray | None, root: np.ndarray, rows: np.ndarray, values: np.ndarray
) -> np.ndarray:
    """Values known on ``rows`` spread to every row by ``STEPS`` steps of the Markov matrix.

    ``M^t [values on rows, 0 elsewhere] / M^t [1 on rows, 0 elsewhere]``: per row,
    the average of the known values the random walk reaches in ``t`` steps
    (0 where it reaches none). ``M = D^-1/2 S D^1/2`` when ``B`` is ``S``;
    ``M = Q^-1 W`` when ``B`` is ``W`` (``q`` given).
    """
    Z = np.zeros((B.n, values.shape[1] + 1))
    Z[rows, :-1], Z[rows, -1] = values, 1.0
    for _ in range(STEPS):
        Z = B.matmat(Z * root[:, None]) / root[:, None] if q is None else B.matmat(Z) / q[:, None]
    reached = Z[:, -1] > 0
    out = np.zeros((B.n, values.shape[1]))
    out[reached] = Z[reached, :-1] / Z[reached, -1:]
    return out


def fit_partitioned(est: Any, X: Any) -> tuple[dict[str, Any], np.ndarray, tuple[int, ...]]:
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
    embedding : numpy.ndarray
        The n x n_components embedding of every row (the eigenvectors ``phi_k
        = D^-1/2 v_k`` of ``S v_k = (1 - mu_k) v_k``, scaled as the estimator
        scales them).
    row_chunks : tuple of int
        The input's row chunks, for the lazy embedding.
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
    driver = Part(DRIVER_COPIES * n * (d + 1) * 8, f"the eigensolver's blocks ({n:,} rows)", "n_components")
    check_memory(MemoryEstimate(type(est).__name__, {"eigen": driver}), in_driver=True)  # not on a worker

    start = clone(est).set_params(landmarks=m, partitions=None)
    start._fit(Xd if wants_numpy(X) else X)  # lazy: only the landmarks are solved
    landmarks = landmark_rows(start.reference_keys_, n, start.seed_)
    graph = knn_graph(Xd, k, metric=est.metric, method=est.neighbor_method,
                      random_state=est.seed_, partitions=est.partitions)  # fmt: skip
    dist = graph.distances.astype(np.float64)
    step = max(1, n // DIMENSION_ROWS)
    kth, sample = compute(dist[:, -1:], dist[::step])
    eps = est._epsilon(kth)
    kind, alpha = start.operator_, start.alpha_
    W = blocked_affinity(graph.indices, dist, start.kernel_, eps, est._self_loops)
    op, B = blocked_operator(W, kind, alpha)
    root = np.ones(n) if op.d is None else np.sqrt(op.d)
    phi0 = propagate(B, op.q if op.d is None else None, root, landmarks, start.eigenvectors_)
    initial = np.column_stack([op.null_vector, phi0 * root[:, None]])
    eig = smallest_eigh(op.L, d + 1, "lobpcg", est.seed_, op.null_vector, tol=TOL, maxiter=MAXITER, initial=initial)
    mu, U = eig.values, eig.vectors
    bound = 2.0 if op.d is not None else 2.0 * float(op.q.max())  # Gershgorin bound of the Laplacian
    n_unit = int(np.sum(mu < 1e-9 * bound))
    if n_unit > 1:
        message = (
            f"{n_unit} eigenvalues of the Markov matrix equal 1 (the kernel graph of all rows is "
            f"disconnected); the leading coordinates indicate components, not geometry."
        )
        if est.on_disconnected == "raise":
            raise ValueError(message + " Raise n_neighbors (or epsilon).")
        warnings.warn(message, DisconnectedGraphWarning, stacklevel=4)
    phi, mu = flip_signs((U / root[:, None])[:, 1:]), mu[1:]
    scale = est._scale(mu)
    Y = (phi * root[:, None] if kind == "symmetric" else phi) * scale

    # The model is the landmark one (transform, saving), plus the all-rows results.
    fitted = {name: value for name, value in vars(start).items() if name.endswith("_")}
    fitted["extension_eigenvalues_"] = start.laplacian_eigenvalues_
    fitted["laplacian_eigenvalues_"], fitted["all_rows_scale_"] = mu, scale
    fitted["all_rows_epsilon_"], fitted["lobpcg_residual_"] = eps, eig.residual
    fitted["n_unit_eigenvalues_"] = n_unit
    fitted["intrinsic_dimension_"] = intrinsic_dimension(sample)
    # A landmark's coordinates in the landmark model need no extension: the map is fitted on the landmarks.
    design = np.column_stack([start.eigenvectors_ * start.scale_, np.ones(len(landmarks))])
    if kind == "symmetric":  # SpectralEmbedding: alpha is 0, so the degrees of W are those of W_alpha
        design[:, :d] *= np.sqrt(start.degrees_)[:, None]
    target = Y[landmarks]
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    fitted["rotation_"], fitted["offset_"] = coef[:d], coef[d]
    fitted["landmark_residual_"] = float(np.linalg.norm(design @ coef - target) / np.linalg.norm(target))
    fitted["reference_indices_"] = landmarks
    fitted["mode_"] = "partitioned"
    return fitted, Y, Xd.chunks[0]
