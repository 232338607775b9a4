"""The measured outcomes that 9장 (Seq2seq) states in words, re-measured.

Each test calls the chapter's own functions (``course_utils.seq2seq``) with the
chapter's configuration, so that a sentence such as "BLEU falls with every
length bin" fails loudly if it stops being true. The chapter checks the same
statements with ``claim`` when the book is built.
"""

import itertools

import pytest
import sacrebleu

from course_utils.bleu import corpus_bleu
from course_utils.device import run_size
from course_utils.experiments.ch09_seq2seq import (
    evaluate_model,
    generated_data,
    gettext_data,
    new_seq2seq,
    run_source_reversal,
    scores_by_length,
    subword_coverage,
    teacher_forcing_sweep,
    time_lags,
    token_accuracy,
    train_model,
    translation_config,
    unseen_one_word_sources,
)
from course_utils.gettext_corpus import GettextCatalogueNotFoundError
from course_utils.seq2seq import (
    score_translations,
    translate,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def chapter():
    """The chapter's data and its teacher-forced model, trained as the chapter trains it."""
    if run_size() != "small":
        pytest.skip("the prose describes the default CPU run (COURSE_RUN=small)")
    config = translation_config()
    data, splits = generated_data(config)
    model = new_seq2seq(data, config)
    history = train_model(model, data, config.training, show_progress=False)
    return config, data, splits, model, history


def _decode(model, data, *args):
    return translate(model, [s for s, _ in data.test], data.source_vocab, data.target_vocab, *args)


def test_no_test_sentence_is_in_training_and_the_loss_falls(chapter):
    _, _, splits, _, history = chapter
    test = {p.source for p in splits.test}
    assert not any(p.source in test for p in splits.train + splits.valid)
    assert history.train_loss[-1] < 0.6 * history.train_loss[0]


def test_beam_one_is_greedy_and_length_normalisation_lengthens_outputs(chapter):
    _, data, _, model, _ = chapter
    references = [t for _, t in data.test]
    greedy = _decode(model, data)
    assert _decode(model, data, "beam", 1) == greedy
    short = _decode(model, data, "beam", 5, 0.0)
    normalised = _decode(model, data, "beam", 5, 1.0)
    assert sum(map(len, short)) < sum(map(len, normalised))
    gap = (
        score_translations(normalised, references).bleu
        - score_translations(greedy, references).bleu
    )
    assert abs(gap) < 3


def test_our_bleu_equals_sacrebleu_on_the_chapters_outputs(chapter):
    _, data, _, model, _ = chapter
    greedy = _decode(model, data)
    references = [t for _, t in data.test]
    theirs = sacrebleu.corpus_bleu(
        [" ".join(h) for h in greedy],
        [[" ".join(r) for r in references]],
        tokenize="none",
        force=True,
    )
    assert abs(corpus_bleu(greedy, references).score - theirs.score) < 1e-9


def test_free_running_loses_most_of_the_teacher_forced_token_accuracy(chapter):
    _, data, _, model, _ = chapter
    forced, free = token_accuracy(model, data.examples("test"))
    assert free < forced - 0.2


def test_bleu_falls_with_source_length_within_and_beyond_the_training_range(chapter):
    _, data, splits, model, _ = chapter
    rows = scores_by_length(_decode(model, data), splits.test, splits.max_train_clauses)
    inside = [r for r in rows if r.in_training_range]
    outside = [r for r in rows if not r.in_training_range]
    assert all(a.bleu > b.bleu for a, b in itertools.pairwise(inside))
    assert inside[0].bleu > 2 * inside[-1].bleu
    assert outside and max(r.bleu for r in outside) < inside[-1].bleu


def test_lower_teacher_forcing_ratios_learn_less_in_the_same_budget(chapter):
    config, data, splits, _, _ = chapter
    by_ratio = {
        r.teacher_forcing_ratio: r
        for r in teacher_forcing_sweep(data, splits, config, show_progress=False)
    }
    assert by_ratio[1.0].bleu > by_ratio[0.5].bleu > by_ratio[0.0].bleu
    assert max(r.exact_match for r in by_ratio.values()) < 0.05


def test_the_gettext_model_learns_only_the_frequent_message_frames(chapter):
    config, data, _, model, _ = chapter
    try:
        gettext = gettext_data()
    except GettextCatalogueNotFoundError:
        pytest.skip("the Korean gettext catalogues are not installed")
    gettext_model = new_seq2seq(gettext, config)
    train_model(gettext_model, gettext, config.training, show_progress=False)
    scores, hypotheses = evaluate_model(gettext_model, gettext)
    generated = score_translations(_decode(model, data), [t for _, t in data.test])
    assert scores.chrf < generated.chrf / 2
    references = [gettext.words(t) for _, t in gettext.test]
    chrf = [
        sacrebleu.sentence_chrf(" ".join(h), [" ".join(r)]).score
        for h, r in zip(hypotheses, references, strict=True)
    ]
    order = sorted(range(len(chrf)), key=lambda i: -chrf[i])
    best = [" ".join(hypotheses[i]) for i in order[:5]]
    assert sum("없습니다" in h or "<ph>" in h for h in best) >= 3
    assert max(chrf[i] for i in order[len(order) // 2 :]) < 10


def test_reversing_the_sources_brings_the_first_words_close_and_lifts_bleu_not_exact_match(
    chapter,
):
    config, data, splits, model, _ = chapter
    runs = run_source_reversal(data, splits, config, show_progress=False)
    forward, backward = runs["forward"], runs["reversed"]
    # the forward run is the chapter's model, the reversed one its twin on reversed sources
    greedy = _decode(model, data)
    assert forward.by_length == scores_by_length(greedy, splits.test, splits.max_train_clauses)
    # given the chapter's greedy translations, the same results without running it again
    assert run_source_reversal(data, splits, config, False, forward=greedy) == runs
    with pytest.raises(ValueError, match="one translation per test sentence"):
        run_source_reversal(data, splits, config, False, forward=greedy[:-1])
    lags = time_lags([p for p in splits.test if p.clauses <= splits.max_train_clauses])
    assert abs(lags["forward"].mean - lags["reversed"].mean) < 1
    assert lags["reversed"].first < lags["forward"].first / 3
    assert backward.first_token > forward.first_token + 0.1
    assert backward.in_range.bleu > forward.in_range.bleu
    assert abs(backward.in_range.exact_match - forward.in_range.exact_match) <= 0.03
    inside = [r for r in backward.by_length if r.in_training_range]
    assert all(a.bleu > b.bleu for a, b in itertools.pairwise(inside))


def test_many_gettext_test_words_are_unseen_but_almost_no_piece_is_unknown():
    try:
        gettext = gettext_data()
    except GettextCatalogueNotFoundError:
        pytest.skip("the Korean gettext catalogues are not installed")
    coverage = subword_coverage(gettext)
    assert min(c.unseen_words for c in coverage.values()) > 0.1
    assert max(c.unknown_pieces for c in coverage.values()) < 0.01

    def words(pieces):  # SentencePiece's own rule: ▁ starts a word
        return "".join(pieces).replace("▁", " ").split()

    seen = {w for source, _ in gettext.train for w in words(source)}
    rare = [(s, t) for s, t in gettext.test if len(words(s)) == 1 and words(s)[0] not in seen]
    assert unseen_one_word_sources(gettext) == rare and len(rare) >= 5  # the chapter's five
