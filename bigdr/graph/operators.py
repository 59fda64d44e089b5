"""Graph operators: normalisation, Markov matrix, Laplacians (the second half of the geometry layer).

Normalisation (Coifman & Lafon 2006): ``q = W 1``, ``W_alpha = Q^-alpha W
Q^-alpha``; ``alpha`` 0 is the graph Laplacian, 0.5 Fokker-Planck, 1
Laplace-Beltrami (density removed). Then ``D = diag(W_alpha 1)``, the Markov
matrix ``M = D^-1 W_alpha`` and its symmetric conjugate ``S = D^-1/2
W_alpha D^-1/2``; the symmetric Laplacian is ``I - S`` (Belkin & Niyogi
2003; von Luxburg 2007). The estimators and the tests use the same functions.

References
----------
Coifman, R. R. & Lafon, S. (2006). Diffusion maps. Applied and Computational
Harmonic Analysis 21(1), 5-30. doi:10.1016/j.acha.2006.04.006

Belkin, M. & Niyogi, P. (2003). Laplacian eigenmaps for dimensionality
reduction and data representation. Neural Computation 15(6), 1373-1396.
doi:10.1162/089976603321780317
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..core.csr_rows import STEP_NNZ, max_abs_row_sum, scaled


class Normalised(NamedTuple):
    q: np.ndarray  #: degrees of W (the density estimate used by alpha)
    d: np.ndarray  #: degrees of W_alpha
    S: sp.csr_matrix  #: D^-1/2 W_alpha D^-1/2


def _alpha_weighted(W: sp.csr_matrix, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``q = W 1``, the factors ``q^-alpha`` of ``W_alpha = Q^-alpha W Q^-alpha`` and its degrees ``d = W_alpha 1``.

    ``W_alpha`` itself is never formed: each operator scales ``W`` once.
    """
    q = np.asarray(W.sum(axis=1)).ravel()
    qa = q**-alpha if alpha else np.ones_like(q)
    return q, qa, qa * np.asarray(W @ qa).ravel()


def normalise(W: sp.csr_matrix, alpha: float) -> Normalised:
    q, qa, d = _alpha_weighted(W, alpha)
    f = qa / np.sqrt(d)
    return Normalised(q, d, scaled(W, f, f))


def markov_matrix(W: sp.csr_matrix, alpha: float = 0.0) -> sp.csr_matrix:
    """``M = D^-1 W_alpha``: rows sum to 1 (a Markov matrix)."""
    _, qa, d = _alpha_weighted(W, alpha)
    return scaled(W, qa / d, qa)


def laplacian(W: sp.csr_matrix, kind: str, alpha: float = 0.0) -> sp.csr_matrix:
    """``unnormalized``: ``D - W``; ``symmetric``: ``I - D^-1/2 W D^-1/2``; ``random_walk``: ``I - D^-1 W``.

    Self-loops cancel in all three (they add to ``D`` and ``W`` alike only in
    the unnormalised case; the estimators build Laplacian-eigenmap graphs
    without them, as scikit-learn does).
    """
    n = W.shape[0]
    if kind == "unnormalized":
        return (sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W).tocsr()
    if kind == "symmetric":
        return (sp.identity(n, format="csr") - normalise(W, alpha).S).tocsr()
    if kind == "random_walk":
        return (sp.identity(n, format="csr") - markov_matrix(W, alpha)).tocsr()
    raise ValueError(f"laplacian must be 'unnormalized', 'symmetric' or 'random_walk'; got {kind!r}.")


class Operator(NamedTuple):
    """A Laplacian to solve, with what the Nystrom extension needs from it."""

    L: Any  #: symmetric positive semi-definite (sparse, or a LinearOperator); its smallest eigenvectors embed
    q: np.ndarray  #: degrees used by new rows' alpha normalisation (``W 1``)
    d: np.ndarray | None  #: degrees of ``W_alpha`` (None for the unnormalised Laplacian)
    null_vector: np.ndarray  #: the exact eigenvector of eigenvalue 0 (a start vector for iterative solvers)


def symmetric_operator(W: sp.csr_matrix, kind: str, alpha: float = 0.0) -> Operator:
    """The symmetric matrix whose smallest eigenpairs give the embedding.

    ``unnormalized``: ``D - W``. ``markov`` and ``symmetric``: ``I - S`` with
    ``S = D^-1/2 W_alpha D^-1/2``; its eigenvectors ``v`` give the right
    eigenvectors ``D^-1/2 v`` of the Markov matrix (``markov``, the
    random-walk Laplacian's generalised problem) or are used as they are
    (``symmetric``).
    """
    n = W.shape[0]
    if kind == "unnormalized":
        degrees = np.asarray(W.sum(axis=1)).ravel()
        return Operator(laplacian(W, "unnormalized"), degrees, None, np.full(n, 1 / np.sqrt(n)))
    if kind not in ("markov", "symmetric"):
        raise ValueError(f"kind must be 'unnormalized', 'markov' or 'symmetric'; got {kind!r}.")
    norm = normalise(W, alpha)
    root = np.sqrt(norm.d)
    return Operator((sp.identity(n, format="csr") - norm.S).tocsr(), norm.q, norm.d, root / np.linalg.norm(root))


#: Off-diagonal entries of an operator below this fraction of its largest absolute row sum couple nothing
#: (:func:`coupling_graph`). A row coupled to the rest only by such entries has a Rayleigh quotient of at most
#: ``k`` times it (``k`` neighbours, about 1e-9 of the scale), below which the estimators count an
#: eigenvalue as the Markov matrix's 1; no eigensolver separates such eigenvalues from 0. The Gaussian
#: kernel with one global epsilon makes them at outlying rows: on the 100,000-cell benchmark's 50 PCs,
#: 163 rows (or pairs) with every kernel weight below 1e-10, down to 1e-105.
NEGLIGIBLE_COUPLING = 1e-10


def coupling_graph(L: Any) -> sp.csr_matrix:
    """The rows of the sparse operator ``L`` that it couples: ``L`` without its entries below
    :data:`NEGLIGIBLE_COUPLING` of its largest absolute row sum (``L`` itself when it has none).

    Its connected components are the graph's as the eigensolvers see it: each holds one null vector of
    the Laplacian (``L``'s own null vector restricted to it), up to the negligible couplings.
    """
    L = sp.csr_matrix(L)
    bound = NEGLIGIBLE_COUPLING * max_abs_row_sum(L)
    strong = np.empty(L.nnz, dtype=np.int8)  # 1 byte a nonzero, filled a step at a time (no abs(L) copy)
    for a in range(0, L.nnz, STEP_NNZ):
        strong[a : a + STEP_NNZ] = np.abs(L.data[a : a + STEP_NNZ]) >= bound
    if strong.all():
        return L
    graph = sp.csr_matrix((strong, L.indices.copy(), L.indptr.copy()), shape=L.shape)
    graph.eliminate_zeros()  # in place: on copies of L's index arrays, which it would otherwise rewrite
    return graph
