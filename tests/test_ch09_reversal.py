"""9장's source reversal, time lags, subword coverage, background training and scoring."""

import functools

import pytest
import torch

from course_utils.experiments.ch09_seq2seq import (
    ParallelData,
    TranslationConfig,
    new_seq2seq,
    reverse_sources,
    subword_coverage,
    time_lags,
    train_in_background,
    train_model,
)
from course_utils.experiments.ch10_attention import (
    new_bahdanau,
    score_after_training,
    score_model_run,
)
from course_utils.runs import CACHE_ENV, background_workers
from course_utils.seq2seq import EOS, Seq2Seq, TrainConfig, make_batch
from course_utils.translation_data import Pair, Splits
from course_utils.vocab import Vocab

WORDS = ["the", "cat", "saw", "a", "dog", "고양이", "가", "개", "를", "봤다"]


def _toy_data(name: str = "toy") -> ParallelData:
    vocab = Vocab(WORDS)
    pairs = [
        (["the", "cat", "saw", "a", "dog"], ["고양이", "가", "개", "를", "봤다"]),
        (["a", "dog", "saw"], ["개", "가", "봤다"]),
        (["the", "dog", "saw", "the", "cat"], ["개", "가", "고양이", "를", "봤다"]),
    ]
    return ParallelData(name, pairs, pairs[:2], pairs[1:], vocab, vocab)


def test_reversed_batches_hold_the_source_ids_backwards_and_the_targets_untouched():
    data = _toy_data()
    backwards = reverse_sources(data)
    assert backwards.name != data.name  # train_model keeps the two models apart
    for split in ("train", "valid", "test"):
        for (source, target), (flipped, same) in zip(
            data.split(split), backwards.split(split), strict=True
        ):
            assert flipped == source[::-1] and same == target
    forward, reverse = make_batch(data.examples("train")), make_batch(backwards.examples("train"))
    assert torch.equal(forward.source_lengths, reverse.source_lengths)
    for b, length in enumerate(forward.source_lengths.tolist()):
        assert torch.equal(reverse.source[b, :length], forward.source[b, :length].flip(0))
        assert (reverse.source[b, length:] == forward.source[b, length:]).all()  # the <pad> tail
    assert torch.equal(reverse.target_in, forward.target_in)
    assert torch.equal(reverse.target_out, forward.target_out)
    assert all(target[-1] == EOS for _, target in backwards.examples("train"))
    assert data.train[0][0] == ["the", "cat", "saw", "a", "dog"]  # the original is not changed


def test_reversed_sources_are_another_recipe_for_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    training = TrainConfig(epochs=1, batch_size=2)
    for data in (_toy_data(), reverse_sources(_toy_data())):
        torch.manual_seed(0)
        size = len(data.source_vocab)
        train_model(Seq2Seq(size, size, 4, 6), data, training, show_progress=False)
    assert len(list(tmp_path.glob("*.pt"))) == 2


def test_time_lags_count_the_steps_between_reading_and_writing_by_hand():
    # source a b c (S = 3), target x y: x translates a, y translates c.
    pair = Pair(("a", "b", "c"), ("x", "y"), ((0,), (2,)), 1)
    lags = time_lags([pair])
    # forward: a read at step 1, c at 3; x written at S + 1 = 4, y at 5 → lags 3 and 2
    assert lags["forward"].mean == pytest.approx(2.5) and lags["forward"].first == 3
    # reversed: c read at step 1, a at 3 → x: 4 − 3 = 1, y: 5 − 1 = 4
    assert lags["reversed"].mean == pytest.approx(2.5) and lags["reversed"].first == 1
    with pytest.raises(ValueError, match="aligned first target token"):
        time_lags([])


def test_subword_coverage_counts_unseen_words_and_unknown_pieces():
    vocab = Vocab(["▁the", "▁cat", "▁d", "og"])
    train = [(["▁the", "▁cat"], ["▁the", "▁cat"])]
    test = [(["▁the", "▁d", "og"], ["▁the", "▁d", "og", "!"])]  # "dog" unseen, "!" unknown

    def words(pieces):
        return "".join(pieces).replace("▁", " ").split()

    data = ParallelData("toy", train, train, test, vocab, vocab, words)
    coverage = subword_coverage(data)
    assert coverage["source"].test_words == 2 and coverage["source"].unseen_words == 0.5
    assert coverage["source"].unknown_pieces == 0
    assert coverage["target"].test_pieces == 4 and coverage["target"].unknown_pieces == 0.25


@pytest.mark.slow
def test_models_trained_in_the_background_are_the_ones_trained_here(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    config = TranslationConfig(3, 2, 1, 1, 1, 0, 4, 6, TrainConfig(epochs=2, batch_size=2))
    datasets = [_toy_data(), reverse_sources(_toy_data())]
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the thread count is part of the recipe
    try:
        started = train_in_background([(new_seq2seq, d, config) for d in datasets], False)
        assert started == (background_workers() >= 2)
        kept = []
        for data in datasets:  # waits for each model, then loads it
            model = new_seq2seq(data, config)
            kept.append((model, train_model(model, data, config.training, show_progress=False)))
        assert len(list(tmp_path.glob("*.pt"))) == 2
        monkeypatch.setenv(CACHE_ENV, "off")
        for data, (loaded, history) in zip(datasets, kept, strict=True):
            model = new_seq2seq(data, config)
            again = train_model(model, data, config.training, show_progress=False)
            assert again.train_loss == history.train_loss
            for a, b in zip(model.state_dict().values(), loaded.state_dict().values(), strict=True):
                assert torch.equal(a, b)
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_scores_made_in_the_training_worker_are_the_ones_made_here(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    data = _toy_data()
    one = Pair(("a", "dog", "saw"), ("개", "가", "봤다"), ((1,), (1,), (2,)), 1)
    two = Pair(
        ("the", "cat", "saw", "a", "dog"), ("고양이", "가", "개", "를", "봤다"),
        ((1,), (1,), (4,), (4,), (2,)), 2,
    )  # fmt: skip
    splits = Splits((one,), (one,), (one, two), max_train_clauses=1, max_test_clauses=2)
    config = TranslationConfig(3, 2, 1, 1, 1, 0, 4, 6, TrainConfig(epochs=2, batch_size=2))
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the thread count is part of the recipe
    try:
        then = functools.partial(score_after_training, splits=splits)
        started = train_in_background([(new_bahdanau, data, config)], then=then)
        assert started == (background_workers() >= 2)
        model = new_bahdanau(data, config)
        history = train_model(model, data, config.training, show_progress=False)
        kept = score_model_run("b", model, history, data, splits, True, config.training)
        assert len(list(tmp_path.glob("seq2seq-scores-*.pt"))) == 1
        monkeypatch.setenv(CACHE_ENV, "off")
        here = score_model_run("b", model, history, data, splits, True)
        assert (kept.in_range, kept.beyond, kept.by_length, kept.alignment) == (
            here.in_range, here.beyond, here.by_length, here.alignment,
        )  # fmt: skip
        assert kept.beyond is not None and kept.alignment is not None
    finally:
        torch.set_num_threads(before)
