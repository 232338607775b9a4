"""7장 BPTT와 기울기 소실·폭주: backpropagation through time by hand, in NumPy.

The forward pass of chapter 6, written out for one layer::

    a_t = X_t W_xh + H_{t-1} W_hh + b_h        (B, H)
    H_t = φ(a_t)                               φ = tanh or ReLU
    O_t = H_t W_hq + b_q                       (B, Q)
    L   = mean over t and the batch of cross-entropy(O_t, y_t)

and its backward pass, from the last step to the first::

    ∂L/∂H_t = ∂L/∂O_t W_hqᵀ + ∂L/∂a_{t+1} W_hhᵀ      (the second term is the path through time)
    ∂L/∂a_t = ∂L/∂H_t ⊙ φ'(a_t)
    ∂L/∂W_hh = Σ_t H_{t-1}ᵀ ∂L/∂a_t, and likewise for W_xh, b_h.

:func:`truncated_bptt_epoch` trains a torch model the same way, but stops the
backward walk every ``k`` steps (``state.detach()``).

The chapter's three experiments live here, so that the book and
``tests/test_claims_ch07_ch08.py`` run the same code with the same settings:
:func:`gradient_norm_sweep` (vanishing and exploding gradients against ρ),
:func:`run_echo_truncation` (truncation length against the echo delay) and
:func:`run_clipping` (the same diverging run with and without clipping).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from course_utils.device import get_device
from course_utils.rnn import RNN, RNNLanguageModel
from course_utils.sequences import echo_task
from course_utils.train import NonFiniteLossError, clip_grad_norm, finite_loss_value

__all__ = [
    "Cache",
    "ClippingResult",
    "EchoResult",
    "GradientNormSweep",
    "gradient_norm_sweep",
    "init_params",
    "rnn_backward",
    "rnn_forward",
    "rnn_loss_and_grads",
    "run_clipping",
    "run_echo_truncation",
    "softmax_cross_entropy",
    "truncated_bptt_epoch",
]

Params = dict[str, np.ndarray]
ACTIVATIONS = ("tanh", "relu")


def init_params(
    input_size: int, hidden_size: int, output_size: int, seed: int = 0, scale: float = 0.3
) -> Params:
    """Float64 parameters W_xh (I, H), W_hh (H, H), b_h (H,), W_hq (H, Q), b_q (Q,).

    Normal with standard deviation ``scale``, from ``seed``.
    """
    rng = np.random.default_rng(seed)
    return {
        "W_xh": rng.normal(0, scale, (input_size, hidden_size)),
        "W_hh": rng.normal(0, scale, (hidden_size, hidden_size)),
        "b_h": rng.normal(0, scale, hidden_size),
        "W_hq": rng.normal(0, scale, (hidden_size, output_size)),
        "b_q": rng.normal(0, scale, output_size),
    }


@dataclass
class Cache:
    """What the backward pass needs from the forward pass."""

    xs: np.ndarray  # (T, B, I)
    hs: np.ndarray  # (T + 1, B, H): h_0 … h_T
    pre: np.ndarray  # (T, B, H): a_1 … a_T
    activation: str


def _check(params: Params, xs: np.ndarray, h0: np.ndarray, activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    input_size, hidden_size = params["W_xh"].shape
    if not isinstance(xs, np.ndarray) or xs.ndim != 3 or xs.shape[2] != input_size:
        raise ValueError(
            f"expected xs of shape (seq_len, batch, input_size={input_size}), "
            f"got {getattr(xs, 'shape', type(xs).__name__)}"
        )
    if not isinstance(h0, np.ndarray) or h0.shape != (xs.shape[1], hidden_size):
        raise ValueError(
            f"expected h0 of shape (batch={xs.shape[1]}, hidden_size={hidden_size}), "
            f"got {getattr(h0, 'shape', type(h0).__name__)}"
        )


def rnn_forward(
    params: Params, xs: np.ndarray, h0: np.ndarray, activation: str = "tanh"
) -> tuple[np.ndarray, Cache]:
    """Logits (T, B, Q) for every step, and the cache for :func:`rnn_backward`."""
    _check(params, xs, h0, activation)
    hs, pre = [h0], []
    for x in xs:  # x: (B, I)
        a = x @ params["W_xh"] + hs[-1] @ params["W_hh"] + params["b_h"]  # (B, H)
        pre.append(a)
        hs.append(np.tanh(a) if activation == "tanh" else np.maximum(a, 0))
    hidden = np.stack(hs)  # (T + 1, B, H)
    logits = hidden[1:] @ params["W_hq"] + params["b_q"]  # (T, B, Q)
    return logits, Cache(xs, hidden, np.stack(pre), activation)


def softmax_cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy over all (t, b) and its gradient ``(softmax - onehot) / N``."""
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"expected targets of shape {logits.shape[:-1]}, got {targets.shape}")
    if targets.dtype.kind not in "iu":
        raise TypeError(f"targets must be integer class ids, got dtype {targets.dtype}")
    classes = logits.shape[-1]
    if targets.size and (targets.min() < 0 or targets.max() >= classes):
        raise ValueError(
            f"targets must be class ids in [0, {classes}), got values from {targets.min()} "
            f"to {targets.max()} (this function has no ignore index)"
        )
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]
    count = targets.size
    grad = np.exp(log_probs)
    np.put_along_axis(
        grad, targets[..., None], np.take_along_axis(grad, targets[..., None], -1) - 1, -1
    )
    return float(-picked.sum() / count), grad / count


def rnn_backward(
    params: Params,
    cache: Cache,
    dlogits: np.ndarray,
) -> tuple[Params, np.ndarray]:
    """Gradients of every parameter, and ``‖∂L/∂H_t‖`` for t = 1 … T (the batch's norm).

    ``dlogits`` is ∂L/∂O_t for every step (T, B, Q).
    """
    grads = {name: np.zeros_like(value) for name, value in params.items()}
    grads["W_hq"] = np.einsum("tbh,tbq->hq", cache.hs[1:], dlogits)
    grads["b_q"] = dlogits.sum(axis=(0, 1))
    steps = dlogits.shape[0]
    hidden_norms = np.zeros(steps)
    from_future = np.zeros_like(cache.hs[0])  # ∂L/∂a_{t+1} W_hhᵀ: the path through time
    for t in range(steps - 1, -1, -1):
        dh = dlogits[t] @ params["W_hq"].T + from_future  # ∂L/∂H_t, (B, H)
        hidden_norms[t] = np.linalg.norm(dh)
        if cache.activation == "tanh":
            da = dh * (1 - cache.hs[t + 1] ** 2)  # tanh'(a) = 1 - tanh(a)²
        else:
            da = dh * (cache.pre[t] > 0)  # ReLU'(a) = 1 where a > 0
        grads["W_xh"] += cache.xs[t].T @ da
        grads["W_hh"] += cache.hs[t].T @ da
        grads["b_h"] += da.sum(axis=0)
        from_future = da @ params["W_hh"].T
    return grads, hidden_norms


def rnn_loss_and_grads(
    params: Params, xs: np.ndarray, targets: np.ndarray, h0: np.ndarray, activation: str = "tanh"
) -> tuple[float, Params]:
    """Forward, loss and backward in one call: ``(L, {name: ∂L/∂param})``."""
    logits, cache = rnn_forward(params, xs, h0, activation)
    loss, dlogits = softmax_cross_entropy(logits, targets)
    grads, _ = rnn_backward(params, cache, dlogits)
    return loss, grads


def truncated_bptt_epoch(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int,
    optimizer: torch.optim.Optimizer,
    clip_norm: float | None = None,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    grad_norms: list[float] | None = None,
) -> float:
    """Read ``x`` (B, T) in pieces of ``k`` steps, one update per piece; return the mean loss.

    The state is carried from piece to piece (the forward pass sees the whole
    history), but ``detach()`` cuts the graph, so gradients reach back at most
    ``k`` steps. A piece whose targets are all ``-100`` (ignored) is read but
    not trained on: there is nothing in it to predict. If ``grad_norms`` is a
    list, the gradient norm of every update (before clipping) is appended to it.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if x.dim() != 2 or y.shape != x.shape:
        raise ValueError(
            "expected x and y of the same shape (batch, seq_len), "
            f"got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    loss_fn = loss_fn or (
        lambda logits, target: F.cross_entropy(logits.flatten(0, 1), target.flatten())
    )
    if x.size(1) == 0:
        raise ValueError("x has no time steps (seq_len is 0): nothing to train on")
    device = next(model.parameters()).device
    x, y = x.to(device), y.to(device)
    model.train()
    state = None
    losses = []
    for start in range(0, x.size(1), k):
        logits, state = model(x[:, start : start + k], state)  # (B, k, V)
        # The next piece starts from these values but not from this piece's graph.
        state = (
            tuple(s.detach() for s in state)  # LSTM: (h, c)
            if isinstance(state, tuple)
            else state.detach()
        )
        target = y[:, start : start + k]
        if bool((target == -100).all()):
            continue
        loss = loss_fn(logits, target)
        value = finite_loss_value(loss, f"in the piece starting at step {start}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_norms is not None:  # measured before clipping
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            grad_norms.append(float(torch.nn.utils.get_total_norm(grads)))
        if clip_norm is not None:
            clip_grad_norm(model.parameters(), clip_norm)
        optimizer.step()
        losses.append(value)
    if not losses:
        raise ValueError("every target is -100 (ignored): nothing to train on")
    return sum(losses) / len(losses)


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
    if isinstance(length, bool) or not isinstance(length, int) or length < 2:
        raise ValueError(f"length must be an int >= 2, got {length!r}")
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
    updates: int  # one per piece of k steps: batches · ⌈length / k⌉

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
    for _ in range(batches):
        # x, y: (batch_size, length)
        x, y = echo_task(batch_size, length, delay, vocab_size, generator=data)
        truncated_bptt_epoch(model, x, y, k, optimizer, clip_norm=clip_norm)
    # Other sequences than the training ones.
    test = torch.Generator().manual_seed(seed + 9)
    x, y = echo_task(256, length, delay, vocab_size, generator=test)
    with torch.no_grad():
        logits, _ = model(x.to(target))  # (256, T, V)
    correct = logits.argmax(-1).cpu() == y
    accuracy = float(correct[:, delay:].float().mean())
    updates = batches * -(-length // k)
    return EchoResult(k, delay, vocab_size, accuracy, batches, updates)


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
