"""1장 자연어와 시퀀스 데이터: order, discreteness and the shape of a vocabulary.

Small, exact tools the chapter uses to *measure* the properties of language it
describes: a bag of words forgets order, the chain rule keeps it, edit distance
shows that similar spellings say nothing about similar meanings, and Zipf's law
describes how a few tokens are everywhere and most are rare.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from course_utils.checks import check_int

__all__ = [
    "BigramModel",
    "ShuffleTest",
    "ZipfSummary",
    "bag_of_words",
    "chain_rule_log_prob",
    "edit_distance",
    "rank_frequency",
    "shuffle_test",
    "zipf_fit",
    "zipf_summary",
]


def _check_sequence(seq: object, name: str) -> Sequence[Hashable]:
    if not isinstance(seq, (str, Sequence)):
        raise TypeError(f"{name} must be a str or a sequence of tokens, got {type(seq).__name__}")
    return seq


def bag_of_words(tokens: Iterable[str]) -> Counter[str]:
    """Count tokens, forgetting their order."""
    if isinstance(tokens, str):
        raise TypeError("tokens must be a list of str, not one str: tokenize the text first")
    return Counter(tokens)


def edit_distance(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Levenshtein distance: fewest insertions, deletions and substitutions from ``a`` to ``b``.

    Works on strings (characters) and on token lists alike.
    """
    a = _check_sequence(a, "a")
    b = _check_sequence(b, "b")
    # previous[j] = distance between a[:i-1] and b[:j]; one row at a time.
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(
                min(
                    previous[j] + 1,  # delete x
                    current[j - 1] + 1,  # insert y
                    previous[j - 1] + (x != y),  # substitute (free if equal)
                )
            )
        previous = current
    return previous[-1]


def rank_frequency(tokens: Iterable[str]) -> list[tuple[str, int]]:
    """``(token, count)`` from most to least frequent, ties in order of first appearance."""
    return bag_of_words(tokens).most_common()


def zipf_fit(counts: Sequence[int], max_rank: int | None = None) -> tuple[float, float]:
    """Fit ``log f(r) = c - s log r`` by least squares; return ``(s, c)``.

    ``counts`` are frequencies sorted from the most frequent; ``max_rank`` limits
    the fit to the head, so that the long flat tail of count-1 tokens does not pull
    the slope (it makes ``s`` larger).
    """
    values = np.asarray(counts, dtype=float)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(
            f"counts must be a 1-D sequence of at least 2 frequencies, got {values.shape}"
        )
    if np.any(values <= 0) or np.any(np.diff(values) > 0):
        raise ValueError("counts must be positive and sorted from the most frequent")
    if max_rank is not None:
        if max_rank < 2:
            raise ValueError(f"max_rank must be >= 2, got {max_rank}")
        values = values[:max_rank]
    log_rank = np.log(np.arange(1, values.size + 1))
    log_freq = np.log(values)
    slope, intercept = np.polyfit(log_rank, log_freq, deg=1)
    return float(-slope), float(intercept)


@dataclass(frozen=True)
class ZipfSummary:
    """How skewed a token distribution is: the fit and the shares the chapter reports."""

    ranked: list[tuple[str, int]]  # (token, count), most frequent first
    exponent: float  # s of f(r) ∝ r^-s, fitted on the head
    intercept: float  # c of log f(r) = c - s log r
    top: int  # how many of the most frequent types top_share counts
    top_share: float  # share of all tokens taken by the top most frequent types
    half_rank: int  # fewest types (most frequent first) that cover half of all tokens
    singleton_share: float  # share of the types seen exactly once

    @property
    def counts(self) -> list[int]:
        return [count for _, count in self.ranked]


def zipf_summary(
    tokens: Iterable[str],
    top: int = 10,
    max_rank: int | None = 1000,
    min_count: int = 1,
) -> ZipfSummary:
    """Rank the tokens, fit Zipf's law on the head of the ranks, and measure coverage.

    The fit reads the first ``max_rank`` ranks (all with None) among the tokens
    seen at least ``min_count`` times: with ``min_count=2`` it leaves out the
    flat tail of tokens seen once, which would pull the slope up.
    """
    check_int(top, "top")
    check_int(min_count, "min_count")
    ranked = rank_frequency(tokens)
    counts = np.array([count for _, count in ranked])
    if counts.size < 2:
        raise ValueError(f"need at least 2 distinct tokens, got {counts.size}")
    head = counts[counts >= min_count]
    if head.size < 2:
        raise ValueError(
            f"need at least 2 distinct tokens seen {min_count}+ times to fit, got {head.size}"
        )
    exponent, intercept = zipf_fit(head.tolist(), max_rank=max_rank)
    covered = np.cumsum(counts) / counts.sum()  # covered[k - 1]: share of the top k
    return ZipfSummary(
        ranked=ranked,
        exponent=exponent,
        intercept=intercept,
        top=top,
        top_share=float(covered[min(top, counts.size) - 1]),
        half_rank=int(np.searchsorted(covered, 0.5) + 1),
        singleton_share=float(np.mean(counts == 1)),
    )


def chain_rule_log_prob(
    sequence: Sequence[Hashable],
    cond_log_prob: Callable[[Sequence[Hashable], Hashable], float],
) -> float:
    """``log P(x_1..x_T) = Σ_t log P(x_t | x_<t)``: the chain rule of probability.

    ``cond_log_prob(history, token)`` returns ``log P(token | history)``.
    """
    sequence = _check_sequence(sequence, "sequence")
    terms = (cond_log_prob(sequence[:t], sequence[t]) for t in range(len(sequence)))
    return float(sum(terms))


class BigramModel:
    """A Markov model of order 1 with add-α smoothing: ``P(x_t | x_<t) = P(x_t | x_{t-1})``.

    The first symbol uses the unigram distribution. Chapter 5 builds the general
    n-gram model; here it only shows that order carries information.
    """

    def __init__(self, sequences: Iterable[Sequence[Hashable]], alpha: float = 1.0) -> None:
        if isinstance(sequences, str):
            raise TypeError("sequences must be a list of sequences (e.g. list of str lines)")
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        self.alpha = float(alpha)
        self.unigrams: Counter[Hashable] = Counter()
        self.bigrams: Counter[tuple[Hashable, Hashable]] = Counter()
        for seq in sequences:
            _check_sequence(seq, "each sequence")
            self.unigrams.update(seq)
            self.bigrams.update(pairwise(seq))
        if not self.unigrams:
            raise ValueError("sequences are empty: the model needs at least one symbol")
        self.vocab = sorted(self.unigrams, key=str)
        self._context_totals: Counter[Hashable] = Counter()
        for (prev, _), count in self.bigrams.items():
            self._context_totals[prev] += count
        self._total = sum(self.unigrams.values())

    def log_prob(self, history: Sequence[Hashable], token: Hashable) -> float:
        """``log P(token | history)`` using only the last symbol of ``history``."""
        size = len(self.vocab)
        if token not in self.unigrams:
            raise KeyError(
                f"{token!r} was never seen in training; the model's vocabulary is closed"
            )
        if len(history) == 0:
            return math.log((self.unigrams[token] + self.alpha) / (self._total + self.alpha * size))
        prev = history[-1]
        numerator = self.bigrams[(prev, token)] + self.alpha
        return math.log(numerator / (self._context_totals[prev] + self.alpha * size))

    def sequence_log_prob(self, sequence: Sequence[Hashable]) -> float:
        """Log-probability of a whole sequence by the chain rule."""
        return chain_rule_log_prob(sequence, self.log_prob)


@dataclass(frozen=True)
class ShuffleTest:
    """The log-probability of a sentence and of shuffles of its own characters."""

    original: float
    shuffled: list[float]

    @property
    def beaten(self) -> float:
        """Share of the shuffles that score below the original order."""
        return float(np.mean(np.array(self.shuffled) < self.original))


def shuffle_test(
    model: BigramModel, sentence: str, n_shuffles: int = 200, seed: int = 0
) -> ShuffleTest:
    """Score ``sentence`` and ``n_shuffles`` random orders of the same characters.

    Same characters, same counts, only the order differs: whatever separates the
    scores is information carried by the order.
    """
    if not isinstance(sentence, str) or len(sentence) < 2:
        raise ValueError(f"sentence must be a str of 2+ characters, got {sentence!r}")
    check_int(n_shuffles, "n_shuffles")
    rng = random.Random(seed)
    shuffled = []
    for _ in range(n_shuffles):
        chars = list(sentence)
        rng.shuffle(chars)
        shuffled.append(model.sequence_log_prob("".join(chars)))
    return ShuffleTest(model.sequence_log_prob(sentence), shuffled)
