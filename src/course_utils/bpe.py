"""2장 텍스트 전처리와 토큰화: byte-pair encoding (BPE) from scratch.

Sennrich, Haddow and Birch (2016): start from characters, then repeatedly
merge the most frequent pair of adjacent symbols. Each word ends with an
end-of-word symbol ``</w>`` so that a suffix (``est</w>``) and the same letters
inside a word (``est`` in ``establish``) become different subwords.

Ties between equally frequent pairs go to the pair that sorts first, so the
merge table is the same on every run.

:func:`compare_tokenizations` is the chapter's closing experiment: eojeols,
morphemes, this BPE and SentencePiece's BPE and unigram models, measured on
held-out text by their out-of-vocabulary rate and sequence length.
"""

from __future__ import annotations

import heapq
import io
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from course_utils.checks import check_int
from course_utils.vocab import oov_rate

__all__ = [
    "BPE",
    "END_OF_WORD",
    "TokenizationComparison",
    "TokenizationRow",
    "compare_tokenizations",
    "count_pairs",
    "merge_pair",
    "train_bpe",
    "train_bpe_to_size",
    "train_sentencepiece",
]

END_OF_WORD = "</w>"

Symbols = tuple[str, ...]
Pair = tuple[str, str]


def _word_counts(corpus: Mapping[str, int] | Iterable[str]) -> Counter[str]:
    if isinstance(corpus, str):
        raise TypeError("corpus must be a list of words or a {word: count} mapping, not one str")
    counts: Counter[str] = Counter()
    if isinstance(corpus, Mapping):
        for word, count in corpus.items():
            check_int(count, f"the count of {word!r}")
            counts[word] += count
    else:
        for word in corpus:
            counts[word] += 1
    for word in counts:
        if not isinstance(word, str):
            raise TypeError(f"words must be str, got {type(word).__name__}")
        if not word or any(ch.isspace() for ch in word):
            raise ValueError(f"words must be non-empty and contain no white space, got {word!r}")
    return counts


def count_pairs(words: Mapping[Symbols, int]) -> Counter[Pair]:
    """Count adjacent symbol pairs, each weighted by its word's frequency."""
    pairs: Counter[Pair] = Counter()
    for symbols, count in words.items():
        for pair in pairwise(symbols):
            pairs[pair] += count
    return pairs


def _merge_symbols(symbols: Sequence[str], pair: Pair) -> Symbols:
    """Replace every occurrence of ``pair`` in ``symbols``, left to right."""
    merged: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            merged.append(pair[0] + pair[1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return tuple(merged)


def merge_pair(pair: Pair, words: Mapping[Symbols, int]) -> dict[Symbols, int]:
    """One BPE step: merge ``pair`` everywhere it occurs in ``words``."""
    return {_merge_symbols(symbols, pair): count for symbols, count in words.items()}


def _check_no_marker(word: str, marker: str) -> None:
    # A word that contains the marker could not be told apart from a word end when decoding.
    if marker in word:
        raise ValueError(
            f"word {word!r} contains the end-of-word marker {marker!r}, which BPE uses to mark "
            "where a word ends: remove or replace it before training or encoding"
        )


@dataclass
class BPE:
    """A trained BPE model: the ordered merge table and how to apply it."""

    merges: list[Pair]
    #: ``(pair, frequency)`` at the moment each merge was chosen, for the merge table.
    history: list[tuple[Pair, int]] = field(default_factory=list)
    alphabet: list[str] = field(default_factory=list)
    end_of_word: str = END_OF_WORD

    def __post_init__(self) -> None:
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self._cache: dict[str, list[str]] = {}

    @property
    def symbols(self) -> list[str]:
        """Every subword the model can produce: the alphabet, ``</w>``, then merges in order."""
        merged = [a + b for a, b in self.merges]
        base = [*self.alphabet, self.end_of_word]
        return base + [s for s in dict.fromkeys(merged) if s not in set(base)]

    def encode_word(self, word: str) -> list[str]:
        """Split one word into subwords by applying the merges in the order they were learned."""
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        if not word or any(ch.isspace() for ch in word):
            raise ValueError(f"word must be non-empty and contain no white space, got {word!r}")
        _check_no_marker(word, self.end_of_word)
        cached = self._cache.get(word)
        if cached is not None:
            return list(cached)
        symbols: Symbols = (*word, self.end_of_word)
        while len(symbols) > 1:
            ranked = [
                (self._ranks[pair], pair) for pair in pairwise(symbols) if pair in self._ranks
            ]
            if not ranked:
                break
            _, best = min(ranked)
            symbols = _merge_symbols(symbols, best)
        self._cache[word] = list(symbols)
        return list(symbols)

    def encode(self, words: Sequence[str]) -> list[str]:
        """Split pre-tokenized words (``text.split()``, morphemes, …) into subwords."""
        if isinstance(words, str):
            raise TypeError("words must be a list of words, not one str: split the text first")
        return [piece for word in words for piece in self.encode_word(word)]

    def decode(self, pieces: Sequence[str]) -> list[str]:
        """Join subwords back into words at each end-of-word marker."""
        if isinstance(pieces, str):
            raise TypeError("pieces must be a list of subwords, not one str")
        words: list[str] = []
        current = ""
        for position, piece in enumerate(pieces):
            if not isinstance(piece, str):
                kind = type(piece).__name__
                raise TypeError(f"pieces must be str subwords, got {kind} at position {position}")
            if piece.endswith(self.end_of_word):
                words.append(current + piece[: -len(self.end_of_word)])
                current = ""
            else:
                current += piece
        if current:
            raise ValueError(
                f"pieces end in the middle of a word: {current!r} has no {self.end_of_word}"
            )
        return words


def train_bpe(
    corpus: Mapping[str, int] | Iterable[str],
    num_merges: int,
    min_frequency: int = 2,
) -> BPE:
    """Learn up to ``num_merges`` merges from words or a ``{word: count}`` mapping.

    Training stops early when no pair occurs at least ``min_frequency`` times.
    Pair counts are updated incrementally (only words containing the merged
    pair are touched), so a few thousand merges on a chapter-sized corpus take
    seconds; the result is identical to recounting every pair at every step.
    """
    check_int(num_merges, "num_merges", 0)
    check_int(min_frequency, "min_frequency")
    counts = _word_counts(corpus)
    if not counts:
        raise ValueError("corpus is empty: BPE needs at least one word to learn from")
    for word in counts:
        _check_no_marker(word, END_OF_WORD)

    words: list[Symbols] = [(*word, END_OF_WORD) for word in counts]
    freqs: list[int] = list(counts.values())
    alphabet = sorted({ch for word in counts for ch in word})

    pair_counts: Counter[Pair] = Counter()
    where: dict[Pair, set[int]] = {}
    for index, symbols in enumerate(words):
        for pair in pairwise(symbols):
            pair_counts[pair] += freqs[index]
            where.setdefault(pair, set()).add(index)
    # Max-heap by count, ties to the smallest pair; stale entries are skipped.
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    merges: list[Pair] = []
    history: list[tuple[Pair, int]] = []
    while len(merges) < num_merges and heap:
        negative, best = heapq.heappop(heap)
        if pair_counts.get(best, 0) != -negative:
            continue  # stale: the count changed after this entry was pushed
        if -negative < min_frequency:
            break
        merges.append(best)
        history.append((best, -negative))
        changed: set[Pair] = set()
        for index in sorted(where.pop(best, set())):
            old = words[index]
            new = _merge_symbols(old, best)
            freq = freqs[index]
            for pair in pairwise(old):
                pair_counts[pair] -= freq
                changed.add(pair)
            for pair in pairwise(new):
                pair_counts[pair] += freq
                where.setdefault(pair, set()).add(index)
                changed.add(pair)
            words[index] = new
        for pair in changed:
            count = pair_counts[pair]
            if count > 0:
                heapq.heappush(heap, (-count, pair))
            else:
                del pair_counts[pair]
                where.pop(pair, None)
    return BPE(merges=merges, history=history, alphabet=alphabet)


def train_bpe_to_size(
    corpus: Mapping[str, int] | Iterable[str], vocab_size: int, min_frequency: int = 2
) -> BPE:
    """Learn BPE up to ``vocab_size`` subwords: the alphabet, ``</w>``, then one per merge."""
    counts = _word_counts(corpus)
    alphabet_size = len({ch for word in counts for ch in word})
    check_int(vocab_size, "vocab_size", least=0)
    num_merges = vocab_size - alphabet_size - 1  # the alphabet and </w> come first
    if num_merges < 0:
        least = alphabet_size + 1
        raise ValueError(f"vocab_size {vocab_size} < {least}, the alphabet and </w>")
    return train_bpe(counts, num_merges, min_frequency)


def train_sentencepiece(lines: Sequence[str], model_type: str, vocab_size: int) -> Any:
    """Train a SentencePiece model in memory (no files) on raw lines."""
    import sentencepiece as spm

    if isinstance(lines, str):
        raise TypeError("lines must be a list of str lines, not one str: split it")
    if model_type not in ("bpe", "unigram"):
        raise ValueError(f"model_type must be 'bpe' or 'unigram', got {model_type!r}")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=1.0,  # every character of the training text gets a piece
        minloglevel=2,  # no training log
    )
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


@dataclass(frozen=True)
class TokenizationRow:
    """One tokenization measured on the held-out text."""

    name: str
    vocab_size: int
    tokens: int  # tokens in the held-out text
    oov_rate: float  # share of those tokens missing from the vocabulary
    tokens_per_eojeol: float  # how much longer the sequence gets than in eojeols


@dataclass
class TokenizationComparison:
    """The table of :func:`compare_tokenizations` and the subword models it trained."""

    rows: dict[str, TokenizationRow]
    bpe: BPE
    bpe_seconds: float  # time to train ``bpe``
    sentencepiece: dict[str, Any]  # "bpe" and "unigram" SentencePieceProcessors
    vocab_size: int
    held_out_eojeols: int


def compare_tokenizations(
    train_lines: Sequence[str],
    held_out_lines: Sequence[str],
    train_morphemes: Sequence[Sequence[str]],
    held_out_morphemes: Sequence[Sequence[str]],
    vocab_size: int = 2000,
) -> TokenizationComparison:
    """Build each tokenization's vocabulary on the training lines; measure the held-out lines.

    Rows: ``"eojeol"`` (white-space words), ``"morpheme"`` (the morphemes given,
    one list per line), ``"bpe"`` (:func:`train_bpe_to_size` on the training
    eojeols) and SentencePiece's ``"sentencepiece-bpe"`` and
    ``"sentencepiece-unigram"``, all three subword models of ``vocab_size``.
    """
    lengths = (len(train_morphemes), len(held_out_morphemes))
    if lengths != (len(train_lines), len(held_out_lines)):
        raise ValueError("give one list of morphemes per line, for every line")
    train_eojeols = [word for line in train_lines for word in line.split()]
    held_out_eojeols = [word for line in held_out_lines for word in line.split()]
    if not train_eojeols or not held_out_eojeols:
        raise ValueError("train_lines and held_out_lines must both contain words")
    start = time.perf_counter()
    bpe = train_bpe_to_size(train_eojeols, vocab_size)
    bpe_seconds = time.perf_counter() - start
    held_out_pieces = bpe.encode(held_out_eojeols)
    morphemes = [m for sentence in held_out_morphemes for m in sentence]
    tokens_and_vocab = {
        "eojeol": (held_out_eojeols, set(train_eojeols)),
        "morpheme": (morphemes, {m for sentence in train_morphemes for m in sentence}),
        "bpe": (held_out_pieces, set(bpe.symbols)),
    }
    rows = {
        name: TokenizationRow(
            name,
            len(vocab),
            len(tokens),
            oov_rate(tokens, vocab),
            len(tokens) / len(held_out_eojeols),
        )
        for name, (tokens, vocab) in tokens_and_vocab.items()
    }
    sentencepiece = {}
    for model_type in ("bpe", "unigram"):
        processor = train_sentencepiece(train_lines, model_type, vocab_size)
        ids = [i for line in held_out_lines for i in processor.encode(line)]
        unknown = sum(i == processor.unk_id() for i in ids)  # characters never seen
        rows[f"sentencepiece-{model_type}"] = TokenizationRow(
            f"sentencepiece-{model_type}",
            processor.get_piece_size(),
            len(ids),
            unknown / len(ids),
            len(ids) / len(held_out_eojeols),
        )
        sentencepiece[model_type] = processor
    return TokenizationComparison(
        rows, bpe, bpe_seconds, sentencepiece, vocab_size, len(held_out_eojeols)
    )
