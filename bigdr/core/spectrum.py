"""Spectrum helpers: choosing the number of components.

Marchenko-Pastur law (Marchenko & Pastur 1967): for n samples of p
i.i.d. coordinates with variance sigma^2 and p/n -> gamma, the eigenvalues of
the sample covariance spread over
``[sigma^2 (1 - sqrt(gamma))^2, sigma^2 (1 + sqrt(gamma))^2]`` even though the
true covariance is sigma^2 I. In the spiked model (Baik, Ben Arous &
Peche 2005) a direction with variance sigma^2 (1 + beta) produces an
eigenvalue outside this bulk only when ``beta > sqrt(gamma)``; below that
threshold it is not detectable from the spectrum at all.

References
----------
Marchenko, V. A. & Pastur, L. A. (1967). Distribution of eigenvalues for some
sets of random matrices. Math. USSR-Sbornik 1(4), 457-483.
doi:10.1070/SM1967v001n04ABEH001994

Baik, J., Ben Arous, G. & Peche, S. (2005). Phase transition of the largest
eigenvalue for nonnull complex sample covariance matrices. Annals of
Probability 33(5), 1643-1697. doi:10.1214/009117905000000233

Gavish, M. & Donoho, D. L. (2014). The optimal hard threshold for singular
values is 4/sqrt(3). IEEE Trans. Information Theory 60(8), 5040-5053.
doi:10.1109/TIT.2014.2323359
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import integrate, optimize


def marchenko_pastur_edges(gamma: float, sigma2: float = 1.0) -> tuple[float, float]:
    """Lower and upper edge of the Marchenko–Pastur bulk, ``sigma2 (1 -/+ sqrt(gamma))^2``."""
    r = np.sqrt(gamma)
    return sigma2 * (1 - r) ** 2, sigma2 * (1 + r) ** 2


def marchenko_pastur_pdf(u: np.ndarray, gamma: float, sigma2: float = 1.0) -> np.ndarray:
    """Density of the Marchenko–Pastur law for ``gamma <= 1`` (Marchenko & Pastur 1967)."""
    a, b = marchenko_pastur_edges(gamma, sigma2)
    u = np.asarray(u, dtype=float)
    inside = (u > a) & (u < b)
    out = np.zeros_like(u)
    ui = u[inside]
    out[inside] = np.sqrt((b - ui) * (ui - a)) / (2 * np.pi * sigma2 * ui * gamma)
    return out


@functools.lru_cache(maxsize=256)
def marchenko_pastur_median(beta: float) -> float:
    """Median of the Marchenko–Pastur law with ratio ``beta <= 1`` and sigma^2 = 1."""
    if not 0 < beta <= 1:
        raise ValueError(f"beta must be in (0, 1]; got {beta}")
    a, b = marchenko_pastur_edges(beta)

    def cdf(x: float) -> float:
        return integrate.quad(lambda u: marchenko_pastur_pdf(np.array([u]), beta)[0], a, x, limit=200)[0]

    return float(optimize.brentq(lambda x: cdf(x) - 0.5, a, b, xtol=1e-12))


def estimate_noise_variance(eigenvalues: np.ndarray, n_samples: int, n_features: int) -> float:
    """Noise level sigma^2 by matching the median eigenvalue to the MP median.

    ``eigenvalues`` are those of the sample covariance (all of them, or at
    least the ``min(n, p)`` largest). The median is robust to a few spikes,
    so this assumes the signal occupies a small minority of the directions
    (Gavish & Donoho 2014 use the same matching for singular values).
    For ``p > n`` the nonzero eigenvalues follow the law with ratio ``n/p``
    scaled by ``p/n``.
    """
    m = min(n_samples, n_features)
    ev = np.sort(np.asarray(eigenvalues, dtype=float))[::-1][:m]
    beta = m / max(n_samples, n_features)
    scale = 1.0 if n_features <= n_samples else n_features / n_samples
    return float(np.median(ev) / (scale * marchenko_pastur_median(beta)))


def n_components_mp(eigenvalues: np.ndarray, n_samples: int, n_features: int) -> tuple[int, float, float]:
    """Number of eigenvalues above the MP bulk edge.

    Returns ``(k, sigma2, edge)``. Assumptions: the noise is i.i.d. across
    coordinates with a common variance (standardise heterogeneous features
    first), rows are independent, and the number of spikes is small next to
    ``min(n, p)``. The finite-sample fluctuation of the largest noise
    eigenvalue (Tracy–Widom, of order ``n^{-2/3}``) is ignored, so a spike
    just at the edge may be kept or dropped.
    """
    gamma = n_features / n_samples
    sigma2 = estimate_noise_variance(eigenvalues, n_samples, n_features)
    edge = marchenko_pastur_edges(gamma, sigma2)[1]
    k = int(np.sum(np.asarray(eigenvalues) > edge))
    return k, sigma2, edge


def n_components_for_fraction(explained_variance_ratio: np.ndarray, fraction: float) -> int:
    """Smallest k whose cumulative explained-variance ratio reaches ``fraction``."""
    cumulative = np.cumsum(explained_variance_ratio)
    # The same rule as scikit-learn, so both select the same k.
    k = int(np.searchsorted(cumulative, fraction, side="right") + 1)
    return min(k, len(explained_variance_ratio))
