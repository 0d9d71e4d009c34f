"""Layer sizes, exact parameter counts, and the two width-for-budget functions against brute force."""

import itertools

import pytest

from depthlab.core.shapes import n_params, width_for_hidden_weights, width_for_params


@pytest.mark.parametrize("d,P,L", list(itertools.product([1, 40, 100, 500, 1000], [1e2, 1e4, 1e6, 1e8], range(1, 11))))
def test_width_meets_eq3_to_nearest_integer(d, P, L):
    try:
        h = width_for_hidden_weights(d=d, depth=L, budget=P)
    except ValueError:
        # only allowed when h = 0 meets Eq. 3 more closely than h = 1 does
        assert abs(d + (L - 1) - P) > P
        return
    f = lambda w: d * w + (L - 1) * w * w  # noqa: E731
    # brute force over a window of integers: no other width meets Eq. 3 more closely
    best = min(range(max(1, h - 50), h + 51), key=lambda w: abs(f(w) - P))
    assert abs(f(h) - P) <= abs(f(best) - P)


def test_paper_fig2_width_example():
    # d = 500, P = 1e6, L = 1 -> h = 2000 exactly
    assert width_for_hidden_weights(d=500, depth=1, budget=1e6) == 2000


def test_count_matches_torch_module():
    torch = pytest.importorskip("torch")
    d, h, L = 7, 5, 3
    layers = []
    sizes = [d] + [h] * L + [1]
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers.append(torch.nn.Linear(a, b))
    assert n_params(d, h, L) == sum(p.numel() for m in layers for p in m.parameters())


def test_no_positive_width_names_d_p_l():
    with pytest.raises(ValueError, match=r"P = 10 at d = 100, L = 3"):
        width_for_hidden_weights(d=100, depth=3, budget=10)


@pytest.mark.parametrize("d,depth,budget", [(2, 1, 200), (64, 2, 2000), (16, 3, 8000), (8, 1, 12), (1, 1, 31)])
def test_width_for_params_is_the_closest_exact_count(d, depth, budget):
    h = width_for_params(d=d, depth=depth, budget=budget)
    best = min(range(1, 5000), key=lambda w: (abs(n_params(d, w, depth) - budget), w))
    assert h == best
    with pytest.raises(ValueError, match="below the smallest net"):
        width_for_params(d=64, depth=3, budget=10)


def test_widths_take_keywords_only():
    with pytest.raises(TypeError):
        width_for_params(8, 1, 100)  # the argument order is not part of the interface
    with pytest.raises(TypeError):
        width_for_hidden_weights(8, 100.0, 1)
