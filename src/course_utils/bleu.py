"""9장 BLEU (Papineni et al., 2002) from scratch, equal to
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

import math
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from course_utils.checks import check_int

__all__ = [
    "SMOOTH_METHODS",
    "BLEUScore",
    "BLEUTiming",
    "bleu_from_statistics",
    "brevity_penalty",
    "clipped_ngram_matches",
    "closest_reference_length",
    "corpus_bleu",
    "exact_match",
    "modified_precision",
    "ngram_counts",
    "sentence_bleu",
    "time_against_sacrebleu",
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
    return _ngram_counts(_check_tokens(tokens, "tokens"), check_int(n, "n"))


def clipped_ngram_matches(hypothesis: Tokens, references: list[Tokens], n: int) -> tuple[int, int]:
    """(clipped matches, hypothesis n-grams): each n-gram counts at most as often as in the
    one reference where it occurs most. The inputs are checked by the callers
    (:func:`modified_precision`, :func:`corpus_bleu`)."""
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
    return clipped_ngram_matches(hyp, _reference_list(references, "references"), check_int(n, "n"))


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
        check_int(value, name, 0)
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


def bleu_from_statistics(
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
    max_n = check_int(max_n, "max_n")
    value = _check_smoothing(smooth_method, smooth_value)
    counts, totals = [0] * max_n, [0] * max_n
    sys_len = ref_len = 0
    for hyp, hyp_refs in zip(hyps, refs, strict=True):
        sys_len += len(hyp)
        ref_len += closest_reference_length(len(hyp), [len(ref) for ref in hyp_refs])
        for n in range(1, max_n + 1):
            matches, total = clipped_ngram_matches(hyp, hyp_refs, n)
            counts[n - 1] += matches
            totals[n - 1] += total
    return bleu_from_statistics(
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

    repeats = check_int(repeats, "repeats")
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
