"""How a language model picks its next token (13장): greedy, temperature, top-k, top-p and a
repetition penalty, each a function of the next-token logits (B, V).

Every function returns new logits: a token a rule removes gets −∞, so that the
softmax gives it probability 0. They compose in the order ``transformers``
applies its processors when generating: the repetition penalty, then temperature,
top-k and top-p. ``tests/test_sampling.py`` checks each against the
corresponding ``transformers`` logits processor on the same logits, and
:func:`generate` (greedy) against ``GPT2LMHeadModel.generate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import torch

from course_utils.checks import check_int, check_tensor

__all__ = [
    "Sampling",
    "apply_repetition_penalty",
    "apply_temperature",
    "generate",
    "keep_top_k",
    "keep_top_p",
    "next_token",
]


def _logits(logits: object) -> torch.Tensor:
    check_tensor(logits, "logits", "B, V")
    return cast(torch.Tensor, logits)


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """``logits / temperature``: below 1 sharper (→ greedy as it → 0), above 1 flatter."""
    if not (
        isinstance(temperature, (int, float)) and temperature > 0 and math.isfinite(temperature)
    ):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    return _logits(logits) / temperature


def keep_top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the ``k`` largest logits of each row (and any tied with the k-th); −∞ elsewhere."""
    logits = _logits(logits)
    check_int(k, "k")
    k = min(k, logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (B, 1): the k-th largest
    return logits.masked_fill(logits < kth, -math.inf)


def keep_top_p(logits: torch.Tensor, p: float, min_tokens: int = 1) -> torch.Tensor:
    """Nucleus sampling: keep each row's most likely tokens until their probability reaches
    ``p`` (the token that crosses ``p`` is kept), at least ``min_tokens``; −∞ elsewhere."""
    logits = _logits(logits)
    if not (isinstance(p, (int, float)) and 0.0 <= p <= 1.0):
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    check_int(min_tokens, "min_tokens")
    ordered, order = torch.sort(logits, dim=-1, descending=True)  # most likely first
    probs = ordered.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # the mass of the tokens ranked above each one
    drop = before >= p  # p is reached without this token
    drop[..., :min_tokens] = False
    removed = torch.zeros_like(drop).scatter(-1, order, drop)  # back to vocabulary order
    return logits.masked_fill(removed, -math.inf)


def apply_repetition_penalty(
    logits: torch.Tensor, previous: torch.Tensor, penalty: float
) -> torch.Tensor:
    """CTRL's penalty (Keskar et al., 2019): each token already in ``previous`` (B, T) has its
    logit divided by ``penalty`` if positive, multiplied if negative: less likely either way
    when ``penalty`` > 1."""
    logits = _logits(logits)
    check_tensor(previous, "previous", "B, T", kind="int64")
    if previous.shape[0] != logits.shape[0]:
        raise ValueError(
            f"previous (B, T) and logits (B, V) need one batch size, got "
            f"{tuple(previous.shape)} and {tuple(logits.shape)}"
        )
    if not (isinstance(penalty, (int, float)) and penalty > 0):
        raise ValueError(f"penalty must be a number > 0, got {penalty!r}")
    seen = logits.gather(-1, previous)  # (B, T): the logits of the tokens already there
    penalised = torch.where(seen < 0, seen * penalty, seen / penalty)
    return logits.scatter(-1, previous, penalised)


@dataclass(frozen=True)
class Sampling:
    """How :func:`next_token` picks: greedy (``greedy=True``) or sampled, after the rules."""

    greedy: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    repetition_penalty: float | None = None

    def logits(self, logits: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        """The rules in ``transformers``' order: penalty, temperature, top-k, top-p."""
        if self.repetition_penalty is not None:
            logits = apply_repetition_penalty(logits, previous, self.repetition_penalty)
        if self.greedy:
            return logits
        if self.temperature != 1.0:
            logits = apply_temperature(logits, self.temperature)
        if self.top_k is not None:
            logits = keep_top_k(logits, self.top_k)
        if self.top_p is not None and self.top_p < 1.0:
            logits = keep_top_p(logits, self.top_p)
        return logits


def next_token(
    logits: torch.Tensor,
    previous: torch.Tensor,
    sampling: Sampling,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """(B,) the next token of each row: the argmax, or a draw from the softmax."""
    scores = sampling.logits(logits, previous)
    if sampling.greedy:
        return scores.argmax(dim=-1)
    probs = scores.softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate(
    model: torch.nn.Module,
    ids: torch.Tensor,
    new_tokens: int,
    sampling: Sampling | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = False,
) -> torch.Tensor:
    """``ids`` (B, T) followed by ``new_tokens`` tokens, each from ``model``'s logits at the
    last position. Without the cache each step reads the whole sequence again; with it
    (``use_cache``, a model with ``forward_cached`` such as :class:`course_utils.gpt.GPT`)
    the prompt is read once and each step reads one new position."""
    check_tensor(ids, "ids", "B, T", kind="int64")
    check_int(new_tokens, "new_tokens", least=0)
    if use_cache and not callable(getattr(model, "forward_cached", None)):
        raise TypeError(f"use_cache needs a model with forward_cached, got {type(model).__name__}")
    sampling = Sampling(greedy=True) if sampling is None else sampling
    was_training = model.training
    model.eval()
    cache = None
    forward_cached: Any = getattr(model, "forward_cached", None)
    try:
        reading = ids
        for _ in range(new_tokens):
            if use_cache:
                logits, cache = forward_cached(reading, cache)
            else:
                logits = model(ids)
            token = next_token(logits[:, -1], ids, sampling, generator)  # (B,)
            ids = torch.cat([ids, token[:, None]], dim=1)
            reading = token[:, None]  # with the cache, only the new token is read next
    finally:
        model.train(was_training)
    return ids
