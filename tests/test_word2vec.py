"""Word2Vec from scratch: gradients against finite differences, pieces against gensim."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from gensim.models import Word2Vec as GensimWord2Vec

from course_utils.gradcheck import numerical_gradient, relative_error
from course_utils.runs import Jobs
from course_utils.word2vec import (
    AliasSampler,
    Word2Vec,
    Word2VecConfig,
    cbow_loss_and_grads,
    compare_with_gensim,
    gensim_scores,
    keep_probability,
    noise_distribution,
    scatter_add,
    sgns_loss_and_grads,
    time_against_gensim,
    time_skipgram_and_cbow,
    train_gensim,
    train_word2vec,
)

RNG = np.random.default_rng(0)


def test_sgns_gradients_pass_a_float64_finite_difference_check():
    v_c, u_o, u_neg = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(3, 5, 4))
    mask = RNG.random((3, 5)) > 0.2
    _, g_v, g_o, g_neg = sgns_loss_and_grads(v_c, u_o, u_neg, mask)
    loss = lambda: sgns_loss_and_grads(v_c, u_o, u_neg, mask)[0]  # noqa: E731
    for analytic, x in [(g_v, v_c), (g_o, u_o), (g_neg, u_neg)]:
        assert relative_error(analytic, numerical_gradient(loss, x)) <= 1e-6


def test_cbow_gradients_pass_a_float64_finite_difference_check():
    v_ctx, u_o, u_neg = (
        RNG.normal(size=(3, 4, 5)),
        RNG.normal(size=(3, 5)),
        RNG.normal(size=(3, 2, 5)),
    )
    mask = np.array([[1, 1, 0, 1], [0, 1, 0, 0], [1, 1, 1, 1]], dtype=np.float64)
    _, g_ctx, g_o, g_neg = cbow_loss_and_grads(v_ctx, mask, u_o, u_neg)
    loss = lambda: cbow_loss_and_grads(v_ctx, mask, u_o, u_neg)[0]  # noqa: E731
    for analytic, x in [(g_ctx, v_ctx), (g_o, u_o), (g_neg, u_neg)]:
        assert relative_error(analytic, numerical_gradient(loss, x)) <= 1e-6
    assert np.all(g_ctx[mask == 0] == 0), "unused context slots get no gradient"


def test_sgns_gradients_match_torch_autograd():
    import torch

    v_c, u_o, u_neg = (
        torch.randn(*s, dtype=torch.float64, requires_grad=True)
        for s in [(4, 6), (4, 6), (4, 3, 6)]
    )
    loss = -(torch.nn.functional.logsigmoid((v_c * u_o).sum(-1)).sum()
             + torch.nn.functional.logsigmoid(-(u_neg @ v_c[:, :, None])[..., 0]).sum())  # fmt: skip
    loss.backward()
    ours = sgns_loss_and_grads(v_c.detach().numpy(), u_o.detach().numpy(), u_neg.detach().numpy())
    assert ours[0] == pytest.approx(loss.item(), rel=1e-12)
    for mine, theirs in zip(ours[1:], (v_c.grad, u_o.grad, u_neg.grad), strict=True):
        np.testing.assert_allclose(mine, theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_scatter_add_equals_numpy_add_at():
    table = RNG.normal(size=(7, 3))
    rows = np.array([1, 4, 1, 1, 6, 0, 4])
    updates = RNG.normal(size=(7, 3))
    expected = table.copy()
    np.add.at(expected, rows, updates)
    scatter_add(table, rows, updates)
    np.testing.assert_allclose(table, expected, rtol=1e-12)


@pytest.mark.parametrize("size", [7, 100_000])  # the marker path and the np.unique path
def test_weighted_scatter_add_with_columns_in_any_order_equals_numpy_add_at(size):
    rng = np.random.default_rng(1)
    table = rng.normal(size=(size, 3))
    source = rng.normal(size=(5, 3))
    rows = rng.integers(0, 7, size=40)
    weights = rng.normal(size=40)
    for columns in (rng.integers(0, 5, size=40), np.sort(rng.integers(0, 5, size=40))):
        expected = table.copy()
        np.add.at(expected, rows, weights[:, None] * source[columns])
        scatter_add(table, rows, source, weights, columns)
        np.testing.assert_allclose(table, expected, rtol=1e-12)


def test_scatter_add_rejects_mismatched_input():
    table, source = np.zeros((4, 2)), np.ones((3, 2))
    with pytest.raises(ValueError, match=r"table \(V, D\) and source \(N, D\)"):
        scatter_add(table, np.array([0]), np.ones((3, 5)))
    with pytest.raises(ValueError, match="one entry each"):
        scatter_add(table, np.array([0, 1]), source, columns=np.array([0]))
    with pytest.raises(ValueError, match=r"rows must lie in \[0, 4\)"):
        scatter_add(table, np.array([4, 0, 1]), source)
    with pytest.raises(ValueError, match=r"columns must lie in \[0, 3\)"):
        scatter_add(table, np.array([0]), source, columns=np.array([3]))
    scatter_add(table, np.array([], dtype=int), source[:0])
    assert not table.any()


def test_alias_table_holds_exactly_the_distribution():
    p = noise_distribution(np.array([500, 120, 40, 7, 3, 1, 1]))
    sampler = AliasSampler(p)
    n = p.size
    # Slot i gives i with keep[i] and alias[i] with 1 - keep[i]; each slot has mass 1/n.
    implied = sampler.keep / n
    np.add.at(implied, sampler.alias, (1 - sampler.keep) / n)
    np.testing.assert_allclose(implied, p, rtol=1e-12, atol=1e-15)


def test_alias_draws_follow_the_distribution():
    p = noise_distribution(np.arange(1, 21))
    draws = AliasSampler(p).draw(np.random.default_rng(0), (400_000,))
    frequency = np.bincount(draws, minlength=p.size) / draws.size
    tolerance = 5 * np.sqrt(p * (1 - p) / draws.size)  # five standard errors
    assert np.all(np.abs(frequency - p) <= tolerance)


def test_alias_sampler_rejects_what_is_not_a_distribution():
    for bad in ([], [0.5, 0.6], [1.2, -0.2], [[0.5, 0.5]]):
        with pytest.raises(ValueError, match="summing to 1"):
            AliasSampler(np.array(bad))


def test_chunks_cover_the_corpus_and_cut_where_sentences_start(monkeypatch):
    monkeypatch.setattr(Word2Vec, "CHUNK_WORDS", 10)
    model = Word2Vec([list("abcde")], Word2VecConfig(min_count=1))
    sentence = np.repeat(np.arange(5), [4, 9, 3, 30, 6])  # the fourth is longer than a chunk
    chunks = model._chunks(sentence)
    assert chunks[0][0] == 0 and chunks[-1][1] == sentence.size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))
    starts = set(np.flatnonzero(np.diff(sentence)) + 1)
    inside_long = {c for c, _ in chunks[1:] if sentence[c] == 3 and c not in starts}
    assert {c for c, _ in chunks[1:]} - inside_long <= starts
    assert inside_long, "a sentence longer than a chunk is cut inside"
    assert all(stop - start <= 2 * Word2Vec.CHUNK_WORDS for start, stop in chunks)


def test_chunked_training_sees_every_pair_of_short_sentences(monkeypatch):
    monkeypatch.setattr(Word2Vec, "CHUNK_WORDS", 7)
    sentences = [list("abcd"), list("efg"), list("hij"), list("kl")]
    config = Word2VecConfig(min_count=1, window=1, sample=0, vector_size=4, epochs=1)
    model = Word2Vec(sentences, config)
    seen = []
    original = model.skipgram_pairs

    def record(ids, sentence):
        centres, contexts = original(ids, sentence)
        seen.extend(zip(centres.tolist(), contexts.tolist(), strict=True))
        return centres, contexts

    monkeypatch.setattr(model, "skipgram_pairs", record)
    model.train(show_progress=False)
    expected = []
    for s in sentences:
        ids = [model.key_to_index[w] for w in s]
        expected += [(a, b) for a, b in itertools.pairwise(ids)]
        expected += [(b, a) for a, b in itertools.pairwise(ids)]
    assert sorted(seen) == sorted(expected)


CORPUS = [
    ["the", "king", "rules", "the", "land", "and", "the", "queen", "rules", "the", "land"],
    ["a", "man", "and", "a", "woman", "walk", "to", "the", "king"],
    ["the", "queen", "and", "the", "king", "speak", "to", "the", "man"],
] * 30


def _gensim(config: Word2VecConfig) -> GensimWord2Vec:
    model = GensimWord2Vec(vector_size=config.vector_size, min_count=config.min_count,
                           sample=config.sample, ns_exponent=config.ns_exponent, workers=1)  # fmt: skip
    model.build_vocab(CORPUS)
    return model


def test_vocabulary_and_counts_match_gensim():
    config = Word2VecConfig(min_count=40)
    ours, theirs = Word2Vec(CORPUS, config), _gensim(config)
    assert set(ours.index_to_key) == set(theirs.wv.index_to_key)
    for word in ours.index_to_key:
        assert ours.counts[ours.key_to_index[word]] == theirs.wv.get_vecattr(word, "count")


def test_subsampling_keep_probability_matches_gensim():
    config = Word2VecConfig(min_count=1, sample=1e-2)
    ours, theirs = Word2Vec(CORPUS, config), _gensim(config)
    for word in ours.index_to_key:
        expected = theirs.wv.get_vecattr(word, "sample_int") / 2**32
        assert ours._keep[ours.key_to_index[word]] == pytest.approx(min(expected, 1.0), abs=1e-8)


def test_noise_distribution_matches_gensims_cumulative_table():
    config = Word2VecConfig(min_count=1)
    ours, theirs = Word2Vec(CORPUS, config), _gensim(config)
    order = [ours.key_to_index[w] for w in theirs.wv.index_to_key]
    ours_cdf = np.cumsum(noise_distribution(ours.counts[order], 0.75))
    np.testing.assert_allclose(ours_cdf, theirs.cum_table / theirs.cum_table[-1], atol=1e-8)


def test_noise_distribution_flattens_the_unigram_distribution():
    p = noise_distribution(np.array([100, 10, 1]))
    unigram = np.array([100, 10, 1]) / 111
    assert p.sum() == pytest.approx(1) and p[0] < unigram[0] and p[2] > unigram[2]


def test_keep_probability_formula_and_no_subsampling():
    counts = np.array([1000, 1])  # the rare word's share, 1/1001, is below the threshold
    expected = (np.sqrt((1000 / 1001) / 1e-3) + 1) * 1e-3 / (1000 / 1001)
    assert keep_probability(counts, 1e-3)[0] == pytest.approx(expected)
    assert keep_probability(counts, 1e-3)[1] == 1.0
    np.testing.assert_array_equal(keep_probability(counts, 0), [1, 1])


def test_skipgram_pairs_stay_in_the_window_and_the_sentence():
    model = Word2Vec([["a", "b", "c", "d"], ["e", "f"]], Word2VecConfig(min_count=1, window=2))
    ids = np.arange(6)
    sentence = np.array([0, 0, 0, 0, 1, 1])
    centres, contexts = model.skipgram_pairs(ids, sentence)
    assert len(centres) > 0
    assert np.all(sentence[centres] == sentence[contexts])
    assert np.all(np.abs(centres - contexts) <= 2) and np.all(centres != contexts)


def test_window_one_gives_every_neighbour_pair_exactly_once():
    model = Word2Vec([list("abcde")], Word2VecConfig(min_count=1, window=1))
    centres, contexts = model.skipgram_pairs(np.arange(5), np.zeros(5, dtype=int))
    pairs = sorted(zip(centres.tolist(), contexts.tolist(), strict=True))
    assert pairs == sorted([(i, i + 1) for i in range(4)] + [(i + 1, i) for i in range(4)])


def test_cbow_examples_collect_the_whole_window():
    model = Word2Vec([list("abcde")], Word2VecConfig(min_count=1, window=1, sg=False))
    centres, context, mask = model.cbow_examples(np.arange(5), np.zeros(5, dtype=int))
    by_centre = {int(c): sorted(context[i][mask[i] > 0].tolist()) for i, c in enumerate(centres)}
    assert by_centre == {0: [1], 1: [0, 2], 2: [1, 3], 3: [2, 4], 4: [3]}


@pytest.mark.parametrize("sg", [True, False])
def test_training_lowers_the_loss_and_groups_words_that_share_contexts(sg):
    topic_a = [["cat", "dog", "pet", "fur", "paw"][i % 5] for i in range(40)]
    topic_b = [["car", "bus", "road", "wheel", "fuel"][i % 5] for i in range(40)]
    rng = np.random.default_rng(3)
    sentences = [list(rng.permutation(topic_a)[:8]) for _ in range(150)] + [
        list(rng.permutation(topic_b)[:8]) for _ in range(150)
    ]
    model = Word2Vec(sentences, Word2VecConfig(vector_size=16, window=3, min_count=1, sample=0,
                                                epochs=5, sg=sg, batch_size=16))  # fmt: skip
    log = model.train(show_progress=False)
    assert log.loss[-1] < log.loss[0]
    assert model.similarity("cat", "dog") > model.similarity("cat", "car")
    assert {w for w, _ in model.most_similar("bus", topn=4)} == {"car", "road", "wheel", "fuel"}


def test_analogy_and_keyed_vectors_export():
    model = Word2Vec(CORPUS, Word2VecConfig(vector_size=8, min_count=1, epochs=2))
    model.train(show_progress=False)
    assert model.analogy("man", "king", "woman") in model.index_to_key
    vectors = model.to_keyed_vectors()
    np.testing.assert_array_equal(vectors["king"], model.vector("king"))


def test_divergence_is_an_error_not_a_nan_table():
    model = Word2Vec(CORPUS, Word2VecConfig(vector_size=8, min_count=1, epochs=3, alpha=1e6,
                                            min_alpha=1e6, batch_size=64))  # fmt: skip
    with pytest.raises(FloatingPointError, match="lower alpha or batch_size"):
        model.train(show_progress=False)


def test_training_is_seeded():
    runs = []
    for _ in range(2):
        model = Word2Vec(CORPUS, Word2VecConfig(vector_size=8, min_count=1, epochs=1, seed=7))
        model.train(show_progress=False)
        runs.append(model.W_in.copy())
    np.testing.assert_array_equal(runs[0], runs[1])


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="corpus is empty"):
        Word2Vec([])
    with pytest.raises(ValueError, match="corpus is empty"):
        Word2Vec([[], []])
    with pytest.raises(TypeError, match="not one str"):
        Word2Vec("the king rules")
    with pytest.raises(ValueError, match="window must be an int >= 1"):
        Word2VecConfig(window=0)
    with pytest.raises(ValueError, match="vector_size must be an int >= 1"):
        Word2VecConfig(vector_size=0)
    with pytest.raises(ValueError, match="min_count=10000"):
        Word2Vec(CORPUS, Word2VecConfig(min_count=10_000))
    model = Word2Vec(CORPUS, Word2VecConfig(min_count=1))
    with pytest.raises(KeyError, match="'prince' is not in the vocabulary"):
        model.most_similar("prince")
    with pytest.raises(ValueError, match="topn"):
        model.most_similar("king", topn=0)
    with pytest.raises(ValueError, match=r"u_neg \(B, K, D\)"):
        sgns_loss_and_grads(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least one context word"):
        cbow_loss_and_grads(
            np.ones((1, 2, 3)), np.zeros((1, 2)), np.ones((1, 3)), np.ones((1, 1, 3))
        )


WIKI_LIKE = [
    ["the", "king", "and", "the", "queen", "live", "in", "the", "city", "by", "the", "river"],
    ["a", "man", "and", "a", "woman", "sing", "a", "song", "of", "love", "and", "war"],
    ["the", "army", "went", "to", "war", "and", "the", "king", "lost", "his", "money"],
    ["an", "old", "and", "a", "new", "book", "for", "a", "smart", "and", "happy", "student"],
    ["the", "hard", "and", "easy", "paper", "of", "the", "old", "professor", "and", "doctor"],
] * 20


def test_gensim_scores_counts_the_pairs_and_questions_in_the_vocabulary():
    from gensim.test.utils import datapath

    vectors = Word2Vec(WIKI_LIKE, Word2VecConfig(vector_size=8, min_count=1)).to_keyed_vectors()
    scores = gensim_scores(vectors)
    vocabulary = set(vectors.index_to_key)
    expected = {}
    for name in ("wordsim353.tsv", "simlex999.txt"):
        with open(datapath(name), encoding="utf-8") as lines:
            rows = [line.split("\t") for line in lines if not line.startswith("#")]
        assert len(rows) == {"wordsim353.tsv": 353, "simlex999.txt": 999}[name]
        expected[name] = sum(
            a.lower() in vocabulary and b.lower() in vocabulary for a, b, _ in rows
        )
    assert scores.ws353_pairs == expected["wordsim353.tsv"] > 0
    assert scores.simlex_pairs == expected["simlex999.txt"] > 0
    with open(datapath("questions-words.txt"), encoding="utf-8") as lines:
        questions = [line.lower().split() for line in lines if not line.startswith(":")]
    assert len(questions) == 19_544
    in_vocabulary = sum(all(w in vocabulary for w in q) for q in questions)
    assert scores.analogy_questions == in_vocabulary > 0
    assert 0 <= scores.analogy_accuracy <= 1


def test_train_gensim_takes_the_same_settings():
    config = Word2VecConfig(vector_size=12, window=3, negative=4, min_count=2, epochs=2, seed=3)
    reference = train_gensim(WIKI_LIKE, config)
    assert (reference.vector_size, reference.window, reference.negative) == (12, 3, 4)
    assert (reference.min_count, reference.epochs, reference.sg, reference.hs) == (2, 2, 1, 0)
    assert reference.workers == 1 and reference.sample == config.sample


def test_compare_with_gensim_scores_both_on_the_same_vocabulary():
    config = Word2VecConfig(vector_size=8, min_count=2, epochs=2)
    ours = Word2Vec(WIKI_LIKE, config)
    ours.train(show_progress=False)
    comparison = compare_with_gensim(WIKI_LIKE, config, ours=ours)
    assert comparison.ours is ours
    assert set(comparison.reference.wv.index_to_key) == set(ours.index_to_key)
    assert comparison.ours_scores.ws353_pairs == comparison.reference_scores.ws353_pairs
    with pytest.raises(ValueError, match="same config"):
        compare_with_gensim(WIKI_LIKE, Word2VecConfig(vector_size=8, min_count=1), ours=ours)
    with pytest.raises(ValueError, match="vocabularies differ"):
        compare_with_gensim(WIKI_LIKE[:2] * 2, config, ours=ours)


def test_compare_with_gensim_takes_a_reference_trained_elsewhere_only_with_the_same_config():
    config = Word2VecConfig(vector_size=8, min_count=2, epochs=2)
    ours = train_word2vec(WIKI_LIKE, config)
    reference = train_gensim(WIKI_LIKE, config)
    comparison = compare_with_gensim(WIKI_LIKE, config, ours=ours, reference=reference)
    assert comparison.reference is reference and comparison.ours is ours
    assert comparison.reference_scores == gensim_scores(reference.wv)
    for other in (dataclasses.replace(config, epochs=3), dataclasses.replace(config, window=2),
                  dataclasses.replace(config, sg=False)):  # fmt: skip
        with pytest.raises(ValueError, match="reference must be gensim's Word2Vec trained with"):
            compare_with_gensim(
                WIKI_LIKE, config, ours=ours, reference=train_gensim(WIKI_LIKE, other)
            )


def test_a_comparisons_scores_are_kept_and_read_back_without_training(tmp_path, monkeypatch):
    """4장 keeps its comparison's scores and loss; comparison_scores reads them back (the
    claims test reads the chapter's comparison this way) and compares anew for another
    config or other sentences."""
    from course_utils import word2vec
    from course_utils.experiments.ch04_word2vec import comparison_scores, keep_comparison

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    config = Word2VecConfig(vector_size=8, min_count=2, epochs=3, seed=2)
    comparison = compare_with_gensim(WIKI_LIKE, config)
    with pytest.raises(ValueError, match="trained with"):
        keep_comparison(WIKI_LIKE, dataclasses.replace(config, seed=3), comparison)
    with pytest.raises(ValueError, match="other sentences"):
        keep_comparison(WIKI_LIKE[:-1], config, comparison)
    keep_comparison(WIKI_LIKE, config, comparison)
    real = word2vec.train_word2vec, word2vec.train_gensim

    def no_training(*args, **kwargs):
        raise AssertionError("a kept comparison was trained again")

    monkeypatch.setattr(word2vec, "train_word2vec", no_training)
    monkeypatch.setattr(word2vec, "train_gensim", no_training)
    record = comparison_scores(WIKI_LIKE, config)
    assert record.ours_scores == comparison.ours_scores
    assert record.reference_scores == comparison.reference_scores
    assert record.loss == comparison.ours.log.loss and len(record.loss) == 3
    for sentences, other in ((WIKI_LIKE, dataclasses.replace(config, seed=3)),
                             (WIKI_LIKE[::-1], config)):  # fmt: skip
        with pytest.raises(AssertionError, match="trained again"):
            comparison_scores(sentences, other)
    monkeypatch.setattr(word2vec, "train_word2vec", real[0])
    monkeypatch.setattr(word2vec, "train_gensim", real[1])
    monkeypatch.setenv("COURSE_CACHE", "off")
    fresh = comparison_scores(WIKI_LIKE, config)
    assert fresh.ours_scores == comparison.ours_scores and fresh.loss == record.loss


def test_train_word2vec_is_the_trained_model_and_the_same_in_a_worker_process():
    config = Word2VecConfig(vector_size=8, min_count=2, epochs=2, seed=4)
    here = Word2Vec(WIKI_LIKE, config)
    here.train(show_progress=False)
    trained = train_word2vec(WIKI_LIKE, config)
    assert trained.log.words == here.log.words > 0
    np.testing.assert_array_equal(trained.W_in, here.W_in)
    jobs = Jobs([(train_word2vec, (WIKI_LIKE, config))] * 2, workers=2)
    for model in jobs.results([0, 1]):
        np.testing.assert_array_equal(model.W_in, here.W_in)


def test_time_against_gensim_alternates_one_epoch_each():
    speed = time_against_gensim(WIKI_LIKE, Word2VecConfig(vector_size=8, min_count=1), repeats=2)
    assert len(speed.ours_seconds) == len(speed.gensim_seconds) == 2
    assert min(speed.ours_seconds + speed.gensim_seconds) > 0
    assert speed.words == sum(map(len, WIKI_LIKE))
    expected = np.median(np.array(speed.ours_seconds) / np.array(speed.gensim_seconds))
    assert speed.gensim_speedup == pytest.approx(expected)
    with pytest.raises(ValueError, match="repeats must be an int >= 1"):
        time_against_gensim(WIKI_LIKE, Word2VecConfig(), repeats=0)


def test_time_skipgram_and_cbow_times_each_architecture_once_per_repeat():
    sentences = [["a", "b", "c", "d", "a", "b"]] * 20
    timing = time_skipgram_and_cbow(sentences, Word2VecConfig(min_count=1, epochs=3), repeats=2)
    assert len(timing.skipgram_seconds) == len(timing.cbow_seconds) == 2
    assert timing.cbow_speedup > 0
    with pytest.raises(ValueError, match="repeats must be an int >= 1"):
        time_skipgram_and_cbow(sentences, Word2VecConfig(min_count=1), repeats=0)
