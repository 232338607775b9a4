import numpy as np
import pytest
import torch

from course_utils.gradcheck import numerical_gradient, relative_error


def test_numerical_gradient_matches_autograd_on_a_nonlinear_function():
    x = np.random.default_rng(0).normal(size=(3, 4))
    loss = lambda: float(np.sum(np.tanh(x) ** 2 * np.exp(x / 3)))  # noqa: E731
    xt = torch.tensor(x, requires_grad=True)
    (torch.tanh(xt) ** 2 * torch.exp(xt / 3)).sum().backward()
    numeric = numerical_gradient(loss, x)
    assert relative_error(xt.grad.numpy(), numeric) <= 1e-6


def test_numerical_gradient_restores_the_input():
    x = np.arange(4.0)
    before = x.copy()
    numerical_gradient(lambda: float(x @ x), x)
    np.testing.assert_array_equal(x, before)


def test_relative_error_catches_a_wrong_gradient():
    x = np.random.default_rng(1).normal(size=5)
    numeric = numerical_gradient(lambda: float(np.sum(x**3)), x)
    assert relative_error(3 * x**2, numeric) <= 1e-6
    assert relative_error(2 * x**2, numeric) > 0.1


def test_bad_input_gets_clear_errors():
    with pytest.raises(TypeError, match="float64"):
        numerical_gradient(lambda: 0.0, np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="shapes differ"):
        relative_error(np.zeros(2), np.zeros(3))
