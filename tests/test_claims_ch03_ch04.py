"""The measured outcomes that chapter 4 states in words, checked again.

Chapter 3's statements (memory of the three representations, lookup against
one-hot products, the spread of random cosines) are checked by the chapter's
own cells at build time; they need no training. Chapter 4 compares our
Word2Vec with gensim's, skip-gram with CBOW, fastText with Word2Vec on unseen
Korean eojeol, and GloVe's weighting with its two extremes: these tests call
the same functions with the chapter's settings (the CPU-sized run), so that a
sentence such as "the two implementations score about the same" fails loudly
if it stops being true. The comparison with gensim is the one 4장 made and kept
(``comparison_scores``) when the book was built with this cache; else it is made here.
"""

import numpy as np
import pytest

from course_utils.count_vectors import cooccurrence_matrix, encode_corpus
from course_utils.datasets import korean_corpus_lines, load_wiki_sample
from course_utils.experiments.ch04_word2vec import comparison_scores
from course_utils.subword_vectors import (
    SubwordConfig,
    compare_unseen_eojeols,
    pair_weight_shares,
)
from course_utils.word2vec import (
    Word2VecConfig,
    keep_probability,
    time_against_gensim,
    time_skipgram_and_cbow,
)

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
    comparison = comparison_scores(articles, CHAPTER_CONFIG)  # 4장's comparison, if it ran
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
    # "손실은 첫 에폭 뒤에 가장 크게 줄고, 그 뒤로는 조금씩만 움직입니다" (skip-gram)
    loss = np.array(comparison.loss)
    assert loss[0] - loss[1] > np.max(np.abs(np.diff(loss)[1:])) and loss[-1] < loss[0]


def test_gensim_trains_faster_than_the_numpy_skipgram(articles):
    """4장: one epoch each on the first 10 articles, alternating, median of 3."""
    speed = time_against_gensim(articles[:10], CHAPTER_CONFIG, repeats=3)
    assert speed.gensim_speedup > 1.1


def test_cbow_trains_faster_than_skipgram(articles):
    """4장: one epoch of each on the first 10 articles, alternating, median of 3."""
    timing = time_skipgram_and_cbow(articles[:10], CHAPTER_CONFIG, repeats=3)
    assert timing.cbow_speedup > 1.5


def test_the_papers_subsampling_threshold_keeps_far_fewer_words(articles):
    """4장: at t = 1e-5 the C formula keeps more than the paper's; both keep far fewer than at 1e-3."""
    from collections import Counter

    word_counts = Counter(w for a in articles for w in a)
    words = list(word_counts)
    counts = np.array([word_counts[w] for w in words])
    frequency = counts / counts.sum()
    default, code, paper = (
        keep_probability(counts, 1e-3),
        keep_probability(counts, 1e-5),
        np.minimum(1.0, np.sqrt(1e-5 / frequency)),
    )
    kept = [np.sum(counts * p) / counts.sum() for p in (default, code, paper)]
    assert np.all(code >= paper)
    assert kept[2] <= kept[1] < kept[0] / 2
    king = words.index("king")  # kept whole at 1e-3, partly dropped at 1e-5
    assert default[king] == 1 and code[king] < 1 and paper[king] < 1


@pytest.fixture(scope="module")
def korean_morphemes():
    from course_utils.text import MorphTokenizer

    lines = korean_corpus_lines()
    okt = MorphTokenizer("okt")
    return lines, [okt.morphs(line) for line in lines]


def test_fasttext_gives_more_held_out_eojeol_a_vector_than_either_word2vec(korean_morphemes):
    """4장: coverage fastText > morpheme Word2Vec > eojeol Word2Vec; unseen eojeol near their stems."""
    lines, morphemes = korean_morphemes
    result = compare_unseen_eojeols(lines, morphemes, SubwordConfig())
    covered = {name: n / result.held_out_tokens for name, n in result.covered_tokens.items()}
    assert result.covered_tokens["eojeol_word2vec"] == result.held_out_tokens - result.unseen_tokens
    assert covered["fasttext"] > covered["morpheme_word2vec"] > covered["eojeol_word2vec"]
    assert 0.1 < result.unseen_tokens / result.held_out_tokens < 0.5
    assert "국민으로부터" in result.unseen
    assert result.stem_cosine > result.other_stem_cosine + 0.05
    assert result.other_stem_cosine > 0.3  # the small corpus's vectors lean one way


def test_glove_weight_sits_between_uniform_and_count_weighting(korean_morphemes):
    """4장: f gives the once-seen pairs and the top 1% pairs a share between the two extremes."""
    _, morphemes = korean_morphemes
    vocabulary, ids = encode_corpus(morphemes)
    X = cooccurrence_matrix(ids, len(vocabulary), 5)
    shares = pair_weight_shares(X, top_fraction=0.01)
    once, top = shares.once, shares.top
    assert once["count"] < once["glove"] < once["uniform"] and once["uniform"] > 0.5
    assert top["uniform"] < top["glove"] < top["count"]
