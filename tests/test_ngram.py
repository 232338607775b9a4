"""The n-gram language model (5장) against nltk.lm, and the laws a distribution must obey."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.lm import KneserNeyInterpolated, Lidstone
from nltk.util import everygrams

from course_utils.ngram import NGramLM

TEXT = list("the cat sat on the mat. the dog sat on the log. a cat and a dog met on a mat.")


def _cyclic(order):
    # Appending the first tokens gives every n-gram a predecessor, so the stream's
    # start is no special case and nltk's and our definitions of follower types agree.
    return TEXT + TEXT[:order]


def _contexts(order):
    # Histories of up to order - 1 tokens, the only part a model of this order reads
    # (nltk's Lidstone would look longer ones up verbatim instead of truncating).
    candidates = [(), tuple("t"), tuple("a "), tuple("og"), tuple("zq"), tuple(" ma")]
    return [c for c in candidates if len(c) <= order - 1]


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_add_k_matches_nltk_lidstone(order):
    tokens = _cyclic(order)
    ours = NGramLM(tokens, order, smoothing="add_k", k=0.3, unk="<UNK>")
    reference = Lidstone(0.3, order)
    reference.fit([everygrams(tokens, max_len=order)], tokens)
    for context in _contexts(order):
        for word in [*set(tokens), "<UNK>"]:
            assert ours.prob(word, context) == pytest.approx(reference.score(word, context), rel=1e-12)  # fmt: skip


@pytest.mark.parametrize("order", [2, 3, 4])
def test_kneser_ney_without_uniform_matches_nltk(order):
    tokens = _cyclic(order)
    ours = NGramLM(tokens, order, discount=0.1, unk="<UNK>", interpolate_uniform=False)
    reference = KneserNeyInterpolated(order, discount=0.1)
    reference.fit([everygrams(tokens, max_len=order)], tokens)
    for context in _contexts(order):
        for word in set(tokens):
            assert ours.prob(word, context) == pytest.approx(reference.score(word, context), rel=1e-12)  # fmt: skip


@given(
    text=st.text(alphabet="abcde ", min_size=5, max_size=60),
    order=st.integers(1, 4),
    smoothing=st.sampled_from(["add_k", "kneser_ney"]),
    context=st.text(alphabet="abcdexy ", max_size=4),
)
@settings(max_examples=150, deadline=None)
def test_every_conditional_distribution_sums_to_one(text, order, smoothing, context):
    model = NGramLM(list(text), order, smoothing=smoothing, k=0.5)
    distribution = model.distribution(list(context))
    assert np.all(distribution > 0)
    assert distribution.sum() == pytest.approx(1.0, abs=1e-9)


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size():
    model = NGramLM(list("abcd"), 1, smoothing="add_k", k=1e9)  # counts drown in k
    assert model.perplexity(list("dcbaab")) == pytest.approx(len(model.vocab), rel=1e-6)


def test_unknown_tokens_map_to_unk_and_sampling_is_seeded():
    model = NGramLM(list("abcabcabd"), 3)
    assert model.prob("z", ["a"]) == model.prob("<unk>", ["a"]) > 0
    total, count = model.log_likelihood(list("abz"))
    assert count == 3 and math.isfinite(total)
    assert model.sample(20, list("ab"), seed=1) == model.sample(20, list("ab"), seed=1)
    # After "ab" the corpus has "c" twice and "d" once; "a" never follows "ab".
    p = dict(zip(model.vocab, model.distribution(list("ab")), strict=True))
    assert p["c"] > p["d"] > p["a"]
    draws = [model.sample(1, list("ab"), seed=s)[0] for s in range(300)]
    assert draws.count("c") > draws.count("d") > draws.count("a")


def test_bad_input_gets_clear_errors():
    with pytest.raises(TypeError, match="list\\(text\\)"):
        NGramLM("abc", 2)
    with pytest.raises(ValueError, match="order must be an int >= 1"):
        NGramLM(list("abc"), 0)
    with pytest.raises(ValueError, match="smoothing"):
        NGramLM(list("abc"), 2, smoothing="good_turing")
    with pytest.raises(ValueError, match="k must be > 0"):
        NGramLM(list("abc"), 2, smoothing="add_k", k=0)
    with pytest.raises(ValueError, match="discount"):
        NGramLM(list("abc"), 2, discount=1.5)
    with pytest.raises(ValueError, match="at least order=4"):
        NGramLM(list("abc"), 4)
    model = NGramLM(list("abcab"), 2)
    with pytest.raises(ValueError, match="empty"):
        model.perplexity([])
    with pytest.raises(TypeError, match="list\\(text\\)"):
        model.perplexity("abc")
    with pytest.raises(TypeError, match="list\\(text\\)"):
        model.prob("a", "bc")
    with pytest.raises(ValueError, match="length"):
        model.sample(-1)
    assert "order=2" in repr(model)
