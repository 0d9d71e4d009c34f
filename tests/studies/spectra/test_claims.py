"""Bietti & Bach's B2 decided against its error bar: the spread of the fitted rates carries an SE."""

import numpy as np
import pandas as pd

from depthlab.studies.spectra import krr_curves
from depthlab.studies.spectra.claims import b2

NS = np.array([10, 20, 50, 100, 200, 500, 1000, 2000, 5000])


def table(curves: dict) -> pd.DataFrame:
    """Rows (kernel, depth, trial, n, best_mse, rate) from {(kernel, depth): [trial curves over NS]}, each ``rate``
    fitted as the study stores it (``krr_curves.rate`` of the mean over trials, n >= 100)."""
    rows = []
    for (k, L), trials in curves.items():
        rate = krr_curves.rate(NS, np.mean(trials, axis=0), 100)
        for t, c in enumerate(trials):
            rows += [
                {"kernel": k, "depth": L, "trial": t, "n": int(n), "best_mse": float(m), "rate": rate}
                for n, m in zip(NS, c)
            ]
    return pd.DataFrame(rows)


def test_b2_shared_wiggles_cancel_and_a_spread_of_noisy_trials_is_inside_its_error_bars():
    wiggle = np.exp(0.15 * np.sin(np.arange(len(NS)) * 2.1))  # one data set for every kernel: the same departures
    t = table(
        {("rf", 2): [NS**-0.330 * wiggle], ("rf", 3): [NS**-0.334 * wiggle], ("rf_bias", 1): [NS**-0.336 * wiggle]}
    )
    v = b2(t, 0.1, 100)[0]
    assert v.verdict == "holds" and abs(v.effect - 0.006) < 1e-9 and v.stderr < 1e-6  # the paired fit: no residual
    assert "the slope of the difference of their log curves" in v.evidence
    # 0.09 apart against a 0.1 limit, on trials whose curves scatter by 30 % per n: the bare numbers said "holds"
    rng = np.random.default_rng(0)
    noisy = {
        ("ntk", 2): [NS**-0.33 * np.exp(rng.normal(0, 0.3, len(NS))) for _ in range(3)],
        ("ntk_bias", 1): [NS**-0.42 * np.exp(rng.normal(0, 0.3, len(NS))) for _ in range(3)],
    }
    v = b2(table(noisy), 0.1, 100)[0]
    assert v.verdict == "inconclusive" and "inside the error bars" in v.reason and v.stderr > 0.02
    # and a spread far beyond the limit fails whatever the noise
    far = {
        ("ntk", 2): [NS**-0.2 * np.exp(rng.normal(0, 0.02, len(NS))) for _ in range(3)],
        ("ntk_bias", 1): [NS**-0.6 * np.exp(rng.normal(0, 0.02, len(NS))) for _ in range(3)],
    }
    v = b2(table(far), 0.1, 100)[0]
    assert v.verdict == "does not hold" and v.z < -2


def test_b2s_rate_is_the_stored_one():
    from depthlab.studies.spectra.claims import _rate

    rng = np.random.default_rng(1)
    t = table({("laplace", 0): [NS**-0.34 * np.exp(rng.normal(0, 0.1, len(NS))) for _ in range(2)]})
    assert abs(_rate(t, 100).value - t.rate.iloc[0]) < 1e-12
