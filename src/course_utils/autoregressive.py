"""5장 시퀀스 모델: the autoregressive model AR(τ), fitted by least squares.

``x_t ≈ w_1 x_{t-1} + … + w_τ x_{t-τ} + b``: predict the next value from the last
τ values. One step ahead it uses observed values; k steps ahead it must feed
its own predictions back in, and the errors compound.
"""

from __future__ import annotations

import numpy as np

from course_utils.checks import check_int

__all__ = ["ar_features", "fit_ar", "forecast_ar"]


def _check_series(series: np.ndarray, tau: int) -> np.ndarray:
    check_int(tau, "tau")
    values = np.asarray(series, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"series must be 1-D (one value per time step), got shape {values.shape}")
    if values.size <= tau:
        raise ValueError(f"series needs more than tau={tau} values, got {values.size}")
    return values


def ar_features(series: np.ndarray, tau: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``[x_{t-1}, …, x_{t-τ}]`` (N, τ) and targets ``x_t`` (N,), for t = τ … T-1."""
    values = _check_series(series, tau)
    features = np.stack([values[tau - j : values.size - j] for j in range(1, tau + 1)], axis=1)
    return features, values[tau:]


def fit_ar(series: np.ndarray, tau: int) -> tuple[np.ndarray, float]:
    """Least-squares weights ``w`` (τ,) (``w[0]`` multiplies ``x_{t-1}``) and bias ``b``."""
    features, targets = ar_features(series, tau)
    design = np.hstack([features, np.ones((features.shape[0], 1))])  # (N, τ + 1)
    solution, *_ = np.linalg.lstsq(design, targets, rcond=None)
    return solution[:-1], float(solution[-1])


def forecast_ar(history: np.ndarray, weights: np.ndarray, bias: float, steps: int) -> np.ndarray:
    """Predict ``steps`` values after ``history``, feeding each prediction back in."""
    weights = np.asarray(weights, dtype=np.float64)
    tau = weights.size
    values = np.asarray(history, dtype=np.float64)
    if values.ndim != 1 or values.size < tau:
        raise ValueError(f"history must be 1-D with at least tau={tau} values, got {values.shape}")
    check_int(steps, "steps", 0)
    window = list(values[-tau:])  # window[-1] is the latest value, x_{t-1}
    out = []
    for _ in range(steps):
        prediction = float(np.dot(weights, window[::-1]) + bias)
        out.append(prediction)
        window = [*window[1:], prediction]
    return np.array(out)
