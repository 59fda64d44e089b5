import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bigdr.blockwise.reduce import tree_reduce
from bigdr.core.stats import Moments, merge_all, merge_moments, merge_qr, moments_block, qr_block


def _data(seed, n=400, p=6):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) * np.geomspace(5, 0.5, p) + 1e3


def _reference(X):
    Xc = X - X.mean(0)
    return X.mean(0), Xc.T @ Xc


splits = st.lists(st.integers(1, 399), min_size=0, max_size=12, unique=True).map(sorted)


@settings(max_examples=40, deadline=None)
@given(cuts=splits, order_seed=st.integers(0, 2**16), seed=st.integers(0, 50))
def test_moments_any_split_any_merge_order(cuts, order_seed, seed):
    X = _data(seed)
    blocks = np.split(X, cuts)
    states = [moments_block(b) for b in blocks]
    np.random.default_rng(order_seed).shuffle(states)
    # Merge in a random pairing order, not only the balanced tree.
    rng = np.random.default_rng(order_seed + 1)
    while len(states) > 1:
        i = rng.integers(0, len(states) - 1)
        states[i : i + 2] = [merge_moments(states[i], states[i + 1])]
    mean, scatter = _reference(X)
    assert states[0].n == len(X)
    np.testing.assert_allclose(states[0].mean, mean, rtol=1e-13)
    np.testing.assert_allclose(states[0].scatter, scatter, rtol=1e-9, atol=1e-9 * np.abs(scatter).max())


@settings(max_examples=25, deadline=None)
@given(cuts=splits, seed=st.integers(0, 50))
def test_qr_any_split_gives_the_same_scatter(cuts, seed):
    X = _data(seed)
    state = merge_all([qr_block(b) for b in np.split(X, cuts)], merge_qr)
    mean, scatter = _reference(X)
    np.testing.assert_allclose(state.mean, mean, rtol=1e-13)
    np.testing.assert_allclose(state.R.T @ state.R, scatter, rtol=1e-9, atol=1e-9 * np.abs(scatter).max())


@settings(max_examples=20, deadline=None)
@given(chunk=st.integers(7, 400), split_every=st.integers(2, 9))
def test_tree_reduce_is_chunking_invariant(chunk, split_every):
    X = _data(3)
    state = tree_reduce(da.from_array(X, chunks=(chunk, 6)), moments_block, merge_moments, split_every).compute()
    mean, scatter = _reference(X)
    np.testing.assert_allclose(state.scatter, scatter, rtol=1e-9, atol=1e-9 * np.abs(scatter).max())


def test_diagonal_moments_and_empty_state():
    X = _data(1)
    d = moments_block(X, diagonal=True)
    np.testing.assert_allclose(d.scatter, X.var(0) * len(X), rtol=1e-12)
    empty = Moments(0, np.zeros(6), np.zeros((6, 6)))
    full = moments_block(X)
    assert merge_moments(empty, full) is full and merge_moments(full, empty) is full


def test_merge_is_stable_with_a_large_offset():
    # E[x^2] - E[x]^2 would lose every digit here; Chan's update keeps them.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10_000, 3)) + 1e8
    state = merge_all([moments_block(b) for b in np.array_split(X, 17)], merge_moments)
    Xc = X - X.mean(0)
    np.testing.assert_allclose(state.scatter, Xc.T @ Xc, rtol=1e-6, atol=1e-3)
    np.testing.assert_allclose(np.diag(state.scatter) / len(X), 1, atol=0.05)


def test_float32_blocks_accumulate_in_float64():
    X = _data(2).astype(np.float32)
    s = moments_block(X)
    assert s.mean.dtype == np.float64 and s.scatter.dtype == np.float64


def test_extremes_merged_over_blocks_equal_those_of_all_rows():
    from bigdr.core.stats import extremes, merge_extremes

    rng = np.random.default_rng(5)
    X, mean, directions = rng.standard_normal((1000, 4)), rng.standard_normal(4), rng.standard_normal((4, 2))
    whole = extremes(X, mean, directions)
    t = (X - mean) @ directions
    np.testing.assert_allclose(whole, np.stack([t.min(axis=0), t.max(axis=0)]), atol=1e-12)
    parts = [extremes(X[s : s + 97], mean, directions, piece_rows=13) for s in range(0, 1000, 97)]
    merged = parts[0]
    for p in parts[1:]:
        merged = merge_extremes(merged, p)
    np.testing.assert_allclose(merged, whole, atol=1e-12)


@pytest.mark.parametrize("kind", ["dense float32", "dense float64", "csr 40%", "csr 2%"])
def test_gram_block_equals_the_uncentred_product_on_every_route(kind, monkeypatch):
    """TruncatedSVD's ``X^T X``: float64 gemm on pieces (dense, or CSR at or above the density rule), else the
    sparse product; all equal the float64 formula, whatever the pieces."""
    import scipy.sparse as sp

    from bigdr.core import stats

    monkeypatch.setattr(stats, "SUB_BLOCK_ROWS", 150)
    monkeypatch.setattr(stats, "DENSE_PART_BYTES", 8 * 9 * 150)
    rng = np.random.default_rng(11)
    if kind.startswith("dense"):
        X = (rng.standard_normal((700, 9)) + 3).astype(np.float32 if "32" in kind else np.float64)
        D = X.astype(np.float64)
    else:
        X = sp.random(700, 9, density=0.4 if "40" in kind else 0.02, format="csr", random_state=2, dtype=np.float32)
        D = X.toarray().astype(np.float64)
    G = stats.gram_block(X)
    assert G.dtype == np.float64 and G.shape == (9, 9)
    np.testing.assert_allclose(G, D.T @ D, rtol=1e-13, atol=1e-12)
