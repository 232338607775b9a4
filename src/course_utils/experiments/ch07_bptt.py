"""7장's experiments: how far gradients reach, truncation, and clipping.

:func:`gradient_norm_sweep` (``‖∂L/∂H_t‖`` by distance for ``W_hh = ρQ``),
:func:`run_echo_truncation` (what truncated BPTT can and cannot learn) and
:func:`run_clipping` (clipping against exploding gradients).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from course_utils.bptt import (
    ACTIVATIONS,
    init_params,
    rnn_backward,
    rnn_forward,
    truncated_bptt_epoch,
)
from course_utils.checks import check_int
from course_utils.device import (
    get_device,
)
from course_utils.rnn import (
    RNN,
    RNNLanguageModel,
)
from course_utils.sequences import (
    echo_task,
)
from course_utils.train import (
    NonFiniteLossError,
)

__all__ = [
    "ClippingResult",
    "EchoResult",
    "GradientNormSweep",
    "gradient_norm_sweep",
    "run_clipping",
    "run_echo_truncation",
]


@dataclass
class GradientNormSweep:
    """``‖∂L/∂H_t‖`` by distance from a loss at the last step, for ``W_hh = ρQ``.

    ``norms[(activation, rho)]`` has one entry per distance ``T - t``, from
    0 (the last step) to ``length - 1``.
    """

    length: int
    norms: dict[tuple[str, float], np.ndarray]
    spectral_radius: dict[tuple[str, float], float]  # measured from the eigenvalues of W_hh
    mean_derivative: dict[tuple[str, float], float]  # mean φ'(a_t); for ReLU the share of units on

    def ratio(self, activation: str, rho: float) -> float:
        """``‖∂L/∂H‖`` at the largest distance over the one at distance 0."""
        by_distance = self.norms[(activation, rho)]
        return float(by_distance[-1] / by_distance[0])

    def per_step(self, activation: str, rho: float) -> float:
        """The geometric mean of the factor one step back multiplies the norm by."""
        return self.ratio(activation, rho) ** (1 / (self.length - 1))


def gradient_norm_sweep(
    rhos: tuple[float, ...] = (0.8, 1.0, 1.5, 2.0),
    activations: tuple[str, ...] = ACTIVATIONS,
    length: int = 60,
    hidden_size: int = 64,
    batch_size: int = 8,
    input_size: int = 4,
    output_size: int = 3,
    seed: int = 0,
) -> GradientNormSweep:
    """Measure vanishing and exploding gradients (7장) for every ρ and activation.

    ``W_hh = ρQ`` with ``Q`` a random orthogonal matrix, so every eigenvalue
    has modulus ρ; the other weights come from :func:`init_params`. A random
    sequence (length, batch_size, input_size) is read from ``h_0 = 0``; only the
    last step gets a (random) loss gradient, and :func:`rnn_backward` reports
    ``‖∂L/∂H_t‖`` at every step.
    """
    unknown = [a for a in activations if a not in ACTIVATIONS]
    if unknown:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {unknown[0]!r}")
    check_int(length, "length", 2)
    rng = np.random.default_rng(seed)
    orthogonal, _ = np.linalg.qr(rng.normal(size=(hidden_size, hidden_size)))
    xs = rng.normal(size=(length, batch_size, input_size))  # (T, B, I)
    h0 = np.zeros((batch_size, hidden_size))  # (B, H)
    norms, radius, derivative = {}, {}, {}
    for activation in activations:
        for rho in rhos:
            params = init_params(input_size, hidden_size, output_size, seed=seed)
            params["W_hh"] = rho * orthogonal  # every eigenvalue has modulus ρ
            logits, cache = rnn_forward(params, xs, h0, activation)  # (T, B, Q)
            # A loss at the last step only: ∂L/∂O_t = 0 for every other t.
            dlogits = np.zeros_like(logits)
            dlogits[-1] = rng.normal(size=logits.shape[1:])
            _, hidden_norms = rnn_backward(params, cache, dlogits)  # (T,)
            key = (activation, rho)
            norms[key] = hidden_norms[::-1]  # distance 0 (the last step) first
            radius[key] = float(np.abs(np.linalg.eigvals(params["W_hh"])).max())
            if activation == "tanh":  # φ'(a) = 1 - tanh²(a)
                derivative[key] = float((1 - cache.hs[1:] ** 2).mean())
            else:  # φ'(a) = 1 where a > 0: the share of units that are on
                derivative[key] = float((cache.pre > 0).mean())
    return GradientNormSweep(length, norms, radius, derivative)


@dataclass
class EchoResult:
    """One run of the echo task ``y_t = x_{t-delay}`` trained with truncated BPTT."""

    k: int  # truncation length
    delay: int
    vocab_size: int
    accuracy: float  # on fresh test sequences, at the steps that have a target
    batches: int  # batches of training data, the same for every k
    updates: int  # one per piece of k steps that holds a target (the first pieces may hold none)
    length: int  # steps per sequence

    @property
    def chance(self) -> float:
        """The accuracy of guessing a symbol at random."""
        return 1 / self.vocab_size


def run_echo_truncation(
    k: int,
    delay: int = 5,
    batches: int = 30,
    batch_size: int = 32,
    length: int = 128,
    vocab_size: int = 8,
    hidden_size: int = 64,
    lr: float = 3e-3,
    clip_norm: float = 1.0,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> EchoResult:
    """Train a tanh RNN language model on the echo task with truncation ``k``; score it.

    Every ``k`` sees the same ``batches`` batches (drawn on the CPU from
    ``seed``), read in pieces of ``k`` steps with Adam and gradient clipping;
    the accuracy is measured on 256 other sequences of the same length.
    """
    torch.manual_seed(seed)
    target = get_device() if device is None else torch.device(device)
    data = torch.Generator().manual_seed(seed)
    recurrent = RNN(16, hidden_size, batch_first=True)  # embeddings of size 16
    model = RNNLanguageModel(vocab_size, recurrent).to(target)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    norms: list[float] = []  # one per update: counts the updates
    for _ in range(batches):
        # x, y: (batch_size, length)
        x, y = echo_task(batch_size, length, delay, vocab_size, generator=data)
        truncated_bptt_epoch(model, x, y, k, optimizer, clip_norm=clip_norm, grad_norms=norms)
    # Other sequences than the training ones.
    test = torch.Generator().manual_seed(seed + 9)
    x, y = echo_task(256, length, delay, vocab_size, generator=test)
    with torch.no_grad():
        logits, _ = model(x.to(target))  # (256, T, V)
    correct = logits.argmax(-1).cpu() == y
    accuracy = float(correct[:, delay:].float().mean())
    return EchoResult(k, delay, vocab_size, accuracy, batches, len(norms), length)


@dataclass
class ClippingResult:
    """Mean loss per batch of a ReLU RNN with an expanding recurrence, clipped or not."""

    clip_norm: float | None
    spectral_radius: float
    lr: float
    delay: int  # of the echo task it is trained on
    losses: list[float]  # one per batch, up to the last finite one
    grad_norms: list[float]  # one per update, before clipping
    error: str | None  # the NonFiniteLossError message if the loss stopped being finite

    @property
    def diverged_at(self) -> int | None:
        """The batch (from 1) whose loss was not finite, or None."""
        return None if self.error is None else len(self.losses) + 1


def run_clipping(
    clip_norm: float | None,
    batches: int = 30,
    spectral_radius: float = 1.3,
    lr: float = 0.5,
    delay: int = 3,
    length: int = 64,
    k: int = 32,
    batch_size: int = 32,
    hidden_size: int = 64,
    vocab_size: int = 8,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> ClippingResult:
    """Train a ReLU RNN with ``W_hh = spectral_radius · Q`` by SGD on the echo task.

    The same seed gives the same weights and data with and without clipping.
    Training stops at the first non-finite loss; the error is kept, not raised.
    """
    torch.manual_seed(seed)
    target = get_device() if device is None else torch.device(device)
    data = torch.Generator().manual_seed(seed)
    recurrent = RNN(16, hidden_size, batch_first=True, nonlinearity="relu")
    model = RNNLanguageModel(vocab_size, recurrent)
    with torch.no_grad():  # every eigenvalue of W_hh has modulus spectral_radius
        orthogonal = torch.linalg.qr(torch.randn(hidden_size, hidden_size))[0]
        recurrent.get_parameter("weight_hh_l0").copy_(spectral_radius * orthogonal)
    model.to(target)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses: list[float] = []
    grad_norms: list[float] = []
    error = None
    for _ in range(batches):
        # x, y: (batch_size, length)
        x, y = echo_task(batch_size, length, delay, vocab_size, generator=data)
        try:
            loss = truncated_bptt_epoch(
                model, x, y, k, optimizer, clip_norm=clip_norm, grad_norms=grad_norms
            )
        except NonFiniteLossError as failure:
            error = str(failure)
            break
        losses.append(loss)
    return ClippingResult(
        clip_norm,
        spectral_radius,
        lr,
        delay,
        losses,
        grad_norms,
        error,
    )
