"""9장's encoder-decoder: batches, the masked loss, teacher forcing and the three decoders."""

from __future__ import annotations

import itertools
import math

import pytest
import sacrebleu
import torch
import torch.nn.functional as F

from course_utils.attention import (
    BahdanauSeq2Seq,
    LuongSeq2Seq,
)
from course_utils.seq2seq import (
    EOS,
    PAD,
    SOS,
    UNK,
    Encoder,
    Seq2Seq,
    TrainConfig,
    beam_search,
    encode_pair,
    greedy_decode,
    make_batch,
    make_batches,
    normalized_score,
    sample_decode,
    score_translations,
    sequence_loss,
    train_seq2seq,
    translate,
)
from course_utils.vocab import SEQ_SPECIALS, Vocab

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _random_examples(
    n: int, vocab: int, seed: int, max_len: int = 7
) -> list[tuple[list[int], list[int]]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        s = int(torch.randint(1, max_len + 1, (1,), generator=g))
        t = int(torch.randint(1, max_len + 1, (1,), generator=g))
        out.append(
            (
                torch.randint(4, vocab, (s,), generator=g).tolist(),
                [*torch.randint(4, vocab, (t - 1,), generator=g).tolist(), EOS],
            )
        )
    return out


MODELS = {
    "seq2seq": lambda V: Seq2Seq(V, V, 8, 12),
    "bahdanau": lambda V: BahdanauSeq2Seq(V, V, 8, 12, 10),
    "luong": lambda V: LuongSeq2Seq(V, V, 8, 12, score="general"),
    "luong-dot-no-feeding": lambda V: LuongSeq2Seq(V, V, 8, 12, score="dot", input_feeding=False),
}


def _model(name: str, V: int = 11, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return MODELS[name](V).eval()


# --- batches and the loss -------------------------------------------------------------------------


def test_make_batch_pads_and_shifts_the_target_right():
    batch = make_batch([([5, 6, 7], [8, 9, EOS]), ([5], [EOS])])
    assert batch.source.tolist() == [[5, 6, 7], [5, PAD, PAD]]
    assert batch.source_lengths.tolist() == [3, 1]
    assert batch.target_out.tolist() == [[8, 9, EOS], [EOS, PAD, PAD]]
    assert batch.target_in.tolist() == [[SOS, 8, 9], [SOS, PAD, PAD]]


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ([([], [EOS])], "empty source"),
        ([([5], [6])], "must end with <eos>"),
        ([([5], [])], "must end with <eos>"),
        ([([5, PAD], [EOS])], "contains <pad>"),
        ([([5], [EOS, 6, EOS])], "only as its final <eos>"),
        ([([5], [SOS, 6, EOS])], "only as its final <eos>"),
        ([], "non-empty list"),
    ],
)
def test_make_batch_rejects_what_the_decoder_cannot_learn_from(examples, message):
    with pytest.raises(ValueError, match=message):
        make_batch(examples)


def test_make_batch_rejects_non_int_ids():
    with pytest.raises(TypeError, match="int token ids"):
        make_batch([(["a"], [EOS])])
    with pytest.raises(TypeError, match="pair"):
        make_batch([([5],)])


def test_make_batches_keeps_every_example_once():
    examples = _random_examples(103, 20, seed=1)
    batches = make_batches(examples, 10, shuffle=True, seed=3)
    seen = []
    for batch in batches:
        for b in range(batch.source.shape[0]):
            length = int(batch.source_lengths[b])
            target = batch.target_out[b][batch.target_out[b] != PAD].tolist()
            seen.append((batch.source[b, :length].tolist(), target))
    assert sorted(seen) == sorted(examples)
    assert [len(b.source) for b in make_batches(examples, 10)] == [10] * 10 + [3]


def test_sequence_loss_is_the_mean_over_real_tokens_only():
    torch.manual_seed(0)
    logits = torch.randn(3, 4, 7)
    target = torch.tensor([[4, 5, EOS, PAD], [EOS, PAD, PAD, PAD], [4, 4, 4, EOS]])
    real = target != PAD
    log_probs = torch.log_softmax(logits, -1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
    expected = -(log_probs * real).sum() / real.sum()
    assert torch.allclose(sequence_loss(logits, target), expected, atol=1e-6)
    with pytest.raises(ValueError, match=r"target_out must be a \(B, T\) int64 tensor with B = 3"):
        sequence_loss(logits, target[:, :3])


_LOGITS, _TARGET = torch.randn(2, 3, 7), torch.tensor([[4, 5, EOS], [4, EOS, PAD]])


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: sequence_loss(_LOGITS.tolist(), _TARGET),
            TypeError,
            r"logits must be a \(B, T, V\)",
        ),
        (
            lambda: sequence_loss(_LOGITS.long(), _TARGET),
            TypeError,
            r"logits must be a \(B, T, V\) float tensor, got torch\.int64",
        ),
        (lambda: sequence_loss(_LOGITS[0], _TARGET), ValueError, r"logits must be a \(B, T, V\)"),
        (
            lambda: sequence_loss(_LOGITS, _TARGET.tolist()),
            TypeError,
            r"target_out must be a \(B, T\) int64 tensor with B = 2, T = 3, got list",
        ),
        (
            lambda: sequence_loss(_LOGITS, _TARGET.float()),
            TypeError,
            r"target_out must be .* got torch\.float32",
        ),
        (
            lambda: sequence_loss(_LOGITS, torch.tensor([[4, 9, EOS], [4, EOS, PAD]])),
            ValueError,
            r"target_out holds token id 9, outside the vocabulary 0\.\.6",
        ),
        (
            lambda: sequence_loss(_LOGITS, torch.tensor([[4, -5, EOS], [4, EOS, PAD]])),
            ValueError,
            "target_out holds token id -5",
        ),
    ],
)
def test_sequence_loss_names_logits_and_targets_of_the_wrong_kind(call, error, message):
    with pytest.raises(error, match=message):
        call()


SPECIALS = r"\(the vocabulary starts with <pad>, <unk>, <sos>, <eos>\), got"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Encoder(0, 4, 6), f"vocab_size must be an int >= 4 {SPECIALS} 0"),
        (lambda: Encoder(3, 4, 6), f"vocab_size must be an int >= 4 {SPECIALS} 3"),
        (lambda: Seq2Seq(0, 10, 4, 6), f"source_vocab_size must be an int >= 4 {SPECIALS} 0"),
        (lambda: Seq2Seq(10, 0, 4, 6), f"target_vocab_size must be an int >= 4 {SPECIALS} 0"),
        (lambda: Seq2Seq(10, 2.5, 4, 6), "target_vocab_size must be an int >= 4"),
    ],
)
def test_a_vocabulary_must_hold_the_four_specials(make, message):
    assert (PAD, UNK, SOS, EOS) == (0, 1, 2, 3) and len(SEQ_SPECIALS) == 4
    with pytest.raises(ValueError, match=message):
        make()
    Encoder(4, 4, 6)  # the specials alone: the least a vocabulary can be


def test_encode_pair_appends_eos_and_needs_seq_specials():
    vocab = Vocab(["a", "b"])
    assert encode_pair(["a"], ["b", "a"], vocab, vocab) == (
        [vocab["a"]],
        [vocab["b"], vocab["a"], EOS],
    )
    with pytest.raises(ValueError, match="must start with"):
        encode_pair(["a"], ["a"], Vocab(["a"], specials=("[PAD]", "[UNK]")), vocab)


# --- the encoder and teacher forcing --------------------------------------------------------------


def test_encoder_ignores_padding_and_its_context_is_the_last_real_state():
    model = _model("seq2seq")
    batch = make_batch([([4, 5, 6, 7], [EOS]), ([8, 9], [EOS])])
    memory = model.encode(batch.source, batch.source_lengths)
    alone = model.encode(torch.tensor([[8, 9]]), torch.tensor([2]))
    assert torch.allclose(memory.outputs[1, :2], alone.outputs[0], atol=1e-6)
    assert torch.all(memory.outputs[1, 2:] == 0)
    assert torch.allclose(memory.context[1], alone.outputs[0, 1], atol=1e-6)
    assert memory.padding_mask.tolist() == [[False] * 4, [False, False, True, True]]


def test_bidirectional_context_is_forward_last_and_backward_first():
    model = _model("bahdanau")
    batch = make_batch([([4, 5, 6, 7], [EOS]), ([8, 9], [EOS])])
    memory = model.encode(batch.source, batch.source_lengths)
    half = memory.outputs.shape[-1] // 2
    for b, length in enumerate(batch.source_lengths.tolist()):
        assert torch.allclose(memory.context[b, :half], memory.outputs[b, length - 1, :half])
        assert torch.allclose(memory.context[b, half:], memory.outputs[b, 0, half:])


@pytest.mark.parametrize("name", list(MODELS))
def test_fast_teacher_forcing_equals_the_step_by_step_decoder(name):
    model = _model(name)
    batch = make_batch(_random_examples(6, 11, seed=2))
    memory = model.encode(batch.source, batch.source_lengths)
    fast = model.teacher_forced(batch.target_in, memory)
    slow = model.run_steps(batch.target_in, memory, 1.0, None)
    assert fast.shape == (6, batch.target_in.shape[1], 11)
    assert torch.allclose(fast, slow, atol=1e-5)


def test_teacher_forcing_ratio_zero_reads_the_models_own_greedy_guesses():
    model = _model("luong")
    source = torch.tensor([[4, 5, 6]])
    decoded = greedy_decode(model, source, torch.tensor([3]), max_len=5)
    guesses = decoded.tokens[0]
    target_in = torch.tensor([[SOS, 4, 4, 4, 4]])  # the true tokens must be ignored
    logits = model(source, torch.tensor([3]), target_in, teacher_forcing_ratio=0.0)
    free = torch.log_softmax(logits[0], -1)
    free[:, [PAD, SOS]] = -math.inf
    steps = len(guesses) + decoded.finished[0]
    assert free.argmax(-1)[: len(guesses)].tolist() == guesses[:steps]


def test_forward_checks_ratio_shapes_and_vocabulary():
    model = _model("seq2seq")
    batch = make_batch([([4, 5], [6, EOS])])
    with pytest.raises(ValueError, match="teacher_forcing_ratio"):
        model(batch.source, batch.source_lengths, batch.target_in, 1.5)
    with pytest.raises(ValueError, match=r"target_in must be a \(B, T\) int64 tensor with B = 1"):
        model(batch.source, batch.source_lengths, batch.target_in[0])
    with pytest.raises(
        TypeError, match=r"target_in must be a \(B, T\) int64 .* got torch\.float32"
    ):
        model(batch.source, batch.source_lengths, batch.target_in.float())
    with pytest.raises(TypeError, match="source_lengths must be an integer tensor"):
        model(batch.source, torch.tensor([1.5]), batch.target_in)
    with pytest.raises(TypeError, match="source_lengths must be an integer tensor"):
        model.encode(batch.source, torch.tensor([2.0]))  # refused, not read as 2
    with pytest.raises(
        ValueError, match=r"tokens holds token id 99, outside the vocabulary 0\.\.10"
    ):
        memory = model.encode(batch.source, batch.source_lengths)
        model.step(torch.tensor([99]), model.init_state(memory), memory)
    with pytest.raises(ValueError, match=r"outside the vocabulary 0\.\.10"):
        model(torch.tensor([[4, 11]]), torch.tensor([2]), batch.target_in)
    with pytest.raises(ValueError, match="target_in holds token id 12"):
        model(batch.source, batch.source_lengths, torch.tensor([[SOS, 12]]))
    with pytest.raises(ValueError, match="at least one token"):
        model.encode(torch.tensor([[4, 5]]), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"\(B,\) tensor with B = 1"):
        model.encode(torch.tensor([[4, 5]]), torch.tensor([2, 2]))
    with pytest.raises(ValueError, match=r"\(B, S\) tensor of int64"):
        model.encode(torch.tensor([4.0, 5.0]), torch.tensor([2]))


# --- decoding --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_beam_of_one_is_greedy(name):
    model = _model(name, seed=3)
    batch = make_batch(_random_examples(8, 11, seed=4))
    greedy = greedy_decode(model, batch.source, batch.source_lengths, max_len=9)
    beam = beam_search(model, batch.source, batch.source_lengths, beam_size=1, max_len=9)
    assert beam.tokens == greedy.tokens
    assert beam.finished == greedy.finished
    assert beam.log_probs == pytest.approx(greedy.log_probs, abs=1e-5)


def _sequence_log_prob(model, source, tokens):
    """log P(tokens | source), read by teacher forcing, with <pad> and <sos> excluded."""
    lengths = torch.tensor([source.shape[1]])
    memory = model.encode(source, lengths)
    state = model.init_state(memory)
    previous = torch.tensor([SOS])
    total = 0.0
    for token in tokens:
        logits, state, _ = model.step(previous, state, memory)
        logits = logits.clone()
        logits[:, [PAD, SOS]] = -math.inf
        total += float(torch.log_softmax(logits, -1)[0, token])
        previous = torch.tensor([token])
    return total


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
@pytest.mark.parametrize("name", ["seq2seq", "bahdanau"])
def test_a_beam_as_large_as_the_search_space_finds_the_brute_force_best(name, length_penalty):
    V, max_len = 6, 3  # outputs: <unk>, <eos>, 4, 5
    allowed = [1, EOS, 4, 5]
    with torch.no_grad():
        for seed in range(3):
            model = _model(name, V=V, seed=seed)
            for p in model.parameters():
                p.mul_(3)  # sharper distributions, so lengths and paths really differ
            source = torch.tensor([[4, 5, 4]])
            candidates = []
            for length in range(1, max_len + 1):
                for body in itertools.product([1, 4, 5], repeat=length - 1):
                    candidates.append([*body, EOS])
            candidates += [list(c) for c in itertools.product([1, 4, 5], repeat=max_len)]
            scored = [
                (normalized_score(_sequence_log_prob(model, source, c), len(c), length_penalty), c)
                for c in candidates
            ]
            best_score, best = max(scored)
            beam = beam_search(
                model,
                source,
                torch.tensor([3]),
                beam_size=len(allowed) ** max_len,
                max_len=max_len,
                length_penalty=length_penalty,
            )
            expected = best[:-1] if best[-1] == EOS else best
            assert beam.tokens[0] == expected
            assert beam.finished[0] == (best[-1] == EOS)
            length = len(beam.tokens[0]) + beam.finished[0]
            assert normalized_score(beam.log_probs[0], length, length_penalty) == pytest.approx(
                best_score, abs=1e-5
            )


class _Constant(Seq2Seq):
    """A decoder whose every step prefers one token."""

    def __init__(self, favourite: int) -> None:
        super().__init__(8, 8, 4, 4)
        self.favourite = favourite

    def step(self, tokens, state, memory):
        logits = torch.zeros(tokens.shape[0], 8)
        logits[:, self.favourite] = 5.0
        return logits, state, None


@pytest.mark.parametrize("decode", ["greedy", "beam", "sample"])
def test_decoding_stops_at_eos_and_at_the_max_len_guard(decode):
    source, lengths = torch.tensor([[4, 5], [6, PAD]]), torch.tensor([2, 1])
    run = {
        "greedy": lambda m: greedy_decode(m, source, lengths, max_len=7),
        "beam": lambda m: beam_search(m, source, lengths, beam_size=3, max_len=7),
        "sample": lambda m: sample_decode(m, source, lengths, max_len=7, temperature=1e-3),
    }[decode]
    stops = run(_Constant(EOS))
    assert stops.tokens == [[], []] and stops.finished == [True, True]
    endless = run(_Constant(6))
    assert endless.tokens == [[6] * 7, [6] * 7] and endless.finished == [False, False]


def test_sampling_is_seeded_and_follows_the_softmax():
    model = _model("seq2seq", seed=5)
    source = torch.tensor([[4, 5, 6]] * 4000)
    lengths = torch.full((4000,), 3)
    first = [
        sample_decode(
            model, source, lengths, max_len=1, generator=torch.Generator().manual_seed(s)
        ).tokens
        for s in (0, 0)
    ]
    assert first[0] == first[1]
    counts = torch.bincount(
        torch.tensor([t[0] if t else EOS for t in first[0]]), minlength=11
    ).float()
    memory = model.encode(source[:1], lengths[:1])
    logits, _, _ = model.step(torch.tensor([SOS]), model.init_state(memory), memory)
    logits = logits.detach().clone()
    logits[:, [PAD, SOS]] = -math.inf
    p = torch.softmax(logits[0], -1)
    se = torch.sqrt(p * (1 - p) / 4000)
    assert torch.all((counts / 4000 - p).abs() <= 5 * se + 1e-9)
    cold = sample_decode(model, source[:3], lengths[:3], max_len=6, temperature=1e-4)
    assert cold.tokens == greedy_decode(model, source[:3], lengths[:3], max_len=6).tokens


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, s, n: greedy_decode(m, s, n, max_len=0), "max_len"),
        (lambda m, s, n: beam_search(m, s, n, beam_size=0), "beam_size"),
        (lambda m, s, n: beam_search(m, s, n, length_penalty=-1), "length_penalty"),
        (lambda m, s, n: sample_decode(m, s, n, temperature=0), "temperature"),
        (lambda m, s, n: greedy_decode(m, s + 20, n), "outside the vocabulary"),
    ],
)
def test_decoders_reject_bad_arguments(call, message):
    with pytest.raises(ValueError, match=message):
        call(_model("seq2seq"), torch.tensor([[4, 5]]), torch.tensor([2]))


def test_normalized_score_divides_by_length_to_the_alpha():
    assert normalized_score(-6.0, 3, 0.0) == -6.0
    assert normalized_score(-6.0, 3, 1.0) == -2.0
    assert normalized_score(-8.0, 4, 0.5) == -4.0
    with pytest.raises(ValueError, match="length must be >= 1"):
        normalized_score(-1.0, 0, 1.0)


# --- training and translating ----------------------------------------------------------------------


def test_training_learns_to_copy_and_translate_returns_tokens():
    vocab = Vocab([str(i) for i in range(6)])
    pairs = [([str(a), str(b)], [str(b), str(a)]) for a in range(6) for b in range(6)]
    examples = [encode_pair(s, t, vocab, vocab) for s, t in pairs]
    model = LuongSeq2Seq(len(vocab), len(vocab), 16, 32)
    history = train_seq2seq(
        model, examples * 8, TrainConfig(epochs=12, batch_size=32, seed=0), "cpu", False
    )
    assert history.train_loss[-1] < 0.2 * history.train_loss[0]
    out = translate(model, [s for s, _ in pairs], vocab, vocab)
    beam = translate(model, [s for s, _ in pairs], vocab, vocab, method="beam", beam_size=3)
    reference = [t for _, t in pairs]
    assert score_translations(out, reference).exact_match > 0.9
    assert score_translations(beam, reference).exact_match > 0.9
    with pytest.raises(ValueError, match="method"):
        translate(model, [["1"]], vocab, vocab, method="nucleus")


def test_translation_scores_agree_with_sacrebleu():
    hyps = [["나는", "학교", "에", "갑니다"], ["고양이", "가", "잡니다", "."]]
    refs = [["나는", "학교", "에", "갑니다", "."], ["고양이", "가", "잡니다", "."]]
    scores = score_translations(hyps, refs)
    joined = [" ".join(h) for h in hyps], [[" ".join(r) for r in refs]]
    assert scores.bleu == pytest.approx(
        sacrebleu.corpus_bleu(*joined, tokenize="none", force=True).score
    )
    assert scores.chrf == pytest.approx(sacrebleu.corpus_chrf(*joined).score)
    assert scores.exact_match == 0.5 and scores.sentences == 2


def test_loss_ignores_pads_like_torch():
    torch.manual_seed(1)
    logits = torch.randn(2, 3, 5)
    target = torch.tensor([[4, EOS, PAD], [EOS, PAD, PAD]])
    expected = F.cross_entropy(logits.reshape(-1, 5), target.reshape(-1), ignore_index=PAD)
    assert torch.equal(sequence_loss(logits, target), expected)


def test_train_model_keeps_the_trained_weights_and_reuses_them_only_for_the_same_recipe(
    tmp_path, monkeypatch
):
    from course_utils.experiments.ch09_seq2seq import (
        ParallelData,
        train_model,
    )
    from course_utils.runs import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    vocab = Vocab([str(i) for i in range(5)])
    pairs = [([str(a), str(b)], [str(b)]) for a in range(5) for b in range(5)]
    data = ParallelData("toy", pairs, pairs[:3], pairs[:3], vocab, vocab)
    training = TrainConfig(epochs=2, batch_size=8, seed=0)

    def fresh():
        torch.manual_seed(0)
        return Seq2Seq(len(vocab), len(vocab), 4, 6)

    first, again = fresh(), fresh()
    trained = train_model(first, data, training, show_progress=False)
    assert len(list(tmp_path.glob("*.pt"))) == 1
    loaded = train_model(again, data, training, show_progress=False)
    assert loaded == trained
    for a, b in zip(first.state_dict().values(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    train_model(fresh(), data, TrainConfig(epochs=3, batch_size=8, seed=0), show_progress=False)
    assert len(list(tmp_path.glob("*.pt"))) == 2  # another budget is another recipe
    monkeypatch.setenv(CACHE_ENV, "off")
    train_model(fresh(), data, training, show_progress=False)
    assert len(list(tmp_path.glob("*.pt"))) == 2


def test_train_model_still_trains_where_the_cache_cannot_be_written(tmp_path, monkeypatch):
    from course_utils.experiments.ch09_seq2seq import (
        ParallelData,
        train_model,
    )
    from course_utils.runs import CACHE_ENV

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    vocab = Vocab(["a", "b"])
    pairs = [(["a"], ["b"]), (["b"], ["a"])]
    data = ParallelData("toy", pairs, pairs, pairs, vocab, vocab)
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match="could not keep the result"):
        history = train_model(
            Seq2Seq(len(vocab), len(vocab), 4, 6), data, TrainConfig(epochs=1, batch_size=2), False
        )
    assert len(history.train_loss) == 1


@pytest.mark.parametrize("name", sorted(MODELS))
def test_source_lengths_that_disagree_with_the_pads_are_refused(name):
    from course_utils.seq2seq import PAD

    model = _model(name)
    source = torch.tensor([[5, 6, 7], [5, 6, PAD]])
    model.encode(source, torch.tensor([3, 2]))  # lengths and pads agree
    for lengths, bad in [
        ([2, 2], source),  # a real token after the length: attended to, never encoded
        ([3, 3], source),  # a <pad> counted as a token
        ([3, 3], torch.tensor([[5, PAD, 7], [5, 6, 7]])),  # a <pad> inside a source
    ]:
        with pytest.raises(ValueError, match="source_lengths must agree with the <pad> positions"):
            model.encode(bad, torch.tensor(lengths))


def test_the_transformer_refuses_lengths_that_disagree_with_the_pads():
    from course_utils.seq2seq import PAD
    from course_utils.transformer import TransformerSeq2Seq, TransformerSize

    torch.manual_seed(0)
    model = TransformerSeq2Seq(11, 11, TransformerSize(8, 2, 1, 1, 16, 0.0)).eval()
    source = torch.tensor([[5, 6, 7], [5, 6, PAD]])
    model.encode(source, torch.tensor([3, 2]))
    with pytest.raises(ValueError, match="source_lengths must agree"):
        model.encode(source, torch.tensor([3, 3]))


def test_a_target_of_only_pads_is_an_error_not_nan():
    from course_utils.seq2seq import PAD, sequence_loss

    with pytest.raises(ValueError, match="every target position is <pad>"):
        sequence_loss(torch.randn(2, 3, 7), torch.full((2, 3), PAD))
