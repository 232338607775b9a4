"""BLEU from scratch (9장) is checked against sacrebleu with tokenize="none", on every input.

sacrebleu takes sentences as strings and references as streams (stream j holds
every sentence's j-th reference, None where a sentence has fewer); the helpers
below turn our token lists into that form.
"""

import math
from collections import Counter

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU

from course_utils.bleu import (
    SMOOTH_METHODS,
    BLEUScore,
    brevity_penalty,
    closest_reference_length,
    corpus_bleu,
    exact_match,
    modified_precision,
    ngram_counts,
    sentence_bleu,
    time_against_sacrebleu,
)


def words(sentence):
    """A sentence's tokens: the words between spaces."""
    return sentence.split()


def as_sacrebleu(hypotheses, references):
    """Our token lists as sacrebleu's hypothesis strings and reference streams."""
    streams = [[None] * len(references) for _ in range(max(map(len, references)))]
    for i, refs in enumerate(references):
        for j, ref in enumerate(refs):
            streams[j][i] = " ".join(ref)
    return [" ".join(h) for h in hypotheses], streams


def sacrebleu_corpus(hypotheses, references, **kwargs):
    hyps, streams = as_sacrebleu(hypotheses, references)
    return sacrebleu.corpus_bleu(hyps, streams, tokenize="none", **kwargs)


def assert_same_as_sacrebleu(ours: BLEUScore, theirs, compare_counts: bool = True) -> None:
    assert ours.score == pytest.approx(theirs.score, rel=0, abs=1e-9)
    assert ours.bp == pytest.approx(theirs.bp, rel=0, abs=1e-12)
    assert (ours.sys_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    assert ours.precisions == pytest.approx(theirs.precisions, rel=0, abs=1e-9)
    if compare_counts:  # sacrebleu's add-k adds k to its returned counts; ours stay raw
        assert list(ours.counts) == list(theirs.counts)
        assert list(ours.totals) == list(theirs.totals)


# The examples of Papineni et al. (2002), section 2.1, lowercased and without the final period.
PAPER_CANDIDATE_1 = words(
    "it is a guide to action which ensures that the military always obeys the commands of the party"
)
PAPER_CANDIDATE_2 = words(
    "it is to insure the troops forever hearing the activity guidebook that party direct"
)
PAPER_REFERENCES = [
    words(
        "it is a guide to action that ensures that the military will forever heed party commands"
    ),
    words(
        "it is the guiding principle which guarantees the military forces always being under the command of the party"
    ),
    words("it is the practical guide for the army always to heed the directions of the party"),
]
THE_CANDIDATE = words("the the the the the the the")
THE_REFERENCES = [words("the cat is on the mat"), words("there is a cat on the mat")]


def test_modified_precisions_of_the_papers_examples():
    assert modified_precision(THE_CANDIDATE, THE_REFERENCES, 1) == (2, 7)
    assert modified_precision(THE_CANDIDATE, THE_REFERENCES, 2) == (0, 6)
    assert modified_precision(PAPER_CANDIDATE_1, PAPER_REFERENCES, 1) == (17, 18)
    assert modified_precision(PAPER_CANDIDATE_2, PAPER_REFERENCES, 1) == (8, 14)
    assert modified_precision(PAPER_CANDIDATE_1, PAPER_REFERENCES, 2) == (10, 17)
    assert modified_precision(PAPER_CANDIDATE_2, PAPER_REFERENCES, 2) == (1, 13)


def test_papers_examples_score_as_in_sacrebleu():
    hyps = [PAPER_CANDIDATE_1, PAPER_CANDIDATE_2, THE_CANDIDATE]
    refs = [PAPER_REFERENCES, PAPER_REFERENCES, THE_REFERENCES]
    assert_same_as_sacrebleu(corpus_bleu(hyps, refs), sacrebleu_corpus(hyps, refs))


def test_ngram_counts_are_tuples_with_their_counts():
    assert ngram_counts(words("a b a b"), 2) == Counter({("a", "b"): 2, ("b", "a"): 1})
    assert ngram_counts(["고양이", "가"], 1) == Counter({("고양이",): 1, ("가",): 1})
    assert ngram_counts(["a", "b"], 3) == Counter()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=12), st.integers(1, 5))
def test_ngram_counts_equal_counting_slices(tokens, n):
    slices = Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    assert ngram_counts(tokens, n) == slices


def test_closest_reference_length_breaks_ties_towards_the_shorter():
    assert closest_reference_length(5, [4, 6]) == 4
    assert closest_reference_length(5, [7, 3]) == 3
    assert closest_reference_length(5, [6, 2]) == 6
    assert closest_reference_length(0, [3, 1]) == 1


def test_brevity_penalty_values():
    assert brevity_penalty(10, 10) == 1.0
    assert brevity_penalty(12, 10) == 1.0
    assert brevity_penalty(5, 10) == pytest.approx(math.exp(-1))
    assert brevity_penalty(9, 10) == pytest.approx(math.exp(1 - 10 / 9))
    assert brevity_penalty(0, 10) == 0.0
    assert brevity_penalty(0, 0) == 1.0


def test_a_perfect_corpus_scores_100():
    refs = [words("a b c d e"), words("고양이 가 생선 을 먹습니다 .")]
    result = corpus_bleu(refs, refs)
    assert result.score == pytest.approx(100.0)
    assert result.bp == 1.0 and result.precisions == pytest.approx((100.0,) * 4)


def test_corpus_bleu_sums_statistics_before_dividing():
    hyps = [PAPER_CANDIDATE_1, PAPER_CANDIDATE_2]
    result = corpus_bleu(hyps, [PAPER_REFERENCES] * 2)
    for n in range(1, 5):
        stats = [modified_precision(h, PAPER_REFERENCES, n) for h in hyps]
        assert result.counts[n - 1] == sum(m for m, _ in stats)
        assert result.totals[n - 1] == sum(t for _, t in stats)
    mean_of_sentences = sum(sentence_bleu(h, PAPER_REFERENCES).score for h in hyps) / 2
    assert result.score != pytest.approx(mean_of_sentences)


@pytest.mark.parametrize(
    ("hypotheses", "references"),
    [
        pytest.param([["a", "b"]], [[["a", "b"]]], id="shorter-than-4-grams"),
        pytest.param(
            [["a", "b", "c", "d", "e"]], [[["a", "b", "c", "x", "e"]]], id="no-4-gram-match"
        ),
        pytest.param([["x", "y", "z"]], [[["a", "b", "c"]]], id="no-match-at-all"),
        pytest.param([[], []], [[["a", "b"]], [["c"]]], id="empty-hypotheses"),
        pytest.param([[], ["a"]], [[[]], [["a"]]], id="empty-reference"),
        pytest.param(
            [["a", "b", "c", "d", "e"]],
            [[["a", "b", "c", "d"], ["a", "b", "c", "d", "e", "f"]]],
            id="length-tie",
        ),
        pytest.param(
            [["a"] * 9, ["b", "a"]], [[["a"] * 3, ["a", "a"]], [["b", "a", "c"]]], id="clipping"
        ),
        pytest.param([PAPER_CANDIDATE_2], [PAPER_REFERENCES], id="paper-candidate-2"),
    ],
)
@pytest.mark.parametrize("smooth_method", list(SMOOTH_METHODS))
def test_hand_cases_equal_sacrebleu(hypotheses, references, smooth_method):
    ours = corpus_bleu(hypotheses, references, smooth_method=smooth_method)
    theirs = sacrebleu_corpus(hypotheses, references, smooth_method=smooth_method)
    assert_same_as_sacrebleu(ours, theirs, compare_counts=smooth_method != "add-k")


def test_exp_smoothing_gives_credit_without_4_gram_matches_but_not_without_4_grams():
    assert corpus_bleu([["a", "b", "c", "d", "e"]], [[["a", "b", "c", "x", "e"]]]).score > 0
    assert corpus_bleu([["a", "b"]], [[["a", "b"]]]).score == 0.0


def test_empty_hypotheses_score_0_with_brevity_penalty_0():
    result = corpus_bleu([[], []], [["a", "b"], ["c"]])
    assert (result.score, result.bp, result.sys_len, result.ref_len) == (0.0, 0.0, 0, 3)


def test_one_reference_may_be_given_as_its_token_list():
    hyps = [PAPER_CANDIDATE_1, PAPER_CANDIDATE_2]
    bare = [PAPER_REFERENCES[0], PAPER_REFERENCES[1]]
    assert corpus_bleu(hyps, bare) == corpus_bleu(hyps, [[ref] for ref in bare])
    assert corpus_bleu([["a"]], [("a",)]).score == corpus_bleu([["a"]], [[["a"]]]).score


tokens = st.lists(st.sampled_from(["a", "b", "c", "고양이", "가"]), max_size=30)
corpora = st.lists(
    st.tuples(tokens, st.lists(tokens, min_size=1, max_size=3)), min_size=1, max_size=8
)


@settings(max_examples=300, deadline=None)
@given(corpora)
def test_corpus_bleu_equals_sacrebleu_corpus_bleu(corpus):
    hyps = [h for h, _ in corpus]
    refs = [r for _, r in corpus]
    assert_same_as_sacrebleu(corpus_bleu(hyps, refs), sacrebleu_corpus(hyps, refs))


@settings(max_examples=300, deadline=None)
@given(
    corpora,
    st.integers(1, 5),
    st.sampled_from(list(SMOOTH_METHODS)),
    st.booleans(),
    st.sampled_from([None, 0.5, 2]),
)
def test_every_option_equals_sacrebleus_bleu(corpus, max_n, smooth_method, effective_order, value):
    if SMOOTH_METHODS[smooth_method] is None:
        value = None
    hyps = [h for h, _ in corpus]
    refs = [r for _, r in corpus]
    ours = corpus_bleu(hyps, refs, max_n, smooth_method, value, effective_order)
    metric = BLEU(
        tokenize="none",
        max_ngram_order=max_n,
        smooth_method=smooth_method,
        smooth_value=value,
        effective_order=effective_order,
    )
    theirs = metric.corpus_score(*as_sacrebleu(hyps, refs))
    assert_same_as_sacrebleu(ours, theirs, compare_counts=smooth_method != "add-k")


@settings(max_examples=200, deadline=None)
@given(tokens, st.lists(tokens, min_size=1, max_size=3))
def test_sentence_bleu_equals_sacrebleu_sentence_bleu(hypothesis, references):
    theirs = sacrebleu.sentence_bleu(
        " ".join(hypothesis), [" ".join(r) for r in references], tokenize="none"
    )
    assert_same_as_sacrebleu(sentence_bleu(hypothesis, references), theirs)


def test_exact_match_counts_sentences_equal_to_a_reference():
    hyps = [["a", "b"], ["c"], ["d", "e"], []]
    refs = [[["a", "b"]], [["x"], ("c",)], [["d"]], [[]]]
    assert exact_match(hyps, refs) == 0.75
    assert exact_match([["a", "b"]], [["a", "b"]]) == 1.0
    assert exact_match([["a", "b"]], [["b", "a"]]) == 0.0


def test_time_against_sacrebleu_times_both_on_the_same_corpus():
    hyps = [PAPER_CANDIDATE_1, PAPER_CANDIDATE_2]
    timing = time_against_sacrebleu(hyps, [PAPER_REFERENCES] * 2, repeats=2)
    assert timing.sentences == 2
    assert timing.ours_seconds > 0 and timing.sacrebleu_seconds > 0
    assert timing.ratio == timing.ours_seconds / timing.sacrebleu_seconds


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: corpus_bleu([["a"]], [["a"], ["b"]]),
            ValueError,
            "1 hypotheses but 2 reference sets",
        ),
        (lambda: corpus_bleu([], []), ValueError, "corpus is empty"),
        (
            lambda: corpus_bleu(["a b"], [["a", "b"]]),
            TypeError,
            r"hypotheses\[0\] must be a list of tokens, not one str",
        ),
        (lambda: corpus_bleu("a b", ["a b"]), TypeError, "hypotheses must be a list"),
        (lambda: corpus_bleu([["a"]], ["a"]), TypeError, r"references\[0\] must be a token list"),
        (
            lambda: corpus_bleu([["a"]], [[]]),
            ValueError,
            r"references\[0\] is empty; give \[\[\]\]",
        ),
        (
            lambda: corpus_bleu([["a", 1]], [["a"]]),
            TypeError,
            r"hypotheses\[0\] must hold str tokens, got int",
        ),
        (
            lambda: corpus_bleu([["a"]], [[["a"], [None]]]),
            TypeError,
            r"references\[0\]\[1\] must hold str tokens",
        ),
        (
            lambda: corpus_bleu([["a"]], [["a", ["b"]]]),
            TypeError,
            r"references\[0\] must hold str tokens, got list",
        ),
        (lambda: corpus_bleu([["a b"]], [["a"]]), ValueError, "without whitespace, got 'a b'"),
        (lambda: corpus_bleu([["a", ""]], [["a"]]), ValueError, "non-empty"),
        (lambda: corpus_bleu([["a"]], [["a"]], max_n=0), ValueError, "max_n must be an int >= 1"),
        (
            lambda: corpus_bleu([["a"]], [["a"]], max_n=True),
            ValueError,
            "max_n must be an int >= 1",
        ),
        (
            lambda: corpus_bleu([["a"]], [["a"]], smooth_method="add-one"),
            ValueError,
            "smooth_method must be one of",
        ),
        (
            lambda: corpus_bleu([["a"]], [["a"]], smooth_value=0.1),
            ValueError,
            "takes no smooth_value",
        ),
        (
            lambda: corpus_bleu([["a"]], [["a"]], smooth_method="floor", smooth_value=0),
            ValueError,
            "smooth_value must be > 0",
        ),
        (lambda: ngram_counts(["a"], 0), ValueError, "n must be an int >= 1"),
        (lambda: ngram_counts("ab", 1), TypeError, "not one str"),
        (lambda: modified_precision(["a"], [], 1), ValueError, "references is empty"),
        (lambda: brevity_penalty(-1, 3), ValueError, "hyp_len must be an int >= 0"),
        (lambda: brevity_penalty(2, 1.5), ValueError, "ref_len must be an int >= 0"),
        (lambda: closest_reference_length(3, []), ValueError, "at least one reference"),
        (lambda: exact_match([["a"]], []), ValueError, "1 hypotheses but 0 reference sets"),
        (
            lambda: time_against_sacrebleu([["a"]], [["a"]], repeats=0),
            ValueError,
            "repeats must be",
        ),
    ],
)
def test_bad_inputs_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
