import numpy as np
import pytest

from depthlab.core.metrics import sign_labels
from depthlab.studies.mori_ueda import targets as dl


def test_k_local_hand_values():
    x = np.array([[1.0, 2.0, 3.0, 4.0], [-1.0, 5.0, 2.0, 0.5]])
    np.testing.assert_allclose(dl.k_local(x, 1), [1.0, -1.0])
    np.testing.assert_allclose(dl.k_local(x, 2), [2.0, -5.0])
    np.testing.assert_allclose(dl.k_local(x, 3), [6.0, -10.0])


def test_k_global_periodic_wrap_hand_values():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    # j = 1..4 windows (x_{j+1}, x_{j+2}) with x_5 = x_1, x_6 = x_2:
    # (2,3) (3,4) (4,1) (1,2) -> 6 + 12 + 4 + 2 = 24, divided by sqrt(4)
    np.testing.assert_allclose(dl.k_global(x, 2), [24.0 / 2.0])
    # k = 3: (2,3,4) (3,4,1) (4,1,2) (1,2,3) -> 24 + 12 + 8 + 6 = 50
    np.testing.assert_allclose(dl.k_global(x, 3), [50.0 / 2.0])
    # k = 1: sum of all entries / sqrt(d)
    np.testing.assert_allclose(dl.k_global(x, 1), [10.0 / 2.0])


def test_generalized_g_hand_values():
    x = np.array([[0.5, -1.0, 2.0]])
    np.testing.assert_allclose(dl.target(x, 2, "local", "sin"), [np.sin(2 * 0.5 - 1.0)])
    np.testing.assert_allclose(dl.target(x, 2, "local", "tanh_sin"), [np.tanh(0.5) * np.sin(-1.0)])
    # global: windows (x2,x3) (x3,x1) (x1,x2)
    g = np.sin(2 * -1.0 + 2.0) + np.sin(2 * 2.0 + 0.5) + np.sin(2 * 0.5 - 1.0)
    np.testing.assert_allclose(dl.target(x, 2, "global", "sin"), [g / np.sqrt(3)])


def test_global_scaling_keeps_variance_order_one():
    x = dl.sample_inputs(20000, 50, seed=3)
    for k in (1, 2, 3):
        # E[f^2] = 1 exactly for products of distinct standard normals (windows are distinct for k < d)
        assert abs(np.mean(dl.k_global(x, k) ** 2) - 1.0) < 0.1


def test_inputs_are_a_function_of_the_seed():
    np.testing.assert_array_equal(dl.sample_inputs(5, 3, 11), dl.sample_inputs(5, 3, 11))
    assert not np.array_equal(dl.sample_inputs(5, 3, 11), dl.sample_inputs(5, 3, 12))


def test_noise_and_signs():
    y = np.array([0.5, -2.0, 0.0])
    np.testing.assert_array_equal(dl.add_label_noise(y, 0.0, 1), y)
    noisy = dl.add_label_noise(np.zeros(100000), 0.3, 1)
    assert abs(noisy.std() - 0.3) < 0.01
    np.testing.assert_array_equal(sign_labels(y), [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="epsilon"):
        dl.add_label_noise(y, -0.1, 1)


@pytest.mark.parametrize(
    "k,d,loc,g,msg",
    [
        (3, 2, "local", "product", "exceeds"),
        (3, 5, "local", "sin", "exactly k = 2"),
        (1, 5, "middle", "product", "locality"),
        (1, 5, "local", "cos", "g must"),
    ],
)
def test_bad_targets(k, d, loc, g, msg):
    with pytest.raises(ValueError, match=msg):
        dl.target(np.zeros((1, d)), k, loc, g)
