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

The chapter's three experiments (:func:`gradient_norm_sweep`,
:func:`run_echo_truncation`, :func:`run_clipping`) are in
:mod:`course_utils.experiments.ch07_bptt`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from course_utils.checks import check_int
from course_utils.train import clip_grad_norm, finite_loss_value

__all__ = [
    "ACTIVATIONS",
    "Cache",
    "init_params",
    "rnn_backward",
    "rnn_forward",
    "rnn_loss_and_grads",
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
    check_int(k, "k")
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
