"""The measured outcomes that chapters 5 and 6 state in words, checked again.

Each test calls the function its chapter calls, with the chapter's settings
(the CPU size, ``COURSE_RUN=small``, on the CPU), and checks the sentences the
chapter checks with ``claim``, so a sentence fails here too if it stops being
true. The language model is the one 6장 trained and kept (``char_lm_run``) when the
book was built with this cache; else it is trained here, its full 16 epochs.
"""

import itertools
import math

import pytest

from course_utils.datasets import korean_char_split
from course_utils.experiments.ch06_rnn import (
    char_lm_config,
    char_lm_run,
    run_line_classifier,
    run_spacing_tagger,
    sample_at_temperatures,
)
from course_utils.ngram import NGramLM, compare_smoothing

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chars():
    return korean_char_split()


@pytest.fixture(scope="module")
def char_lm(chars):
    """6장's language model on the CPU: the chapter's run when it kept one, else trained here
    as the chapter trains it."""
    return char_lm_run(*chars, char_lm_config("small"))


def test_kneser_ney_beats_add_k_and_improves_up_to_four_grams(chars):
    """5장: KN ≤ add-k at every n and KN falls with n; add-k is worse at 4 than at its best n."""
    result = compare_smoothing(*chars)
    kn, add_k = result.kneser_ney, result.add_k
    assert all(a >= b for a, b in zip(add_k, kn, strict=True))
    assert kn == sorted(kn, reverse=True) and result.orders[kn.index(min(kn))] == 4
    assert add_k.index(min(add_k)) < 3 and add_k[3] > min(add_k)
    gap = [a / b for a, b in zip(add_k, kn, strict=True)]
    assert gap == sorted(gap)  # the longer the context, the larger KN's lead
    assert kn[0] > 100 and kn[3] < 10


def test_rnn_language_model_beats_the_bigram_but_not_the_four_gram(chars, char_lm):
    """6장: far better than the 1- and 2-gram (more than 1.5 times lower), worse than KN-4."""
    train, held_out = chars
    kn = {n: NGramLM(train, n).perplexity(held_out) for n in [1, 2, 4]}
    assert char_lm.perplexity < kn[1]
    assert kn[2] / char_lm.perplexity > 1.5
    assert char_lm.perplexity > kn[4]


def test_learning_curves_part_in_the_second_half(char_lm):
    """6장: after half the epochs the training perplexity falls faster than the held-out one."""
    train = [math.exp(loss) for loss in char_lm.history.train_loss]  # perplexities
    val = [math.exp(loss) for loss in char_lm.history.val_loss]
    half = char_lm.config.epochs // 2
    assert val[-1] - train[-1] > val[half - 1] - train[half - 1] > 0
    assert train[half - 1] / train[-1] > val[half - 1] / val[-1] > 1


def test_low_temperatures_copy_and_repeat_high_ones_break_words(chars, char_lm):
    """6장's table: distinct characters rise, known 3-grams and self-repeats fall with τ."""
    samples = sample_at_temperatures(char_lm.model, char_lm.vocab, chars[0])
    distinct = [s.distinct_chars for s in samples]
    known = [s.known_trigrams for s in samples]
    repeated = [s.repeated_4grams for s in samples]
    assert distinct == sorted(set(distinct))
    assert known == sorted(set(known), reverse=True)
    assert repeated == sorted(repeated, reverse=True)
    assert repeated[0] > 0.2 and repeated[-1] < 0.05
    assert known[0] > 0.9 and known[-1] < 0.5


def test_line_classifier_beats_the_majority_class():
    """6장, many-to-one: the last hidden state tells constitution lines from bill lines."""
    result = run_line_classifier(device="cpu", show_progress=False)
    assert result.accuracy > result.majority
    # Lines are cut to their first max_chars characters; a few held-out lines are longer.
    assert 0 < result.cut_test_lines < result.test_lines / 10


def test_spacing_tagger_beats_never_spacing(chars):
    """6장, many-to-many: more than 10 points above answering "no space" everywhere."""
    result = run_spacing_tagger(*chars, device="cpu", show_progress=False)
    assert result.accuracy > result.all_joined + 0.1


def test_tanh_state_stays_bounded_while_relu_state_blows_up():
    """6장, 왜 tanh인가: with W_hh of spectral radius 2, ReLU grows every step, tanh stays under √H."""
    from course_utils.experiments.ch06_rnn import state_norms

    norms = state_norms()
    tanh, relu = norms.norms["tanh"], norms.norms["relu"]
    assert max(tanh) < math.sqrt(norms.hidden_size)
    assert all(b > a for a, b in itertools.pairwise(relu[4:]))
    assert relu[-1] > 1000 * relu[0]
