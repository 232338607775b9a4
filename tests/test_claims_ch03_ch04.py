"""The measured outcomes that chapter 4 states in words, re-measured.

Chapter 3's statements (memory of the three representations, lookup against
one-hot products, the spread of random cosines) are checked by the chapter's
own cells at build time; they need no training. Chapter 4 compares our
Word2Vec with gensim's: these tests call the same functions with the
chapter's settings (the CPU-sized run), so that "the two implementations
score about the same" fails loudly if it stops being true.
"""

import pytest

from course_utils.datasets import load_wiki_sample
from course_utils.word2vec import Word2VecConfig, compare_with_gensim, time_against_gensim

pytestmark = pytest.mark.slow

# 4장's skip-gram on the Wikipedia sample (COURSE_RUN=small: 5 epochs).
CHAPTER_CONFIG = Word2VecConfig(
    vector_size=100, window=5, negative=5, min_count=5, sample=1e-3, epochs=5, seed=1
)


@pytest.fixture(scope="module")
def articles():
    return load_wiki_sample()


def test_ours_and_gensim_score_about_the_same_and_both_fail_the_analogies(articles):
    """4장: same pairs, ρ within 0.05 of each other, far below 0.6, analogies below 10%."""
    comparison = compare_with_gensim(articles, CHAPTER_CONFIG)
    ours, theirs = comparison.ours_scores, comparison.reference_scores
    assert (ours.ws353_pairs, ours.simlex_pairs, ours.analogy_questions) == (
        theirs.ws353_pairs,
        theirs.simlex_pairs,
        theirs.analogy_questions,
    )
    assert abs(ours.ws353_rho - theirs.ws353_rho) < 0.05
    assert abs(ours.simlex_rho - theirs.simlex_rho) < 0.05
    assert max(ours.ws353_rho, theirs.ws353_rho) < 0.45
    assert max(ours.analogy_accuracy, theirs.analogy_accuracy) < 0.1


def test_gensim_trains_faster_than_the_numpy_skipgram(articles):
    """4장: one epoch each on the first 10 articles, alternating, median of 3."""
    speed = time_against_gensim(articles[:10], CHAPTER_CONFIG, repeats=3)
    assert speed.gensim_speedup > 1.5
