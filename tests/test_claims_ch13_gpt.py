"""The outcomes that 13장 GPT states in words, re-measured.

Each test calls the chapter's own experiment functions with the chapter's
configurations (``size_sweep()``, the default ``SFTConfig`` and ``DPOConfig``),
so that a sentence such as "pretraining is what lets the model generalise to
new nouns" fails loudly if it stops being true. The trained models come from
the training cache (``~/.cache/nlp-course`` or ``COURSE_CACHE``), so after the
chapter has run these tests train nothing; on a cold cache they train the
three GPTs and the post-training runs once (about a minute and a half on one
core). The recurrent models of 6장 and 8장 are read back from what those
chapters recorded, or trained here.
"""

import math

import pytest

from course_utils.device import run_size
from course_utils.experiments.ch13_gpt import (
    compare_korean_tokenizers,
    continue_text,
    distinct_share,
    earlier_models,
    pretrain_char_gpt,
    processor_gaps,
    size_sweep,
)
from course_utils.experiments.ch13_posttraining import run_posttraining
from course_utils.sampling import Sampling

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def sweep():
    if run_size() != "small":
        pytest.skip("the prose describes the default CPU run (COURSE_RUN=small)")
    return [pretrain_char_gpt(c, show_progress=False) for c in size_sweep()]


@pytest.fixture(scope="module")
def chapter_model(sweep):
    return sweep[-1]


@pytest.fixture(scope="module")
def post(chapter_model):
    return run_posttraining(chapter_model.config)


def test_byte_level_bpe_has_no_unknowns_and_sits_between_the_others():
    table = compare_korean_tokenizers(1000)
    rows = table.rows
    assert table.agreeing == table.held_out_lines == 416  # every line as tokenizers cuts it
    assert rows["syllables"].unknown > 0  # byte-level BPE has no unknown token by design
    assert rows["sentencepiece"].unknown > 0
    per_line = [rows[n].tokens_per_line for n in ("sentencepiece", "byte_bpe", "syllables")]
    assert per_line == sorted(per_line)


def test_the_gpt_beats_the_recurrent_models_but_not_the_n_grams(chapter_model):
    ppl = {row.name: row.perplexity for row in earlier_models()}
    gpt = chapter_model.perplexity
    assert gpt < min(ppl["GRU"], ppl["LSTM"], ppl["RNN"])
    assert ppl["KN 3-gram"] < gpt < 1.2 * ppl["KN 3-gram"]
    assert gpt > 1.2 * ppl["KN 4-gram"]


def test_a_wider_model_reaches_lower_losses_at_the_same_steps(sweep):
    held_out = [s.perplexity for s in sweep]
    trained = [s.losses[-1] for s in sweep]
    assert held_out == sorted(held_out, reverse=True) and len(set(held_out)) == 3
    assert trained == sorted(trained, reverse=True) and len(set(trained)) == 3
    gaps = [math.log(s.perplexity) - s.losses[-1] for s in sweep]
    assert gaps == sorted(gaps) and len(set(gaps)) == 3  # the wider, the larger the gap


def test_the_decoding_rules_equal_transformers():
    assert max(processor_gaps().values()) < 1e-5


def test_greedy_loops_even_with_the_penalty_and_sampling_does_not(chapter_model):
    def share(sampling):
        text = continue_text(chapter_model.model, chapter_model.text.vocab, "대한민국", 300,
                             sampling, seed=1)  # fmt: skip
        return distinct_share(text[len("대한민국") :])

    greedy, penalised = (
        share(Sampling(greedy=True)),
        share(Sampling(greedy=True, repetition_penalty=1.3)),
    )
    assert penalised < greedy  # the penalty made this model loop more, not less
    looping = max(greedy, penalised)
    sampled = min(share(Sampling(temperature=0.8)), share(Sampling(top_k=10)),
                  share(Sampling(top_p=0.9)))  # fmt: skip
    assert looping < 0.8 < sampled


def test_sft_generalises_only_from_the_pretrained_start(post):
    full, scratch, lora = (post.sft[k] for k in [("pretrained", "full"), ("random", "full"),
                                                  ("pretrained", "lora")])  # fmt: skip
    assert full.before_test == 0 and lora.before_test == 0  # the instruction is new to it
    assert full.test > scratch.test + 0.2
    assert scratch.test < 0.65 and scratch.train < 0.65  # near guessing one of the two forms
    assert abs(full.test - lora.test) < 0.12
    assert lora.trainable / lora.total < 0.1
    assert full.train - lora.train > full.test - lora.test  # LoRA trails more on the trained nouns


def test_dpo_raises_the_right_form_and_costs_perplexity(post):
    dpo = post.dpo
    assert dpo.test > dpo.before_test + 0.05
    assert dpo.train - dpo.before_train > dpo.test - dpo.before_test  # the trained nouns gain more
    assert dpo.before_test > 0.5  # the pretrained model already prefers the right form
    assert dpo.perplexity_after > 1.3 * dpo.perplexity_before
