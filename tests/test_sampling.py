"""13장's decoding rules (course_utils.sampling) against transformers' logits processors on the
same logits, and greedy generation against GPT2LMHeadModel.generate with copied weights."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.gpt import GPT, GPTConfig, gpt2_config, load_gpt2_weights
from course_utils.sampling import (
    Sampling,
    apply_repetition_penalty,
    apply_temperature,
    generate,
    keep_top_k,
    keep_top_p,
    next_token,
)

processors = pytest.importorskip("transformers.generation.logits_process")


@pytest.fixture
def logits():
    generator = torch.Generator().manual_seed(0)
    return torch.randn(6, 40, generator=generator, dtype=torch.float64) * 3


def _same(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs))
    finite = ~torch.isinf(ours)
    assert torch.allclose(ours[finite], theirs[finite], atol=1e-12, rtol=0)


@pytest.mark.parametrize("t", [0.3, 1.0, 2.5])
def test_temperature_equals_transformers(logits, t):
    ids = torch.zeros(6, 1, dtype=torch.long)
    _same(apply_temperature(logits, t), processors.TemperatureLogitsWarper(t)(ids, logits.clone()))


@pytest.mark.parametrize("k", [1, 5, 40, 100])
def test_top_k_equals_transformers(logits, k):
    ids = torch.zeros(6, 1, dtype=torch.long)
    theirs = processors.TopKLogitsWarper(k)(ids, logits.clone())
    ours = keep_top_k(logits, k)
    _same(ours, theirs)
    assert (~torch.isinf(ours)).sum(dim=-1).tolist() == [min(k, 40)] * 6


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9, 0.999])
def test_top_p_equals_transformers(logits, p):
    ids = torch.zeros(6, 1, dtype=torch.long)
    theirs = processors.TopPLogitsWarper(p)(ids, logits.clone())
    ours = keep_top_p(logits, p)
    _same(ours, theirs)
    kept = torch.where(torch.isinf(ours), 0.0, logits.softmax(-1)).sum(-1)
    assert bool((kept >= p).all())  # the nucleus holds at least p of the probability


def test_repetition_penalty_equals_transformers(logits):
    generator = torch.Generator().manual_seed(1)
    previous = torch.randint(0, 40, (6, 9), generator=generator)
    for penalty in (1.3, 0.8):
        theirs = processors.RepetitionPenaltyLogitsProcessor(penalty)(previous, logits.clone())
        _same(apply_repetition_penalty(logits, previous, penalty), theirs)
    row = torch.tensor([[2.0, -2.0, 1.0]])
    assert apply_repetition_penalty(row, torch.tensor([[0, 1]]), 2.0).tolist() == [[1.0, -4.0, 1.0]]


def test_greedy_generation_equals_gpt2s_generate():
    config = GPTConfig(vocab_size=60, max_len=32, d_model=32, nhead=4, num_layers=2)
    torch.manual_seed(0)
    theirs = __import__("transformers").GPT2LMHeadModel(gpt2_config(config)).double().eval()
    with torch.no_grad():  # larger weights than GPT-2's start, so that the argmax is clear
        for parameter in theirs.parameters():
            parameter.mul_(20 if parameter.dim() > 1 else 1)
    ours = GPT(config).double()
    load_gpt2_weights(ours, theirs)
    prompt = torch.randint(0, 60, (3, 5), generator=torch.Generator().manual_seed(2))
    expected = theirs.generate(
        prompt, max_new_tokens=12, do_sample=False, pad_token_id=0,
        attention_mask=torch.ones_like(prompt),
    )  # fmt: skip
    got = generate(ours, prompt, 12)
    assert torch.equal(got, expected)
    assert len(set(got[:, 5:].flatten().tolist())) > 3  # not one token over and over


def test_sampling_draws_only_kept_tokens_and_greedy_is_the_argmax(logits):
    previous = torch.zeros(6, 1, dtype=torch.long)
    assert torch.equal(next_token(logits, previous, Sampling(greedy=True)), logits.argmax(-1))
    rule = Sampling(temperature=0.7, top_k=5, top_p=0.9)
    allowed = ~torch.isinf(rule.logits(logits, previous))
    generator = torch.Generator().manual_seed(3)
    for _ in range(50):
        token = next_token(logits, previous, rule, generator)
        assert bool(allowed[torch.arange(6), token].all())
    # a temperature near 0 samples the argmax
    cold = Sampling(temperature=1e-4)
    assert torch.equal(next_token(logits, previous, cold, generator), logits.argmax(-1))


def test_bad_arguments_are_named(logits):
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        apply_temperature(logits, 0)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        apply_temperature(logits, math.inf)
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        keep_top_k(logits, 0)
    with pytest.raises(ValueError, match="p must be a probability"):
        keep_top_p(logits, 1.5)
    with pytest.raises(ValueError, match="need one batch size"):
        apply_repetition_penalty(logits, torch.zeros(2, 3, dtype=torch.long), 1.2)
    with pytest.raises(ValueError, match="logits must be a"):
        keep_top_k(logits[0], 3)
