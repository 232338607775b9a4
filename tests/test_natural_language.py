import itertools
import math
import random

import nltk
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from course_utils.datasets import load_kolaw
from course_utils.natural_language import (
    BigramModel,
    bag_of_words,
    chain_rule_log_prob,
    edit_distance,
    rank_frequency,
    zipf_fit,
)


@given(st.text(alphabet="abc가나", max_size=12), st.text(alphabet="abc가나", max_size=12))
def test_edit_distance_matches_nltk(a, b):
    assert edit_distance(a, b) == nltk.edit_distance(a, b)


def test_edit_distance_works_on_token_lists():
    assert edit_distance(["개가", "사람을"], ["사람을", "개가"]) == 2


def test_chapter_claim_similar_meaning_is_not_similar_spelling():
    unrelated = [("의자", "이자"), ("과자", "과제")]
    related = [("의자", "걸상"), ("자동차", "승용차")]
    assert min(edit_distance(*p) for p in related) > max(edit_distance(*p) for p in unrelated)


def test_bag_of_words_forgets_order():
    assert bag_of_words(["dog", "bites", "man"]) == bag_of_words(["man", "bites", "dog"])
    with pytest.raises(TypeError, match="tokenize"):
        bag_of_words("dog bites man")


def test_zipf_fit_matches_scipy_linregress():
    counts = [c for _, c in rank_frequency(load_kolaw().split())]
    s, c = zipf_fit(counts, max_rank=500)
    ref = stats.linregress(np.log(np.arange(1, 501)), np.log(counts[:500]))
    assert s == pytest.approx(-ref.slope, rel=1e-9)
    assert c == pytest.approx(ref.intercept, rel=1e-9)


def test_zipf_fit_recovers_an_exact_power_law():
    ranks = np.arange(1, 200)
    s, c = zipf_fit(list(1000.0 * ranks**-1.3))
    assert s == pytest.approx(1.3) and c == pytest.approx(math.log(1000.0))


@pytest.mark.parametrize("bad", [[5], [1, 2, 3], [3, 0], [[1, 2]]])
def test_zipf_fit_rejects_bad_counts(bad):
    with pytest.raises(ValueError):
        zipf_fit(bad)


def test_zipf_fit_rejects_tiny_max_rank():
    with pytest.raises(ValueError, match="max_rank"):
        zipf_fit([3, 2, 1], max_rank=1)


def test_bigram_chain_rule_defines_a_distribution_over_sequences():
    # Summing P(x_1..x_3) over every sequence of length 3 must give exactly 1.
    model = BigramModel(["abca", "bca", "cab"], alpha=0.5)
    total = sum(
        math.exp(model.sequence_log_prob("".join(seq)))
        for seq in itertools.product(model.vocab, repeat=3)
    )
    assert total == pytest.approx(1.0, abs=1e-12)


def test_chain_rule_is_the_sum_of_conditionals():
    calls = []

    def cond(history, token):
        calls.append((tuple(history), token))
        return math.log(0.5)

    assert chain_rule_log_prob("abc", cond) == pytest.approx(3 * math.log(0.5))
    assert calls == [((), "a"), (("a",), "b"), (("a", "b"), "c")]


def test_chapter_claim_original_order_beats_every_shuffle():
    lines = [line.strip() for line in load_kolaw().splitlines() if line.strip()]
    model = BigramModel(lines)
    sentence = "모든 국민은 법 앞에 평등하다."
    rng = random.Random(0)
    original = model.sequence_log_prob(sentence)
    for _ in range(200):
        chars = list(sentence)
        rng.shuffle(chars)
        assert model.sequence_log_prob("".join(chars)) < original


def test_bigram_model_errors():
    with pytest.raises(ValueError, match="empty"):
        BigramModel([])
    with pytest.raises(ValueError, match="alpha"):
        BigramModel(["ab"], alpha=0)
    with pytest.raises(TypeError, match="list of sequences"):
        BigramModel("abc")
    with pytest.raises(KeyError, match="never seen"):
        BigramModel(["ab"]).sequence_log_prob("abz")
    with pytest.raises(TypeError, match="sequence of tokens"):
        edit_distance(3, "a")  # type: ignore[arg-type]
