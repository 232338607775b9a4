"""9장 Seq2seq: 인코더-디코더 — the model, its decoding and its evaluation.

The model (Cho et al., 2014; Sutskever et al., 2014) reads the source with a
GRU encoder (``torch.nn.GRU``: 8장 proved our own equal to it) and squeezes it
into one context vector; the decoder generates the target one token at a time
from that vector and the tokens before, so that
``log P(y | x) = sum_t log P(y_t | y_<t, x)``. Every encoder-decoder of 9장 and
10장 speaks one small protocol, so that training and every decoder below
(greedy, beam search with length normalisation, sampling) work for all of them:

- ``encode(source, source_lengths) -> Memory`` reads the source once;
- ``init_state(memory) -> State`` gives the decoder's first state;
- ``step(tokens, state, memory) -> (logits, state, weights)`` predicts the
  next token from the previous one; ``weights`` are the attention weights
  over the source (``None`` without attention).

The vocabularies start with :data:`course_utils.vocab.SEQ_SPECIALS`, so
``<pad>`` is 0, ``<unk>`` 1, ``<sos>`` 2 and ``<eos>`` 3.

BLEU (Papineni et al., 2002) from scratch, equal to
``sacrebleu.corpus_bleu(..., tokenize="none")`` on every input:

- the modified n-gram precision clips each hypothesis n-gram's count by the
  most times it occurs in any one reference (:func:`modified_precision`);
- clipped matches and n-gram totals are summed over the whole corpus before
  dividing, so BLEU is a corpus-level score, not a mean of sentence scores;
- the brevity penalty compares the corpus's hypothesis length with the sum of
  each sentence's closest reference length (ties go to the shorter one);
- the score is the brevity penalty times the geometric mean of the n = 1..4
  precisions (``max_n = 4``), on sacrebleu's 0–100 scale.

Sentences are token lists. The references of sentence ``i`` are
``references[i]``: a list of token lists, or, for the common case of one
reference, just that reference's token list. Tokens are non-empty strings
without whitespace, which is exactly what sacrebleu's ``tokenize="none"`` gets
back from ``" ".join(tokens).split()``.

"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from course_utils import runs
from course_utils.bpe import train_sentencepiece
from course_utils.device import get_device, run_size, seed_everything
from course_utils.gettext_corpus import GettextPair, gettext_splits
from course_utils.train import History, fit
from course_utils.translation_data import (
    Pair,
    Splits,
    make_splits,
    source_vocabulary,
    target_vocabulary,
)
from course_utils.vocab import SEQ_SPECIALS, Vocab

__all__ = [
    "EOS",
    "GETTEXT_MAX_TOKENS",
    "GETTEXT_VOCAB_SIZE",
    "LENGTH_BINS",
    "PAD",
    "SMOOTH_METHODS",
    "SOS",
    "TRANSLATION_CONFIGS",
    "UNK",
    "BLEUScore",
    "BLEUTiming",
    "Batch",
    "Decoded",
    "Encoder",
    "EncoderDecoder",
    "Example",
    "LengthRow",
    "Memory",
    "ModelMaker",
    "ParallelData",
    "Seq2Seq",
    "State",
    "TeacherForcingRun",
    "TrainConfig",
    "TranslationConfig",
    "TranslationScores",
    "allowed_log_probs",
    "beam_search",
    "brevity_penalty",
    "check_source",
    "closest_reference_length",
    "corpus_bleu",
    "decode_one_token_at_a_time",
    "encode_pair",
    "evaluate_model",
    "exact_match",
    "generated_data",
    "gettext_data",
    "greedy_decode",
    "make_batch",
    "make_batches",
    "modified_precision",
    "new_seq2seq",
    "ngram_counts",
    "normalized_score",
    "sample_decode",
    "score_translations",
    "scores_by_length",
    "sentence_bleu",
    "sequence_loss",
    "teacher_forcing_sweep",
    "time_against_sacrebleu",
    "token_accuracy",
    "train_in_parallel",
    "train_model",
    "train_seq2seq",
    "translate",
    "translation_config",
]

Tokens = Sequence[str]
NGram = tuple[str, ...]

# Smoothing of zero n-gram matches, named and defaulted as in sacrebleu
# (Chen and Cherry, 2014): the value each method uses when none is given.
SMOOTH_METHODS: dict[str, float | None] = {"exp": None, "floor": 0.1, "add-k": 1, "none": None}


@dataclass(frozen=True)
class BLEUScore:
    """BLEU and its sufficient statistics; the fields are named as in sacrebleu's ``BLEUScore``."""

    score: float  # BLEU on a 0–100 scale
    counts: tuple[int, ...]  # clipped n-gram matches over the corpus, n = 1..max_n
    totals: tuple[int, ...]  # hypothesis n-grams over the corpus, n = 1..max_n
    precisions: tuple[float, ...]  # smoothed modified precisions in percent, n = 1..max_n
    bp: float  # brevity penalty
    sys_len: int  # hypothesis tokens in the corpus
    ref_len: int  # sum of the closest reference lengths


@dataclass(frozen=True)
class BLEUTiming:
    """Median seconds of one corpus BLEU, ours and sacrebleu's, on the same corpus."""

    ours_seconds: float
    sacrebleu_seconds: float
    sentences: int

    @property
    def ratio(self) -> float:
        """Our time over sacrebleu's: below 1 means ours is faster."""
        return self.ours_seconds / self.sacrebleu_seconds


def _check_tokens(tokens: object, name: str) -> Tokens:
    if isinstance(tokens, str):
        raise TypeError(f"{name} must be a list of tokens, not one str; split it first: {tokens!r}")
    if not isinstance(tokens, (list, tuple)):
        raise TypeError(f"{name} must be a list of str tokens, got {type(tokens).__name__}")
    try:
        # One C-level pass checks the types, and the split must give the tokens back.
        rejoined = " ".join(tokens)
    except TypeError:
        bad = next(t for t in tokens if not isinstance(t, str))
        raise TypeError(f"{name} must hold str tokens, got {type(bad).__name__}: {bad!r}") from None
    if len(rejoined.split()) != len(tokens):
        bad = next(t for t in tokens if not t or len(t.split()) != 1)
        raise ValueError(f"{name}: tokens must be non-empty and without whitespace, got {bad!r}")
    return tokens


def _check_n(n: object, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name} must be an int >= 1, got {n!r}")
    return n


def _reference_list(references: object, name: str) -> list[Tokens]:
    """One sentence's references as a list of token lists (one reference may be given bare)."""
    if isinstance(references, str) or not isinstance(references, (list, tuple)):
        raise TypeError(
            f"{name} must be a token list (one reference) or a list of token lists, "
            f"got {type(references).__name__}"
        )
    if not references:
        raise ValueError(f"{name} is empty; give [[]] for one empty reference")
    if isinstance(references[0], str):  # one reference, given as its token list
        return [_check_tokens(references, name)]
    return [_check_tokens(ref, f"{name}[{j}]") for j, ref in enumerate(references)]


def _per_sentence(value: object, name: str) -> list[object] | tuple[object, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list with one entry per sentence")
    return value


def _corpus(hypotheses: object, references: object) -> tuple[list[Tokens], list[list[Tokens]]]:
    hyps_in = _per_sentence(hypotheses, "hypotheses")
    refs_in = _per_sentence(references, "references")
    if len(hyps_in) != len(refs_in):
        raise ValueError(
            f"got {len(hyps_in)} hypotheses but {len(refs_in)} reference sets; "
            "give one reference set per hypothesis"
        )
    if not hyps_in:
        raise ValueError("the corpus is empty: give at least one hypothesis")
    hyps = [_check_tokens(h, f"hypotheses[{i}]") for i, h in enumerate(hyps_in)]
    refs = [_reference_list(r, f"references[{i}]") for i, r in enumerate(refs_in)]
    return hyps, refs


def _ngram_counts(tokens: Tokens, n: int) -> Counter[NGram]:
    # The n copies of the sentence, each shifted by one more token, zipped
    # together give the n-grams; zip stops at the shortest copy.
    return Counter(zip(*(tokens[i:] for i in range(n)), strict=False))


def ngram_counts(tokens: Tokens, n: int) -> Counter[NGram]:
    """How often each n-gram (a tuple of n tokens) occurs in ``tokens``."""
    return _ngram_counts(_check_tokens(tokens, "tokens"), _check_n(n))


def _modified_precision(hypothesis: Tokens, references: list[Tokens], n: int) -> tuple[int, int]:
    hyp_counts = _ngram_counts(hypothesis, n)
    max_ref_counts = _ngram_counts(references[0], n)
    for ref in references[1:]:
        max_ref_counts |= _ngram_counts(ref, n)  # | keeps the larger count
    clipped = sum(min(count, max_ref_counts[ngram]) for ngram, count in hyp_counts.items())
    return clipped, max(len(hypothesis) - n + 1, 0)


def modified_precision(hypothesis: Tokens, references: object, n: int) -> tuple[int, int]:
    """Clipped n-gram matches and the number of n-grams of one hypothesis.

    Each hypothesis n-gram counts at most as often as it occurs in the reference
    that has it most often; the precision is ``matches / total``.
    """
    hyp = _check_tokens(hypothesis, "hypothesis")
    return _modified_precision(hyp, _reference_list(references, "references"), _check_n(n))


def closest_reference_length(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length closest to ``hyp_len``; of two equally close, the shorter."""
    if not ref_lens:
        raise ValueError("ref_lens is empty: a sentence needs at least one reference")
    return min(ref_lens, key=lambda ref_len: (abs(ref_len - hyp_len), ref_len))


def brevity_penalty(hyp_len: int, ref_len: int) -> float:
    """``exp(1 - r / c)`` for a hypothesis length c shorter than the reference length r, else 1.

    An empty hypothesis (c = 0) against a non-empty reference gets 0.
    """
    for value, name in ((hyp_len, "hyp_len"), (ref_len, "ref_len")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    if hyp_len >= ref_len:
        return 1.0
    return math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0


def _check_smoothing(smooth_method: object, smooth_value: object) -> float | None:
    if smooth_method not in SMOOTH_METHODS:
        raise ValueError(
            f"smooth_method must be one of {list(SMOOTH_METHODS)}, got {smooth_method!r}"
        )
    if smooth_value is None:
        return SMOOTH_METHODS[smooth_method]
    if SMOOTH_METHODS[smooth_method] is None:
        raise ValueError(f"smooth_method={smooth_method!r} takes no smooth_value")
    if isinstance(smooth_value, bool) or not isinstance(smooth_value, (int, float)):
        raise TypeError(f"smooth_value must be a number, got {smooth_value!r}")
    if not smooth_value > 0:
        raise ValueError(f"smooth_value must be > 0, got {smooth_value!r}")
    return smooth_value


def _bleu_from_statistics(
    counts: list[int],
    totals: list[int],
    sys_len: int,
    ref_len: int,
    smooth_method: str,
    smooth_value: float | None,
    effective_order: bool,
) -> BLEUScore:
    """BLEU from the corpus sums, computed in sacrebleu's ``compute_bleu`` order of operations."""
    max_n = len(counts)
    bp = brevity_penalty(sys_len, ref_len)
    precisions = [0.0] * max_n
    if not any(counts):
        return BLEUScore(0.0, tuple(counts), tuple(totals), tuple(precisions), bp, sys_len, ref_len)

    exp_divisor = 1.0  # 'exp' halves the precision of each further order without matches
    used_orders = max_n
    for n in range(1, max_n + 1):
        matches: float = counts[n - 1]
        total: float = totals[n - 1]
        if smooth_method == "add-k" and n > 1:
            assert smooth_value is not None
            matches, total = matches + smooth_value, total + smooth_value
        if total == 0:
            break  # no hypothesis has n tokens: this and higher orders keep precision 0
        if effective_order:
            used_orders = n
        if matches > 0:
            precisions[n - 1] = 100.0 * matches / total
        elif smooth_method == "exp":
            exp_divisor *= 2
            precisions[n - 1] = 100.0 / (exp_divisor * total)
        elif smooth_method == "floor":
            assert smooth_value is not None
            precisions[n - 1] = 100.0 * smooth_value / total

    used = precisions[:used_orders]
    # The geometric mean in logs; one zero precision makes it 0.
    score = 0.0 if 0.0 in used else bp * math.exp(sum([math.log(p) for p in used]) / used_orders)
    return BLEUScore(score, tuple(counts), tuple(totals), tuple(precisions), bp, sys_len, ref_len)


def corpus_bleu(
    hypotheses: Sequence[Tokens],
    references: Sequence[object],
    max_n: int = 4,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> BLEUScore:
    """Corpus BLEU of token-list ``hypotheses`` against ``references`` (one entry per sentence).

    ``references[i]`` is a list of token lists, or one token list for a single
    reference. Matches and totals are summed over the corpus before dividing.
    The arguments after ``max_n`` mean what they mean in sacrebleu; with
    ``effective_order`` the geometric mean stops at the longest n-gram order
    the hypotheses have.
    """
    hyps, refs = _corpus(hypotheses, references)
    max_n = _check_n(max_n, "max_n")
    value = _check_smoothing(smooth_method, smooth_value)
    counts, totals = [0] * max_n, [0] * max_n
    sys_len = ref_len = 0
    for hyp, hyp_refs in zip(hyps, refs, strict=True):
        sys_len += len(hyp)
        ref_len += closest_reference_length(len(hyp), [len(ref) for ref in hyp_refs])
        for n in range(1, max_n + 1):
            matches, total = _modified_precision(hyp, hyp_refs, n)
            counts[n - 1] += matches
            totals[n - 1] += total
    return _bleu_from_statistics(
        counts, totals, sys_len, ref_len, smooth_method, value, bool(effective_order)
    )


def sentence_bleu(
    hypothesis: Tokens,
    references: object,
    max_n: int = 4,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
) -> BLEUScore:
    """BLEU of one sentence, with sacrebleu's ``sentence_bleu`` defaults (effective order on).

    BLEU is meant for corpora; one sentence's score is noisy and shown only as an example.
    """
    return corpus_bleu([hypothesis], [references], max_n, smooth_method, smooth_value, True)


def exact_match(hypotheses: Sequence[Tokens], references: Sequence[object]) -> float:
    """The fraction of hypotheses equal, token for token, to one of their references."""
    hyps, refs = _corpus(hypotheses, references)
    pairs = zip(hyps, refs, strict=True)
    hits = sum(tuple(hyp) in {tuple(ref) for ref in hyp_refs} for hyp, hyp_refs in pairs)
    return hits / len(hyps)


def _sacrebleu_inputs(
    hyps: list[Tokens], refs: list[list[Tokens]]
) -> tuple[list[str], list[list[str | None]]]:
    """Sentences as sacrebleu takes them: strings, and one reference stream per reference slot."""
    streams: list[list[str | None]] = [[None] * len(refs) for _ in range(max(map(len, refs)))]
    for i, hyp_refs in enumerate(refs):
        for j, ref in enumerate(hyp_refs):
            streams[j][i] = " ".join(ref)
    return [" ".join(hyp) for hyp in hyps], streams


def time_against_sacrebleu(
    hypotheses: Sequence[Tokens], references: Sequence[object], repeats: int = 7
) -> BLEUTiming:
    """Median seconds of our :func:`corpus_bleu` and ``sacrebleu.corpus_bleu`` on one corpus.

    Ours gets the token lists, sacrebleu the joined strings with ``tokenize="none",
    force=True`` (each its own input form, prepared before timing); the two
    alternate ``repeats`` times after one warm-up each, so a change of load hits
    both alike. Raises if the scores differ.
    """
    import sacrebleu

    repeats = _check_n(repeats, "repeats")
    hyps, refs = _corpus(hypotheses, references)
    hyp_strings, ref_streams = _sacrebleu_inputs(hyps, refs)

    def ours() -> float:
        return corpus_bleu(hyps, refs).score

    def theirs() -> float:
        # None marks a sentence's missing reference in a stream, as sacrebleu allows;
        # force=True because our sentences are tokenized on purpose (no warning).
        result = sacrebleu.corpus_bleu(
            hyp_strings,
            ref_streams,  # type: ignore[arg-type]
            tokenize="none",
            force=True,
        )
        return float(result.score)

    if not math.isclose(ours(), theirs(), rel_tol=0.0, abs_tol=1e-9):
        raise RuntimeError("our BLEU and sacrebleu's differ on this corpus")
    ours_seconds: list[float] = []
    theirs_seconds: list[float] = []
    for _ in range(repeats):
        for run, seconds in ((ours, ours_seconds), (theirs, theirs_seconds)):
            start = time.perf_counter()
            run()
            seconds.append(time.perf_counter() - start)
    return BLEUTiming(statistics.median(ours_seconds), statistics.median(theirs_seconds), len(hyps))


# ---------------------------------------------------------------------------
# Data: token ids, padding and batches
# ---------------------------------------------------------------------------

PAD, UNK, SOS, EOS = range(4)  # the ids of SEQ_SPECIALS in every vocabulary


class Batch(NamedTuple):
    """A padded batch of (source, target) id sequences; ``<pad>`` (0) fills the tails."""

    source: torch.Tensor  # (B, S) source ids
    source_lengths: torch.Tensor  # (B,) real source lengths, on the CPU (packing wants them there)
    target_in: torch.Tensor  # (B, T) decoder input: <sos> y_1 … y_n
    target_out: torch.Tensor  # (B, T) what it must predict: y_1 … y_n <eos>

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            self.source.to(device),
            self.source_lengths,
            self.target_in.to(device),
            self.target_out.to(device),
        )


Example = tuple[Sequence[int], Sequence[int]]  # (source ids, target ids ending in <eos>)


def _check_ids(ids: object, name: str) -> Sequence[int]:
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"{name} must be a sequence of int token ids, got {type(ids).__name__}")
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"{name} must hold int token ids, found {type(i).__name__}: {i!r}")
    return ids


def encode_pair(
    source: Sequence[str], target: Sequence[str], source_vocab: Vocab, target_vocab: Vocab
) -> tuple[list[int], list[int]]:
    """Token lists → id lists; the target gets its closing ``<eos>``."""
    for vocab, name in ((source_vocab, "source_vocab"), (target_vocab, "target_vocab")):
        if tuple(vocab.specials[:4]) != SEQ_SPECIALS:
            raise ValueError(
                f"{name} must start with {SEQ_SPECIALS} (ids 0-3), got {tuple(vocab.specials)}"
            )
    return source_vocab.encode(list(source)), [*target_vocab.encode(list(target)), EOS]


def make_batch(examples: Sequence[Example]) -> Batch:
    """Pad a list of (source ids, target ids) into a :class:`Batch`.

    Every source must be non-empty and every target must end with ``<eos>``
    (and hold no ``<pad>`` or ``<sos>``): the decoder learns to stop only from
    that final ``<eos>``.
    """
    if isinstance(examples, (str, bytes)) or not isinstance(examples, Sequence) or not examples:
        raise ValueError("examples must be a non-empty list of (source ids, target ids) pairs")
    sources, targets = [], []
    for i, example in enumerate(examples):
        if not isinstance(example, (tuple, list)) or len(example) != 2:
            raise TypeError(f"examples[{i}] must be a (source ids, target ids) pair")
        source = _check_ids(example[0], f"examples[{i}] source")
        target = _check_ids(example[1], f"examples[{i}] target")
        if not source:
            raise ValueError(f"examples[{i}] has an empty source: there is nothing to encode")
        if PAD in source:
            raise ValueError(f"examples[{i}] source contains <pad> (id {PAD}) before its end")
        if not target or target[-1] != EOS:
            raise ValueError(
                f"examples[{i}] target must end with <eos> (id {EOS}), got {list(target)[-3:]}"
            )
        if PAD in target or SOS in target or EOS in target[:-1]:
            raise ValueError(
                f"examples[{i}] target may hold <pad> ({PAD}), <sos> ({SOS}) or <eos> ({EOS}) "
                f"only as its final <eos>, got {list(target)}"
            )
        sources.append(torch.tensor(source, dtype=torch.long))
        targets.append(torch.tensor(target, dtype=torch.long))
    source_lengths = torch.tensor([len(s) for s in sources])
    source_batch = pad_sequence(sources, batch_first=True, padding_value=PAD)  # (B, S)
    target_out = pad_sequence(targets, batch_first=True, padding_value=PAD)  # (B, T)
    target_in = torch.cat(  # shift right: <sos> y_1 … y_n; pads stay pads
        [torch.full((len(targets), 1), SOS), target_out[:, :-1]], dim=1
    ).masked_fill(target_out == PAD, PAD)
    return Batch(source_batch, source_lengths, target_in, target_out)


def make_batches(
    examples: Sequence[Example], batch_size: int, shuffle: bool = False, seed: int = 0
) -> list[Batch]:
    """Cut ``examples`` into padded batches of ``batch_size`` (the last may be smaller).

    With ``shuffle`` the order comes from ``seed``; examples of similar source
    length are then grouped (sorted within windows of 50 batches), so batches
    carry little padding.
    """
    batch_size = _check_n(batch_size, "batch_size")
    order = list(range(len(examples)))
    if shuffle:
        random.Random(seed).shuffle(order)
        window = 50 * batch_size
        order = [
            i
            for start in range(0, len(order), window)
            for i in sorted(order[start : start + window], key=lambda j: len(examples[j][0]))
        ]
    batches = [
        make_batch([examples[i] for i in order[start : start + batch_size]])
        for start in range(0, len(order), batch_size)
    ]
    if shuffle:
        random.Random(seed + 1).shuffle(batches)
    return batches


def sequence_loss(logits: torch.Tensor, target_out: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the real target tokens; ``<pad>`` positions are ignored."""
    if logits.dim() != 3 or target_out.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (B, T, V) and target_out (B, T), got {tuple(logits.shape)} "
            f"and {tuple(target_out.shape)}"
        )
    return F.cross_entropy(logits.flatten(0, 1), target_out.flatten(), ignore_index=PAD)


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class Memory(NamedTuple):
    """What the encoder hands the decoder: every state, the pads, and a summary."""

    outputs: torch.Tensor  # (B, S, D·H) the encoder state at every source position
    padding_mask: torch.Tensor  # (B, S) True at <pad> positions, as key_padding_mask in torch
    context: torch.Tensor  # (B, D·H) the last states of both directions: the fixed context


State = tuple[torch.Tensor, ...]  # decoder state: tensors with the batch first


def check_source(source: torch.Tensor, source_lengths: torch.Tensor, vocab_size: int) -> None:
    if not isinstance(source, torch.Tensor) or source.dim() != 2 or source.dtype != torch.long:
        raise ValueError(
            "source must be a (B, S) tensor of int64 token ids, got "
            + (
                f"{tuple(source.shape)} {source.dtype}"
                if isinstance(source, torch.Tensor)
                else type(source).__name__
            )
        )
    if not isinstance(source_lengths, torch.Tensor) or source_lengths.shape != source.shape[:1]:
        raise ValueError(
            f"source_lengths must be a (B,) tensor with B = {source.shape[0]}, got "
            + (
                str(tuple(source_lengths.shape))
                if isinstance(source_lengths, torch.Tensor)
                else type(source_lengths).__name__
            )
        )
    if source.numel() == 0 or bool((source_lengths < 1).any()):
        raise ValueError(
            "every source must hold at least one token: an empty source has nothing to encode"
        )
    if bool((source_lengths > source.shape[1]).any()):
        raise ValueError(f"source_lengths exceed the padded length S = {source.shape[1]}")
    _check_vocab_ids(source, vocab_size, "source")
    positions = torch.arange(source.shape[1], device=source.device)
    if not torch.equal(source == PAD, positions >= source_lengths.to(source.device)[:, None]):
        raise ValueError(
            "source_lengths must agree with the <pad> positions: each source's "
            "source_lengths[b] tokens first, then only <pad>, and no <pad> inside a source"
        )


def _check_vocab_ids(ids: torch.Tensor, vocab_size: int, name: str) -> None:
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"{name} holds token id {bad}, outside the vocabulary 0..{vocab_size - 1}")


class Encoder(nn.Module):
    """Embedding → GRU over the packed source (so pads never enter the states)."""

    def __init__(
        self, vocab_size: int, embedding_size: int, hidden_size: int, bidirectional: bool = False
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=PAD)
        self.rnn = nn.GRU(
            embedding_size, hidden_size, batch_first=True, bidirectional=bidirectional
        )
        self.output_size = hidden_size * (2 if bidirectional else 1)

    def forward(self, source: torch.Tensor, source_lengths: torch.Tensor) -> Memory:
        check_source(source, source_lengths, self.vocab_size)
        embedded = self.embedding(source)  # (B, S, E)
        packed = pack_padded_sequence(
            embedded, source_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        packed_outputs, h_n = self.rnn(packed)  # h_n: (D, B, H)
        outputs, _ = pad_packed_sequence(
            packed_outputs, batch_first=True, total_length=source.shape[1]
        )  # (B, S, D·H), zeros at pads
        context = torch.cat(list(h_n), dim=-1)  # (B, D·H): forward's last state [; backward's]
        return Memory(outputs, source == PAD, context)


class EncoderDecoder(nn.Module):
    """The protocol every model of 9장 and 10장 follows (see the module docstring).

    :meth:`forward` runs the decoder over a whole target for training: with
    ``teacher_forcing_ratio = 1`` each step reads the true previous token; with
    less, each sentence at each step reads its true previous token with that
    probability and the model's own greedy guess otherwise (Bengio et al.,
    2015).
    """

    target_vocab_size: int
    encoder: Encoder

    def encode(self, source: torch.Tensor, source_lengths: torch.Tensor) -> Memory:
        return self.encoder(source, source_lengths)

    def init_state(self, memory: Memory) -> State:
        raise NotImplementedError

    def step(
        self, tokens: torch.Tensor, state: State, memory: Memory
    ) -> tuple[torch.Tensor, State, torch.Tensor | None]:
        raise NotImplementedError

    def teacher_forced(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        """Logits (B, T, V) reading the true previous tokens; models may do it faster."""
        return self.run_steps(target_in, memory, 1.0, None)

    def run_steps(
        self,
        target_in: torch.Tensor,
        memory: Memory,
        teacher_forcing_ratio: float,
        generator: torch.Generator | None,
    ) -> torch.Tensor:
        """The decoder one step at a time; logits (B, T, V)."""
        state = self.init_state(memory)
        tokens = target_in[:, 0]  # (B,) <sos>
        logits = []
        for t in range(target_in.shape[1]):
            step_logits, state, _ = self.step(tokens, state, memory)  # (B, V)
            logits.append(step_logits)
            if t + 1 < target_in.shape[1]:
                truth = target_in[:, t + 1]
                if teacher_forcing_ratio >= 1.0:
                    tokens = truth
                else:
                    guess = step_logits.detach().argmax(-1)
                    coin = torch.rand(truth.shape, generator=generator).to(truth.device)
                    tokens = torch.where(coin < teacher_forcing_ratio, truth, guess)
        return torch.stack(logits, dim=1)  # (B, T, V)

    def forward(
        self,
        source: torch.Tensor,
        source_lengths: torch.Tensor,
        target_in: torch.Tensor,
        teacher_forcing_ratio: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        if not 0.0 <= teacher_forcing_ratio <= 1.0:
            raise ValueError(
                f"teacher_forcing_ratio must be in [0, 1], got {teacher_forcing_ratio}"
            )
        if target_in.dim() != 2 or target_in.shape[0] != source.shape[0]:
            raise ValueError(
                f"target_in must be (B, T) with B = {source.shape[0]}, got {tuple(target_in.shape)}"
            )
        _check_vocab_ids(target_in, self.target_vocab_size, "target_in")
        memory = self.encode(source, source_lengths)
        if teacher_forcing_ratio == 1.0:
            return self.teacher_forced(target_in, memory)
        return self.run_steps(target_in, memory, teacher_forcing_ratio, generator)


class Seq2Seq(EncoderDecoder):
    """GRU encoder → one context vector c → GRU decoder that reads [y_(t-1); c] at every step.

    The decoder starts from s_0 = c (Sutskever et al., 2014) and also sees c at
    every step (Cho et al., 2014), so nothing but c carries the source.
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 128,
    ) -> None:
        super().__init__()
        self.target_vocab_size = target_vocab_size
        self.encoder = Encoder(source_vocab_size, embedding_size, hidden_size)
        self.embedding = nn.Embedding(target_vocab_size, embedding_size, padding_idx=PAD)
        self.rnn = nn.GRU(embedding_size + hidden_size, hidden_size, batch_first=True)
        self.output = nn.Linear(hidden_size, target_vocab_size)

    def init_state(self, memory: Memory) -> State:
        return (memory.context,)  # s_0 = c: (B, H)

    def step(
        self, tokens: torch.Tensor, state: State, memory: Memory
    ) -> tuple[torch.Tensor, State, None]:
        x = torch.cat([self.embedding(tokens), memory.context], dim=-1)  # (B, E + H)
        _, h = self.rnn(x.unsqueeze(1), state[0].unsqueeze(0))  # h: (1, B, H)
        return self.output(h[0]), (h[0],), None  # logits (B, V)

    def teacher_forced(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        # Every input is known in advance, so one call runs the GRU over all steps.
        T = target_in.shape[1]
        context = memory.context.unsqueeze(1).expand(-1, T, -1)  # (B, T, H)
        x = torch.cat([self.embedding(target_in), context], dim=-1)  # (B, T, E + H)
        outputs, _ = self.rnn(x, memory.context.unsqueeze(0))  # (B, T, H)
        return self.output(outputs)  # (B, T, V)


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Decoded:
    """Decoded sentences: ids without ``<eos>``, log-probabilities, attention rows."""

    tokens: list[list[int]]  # sentence i's ids, up to but not including <eos>
    log_probs: list[float]  # log P(y | x) of each output, <eos> included when it came
    finished: list[bool]  # whether <eos> came before max_len
    attention: list[torch.Tensor] | None = None  # (T_i, S_i) per sentence, greedy only


def allowed_log_probs(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Log-softmax over the tokens a decoder may output: never <pad> or <sos>."""
    logits = logits.float() / temperature
    logits[:, PAD] = -math.inf
    logits[:, SOS] = -math.inf
    return torch.log_softmax(logits, dim=-1)  # (B, V)


def _select(state: State, index: torch.Tensor) -> State:
    return tuple(s.index_select(0, index) for s in state)


def _check_max_len(max_len: object) -> int:
    return _check_n(max_len, "max_len")


def _finish(
    steps: list[torch.Tensor], log_prob: torch.Tensor, lengths: torch.Tensor
) -> tuple[list[list[int]], list[float], list[bool]]:
    ids = torch.stack(steps, dim=1).tolist() if steps else [[] for _ in range(len(lengths))]
    tokens, finished = [], []
    for row in ids:
        if EOS in row:
            tokens.append(row[: row.index(EOS)])
            finished.append(True)
        else:
            tokens.append(row)
            finished.append(False)
    return tokens, log_prob.tolist(), finished


def decode_one_token_at_a_time(
    model: EncoderDecoder,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    max_len: int,
    choose: Callable[[torch.Tensor], torch.Tensor],
    temperature: float = 1.0,
) -> Decoded:
    """Run the decoder on its own outputs; ``choose`` picks each next token from log-probabilities.

    ``choose`` maps (B, V) log-probabilities to (B,) token ids: the argmax for
    greedy decoding, a draw for sampling. A sentence stops at ``<eos>``; all stop at ``max_len``.
    """
    max_len = _check_max_len(max_len)
    model.eval()
    memory = model.encode(source, source_lengths)
    state = model.init_state(memory)
    B = source.shape[0]
    tokens = torch.full((B,), SOS, device=source.device)
    finished = torch.zeros(B, dtype=torch.bool, device=source.device)
    total = torch.zeros(B, device=source.device)
    steps, weights = [], []
    for _ in range(max_len):
        logits, state, step_weights = model.step(tokens, state, memory)
        log_probs = allowed_log_probs(logits, temperature)  # (B, V)
        tokens = choose(log_probs)  # (B,)
        chosen = log_probs.gather(1, tokens.unsqueeze(1)).squeeze(1)  # (B,)
        total += chosen.masked_fill(finished, 0.0)
        tokens = tokens.masked_fill(finished, PAD)  # finished sentences only pad
        steps.append(tokens)
        if step_weights is not None:
            weights.append(step_weights)  # (B, S)
        finished = finished | (tokens == EOS)
        if bool(finished.all()):
            break
    out, log_probs_list, done = _finish(steps, total, source_lengths)
    attention = None
    if weights:
        stacked = torch.stack(weights, dim=1).cpu()  # (B, steps, S)
        attention = [
            stacked[i, : len(out[i]) + done[i], : int(source_lengths[i])] for i in range(B)
        ]
    return Decoded(out, log_probs_list, done, attention)


@torch.no_grad()
def greedy_decode(
    model: EncoderDecoder, source: torch.Tensor, source_lengths: torch.Tensor, max_len: int = 100
) -> Decoded:
    """The most probable next token at every step, for a batch; stops at ``<eos>``/``max_len``."""
    return decode_one_token_at_a_time(
        model, source, source_lengths, max_len, lambda log_probs: log_probs.argmax(dim=-1)
    )


def _check_length_penalty(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 2:
        raise ValueError(f"length_penalty must be a number in [0, 2], got {alpha!r}")
    return float(alpha)


def normalized_score(log_prob: float, length: int, length_penalty: float) -> float:
    """log P(y | x) / |y|^α: α = 0 keeps the raw sum, α = 1 takes the mean per token."""
    if length < 1:
        raise ValueError(f"length must be >= 1 (|y| counts <eos>), got {length}")
    return log_prob / length**length_penalty


@torch.no_grad()
def beam_search(
    model: EncoderDecoder,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    beam_size: int = 5,
    max_len: int = 100,
    length_penalty: float = 1.0,
) -> Decoded:
    """Beam search for a batch of sentences at once (B sentences × K beams in one tensor).

    Each step extends every live beam by every token and keeps the K best
    partial sums of log-probabilities; a beam that emitted ``<eos>`` stays as one
    candidate with its score unchanged. When every beam has finished (or at
    ``max_len``), the output is the beam with the best
    :func:`normalized_score`, where |y| counts the ``<eos>``.
    """
    K = _check_n(beam_size, "beam_size")
    max_len = _check_max_len(max_len)
    alpha = _check_length_penalty(length_penalty)
    model.eval()
    memory = model.encode(source, source_lengths)
    B, device = source.shape[0], source.device
    flat = torch.arange(B, device=device).repeat_interleave(K)  # (B·K,) sentence of each beam
    memory = Memory(*(m.index_select(0, flat) for m in memory))
    state = model.init_state(memory)
    tokens = torch.full((B * K,), SOS, device=device)
    scores = torch.full((B, K), -math.inf, device=device)
    scores[:, 0] = 0.0  # one live beam at the start; the others join as copies would repeat it
    finished = torch.zeros(B, K, dtype=torch.bool, device=device)
    lengths = torch.zeros(B, K, dtype=torch.long, device=device)
    history = torch.zeros(B, K, 0, dtype=torch.long, device=device)
    V = model.target_vocab_size
    stay = torch.full((V,), -math.inf, device=device)
    stay[PAD] = 0.0  # a finished beam's only continuation: <pad>, at no cost
    for _ in range(max_len):
        logits, state, _ = model.step(tokens, state, memory)
        log_probs = allowed_log_probs(logits).view(B, K, V)
        log_probs = torch.where(finished.unsqueeze(-1), stay, log_probs)
        candidates = scores.unsqueeze(-1) + log_probs  # (B, K, V)
        scores, best = candidates.view(B, K * V).topk(K, dim=-1)  # (B, K)
        parent, token = best // V, best % V  # (B, K) each
        lengths = lengths.gather(1, parent) + (~finished.gather(1, parent)).long()
        finished = finished.gather(1, parent) | (token == EOS)
        history = torch.cat(
            [history.gather(1, parent.unsqueeze(-1).expand_as(history)), token.unsqueeze(-1)], -1
        )  # (B, K, t)
        rows = (parent + torch.arange(B, device=device).unsqueeze(1) * K).view(-1)  # (B·K,)
        state = _select(state, rows)
        tokens = token.view(-1)
        if bool(finished.all()):
            break
    normalized = scores / lengths.clamp(min=1).float() ** alpha  # (B, K); -inf stays -inf
    choice = normalized.argmax(dim=-1)  # (B,)
    index = torch.arange(B, device=device)
    chosen = history[index, choice]  # (B, t)
    out, log_prob, done = _finish(list(chosen.T), scores[index, choice], source_lengths)
    return Decoded(out, log_prob, done)


@torch.no_grad()
def sample_decode(
    model: EncoderDecoder,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    max_len: int = 100,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Decoded:
    """Draw each next token from softmax(logits / temperature); stops at ``<eos>``/``max_len``."""
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not temperature > 0
    ):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")

    def draw(log_probs: torch.Tensor) -> torch.Tensor:
        return torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(1)  # (B,)

    return decode_one_token_at_a_time(model, source, source_lengths, max_len, draw, temperature)


# ---------------------------------------------------------------------------
# Training and translating
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """How a translation model is trained (the same for every model of 9장 and 10장)."""

    epochs: int = 10
    batch_size: int = 64
    learning_rate: float = 3e-3  # Adam
    clip_norm: float = 1.0  # gradient norm clipping (7장)
    teacher_forcing_ratio: float = 1.0  # share of steps that read the true previous token
    seed: int = 0
    warmup_steps: int = 0  # the learning rate grows linearly over these first steps (11장)


def train_seq2seq(
    model: EncoderDecoder,
    examples: Sequence[Example],
    config: TrainConfig = TrainConfig(),
    device: str | torch.device | None = None,
    show_progress: bool = True,
) -> History:
    """Train ``model`` on (source ids, target ids) examples with Adam and the masked loss."""
    if not examples:
        raise ValueError("examples is empty: nothing to train on")
    target = get_device() if device is None else torch.device(device)
    generator = torch.Generator().manual_seed(config.seed)
    epoch = 0

    def batches() -> list[Batch]:
        nonlocal epoch
        epoch += 1
        return make_batches(examples, config.batch_size, shuffle=True, seed=config.seed + epoch)

    def loss_fn(model: nn.Module, batch: Batch) -> torch.Tensor:
        batch = batch.to(target)
        logits = model(
            batch.source,
            batch.source_lengths,
            batch.target_in,
            config.teacher_forcing_ratio,
            generator,
        )  # (B, T, V)
        return sequence_loss(logits, batch.target_out)

    seed_everything(config.seed)
    model.to(target)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    scheduler = None
    if config.warmup_steps > 0:
        warmup = config.warmup_steps
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min(1.0, (step + 1) / warmup)
        )
    return fit(
        model,
        batches,
        loss_fn,
        optimizer,
        config.epochs,
        clip_norm=config.clip_norm,
        device=target,
        seed=None,
        show_progress=show_progress,
        scheduler=scheduler,
    )


def translate(
    model: EncoderDecoder,
    sources: Sequence[Sequence[str]],
    source_vocab: Vocab,
    target_vocab: Vocab,
    method: str = "greedy",
    beam_size: int = 5,
    length_penalty: float = 1.0,
    batch_size: int = 256,
) -> list[list[str]]:
    """Translate token lists with ``"greedy"`` decoding or ``"beam"`` search; token lists back.

    Decoding stops at ``<eos>`` or after ``2·S + 10`` tokens for the longest
    source S of a batch.
    """
    if method not in ("greedy", "beam"):
        raise ValueError(f"method must be 'greedy' or 'beam', got {method!r}")
    device = next(model.parameters()).device
    outputs: list[list[str]] = []
    for start in range(0, len(sources), batch_size):
        chunk = [list(s) for s in sources[start : start + batch_size]]
        batch = make_batch([(source_vocab.encode(s), [EOS]) for s in chunk])
        max_len = 2 * int(batch.source_lengths.max()) + 10
        args = (
            model,
            batch.source.to(device),
            batch.source_lengths,
        )
        if method == "greedy":
            decoded = greedy_decode(*args, max_len=max_len)
        else:
            decoded = beam_search(
                *args, beam_size=beam_size, max_len=max_len, length_penalty=length_penalty
            )
        outputs.extend(target_vocab.decode(ids) for ids in decoded.tokens)
    return outputs


@dataclass(frozen=True)
class TranslationScores:
    """Corpus BLEU (ours), chrF (sacrebleu) and exact match of one set of translations."""

    bleu: float  # 0–100
    chrf: float  # 0–100
    exact_match: float  # 0–1
    sentences: int


def score_translations(
    hypotheses: Sequence[Tokens], references: Sequence[Tokens]
) -> TranslationScores:
    """BLEU, chrF and exact match with one reference per sentence."""
    import sacrebleu

    bleu = corpus_bleu(list(hypotheses), [[list(r)] for r in references]).score
    chrf = sacrebleu.corpus_chrf(
        [" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]]
    )
    return TranslationScores(
        bleu,
        float(chrf.score),
        exact_match(list(hypotheses), [list(r) for r in references]),
        len(hypotheses),
    )


# ---------------------------------------------------------------------------
# The chapters' experiments
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ParallelData:
    """Tokenized train/valid/test pairs with their vocabularies.

    ``words`` turns a target token list into the words BLEU counts (the
    generated corpus: its own tokens; SentencePiece pieces: the words of the
    detokenized text).
    """

    name: str
    train: list[tuple[list[str], list[str]]]
    valid: list[tuple[list[str], list[str]]]
    test: list[tuple[list[str], list[str]]]
    source_vocab: Vocab
    target_vocab: Vocab
    words: Callable[[Sequence[str]], list[str]] = list

    def split(self, name: str) -> list[tuple[list[str], list[str]]]:
        if name not in ("train", "valid", "test"):
            raise ValueError(f"split must be 'train', 'valid' or 'test', got {name!r}")
        pairs: list[tuple[list[str], list[str]]] = getattr(self, name)
        return pairs

    def examples(self, name: str) -> list[tuple[list[int], list[int]]]:
        """The split as id lists, targets ending with ``<eos>``."""
        return [
            encode_pair(s, t, self.source_vocab, self.target_vocab) for s, t in self.split(name)
        ]


@dataclass(frozen=True)
class TranslationConfig:
    """The data, model size and training budget every model of 9장 and 10장 gets."""

    train: int  # generated training pairs (1..max_train_clauses clauses)
    valid: int
    test_per_clauses: int  # test pairs for each clause count 1..max_test_clauses
    max_train_clauses: int
    max_test_clauses: int  # beyond max_train_clauses: longer than anything trained on
    max_adjectives: int
    embedding_size: int
    hidden_size: int  # the context vector's size without attention
    training: TrainConfig


TRANSLATION_CONFIGS = {
    "small": TranslationConfig(
        10_000, 500, 100, 2, 3, 2, 32, 128, TrainConfig(epochs=3, batch_size=64, learning_rate=3e-3)
    ),
    "large": TranslationConfig(
        60_000,
        1_000,
        200,
        3,
        4,
        2,
        64,
        256,
        TrainConfig(epochs=8, batch_size=64, learning_rate=2e-3),
    ),
}


def translation_config(size: str | None = None) -> TranslationConfig:
    """The configuration of a run size (default: :func:`course_utils.device.run_size`)."""
    size = run_size() if size is None else size
    if size not in TRANSLATION_CONFIGS:
        raise ValueError(f"size must be one of {', '.join(TRANSLATION_CONFIGS)}, got {size!r}")
    return TRANSLATION_CONFIGS[size]


def generated_data(config: TranslationConfig, seed: int = 0) -> tuple[ParallelData, Splits]:
    """The generated English→Korean corpus of :mod:`course_utils.translation_data`."""
    splits = make_splits(
        seed,
        train=config.train,
        valid=config.valid,
        test_per_clauses=config.test_per_clauses,
        max_train_clauses=config.max_train_clauses,
        max_test_clauses=config.max_test_clauses,
        max_adjectives=config.max_adjectives,
    )

    def tokens(pairs: Sequence[Pair]) -> list[tuple[list[str], list[str]]]:
        return [(list(p.source), list(p.target)) for p in pairs]

    data = ParallelData(
        "generated",
        tokens(splits.train),
        tokens(splits.valid),
        tokens(splits.test),
        Vocab(source_vocabulary()),
        Vocab(target_vocabulary()),
    )
    return data, splits


GETTEXT_VOCAB_SIZE = 1000  # SentencePiece pieces on each side
GETTEXT_MAX_TOKENS = 6  # the short messages: menu items, labels, country and language names


def _pieces_to_words(pieces: Sequence[str]) -> list[str]:
    return "".join(pieces).replace("▁", " ").split()


def gettext_data(
    seed: int = 0, vocab_size: int = GETTEXT_VOCAB_SIZE, max_tokens: int = GETTEXT_MAX_TOKENS
) -> ParallelData:
    """The gettext catalogues' English→Korean pairs in SentencePiece pieces (2장).

    Each side gets a unigram model of ``vocab_size`` pieces trained on its own
    training sentences; BLEU then counts the words of the detokenized Korean.
    Only pairs of at most ``max_tokens`` tokens on each side are kept (see
    :func:`~course_utils.gettext_corpus.load_gettext_pairs`).
    Raises :class:`~course_utils.gettext_corpus.GettextCatalogueNotFoundError`
    (naming the packages to install) when the catalogues are missing.
    """
    splits = gettext_splits(seed, max_tokens=max_tokens)
    english = train_sentencepiece([p.english for p in splits["train"]], "unigram", vocab_size)
    korean = train_sentencepiece([p.korean for p in splits["train"]], "unigram", vocab_size)

    def pieces(pairs: Sequence[GettextPair]) -> list[tuple[list[str], list[str]]]:
        return [
            (english.encode(p.english, out_type=str), korean.encode(p.korean, out_type=str))
            for p in pairs
        ]

    train = pieces(splits["train"])
    return ParallelData(
        "gettext",
        train,
        pieces(splits["valid"]),
        pieces(splits["test"]),
        Vocab([t for s, _ in train for t in s]),
        Vocab([piece for _, target in train for piece in target]),
        _pieces_to_words,
    )


def evaluate_model(
    model: EncoderDecoder,
    data: ParallelData,
    split: str = "test",
    method: str = "greedy",
    beam_size: int = 5,
) -> tuple[TranslationScores, list[list[str]]]:
    """Translate a split and score it; also returns the hypotheses (as BLEU's words)."""
    pairs = data.split(split)
    outputs = translate(
        model, [s for s, _ in pairs], data.source_vocab, data.target_vocab, method, beam_size
    )
    hypotheses = [data.words(o) for o in outputs]
    return score_translations(hypotheses, [data.words(t) for _, t in pairs]), hypotheses


def _training_recipe(model: EncoderDecoder, data: ParallelData, training: TrainConfig) -> str:
    """What decides the trained weights besides the code: the model, the data and the budget."""
    digest = hashlib.sha256()
    device = next(model.parameters()).device
    digest.update(f"{device.type}|{model!r}|{training!r}|{data.name}".encode())
    for source, target in data.train:
        digest.update(("\x1f".join(source) + "\x1e" + "\x1f".join(target) + "\x1d").encode())
    digest.update("\x1f".join([*data.source_vocab, "\x1e", *data.target_vocab]).encode())
    return digest.hexdigest()


def train_model(
    model: EncoderDecoder,
    data: ParallelData,
    training: TrainConfig,
    show_progress: bool = True,
) -> History:
    """Train ``model`` on ``data``'s training split (the chapters' one call).

    9장 and 10장 train some models twice (10장 compares 9장's seq2seq with the
    attention models, and each chapter's claims test re-measures them). The
    trained weights and history are kept in ``~/.cache/nlp-course`` (or the folder
    in ``COURSE_CACHE``; ``COURSE_CACHE=off`` always trains), under a key made of
    the package's source code, the model, the data and the training settings,
    so a changed recipe never reuses an old result.
    """
    path = _cache_path(model, data, training)  # also moves the model where it would train
    saved = runs.load_result(path, map_location=next(model.parameters()).device)
    if saved is not None:
        model.load_state_dict(saved["state"])
        return History(**saved["history"])
    history = train_seq2seq(model, data.examples("train"), training, show_progress=show_progress)
    runs.save_result(path, {"state": model.state_dict(), "history": asdict(history)})
    return history


def _cache_path(model: EncoderDecoder, data: ParallelData, training: TrainConfig) -> Path | None:
    if runs.cache_folder() is None:
        return None
    model.to(get_device())
    return runs.cache_path("seq2seq", _training_recipe(model, data, training))


def _train_cached(
    make: ModelMaker,
    data: ParallelData,
    config: TranslationConfig,
    threads: int,
) -> None:
    torch.set_num_threads(threads)  # the parent's count: it is part of the cache key
    train_model(make(data, config), data, config.training, show_progress=False)


ModelMaker = Callable[[ParallelData, TranslationConfig], EncoderDecoder]


def train_in_parallel(jobs: Sequence[tuple[ModelMaker, ParallelData, TranslationConfig]]) -> None:
    """Train several models at once, one process per CPU core, into :func:`train_model`'s cache.

    A job ``(make, data, config)`` is the model ``make(data, config)`` trained on
    ``data`` with ``config.training``. Each model trains single-threaded in its
    own process, as it would here, so the result is the one a later
    ``train_model`` call loads instead of training. Jobs start in the order
    given (put the longest first). Nothing happens on a GPU, with one core,
    with the cache off (``COURSE_CACHE=off``) or for models already trained.
    """
    cores = runs.background_workers()
    if cores < 2:
        return
    todo = []
    for make, data, config in jobs:
        path = _cache_path(make(data, config), data, config.training)
        if path is not None and not path.is_file():
            todo.append((make, data, config))
    if len(todo) < 2:
        return
    threads = torch.get_num_threads()
    with runs.worker_pool(min(len(todo), cores)) as pool:
        futures = [pool.submit(_train_cached, *job, threads) for job in todo]
        for future in futures:
            future.result()


def new_seq2seq(data: ParallelData, config: TranslationConfig) -> Seq2Seq:
    """9장's model, sized by ``config``, seeded by ``config.training.seed``."""
    seed_everything(config.training.seed)
    return Seq2Seq(
        len(data.source_vocab), len(data.target_vocab), config.embedding_size, config.hidden_size
    )


@dataclass(frozen=True)
class LengthRow:
    """Scores of the test sentences in one source-length bin."""

    low: int  # source tokens, inclusive
    high: int
    sentences: int
    bleu: float
    exact_match: float
    in_training_range: bool  # no more clauses than any training sentence


LENGTH_BINS = (4, 9, 14, 19, 24, 29, 34, 40, 50, 60)  # bin i holds low_i <= S < low_(i+1)


def scores_by_length(
    hypotheses: Sequence[Tokens],
    pairs: Sequence[Pair],
    max_train_clauses: int,
    edges: Sequence[int] = LENGTH_BINS,
) -> list[LengthRow]:
    """BLEU and exact match per source-length bin; bins of fewer than 20 sentences are dropped.

    A bin is ``in_training_range`` when all its sentences have at most
    ``max_train_clauses`` clauses; sentences longer than that are kept in
    bins of their own.
    """
    if len(hypotheses) != len(pairs):
        raise ValueError(f"got {len(hypotheses)} hypotheses for {len(pairs)} pairs")
    rows = []
    for inside in (True, False):
        for low, high in itertools.pairwise(edges):
            chosen = [
                i
                for i, p in enumerate(pairs)
                if low <= len(p.source) < high and (p.clauses <= max_train_clauses) == inside
            ]
            if len(chosen) < 20:
                continue
            hyps = [list(hypotheses[i]) for i in chosen]
            refs = [list(pairs[i].target) for i in chosen]
            scores = score_translations(hyps, refs)
            rows.append(
                LengthRow(low, high - 1, len(chosen), scores.bleu, scores.exact_match, inside)
            )
    return rows


@dataclass(frozen=True)
class TeacherForcingRun:
    """One model of the sweep: its ratio, validation scores and training time."""

    teacher_forcing_ratio: float
    exact_match: float
    bleu: float
    train_loss: float  # last epoch's mean training loss (under that ratio)
    seconds: float


def teacher_forcing_sweep(
    data: ParallelData,
    splits: Splits,
    config: TranslationConfig,
    ratios: Sequence[float] = (1.0, 0.5, 0.0),
    clauses: int = 1,
    show_progress: bool = True,
) -> list[TeacherForcingRun]:
    """Train one seq2seq per teacher-forcing ratio on the training pairs of ``clauses`` clauses.

    Every model has the same seed, data and budget (``config.training`` but the
    ratio); the validation sentences of that many clauses are decoded greedily
    (free running), as at test time. ``data`` and ``splits`` are
    :func:`generated_data`'s pair.
    """
    if not ratios:
        raise ValueError("give at least one teacher_forcing_ratio")
    if len(splits.train) != len(data.train) or len(splits.valid) != len(data.valid):
        raise ValueError("data and splits must come from the same generated_data() call")
    examples = [
        e for e, p in zip(data.examples("train"), splits.train, strict=True) if p.clauses == clauses
    ]
    valid = [p for p in splits.valid if p.clauses == clauses]
    if not examples or not valid:
        raise ValueError(f"no training or validation pair has {clauses} clause(s)")
    runs = []
    for ratio in ratios:
        training = replace(config.training, teacher_forcing_ratio=ratio)
        model = new_seq2seq(data, config)
        history = train_seq2seq(model, examples, training, show_progress=show_progress)
        hypotheses = translate(
            model, [list(p.source) for p in valid], data.source_vocab, data.target_vocab
        )
        scores = score_translations(hypotheses, [list(p.target) for p in valid])
        runs.append(
            TeacherForcingRun(
                ratio,
                scores.exact_match,
                scores.bleu,
                history.train_loss[-1],
                sum(history.seconds),
            )
        )
    return runs


@torch.no_grad()
def token_accuracy(
    model: EncoderDecoder, examples: Sequence[Example], batch_size: int = 256
) -> tuple[float, float]:
    """(teacher-forced, free-running) share of target positions predicted right.

    Teacher-forced: the decoder reads the reference prefix and the argmax at
    each position is compared with the reference token (``<eos>`` included).
    Free-running: greedy decoding reads its own outputs, and output token j is
    compared with reference token j (a missing token counts as wrong).
    """
    if not examples:
        raise ValueError("examples is empty")
    model.eval()
    device = next(model.parameters()).device
    forced_hits = free_hits = total = 0
    for start in range(0, len(examples), batch_size):
        batch = make_batch(list(examples[start : start + batch_size])).to(device)
        logits = model(batch.source, batch.source_lengths, batch.target_in)  # (B, T, V)
        guesses = allowed_log_probs(logits.flatten(0, 1)).argmax(-1).view_as(batch.target_out)
        real = batch.target_out != PAD
        forced_hits += int(((guesses == batch.target_out) & real).sum())
        total += int(real.sum())
        decoded = greedy_decode(
            model, batch.source, batch.source_lengths, max_len=batch.target_out.shape[1]
        )
        for b, (ids, finished) in enumerate(zip(decoded.tokens, decoded.finished, strict=True)):
            output = [*ids, EOS] if finished else ids
            reference = batch.target_out[b][real[b]].tolist()
            free_hits += sum(o == r for o, r in zip(output, reference, strict=False))
    return forced_hits / total, free_hits / total
