"""The measured outcomes that chapters 5–8 state in words, re-measured.

Each test runs the chapter's own configuration (or, where noted, a shorter
run of it) so that a sentence such as "gated cells solve T = 100 where the
RNN does not" fails loudly if it stops being true.
"""

import numpy as np
import pytest
import torch

from course_utils.bptt import init_params, rnn_backward, rnn_forward
from course_utils.datasets import korean_char_split
from course_utils.lstm import run_adding_problem
from course_utils.ngram import NGramLM
from course_utils.rnn import RNN, RNNLanguageModel, lm_loss, perplexity
from course_utils.sequences import lm_windows
from course_utils.train import fit
from course_utils.vocab import Vocab

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chars():
    return korean_char_split()


def test_kneser_ney_beats_add_k_and_improves_up_to_four_grams(chars):
    """5장: KN ≤ add-k (k chosen on a validation cut) at n = 1..4, and KN-4 is the best."""
    train, held_out = chars
    cut = int(len(train) * 0.9)
    kn, add_k = [], []
    for n in [1, 2, 3, 4]:
        best_k = min([1.0, 0.1, 0.01, 0.001],
                     key=lambda k: NGramLM(train[:cut], n, "add_k", k=k).perplexity(train[cut:]))  # fmt: skip
        add_k.append(NGramLM(train, n, "add_k", k=best_k).perplexity(held_out))
        kn.append(NGramLM(train, n).perplexity(held_out))
    assert all(a >= b for a, b in zip(add_k, kn, strict=True))
    assert kn == sorted(kn, reverse=True)
    assert int(np.argmin(add_k)) < 3  # add-k gets worse again at n = 4


def test_rnn_language_model_beats_the_bigram_but_not_the_four_gram(chars):
    """6장's model and settings, 12 of its 24 epochs (the gap to KN-4 only grows shorter with more)."""
    train, held_out = chars
    vocab = Vocab(sorted(set(train)), specials=["<unk>"])
    train_ids, held_ids = torch.tensor(vocab.encode(train)), torch.tensor(vocab.encode(held_out))
    torch.manual_seed(0)
    model = RNNLanguageModel(len(vocab), RNN(64, 256, batch_first=True), dropout=0.2)
    windows = torch.Generator().manual_seed(0)
    fit(model, lambda: lm_windows(train_ids, 32, 64, windows), lm_loss,
        torch.optim.Adam(model.parameters(), lr=3e-3), epochs=12, clip_norm=1.0,
        device="cpu", show_progress=False)  # fmt: skip
    rnn = perplexity(model, held_ids)
    assert rnn < NGramLM(train, 2).perplexity(held_out)
    assert rnn > NGramLM(train, 4).perplexity(held_out)


def test_gradient_norms_vanish_below_and_explode_above_spectral_radius_one():
    """7장's measurement: W_hh = ρQ, loss at the last of 60 steps."""
    rng = np.random.default_rng(0)
    orthogonal, _ = np.linalg.qr(rng.normal(size=(64, 64)))
    xs = rng.normal(size=(60, 8, 4))
    ratio = {}
    for activation in ["tanh", "relu"]:
        for rho in [0.8, 1.0, 1.5, 2.0]:
            params = init_params(4, 64, 3, seed=0, scale=0.3)
            params["W_hh"] = rho * orthogonal
            logits, cache = rnn_forward(params, xs, np.zeros((8, 64)), activation)
            dlogits = np.zeros_like(logits)
            dlogits[-1] = rng.normal(size=logits.shape[1:])
            _, norms = rnn_backward(params, cache, dlogits)
            ratio[(activation, rho)] = norms[0] / norms[-1]
    assert ratio[("tanh", 0.8)] < 1e-6 and ratio[("relu", 0.8)] < 1e-6
    assert ratio[("tanh", 1.0)] < 1e-3 and ratio[("relu", 1.0)] < 1e-3
    assert ratio[("relu", 2.0)] > 1e6
    assert ratio[("tanh", 2.0)] < ratio[("relu", 2.0)] / 1e3


def test_gated_cells_solve_the_long_adding_problem_where_the_rnn_does_not():
    """8장: at T = 100 the RNN stays near the 1/6 of always answering 1; LSTM and GRU go below 0.05."""
    results = {cell: run_adding_problem(cell, 100) for cell in ["rnn", "lstm", "gru"]}
    assert results["rnn"].test_mse > 0.1
    assert results["lstm"].test_mse < 0.05
    assert results["gru"].test_mse < 0.05
    assert (
        run_adding_problem("rnn", 10).test_mse < 0.05
    )  # short dependencies are within the RNN's reach
