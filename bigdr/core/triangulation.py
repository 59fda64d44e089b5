"""Landmark MDS and triangulation: the kernels of the landmarks + extension mechanism.

Classical MDS (Torgerson 1952) of squared dissimilarities ``A = D**2``: form
``B = -1/2 J A J`` with ``J = I - 11^T/n`` (double centring); if ``D`` is
Euclidean, ``B`` is the Gram matrix of the centred points and the best
``d``-dimensional fit is ``V_d diag(sqrt(lambda_d))``.

Landmark MDS (de Silva & Tenenbaum 2004) runs classical MDS on ``m``
landmarks only and places every other point ``a`` by distance-based
triangulation from its squared distances ``delta_a`` to the landmarks::

    y_a = -1/2 L# (delta_a - delta_mu),   L# = diag(1/sqrt(lambda)) V^T,

with ``delta_mu`` the column mean of the landmarks' squared distances. For a
landmark the formula gives back its MDS coordinates exactly; it is the
Nystrom extension of the kernel ``B``, and the ``transform`` of
:class:`bigdr.LandmarkMDS` and :class:`bigdr.Isomap`.

References
----------
Torgerson, W. S. (1952). Multidimensional scaling: I. Theory and method.
Psychometrika 17, 401-419. doi:10.1007/BF02288916

de Silva, V. & Tenenbaum, J. B. (2004). Sparse multidimensional scaling using
landmark points. Technical report, Stanford University.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numba
import numpy as np

from ..exceptions import NonEuclideanWarning
from .eigen import Eigenpairs, top_eigh

#: Rows per piece of a triangulation (bounds the row x landmark matrices).
TRIANGULATE_ROWS = 16_384


def double_centre(sq: np.ndarray) -> np.ndarray:
    """``-1/2 J A J`` of a square matrix of squared dissimilarities (a new array)."""
    B = np.array(sq, dtype=np.float64)
    B -= B.mean(axis=0, keepdims=True)
    B -= B.mean(axis=1, keepdims=True)
    B *= -0.5
    return B


class Triangulation(NamedTuple):
    """What places a point from its squared distances to the landmarks."""

    pinv: np.ndarray  #: (m, d) columns v_i / sqrt(lambda_i); zero where lambda_i <= 0
    mean_sq: np.ndarray  #: (m,) column means of the landmarks' squared distances
    spectrum: Eigenpairs | None  #: the landmarks' eigenpairs (None when rebuilt from a saved model)


def landmark_mds(landmark_sq: np.ndarray, n_components: int, random_state: Any = 0, **eigen: Any) -> Triangulation:
    """Classical MDS of the landmarks and the triangulation of de Silva & Tenenbaum.

    ``eigen``: :func:`~bigdr.core.eigen.top_eigh`'s ``solver``, ``tol`` and ``max_iter``.

    ``landmark_sq`` is the ``m x m`` matrix of squared dissimilarities among
    the landmarks. Components whose eigenvalue is not positive are set to
    zero (with a :class:`~bigdr.exceptions.NonEuclideanWarning`): they carry
    no Euclidean distance.
    """
    spec = top_eigh(double_centre(landmark_sq), n_components, random_state, **eigen)
    scale = float(np.abs(spec.values).max()) if spec.values.size else 0.0
    positive = spec.values > 1e-12 * max(scale, np.finfo(float).tiny)
    if not positive.all():
        warnings.warn(
            f"Only {int(positive.sum())} of the {n_components} leading eigenvalues of the double-centred "
            f"dissimilarities are positive; the other components are set to 0. Ask for fewer components.",
            NonEuclideanWarning,
            stacklevel=3,
        )
    pinv = np.zeros_like(spec.vectors)
    pinv[:, positive] = spec.vectors[:, positive] / np.sqrt(spec.values[positive])
    return Triangulation(pinv, np.asarray(landmark_sq, dtype=np.float64).mean(axis=0), spec)


def geodesic_mds(
    G: np.ndarray, landmarks: np.ndarray, n_components: int, random_state: Any = 0, **eigen: Any
) -> Triangulation:
    """:func:`landmark_mds` of the landmarks' geodesics: ``G`` is (nodes x landmarks), ``landmarks`` their rows.

    The squared distances are symmetrised (shortest paths from each end can differ in the last bits).
    """
    sq = G[landmarks].astype(np.float64) ** 2
    return landmark_mds((sq + sq.T) / 2, n_components, random_state, **eigen)


def triangulate(sq: np.ndarray, tri: Triangulation) -> np.ndarray:
    """Coordinates of points from their squared distances to the landmarks (rows of ``sq``).

    ``sq`` may be float32 distances not yet squared-as-float64: each piece is
    cast to float64 before use. Non-finite squared distances (a point no
    landmark reaches) give NaN rows.
    """
    out = np.empty((len(sq), tri.pinv.shape[1]))
    for s in range(0, len(sq), TRIANGULATE_ROWS):
        piece = np.asarray(sq[s : s + TRIANGULATE_ROWS], dtype=np.float64) - tri.mean_sq
        out[s : s + len(piece)] = -0.5 * (piece @ tri.pinv)
    bad = ~np.isfinite(sq).all(axis=1)
    if bad.any():
        out[bad] = np.nan
    return out


def triangulate_distances(G: np.ndarray, tri: Triangulation) -> np.ndarray:
    """Triangulate every row of a (rows x landmarks) *distance* matrix, squaring piece by piece."""
    out = np.empty((len(G), tri.pinv.shape[1]))
    step = max(1024, (64 << 20) // (8 * max(G.shape[1], 1)))
    for s in range(0, len(G), step):
        out[s : s + step] = triangulate(G[s : s + step].astype(np.float64) ** 2, tri)
    return out


def place_through_neighbours(
    ind: np.ndarray, dist: np.ndarray, geodesics: np.ndarray, tri: Triangulation
) -> np.ndarray:
    """Coordinates of rows reached through their neighbours: Isomap's out-of-sample rule.

    A row's geodesic to landmark ``l`` is ``g_l = min_j dist[j] + geodesics[ind[j], l]``
    over its neighbours ``j`` (rounded to float32, as the geodesics are kept),
    then it is triangulated from ``g**2`` (:func:`triangulate`). One compiled
    pass per row: the row x landmark matrix is never formed, which made this
    step memory-bound (three passes over it per neighbour). Rows no landmark
    reaches get NaN.
    """
    out = np.empty((len(ind), tri.pinv.shape[1]))
    _place(
        np.ascontiguousarray(ind),
        np.ascontiguousarray(dist),
        np.ascontiguousarray(geodesics),
        np.ascontiguousarray(tri.mean_sq, dtype=np.float64),
        np.ascontiguousarray(tri.pinv, dtype=np.float64),
        out,
    )
    return out


@numba.njit(nogil=True, cache=True)
def _place(ind, dist, geodesics, mean_sq, pinv, out):  # pragma: no cover (compiled)
    n, k = ind.shape
    m, d = pinv.shape
    g = np.empty(m)
    for i in range(n):
        g[:] = np.inf
        for j in range(k):
            step = np.float64(dist[i, j])
            if not step < np.inf:
                continue  # padding or a neighbour cut by the radius
            row = geodesics[ind[i, j]]
            for l in range(m):
                v = step + np.float64(row[l])
                if v < g[l]:
                    g[l] = v
        for c in range(d):
            out[i, c] = 0.0
        for l in range(m):
            if not g[l] < np.inf:
                for c in range(d):
                    out[i, c] = np.nan
                break
            gl = np.float64(np.float32(g[l]))
            s = -0.5 * (gl * gl - mean_sq[l])
            for c in range(d):
                out[i, c] += s * pinv[l, c]


#: Kept reference rows over which an update's Procrustes alignment is fitted.
ALIGN_ROWS = 20_000


def alignment_rows(n_kept: int, seed: Any) -> np.ndarray:
    """Sorted positions of at most :data:`ALIGN_ROWS` of the ``n_kept`` reference rows an update keeps:
    the rows over which its new embedding is aligned to the one before (:func:`rigid_alignment`)."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_kept, size=min(ALIGN_ROWS, n_kept), replace=False))


def rigid_alignment(source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rotation (or reflection) ``R`` and translation ``t`` minimising ``|source R + t - target|_F``.

    Orthogonal Procrustes (Schoenemann 1966) on the centred points, no
    scaling: ``U S V^T = svd(source_c^T target_c)``, ``R = U V^T``,
    ``t = mean(target) - mean(source) R``. Rows with NaN are ignored.
    """
    ok = np.isfinite(source).all(axis=1) & np.isfinite(target).all(axis=1)
    a, b = np.asarray(source[ok], dtype=np.float64), np.asarray(target[ok], dtype=np.float64)
    ma, mb = a.mean(axis=0), b.mean(axis=0)
    U, _, Vt = np.linalg.svd((a - ma).T @ (b - mb))
    R = U @ Vt
    return R, mb - ma @ R


def aligned(tri: Triangulation, R: np.ndarray, t: np.ndarray) -> Triangulation:
    """The triangulation whose output is ``y R + t`` for the ``y`` of ``tri``.

    ``y = -1/2 (delta - mu) P`` becomes ``-1/2 (delta - mu') P R`` with
    ``mu' = mu + 2 t R^T P^+`` (``P^+`` the pseudo-inverse of ``P``), so a
    stored model needs no extra state: rotation and shift fold into the
    triangulation's two arrays.
    """
    pinv = tri.pinv @ R
    shift = 2.0 * (t @ R.T) @ np.linalg.pinv(tri.pinv)
    return Triangulation(pinv, tri.mean_sq + shift, tri.spectrum)


def residual_variance(geodesics: np.ndarray, row_embedding: np.ndarray, landmark_embedding: np.ndarray) -> np.ndarray:
    """``1 - R^2`` between geodesic and embedding distances, for 1..d dimensions (Tenenbaum et al. 2000).

    ``geodesics`` is (rows x landmarks); pairs with an infinite geodesic are skipped.
    """
    from scipy.spatial.distance import cdist

    ok = np.isfinite(geodesics)
    g = geodesics[ok].astype(np.float64)
    out = np.empty(row_embedding.shape[1])
    for d in range(1, row_embedding.shape[1] + 1):
        e = cdist(row_embedding[:, :d], landmark_embedding[:, :d])[ok]
        r = np.corrcoef(g, e)[0, 1] if g.size > 1 and e.std() > 0 and g.std() > 0 else 0.0
        out[d - 1] = 1.0 - r**2
    return out
