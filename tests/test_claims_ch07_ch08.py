"""The measured outcomes that chapters 7 and 8 state in words, re-measured.

Each test runs the chapter's own configuration so that a sentence such as
"gated cells solve T = 100 where the RNN does not" fails loudly if it stops
being true.
"""

import numpy as np
import pytest

from course_utils.bptt import init_params, rnn_backward, rnn_forward
from course_utils.lstm import run_adding_problem

pytestmark = pytest.mark.slow


def test_gradient_norms_vanish_below_and_explode_above_spectral_radius_one():
    """7장's measurement: W_hh = ρQ, loss at the last of 60 steps."""
    rng = np.random.default_rng(0)
    orthogonal, _ = np.linalg.qr(rng.normal(size=(64, 64)))
    xs = rng.normal(size=(60, 8, 4))
    ratio = {}
    for activation in ["tanh", "relu"]:
        for rho in [0.8, 1.0, 1.5, 2.0]:
            params = init_params(4, 64, 3, seed=0, scale=0.3)
            params["W_hh"] = rho * orthogonal
            logits, cache = rnn_forward(params, xs, np.zeros((8, 64)), activation)
            dlogits = np.zeros_like(logits)
            dlogits[-1] = rng.normal(size=logits.shape[1:])
            _, norms = rnn_backward(params, cache, dlogits)
            ratio[(activation, rho)] = norms[0] / norms[-1]
    assert ratio[("tanh", 0.8)] < 1e-6 and ratio[("relu", 0.8)] < 1e-6
    assert ratio[("tanh", 1.0)] < 1e-3 and ratio[("relu", 1.0)] < 1e-3
    assert ratio[("relu", 2.0)] > 1e6
    assert ratio[("tanh", 2.0)] < ratio[("relu", 2.0)] / 1e3


def test_gated_cells_solve_the_long_adding_problem_where_the_rnn_does_not():
    """8장: at T = 100 the RNN stays near the 1/6 of always answering 1; LSTM and GRU go below 0.05."""
    results = {cell: run_adding_problem(cell, 100) for cell in ["rnn", "lstm", "gru"]}
    assert results["rnn"].test_mse > 0.1
    assert results["lstm"].test_mse < 0.05
    assert results["gru"].test_mse < 0.05
    assert (
        run_adding_problem("rnn", 10).test_mse < 0.05
    )  # short dependencies are within the RNN's reach
