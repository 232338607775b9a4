"""The outcomes that 10장's "번역 너머의 어텐션" section states in words, re-measured.

Each test calls the section's own experiment function
(:func:`course_utils.experiments.ch10_attention.run_penalty_experiment`) with the chapter's
settings, so that a sentence such as "the penalty pulls the hops apart" fails
loudly if it stops being true. The chapter checks the same statements with
``claim`` when the book is built.
"""

import pytest
import torch

from course_utils.datasets import split_lines
from course_utils.device import run_size
from course_utils.experiments.ch10_attention import (
    constitution_chapter_lines,
    run_penalty_experiment,
)
from course_utils.self_attentive import attention_penalty
from course_utils.vocab import oov_rate

pytestmark = pytest.mark.slow

# The syllables of the words that name the chapters' institutions (국회, 대통령, 법원, 법관, 재판).
KEYWORD_SYLLABLES = set("국회대통령법원관판")


@pytest.fixture(scope="module")
def experiment():
    """The chapter's run: the default config of this run size, on the default device."""
    if run_size() != "small":
        pytest.skip("the prose describes the default CPU run (COURSE_RUN=small)")
    return run_penalty_experiment()


def test_the_penalty_has_its_two_exact_values():
    distinct = torch.zeros(1, 4, 6)
    distinct[0, range(4), [0, 2, 3, 5]] = 1
    same = torch.zeros(1, 4, 6)
    same[0, :, 1] = 1
    assert attention_penalty(distinct).item() == 0
    assert attention_penalty(same).item() == 4 * 3


def test_eojeols_are_far_more_often_unseen_than_syllables():
    train, test = split_lines(constitution_chapter_lines(), 0.2)
    rates = {}
    for name, tokenize in [("eojeol", str.split), ("syllable", list)]:
        known = {token for line, _ in train for token in tokenize(line)}
        rates[name] = oov_rate([token for line, _ in test for token in tokenize(line)], known)
    assert rates["eojeol"] > 10 * rates["syllable"]


def test_both_models_beat_the_majority_baseline_and_fit_the_training_clauses(experiment):
    plain, penalized = experiment.without_penalty, experiment.with_penalty
    majority = experiment.majority_accuracy
    assert min(plain.test_accuracy, penalized.test_accuracy) > majority + 0.3
    assert min(plain.train_accuracy, penalized.train_accuracy) > 0.98


def test_accuracies_are_within_three_held_out_clauses_of_each_other(experiment):
    """The penalty does not measurably change accuracy; neither does the attention vs n-grams."""
    size = len(experiment.test)
    plain, penalized = experiment.without_penalty, experiment.with_penalty
    assert round(abs(plain.test_accuracy - penalized.test_accuracy) * size) <= 3
    for run in (plain, penalized):
        assert round(abs(run.test_accuracy - experiment.bag_of_ngrams_accuracy) * size) <= 3


def test_the_penalty_pulls_the_hops_apart_and_focuses_each_of_them(experiment):
    plain, penalized = experiment.without_penalty, experiment.with_penalty
    assert plain.test_distinctness < 0.05
    assert penalized.test_distinctness > 0.8
    assert penalized.test_penalty < plain.test_penalty / 2
    assert plain.test_peak < 0.35 and penalized.test_peak > 0.7


def test_without_the_penalty_every_hop_reads_the_same_keyword_syllables(experiment):
    plain, penalized = experiment.without_penalty, experiment.with_penalty
    plain_tops = [counter.most_common(1)[0][0] for counter in experiment.peak_tokens(plain)]
    assert all(top in KEYWORD_SYLLABLES for top in plain_tops)
    assert experiment.same_peak_share(plain) > 0.5
    assert experiment.same_peak_share(penalized) < 0.05


def test_with_the_penalty_some_hops_settle_on_particles_and_endings(experiment):
    tops = [
        counter.most_common(1)[0][0] for counter in experiment.peak_tokens(experiment.with_penalty)
    ]
    assert sum(top not in KEYWORD_SYLLABLES for top in tops) >= 2


def test_runs_started_in_the_background_are_the_ones_trained_here(tmp_path, monkeypatch):
    """start_chapter_runs' workers give run_penalty_experiment and train_model the same results."""
    from course_utils import runs
    from course_utils.experiments.ch09_seq2seq import (
        TranslationConfig,
        generated_data,
        new_seq2seq,
        train_model,
    )
    from course_utils.experiments.ch10_attention import (
        SelfAttentiveConfig,
        new_bahdanau,
        start_chapter_runs,
    )
    from course_utils.seq2seq import TrainConfig

    tiny = TranslationConfig(200, 10, 10, 2, 3, 1, 8, 16, TrainConfig(epochs=1, batch_size=64))
    penalty = SelfAttentiveConfig(
        embedding_size=8, hidden_size=8, attention_size=8, hops=2, mlp_size=8, epochs=1
    )
    data, _ = generated_data(tiny)
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path / "background"))
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the chapter's setting
    try:
        assert start_chapter_runs(data, tiny, penalty=penalty) == (runs.background_workers() >= 2)
        background = run_penalty_experiment(penalty)
        models = {}
        for name, make in (("seq2seq", new_seq2seq), ("bahdanau", new_bahdanau)):
            model = make(data, tiny)
            history = train_model(model, data, tiny.training, show_progress=False)
            models[name] = model.state_dict(), history.train_loss
        monkeypatch.setenv("COURSE_CACHE", "off")
        assert not start_chapter_runs(data, tiny, penalty=penalty)  # nothing starts without a cache
        here = run_penalty_experiment(penalty)
        for name, make in (("seq2seq", new_seq2seq), ("bahdanau", new_bahdanau)):
            model = make(data, tiny)
            history = train_model(model, data, tiny.training, show_progress=False)
            state, losses = models[name]
            assert history.train_loss == losses
            assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    finally:
        torch.set_num_threads(before)
    assert background.bag_of_ngrams_accuracy == here.bag_of_ngrams_accuracy
    for run_there, run_here in [
        (background.without_penalty, here.without_penalty),
        (background.with_penalty, here.with_penalty),
    ]:
        assert run_there.loss_curve == run_here.loss_curve
        assert run_there.test_accuracy == run_here.test_accuracy
        assert run_there.test_penalty == run_here.test_penalty
        there, now = run_there.model.state_dict(), run_here.model.state_dict()
        assert all(torch.equal(there[k], v) for k, v in now.items())
