"""Losses: gradients against autograd, one misclassification rule, stop rules."""

import numpy as np
import pytest
import torch

from depthlab.core import metrics
from depthlab.core.losses.hinge import Hinge
from depthlab.core.losses.logistic import Logistic
from depthlab.core.losses.mse import MSE

LOSSES = [MSE(), Logistic(), Hinge()]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda loss: loss.name)
def test_gradient_matches_autograd(loss):
    g = torch.Generator().manual_seed(0)
    out = torch.randn(3, 17, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 17, generator=g, dtype=torch.float64)
    if loss.task == "classification":
        y = torch.sign(y)
    value, grad = loss.value_and_grad(out.detach(), y)
    auto = torch.autograd.grad(loss.value(out, y).sum(), out)[0]
    torch.testing.assert_close(grad, auto, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(value, loss.value(out.detach(), y))


def test_values_by_hand():
    out = torch.tensor([[0.5, -2.0, 3.0]], dtype=torch.float64)
    y = torch.tensor([[1.0, 1.0, -1.0]], dtype=torch.float64)
    assert float(MSE().value(out, y)[0]) == pytest.approx((0.25 + 9 + 16) / 3)
    assert float(Hinge().value(out, y)[0]) == pytest.approx((0.5 + 3 + 4) / 3)
    assert float(Logistic().value(out, y)[0]) == pytest.approx(np.mean(np.log1p(np.exp([-0.5, 2.0, 3.0]))))


def test_misclassification_one_tie_rule_for_numpy_and_torch():
    pred = np.array([[0.0, -0.0, 1.0, -2.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    # 0 counts as +1 (also -0.0): the first two are right, the third wrong, the fourth right
    assert metrics.misclassification(pred, y)[0] == pytest.approx(0.25)
    assert float(metrics.misclassification(torch.as_tensor(pred), torch.as_tensor(y))[0]) == pytest.approx(0.25)
    np.testing.assert_array_equal(metrics.sign_labels(np.array([0.5, -2.0, 0.0])), [1.0, -1.0, 1.0])


def test_stop_rules():
    L, acc = np.array([1e-5, 1e-3]), np.array([0.9, 1.0])
    assert MSE().converged(L, acc, 1e-4).tolist() == [True, False]
    assert Logistic().converged(L, acc, 1e-4).tolist() == [False, True]
    assert Hinge().converged(L, acc, None).tolist() == [False, False]
