"""12장's two other downstream formats: the generated data, the span head, and its errors.

The span head is checked against ``transformers.BertForQuestionAnswering``
with copied weights in float64; the data against the grammar that made them.
"""

from collections import Counter

import pytest
import torch
from torch import nn

from course_utils.bert import BertConfig, hf_name_map
from course_utils.bert_span import BertForQuestionAnswering, best_span, span_f1, span_loss
from course_utils.checks import load_state_dict_strict
from course_utils.experiments.ch12_downstream import (
    DownstreamConfig,
    SentencePair,
    additive_tense_ceiling,
    bag_of_words_baseline,
    constant_span_baseline,
    encode_pairs,
    encode_questions,
    finetune_downstream,
    make_span_questions,
    make_tense_pairs,
    random_span_baseline,
    tense_of,
    words,
)
from course_utils.translation_lexicon import LEXICON
from course_utils.vocab import BERT_SPECIALS
from course_utils.wordpiece import WordPieceVocab

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def char_vocab(texts):
    chars = sorted({c for t in texts for c in t if c != " "})
    return WordPieceVocab([*BERT_SPECIALS, "\n", *chars])


# --- the span head, against transformers --------------------------------------------------------


def test_span_head_and_loss_equal_transformers_in_float64():
    import transformers

    kwargs = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=24, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)  # fmt: skip
    torch.manual_seed(0)
    theirs = transformers.BertForQuestionAnswering(transformers.BertConfig(**kwargs)).double()
    with torch.no_grad():  # move every weight off its initial value
        for parameter in theirs.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    theirs.eval()
    ours = BertForQuestionAnswering(BertConfig(**kwargs)).double().eval()
    names = {f"bert.{t}": f"bert.{o}" for t, o in hf_name_map(2, pooler=False).items()}
    state = {names.get(k, k): v for k, v in theirs.state_dict().items()
             if k != "bert.embeddings.position_ids"}  # fmt: skip
    load_state_dict_strict(ours, state)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 40, (4, 11), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    segments = (torch.arange(11) > 4).long().expand(4, 11)
    starts, ends = torch.tensor([5, 6, 7, 10]), torch.tensor([6, 6, 9, 10])
    with torch.no_grad():
        start, end = ours(ids, mask, segments)
        expected = theirs(input_ids=ids, attention_mask=mask, token_type_ids=segments,
                          start_positions=starts, end_positions=ends)  # fmt: skip
        loss = span_loss(start, end, starts, ends)
    real = mask.bool()
    torch.testing.assert_close(start[real], expected.start_logits[real], rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(end[real], expected.end_logits[real], rtol=1e-10, atol=1e-10)
    # transformers' loss: the mean of the start and the end cross-entropy
    torch.testing.assert_close(loss, expected.loss, rtol=1e-10, atol=1e-10)
    by_hand = nn.functional.cross_entropy(start, starts) + nn.functional.cross_entropy(end, ends)
    torch.testing.assert_close(loss, by_hand / 2, rtol=1e-12, atol=1e-12)


def test_best_span_is_the_best_allowed_pair_by_brute_force():
    generator = torch.Generator().manual_seed(0)
    start, end = torch.randn(6, 9, generator=generator), torch.randn(6, 9, generator=generator)
    allowed = torch.rand(6, 9, generator=generator) > 0.3
    allowed[:, 4] = True
    first, last = best_span(start, end, allowed, max_length=3)
    for b in range(6):
        candidates = [(float(start[b, i] + end[b, j]), i, j) for i in range(9) for j in range(9)
                      if i <= j < i + 3 and allowed[b, i] and allowed[b, j]]  # fmt: skip
        _, i, j = max(candidates)
        assert (int(first[b]), int(last[b])) == (i, j)


def test_span_f1_counts_shared_positions():
    assert span_f1((2, 5), (2, 5)) == 1.0
    assert span_f1((0, 1), (2, 3)) == 0.0
    assert span_f1((2, 3), (2, 5)) == pytest.approx(2 * 1 * 0.5 / 1.5)


def test_span_pieces_reject_bad_input():
    logits = torch.zeros(2, 5)
    with pytest.raises(ValueError, match=r"end_logits must be a \(B, T\)"):
        span_loss(logits, torch.zeros(2, 6), torch.tensor([0, 1]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"start_positions must be positions in 0 … 4"):
        span_loss(logits, logits, torch.tensor([0, 5]), torch.tensor([0, 1]))
    with pytest.raises(TypeError, match="int64"):
        span_loss(logits, logits, torch.tensor([0.0, 1.0]), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="at least one True in every row"):
        best_span(logits, logits, torch.zeros(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="max_length must be an int >= 1"):
        best_span(logits, logits, torch.ones(2, 5, dtype=torch.bool), max_length=0)
    with pytest.raises(ValueError, match="first <= last"):
        span_f1((3, 2), (0, 1))


# --- the generated data ----------------------------------------------------------------------------


TIME_TENSES = {" ".join(t.korean): t.tenses for t in LEXICON.times}


def _time_of(sentence):
    return next(t for t in sorted(TIME_TENSES, key=len, reverse=True) if t in sentence)


def _roles(sentence):
    w = words(sentence)
    return {w[i - 1]: w[i] for i in range(1, len(w)) if w[i] in ("이", "가", "을", "를")}


def test_entailment_pairs_have_exact_labels():
    pairs = make_tense_pairs(400, seed=3)
    assert sum(p.label for p in pairs) == 200
    for p in pairs:
        roles_a, roles_b = _roles(p.first), _roles(p.second)
        # B repeats A's subject and object, each with A's particle, and nothing but the verb
        assert len(roles_b) == 2 and roles_b == {k: roles_a[k] for k in roles_b}
        assert sorted(roles_b.values(), key="이가을를".index)[0] in "이가"
        verb_words = 2 if p.second.endswith(" 것입니다") else 1
        assert Counter(words(p.second)[:-verb_words]) <= Counter(words(p.first))
        # A's time allows A's tense; B's tense is A's exactly when the label is 1
        assert tense_of(p.first) in TIME_TENSES[_time_of(p.first)]
        assert (tense_of(p.first) == tense_of(p.second)) == bool(p.label)


def test_neither_sentence_alone_tells_the_label():
    pairs = make_tense_pairs(3000, seed=0)
    for side in ("first", "second"):
        counts = Counter((tense_of(getattr(p, side)), p.label) for p in pairs)
        for tense in ("past", "present", "future"):
            share = counts[tense, 1] / (counts[tense, 0] + counts[tense, 1])
            assert abs(share - 0.5) < 0.05, (side, tense, share)


def test_a_bag_of_words_does_not_compare_the_tenses():
    baseline = bag_of_words_baseline(make_tense_pairs(800, 0), make_tense_pairs(400, 1))
    assert baseline.accuracy < 0.6 < baseline.train_accuracy


def test_tense_of_reads_the_verb_form():
    assert tense_of("소년이 사과를 먹습니다") == "present"
    assert tense_of("어제 공원에서 소년이 사과를 먹었습니다") == "past"
    assert tense_of("사과를 소년이 먹을 것입니다") == "future"
    assert tense_of("아이가 노래를 불렀습니다") == "past"  # 르 irregular
    with pytest.raises(ValueError, match="verb form of the grammar"):
        tense_of("소년이 사과를")
    with pytest.raises(TypeError, match="sentence must be a str"):
        tense_of(None)


def test_additive_tense_ceiling_is_three_quarters_on_the_balanced_cells():
    from itertools import product

    # the design's proportions: each same-tense cell 2 pairs (label 1), each other cell 1 (label 0)
    verb = {"present": "먹습니다", "past": "먹었습니다", "future": "먹을 것입니다"}
    pairs = [
        SentencePair(f"소년이 사과를 {verb[a]}", f"소년이 사과를 {verb[b]}", int(a == b))
        for a, b in product(verb, verb)
        for _ in range(2 if a == b else 1)
    ]
    assert additive_tense_ceiling(pairs) == pytest.approx(0.75)
    # brute force, another way: every labelling of the nine cells by u[a] + v[b] > t with
    # real-valued u, v drawn at random finds no rule above 3/4
    rng = torch.Generator().manual_seed(0)
    tenses = list(verb)
    best = 0.0
    for _ in range(400):
        u, v = torch.randn(3, generator=rng), torch.randn(3, generator=rng)
        for t in torch.linspace(-4, 4, 33):
            right = sum(
                ((u[tenses.index(tense_of(p.first))] + v[tenses.index(tense_of(p.second))]) > t)
                == bool(p.label)
                for p in pairs
            )
            best = max(best, right / len(pairs), 1 - right / len(pairs))
    assert best <= 0.75 + 1e-9


def test_constant_span_baseline_by_hand():
    from course_utils.experiments.ch12_downstream import SpanQuestion

    train = [SpanQuestion("누가?", "개가 와", "개", 0, 0)] * 3 + [
        SpanQuestion("누가?", "소가 와", "소", 2, 2)
    ]
    test = [
        SpanQuestion("누가?", "말이 와", "말", 0, 0),
        SpanQuestion("언제?", "어제 와", "어제", 0, 1),
    ]
    constant = constant_span_baseline(train, test, max_length=12)
    assert constant.exact_span == (0, 0) and constant.exact == 0.5
    assert constant.f1_span == (0, 0)  # F1 on train: (0,0) 3/4, (0,1) 2/3·3/4, (2,2) 1/4
    assert constant.f1 == pytest.approx((1 + 2 * 1 * 0.5 / 1.5) / 2)


def test_random_span_baseline_by_hand():
    from course_utils.experiments.ch12_downstream import SpanQuestion

    q = SpanQuestion("누가?", "개가 와", "개", 0, 0)  # 3 characters: spans (0,0) … (2,2)
    # six spans; exact only (0,0); F1: (0,0) 1, (0,1) 2/3, (0,2) 1/2, the rest 0
    guess = random_span_baseline([q], max_length=12)
    assert guess.exact == pytest.approx(1 / 6)
    assert guess.f1 == pytest.approx((1 + 2 / 3 + 1 / 2) / 6)
    short = random_span_baseline([q], max_length=1)  # (0,0), (1,1), (2,2)
    assert short.exact == pytest.approx(1 / 3) and short.f1 == pytest.approx(1 / 3)


def test_span_answers_are_the_phrases_the_particles_mark():
    questions = make_span_questions(300, seed=2)
    for q in questions:
        chars = q.sentence.replace(" ", "")
        assert chars[q.start : q.end + 1] == q.answer.replace(" ", "")
        after = chars[q.end + 1 :]
        expected = {"누가?": ("이", "가"), "누구를?": ("을", "를"), "무엇을?": ("을", "를"),
                    "어디에서?": ("에서",), "언제?": ("",)}[q.question]  # fmt: skip
        assert any(after.startswith(p) for p in expected)
    assert {q.question for q in questions} == {"누가?", "누구를?", "무엇을?", "어디에서?", "언제?"}


def test_encoding_puts_a_and_b_in_segments_0_and_1():
    pair = SentencePair("개가 소를 봅니다", "소를 개가 봅니다", 1)
    vocab = char_vocab([pair.first])
    encoded = encode_pairs([pair], vocab)
    tokens = vocab.decode(encoded["input_ids"][0].tolist()) if hasattr(vocab, "decode") else None
    ids = encoded["input_ids"][0]
    assert ids[0] == vocab.id_of("[CLS]") and ids[8] == vocab.id_of("[SEP]")
    assert encoded["token_type_ids"][0].tolist() == [0] * 9 + [1] * 8
    assert tokens is None or tokens
    questions = make_span_questions(20, seed=0)
    vocab = char_vocab([q.sentence + q.question for q in questions])
    enc = encode_questions(questions, vocab)
    for k, q in enumerate(questions):
        piece = enc["input_ids"][k, enc["start"][k] : enc["end"][k] + 1]
        assert piece.tolist() == [vocab.id_of(c) for c in q.answer.replace(" ", "")]
        assert bool(enc["allowed"][k, enc["start"][k]]) and bool(enc["allowed"][k, enc["end"][k]])


def test_downstream_functions_reject_bad_input():
    with pytest.raises(ValueError, match="count must be an int >= 1"):
        make_tense_pairs(0)
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        make_span_questions(3, seed=-1)
    with pytest.raises(ValueError, match="no transitive verb with all three tenses"):
        make_tense_pairs(3, alphabet=set("가"))
    with pytest.raises(TypeError, match="sequence of SentencePair"):
        encode_pairs(["개가 소를 봅니다"], char_vocab(["개"]))
    with pytest.raises(ValueError, match="reads at most 5"):
        encode_pairs(make_tense_pairs(2), char_vocab(["개"]), max_len=5)
    with pytest.raises(ValueError, match="task must be one of"):
        finetune_downstream("nli", "pretrained")
    with pytest.raises(ValueError, match="start must be one of"):
        finetune_downstream("pairs", "scratch")
    with pytest.raises(ValueError, match="seeds must be distinct"):
        DownstreamConfig(seeds=(0, 0))
    with pytest.raises(TypeError, match="sentence must be a str"):
        words(3)


# --- the fine-tuning loop itself, tiny and uncached --------------------------------------------


@pytest.fixture
def tiny_recipe(monkeypatch):
    """No cache, a tiny recipe, and a random "pretrained" encoder in place of the 30 s pretraining."""
    from types import SimpleNamespace

    from course_utils.bert import BertForMaskedLM
    from course_utils.experiments import ch12_downstream
    from course_utils.experiments.ch12_pretraining import (
        korean_bert_config,
        korean_char_vocab,
        korean_pretraining_text,
        korean_task_splits,
    )

    monkeypatch.setenv("COURSE_CACHE", "off")
    config = korean_bert_config("small")
    vocab = korean_char_vocab(korean_pretraining_text(korean_task_splits(), True).lines)
    torch.manual_seed(0)
    fake = SimpleNamespace(model=BertForMaskedLM(config.bert_config(len(vocab), 0.0)))
    monkeypatch.setattr(ch12_downstream, "pretrain_korean_bert", lambda *a, **k: fake)
    recipe = DownstreamConfig(
        train_examples=24, test_examples=12, epochs=2, batch_size=8, seeds=(0,)
    )
    return config, recipe, fake


def test_fine_tuning_updates_every_weight_and_the_frozen_start_only_its_head(tiny_recipe):
    config, recipe, fake = tiny_recipe
    full = finetune_downstream("pairs", "random", 0, config, recipe)
    encoder = sum(p.numel() for p in fake.model.bert.parameters())
    assert full.trained > encoder  # the encoder, the pooler and the classifier
    assert len(full.losses) == 2 and full.tested == 12 and 0 <= full.predicted_ones <= 1
    frozen = finetune_downstream("pairs", "frozen", 0, config, recipe)
    d = config.hidden_size
    assert frozen.trained == (d * d + d) + (2 * d + 2)  # the pooler and the classifier only
    spans = finetune_downstream("spans", "frozen", 0, config, recipe)
    assert spans.trained == 2 * config.hidden_size + 2  # the start and end vectors S, E and biases
    assert spans.predicted_ones is None and 0 <= spans.accuracy <= spans.f1 <= 1
    again = finetune_downstream("spans", "frozen", 0, config, recipe)
    assert (again.accuracy, again.f1, again.losses) == (spans.accuracy, spans.f1, spans.losses)


def test_a_run_does_not_depend_on_what_its_process_loaded_before(tiny_recipe, monkeypatch):
    """Loading the pretrained model the first time in a worker draws random numbers (its layers
    are built, then overwritten); a run must give the same numbers whichever job its worker
    took first (the chapter's three seeds once differed between the build and the tests)."""
    from course_utils.experiments import ch12_downstream

    config, recipe, fake = tiny_recipe
    loaded = finetune_downstream("pairs", "pretrained", 0, config, recipe)  # nothing drawn

    def first_load(*args, **kwargs):
        torch.randn(1000)  # what building BertForMaskedLM draws before its weights are loaded
        return fake

    monkeypatch.setattr(ch12_downstream, "pretrain_korean_bert", first_load)
    fresh = finetune_downstream("pairs", "pretrained", 0, config, recipe)
    assert fresh.losses == loaded.losses and fresh.accuracy == loaded.accuracy
