"""Hand-written BPTT (7장) against finite differences and torch.autograd, and truncation."""

import numpy as np
import pytest
import torch

from course_utils.bptt import (
    init_params,
    rnn_backward,
    rnn_forward,
    rnn_loss_and_grads,
    softmax_cross_entropy,
    truncated_bptt_epoch,
)
from course_utils.gradcheck import numerical_gradient, relative_error
from course_utils.rnn import RNN, RNNLanguageModel
from course_utils.sequences import echo_task
from course_utils.train import NonFiniteLossError


def _problem(activation, seed=0):
    rng = np.random.default_rng(seed)
    params = init_params(3, 5, 4, seed=seed, scale=0.5)
    xs = rng.normal(size=(6, 2, 3))
    targets = rng.integers(0, 4, size=(6, 2))
    h0 = rng.normal(size=(2, 5))
    return params, xs, targets, h0


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_bptt_matches_finite_differences_for_every_parameter(activation):
    params, xs, targets, h0 = _problem(activation)
    _, grads = rnn_loss_and_grads(params, xs, targets, h0, activation)
    for name, value in params.items():
        numeric = numerical_gradient(lambda: rnn_loss_and_grads(params, xs, targets, h0, activation)[0], value)  # fmt: skip
        assert relative_error(grads[name], numeric) <= 1e-6, name


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_bptt_matches_torch_autograd(activation):
    params, xs, targets, h0 = _problem(activation, seed=1)
    loss, grads = rnn_loss_and_grads(params, xs, targets, h0, activation)
    tensors = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    h = torch.tensor(h0)
    phi = torch.tanh if activation == "tanh" else torch.relu
    logits = []
    for x in torch.tensor(xs):
        h = phi(x @ tensors["W_xh"] + h @ tensors["W_hh"] + tensors["b_h"])
        logits.append(h @ tensors["W_hq"] + tensors["b_q"])
    reference = torch.nn.functional.cross_entropy(torch.stack(logits).reshape(-1, 4), torch.tensor(targets).reshape(-1))  # fmt: skip
    reference.backward()
    assert loss == pytest.approx(float(reference.detach()), rel=1e-12)
    for name, tensor in tensors.items():
        assert relative_error(grads[name], tensor.grad.numpy()) <= 1e-10, name


def test_hidden_gradient_norms_shrink_with_a_contracting_recurrence():
    params = init_params(2, 8, 3, seed=0)
    params["W_hh"] = 0.5 * np.linalg.qr(np.random.default_rng(0).normal(size=(8, 8)))[0]
    xs = np.random.default_rng(1).normal(size=(30, 4, 2))
    logits, cache = rnn_forward(params, xs, np.zeros((4, 8)))
    dlogits = np.zeros_like(logits)
    dlogits[-1] = 1.0  # a loss at the last step only
    _, norms = rnn_backward(params, cache, dlogits)
    assert norms[0] < 1e-6 * norms[-1]  # ρ = 0.5 and |tanh'| ≤ 1: at most 0.5 per step


def test_softmax_cross_entropy_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 2, 5))
    targets = rng.integers(0, 5, size=(3, 2))
    _, grad = softmax_cross_entropy(logits, targets)
    numeric = numerical_gradient(lambda: softmax_cross_entropy(logits, targets)[0], logits)
    assert relative_error(grad, numeric) <= 1e-6


def test_shape_errors_name_the_expected_shape():
    params = init_params(3, 5, 4)
    with pytest.raises(ValueError, match=r"\(seq_len, batch, input_size=3\), got \(6, 3\)"):
        rnn_forward(params, np.zeros((6, 3)), np.zeros((1, 5)))
    with pytest.raises(ValueError, match=r"\(batch=2, hidden_size=5\), got \(2, 4\)"):
        rnn_forward(params, np.zeros((6, 2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="activation"):
        rnn_forward(params, np.zeros((6, 2, 3)), np.zeros((2, 5)), activation="sigmoid")
    with pytest.raises(ValueError, match=r"targets of shape \(6, 2\)"):
        softmax_cross_entropy(np.zeros((6, 2, 4)), np.zeros((6,), dtype=int))


def _echo_accuracy(k, delay=5, batches=30):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    model = RNNLanguageModel(8, RNN(16, 64, batch_first=True))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(batches):
        x, y = echo_task(32, 128, delay, generator=generator)
        truncated_bptt_epoch(model, x, y, k, optimizer, clip_norm=1.0)
    x, y = echo_task(256, 128, delay, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        logits, _ = model(x)
    return float((logits.argmax(-1) == y)[:, delay:].float().mean())


def test_truncation_shorter_than_the_delay_cannot_learn_the_echo():
    """The claim of 7장: gradients must reach back as far as the dependency."""
    assert _echo_accuracy(k=4) < 0.4
    assert _echo_accuracy(k=8) > 0.9


def test_truncated_bptt_rejects_bad_input():
    model = RNNLanguageModel(8, RNN(4, 4, batch_first=True))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.zeros(2, 6, dtype=torch.long)
    with pytest.raises(ValueError, match="k must be"):
        truncated_bptt_epoch(model, x, x, 0, optimizer)
    with pytest.raises(ValueError, match=r"\(batch, seq_len\)"):
        truncated_bptt_epoch(model, x[0], x[0], 2, optimizer)


def test_exploding_loss_raises_a_clear_error_and_clipping_prevents_it():
    def run(clip_norm):
        torch.manual_seed(0)
        generator = torch.Generator().manual_seed(0)
        model = RNNLanguageModel(8, RNN(16, 64, batch_first=True, nonlinearity="relu"))
        with torch.no_grad():  # spectral radius 1.3: gradients grow 1.3× per step back
            model.recurrent.weight_hh_l0.copy_(1.3 * torch.linalg.qr(torch.randn(64, 64))[0])
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        return [truncated_bptt_epoch(model, *echo_task(32, 64, 3, generator=generator), 32,
                                     optimizer, clip_norm=clip_norm) for _ in range(10)]  # fmt: skip

    with pytest.raises(NonFiniteLossError, match="clip the gradient norm"):
        run(None)
    losses = run(1.0)
    assert losses[-1] < losses[0]


@pytest.mark.parametrize(
    ("targets", "error", "message"),
    [
        (np.array([[0, -1]]), ValueError, r"class ids in \[0, 3\)"),
        (np.array([[0, 3]]), ValueError, r"class ids in \[0, 3\)"),
        (np.array([[0.0, 1.0]]), TypeError, "integer class ids"),
    ],
)
def test_softmax_cross_entropy_refuses_targets_that_are_not_class_ids(targets, error, message):
    with pytest.raises(error, match=message):
        softmax_cross_entropy(np.zeros((1, 2, 3)), targets)


def test_truncated_bptt_with_nothing_to_train_on_says_so():
    torch.manual_seed(0)
    model = RNNLanguageModel(5, RNN(4, 8, batch_first=True))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.zeros(2, 6, dtype=torch.long)
    with pytest.raises(ValueError, match="every target is -100"):
        truncated_bptt_epoch(model, x, torch.full_like(x, -100), 2, optimizer)
    empty = torch.zeros(2, 0, dtype=torch.long)
    with pytest.raises(ValueError, match="no time steps"):
        truncated_bptt_epoch(model, empty, empty, 2, optimizer)
