"""The training loop every neural chapter reuses (6장 RNN onwards).

Small enough to read in one sitting: seed, pick the device, then for each
epoch run the batches, clip the gradient norm, step, and record a history
for plotting. A loss that becomes NaN or infinite stops training with an
error that names the epoch and step, instead of a silently broken curve.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from course_utils.checks import check_int, check_tensor
from course_utils.device import get_device, seed_everything
from course_utils.progress import progress

__all__ = [
    "History",
    "NonFiniteLossError",
    "adamw_with_warmup",
    "clip_grad_norm",
    "evaluate",
    "finite_loss_value",
    "fit",
    "inverse_sqrt_schedule",
    "smoothed_cross_entropy",
    "transformer_rate",
    "warmup_schedule",
]

Batch = Any
#: ``loss_fn(model, batch) -> scalar loss tensor``; moves the batch to the model's device itself.
LossFn = Callable[[torch.nn.Module, Batch], torch.Tensor]


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or infinite during training."""


def finite_loss_value(loss: torch.Tensor, where: str) -> float:
    """The loss as a float, or :class:`NonFiniteLossError` naming ``where`` it happened."""
    value = float(loss.detach())
    if not math.isfinite(value):
        raise NonFiniteLossError(
            f"loss became {value} {where}: lower the learning rate, "
            "clip the gradient norm (clip_norm) or check the inputs"
        )
    return value


@dataclass
class History:
    """Per-epoch records for plotting: mean losses, gradient norms and time."""

    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)  # mean norm before clipping
    seconds: list[float] = field(default_factory=list)


def clip_grad_norm(parameters: Iterable[torch.nn.Parameter], max_norm: float) -> float:
    """Rescale gradients so that their joint L2 norm is at most ``max_norm``.

    ``g ← g · min(1, max_norm / (‖g‖ + 1e-6))`` over all parameters together, as
    ``torch.nn.utils.clip_grad_norm_`` does. Returns the norm before clipping.
    """
    if not max_norm > 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm}")
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(scale)
    return float(total)


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: Iterable[Batch], loss_fn: LossFn) -> float:
    """Mean loss over ``batches`` with the model in evaluation mode."""
    model.eval()
    losses = [float(loss_fn(model, batch)) for batch in batches]
    if not losses:
        raise ValueError("no batches to evaluate")
    return sum(losses) / len(losses)


def fit(
    model: torch.nn.Module,
    train_batches: Callable[[], Iterable[Batch]],
    loss_fn: LossFn,
    optimizer: torch.optim.Optimizer,
    epochs: int,
    clip_norm: float | None = None,
    val_batches: Callable[[], Iterable[Batch]] | None = None,
    device: str | torch.device | None = None,
    seed: int | None = 0,
    show_progress: bool = True,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
) -> History:
    """Train ``model`` for ``epochs`` passes and return the :class:`History`.

    ``train_batches`` and ``val_batches`` are called once per epoch and return
    an iterable of batches, so each epoch can reshuffle. A ``scheduler`` steps
    after every optimizer step.
    """
    check_int(epochs, "epochs")
    if seed is not None:
        seed_everything(seed)
    target = get_device() if device is None else torch.device(device)
    model.to(target)
    history = History()
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        model.train()
        losses, norms = [], []
        batches: Iterable[Batch] = train_batches()
        if show_progress:
            batches = progress(batches, f"epoch {epoch}/{epochs}")
        for step, batch in enumerate(batches, start=1):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model, batch)
            value = finite_loss_value(loss, f"at epoch {epoch}, step {step}")
            loss.backward()
            if clip_norm is not None:
                norms.append(clip_grad_norm(model.parameters(), clip_norm))
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            losses.append(value)
        if not losses:
            raise ValueError("train_batches() yielded no batches")
        history.train_loss.append(sum(losses) / len(losses))
        history.grad_norm.append(sum(norms) / len(norms) if norms else float("nan"))
        if val_batches is not None:
            history.val_loss.append(evaluate(model, val_batches(), loss_fn))
        history.seconds.append(time.perf_counter() - start)
    return history


def adamw_with_warmup(
    model: torch.nn.Module, learning_rate: float, weight_decay: float, total: int, warmup: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW (decay on matrices and embeddings only) with BERT's warm-up and linear decay to 0."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=learning_rate,
        foreach=True,  # one call per step for all parameters (the same numbers as the loop)
    )  # fmt: skip
    return optimizer, warmup_schedule(optimizer, warmup, total)


def warmup_schedule(
    optimizer: torch.optim.Optimizer, warmup: int, total: int | None = None
) -> torch.optim.lr_scheduler.LambdaLR:
    """The learning rate times (step + 1) / warmup over the first ``warmup`` steps, then 1
    (``total`` None) or down linearly to 0 at step ``total`` (BERT)."""
    warmup = max(1, warmup)

    def factor(step: int) -> float:  # step = optimizer steps taken so far
        if step < warmup:
            return (step + 1) / warmup
        if total is None:
            return 1.0
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _check_epsilon(epsilon: object) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must be a number in [0, 1), got {epsilon!r}")
    return float(epsilon)


def smoothed_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, epsilon: float, ignore_index: int = -100
) -> torch.Tensor:
    """Cross-entropy against the smoothed target (1 − ε)·one-hot + ε/V, mean over kept targets.

    Label smoothing (Szegedy et al. 2016; the Transformer's ε = 0.1). Equal to
    ``F.cross_entropy(logits, targets, label_smoothing=ε, ignore_index=…)``.
    """
    epsilon = _check_epsilon(epsilon)
    N, V = check_tensor(logits, "logits", "N, V")
    check_tensor(targets, "targets", "N", "int64", N=N)
    keep = targets != ignore_index  # (N,)
    if not bool(keep.any()):
        raise ValueError(f"every target is ignore_index={ignore_index}: nothing to score")
    log_probs = logits[keep].log_softmax(dim=-1)  # (N', V)
    true = targets[keep]  # (N',)
    if bool((true < 0).any() | (true >= V).any()):
        raise ValueError(f"targets must be ids in 0 … {V - 1} (or ignore_index)")
    nll = -log_probs.gather(1, true[:, None]).squeeze(1)  # (N',) −log p(true word)
    uniform = -log_probs.mean(dim=-1)  # (N',) cross-entropy against the uniform 1/V
    return ((1 - epsilon) * nll + epsilon * uniform).mean()


def transformer_rate(step: int, d_model: int, warmup: int) -> float:
    """The Transformer paper's learning rate at optimizer step ``step`` (counted from 1).

    lrate = d_model^−0.5 · min(step^−0.5, step · warmup^−1.5): a linear rise for
    ``warmup`` steps to d_model^−0.5 · warmup^−0.5, then a fall as 1/√step.
    """
    step, d_model, warmup = (
        check_int(step, "step"),
        check_int(d_model, "d_model"),
        check_int(warmup, "warmup"),
    )
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def inverse_sqrt_schedule(
    optimizer: torch.optim.Optimizer, warmup: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """The paper's schedule scaled to peak at the optimizer's learning rate after ``warmup`` steps.

    The factor on the base rate is min(√(warmup/step), step/warmup) = transformer_rate(step,
    d, warmup) / transformer_rate(warmup, d, warmup), for any d_model: a base rate of
    d_model^−0.5 · warmup^−0.5 gives the paper's rates exactly.
    """
    warmup = check_int(warmup, "warmup")

    def factor(step: int) -> float:  # step = optimizer steps taken so far; the paper counts from 1
        return min(((step + 1) / warmup) ** -0.5, (step + 1) / warmup)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
