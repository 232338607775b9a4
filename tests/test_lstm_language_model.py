"""8장's language-model comparison: 6장's character task with torch's RNN, LSTM and GRU.

``run_char_language_models`` must be 6장's experiment with only the recurrent
layer swapped: for the RNN it reproduces :func:`course_utils.experiments.ch06_rnn.train_char_lm`
(same initial weights, windows, dropout and held-out perplexity).
"""

import dataclasses

import pytest
import torch

from course_utils.datasets import korean_char_split
from course_utils.experiments.ch06_rnn import (
    CharLMConfig,
    char_lm_config,
    char_vocab,
    train_char_lm,
)
from course_utils.experiments.ch08_lstm_gru import (
    CHAR_LM_COMPARISON_EPOCHS,
    char_lm_comparison_config,
    run_char_language_models,
)
from course_utils.lstm import recurrent_parameter_count
from course_utils.rnn import perplexity

TINY = CharLMConfig(epochs=2, embedding_size=8, hidden_size=16, batch_size=8, num_steps=16)
TEXT = list(
    "대한민국은 민주공화국이다.\n대한민국의 주권은 국민에게 있고, 모든 권력은 국민으로부터 나온다.\n"
    * 12
)


def _run(cells=("rnn", "lstm", "gru"), config=TINY, **kwargs):
    return run_char_language_models(
        TEXT, TEXT[:300], cells, config=config, device="cpu", show_progress=False, **kwargs
    )


def test_the_rnn_run_is_chapter_6s_train_char_lm():
    train, held_out = korean_char_split()
    config = dataclasses.replace(char_lm_config("small"), epochs=1, hidden_size=32)
    ours = run_char_language_models(
        train, held_out, ["rnn"], config=config, device="cpu", show_progress=False
    ).runs["rnn"]
    chapter6 = train_char_lm(train, held_out, config, device="cpu", show_progress=False)
    # The same weights, windows and dropout masks; only torch's kernel adds in another order.
    assert ours.perplexity == pytest.approx(chapter6.perplexity, rel=1e-4)
    assert ours.history.train_loss == pytest.approx(chapter6.history.train_loss, rel=1e-5)
    assert ours.history.val_loss == pytest.approx(chapter6.history.val_loss, rel=1e-5)
    assert ours.parameters == chapter6.parameters


def test_runs_are_seeded_and_score_the_whole_held_out_text():
    first, second = _run(), _run()
    assert list(first.runs) == ["rnn", "lstm", "gru"]
    for cell, run in first.runs.items():
        again = second.runs[cell]
        assert run.history.train_loss == again.history.train_loss
        assert run.perplexity == again.perplexity
        assert len(run.history.val_loss) == TINY.epochs
        held_out_ids = torch.tensor(char_vocab(TEXT).encode(TEXT[:300]))  # 6장's vocabulary
        assert run.perplexity == pytest.approx(perplexity(run.model, held_out_ids), rel=1e-6)
        assert run.seconds > 0


def test_parameter_counts_follow_the_formula():
    comparison = _run()
    vocab_size = len(set(TEXT)) + 1  # the characters and <unk>
    outside = vocab_size * TINY.embedding_size + (TINY.hidden_size + 1) * vocab_size
    for cell, run in comparison.runs.items():
        rec = recurrent_parameter_count(cell, TINY.embedding_size, TINY.hidden_size)
        assert run.recurrent_parameters == rec
        assert run.parameters == rec + outside
        assert run.parameters == sum(p.numel() for p in run.model.parameters())


def test_the_comparison_config_is_chapter_6s_with_its_own_epochs():
    for size in ("small", "large"):
        config = char_lm_comparison_config(size)
        assert config.epochs == CHAR_LM_COMPARISON_EPOCHS[size]
        assert dataclasses.replace(config, epochs=char_lm_config(size).epochs) == char_lm_config(
            size
        )
    assert char_lm_comparison_config("small").epochs < char_lm_config("small").epochs
    with pytest.raises(ValueError, match="size must be one of"):
        char_lm_comparison_config("medium")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"cells": ["rnn", "transformer"]}, ValueError, "cells must be a non-empty list"),
        ({"cells": []}, ValueError, "cells must be a non-empty list"),
        ({"cells": "lstm"}, ValueError, "cells must be a non-empty list"),
        ({"cells": ["lstm", "lstm"]}, ValueError, "each cell may appear once"),
        ({"config": {"epochs": 1}}, TypeError, "config must be a CharLMConfig"),
        ({"train_chars": "대한민국"}, TypeError, r"train_chars must be a list of characters"),
        ({"held_out_chars": ["가"]}, ValueError, "held_out_chars must hold at least 2"),
    ],
)
def test_bad_arguments_name_what_was_expected(kwargs, error, message):
    arguments = {"train_chars": TEXT, "held_out_chars": TEXT[:300], "config": TINY, **kwargs}
    with pytest.raises(error, match=message):
        run_char_language_models(**arguments, device="cpu", show_progress=False)
