import numpy as np
import pytest
from scipy import integrate

from bigdr.core.spectrum import (
    estimate_noise_variance,
    marchenko_pastur_edges,
    marchenko_pastur_median,
    marchenko_pastur_pdf,
    n_components_for_fraction,
    n_components_mp,
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
