"""Sequence data for Part II (5–8장): batches of windows for language models and
synthetic tasks whose answer depends on a known, distant position.

Data flows one way: ``text``/``vocab`` → this module → models → ``train``.
"""

from __future__ import annotations

import torch

from course_utils.checks import check_int

__all__ = ["adding_problem", "echo_task", "lm_windows"]


def lm_windows(
    ids: torch.Tensor, batch_size: int, num_steps: int, generator: torch.Generator | None = None
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of (X, Y) batches, each (B, T), with ``Y`` = ``X`` shifted by one token.

    The stream is cut into windows of ``num_steps`` tokens from a random offset
    and the windows are shuffled, so each epoch sees different cuts.
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1:
        raise ValueError(
            "ids must be a 1-D tensor of token ids, "
            f"got {getattr(ids, 'shape', type(ids).__name__)}"
        )
    check_int(batch_size, "batch_size")
    check_int(num_steps, "num_steps")
    offset = int(torch.randint(0, num_steps, (1,), generator=generator))
    count = (ids.numel() - 1 - offset) // num_steps
    if count < batch_size:
        raise ValueError(
            f"the text has {ids.numel()} tokens: too short for batch_size={batch_size} windows "
            f"of num_steps={num_steps}"
        )
    starts = offset + num_steps * torch.randperm(count, generator=generator)
    span = torch.arange(num_steps)
    batches = []
    for first in range(0, count - batch_size + 1, batch_size):
        index = starts[first : first + batch_size, None] + span  # (B, T)
        batches.append((ids[index], ids[index + 1]))
    return batches


def adding_problem(
    n: int, length: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The adding problem (Hochreiter & Schmidhuber 1997): X (n, T, 2), y (n,).

    Channel 0 holds random numbers in [0, 1); channel 1 marks two positions,
    one in each half of the sequence. The target is the sum of the two marked
    numbers. Always answering the mean (1.0) gives a mean squared error of 1/6.
    """
    check_int(n, "n")
    if check_int(length, "length") < 2:
        raise ValueError(f"length must be >= 2 (one marker in each half), got {length}")
    values = torch.rand(n, length, generator=generator)
    first = torch.randint(0, length // 2, (n,), generator=generator)
    second = torch.randint(length // 2, length, (n,), generator=generator)
    markers = torch.zeros(n, length)
    rows = torch.arange(n)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    x = torch.stack((values, markers), dim=-1)  # (n, T, 2)
    return x, (values * markers).sum(dim=1)  # (n,)


def echo_task(
    n: int, length: int, delay: int, vocab_size: int = 8, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random symbols X (n, T) and targets Y (n, T) with ``Y_t = X_{t-delay}``.

    The first ``delay`` targets are -100 (``cross_entropy``'s ignore index):
    nothing that far back exists. Remembering exactly ``delay`` steps is the
    whole task, so it shows how far back gradients must reach.
    """
    check_int(n, "n")
    check_int(length, "length")
    check_int(delay, "delay")
    if delay >= length:
        raise ValueError(f"delay must be smaller than length={length}, got {delay}")
    if check_int(vocab_size, "vocab_size") < 2:
        raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
    x = torch.randint(0, vocab_size, (n, length), generator=generator)
    y = torch.full_like(x, -100)
    y[:, delay:] = x[:, :-delay]
    return x, y
