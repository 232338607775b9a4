"""The from-scratch RNN, LSTM and GRU layers (6장, 8장) against torch.nn with copied weights."""

import functools
import platform

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.lstm import (
    GRU,
    LSTM,
    AutogradLSTM,
    LSTMSequence,
    SequenceRegressor,
    recurrent_parameter_count,
)
from course_utils.rnn import (
    RNN,
    RNNLanguageModel,
    generate,
    lm_loss,
    perplexity,
)

PAIRS = {"rnn": (RNN, torch.nn.RNN), "lstm": (LSTM, torch.nn.LSTM), "gru": (GRU, torch.nn.GRU)}


def _copied(mode, **kwargs):
    ours_cls, torch_cls = PAIRS[mode]
    reference = torch_cls(**kwargs)
    ours = ours_cls(**kwargs)
    ours.load_state_dict(reference.state_dict())  # same names, same shapes
    return ours, reference


def _states(state):
    return list(state) if isinstance(state, tuple) else [state]


@pytest.mark.parametrize("mode", sorted(PAIRS))
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_layer_matches_torch_with_copied_weights(mode, num_layers, bidirectional, batch_first):
    torch.manual_seed(0)
    kwargs = dict(input_size=5, hidden_size=7, num_layers=num_layers,
                  bidirectional=bidirectional, batch_first=batch_first)  # fmt: skip
    ours, reference = _copied(mode, **kwargs)
    x = torch.randn(3, 6, 5, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    directions = 2 if bidirectional else 1
    state = tuple(torch.randn(num_layers * directions, 3 if batch_first else 6, 7, requires_grad=True)
                  for _ in range(2 if mode == "lstm" else 1))  # fmt: skip
    state_ref = tuple(s.detach().clone().requires_grad_(True) for s in state)
    hx = state if mode == "lstm" else state[0]
    hx_ref = state_ref if mode == "lstm" else state_ref[0]
    out, final = ours(x, hx)
    out_ref, final_ref = reference(x_ref, hx_ref)
    torch.testing.assert_close(out, out_ref, rtol=0, atol=1e-5)
    for a, b in zip(_states(final), _states(final_ref), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    # A loss that uses the outputs and every final state, so all paths carry gradient.
    weights = torch.randn_like(out)
    loss = (out * weights).sum() + sum(s.pow(2).sum() for s in _states(final))
    loss_ref = (out_ref * weights).sum() + sum(s.pow(2).sum() for s in _states(final_ref))
    loss.backward()
    loss_ref.backward()
    for (name, p), (_, q) in zip(
        ours.named_parameters(), reference.named_parameters(), strict=True
    ):
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=1e-5, msg=name)
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=0, atol=1e-5)
    for a, b in zip(state, state_ref, strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", sorted(PAIRS))
def test_layer_without_bias_matches_torch(mode):
    torch.manual_seed(1)
    ours, reference = _copied(mode, input_size=3, hidden_size=4, bias=False)
    x = torch.randn(5, 2, 3)
    torch.testing.assert_close(ours(x)[0], reference(x)[0], rtol=0, atol=1e-5)


def test_relu_rnn_matches_torch():
    torch.manual_seed(2)
    reference = torch.nn.RNN(3, 4, nonlinearity="relu")
    ours = RNN(3, 4, nonlinearity="relu")
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(8, 2, 3)
    torch.testing.assert_close(ours(x)[0], reference(x)[0], rtol=0, atol=1e-5)


def test_hand_written_lstm_backward_passes_gradcheck_in_float64():
    torch.manual_seed(3)
    steps, batch, inputs_size, hidden = 5, 2, 4, 3

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    inputs = (
        randn(steps, batch, inputs_size),  # x
        randn(batch, hidden),  # h_0
        randn(batch, hidden),  # c_0
        randn(4 * hidden, inputs_size),  # W_x (as weight_ih)
        randn(4 * hidden, hidden),  # W_h
        randn(4 * hidden),  # b_x
        randn(4 * hidden),  # b_h
    )
    assert torch.autograd.gradcheck(LSTMSequence.apply, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)
    without_bias = (*inputs[:5], None, None)
    assert torch.autograd.gradcheck(
        LSTMSequence.apply, without_bias, eps=1e-6, atol=1e-7, rtol=1e-6
    )


def test_lstm_sequence_refuses_one_bias_without_the_other():
    x, h, w_ih, w_hh = (
        torch.randn(3, 2, 4),
        torch.zeros(2, 5),
        torch.randn(20, 4),
        torch.randn(20, 5),
    )
    with pytest.raises(
        ValueError, match="bias_ih and bias_hh must both be tensors or both be None"
    ):
        LSTMSequence.apply(x, h, h, w_ih, w_hh, torch.zeros(20), None)


@given(
    mode=st.sampled_from(sorted(PAIRS)),
    input_size=st.integers(1, 40),
    hidden_size=st.integers(1, 40),
    num_layers=st.integers(1, 3),
    bidirectional=st.booleans(),
    bias=st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_parameter_count_formula_matches_torch(mode, input_size, hidden_size, num_layers, bidirectional, bias):  # fmt: skip
    reference = PAIRS[mode][1](input_size, hidden_size, num_layers=num_layers,
                               bidirectional=bidirectional, bias=bias)  # fmt: skip
    expected = sum(p.numel() for p in reference.parameters())
    assert recurrent_parameter_count(mode, input_size, hidden_size, num_layers, bidirectional, bias) == expected  # fmt: skip


def test_wrong_shapes_name_the_expected_shape():
    layer = LSTM(4, 6, num_layers=2, batch_first=True)
    with pytest.raises(ValueError, match=r"\(batch, seq_len, input_size\) with input_size=4.*batch dimension missing"):  # fmt: skip
        layer(torch.randn(7, 4))
    with pytest.raises(ValueError, match=r"input_size=4, got \(2, 7, 5\)"):
        layer(torch.randn(2, 7, 5))
    with pytest.raises(ValueError, match=r"\(h_0, c_0\)"):
        layer(torch.randn(2, 7, 4), torch.zeros(2, 2, 6))
    with pytest.raises(ValueError, match=r"\(num_layers \* num_directions, batch, hidden_size\) = \(2, 2, 6\), got \(2, 2, 5\)"):  # fmt: skip
        layer(torch.randn(2, 7, 4), (torch.zeros(2, 2, 5), torch.zeros(2, 2, 5)))
    rnn = RNN(4, 6)
    with pytest.raises(ValueError, match=r"\(seq_len, batch, input_size\)"):
        rnn(torch.randn(7, 4))
    with pytest.raises(ValueError, match=r"= \(1, 3, 6\), got \(3, 6\)"):
        rnn(torch.randn(7, 3, 4), torch.zeros(3, 6))
    with pytest.raises(ValueError, match="at least one time step"):
        rnn(torch.randn(0, 3, 4))
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        rnn([[1.0]])
    with pytest.raises(ValueError, match="hidden_size must be an int >= 1"):
        GRU(3, 0)
    with pytest.raises(ValueError, match="nonlinearity"):
        RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="mode must be one of"):
        recurrent_parameter_count("transformer", 3, 4)
    with pytest.raises(ValueError, match="cell must be one of"):
        SequenceRegressor("cnn", 2, 4)


def test_language_model_helpers():
    torch.manual_seed(0)
    model = RNNLanguageModel(11, RNN(6, 8, batch_first=True), dropout=0.1)
    ids = torch.randint(0, 11, (40,))
    x, y = ids[:-1].view(3, 13), ids[1:].view(3, 13)
    loss = lm_loss(model, (x, y))
    assert loss.shape == () and loss.requires_grad
    ppl = perplexity(model, ids, chunk=7)
    # Reading in chunks with the state carried over equals reading in one piece.
    assert ppl == pytest.approx(perplexity(model, ids, chunk=1000), rel=1e-5)
    assert 1 < ppl < 100
    first = generate(model, [1, 2], 15, temperature=0.7, seed=3)
    assert first == generate(model, [1, 2], 15, temperature=0.7, seed=3)
    assert len(first) == 15 and all(0 <= t < 11 for t in first)
    with pytest.raises(ValueError, match="temperature"):
        generate(model, [1], 3, temperature=0)
    with pytest.raises(ValueError, match="prefix"):
        generate(model, [], 3)
    with pytest.raises(ValueError, match=r"\(batch, seq_len\)"):
        model(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="1-D tensor"):
        perplexity(model, torch.tensor([1]))
    with pytest.raises(ValueError, match="batch_first=True"):
        RNNLanguageModel(5, RNN(3, 4))
    with pytest.raises(ValueError, match="dropout"):
        RNNLanguageModel(5, RNN(3, 4, batch_first=True), dropout=1.0)


def test_temperature_sharpens_and_flattens_the_distribution():
    torch.manual_seed(0)
    model = RNNLanguageModel(30, RNN(8, 16, batch_first=True))
    low = generate(model, [0], 300, temperature=0.05, seed=0)
    high = generate(model, [0], 300, temperature=5.0, seed=0)
    assert len(set(low)) < len(set(high))


def test_adding_problem_runner_is_seeded_and_validates_steps():
    from course_utils.experiments.ch08_lstm_gru import run_adding_problem

    first = run_adding_problem("gru", 6, steps=20, device="cpu")
    second = run_adding_problem("gru", 6, steps=20, device="cpu")
    assert first.curve == second.curve and len(first.curve) == 10
    assert first.parameters == recurrent_parameter_count("gru", 2, 32) + 33
    ours = run_adding_problem("lstm", 6, steps=20, builtin=False, device="cpu")
    assert isinstance(ours.model.recurrent, LSTM)
    with pytest.raises(ValueError, match="steps must be"):
        run_adding_problem("rnn", 6, steps=5)


@pytest.mark.usefixtures("one_torch_thread")
def test_chapter_runs_are_trained_once_and_loaded_the_same(tmp_path, monkeypatch):
    """8장's trainings go through the result cache: the second call loads what the first
    trained (weights, curve, scores, the model's mode) without training, so the chapter and
    its claims test share one run; 13장 still finds the language model's summary. One torch
    thread, as the chapter's workers train."""
    import dataclasses

    from course_utils.datasets import korean_char_split
    from course_utils.device import DEVICE_ENV
    from course_utils.experiments import ch08_lstm_gru
    from course_utils.experiments.ch06_rnn import char_lm_summary

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    monkeypatch.setenv(DEVICE_ENV, "cpu")
    config = dataclasses.replace(ch08_lstm_gru.char_lm_comparison_config("small"), epochs=1)
    trained = ch08_lstm_gru.adding_problem_run("rnn", 8)
    trained_lm = ch08_lstm_gru.language_model_run("rnn", config).runs["rnn"]
    fresh = ch08_lstm_gru.run_adding_problem("rnn", 8)
    fresh_lm = ch08_lstm_gru.run_char_language_models(
        *korean_char_split(), ("rnn",), config, show_progress=False
    ).runs["rnn"]

    def no_training(*args, **kwargs):
        raise AssertionError("a cached run was trained again")

    monkeypatch.setattr(ch08_lstm_gru, "run_adding_problem", no_training)
    monkeypatch.setattr(ch08_lstm_gru, "run_char_language_models", no_training)
    loaded = ch08_lstm_gru.adding_problem_run("rnn", 8)
    loaded_lm = ch08_lstm_gru.language_model_run("rnn", config).runs["rnn"]
    kinds = sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.glob("*.pt"))
    assert kinds == ["adding-problem", "char-lm-comparison", "char-lm-summary"]
    assert char_lm_summary(*korean_char_split(), config, "RNN") is not None  # what 13장 reads

    x = torch.randn(5, 8, 2)
    for run in (trained, loaded):
        assert (run.test_mse, run.curve, run.steps) == (fresh.test_mse, fresh.curve, fresh.steps)
        assert run.model.training == fresh.model.training
        assert torch.equal(run.model(x), fresh.model(x))
    fields = ("perplexity", "parameters", "recurrent_parameters")
    ids = torch.randint(0, fresh_lm.model.vocab_size, (2, 7))
    for run in (trained_lm, loaded_lm):
        assert [getattr(run, f) for f in fields] == [getattr(fresh_lm, f) for f in fields]
        for curve in ("train_loss", "val_loss", "grad_norm"):  # all but the seconds it took
            assert getattr(run.history, curve) == getattr(fresh_lm.history, curve)
        assert run.model.training == fresh_lm.model.training
        assert torch.equal(run.model(ids)[0], fresh_lm.model(ids)[0])


@pytest.mark.usefixtures("one_torch_thread")
def test_chapter_6s_language_model_is_read_back_as_trained(tmp_path, monkeypatch):
    """What 6장 keeps of its train_char_lm run, char_lm_run reads back without training
    (weights, history, perplexity, seconds, the model's mode); its claims test reads the
    chapter's run this way. Another configuration is not read: it trains."""
    import dataclasses

    from course_utils.datasets import korean_char_split
    from course_utils.experiments import ch06_rnn

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    train, held_out = korean_char_split()
    train, held_out = train[:20_000], held_out[:4_000]
    config = dataclasses.replace(ch06_rnn.char_lm_config("small"), epochs=2, hidden_size=32)
    trained = ch06_rnn.train_char_lm(train, held_out, config, "cpu", show_progress=False)
    with pytest.raises(ValueError, match="another text"):
        ch06_rnn.keep_char_lm(held_out, train, trained)
    lstm = ch06_rnn.train_char_lm(
        train, held_out, dataclasses.replace(config, epochs=1), "cpu", show_progress=False,
        recurrent=functools.partial(torch.nn.LSTM, batch_first=True),
    )  # fmt: skip
    with pytest.raises(TypeError, match="only 6장's RNN is kept, not LSTM"):
        ch06_rnn.keep_char_lm(train, held_out, lstm)
    ch06_rnn.keep_char_lm(train, held_out, trained)
    real_training = ch06_rnn.train_char_lm

    def no_training(*args, **kwargs):
        raise AssertionError("a kept run was trained again")

    monkeypatch.setattr(ch06_rnn, "train_char_lm", no_training)
    loaded = ch06_rnn.char_lm_run(train, held_out, config)
    assert (loaded.perplexity, loaded.seconds, loaded.parameters) == (
        trained.perplexity,
        trained.seconds,
        trained.parameters,
    )
    assert loaded.history == trained.history and loaded.config == trained.config
    assert list(loaded.vocab) == list(trained.vocab)
    assert loaded.model.training == trained.model.training
    ids = torch.randint(0, len(trained.vocab), (2, 9))
    assert torch.equal(loaded.model(ids)[0], trained.model(ids)[0])
    with pytest.raises(AssertionError, match="trained again"):  # another configuration
        ch06_rnn.char_lm_run(train, held_out, dataclasses.replace(config, seed=1))
    monkeypatch.setattr(ch06_rnn, "train_char_lm", real_training)
    again = ch06_rnn.char_lm_run(train, held_out, dataclasses.replace(config, epochs=1))
    assert len(again.history.train_loss) == 1


def test_readable_cells_match_torch_cells():
    """lstm_cell and gru_cell are the equations the book shows; they equal torch's cells."""
    from course_utils.lstm import (
        gru_cell,
        lstm_cell,
    )

    torch.manual_seed(4)
    x, h, c = torch.randn(3, 5), torch.randn(3, 7), torch.randn(3, 7)
    reference = torch.nn.LSTMCell(5, 7)
    h1, c1 = reference(x, (h, c))
    x_proj = x @ reference.weight_ih.T + reference.bias_ih
    ours_h, ours_c = lstm_cell(x_proj, (h, c), reference.weight_hh, reference.bias_hh)
    torch.testing.assert_close(ours_h, h1, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours_c, c1, rtol=0, atol=1e-6)
    gru = torch.nn.GRUCell(5, 7)
    (ours,) = gru_cell(x @ gru.weight_ih.T + gru.bias_ih, (h,), gru.weight_hh, gru.bias_hh)
    torch.testing.assert_close(ours, gru(x, h), rtol=0, atol=1e-6)


def test_lstm_through_the_readable_cell_equals_the_fused_sequence():
    """The layer's fast path (LSTMSequence) and autograd through lstm_cell give the same numbers."""
    torch.manual_seed(5)
    fast, slow = (
        LSTM(3, 6, num_layers=2, bidirectional=True),
        AutogradLSTM(3, 6, num_layers=2, bidirectional=True),
    )
    slow.load_state_dict(fast.state_dict())
    x = torch.randn(9, 2, 3)
    x_fast, x_slow = x.clone().requires_grad_(), x.clone().requires_grad_()
    (out_fast, (h_fast, c_fast)), (out_slow, (h_slow, c_slow)) = fast(x_fast), slow(x_slow)
    torch.testing.assert_close(out_fast, out_slow, rtol=0, atol=1e-6)
    torch.testing.assert_close(h_fast, h_slow, rtol=0, atol=1e-6)
    (out_fast.sum() + c_fast.sum()).backward()
    (out_slow.sum() + c_slow.sum()).backward()
    for p, q in zip(fast.parameters(), slow.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=0, atol=1e-5)
    assert x_fast.grad is not None and x_slow.grad is not None
    torch.testing.assert_close(x_fast.grad, x_slow.grad, rtol=0, atol=1e-5)


def test_adding_problem_result_records_the_settings_it_ran_with():
    from course_utils.experiments.ch08_lstm_gru import run_adding_problem

    result = run_adding_problem("rnn", 6, steps=20, hidden_size=8, lr=0.05, clip_norm=0.5,
                                test_size=50, device="cpu")  # fmt: skip
    assert (result.steps, result.hidden_size, result.batch_size) == (20, 8, 64)
    assert (result.lr, result.clip_norm, result.test_size) == (0.05, 0.5, 50)
    assert result.curve_steps == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]


def test_timing_ratio_is_the_median_of_per_round_ratios():
    from course_utils.experiments.ch08_lstm_gru import Timing

    timing = Timing({"a": [1.0, 4.0, 3.0], "b": [2.0, 2.0, 1.0]}, (1, 2, 3))
    assert timing.median("a") == 3.0
    assert timing.ratio("a", "b") == 2.0  # rounds: 0.5, 2, 3


def test_torch_lstm_without_onednn_computes_the_same_and_does_not_warn():
    import warnings

    from course_utils.experiments.ch08_lstm_gru import WithoutOneDNN, onednn_in_graph

    torch.manual_seed(7)
    reference = torch.nn.LSTM(3, 5, batch_first=True)
    x = torch.randn(2, 6, 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the flag's TF32 warning would fail the strict book build
        out, (h, c) = WithoutOneDNN(reference)(x)
        out.sum().backward()
    assert not onednn_in_graph(out)  # torch's own loop: no oneDNN node
    grad = x.grad.clone()
    x.grad = None
    expected, (h_ref, c_ref) = reference(x)
    expected.sum().backward()
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close((h, c), (h_ref, c_ref), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad, x.grad, rtol=1e-5, atol=1e-6)
    assert torch.backends.mkldnn.enabled  # switched back on afterwards


def test_timed_layers_share_weights_and_are_timed_every_round():
    from course_utils.experiments.ch08_lstm_gru import (
        time_forward_backward,
        time_recurrent_layers,
    )

    timing = time_recurrent_layers(batch_size=2, length=3, hidden_size=4, rounds=2)
    assert isinstance(timing.onednn, bool)
    if torch.backends.mkldnn.is_available() and platform.machine() == "x86_64":
        assert timing.onednn  # the x86 wheels run nn.LSTM with oneDNN's fused kernel
    assert set(timing.seconds) == {
        "torch.nn.LSTM", "torch.nn.LSTM, no oneDNN", "LSTM", "AutogradLSTM", "torch.nn.GRU", "GRU",
    }  # fmt: skip
    assert all(len(times) == 2 and min(times) > 0 for times in timing.seconds.values())
    assert timing.input_shape == (2, 3, 2)
    torch.manual_seed(6)
    fast, slow = LSTM(2, 4, batch_first=True), AutogradLSTM(2, 4, batch_first=True)
    slow.load_state_dict(fast.state_dict())
    x = torch.randn(2, 3, 2)
    torch.testing.assert_close(fast(x)[0], slow(x)[0], rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="rounds must be"):
        time_forward_backward({"lstm": fast}, x, rounds=0)


def test_char_vocab_and_the_sized_configurations():
    from course_utils.experiments.ch06_rnn import (
        char_lm_config,
        char_vocab,
    )

    vocab = char_vocab(list("abca"))
    assert vocab.tokens == ["<unk>", "a", "b", "c"] and vocab.encode(["z"]) == [0]
    assert char_lm_config("small").epochs == 16 and char_lm_config("large").epochs == 40
    with pytest.raises(TypeError, match=r"list\(text\)"):
        char_vocab("abc")
    with pytest.raises(ValueError, match="size must be one of"):
        char_lm_config("medium")


def test_train_char_lm_is_seeded_and_scores_the_whole_held_out_text():
    from course_utils.experiments.ch06_rnn import (
        CharLMConfig,
        train_char_lm,
    )

    text = list("가나다라 마바사아\n자차카 타파하\n" * 20)
    config = CharLMConfig(epochs=2, embedding_size=4, hidden_size=8, batch_size=4, num_steps=8)
    first = train_char_lm(text, text[:200], config, device="cpu", show_progress=False)
    second = train_char_lm(text, text[:200], config, device="cpu", show_progress=False)
    assert first.history.train_loss == second.history.train_loss
    assert first.perplexity == second.perplexity
    assert len(first.history.val_loss) == 2
    ids = torch.tensor(first.vocab.encode(text[:200]))
    assert first.perplexity == pytest.approx(perplexity(first.model, ids), rel=1e-6)
    assert first.parameters == sum(p.numel() for p in first.model.parameters())


def test_lines_are_padded_on_the_left_and_spaces_become_labels():
    from course_utils.experiments.ch06_rnn import (
        char_vocab,
        encode_lines,
        spacing_stream,
    )
    from course_utils.vocab import Vocab

    vocab = Vocab(list("abc"), specials=["<pad>", "<unk>"])
    x, y = encode_lines([("ab", 1), ("cabca", 0)], vocab, max_chars=4)
    assert x.tolist() == [[0, 0, 2, 3], [4, 2, 3, 4]] and y.tolist() == [1, 0]
    chars = char_vocab(list("ab c"))
    ids, labels = spacing_stream(list(" ab c "), chars)
    assert chars.decode(ids.tolist()) == ["a", "b", "c"]
    assert labels.tolist() == [0, 1, 1]  # a space after "b" and after "c"; the leading one is lost


def test_restore_spacing_puts_spaces_where_the_model_says():
    from course_utils.experiments.ch06_rnn import (
        char_vocab,
        restore_spacing,
        spacing_stream,
    )

    vocab = char_vocab(list("ab cd"))
    text = list("ab cd e")  # "e" is unknown to the vocabulary and is shown as written
    _, truth = spacing_stream(text, vocab)

    class Oracle(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.unused = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x):  # (1, N) → (1, N, 2), class 1 where the truth has a space
            return torch.nn.functional.one_hot(truth, 2).float().unsqueeze(0)

    assert restore_spacing(Oracle(), vocab, text) == "ab cd e"


def test_the_two_small_tasks_report_their_baselines_and_are_seeded():
    from course_utils.experiments.ch06_rnn import (
        run_spacing_tagger,
        source_lines,
    )

    text = list("국민의 권리 국회의 의결 법률로 정한다\n" * 20)
    first = run_spacing_tagger(text, text[:40], epochs=1, num_steps=8, device="cpu",
                               show_progress=False)  # fmt: skip
    second = run_spacing_tagger(text, text[:40], epochs=1, num_steps=8, device="cpu",
                                show_progress=False)  # fmt: skip
    assert first.accuracy == second.accuracy
    assert first.characters == sum(c != " " for c in text[:40])
    assert first.all_joined == pytest.approx(1 - text[:40].count(" ") / first.characters)
    labels = [label for _, label in source_lines()]
    assert set(labels) == {0, 1} and 0 < sum(labels) < len(labels)


def test_temperature_samples_measure_copying_and_repeating():
    from course_utils.experiments.ch06_rnn import (
        char_vocab,
        sample_at_temperatures,
    )

    train = list("abcabcabd")
    vocab = char_vocab(train)
    torch.manual_seed(0)
    model = RNNLanguageModel(len(vocab), RNN(4, 8, batch_first=True))
    results = sample_at_temperatures(model, vocab, train, "ab", (0.05, 5.0), 30, seeds=(0, 1))
    assert [r.temperature for r in results] == [0.05, 5.0]
    for r in results:
        assert len(r.texts) == 2 and all(len(t.replace("<unk>", "?")) == 30 for t in r.texts)
        assert 0 <= r.known_trigrams <= 1 and 0 <= r.repeated_4grams <= 1
    assert results == sample_at_temperatures(model, vocab, train, "ab", (0.05, 5.0), 30, (0, 1))
    assert results[0].distinct_chars <= results[1].distinct_chars
    with pytest.raises(ValueError, match="length must be >= 4"):
        sample_at_temperatures(model, vocab, train, "ab", (1.0,), 3)


@pytest.mark.parametrize("layer_cls", [RNN, torch.nn.RNN])
def test_a_deep_bidirectional_layer_is_one_bidirectional_layer_per_level(layer_cls):
    """Layer l reads layer l-1's concatenated [forward; backward] outputs (2H features)."""
    torch.manual_seed(8)
    hidden, num_layers = 4, 3
    deep = layer_cls(5, hidden, num_layers=num_layers, bidirectional=True, batch_first=True)
    x = torch.randn(2, 6, 5)  # (B, T, I)
    out, h_n = deep(x)
    weights = deep.state_dict()
    below, finals = x, []
    for layer in range(num_layers):
        single = layer_cls(below.size(-1), hidden, bidirectional=True, batch_first=True)
        single.load_state_dict(
            {k.replace(f"_l{layer}", "_l0"): v for k, v in weights.items() if f"_l{layer}" in k}
        )
        below, h_layer = single(below)  # (B, T, 2H), (2, B, H)
        finals.append(h_layer)
    torch.testing.assert_close(below, out, rtol=0, atol=1e-6)
    # h_n is layer-major: [layer 0 forward, layer 0 backward, layer 1 forward, ...].
    torch.testing.assert_close(torch.cat(finals), h_n, rtol=0, atol=1e-6)


@pytest.mark.parametrize("layer_cls", [RNN, torch.nn.RNN])
@pytest.mark.parametrize("batch_first", [False, True])
def test_final_states_sit_at_the_two_ends_of_the_output(layer_cls, batch_first):
    """The top forward state is the output's last step, the top backward state its first."""
    torch.manual_seed(9)
    hidden, num_layers = 3, 2
    layer = layer_cls(4, hidden, num_layers=num_layers, bidirectional=True, batch_first=batch_first)
    x = torch.randn(5, 2, 4) if not batch_first else torch.randn(2, 5, 4)
    out, h_n = layer(x)
    out = out if batch_first else out.transpose(0, 1)  # (B, T, 2H)
    assert tuple(out.shape) == (2, 5, 2 * hidden)
    assert tuple(h_n.shape) == (2 * num_layers, 2, hidden)
    top = h_n.view(num_layers, 2, 2, hidden)[-1]  # (direction, B, H)
    torch.testing.assert_close(top[0], out[:, -1, :hidden], rtol=0, atol=0)
    torch.testing.assert_close(top[1], out[:, 0, hidden:], rtol=0, atol=0)
    # The backward half of the last step has read one input only: it is not the final state.
    assert (top[1] - out[:, -1, hidden:]).abs().max() > 1e-3


def test_front_padding_puts_the_last_character_last_and_packing_needs_back_padding():
    """6장's padding sentences: encode_lines pads in front; torch pads behind and packs."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

    from course_utils.experiments.ch06_rnn import encode_lines
    from course_utils.vocab import Vocab

    vocab = Vocab(list("가나다라"), specials=["<pad>", "<unk>"])
    pairs = [("가나", 0), ("다라가나", 1)]
    lines = [torch.tensor(vocab.encode(list(line))) for line, _ in pairs]
    left, _ = encode_lines(pairs, vocab, max_chars=4)
    right = pad_sequence(lines, batch_first=True, padding_value=vocab.pad_id)
    assert left[0].tolist() == [vocab.pad_id] * 2 + lines[0].tolist()  # the last step is "나"
    assert right[0].tolist() == lines[0].tolist() + [vocab.pad_id] * 2  # torch's default side
    torch.manual_seed(10)
    embed, reader = torch.nn.Embedding(len(vocab), 3), torch.nn.RNN(3, 5, batch_first=True)
    with torch.no_grad():
        alone = reader(embed(lines[0].unsqueeze(0)))[1][0, 0]
        packed = pack_padded_sequence(embed(right), torch.tensor([2, 4]), batch_first=True,
                                      enforce_sorted=False)  # fmt: skip
        torch.testing.assert_close(reader(packed)[1][0, 0], alone, rtol=0, atol=1e-6)
        assert (reader(embed(right))[1][0, 0] - alone).abs().max() > 1e-3  # read the pads last
        assert (reader(embed(left))[1][0, 0] - alone).abs().max() > 1e-3  # read the pads first


def test_state_norms_are_seeded_bounded_for_tanh_and_validate_their_input():
    from course_utils.experiments.ch06_rnn import state_norms

    result = state_norms(spectral_radius=0.5, steps=6, hidden_size=5, input_size=2, batch_size=3)
    assert set(result.norms) == {"tanh", "relu"}
    assert all(len(v) == 6 for v in result.norms.values())
    assert max(result.norms["tanh"]) < 5**0.5 and result.hidden_size == 5
    assert result == state_norms(spectral_radius=0.5, steps=6, hidden_size=5, input_size=2,
                                 batch_size=3)  # fmt: skip
    with pytest.raises(ValueError, match="spectral_radius must be > 0"):
        state_norms(spectral_radius=0)
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        state_norms(steps=0)
    with pytest.raises(ValueError, match="hidden_size must be an int >= 1"):
        state_norms(hidden_size=2.5)


def test_the_small_tasks_scores_are_read_back_from_what_6장_recorded(tmp_path, monkeypatch):
    """12장 reads 6장's RNN scores instead of training them again: recorded by the runs with the
    default settings, read back on another thread count, trained when nothing is recorded."""
    from course_utils.experiments import ch06_rnn

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    text = list("국민의 권리 국회의 의결 법률로 정한다\n" * 100)  # one batch of 32 × 48
    trained = ch06_rnn.spacing_tagger_score(text, text[:40], show_progress=False)  # nothing yet
    lines = ch06_rnn.run_line_classifier(show_progress=False)  # 6장's call: the defaults

    def no_training(*args, **kwargs):
        raise AssertionError("trained again instead of reading what was recorded")

    monkeypatch.setattr(ch06_rnn, "run_spacing_tagger", no_training)
    monkeypatch.setattr(ch06_rnn, "run_line_classifier", no_training)
    threads = torch.get_num_threads()
    torch.set_num_threads(2 if threads == 1 else 1)
    try:
        assert ch06_rnn.spacing_tagger_score(text, text[:40]) == trained
        assert ch06_rnn.line_classifier_score() == (lines.accuracy, lines.majority)
        with pytest.raises(AssertionError, match="trained again"):  # another text: not recorded
            ch06_rnn.spacing_tagger_score(text, text[:41])
    finally:
        torch.set_num_threads(threads)
    assert 0 < trained[1] < 1 and lines.majority > 0.5
