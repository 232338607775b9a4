"""The n-gram language model (5장) against nltk.lm, and the laws a distribution must obey."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.lm import KneserNeyInterpolated, Lidstone
from nltk.util import everygrams

from course_utils.ngram import NGramLM, choose_add_k, compare_smoothing

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


def _kn_by_the_printed_formula(tokens, order, discount, word, context):
    """P_KN(word | context) term by term as 5장 prints it, from the raw n-grams of ``tokens``.

    Written from the chapter's equations, not from the module: c_KN is the raw count
    at the top order and the continuation count N1+(• h w) below it; λ(h) =
    D·N1+(h •)/C(h); an unseen history (C(h) = 0) hands everything to h'; the bottom
    interpolates with the uniform 1/|V|; unknown tokens are <unk>.
    """
    vocab = [*sorted(set(tokens)), "<unk>"]
    grams = {m: [tuple(tokens[i : i + m]) for i in range(len(tokens) - m + 1)] for m in range(1, order + 2)}  # fmt: skip

    def c_kn(gram):
        if len(gram) == order:
            return grams[order].count(gram)  # c(h w)
        return len({g[0] for g in grams[len(gram) + 1] if g[1:] == gram})  # N1+(• h w)

    def p_kn(w, h):
        stats = {v: c_kn((*h, v)) for v in vocab}
        total = sum(stats.values())  # C(h)
        lower = 1 / len(vocab) if not h else p_kn(w, h[1:])
        if h and total == 0:
            return lower
        followers = sum(1 for s in stats.values() if s > 0)  # N1+(h •)
        return max(stats[w] - discount, 0) / total + discount * followers / total * lower

    known = set(tokens)
    history = tuple(t if t in known else "<unk>" for t in context)
    history = history[-(order - 1) :] if order > 1 else ()
    return p_kn(word if word in known else "<unk>", history)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_kneser_ney_is_the_formula_the_chapter_prints(order):
    # Not cyclic: the stream's first tokens (no predecessor) are part of the test.
    tokens = list("abxacyac abba cab xa")
    model = NGramLM(tokens, order, discount=0.6)
    contexts = [(), ("a",), ("x",), ("z",), ("a", "c"), ("b", "x"), ("c", "a", "b"), ("q", "a", "b")]  # fmt: skip
    for context in contexts:
        for word in [*sorted(set(tokens)), "<unk>", "never seen"]:
            expected = _kn_by_the_printed_formula(tokens, order, 0.6, word, context)
            assert model.prob(word, context) == pytest.approx(expected, rel=1e-12, abs=0)


def test_kneser_ney_by_hand_on_a_five_token_text():
    # "abcab", D = 1/2, |V| = 4 (a, b, c, <unk>). Bigram types ab, bc, ca: N1+(• •) = 3,
    # each token follows one type, so P(b) = (1 - 1/2)/3 + (1/2 · 3/3) · 1/4 = 7/24.
    # c(a b) = 2 = c(a), one follower: P(b | a) = (2 - 1/2)/2 + (1/2 · 1/2) · 7/24 = 79/96.
    model = NGramLM(list("abcab"), 2, discount=0.5)
    assert model.prob("b") == pytest.approx(7 / 24, rel=1e-12)
    assert model.prob("b", ["a"]) == pytest.approx(79 / 96, rel=1e-12)
    assert model.prob("<unk>") == pytest.approx(1 / 8, rel=1e-12)  # only the uniform share
    assert model.prob("b", ["z"]) == model.prob("b")  # unseen history: all mass to the shorter one


def _nltk_kneser_ney(tokens, order, discount):
    reference = KneserNeyInterpolated(order, discount=discount)
    reference.fit([everygrams(tokens, max_len=order)], tokens)
    return reference


def test_where_nltk_kneser_ney_and_ours_part():
    """NLTK leaves out the uniform, and counts the follower types of λ from raw counts."""
    # "ab" occurs only at the start: N1+(• a b) = 0 but c(a b) = 1, so NLTK's λ(a) counts
    # two follower types (b, c) where the kept mass counts one; its P(· | a) sums to 1.05.
    tokens = list("abxacyac")
    reference = _nltk_kneser_ney(tokens, 3, 0.1)
    ours = NGramLM(tokens, 3, discount=0.1, unk="<UNK>", interpolate_uniform=False)
    vocab = sorted(set(tokens))
    assert sum(reference.score(w, ("a",)) for w in vocab) == pytest.approx(1.05, abs=1e-12)
    assert sum(ours.prob(w, ("a",)) for w in vocab) == pytest.approx(1.0, abs=1e-12)
    # At the bottom NLTK has no uniform: a token no bigram ends in gets nothing.
    assert reference.score("<UNK>", ("c",)) == 0.0
    assert NGramLM(tokens, 3, discount=0.1).prob("<unk>", ("c",)) > 0
    # "x" opens the text and never comes back: followed once, never preceded. NLTK finds
    # c(x •) > 0 and divides by N1+(• x •) = 0; ours sees C(x) = 0 and backs off.
    starts = list("xabyab")
    with pytest.raises(ZeroDivisionError):
        _nltk_kneser_ney(starts, 3, 0.1).score("a", ("x",))
    ours = NGramLM(starts, 3, discount=0.1, interpolate_uniform=False)
    assert ours.prob("a", ("x",)) == ours.prob("a")


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


def test_choose_add_k_scores_every_k_on_the_last_part_of_the_training_text():
    tokens = list("the cat sat on the mat. the dog sat on the log. " * 4)
    k, scores = choose_add_k(tokens, 2, k_choices=(1.0, 0.1), validation_fraction=0.25)
    cut = int(len(tokens) * 0.75)
    for choice in (1.0, 0.1):
        expected = NGramLM(tokens[:cut], 2, "add_k", k=choice).perplexity(tokens[cut:])
        assert scores[choice] == pytest.approx(expected, rel=1e-12)
    assert scores[k] == min(scores.values())
    with pytest.raises(ValueError, match="validation_fraction"):
        choose_add_k(tokens, 2, validation_fraction=1.0)
    with pytest.raises(ValueError, match="k_choices is empty"):
        choose_add_k(tokens, 2, k_choices=())
    with pytest.raises(TypeError, match="list\\(text\\)"):
        choose_add_k("the cat", 2)


def test_compare_smoothing_fits_each_order_on_all_the_training_text():
    train, held_out = TEXT[:60], TEXT[60:]
    result = compare_smoothing(train, held_out, orders=(1, 3), k_choices=(0.5, 0.05))
    assert result.orders == [1, 3] and len(result.best_k) == len(result.add_k) == 2
    for order, k, add_k, kn in zip(
        result.orders, result.best_k, result.add_k, result.kneser_ney, strict=True
    ):
        assert k == choose_add_k(train, order, (0.5, 0.05))[0]
        assert add_k == NGramLM(train, order, "add_k", k=k).perplexity(held_out)
        assert kn == NGramLM(train, order, discount=0.75).perplexity(held_out)
    assert compare_smoothing(train, held_out, orders=(1, 3), k_choices=(0.5, 0.05)) == result
