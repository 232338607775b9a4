"""The outcomes that 11장 트랜스포머 states in words, re-measured.

Each test calls the chapter's own experiment function from
:mod:`course_utils.transformer` with the chapter's configuration, so that a
sentence such as "pre-norm reaches a lower training loss than post-norm at
every epoch" fails loudly if it stops being true. The chapter checks the same
statements with ``claim`` when the book is built; the trained models come from
the training cache the build filled. Timings (the key/value cache's speed-up,
seconds per epoch, the time crossover against the LSTM) are measured by the
chapter and by ``benchmarks/transformer.py``, not asserted here: this machine
is too noisy for timed tests.
"""

import itertools

import pytest
import torch

from course_utils.device import run_size
from course_utils.experiments.ch09_seq2seq import (
    generated_data,
    translation_config,
)
from course_utils.experiments.ch11_transformer import (
    PAPER_SIZES,
    PAPER_VOCAB_SIZE,
    attention_maps,
    attention_vs_lstm_cost,
    crossover,
    gradient_norms_at_init,
    head_alignment_accuracy,
    learned_positions_after,
    prediction_confidence,
    run_transformer_comparison,
    time_kv_cache,
    torch_parameter_count,
    why_scale,
)
from course_utils.seq2seq import make_batch
from course_utils.transformer import transformer_parameter_count

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def chapter_data():
    config = translation_config()
    data, splits = generated_data(config)
    return config, data, splits


@pytest.fixture(scope="module")
def runs(chapter_data):
    """The chapter's two Transformers and 10장's Bahdanau model, same data and budget."""
    if run_size() != "small":
        pytest.skip("the prose describes the default CPU run (COURSE_RUN=small)")
    config, data, splits = chapter_data
    return run_transformer_comparison(data, splits, config, show_progress=False)


def test_unscaled_scores_have_variance_d_k_and_saturate_the_softmax():
    rows = why_scale()
    assert all(0.9 < r.variance / r.d_k < 1.1 for r in rows)
    assert all(0.9 < r.scaled_variance < 1.1 for r in rows)
    assert all(a.jacobian_norm > b.jacobian_norm for a, b in itertools.pairwise(rows))
    assert all(a.max_weight < b.max_weight for a, b in itertools.pairwise(rows))
    scaled = [r.scaled_jacobian_norm for r in rows]
    assert max(scaled) < 1.1 * min(scaled)


def test_paper_parameter_counts_match_torch_modules_and_the_paper_within_a_few_million():
    base = transformer_parameter_count(PAPER_SIZES["base"], PAPER_VOCAB_SIZE)["total"]
    big = transformer_parameter_count(PAPER_SIZES["big"], PAPER_VOCAB_SIZE)["total"]
    assert base == torch_parameter_count(PAPER_SIZES["base"], PAPER_VOCAB_SIZE)
    assert big == torch_parameter_count(PAPER_SIZES["big"], PAPER_VOCAB_SIZE)
    assert 60e6 < base < 65e6  # the paper: 65M
    assert 213e6 < big < 216e6  # the paper: 213M


def test_at_the_same_budget_bahdanau_beats_the_transformer_in_range(runs):
    pre, bahdanau = runs["pre_norm"], runs["bahdanau"]
    assert abs(pre.parameters - bahdanau.parameters) < 0.1 * bahdanau.parameters
    assert bahdanau.in_range.exact_match > pre.in_range.exact_match + 0.05
    assert pre.train_loss[-1] > 5 * bahdanau.train_loss[-1]
    assert pre.in_range.exact_match > 0.5
    assert pre.alignment < bahdanau.alignment
    assert max(r.beyond.exact_match for r in runs.values()) <= 0.05


def test_label_smoothing_lowers_the_confidence_to_the_accuracy_and_leaves_bleu_close(
    runs, chapter_data
):
    _, data, _ = chapter_data
    pre, smooth = runs["pre_norm"], runs["label_smoothing"]
    test = data.examples("test")
    plain = prediction_confidence(pre.model, test)
    smoothed = prediction_confidence(smooth.model, test)
    assert smoothed.top_probability < plain.top_probability - 0.03
    assert plain.top_probability > plain.accuracy + 0.02
    gap = abs(plain.top_probability - plain.accuracy)
    assert abs(smoothed.top_probability - smoothed.accuracy) < gap / 2
    assert abs(smoothed.accuracy - plain.accuracy) < 0.02
    assert abs(smooth.in_range.bleu - pre.in_range.bleu) < 2
    assert abs(smooth.beyond.bleu - pre.beyond.bleu) < 3
    assert smooth.in_range.exact_match < runs["bahdanau"].in_range.exact_match - 0.05


def test_post_norm_gradients_grow_toward_the_output_and_pre_norm_gradients_are_even(chapter_data):
    config, data, _ = chapter_data
    post = gradient_norms_at_init(data, config, norm_first=False, batches=2)["decoder"]
    pre = gradient_norms_at_init(data, config, norm_first=True, batches=2)["decoder"]
    assert post[-1] > 4 * post[0]
    assert max(pre) < 1.5 * min(pre)


def test_learned_positions_never_seen_in_training_keep_their_initial_values(chapter_data):
    config, data, _ = chapter_data
    learned, initial, used = learned_positions_after(data, config, steps=10)
    seen = data.examples("train")[: 10 * config.training.batch_size]
    assert used == max(max(len(s), len(t)) for s, t in seen)
    changed = (learned != initial).any(dim=1)
    assert bool(changed[:used].all())
    assert not bool(changed[used:].any())
    assert len(changed) > used


def test_decoder_self_attention_maps_are_causal(runs, chapter_data):
    _, data, splits = chapter_data
    pair = next(p for p in splits.test if p.clauses == 1)
    target = [*data.target_vocab.encode(list(pair.target)), 3]
    maps = attention_maps(
        runs["pre_norm"].model, data.source_vocab.encode(list(pair.source)), target
    )
    upper = torch.ones(len(target), len(target), dtype=torch.bool).triu(1)
    assert all(bool((m[:, upper] == 0).all()) for m in maps["decoder_self"])
    assert maps["cross"][-1].shape == (4, len(target), len(pair.source))


def test_the_key_value_cache_gives_the_same_128_tokens(runs, chapter_data):
    _, data, _ = chapter_data
    sample = make_batch(data.examples("test")[:8])
    timing = time_kv_cache(runs["pre_norm"].model, sample.source, sample.source_lengths, 128, 1)
    assert timing.identical


def test_self_attention_memory_grows_quadratically_and_the_lstms_linearly():
    rows = attention_vs_lstm_cost(lengths=(512, 1024, 2048), repeats=1)
    assert rows[-1].attention_bytes / rows[-2].attention_bytes > 3
    assert rows[-1].lstm_bytes / rows[-2].lstm_bytes < 2.2
    assert rows[-1].attention_bytes > rows[-1].lstm_bytes


def test_no_single_cross_attention_head_aligns_as_well_as_their_mean(runs, chapter_data):
    _, data, splits = chapter_data
    inside = [p for p in splits.test if splits.in_training_range(p)]
    last_layer = head_alignment_accuracy(runs["pre_norm"].model, data, inside)[-1]
    assert max(last_layer) < runs["pre_norm"].alignment
    assert max(last_layer) < runs["bahdanau"].alignment


def test_time_and_memory_crossovers_are_found_inside_the_measured_lengths():
    rows = attention_vs_lstm_cost(lengths=(16, 512, 2048), repeats=1)
    memory = crossover(rows, lambda r: (r.attention_bytes, r.lstm_bytes))
    assert memory is not None and memory > rows[0].n
