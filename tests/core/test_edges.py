"""Grid-edge detection (depthlab.core.edges): hand-made score tables whose answer is known, and the growing search on a
function whose best rate lies outside the first grid."""

import numpy as np

from depthlab.core.edges import Choice, choose, grow, search

LRS = np.array([1e-3, 1e-2, 1e-1])


def test_inside_lower_upper():
    assert choose(LRS, [3.0, 1.0, 2.0]) == Choice(1, 1e-2, "")
    assert choose(LRS, [1.0, 2.0, 3.0]).edge == "lower"
    assert choose(LRS, [3.0, 2.0, 1.0]).edge == "upper"
    # the order of the grid as given does not matter; the index refers to it
    c = choose(LRS[::-1], [1.0, 2.0, 3.0])
    assert c.edge == "upper" and c.index == 0 and c.lr == 1e-1


def test_a_larger_rate_that_failed_makes_the_largest_working_rate_no_edge():
    assert choose(LRS, [3.0, 1.0, np.nan], failed=[False, False, True]) == Choice(1, 1e-2, "")
    assert choose(LRS, [3.0, 1.0, 0.5], failed=[False, False, True]).edge == ""  # a failed rate's score does not count
    # but a smaller rate that failed does not excuse a lower edge... it is not an edge either: the rate below was tried
    assert choose(LRS, [np.inf, 1.0, 2.0], failed=[True, False, False]).edge == ""


def test_nothing_usable_and_one_rate():
    c = choose(LRS, [np.nan] * 3, failed=[True] * 3)
    assert c.index == -1 and np.isnan(c.lr) and c.edge == "lower"
    assert choose([0.1], [1.0]).edge == "upper"


def test_ties_prefer_the_inside_so_a_flat_curve_is_not_an_edge():
    flat = [0.500, 0.501, 0.5005]
    assert choose(LRS, flat, tol=0.002).edge == ""
    assert choose(LRS, flat, tol=0.0).edge == "lower"  # without the tolerance the strict best is the edge


def test_grow_one_step_beyond_the_edge_within_the_limits():
    assert grow(LRS, Choice(0, 1e-3, "lower"), 10.0, (1e-5, 1.0)).tolist() == [1e-4]
    assert np.allclose(grow(LRS, Choice(2, 1e-1, "upper"), 10.0, (1e-5, 1.0)), [1.0])
    assert grow(LRS, Choice(2, 1e-1, "upper"), 10.0, (1e-5, 0.5)).size == 0  # the limit: flagged, not grown
    assert grow(LRS, Choice(1, 1e-2, ""), 10.0, (1e-5, 1.0)).size == 0


def _valley(best_log10: float):
    """A stage whose score is a parabola in log10(lr) with its minimum at best_log10; rates above 1 diverge."""
    calls = []

    def train(rates, r):
        calls.append((r, list(rates)))
        return [{"lr": lr, "score": (np.log10(lr) - best_log10) ** 2, "diverged": lr > 1.0} for lr in rates]

    return train, calls


def test_search_grows_until_the_choice_is_inside():
    train, calls = _valley(-4.3)
    out = search(LRS, train, lambda x: (x["score"], x["diverged"]), step=10.0, limits=(1e-7, 10.0), rounds=4)
    assert out.choice == Choice(1, 1e-4, "", False)
    np.testing.assert_allclose(out.lrs, [1e-5, 1e-4, 1e-3, 1e-2, 1e-1])
    assert [r for r, _ in calls] == [0, 1, 2] and np.allclose(out.grown, [1e-4, 1e-5])
    assert [x["lr"] for x in out.results] == out.lrs.tolist()


def test_search_flags_an_edge_it_cannot_leave():
    train, _ = _valley(-6.0)
    out = search(LRS, train, lambda x: (x["score"], x["diverged"]), step=10.0, limits=(1e-4, 10.0), rounds=4)
    assert out.choice.edge == "lower" and out.choice.flagged and out.lrs.min() == 1e-4
    train, _ = _valley(-6.0)
    out = search(LRS, train, lambda x: (x["score"], x["diverged"]), step=10.0, limits=(1e-9, 10.0), rounds=1)
    assert out.choice.flagged and len(out.lrs) == 4  # one growth allowed, still at the edge


def test_search_stops_at_a_rate_that_diverges_above():
    train, _ = _valley(0.5)  # the best would be 10^0.5, but rates above 1 diverge
    out = search(LRS, train, lambda x: (x["score"], x["diverged"]), step=10.0, limits=(1e-7, 100.0), rounds=4)
    assert out.choice.lr == 1.0 and out.choice.edge == "" and not out.choice.flagged
    assert out.lrs.max() == 10.0
