"""5장 시퀀스 모델과 언어 모델: a count-based n-gram language model with smoothing.

``P(x_t | x_1 … x_{t-1}) ≈ P(x_t | x_{t-n+1} … x_{t-1})``: the Markov assumption
of order n-1, estimated by counting. Two smoothings:

- ``"add_k"`` (Lidstone): ``(c(h, w) + k) / (c(h) + k|V|)``, the same numbers as
  ``nltk.lm.Lidstone``;
- ``"kneser_ney"`` (interpolated Kneser–Ney, Chen & Goodman 1999): absolute
  discounting at every order, with continuation counts below the top order and
  the uniform distribution at the bottom, so every token of the vocabulary
  keeps a non-zero probability. ``interpolate_uniform=False`` leaves the
  uniform out, as ``nltk.lm.KneserNeyInterpolated`` does.

The text is one stream of tokens (for characters, line breaks included); the
first tokens of a stream use the shorter history they have.

:func:`compare_smoothing` is the chapter's experiment: add-k (k chosen on a
validation cut of the training text) against Kneser–Ney at n = 1 … 4, both
scored on the same held-out text. The chapter and its claim test call it.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from course_utils.checks import check_int

__all__ = ["NGramLM", "SmoothingComparison", "choose_add_k", "compare_smoothing"]

Token = Hashable
Context = tuple[Token, ...]
_SEQUENCE_HINT = "a sequence of tokens; for characters pass list(text)"


class NGramLM:
    """An n-gram language model over a closed vocabulary (training tokens plus ``unk``)."""

    def __init__(
        self,
        tokens: Sequence[Token],
        order: int,
        smoothing: str = "kneser_ney",
        k: float = 1.0,
        discount: float = 0.75,
        unk: str = "<unk>",
        interpolate_uniform: bool = True,
    ) -> None:
        if isinstance(tokens, str):
            raise TypeError("tokens must be a sequence of tokens; for characters pass list(text)")
        check_int(order, "order")
        if smoothing not in ("add_k", "kneser_ney"):
            raise ValueError(f"smoothing must be 'add_k' or 'kneser_ney', got {smoothing!r}")
        if not k > 0:
            raise ValueError(f"k must be > 0, got {k}")
        if not 0 < discount < 1:
            raise ValueError(f"discount must be between 0 and 1, got {discount}")
        tokens = list(tokens)
        if len(tokens) < order:
            raise ValueError(f"need at least order={order} training tokens, got {len(tokens)}")
        self.order = order
        self.smoothing = smoothing
        self.k = float(k)
        self.discount = float(discount)
        self.unk = unk
        self.interpolate_uniform = interpolate_uniform
        self.vocab: list[Token] = sorted(set(tokens), key=repr)
        if unk not in self.vocab:
            self.vocab.append(unk)
        self._known = set(self.vocab)
        # counts[m][(h…, w)]: raw counts of every m-gram, m = 1 … order.
        self.counts: list[Counter[Context]] = [Counter() for _ in range(order + 1)]
        for m in range(1, order + 1):
            self.counts[m].update(zip(*(tokens[i:] for i in range(m)), strict=False))
        # The statistic each order uses: raw counts at the top, continuation counts
        # N1+(• h w) (how many different tokens precede h w) below it.
        self._stat: list[Counter[Context]] = [Counter() for _ in range(order + 1)]
        self._stat[order] = self.counts[order]
        for m in range(1, order):
            if smoothing == "add_k":
                self._stat[m] = self.counts[m]
            else:
                self._stat[m] = Counter(gram[1:] for gram in self.counts[m + 1])
        # Per history: the total of the statistic and the number of distinct followers.
        self._total: list[Counter[Context]] = [Counter() for _ in range(order + 1)]
        self._types: list[Counter[Context]] = [Counter() for _ in range(order + 1)]
        for m in range(1, order + 1):
            for gram, count in self._stat[m].items():
                self._total[m][gram[:-1]] += count
                self._types[m][gram[:-1]] += 1

    def _check_token(self, token: Token) -> Token:
        return token if token in self._known else self.unk

    def prob(self, token: Token, context: Sequence[Token] = ()) -> float:
        """``P(token | context)``; only the last ``order - 1`` tokens of ``context`` matter."""
        if isinstance(context, str) and len(context) > 1:
            raise TypeError(f"context must be {_SEQUENCE_HINT}")
        token = self._check_token(token)
        history = tuple(self._check_token(t) for t in context)
        history = history[-(self.order - 1) :] if self.order > 1 else ()
        if self.smoothing == "add_k":
            m = len(history) + 1
            return (self.counts[m][(*history, token)] + self.k) / (
                self._total[m][history] + self.k * len(self.vocab)
            )
        return self.kneser_ney(token, history)

    def kneser_ney(self, token: Token, history: Context) -> float:
        m = len(history) + 1
        total = self._total[m][history]
        if m == 1:
            if not self.interpolate_uniform:
                return self._stat[1][(token,)] / total
            lower = 1 / len(self.vocab)
        else:
            lower = self.kneser_ney(token, history[1:])
            if total == 0:  # history never seen: all the mass goes to the shorter history
                return lower
        kept = max(self._stat[m][(*history, token)] - self.discount, 0.0) / total
        backoff_weight = self.discount * self._types[m][history] / total
        return kept + backoff_weight * lower

    def distribution(self, context: Sequence[Token] = ()) -> np.ndarray:
        """``P(· | context)`` over :attr:`vocab`, shape (|V|,)."""
        return np.array([self.prob(token, context) for token in self.vocab])

    def log_likelihood(self, tokens: Sequence[Token]) -> tuple[float, int]:
        """Natural-log likelihood of a stream and its length (unknown tokens count as ``unk``)."""
        if isinstance(tokens, str):
            raise TypeError("tokens must be a sequence of tokens; for characters pass list(text)")
        tokens = list(tokens)
        if not tokens:
            raise ValueError("tokens is empty: perplexity needs at least one token")
        span = self.order - 1
        total = 0.0
        for t, token in enumerate(tokens):
            total += math.log(self.prob(token, tokens[max(0, t - span) : t]))
        return total, len(tokens)

    def perplexity(self, tokens: Sequence[Token]) -> float:
        """``exp(-(1/N) Σ log P(x_t | x_{t-n+1} … x_{t-1}))`` over the stream ``tokens``."""
        total, count = self.log_likelihood(tokens)
        return math.exp(-total / count)

    def sample(self, length: int, prefix: Sequence[Token] = (), seed: int = 0) -> list[Token]:
        """Draw ``length`` tokens one at a time from ``P(· | the last n-1 tokens)``."""
        check_int(length, "length", 0)
        rng = random.Random(seed)
        history = list(prefix)
        out: list[Token] = []
        for _ in range(length):
            weights = self.distribution(history[-(self.order - 1) :] if self.order > 1 else ())
            token = rng.choices(self.vocab, weights=weights.tolist())[0]
            out.append(token)
            history.append(token)
        return out

    def __repr__(self) -> str:
        return f"NGramLM(order={self.order}, smoothing={self.smoothing!r}, vocab={len(self.vocab)})"


def choose_add_k(
    tokens: Sequence[Token],
    order: int,
    k_choices: Sequence[float] = (1.0, 0.1, 0.01, 0.001),
    validation_fraction: float = 0.1,
) -> tuple[float, dict[float, float]]:
    """The ``k`` of add-k with the lowest perplexity on the last part of ``tokens``.

    The model is fitted on the first ``1 - validation_fraction`` of the tokens
    and scored on the rest, so the held-out text is never used to choose ``k``.
    Returns the chosen ``k`` and the validation perplexity of every choice.
    """
    if isinstance(tokens, str):
        raise TypeError(f"tokens must be {_SEQUENCE_HINT}")
    share = validation_fraction
    if not 0 < share < 1:
        raise ValueError(f"validation_fraction must be in (0, 1), got {share!r}")
    if len(k_choices) == 0:
        raise ValueError("k_choices is empty: give at least one k > 0")
    tokens = list(tokens)
    cut = int(len(tokens) * (1 - validation_fraction))
    fit_part, validation = tokens[:cut], tokens[cut:]  # the validation cut comes last
    scores = {}  # k → validation perplexity
    for k in k_choices:
        scores[float(k)] = NGramLM(fit_part, order, "add_k", k=k).perplexity(validation)
    return min(scores, key=scores.__getitem__), scores


@dataclass
class SmoothingComparison:
    """Held-out perplexities of add-k and Kneser–Ney, one entry per order."""

    orders: list[int]
    best_k: list[float]  # add-k's k, chosen on the validation cut
    add_k: list[float]  # held-out perplexity of add-k
    kneser_ney: list[float]  # held-out perplexity of Kneser–Ney
    validation_fraction: float
    discount: float


def compare_smoothing(
    train_tokens: Sequence[Token],
    held_out_tokens: Sequence[Token],
    orders: Sequence[int] = (1, 2, 3, 4),
    k_choices: Sequence[float] = (1.0, 0.1, 0.01, 0.001),
    validation_fraction: float = 0.1,
    discount: float = 0.75,
) -> SmoothingComparison:
    """Add-k against Kneser–Ney at each order, scored on ``held_out_tokens`` (5장).

    For add-k, ``k`` is chosen per order by :func:`choose_add_k` on the last
    ``validation_fraction`` of the training tokens; then both models are
    fitted on all the training tokens. Counting is deterministic: the same
    tokens give the same numbers.
    """
    best_k, add_k, kneser_ney = [], [], []
    for order in orders:
        k, _ = choose_add_k(train_tokens, order, k_choices, validation_fraction)
        best_k.append(k)
        smoothed = NGramLM(train_tokens, order, "add_k", k=k)
        add_k.append(smoothed.perplexity(held_out_tokens))
        kn = NGramLM(train_tokens, order, "kneser_ney", discount=discount)
        kneser_ney.append(kn.perplexity(held_out_tokens))
    return SmoothingComparison(
        list(orders), best_k, add_k, kneser_ney, validation_fraction, discount
    )
