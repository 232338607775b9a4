import numpy as np
import pytest

from course_utils.autoregressive import ar_features, fit_ar, forecast_ar


def _ar2_process(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    x = np.zeros(n)
    for t in range(2, n):
        x[t] = 0.6 * x[t - 1] - 0.3 * x[t - 2] + 0.5 + rng.normal(0, 0.1)
    return x


def test_fit_recovers_the_coefficients_of_a_known_ar2_process():
    weights, bias = fit_ar(_ar2_process(), 2)
    np.testing.assert_allclose(weights, [0.6, -0.3], atol=0.03)
    assert bias == pytest.approx(0.5, abs=0.03)


def test_features_line_up_with_their_targets():
    features, targets = ar_features(np.arange(6.0), 2)
    np.testing.assert_array_equal(features, [[1, 0], [2, 1], [3, 2], [4, 3]])
    np.testing.assert_array_equal(targets, [2, 3, 4, 5])


def test_forecast_feeds_predictions_back():
    # x_t = x_{t-1} + 1 continues an arithmetic sequence exactly.
    np.testing.assert_allclose(
        forecast_ar(np.array([1.0, 2.0, 3.0]), np.array([1.0]), 1.0, 3), [4, 5, 6]
    )
    # x_t = 2 x_{t-1} - x_{t-2} (constant step), τ = 2.
    np.testing.assert_allclose(
        forecast_ar(np.array([1.0, 3.0]), np.array([2.0, -1.0]), 0.0, 2), [5, 7]
    )


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="tau must be"):
        fit_ar(np.arange(5.0), 0)
    with pytest.raises(ValueError, match="1-D"):
        fit_ar(np.zeros((3, 3)), 1)
    with pytest.raises(ValueError, match="more than tau=4"):
        fit_ar(np.arange(4.0), 4)
    with pytest.raises(ValueError, match="steps must be"):
        forecast_ar(np.arange(4.0), np.array([1.0]), 0.0, -1)
    with pytest.raises(ValueError, match="at least tau=2"):
        forecast_ar(np.array([1.0]), np.array([1.0, 0.5]), 0.0, 2)
