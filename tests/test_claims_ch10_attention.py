"""The outcomes that 10장 어텐션 states in words, re-measured.

Each test calls the chapter's own experiment function
(:func:`course_utils.experiments.ch10_attention.run_attention_comparison`) with the chapter's
configuration (``translation_config()``, ``generated_data(config)``), so that a
sentence such as "with attention the in-range length curve is flat" fails
loudly if it stops being true. The chapter checks the same statements with
``claim`` when the book is built. The gettext test also trains 9장's seq2seq
on the same data, which the chapter leaves out to save time: it backs the
chapter's pointer to 9장's number.
"""

import itertools
import math
import re
from collections import Counter

import pytest
import sacrebleu
import torch
import torch.nn.functional as F

from course_utils.attention import (
    alignment_accuracy,
    dot_product_attention,
    forced_attention,
    masked_softmax,
)
from course_utils.device import run_size
from course_utils.experiments.ch09_seq2seq import (
    evaluate_model,
    generated_data,
    gettext_data,
    new_seq2seq,
    train_model,
    translation_config,
)
from course_utils.experiments.ch10_attention import (
    new_bahdanau,
    run_attention_comparison,
)
from course_utils.gettext_corpus import GettextCatalogueNotFoundError
from course_utils.seq2seq import (
    EOS,
    translate,
)
from course_utils.translation_lexicon import PARTICLES

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

# As the chapter: one thread (a second one changes the sums' order, hence the models a little).

ATTENTION = ("bahdanau", "luong")


@pytest.fixture(scope="module")
def chapter_data():
    config = translation_config()
    data, splits = generated_data(config)
    return config, data, splits


@pytest.fixture(scope="module")
def runs(chapter_data):
    """The chapter's comparison: 9장's seq2seq, Bahdanau and Luong (dot, no input feeding)."""
    if run_size() != "small":
        pytest.skip("the prose describes the default CPU run (COURSE_RUN=small)")
    config, data, splits = chapter_data
    return run_attention_comparison(data, splits, config, show_progress=False)


def _encode(data, pairs):
    sources = [data.source_vocab.encode(list(p.source)) for p in pairs]
    targets = [[*data.target_vocab.encode(list(p.target)), EOS] for p in pairs]
    return sources, targets


def test_minus_infinity_before_the_softmax_zeroes_pads_and_keeps_rows_summing_to_one():
    torch.manual_seed(0)
    scores = torch.randn(2, 1, 5)
    mask = torch.tensor([[False, False, False, True, True], [False] * 5])
    added = masked_softmax(scores, mask)
    multiplied = torch.softmax(scores, dim=-1) * ~mask[:, None, :]
    assert bool((added[0, 0, 3:] == 0).all())
    assert torch.allclose(added.sum(-1), torch.ones(2, 1))
    assert float(multiplied[0, 0].sum()) < 0.99


def test_dot_attention_is_sdpa_with_scale_one_and_the_inverted_mask():
    torch.manual_seed(0)
    query, keys = torch.randn(3, 4, 8), torch.randn(3, 6, 8)
    mask = torch.arange(6)[None, :] >= torch.tensor([6, 4, 2])[:, None]
    context, weights = dot_product_attention(query, keys, keys, mask)
    reference = F.scaled_dot_product_attention(
        query, keys, keys, attn_mask=~mask[:, None, :], scale=1.0
    )
    assert (context - reference).abs().max().item() < 1e-6
    assert bool((weights[2, :, 2:] == 0).all())


def test_seq2seq_bleu_falls_with_length_inside_the_training_range(runs):
    inside = [r for r in runs["seq2seq"].by_length if r.in_training_range]
    assert all(a.bleu > b.bleu for a, b in itertools.pairwise(inside))
    assert inside[0].bleu > 2 * inside[-1].bleu
    assert runs["seq2seq"].in_range.exact_match < 0.2


def test_attention_models_translate_the_in_range_sentences_and_their_curve_is_flat(runs):
    for name in ATTENTION:
        run = runs[name]
        assert run.in_range.exact_match >= 0.95, name
        assert min(r.bleu for r in run.by_length if r.in_training_range) > 99, name
        assert all(
            a.bleu > b.bleu for a, b in zip(run.by_length, runs["seq2seq"].by_length, strict=True)
        )


def test_luong_needs_fewer_parameters_than_seq2seq(runs):
    assert runs["luong"].parameters < runs["seq2seq"].parameters


def test_beyond_the_training_range_every_model_fails_on_exact_match(runs):
    assert max(run.beyond.exact_match for run in runs.values()) <= 0.05
    for name in ATTENTION:
        assert 35 < runs[name].beyond.bleu < 75, name
        assert runs[name].beyond.bleu < runs[name].in_range.bleu - 25, name


def test_beyond_range_sentences_are_mostly_within_the_longest_but_past_90_percent(chapter_data):
    _, _, splits = chapter_data
    lengths = sorted(len(p.source) for p in splits.train)
    beyond = [len(p.source) for p in splits.test if not splits.in_training_range(p)]
    assert sum(n <= lengths[-1] for n in beyond) / len(beyond) > 0.5
    p90 = lengths[math.ceil(0.9 * len(lengths)) - 1]  # 90 % of the training sentences are as short
    assert sum(length <= p90 for length in lengths) >= 0.9 * len(lengths)
    assert sum(n > p90 for n in beyond) / len(beyond) > 0.5  # so length and clauses go together


def test_beyond_range_translations_stop_at_the_largest_trained_clause_count(runs, chapter_data):
    _, data, splits = chapter_data
    beyond = [p for p in splits.test if not splits.in_training_range(p)]
    for name in ATTENTION:
        outputs = translate(
            runs[name].model, [list(p.source) for p in beyond], data.source_vocab, data.target_vocab
        )
        clauses = Counter(out.count("그리고") + 1 for out in outputs)
        assert clauses[splits.max_train_clauses] / len(outputs) >= 0.8, name


def _kind(token):
    if token in PARTICLES:
        return "particle"
    if token == ".":
        return "period"
    if token == "그리고":
        return "and"
    return "content"


def test_content_words_follow_the_gold_alignment_periods_and_particles_less(runs, chapter_data):
    _, data, splits = chapter_data
    inside = [p for p in splits.test if splits.in_training_range(p)]
    for name in ATTENTION:
        maps = forced_attention(runs[name].model, *_encode(data, inside))
        total = alignment_accuracy(maps, [p.alignment for p in inside])
        assert abs(total - runs[name].alignment) < 1e-12
        assert total > 0.7, name
        by_kind = {
            kind: alignment_accuracy(
                maps,
                [
                    [
                        links if _kind(t) == kind else ()
                        for t, links in zip(p.target, p.alignment, strict=True)
                    ]
                    for p in inside
                ],
            )
            for kind in ("content", "particle", "period", "and")
        }
        assert by_kind["content"] > 0.95, (name, by_kind)
        assert by_kind["particle"] < by_kind["content"] - 0.1, (name, by_kind)
        assert by_kind["period"] < 0.5, (name, by_kind)
        assert by_kind["period"] < by_kind["particle"], (name, by_kind)
        assert by_kind["and"] > 0.8, (name, by_kind)  # the clause joiner is not what misaligns


def test_the_heatmaps_korean_verb_row_points_at_the_english_verb(runs, chapter_data):
    _, data, splits = chapter_data
    first = next(
        p
        for p in splits.test
        if splits.in_training_range(p)
        and p.clauses == 1
        and "에서" in p.target
        and {"을", "를"} & set(p.target)
    )
    verb_row = len(first.target) - 2
    (english_verb,) = first.alignment[verb_row]
    assert first.target[-1] == "." and english_verb <= 3
    for name in ATTENTION:
        (weights,) = forced_attention(runs[name].model, *_encode(data, [first]))
        assert int(weights[verb_row].argmax()) == english_verb, name


@pytest.fixture(scope="module")
def gettext_models():
    if run_size() != "small":
        pytest.skip("the prose describes the default CPU run (COURSE_RUN=small)")
    try:
        gettext = gettext_data()
    except GettextCatalogueNotFoundError as error:
        pytest.skip(str(error))
    config = translation_config()
    scored = {}
    for name, make in (("bahdanau", new_bahdanau), ("seq2seq", new_seq2seq)):
        model = make(gettext, config)
        train_model(model, gettext, config.training, show_progress=False)
        scored[name] = evaluate_model(model, gettext)
    return gettext, scored


def test_on_gettext_bahdanau_beats_9s_seq2seq_but_rarely_copies_unseen_names(gettext_models, runs):
    gettext, scored = gettext_models
    (bahdanau, hypotheses), (seq2seq, s2s_hypotheses) = scored["bahdanau"], scored["seq2seq"]
    assert bahdanau.bleu > seq2seq.bleu and bahdanau.chrf > seq2seq.chrf
    assert bahdanau.chrf < runs["bahdanau"].in_range.chrf / 2
    references = [gettext.words(t) for _, t in gettext.test]
    latin = re.compile(r"[A-Za-z]{2,}")
    trained = {w for _, t in gettext.train for w in latin.findall(" ".join(gettext.words(t)))}

    def reproduced(outputs, seen):
        hits = total = 0
        for r, h in zip(references, outputs, strict=True):
            output = set(latin.findall(" ".join(h)))
            for word in latin.findall(" ".join(r)):
                if (word in trained) == seen:
                    total += 1
                    hits += word in output
        return hits / total

    seen = {m: reproduced(h, True) for m, h in (("b", hypotheses), ("s", s2s_hypotheses))}
    unseen = {m: reproduced(h, False) for m, h in (("b", hypotheses), ("s", s2s_hypotheses))}
    assert abs(seen["b"] - seen["s"]) < 0.15
    assert max(unseen.values()) < 0.15
    chrf = [
        sacrebleu.sentence_chrf(" ".join(h), [" ".join(r)]).score
        for h, r in zip(hypotheses, references, strict=True)
    ]
    assert min(chrf) < 5
    assert any(
        h == r and latin.findall(" ".join(r)) for h, r in zip(hypotheses, references, strict=True)
    ), "no Latin name copied into a perfect translation"
