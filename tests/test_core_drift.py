import numpy as np
import pytest

from bigdr.core.drift import (
    DRIFT_LIMIT,
    HISTORY_MAX,
    chi2_threshold,
    describe_drift,
    drift_report,
    empirical_threshold,
    residual_threshold,
    with_history,
)


@pytest.mark.parametrize("weights", [[1.0] * 10, [5.0, 1.0, 0.5, 0.1, 0.1], np.linspace(0.1, 2, 50)])
def test_box_threshold_matches_the_weighted_chi_square_quantile(weights):
    rng = np.random.default_rng(0)
    w = np.asarray(weights)
    q = (rng.standard_normal((400_000, len(w))) ** 2 * w).sum(axis=1)
    # Box's two-moment fit is within a few per cent of the quantile; what matters is the rate of
    # in-distribution rows beyond it, about 1% (far below the 5% that flags a batch).
    assert residual_threshold(w) == pytest.approx(np.quantile(q, 0.99), rel=0.06)
    assert 0.007 < (q > residual_threshold(w)).mean() < 0.015


def test_equal_weights_are_exactly_chi_square():
    assert residual_threshold(np.full(7, 2.0)) == pytest.approx(2 * chi2_threshold(7), rel=1e-12)
    assert residual_threshold(np.zeros(3)) == 0.0


def test_report_needs_many_rows_beyond_and_an_improbable_count():
    assert not drift_report(20000, 210, 1.0, "s")["refit_advised"]  # 1.05%: chance
    assert drift_report(20000, 2000, 1.0, "s")["refit_advised"]  # 10%
    assert not drift_report(20, 2, 1.0, "s")["refit_advised"]  # 10% of 20 rows: not improbable
    edge = drift_report(100_000, int(DRIFT_LIMIT * 100_000), 1.0, "s")
    assert not edge["refit_advised"]  # the limit itself is not beyond it
    assert "refit advised" in describe_drift(drift_report(1000, 500, 2.5, "distance"))
    assert drift_report(0, 0, 1.0, "s")["fraction"] == 0.0


def test_empirical_threshold_and_history_cap():
    assert empirical_threshold(np.r_[np.arange(100.0), np.inf]) == pytest.approx(98.01)
    h = None
    for i in range(HISTORY_MAX + 5):
        h = with_history(h, {"i": i})
    assert len(h) == HISTORY_MAX and h[0]["i"] == 5
