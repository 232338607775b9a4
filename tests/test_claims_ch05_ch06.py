"""The measured outcomes that chapters 5 and 6 state in words, re-measured.

Each test runs the chapter's own configuration (or, where noted, a shorter
run of it) so that a sentence fails loudly if it stops being true.
"""

import numpy as np
import pytest
import torch

from course_utils.datasets import korean_char_split
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
