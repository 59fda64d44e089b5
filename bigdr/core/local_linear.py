"""Local factors of locally linear embedding and its variants, on numpy blocks of rows.

Every variant's cost matrix is a sum of small positive semi-definite blocks,
one per row ``i`` over an index set ``J_i`` (the row and its neighbours, or
the neighbours alone): ``M = sum_i S_i^T F_i F_i^T S_i = C^T C``, where
``S_i`` selects ``J_i`` and the *local factor* ``F_i`` is ``|J_i| x r``.
:func:`local_factors` returns ``F_i`` for a block of rows from their
neighbours' coordinates alone, so the factors are computed blockwise on any
worker; :mod:`bigdr.graph.barycentric` assembles ``C``.

* ``standard`` (Roweis & Saul 2000): ``J_i = (i, N(i))``, ``F_i = (1, -w_i)``
  with the barycentric weights ``w_i`` (:func:`barycenter_weights`), so
  ``C = I - W`` and ``M = (I - W)^T (I - W)``.
* ``modified`` (Zhang & Wang 2007): ``J_i = (i, N(i))``, ``F_i`` the ``s_i``
  weight vectors of the local almost-null space, each summing to one.
* ``hessian`` (Donoho & Grimes 2003): ``J_i = N(i)``, ``F_i`` the
  orthonormalised Hessian estimator's columns.
* ``ltsa`` (Zhang & Zha 2004): ``J_i = N(i)``, ``F_i F_i^T = I - G_i G_i^T``
  with ``G_i`` the local tangent basis and the constant.

The formulas follow scikit-learn's ``manifold.locally_linear_embedding``
(including its column scaling of the Hessian estimator and its median rule
for the modified variant's null-space size), so the results agree with it.

References
----------
Roweis, S. T. & Saul, L. K. (2000). Nonlinear dimensionality reduction by
locally linear embedding. Science 290, 2323-2326.
Zhang, Z. & Wang, J. (2007). MLLE: modified locally linear embedding using
multiple weights. NIPS 19.
Donoho, D. L. & Grimes, C. (2003). Hessian eigenmaps: locally linear
embedding techniques for high-dimensional data. PNAS 100(10), 5591-5596.
Zhang, Z. & Zha, H. (2004). Principal manifolds and nonlinear dimensionality
reduction via tangent space alignment. SIAM J. Sci. Comput. 26(1), 313-338.
"""

from __future__ import annotations

import numpy as np

VARIANTS = ("standard", "modified", "hessian", "ltsa")
#: scikit-learn's tolerances: a Hessian column whose sum is below this is not scaled,
#: a Householder vector shorter than this is dropped (modified).
HESSIAN_TOL = 1e-4
MODIFIED_TOL = 1e-12


def min_neighbors(method: str, n_components: int) -> int:
    """The fewest neighbours ``method`` needs for ``n_components`` coordinates (scikit-learn's rules)."""
    d = n_components
    if method == "hessian":
        return d * (d + 3) // 2 + 1  # more than d + d(d+1)/2: the Hessian estimator's columns
    if method == "ltsa":
        return d + 1  # the tangent basis and the constant
    return d  # standard, modified


def includes_self(method: str) -> bool:
    """Whether a row's own index leads its index set ``J_i`` (else ``J_i`` is its neighbours)."""
    return method in ("standard", "modified")


def barycenter_weights(x: np.ndarray, neighbours: np.ndarray, reg: float) -> np.ndarray:
    """Weights ``w`` (rows sum to one) reconstructing each ``x_i`` from its neighbours.

    ``min |x_i - sum_j w_ij n_ij|^2`` subject to ``sum_j w_ij = 1`` solves
    ``(G + R I) w = 1`` with the local Gram matrix ``G = (n_i - x_i)(n_i -
    x_i)^T`` and ``R = reg * trace(G)`` (``reg`` itself when the trace is 0),
    then rescales ``w`` to sum to one: the regulariser is relative to the
    neighbourhood's spread, as in scikit-learn.

    ``x``: (b, p); ``neighbours``: (b, k, p). Returns (b, k).
    """
    Z = neighbours - x[:, None, :]
    G = Z @ Z.transpose(0, 2, 1)
    k = G.shape[1]
    trace = np.trace(G, axis1=1, axis2=2)
    R = np.where(trace > 0, reg * trace, reg)
    G[:, np.arange(k), np.arange(k)] += R[:, None]
    w = np.linalg.solve(G, np.ones((len(G), k, 1)))[..., 0]
    return w / w.sum(axis=1, keepdims=True)


def place_unused(X: np.ndarray, ind: np.ndarray, Y: np.ndarray, placed: np.ndarray, reg: float) -> np.ndarray:
    """Coordinates for the rows no index set contains, by barycentric weights over placed neighbours.

    The Hessian and LTSA variants build each row's factor on its neighbours
    alone, so a row that is nobody's neighbour has an empty column in ``C``:
    its unit vector is an exact null vector of ``M``, and an eigensolver would
    return it instead of the embedding (70 rows of a 250,000-row swiss roll at
    ``k`` = 10). Such rows are left out of the eigenproblem and placed here as
    ``transform`` places new rows (scikit-learn's rule), over their neighbours
    already placed; a row whose neighbours are all unplaced waits for a later
    round. ``Y``: (n, d), filled where ``placed``; returns it completed.
    """
    Y, placed = Y.copy(), placed.copy()
    while not placed.all():
        progress = False
        for i in np.flatnonzero(~placed):
            near = ind[i][placed[ind[i]] & (ind[i] != i)]
            if len(near) == 0:
                continue
            w = barycenter_weights(X[i][None], X[near][None], reg)[0]
            Y[i] = w @ Y[near]
            placed[i] = progress = True
        if not progress:
            raise ValueError("Some rows are not connected to the rest through their neighbour lists.")
    return Y


def _top_left_vectors(Z: np.ndarray, full: bool) -> tuple[np.ndarray, np.ndarray]:
    """Left singular vectors (columns, descending) and squared singular values of each (k, p) block."""
    k, p = Z.shape[1:]
    if k > p:
        U, s, _ = np.linalg.svd(Z, full_matrices=full)
        return U, s**2
    values, vectors = np.linalg.eigh(Z @ Z.transpose(0, 2, 1))
    return vectors[..., ::-1], values[:, ::-1]


def modified_ratios(x: np.ndarray, neighbours: np.ndarray, n_components: int) -> np.ndarray:
    """Each row's ratio of the small to the large local eigenvalues; their median is ``eta``."""
    _, evals = _top_left_vectors(neighbours - x[:, None, :], full=False)
    return evals[:, n_components:].sum(1) / evals[:, :n_components].sum(1)


def local_factors(
    method: str,
    x: np.ndarray,
    neighbours: np.ndarray,
    n_components: int,
    reg: float,
    eta: float | None = None,
    tol: float | None = None,
) -> np.ndarray:
    """The local factors ``F_i`` (b, |J_i|, r) of a block of rows; zero columns pad ragged ``r``.

    ``eta`` (``modified`` only): the median of :func:`modified_ratios` over all rows. ``tol``:
    scikit-learn's ``hessian_tol`` (a weight column summing below it is not normalised) or
    ``modified_tol`` (a reflection vector shorter than it is dropped); None: 1e-4 and 1e-12.
    """
    d = n_components
    b, k, _ = neighbours.shape
    if method == "standard":
        w = barycenter_weights(x, neighbours, reg)
        return np.concatenate([np.ones((b, 1)), -w], axis=1)[:, :, None]
    if method == "modified":
        if eta is None:
            raise ValueError("the modified variant needs eta, the median of modified_ratios over all rows.")
        return _modified(x, neighbours, d, reg, eta, MODIFIED_TOL if tol is None else tol)
    centred = neighbours - neighbours.mean(axis=1, keepdims=True)
    if method == "hessian":
        U, _ = _top_left_vectors(centred, full=False)
        U = U[..., :d]
        cross = [U[..., a : a + 1] * U[..., a:] for a in range(d)]
        Y = np.concatenate([np.ones((b, k, 1)), U, *cross], axis=2)
        Q = np.linalg.qr(Y, mode="complete")[0]
        w = Q[..., d + 1 :]
        S = w.sum(axis=1, keepdims=True)
        S[np.abs(S) < (HESSIAN_TOL if tol is None else tol)] = 1.0
        return w / S
    if method == "ltsa":
        U, _ = _top_left_vectors(centred, full=True)
        G = np.concatenate([np.full((b, k, 1), 1.0 / np.sqrt(k)), U[..., :d]], axis=2)
        # I - G G^T is the projector onto the complement of G's orthonormal columns.
        return np.linalg.qr(G, mode="complete")[0][..., d + 1 :]
    raise ValueError(f"method must be one of {VARIANTS}; got {method!r}.")


def _modified(x: np.ndarray, neighbours: np.ndarray, d: int, reg: float, eta: float, tol: float) -> np.ndarray:
    b, k, p = neighbours.shape
    V, evals = _top_left_vectors(neighbours - x[:, None, :], full=True)
    nev = evals.shape[1]
    # Regularised barycentric weights from the spectrum already at hand.
    r = reg * evals.sum(1)
    tmp = np.einsum("bkj,k->bj", V, np.ones(k))
    tmp[:, :nev] /= evals + r[:, None]
    tmp[:, nev:] /= r[:, None]
    w_reg = np.einsum("bkj,bj->bk", V, tmp)
    w_reg /= w_reg.sum(1, keepdims=True)
    # s_i: the largest tail of the spectrum whose ratio to the rest stays below eta.
    cumsum = np.cumsum(evals, 1)
    ratios = cumsum[:, -1:] / cumsum[:, :-1] - 1
    s = np.array([np.searchsorted(row[::-1], eta) for row in ratios]) + (k - nev)
    s = np.clip(s, 1, k)
    width = int(s.max())
    cols = np.arange(k - width, k)
    mask = (cols[None, :] >= (k - s)[:, None]).astype(np.float64)  # (b, width): column in the null space
    Vi = V[:, :, cols] * mask[:, None, :]
    alpha = np.linalg.norm(Vi.sum(1), axis=1) / np.sqrt(s)
    h = alpha[:, None] * mask - Vi.sum(1)
    norm = np.linalg.norm(h, axis=1, keepdims=True)
    h = np.where(norm < tol, 0.0, h / np.where(norm < tol, 1.0, norm))
    Vh = np.einsum("bkj,bj->bk", Vi, h)
    Wi = Vi - 2 * Vh[:, :, None] * h[:, None, :] + (1 - alpha)[:, None, None] * w_reg[:, :, None] * mask[:, None, :]
    return np.concatenate([-mask[:, None, :], Wi], axis=1)
