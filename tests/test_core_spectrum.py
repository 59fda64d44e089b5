import numpy as np
import pytest
from scipy import integrate

from bigdr.core.spectrum import (
    bulk_misfit,
    estimate_noise_variance,
    marchenko_pastur_edges,
    marchenko_pastur_median,
    marchenko_pastur_pdf,
    n_components_for_fraction,
    n_components_mp,
    n_components_whitened,
    tracy_widom_quantile,
    white_noise_edge,
)


@pytest.mark.parametrize("gamma", [0.05, 0.3, 1.0])
def test_mp_density_integrates_to_one(gamma):
    a, b = marchenko_pastur_edges(gamma)
    total = integrate.quad(lambda u: marchenko_pastur_pdf(np.array([u]), gamma)[0], a, b, limit=200)[0]
    assert total == pytest.approx(1, abs=1e-6)


def test_mp_median_matches_pure_noise_sample():
    rng = np.random.default_rng(0)
    n, p = 4000, 1000
    X = rng.standard_normal((n, p)) * 2.0  # sigma^2 = 4
    ev = np.linalg.eigvalsh(X.T @ X / n)
    assert np.median(ev) / 4 == pytest.approx(marchenko_pastur_median(p / n), rel=0.02)
    assert estimate_noise_variance(ev, n, p) == pytest.approx(4, rel=0.02)


def test_wide_case_uses_nonzero_eigenvalues():
    rng = np.random.default_rng(1)
    n, p = 500, 2000
    X = rng.standard_normal((n, p)) * 3.0
    ev = np.linalg.eigvalsh(X @ X.T / n)  # the n nonzero eigenvalues of the p x p covariance
    assert estimate_noise_variance(ev, n, p) == pytest.approx(9, rel=0.03)


def test_spikes_above_bbp_threshold_are_found_and_below_are_not():
    rng = np.random.default_rng(2)
    n, p = 5000, 500  # gamma = 0.1, BBP threshold sqrt(gamma) = 0.32
    V, _ = np.linalg.qr(rng.standard_normal((p, 3)))
    betas = np.array([3.0, 1.0, 0.1])  # the last is below the threshold
    X = rng.standard_normal((n, p)) + (rng.standard_normal((n, 3)) * np.sqrt(betas)) @ V.T
    ev = np.linalg.eigvalsh(np.cov(X.T, bias=True))[::-1]
    k, sigma2, edge = n_components_mp(ev, n, p)
    assert k == 2
    assert sigma2 == pytest.approx(1, rel=0.03)
    assert edge == pytest.approx((1 + np.sqrt(0.1)) ** 2, rel=0.03)


def test_fraction_rule():
    ratio = np.array([0.5, 0.3, 0.1, 0.1])
    assert n_components_for_fraction(ratio, 0.5) == 2  # scikit-learn's rule: strictly more than
    assert n_components_for_fraction(ratio, 0.79) == 2
    assert n_components_for_fraction(ratio, 0.85) == 3
    assert n_components_for_fraction(ratio, 0.999) == 4


# -- rank selection when the noise differs between features ---------------------------------------
def _spiked(n, p, spikes, noise, seed):
    from bigdr.datasets import make_spiked_covariance

    X = make_spiked_covariance(n, p, spikes=spikes, noise=noise, seed=seed)[0].compute()
    Xc = X - X.mean(axis=0)
    return Xc.T @ Xc / n


UNEQUAL = np.linspace(0.5, 1.0, 200)


def test_whitened_rule_finds_the_spikes_where_mp_does_not():
    S = _spiked(20_000, 200, (20, 10, 5, 3, 2), UNEQUAL, seed=11)
    values = np.linalg.eigvalsh(S)[::-1]
    k_mp, sigma2, _ = n_components_mp(values, 20_000, 200)
    assert k_mp > 50  # the bulk is wider than one Marchenko-Pastur law
    misfit, tol = bulk_misfit(values, 20_000, 200, k_mp, sigma2)
    assert misfit > tol
    k, psi, whitened, edge = n_components_whitened(S, 20_000)
    assert k == 5
    np.testing.assert_allclose(psi, UNEQUAL**2, rtol=0.05)  # each feature's noise variance, recovered
    assert whitened[4] > edge > whitened[5]


def test_whitened_rule_and_mp_agree_on_equal_noise_and_mp_fits_its_bulk():
    S = _spiked(20_000, 200, (20, 10, 5, 3, 2), 1.0, seed=12)
    values = np.linalg.eigvalsh(S)[::-1]
    k_mp, sigma2, _ = n_components_mp(values, 20_000, 200)
    misfit, tol = bulk_misfit(values, 20_000, 200, k_mp, sigma2)
    assert k_mp == 5 and misfit < tol
    assert n_components_whitened(S, 20_000)[0] == 5


def test_whitened_rule_tests_each_component_against_the_noise_fitted_without_it():
    # Wide data (n = 500, p = 1,000): fitted with 4 factors the noise variances shrink and the 4th whitened
    # eigenvalue of this seed passes the edge; fitted with 3 (the null hypothesis) it does not.
    k, psi, whitened, edge = n_components_whitened(_spiked(500, 1000, (50, 20, 10), 1.0, seed=5), 500)
    assert k == 3 and whitened[2] > edge >= whitened[3]
    assert abs(np.mean(psi) - 1.0) < 0.005  # the noise variances, unbiased for the mean and 3 factors


def test_no_spike_gives_zero_and_low_rank_data_give_their_rank():
    assert n_components_whitened(_spiked(20_000, 100, (), np.linspace(0.5, 1, 100), seed=13), 20_000)[0] == 0
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 10)) @ rng.standard_normal((10, 50))  # noise-free, rank 10
    S = np.cov(X.T, bias=True)
    assert n_components_mp(np.linalg.eigvalsh(S)[::-1], 2000, 50)[0] == 10
    assert n_components_whitened(S, 2000)[0] == 10


def test_tracy_widom_quantiles_match_johnstones_table():
    # Johnstone (2001), table 1: the 90th, 95th and 99th percentiles of TW_1.
    for level, value in ((0.90, 0.4501), (0.95, 0.9793), (0.99, 2.0234)):
        assert tracy_widom_quantile(level) == pytest.approx(value, abs=1e-4)
    assert 3.25 < tracy_widom_quantile(0.999) < 3.30
    with pytest.raises(ValueError, match="level"):
        tracy_widom_quantile(1.0)


def test_white_noise_edge_is_exceeded_about_as_often_as_its_level_says():
    rng = np.random.default_rng(1)
    n, p = 1000, 40
    top = np.asarray([np.linalg.eigvalsh(np.cov(rng.standard_normal((n, p)).T, bias=True))[-1] for _ in range(400)])
    at_99 = np.mean(top > white_noise_edge(n, p, level=0.99))
    assert at_99 <= 0.03  # 4 expected of 400
    assert np.mean(top > white_noise_edge(n, p)) <= at_99  # the default level (99.9%) is passed less often
    assert white_noise_edge(n, p) > white_noise_edge(n, p, level=0.99)
    assert np.mean(top > marchenko_pastur_edges(p / n)[1]) > at_99  # the bare edge is passed more often
