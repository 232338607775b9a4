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
from course_utils.experiments.ch07_bptt import (
    gradient_norm_sweep,
    run_clipping,
    run_echo_truncation,
)
from course_utils.gradcheck import numerical_gradient, relative_error
from course_utils.rnn import (
    RNN,
    RNNLanguageModel,
)
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


def test_truncation_shorter_than_the_delay_cannot_learn_the_echo():
    """The claim of 7장: gradients must reach back as far as the dependency."""
    short, long = run_echo_truncation(4, device="cpu"), run_echo_truncation(8, device="cpu")
    assert short.delay == 5 and short.chance == 1 / 8
    assert short.accuracy < 0.4
    assert long.accuracy > 0.9
    # One update per piece of k steps, except the pieces whose targets are all ignored: the
    # first d = 5 steps have no target, so k = 4's first piece is skipped, k = 8's is not.
    assert (short.updates, long.updates) == (30 * (32 - 1), 30 * 16)


def test_truncated_bptt_rejects_bad_input():
    model = RNNLanguageModel(8, RNN(4, 4, batch_first=True))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.zeros(2, 6, dtype=torch.long)
    with pytest.raises(ValueError, match="k must be"):
        truncated_bptt_epoch(model, x, x, 0, optimizer)
    with pytest.raises(ValueError, match=r"\(batch, seq_len\)"):
        truncated_bptt_epoch(model, x[0], x[0], 2, optimizer)


def test_exploding_loss_raises_a_clear_error_and_clipping_prevents_it():
    with pytest.raises(NonFiniteLossError, match="clip the gradient norm"):
        model = RNNLanguageModel(8, RNN(4, 8, batch_first=True))
        with torch.no_grad():
            model.output.bias.fill_(float("nan"))
        x, y = echo_task(2, 6, 1, generator=torch.Generator().manual_seed(0))
        truncated_bptt_epoch(model, x, y, 3, torch.optim.SGD(model.parameters(), lr=0.1))
    unclipped = run_clipping(None, batches=10, device="cpu")
    assert unclipped.error is not None and "clip the gradient norm" in unclipped.error
    assert unclipped.diverged_at == len(unclipped.losses) + 1 <= 10
    clipped = run_clipping(1.0, batches=10, device="cpu")
    assert clipped.error is None and clipped.diverged_at is None
    assert len(clipped.losses) == 10 and clipped.losses[-1] < clipped.losses[0]
    assert len(clipped.grad_norms) == 10 * 2  # two pieces of 32 steps per batch of 64


def test_truncated_bptt_records_the_gradient_norm_before_clipping():
    torch.manual_seed(0)
    model = RNNLanguageModel(8, RNN(4, 8, batch_first=True))
    x, y = echo_task(2, 6, 1, generator=torch.Generator().manual_seed(0))
    norms: list[float] = []
    truncated_bptt_epoch(model, x, y, 3, torch.optim.SGD(model.parameters(), lr=0.0),
                         clip_norm=1e-3, grad_norms=norms)  # fmt: skip
    assert len(norms) == 2 and all(n > 1e-3 for n in norms)  # measured before clipping to 1e-3


def test_gradient_norm_sweep_measures_the_spectral_radius_it_sets():
    sweep = gradient_norm_sweep(rhos=(0.5, 1.2), length=12, hidden_size=6)
    assert set(sweep.norms) == {(a, r) for a in ("tanh", "relu") for r in (0.5, 1.2)}
    for key, norms in sweep.norms.items():
        assert norms.shape == (12,)
        assert sweep.spectral_radius[key] == pytest.approx(key[1])
        assert 0 < sweep.mean_derivative[key] <= 1
    assert sweep.per_step("tanh", 0.5) == pytest.approx(sweep.ratio("tanh", 0.5) ** (1 / 11))
    assert sweep.ratio("tanh", 0.5) < 0.5**11  # |tanh'| ≤ 1: at most ρ per step
    with pytest.raises(ValueError, match="activation must be one of"):
        gradient_norm_sweep(activations=("sigmoid",))


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
