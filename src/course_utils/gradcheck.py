"""Finite-difference gradient checks, used by every chapter that derives a gradient by hand.

Central differences, ``(f(x + ε) - f(x - ε)) / 2ε``, have an error of order
ε², so in float64 with ε = 1e-6 a correct analytic gradient agrees to about
1e-8 relative error; the course's tolerance is 1e-6.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["numerical_gradient", "relative_error"]


def numerical_gradient(loss: Callable[[], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """∂loss/∂x by central differences. ``loss`` reads ``x``, nudged in place and restored."""
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        kind = getattr(x, "dtype", type(x).__name__)
        raise TypeError(f"x must be a float64 NumPy array (float32 is too coarse), got {kind}")
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + eps
        plus = loss()
        x[index] = saved - eps
        minus = loss()
        x[index] = saved
        grad[index] = (plus - minus) / (2 * eps)
    return grad


def relative_error(analytic: np.ndarray, numeric: np.ndarray) -> float:
    """Largest elementwise ``|a - n| / max(1e-8, |a| + |n|)``."""
    a, n = np.asarray(analytic, dtype=np.float64), np.asarray(numeric, dtype=np.float64)
    if a.shape != n.shape:
        raise ValueError(f"shapes differ: {a.shape} and {n.shape}")
    return float(np.max(np.abs(a - n) / np.maximum(1e-8, np.abs(a) + np.abs(n))))
