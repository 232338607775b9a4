"""The outcomes that 12장 BERT (part 2, Korean) states in words, re-measured.

Each test calls the chapter's own experiment function with the chapter's
configuration (``korean_bert_config()``), so that a sentence such as
"pretraining is a head start in spacing" fails loudly if it stops being
true. The trained models come from the training cache
(``~/.cache/nlp-course`` or ``COURSE_CACHE``), so after the chapter has run
these tests train nothing; on a cold cache :func:`run_korean_finetuning`
trains everything once (about a minute on two cores). Every claim here held
under three floating-point paths of the same CPU (its own, AVX2, and MKL's
SSE2 path), on the machine the book was first built on, and on an AMD EPYC
with AVX2 and no AVX-512; an outcome of a single run that differed between
them (which BERT wins line classification, how far apart the pretrained
start's three seeds land on the sentence pairs) is not claimed.
"""

import pytest

from course_utils.device import run_size
from course_utils.experiments.ch12_downstream import run_downstream
from course_utils.experiments.ch12_finetuning import (
    run_korean_finetuning,
)
from course_utils.experiments.ch12_pretraining import (
    compare_korean_vocabularies,
    evaluate_mlm,
    fill_in_blanks,
    korean_bert_config,
    nsp_topic_probe,
    pretrain_korean_bert,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

# As the chapter: one thread (a second one changes the sums' order, hence the models a little).

SUBWORDS = ("wordpiece", "bpe", "sentencepiece-bpe", "sentencepiece-unigram")


@pytest.fixture(scope="module")
def small_run():
    if run_size() != "small":
        pytest.skip("the prose describes the default CPU run (COURSE_RUN=small)")
    return korean_bert_config()


@pytest.fixture(scope="module")
def comparison(small_run):
    return run_korean_finetuning(small_run, show_progress=False)


@pytest.fixture(scope="module")
def pretrained(comparison):
    return pretrain_korean_bert(korean_bert_config(), show_progress=False)


# --- the vocabularies ---------------------------------------------------------------------------


def test_our_wordpiece_cuts_every_held_out_line_as_tokenizers():
    table = compare_korean_vocabularies(2000)
    assert table.agreeing_lines == table.held_out_lines == 416


def test_a_korean_vocabulary_beats_the_english_one_on_korean():
    rows = compare_korean_vocabularies(2000).rows
    english = rows["minilm-english"]
    for name in SUBWORDS:
        korean = rows[name]
        assert english.tokens_per_eojeol > 2.5 * korean.tokens_per_eojeol
        assert english.unk_eojeol_share > 10 * korean.unk_eojeol_share
        assert korean.unk_share < 0.01 and korean.vocab_size == 2000
    assert english.unk_eojeol_share > 0.2  # about one eojeol in four loses something to [UNK]


def test_on_the_same_text_the_four_subword_vocabularies_cut_about_as_finely():
    rows = compare_korean_vocabularies(2000).rows
    lengths = [rows[name].tokens_per_eojeol for name in SUBWORDS]
    assert max(lengths) / min(lengths) < 1.25
    assert all(1.8 < length < 2.4 for length in lengths)


def test_with_gettext_the_doubled_alphabet_fills_wordpieces_vocabulary():
    """Each character twice (plain and ##): with the gettext text that is most of 2,000 tokens."""
    with_gettext = compare_korean_vocabularies(2000, with_gettext=True).rows
    wordpiece = with_gettext["wordpiece"]
    assert wordpiece.single_characters > 0.9 * wordpiece.vocab_size
    others = [with_gettext[name] for name in SUBWORDS[1:]]
    assert all(wordpiece.single_characters > 1.3 * row.single_characters for row in others)
    assert all(wordpiece.tokens_per_eojeol > row.tokens_per_eojeol + 0.15 for row in others)


# --- pretraining ---------------------------------------------------------------------------------


def test_mlm_predicts_held_out_characters_far_above_unigram_guesses(pretrained):
    result = evaluate_mlm(pretrained)
    assert result.accuracy > 2.5 * result.most_frequent
    assert result.accuracy > 10 * result.unigram_sampling
    assert result.top5 > 0.3 and result.predictions > 5000
    assert result.most_frequent_token == "\n"


def test_the_pretraining_loss_falls_then_rises_when_the_windows_grow(pretrained):
    losses = pretrained.losses
    assert losses[-2] < losses[0] - 1.5  # the short windows: learned
    assert losses[-1] > losses[-2]  # the last tenth reads 64-token windows: harder at first


def test_a_blank_with_its_suffix_is_filled_right(pretrained):
    (blank,) = fill_in_blanks(pretrained, "모든 국민은 법률이 정하는 바에 의하[MASK] 국가기관에")
    assert blank.guesses[0][0] == "여" and blank.guesses[0][1] > 0.3


def test_a_blank_of_meaning_gets_a_frequent_neighbour_instead(pretrained):
    (blank,) = fill_in_blanks(pretrained, "국가는 국민의 비[MASK]을 보장한다", k=5)
    assert blank.guesses[0][0] == "용"  # 비용, from the bills
    assert "밀" not in [c for c, _ in blank.guesses]  # 비밀, what the sentence means


def test_nsp_is_solved_by_topic_and_not_when_not_next_shares_the_topic():
    probe = nsp_topic_probe()
    assert probe.topic_accuracy > 0.85
    assert probe.other_document > 0.8
    assert probe.same_document < 0.6
    assert probe.other_document - probe.same_document > 0.25


# --- fine-tuning ----------------------------------------------------------------------------------


def test_both_transformers_beat_the_rnn_on_both_tasks(comparison):
    for task, margin in (("spacing", 0.005), ("lines", 0.01)):
        rnn = comparison.accuracy(task, "rnn")
        assert rnn > comparison.accuracy(task, "baseline") + 0.05
        assert comparison.accuracy(task, "random") > rnn + margin
        assert comparison.accuracy(task, "pretrained") > rnn + margin


def test_pretraining_is_a_head_start_in_spacing_that_the_random_start_nearly_closes(comparison):
    pretrained = comparison.results["spacing", True].curve
    random_start = comparison.results["spacing", False].curve
    assert len(pretrained) == len(random_start) == 10
    assert all(p > r + 0.02 for p, r in zip(pretrained[:4], random_start[:4], strict=True))
    assert abs(pretrained[-1] - random_start[-1]) < 0.015


def test_both_berts_classify_lines_above_90_percent(comparison):
    # which of the two is ahead is not claimed: it flips with the floating-point path
    assert min(comparison.accuracy("lines", s) for s in ("pretrained", "random")) > 0.9


def test_the_comparison_reads_6_chapters_test_sets(comparison):
    rows = {row["task"]: row for row in comparison.table()}
    assert rows["spacing"]["test_size"] == 8823 and rows["lines"]["test_size"] == 416
    assert rows["spacing"]["baseline"] == pytest.approx(0.757, abs=1e-3)
    assert rows["lines"]["baseline"] == pytest.approx(0.8365, abs=1e-3)


# --- the BERT paper's two other formats: three starts, three seeds ------------------------------


@pytest.fixture(scope="module")
def downstream(small_run):
    return run_downstream(small_run)


def test_only_the_pretrained_start_learns_the_tense_pairs(downstream):
    pretrained, random_start, frozen = (
        downstream.scores("pairs", start) for start in ("pretrained", "random", "frozen")
    )
    # how much it learns differs by seed (and by floating-point path): only the best seed is claimed
    assert max(pretrained) > max(random_start + frozen) + 0.1
    assert max(pretrained) > downstream.baseline.accuracy + 0.05
    assert all(abs(a - 0.5) < 0.07 for a in random_start + frozen)
    assert all(downstream.results["pairs", "random", s].predicted_ones in (0.0, 1.0)
               for s in downstream.config.seeds)  # fmt: skip
    assert downstream.baseline.accuracy < 0.6 < downstream.baseline.train_accuracy
    # not more than a little above the best rule that scores the two tenses apart
    assert max(pretrained) < downstream.tense_ceiling + 0.1


def test_fine_tuned_span_f1_stays_near_the_constant_span_and_the_frozen_encoder_is_lowest(
    downstream,
):
    f1 = {s: downstream.scores("spans", s, "f1") for s in ("pretrained", "random", "frozen")}
    exact = {s: downstream.scores("spans", s) for s in ("pretrained", "random", "frozen")}
    tuned_f1, tuned_exact = f1["pretrained"] + f1["random"], exact["pretrained"] + exact["random"]
    constant = downstream.constant_span
    assert min(tuned_f1) > downstream.span_baseline.f1 + 0.1
    assert min(tuned_exact) > downstream.span_baseline.exact + 0.1
    assert all(abs(f - constant.f1) < 0.08 for f in tuned_f1)
    assert max(f1["random"]) < constant.f1
    assert max(f1["frozen"]) < constant.f1
    assert min(tuned_exact) > constant.exact
    assert max(exact["frozen"]) < constant.exact
    gaps = [p - r for p, r in zip(f1["pretrained"], f1["random"], strict=True)]
    assert max(abs(g) for g in gaps) < 0.1 and sum(gaps) > 0
    exact_gaps = [p - r for p, r in zip(exact["pretrained"], exact["random"], strict=True)]
    assert max(abs(g) for g in exact_gaps) < 0.1  # "the gain, if any, is small" on both measures
    for seed in range(len(downstream.config.seeds)):
        assert f1["frozen"][seed] < min(f1["pretrained"][seed], f1["random"][seed])
        assert exact["frozen"][seed] < min(exact["pretrained"][seed], exact["random"][seed])
