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

Johnstone, I. M. (2001). On the distribution of the largest eigenvalue in
principal components analysis. Annals of Statistics 29(2), 295-327.
doi:10.1214/aos/1009210544

Ferrari, P. L. & Spohn, H. (2005). A determinantal formula for the GOE
Tracy-Widom distribution. J. Phys. A 38(33), L557-L561.

Bornemann, F. (2010). On the numerical evaluation of Fredholm determinants.
Mathematics of Computation 79(270), 871-915.

Kritchman, S. & Nadler, B. (2009). Non-parametric detection of the number
of signals: hypothesis testing and random matrix theory. IEEE Trans. Signal
Processing 57(10), 3930-3941. doi:10.1109/TSP.2009.2022897

Paul, D. (2007). Asymptotics of sample eigenstructure for a large dimensional
spiked covariance model. Statistica Sinica 17(4), 1617-1642.

Gavish, M. & Donoho, D. L. (2014). The optimal hard threshold for singular
values is 4/sqrt(3). IEEE Trans. Information Theory 60(8), 5040-5053.
doi:10.1109/TIT.2014.2323359
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from scipy import integrate, optimize, special


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


def numerical_rank(eigenvalues: np.ndarray, n_samples: int, n_features: int) -> int:
    """How many eigenvalues of a covariance stand above its rounding level, ``max(n, p) eps lambda_1``."""
    ev = np.asarray(eigenvalues, dtype=float)
    if ev.size == 0 or ev.max() <= 0:
        return 0
    return int(np.sum(ev > max(n_samples, n_features) * np.finfo(float).eps * ev.max()))


def n_components_mp(eigenvalues: np.ndarray, n_samples: int, n_features: int) -> tuple[int, float, float]:
    """Number of eigenvalues above the MP bulk edge.

    Returns ``(k, sigma2, edge)``. Assumptions: the noise is i.i.d. across
    coordinates with a common variance (standardise heterogeneous features
    first, or use :func:`n_components_whitened`), rows are independent, and
    the number of spikes is small next to ``min(n, p)``. The finite-sample
    fluctuation of the largest noise eigenvalue (Tracy–Widom, of order
    ``n^{-2/3}``) is ignored, so a spike just at the edge may be kept or
    dropped. When half or more of the ``min(n, p)`` eigenvalues are at the
    rounding level there is no noise bulk: the data are of low rank, and
    the answer is the numerical rank (``sigma2 = 0``).
    """
    m = min(n_samples, n_features)
    rank = numerical_rank(eigenvalues, n_samples, n_features)
    if rank <= m // 2:
        ev = np.sort(np.asarray(eigenvalues, dtype=float))[::-1]
        edge = float(ev[rank]) if rank < len(ev) else 0.0
        return rank, 0.0, edge
    gamma = n_features / n_samples
    sigma2 = estimate_noise_variance(eigenvalues, n_samples, n_features)
    edge = marchenko_pastur_edges(gamma, sigma2)[1]
    k = int(np.sum(np.asarray(eigenvalues) > edge))
    return k, sigma2, edge


def marchenko_pastur_cdf(x: np.ndarray, gamma: float, sigma2: float = 1.0) -> np.ndarray:
    """Distribution function of the Marchenko–Pastur law (``gamma <= 1``), by quadrature on a fine grid."""
    a, b = marchenko_pastur_edges(gamma, sigma2)
    grid = np.linspace(a, b, 20_001)
    pdf = marchenko_pastur_pdf(grid, gamma, sigma2)
    cdf = np.concatenate([[0.0], np.cumsum((pdf[1:] + pdf[:-1]) * 0.5 * np.diff(grid))])
    return np.interp(np.asarray(x, dtype=float), grid, cdf / cdf[-1])


def bulk_misfit(eigenvalues: np.ndarray, n_samples: int, n_features: int, k: int, sigma2: float) -> tuple[float, float]:
    """How far the eigenvalues below the edge are from the Marchenko–Pastur law, and the tolerance.

    Returns ``(D, tol)``: ``D`` is the Kolmogorov distance between the
    empirical distribution of the ``min(n, p) - k`` bulk eigenvalues (as a
    share of all ``min(n, p)``) and the law with ``sigma2``; ``tol = 4/m +
    0.02``. Noise of one variance in every feature gives ``D`` of about
    ``3/m`` (eigenvalues are rigid, so the distance falls as ``1/m``, not
    ``1/sqrt(m)``); noise whose standard deviation varies from 0.9 to 1.0
    across 200 features gives 0.06, from 0.5 to 1.0 gives 0.36
    (benchmarks/results/rank.md).
    """
    m = min(n_samples, n_features)
    if sigma2 <= 0 or m - k < 2:
        return 0.0, 1.0
    beta = m / max(n_samples, n_features)
    scale = 1.0 if n_features <= n_samples else n_features / n_samples
    bulk = np.sort(np.asarray(eigenvalues, dtype=float)[:m])[::-1][k:][::-1] / scale
    expected = marchenko_pastur_cdf(bulk, beta, sigma2)
    empirical = (np.arange(1, len(bulk) + 1) - 0.5) / m
    return float(np.abs(expected - empirical).max()), 4.0 / m + 0.02


def n_components_for_fraction(explained_variance_ratio: np.ndarray, fraction: float) -> int:
    """Smallest k whose cumulative explained-variance ratio reaches ``fraction``."""
    cumulative = np.cumsum(explained_variance_ratio)
    # The same rule as scikit-learn, so both select the same k.
    k = int(np.searchsorted(cumulative, fraction, side="right") + 1)
    return min(k, len(explained_variance_ratio))


#: The level of the edge the whitened rule counts against: white noise passes it one time in a thousand.
RANK_LEVEL = 0.999


@functools.lru_cache(maxsize=16)
def tracy_widom_quantile(level: float) -> float:
    """The ``level`` quantile of the Tracy-Widom law of order 1 (the largest eigenvalue of real white noise).

    ``F_1(s) = det(I - B_s)`` on ``L^2(0, inf)`` with ``B_s(x, y) = Ai(s + (x + y) / 2) / 2``
    (Ferrari & Spohn 2005), the determinant by Gauss-Legendre quadrature on
    ``[0, 16]`` (Bornemann 2010; Ai is below 1e-20 past 16), then solved
    for ``F_1(s) = level``. It reproduces Johnstone's (2001) table: 0.4501,
    0.9793 and 2.0234 at 0.90, 0.95 and 0.99; 3.2722 at 0.999.
    """
    if not 0.5 <= level < 1.0:
        raise ValueError(f"level must be in [0.5, 1); got {level}.")
    x, w = np.polynomial.legendre.leggauss(80)
    x, w = 8.0 * (x + 1.0), 8.0 * w
    root = np.sqrt(w)

    def cdf(s: float) -> float:
        B = 0.5 * special.airy(s + 0.5 * (x[:, None] + x[None, :]))[0]
        return float(np.linalg.det(np.eye(len(x)) - root[:, None] * B * root[None, :]))

    return float(optimize.brentq(lambda s: cdf(s) - level, -4.0, 10.0, xtol=1e-10))


def white_noise_edge(n_samples: int, n_features: int, level: float = RANK_LEVEL) -> float:
    """The ``level`` quantile of the largest eigenvalue of the (biased) covariance of white noise of variance 1.

    Johnstone (2001): for n rows of p independent N(0, 1) features the largest
    eigenvalue of ``X^T X`` is about ``mu + s W`` with ``W`` Tracy-Widom of
    order 1, ``mu = (sqrt(n - 1) + sqrt(p))^2`` and ``s = (sqrt(n - 1) +
    sqrt(p)) (1/sqrt(n - 1) + 1/sqrt(p))^(1/3)``. The bare edge ``(1 +
    sqrt(p/n))^2`` is about ``mu / n``, which the largest noise eigenvalue
    exceeds about one time in six; this edge, a fraction ``1 - level`` of
    the time (so a rule counting eigenvalues above it adds a spurious
    component to about one data set in a thousand at the default level).
    """
    a, b = np.sqrt(n_samples - 1.0), np.sqrt(float(n_features))
    mu = (a + b) ** 2
    scale = (a + b) * (1.0 / a + 1.0 / b) ** (1.0 / 3.0)
    return float((mu + tracy_widom_quantile(level) * scale) / n_samples)


def n_components_whitened(
    S: np.ndarray, n_samples: int, max_rounds: int = 10, level: float = RANK_LEVEL
) -> tuple[int, np.ndarray, np.ndarray, float]:
    """Number of components by the Marchenko–Pastur edge after whitening each feature's noise.

    When the noise variance differs between features, the bulk of the
    covariance spectrum is wider than one Marchenko–Pastur law, and the edge
    of :func:`n_components_mp` cuts into it (71 components kept of 5 spikes in
    200 features whose noise standard deviation runs from 0.5 to 1.0). The
    factor-analysis model ``Cov x = W^T W + Psi`` says what to do: in
    ``Psi^-1/2 S Psi^-1/2`` the noise is white with variance 1, so its
    eigenvalues above the largest a white-noise covariance reaches (the
    99.9th percentile of its Tracy-Widom law, :func:`white_noise_edge`) are
    the components. The level trades a spurious component on about one data
    set in a thousand against spikes within twice the detection threshold,
    whose sample directions are poorly estimated anyway: the squared cosine
    to the true direction is ``(1 - gamma / beta^2) / (1 + gamma / beta)``
    (Paul 2007), 0.71 at twice the threshold ``beta = sqrt(gamma)``. ``Psi`` is
    not known and depends on ``k``: starting from the column variances, the
    count and a maximum-likelihood fit of ``Psi`` with that many factors
    (:func:`bigdr.core.factor.fit_factors`) alternate until the count
    repeats (at most ``max_rounds``). Each fit is scaled by ``n / (n - 1 -
    k)``, as a residual variance is for the mean and ``k`` fitted factors:
    without it the whitened noise exceeds 1 by about ``(k + 1) / n``, which
    moves the whitened eigenvalues as much as the edge's level does when n
    is small (n = 500: 1%, against 0.96% between the 99th and 99.9th
    percentiles).
    Then, as in a sequential test (Kritchman & Nadler 2009), the k-th
    component is kept only if it stands above the edge when ``Psi`` is
    fitted with ``k - 1`` factors, the null hypothesis that it is noise
    (fitted with ``k``, the noise variances shrink and the k-th whitened
    eigenvalue grows with them).

    ``S``: the biased sample covariance (p x p) of ``n_samples`` rows;
    ``level``: that of the edge (:data:`RANK_LEVEL`). Returns ``(k, psi,
    whitened_eigenvalues, edge)``. Data of low numerical rank (no noise
    bulk) give their numerical rank, as :func:`n_components_mp`.
    """
    from .factor import fit_factors

    p = S.shape[0]
    variance = np.diag(S).astype(np.float64)
    floor = max(float(variance.max()), np.finfo(float).tiny) * 1e-12  # constant features: no division by 0
    values = np.linalg.eigvalsh(S)[::-1]
    rank = numerical_rank(values, n_samples, p)
    edge = white_noise_edge(n_samples, p, level)
    if rank <= min(n_samples, p) // 2:
        return rank, np.maximum(variance, floor), values, edge

    def noise(k: int) -> np.ndarray:
        # Maximum likelihood shrinks each noise variance by about (n - 1 - k) / n (the mean and k
        # factors are fitted); unbiased, white noise has variance 1 after whitening, as the edge assumes.
        fitted = variance if k == 0 else fit_factors(S, n_samples, min(k, p - 1), 1e-6).noise_variance
        return np.maximum(fitted * n_samples / max(n_samples - 1 - k, 1), floor)

    def spectrum(psi: np.ndarray) -> np.ndarray:
        d = 1.0 / np.sqrt(psi)
        return np.linalg.eigvalsh(S * np.outer(d, d))[::-1]

    k, psi = -1, noise(0)
    whitened = spectrum(psi)
    for _ in range(max_rounds):
        count = int(np.sum(whitened > edge))
        if count == k:
            break
        k = count
        psi = noise(k)
        whitened = spectrum(psi)
    # The k-th component must stand above the edge when the noise is fitted with k - 1 factors (the null
    # hypothesis that it is noise): fitted with k, the noise shrinks and the whitened k-th grows.
    while k > 0:
        psi_null = noise(k - 1)
        null = spectrum(psi_null)
        if null[k - 1] > edge:
            break
        k, psi, whitened = k - 1, psi_null, null
    return k, psi, whitened, edge


def minka_log_evidence(variances: np.ndarray, n_samples: int) -> np.ndarray:
    r"""Laplace approximation of ``log p(X | k)`` for probabilistic PCA of rank ``k`` (Minka 2000).

    ``variances``: all ``p`` eigenvalues of the covariance, descending. With
    ``v = sum_{j>k} l_j / (p - k)`` and ``m = pk - k(k+1)/2``,

    .. math:: \log p(X|k) \approx \log p(U) - \tfrac{n}{2}\sum_{j\le k}\log l_j
              - \tfrac{n(p-k)}{2}\log v + \tfrac{m+k}{2}\log 2\pi
              - \tfrac12 \log|A_Z| - \tfrac{k}{2}\log n,

    ``log p(U)`` the log of the uniform density on the Stiefel manifold's
    orientations and ``|A_Z| = prod_{i<=k, j>i} n (1/l~_j - 1/l~_i)(l_i - l_j)``
    (``l~_j = v`` for ``j > k``). All ranks ``k = 1 ... p - 1`` at once, in
    ``O(p^2)`` with prefix sums (entry ``k - 1`` of the result; ``-inf``
    where ``l_k`` is not positive).

    References
    ----------
    Minka, T. P. (2000). Automatic choice of dimensionality for PCA. Advances
    in Neural Information Processing Systems 13, 598-604.
    """
    lam = np.asarray(variances, dtype=np.float64)
    p, n = lam.shape[0], float(n_samples)
    tiny = np.finfo(np.float64).tiny
    ks = np.arange(1, p)
    log_lam = np.log(np.maximum(lam, tiny))
    i = np.arange(1, p)
    log_u = np.cumsum(special.gammaln((p - i + 1) / 2.0) - (p - i + 1) / 2.0 * np.log(np.pi)) - ks * np.log(2.0)
    log_l = -n / 2.0 * np.cumsum(log_lam)[:-1]
    tail = np.cumsum(lam[::-1])[::-1]  # tail[k] = sum_{j>=k} lam_j (0-based)
    v = np.maximum(tail[1:] / (p - ks), tiny)
    log_v = -n * (p - ks) / 2.0 * np.log(v)
    m = p * ks - ks * (ks + 1) / 2.0
    log_p = np.log(2.0 * np.pi) * (m + ks) / 2.0
    # log|A_Z|: pairs i < j < k use l_j, and log((1/l_j - 1/l_i)(l_i - l_j)) = 2 log(l_i - l_j) - log l_i
    # - log l_j; pairs i < k <= j use v. Column sums of the upper triangles give every k's sums at once.
    diff = np.triu(np.log(np.maximum(lam[:, None] - lam[None, :], tiny)), 1)
    pair_terms = np.triu(2.0 * diff - log_lam[:, None] - log_lam[None, :], 1)
    within = np.cumsum(pair_terms.sum(axis=0))[ks - 1]  # sum over i < j < k (0-based j <= k - 1)
    across_diff = np.cumsum(diff.sum(axis=1))[ks - 1] - np.cumsum(diff.sum(axis=0))[ks - 1]
    del diff, pair_terms
    inv_lam = 1.0 / np.maximum(lam, tiny)
    across_gap = np.array([np.log(np.maximum(1.0 / v[c] - inv_lam[: c + 1], tiny)).sum() for c in range(p - 1)])
    across_gap *= p - ks
    pairs = ks * p - ks * (ks + 1) / 2.0  # sum_{i<k} (p - 1 - i)
    log_a = within + across_diff + across_gap + pairs * np.log(n)
    out = log_u + log_l + log_v + log_p - log_a / 2.0 - ks * np.log(n) / 2.0
    return np.where(lam[:-1] > np.finfo(np.float64).eps * max(lam[0], 0.0), out, -np.inf)


def n_components_mle(variances: np.ndarray, n_samples: int) -> int:
    """The rank of largest Minka evidence (:func:`minka_log_evidence`), scikit-learn's ``n_components="mle"``."""
    if np.asarray(variances).shape[0] < 2:
        return int(np.asarray(variances).shape[0])
    return int(np.argmax(minka_log_evidence(variances, n_samples))) + 1


def select_rank(
    n_components: Any, variances: np.ndarray, total: float, n: int, p: int, scatter: np.ndarray | None = None
) -> tuple[int, dict[str, Any]]:
    """How many components a PCA keeps, by the rule ``n_components`` names, and what the rule found.

    ``None``: all ``min(n, p)``; an int: that many; a float in (0, 1): the
    fewest whose explained-variance ratio exceeds it; ``"mp"``: above the
    Marchenko-Pastur edge (:func:`n_components_mp`, with a
    ``RankSelectionWarning`` when the bulk does not follow the law);
    ``"mp-whitened"``: the same after whitening each feature's noise
    (:func:`n_components_whitened`, which needs the ``scatter``); ``"mle"``:
    Minka's evidence (:func:`n_components_mle`). Returns the
    count and the fitted attributes of the rule (``mp_noise_variance_``, ...).
    """
    import numbers
    import warnings

    from ..exceptions import RankSelectionWarning

    k, m = n_components, min(n, p)
    if k is None:
        return m, {}
    if k == "mle":
        if n < p:
            raise ValueError(f"n_components='mle' is only supported if n_samples >= n_features; got {n} < {p}.")
        return n_components_mle(variances, n), {}
    if k == "mp":
        biased = variances * (n - 1) / n
        k_mp, sigma2, edge = n_components_mp(biased, n, p)
        misfit, tol = bulk_misfit(biased, n, p, k_mp, sigma2)
        if misfit > tol:
            warnings.warn(
                f"n_components='mp' kept {k_mp} components, but the eigenvalues below the Marchenko-Pastur "
                f"edge do not follow its law (Kolmogorov distance {misfit:.3f} > {tol:.3f}): the noise "
                f"variance probably differs between features, which makes 'mp' keep too many. Use "
                f"n_components='mp-whitened', or standardise the features.",
                RankSelectionWarning,
                stacklevel=5,
            )
        return k_mp, {"mp_noise_variance_": sigma2 * n / (n - 1), "mp_edge_": edge * n / (n - 1)}
    if k == "mp-whitened":
        if scatter is None:
            raise ValueError("n_components='mp-whitened' needs svd_solver='covariance' or 'tsqr'.")
        k_w, psi, whitened, edge = n_components_whitened(scatter / n, n)
        found = {
            "feature_noise_variance_": psi * n / (n - 1),
            "whitened_edge_": edge,
            "whitened_spectrum_": whitened[:m],
        }
        return k_w, found
    if isinstance(k, numbers.Integral):
        if int(k) > m:
            raise ValueError(f"n_components={k} must be at most min(n_samples, n_features) = {m}.")
        return int(k), {}
    ratio = variances / total if total > 0 else np.zeros_like(variances)
    return n_components_for_fraction(ratio, float(k)), {}
