"""Drift: how well new rows fit what a model was fitted on.

Every method reduces a row to one *score* whose distribution on the training
data is known, with a threshold at its 99th percentile; a batch's drift is
the fraction of its rows beyond the threshold. On data from the training
distribution that fraction is about 1%. A batch is flagged ("refit
advised") when the fraction exceeds :data:`DRIFT_LIMIT` (5%) *and* so many
rows beyond the threshold would be improbable by chance (a one-sided
binomial test at level :data:`DRIFT_P_VALUE`, so that a batch of twenty rows
with one far row is not flagged).

Scores:

PCA, the squared reconstruction error (the Q statistic)
    ``Q(x) = |x - mean - (x - mean) V^T V|^2``. For Gaussian data it is a
    weighted sum of chi-square variables with the discarded eigenvalues as
    weights; its 99th percentile is taken from Box's (1954) two-moment
    approximation ``Q ~ g chi2(h)``, ``g = sum lambda^2 / sum lambda``,
    ``h = (sum lambda)^2 / sum lambda^2``, as in process monitoring (Jackson
    & Mudholkar 1979; Nomikos & MacGregor 1995). When no variance is
    discarded, Hotelling's ``T^2 = sum y_j^2 / lambda_j`` with a chi2(k)
    threshold takes its place. Box's fit is within about 5% of the exact
    quantile (tests/test_core_drift.py): between 0.7% and 1.5% of
    in-distribution rows lie beyond it.
The graph methods, the distance to the nearest reference row
    Its training distribution is each reference row's distance to its
    nearest other reference row (the first column of the neighbour graph):
    a new row from the same distribution sees the reference set as a
    reference row sees the others.

References
----------
Box, G. E. P. (1954). Some theorems on quadratic forms applied in the study
of analysis of variance problems, I. Annals of Mathematical Statistics
25(2), 290-302. doi:10.1214/aoms/1177728786

Jackson, J. E. & Mudholkar, G. S. (1979). Control procedures for residuals
associated with principal component analysis. Technometrics 21(3), 341-349.
doi:10.1080/00401706.1979.10489779

Nomikos, P. & MacGregor, J. F. (1995). Multivariate SPC charts for monitoring
batch processes. Technometrics 37(1), 41-59. doi:10.1080/00401706.1995.10485888
"""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
from scipy import stats

#: The training quantile a row is compared with.
DRIFT_QUANTILE = 0.99
#: A batch with more than this fraction of rows beyond the quantile is flagged.
DRIFT_LIMIT = 0.05
#: ... when so many rows beyond it are also improbable under the training
#: distribution (one-sided binomial test).
DRIFT_P_VALUE = 1e-3
#: Updates kept in a model's drift history (the oldest are dropped).
HISTORY_MAX = 1000


def residual_threshold(discarded: np.ndarray, quantile: float = DRIFT_QUANTILE) -> float:
    """The ``quantile`` of ``sum_j lambda_j z_j^2`` (z standard normal) by Box's approximation."""
    lam = np.asarray(discarded, dtype=np.float64)
    lam = lam[lam > 0]
    if lam.size == 0:
        return 0.0
    s1, s2 = lam.sum(), (lam**2).sum()
    g, h = s2 / s1, s1 * s1 / s2
    return float(g * stats.chi2.ppf(quantile, h))


def chi2_threshold(dof: int, quantile: float = DRIFT_QUANTILE) -> float:
    """The ``quantile`` of a chi-square variable with ``dof`` degrees of freedom."""
    return float(stats.chi2.ppf(quantile, dof))


def empirical_threshold(training_scores: np.ndarray, quantile: float = DRIFT_QUANTILE) -> float:
    """The ``quantile`` of the training scores (finite ones)."""
    s = np.asarray(training_scores, dtype=np.float64)
    s = s[np.isfinite(s)]
    return float(np.quantile(s, quantile)) if s.size else float("inf")


def drift_report(
    n_rows: int, n_beyond: int, threshold: float, score: str, quantile: float = DRIFT_QUANTILE
) -> dict[str, Any]:
    """The drift of a batch from its counts: a JSON-safe dict kept on the model and printed by the CLI.

    Keys: ``rows``, ``beyond`` (rows whose score exceeds ``threshold``),
    ``fraction``, ``expected`` (``1 - quantile``), ``p_value`` (of so many
    rows beyond by chance), ``refit_advised``, ``threshold``, ``score`` and
    ``time``.
    """
    expected = round(1.0 - quantile, 12)
    fraction = n_beyond / n_rows if n_rows else 0.0
    p_value = float(stats.binom.sf(n_beyond - 1, n_rows, expected)) if n_rows else 1.0
    return {
        "rows": int(n_rows),
        "beyond": int(n_beyond),
        "fraction": float(fraction),
        "expected": expected,
        "p_value": p_value,
        "refit_advised": bool(fraction > DRIFT_LIMIT and p_value < DRIFT_P_VALUE),
        "threshold": float(threshold),
        "score": score,
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def describe_drift(report: dict[str, Any]) -> str:
    """One line for the command line."""
    verdict = "refit advised" if report["refit_advised"] else "in distribution"
    return (
        f"drift: {report['beyond']} of {report['rows']} rows ({100 * report['fraction']:.1f}%, "
        f"{100 * report['expected']:.0f}% expected) beyond the training {report['score']} "
        f"threshold {report['threshold']:.4g}: {verdict}"
    )


def with_history(history: list[dict[str, Any]] | None, report: dict[str, Any]) -> list[dict[str, Any]]:
    """``history`` with ``report`` appended (at most :data:`HISTORY_MAX` entries)."""
    out = [*(history or []), report]
    return out[-HISTORY_MAX:]
