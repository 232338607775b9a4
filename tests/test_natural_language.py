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
    shuffle_test,
    zipf_fit,
    zipf_summary,
)


@given(st.text(alphabet="abc가나", max_size=12), st.text(alphabet="abc가나", max_size=12))
def test_edit_distance_matches_nltk(a, b):
    assert edit_distance(a, b) == nltk.edit_distance(a, b)


def test_edit_distance_works_on_token_lists():
    assert edit_distance(["개가", "사람을"], ["사람을", "개가"]) == 2


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


def test_shuffle_test_scores_random_orders_of_the_same_characters():
    model = BigramModel(["abcabd", "bcad", "dcba"], alpha=0.5)
    result = shuffle_test(model, "abcd", n_shuffles=30, seed=3)
    rng = random.Random(3)
    expected = []
    for _ in range(30):
        chars = list("abcd")
        rng.shuffle(chars)
        expected.append(model.sequence_log_prob("".join(chars)))
    assert result.original == model.sequence_log_prob("abcd")
    assert result.shuffled == expected
    assert result.beaten == np.mean(np.array(expected) < result.original)
    assert shuffle_test(model, "abcd", n_shuffles=30, seed=3) == result  # seeded


def test_shuffle_test_rejects_bad_input():
    model = BigramModel(["ab"])
    with pytest.raises(ValueError, match="2\\+ characters"):
        shuffle_test(model, "a")
    with pytest.raises(ValueError, match="n_shuffles"):
        shuffle_test(model, "ab", n_shuffles=0)


def test_zipf_summary_measures_shares_and_coverage():
    tokens = list("aaaabbcd")  # counts 4, 2, 1, 1
    summary = zipf_summary(tokens, top=1, max_rank=None)
    assert summary.ranked == [("a", 4), ("b", 2), ("c", 1), ("d", 1)]
    assert summary.counts == [4, 2, 1, 1]
    assert summary.top_share == 0.5  # "a" is half of the tokens
    assert summary.half_rank == 1
    assert summary.singleton_share == 0.5  # c and d, out of four types
    assert (summary.exponent, summary.intercept) == zipf_fit([4, 2, 1, 1])
    assert zipf_summary(list("aaabbc"), top=2).half_rank == 1  # 3/6 already covers half
    assert zipf_summary(list("aabbcc"), top=2).half_rank == 2  # 2/6 < 1/2 <= 4/6
    with pytest.raises(ValueError, match="top"):
        zipf_summary(tokens, top=0)
    with pytest.raises(ValueError, match="2 distinct"):
        zipf_summary(list("aaa"))


def test_zipf_summary_can_leave_the_tail_of_tokens_seen_once_out_of_the_fit():
    # counts 12, 6, 4, 3 are f(r) = 12 / r exactly; then four tokens seen once
    tokens = list("a" * 12 + "b" * 6 + "c" * 4 + "d" * 3 + "efgh")
    head = zipf_summary(tokens, max_rank=None, min_count=2)
    assert (head.exponent, head.intercept) == zipf_fit([12, 6, 4, 3])
    assert head.exponent == pytest.approx(1.0) and head.intercept == pytest.approx(math.log(12))
    assert zipf_summary(tokens, max_rank=None).exponent > 1.1  # the flat tail pulls the slope up
    assert head.singleton_share == 4 / 8  # the coverage still counts every token
    assert zipf_summary(tokens, max_rank=2, min_count=2).exponent == zipf_fit([12, 6])[0]
    with pytest.raises(ValueError, match="seen 7\\+ times"):
        zipf_summary(tokens, min_count=7)  # only "a"
    with pytest.raises(ValueError, match="min_count"):
        zipf_summary(tokens, min_count=0)


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
