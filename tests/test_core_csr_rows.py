"""Row-wise CSR arithmetic against scipy's products with diagonal matrices; row ranges' invariants."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from bigdr.core import csr_rows
from bigdr.core.csr_rows import max_abs_row_sum, row_bounds, scaled


def random_csr(n: int, p: int, density: float, seed: int) -> sp.csr_matrix:
    A = sp.random(n, p, density=density, format="csr", random_state=seed, dtype=np.float64)
    A.data -= 0.5  # both signs, so the absolute row sum differs from the row sum
    return A


@pytest.mark.parametrize("shape, density", [((1, 1), 1.0), ((40, 30), 0.2), ((300, 300), 0.03), ((50, 8), 0.0)])
def test_scaled_equals_diagonal_products(shape, density, monkeypatch):
    monkeypatch.setattr(csr_rows, "STEP_NNZ", 7)  # many row ranges, some holding one long row
    A = random_csr(*shape, density, seed=1)
    rng = np.random.default_rng(2)
    left, right = rng.uniform(0.5, 2, shape[0]), rng.uniform(0.5, 2, shape[1])
    S = scaled(A.astype(np.float32), left, right)
    ref = sp.diags(left) @ A.astype(np.float32).astype(np.float64) @ sp.diags(right)
    assert S.dtype == np.float64
    np.testing.assert_allclose(S.toarray(), ref.toarray(), rtol=1e-12)
    np.testing.assert_array_equal(S.indptr, A.indptr)  # the sparsity pattern kept, nothing dropped or added


@pytest.mark.parametrize("shape, density", [((1, 1), 1.0), ((40, 30), 0.2), ((300, 300), 0.03), ((50, 8), 0.0)])
def test_max_abs_row_sum(shape, density, monkeypatch):
    monkeypatch.setattr(csr_rows, "STEP_NNZ", 5)
    A = random_csr(*shape, density, seed=3)
    expected = float(abs(A).sum(axis=1).max()) if A.shape[0] else 0.0
    assert max_abs_row_sum(A) == pytest.approx(expected, rel=1e-12, abs=0)


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(0, 9), min_size=1, max_size=40), step=st.integers(1, 25))
def test_row_bounds_cover_rows_in_order(counts, step):
    indptr = np.concatenate([[0], np.cumsum(counts)])
    bounds = row_bounds(indptr, step)
    n = len(counts)
    assert bounds[0] == 0 and bounds[-1] == n
    assert np.all(np.diff(bounds) > 0)  # every range holds at least one row
    # a range holds at most `step` nonzeros more than its first row needs (a long row is never split)
    for r0, r1 in zip(bounds[:-1], bounds[1:]):
        assert indptr[r1] - indptr[r0] <= step + max(counts[r0:r1])
