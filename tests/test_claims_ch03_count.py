"""The outcomes that chapter 3's count-based sections state in words, re-measured.

Each test calls the same course_utils.count_vectors functions with the
chapter's settings: the ten chapters of the Constitution for TF-IDF, the toy
corpus LODGING_AND_LAW with a window of 2 for co-occurrence and PPMI, and 4장's
Wikipedia sample for the SVD word vectors scored by gensim.
"""

from collections import Counter

import numpy as np
import pytest

from course_utils.count_vectors import (
    LODGING_AND_LAW,
    CountConfig,
    constitution_chapters,
    cooccurrence_matrix,
    count_word_vectors,
    encode_corpus,
    ppmi,
    svd_word_vectors,
    tfidf,
    top_terms,
    truncated_svd,
)
from course_utils.word_vectors import cosine_similarity

WORDS = ["호텔", "모텔", "여관", "헌법", "국민"]  # the chapter's five words
LODGING, LAW = [0, 1, 2], [3, 4]
TOY_WINDOW = 2


@pytest.fixture(scope="module")
def wiki():
    from course_utils.datasets import load_wiki_sample

    articles = load_wiki_sample()
    return articles, count_word_vectors(articles, CountConfig())


# -- TF-IDF of the Constitution's chapters ----------------------------------------


@pytest.fixture(scope="module")
def constitution():
    from course_utils.datasets import load_kolaw
    from course_utils.text import MorphTokenizer

    okt = MorphTokenizer("okt")
    chapters = constitution_chapters(load_kolaw())
    nouns = [
        [m for m, tag in okt.pos(text) if tag == "Noun" and len(m) > 1]
        for text in chapters.values()
    ]
    return list(chapters), nouns


@pytest.mark.slow
def test_counts_put_the_everywhere_word_law_on_top_and_tfidf_pushes_it_down(constitution):
    """3장: '법률' is in (almost) every chapter, in several TF top 3s, in fewer TF-IDF top 3s."""
    titles, nouns = constitution
    counts = [Counter(n) for n in nouns]
    assert sum("법률" in c for c in counts) >= len(titles) - 1
    # in the top 3 with ties, as 3장 counts: at least the third largest count
    law_top3_tf = sum(c["법률"] >= sorted(c.values(), reverse=True)[2] for c in counts)
    assert law_top3_tf >= 3
    weights, terms = tfidf(nouns)
    top3 = {
        t: [w for w, _ in top]
        for t, top in zip(titles, top_terms(weights, terms, k=3), strict=True)
    }
    rows = weights.toarray()
    third = np.sort(rows, axis=1)[:, -3]  # ties in, as for the counts
    assert int((rows[:, terms.index("법률")] >= third - 1e-12).sum()) < law_top3_tf
    assert [top3[t][0] for t in ["제3장 국회", "제4장 정부", "제5장 법원"]] == [
        "국회",
        "대통령",
        "대법원",
    ]
    assert counts[4].most_common(1)[0][0] == "법률" and top3["제5장 법원"][0] != "법률"
    assert "정은" in top3["제10장 헌법개정"]  # Okt's split of '개정은'
    second = next(t for t in titles if t.startswith("제2장"))
    assert "모든" in top3[second]  # a determiner Okt tags as a noun


@pytest.mark.slow
def test_tfidf_of_the_constitution_equals_sklearn(constitution):
    """3장: our TF-IDF and TfidfVectorizer agree to 1e-12; the largest idf is ln(11/2) + 1."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    titles, nouns = constitution
    weights, terms = tfidf(nouns)
    reference = TfidfVectorizer(analyzer=lambda n: n)
    expected = reference.fit_transform(nouns)
    assert list(reference.get_feature_names_out()) == terms
    assert abs(weights - expected).max() < 1e-12
    assert max(reference.idf_) == np.log((1 + len(titles)) / 2) + 1


# -- the toy corpus ----------------------------------------------------------------


@pytest.fixture(scope="module")
def toy():
    vocabulary, ids = encode_corpus([s.split() for s in LODGING_AND_LAW])
    counts = cooccurrence_matrix(ids, len(vocabulary), TOY_WINDOW)
    return vocabulary, counts, ppmi(counts)


def _similarity(vocabulary, matrix):
    rows = [vocabulary.index(w) for w in WORDS]
    return cosine_similarity(matrix[rows].toarray(), matrix[rows].toarray())


def _within_and_across(similarity):
    within = min(similarity[i, j] for i in LODGING for j in LODGING if i != j)
    across = max(similarity[i, j] for i in LODGING for j in LAW)
    return within, across


def _contexts(vocabulary, matrix, word):
    row = matrix[vocabulary.index(word)]
    return {vocabulary[j]: row[0, j] for j in row.nonzero()[1]}


def test_counts_make_lodging_words_similar_but_particles_link_hotel_and_constitution(toy):
    """3장: within-lodging cosines beat every lodging–law cosine; 호텔 and 헌법 share only 은, 에."""
    vocabulary, counts, _ = toy
    similarity = _similarity(vocabulary, counts)
    within, across = _within_and_across(similarity)
    assert within > across
    assert similarity[0, 3] > 0
    shared = (
        _contexts(vocabulary, counts, "호텔").keys() & _contexts(vocabulary, counts, "헌법").keys()
    )
    assert sorted(shared) == ["에", "은"]


def test_ppmi_shrinks_the_particle_link_and_keeps_lodging_words_together(toy):
    """3장: 호텔–헌법 falls; 은 is 호텔's weakest context and falls below 국민, 법률 for 헌법."""
    vocabulary, counts, weighted = toy
    by_counts, by_ppmi = _similarity(vocabulary, counts), _similarity(vocabulary, weighted)
    assert by_ppmi[0, 3] < by_counts[0, 3]
    assert vocabulary[0] == "은"  # the commonest word of the toy corpus
    hotel = _contexts(vocabulary, weighted, "호텔")
    assert min(hotel, key=hotel.get) == "은"
    law_counts, law_ppmi = (
        _contexts(vocabulary, counts, "헌법"),
        _contexts(vocabulary, weighted, "헌법"),
    )
    assert max(law_counts, key=law_counts.get) == "은"
    assert law_ppmi["은"] < min(law_ppmi["국민"], law_ppmi["법률"])
    within, across = _within_and_across(by_ppmi)
    assert within > across


def test_svds_matches_numpy_on_the_toy_ppmi_and_two_dimensions_split_the_topics(toy):
    """3장: rank-5 svds = numpy.linalg.svd (1e-10); in 2-D the second axis separates the groups."""
    vocabulary, _, weighted = toy
    u, s, qt = truncated_svd(weighted, 5)
    u_full, s_full, qt_full = np.linalg.svd(weighted.toarray())
    assert s_full[4] - s_full[5] > 1e-3  # the rank-5 approximation is unique
    assert np.abs(s - s_full[:5]).max() < 1e-10
    best = (u_full[:, :5] * s_full[:5]) @ qt_full[:5]
    assert np.abs((u * s) @ qt - best).max() < 1e-10
    points = svd_word_vectors(weighted, 2)
    lodging = points[
        [vocabulary.index(w) for w in ["호텔", "모텔", "여관", "방", "숙박", "요금"]], 1
    ]
    law = points[[vocabulary.index(w) for w in ["헌법", "국민", "법률", "권리", "의무"]], 1]
    assert lodging.max() < law.min() or law.max() < lodging.min()


# -- Wikipedia: 4장's corpus --------------------------------------------------------


def _top_contexts(result, matrix, word, n=6):
    row = matrix[result.index_to_key.index(word)].toarray().ravel()
    return [result.index_to_key[j] for j in np.argsort(-row, kind="stable")[:n]]


@pytest.mark.slow
def test_raw_counts_rank_function_words_first_and_ppmi_content_words(wiki):
    """3장: count top-6 contexts of music/war are in the 10 commonest words; PPMI's outside the 100."""
    articles, result = wiki
    common10, common100 = set(result.index_to_key[:10]), set(result.index_to_key[:100])
    for word in ["music", "war"]:
        assert set(_top_contexts(result, result.counts, word)) <= common10
        assert not set(_top_contexts(result, result.ppmi, word)) & common100
    assert "civil" in _top_contexts(result, result.ppmi, "war")
    frequency = Counter(w for tokens in articles for w in tokens)
    assert any(frequency[c] < 10 for c in _top_contexts(result, result.ppmi, "music"))


@pytest.mark.slow
def test_ppmi_svd_beats_count_svd_on_both_pair_sets_over_4_chapter_vocabulary(wiki):
    """3장: PPMI → SVD > counts → SVD on WS353 and SimLex; SimLex lower for both; 4장's vocabulary."""
    from course_utils.word2vec import Word2Vec, Word2VecConfig

    articles, result = wiki
    counts, weighted = result.scores["counts"], result.scores["ppmi"]
    assert weighted.ws353_rho > counts.ws353_rho and weighted.simlex_rho > counts.simlex_rho
    assert weighted.simlex_rho < weighted.ws353_rho and counts.simlex_rho < counts.ws353_rho
    assert (weighted.ws353_pairs, weighted.simlex_pairs) == (
        counts.ws353_pairs,
        counts.simlex_pairs,
    )
    assert Word2Vec(articles, Word2VecConfig(min_count=5)).index_to_key == result.index_to_key
