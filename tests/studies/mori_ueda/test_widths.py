import itertools

import pytest

from depthlab.core.mlp import n_params
from depthlab.studies.mori_ueda.widths import width_for_budget


@pytest.mark.parametrize("d,P,L", list(itertools.product([1, 40, 100, 500, 1000], [1e2, 1e4, 1e6, 1e8], range(1, 11))))
def test_width_meets_eq3_to_nearest_integer(d, P, L):
    try:
        h, count = width_for_budget(d, P, L)
    except ValueError:
        # only allowed when h = 0 meets Eq. 3 more closely than h = 1 does
        assert abs(d + (L - 1) - P) > P
        return
    f = lambda w: d * w + (L - 1) * w * w  # noqa: E731
    # brute force over a window of integers: no other width meets Eq. 3 more closely
    best = min(range(max(1, h - 50), h + 51), key=lambda w: abs(f(w) - P))
    assert abs(f(h) - P) <= abs(f(best) - P)
    assert count == d * h + h + (L - 1) * (h * h + h) + h + 1


def test_paper_fig2_width_example():
    # d = 500, P = 1e6, L = 1 -> h = 2000 exactly
    assert width_for_budget(500, 1e6, 1)[0] == 2000


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
        width_for_budget(100, 10, 3)
