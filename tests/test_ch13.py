"""13장's experiments: perplexity of a stream, the particle task, SFT grading and DPO.

The pretraining and post-training runs here are tiny (a few steps): they check
that the pieces fit and grade honestly; the chapter's own numbers come from its
claims test.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from course_utils.experiments.ch13_gpt import (
    GPTPretrainConfig,
    korean_char_text,
    pretrain_char_gpt,
    sample_windows,
    size_sweep,
    stream_perplexity,
)
from course_utils.experiments.ch13_posttraining import (
    PARTICLES,
    DPOConfig,
    ParticleItem,
    SFTConfig,
    dpo_loss,
    dpo_particles,
    encode_pairs,
    encode_sft,
    exact_match,
    finetune_particles,
    particle_items,
    particle_nouns,
    preference_accuracy,
    sequence_logprobs,
)
from course_utils.gpt import GPT, GPTConfig, gpt2_config, load_gpt2_weights
from course_utils.sampling import generate

TINY = GPTPretrainConfig(d_model=16, nhead=2, num_layers=1, batch_size=8, steps=20, warmup_steps=2)


@pytest.fixture(scope="module")
def text():
    return korean_char_text()


@pytest.fixture(scope="module")
def tiny():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COURSE_CACHE", "off")  # a few steps: nothing worth keeping
        return pretrain_char_gpt(TINY, show_progress=False)


def random_gpt(vocab_size: int, max_len: int, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab_size=vocab_size, max_len=max_len, d_model=16, nhead=2, num_layers=2))


# --- the text and the windows ----------------------------------------------------------


def test_char_text_is_6장s_split_and_vocabulary(text):
    from course_utils.datasets import korean_char_split
    from course_utils.experiments.ch06_rnn import char_vocab

    train_chars, held_chars = korean_char_split()
    assert text.vocab.tokens == char_vocab(train_chars).tokens
    assert text.train.tolist() == text.vocab.encode(train_chars)
    unseen = sum(c not in set(train_chars) for c in held_chars)
    assert text.unknown == unseen > 0  # held-out characters never seen in training are <unk>


def test_sample_windows_shift_by_one():
    stream = torch.arange(100)
    x, y = sample_windows(stream, 7, 5, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (7, 5)
    assert torch.equal(y, x + 1)  # each target is the next token of the stream
    with pytest.raises(ValueError, match="at least length"):
        sample_windows(torch.arange(5), 2, 5, torch.Generator())


# --- perplexity of a stream ----------------------------------------------------------


def test_stream_perplexity_equals_one_forward_when_the_stream_fits():
    model = random_gpt(11, 32)
    stream = torch.randint(0, 11, (20,), generator=torch.Generator().manual_seed(1))
    ppl, n = stream_perplexity(model, stream, first=3)
    inputs = torch.cat([torch.tensor([3]), stream[:-1]])
    nll = F.cross_entropy(model(inputs[None])[0], stream)
    assert n == 20
    assert ppl == pytest.approx(math.exp(float(nll.detach())), rel=1e-6)


@pytest.mark.parametrize("length", [8, 9, 47, 50])
def test_stream_perplexity_predicts_each_token_once_from_enough_context(length):
    """Against a loop over tokens: token t read with the window that first reaches it."""
    max_len = 8
    model = random_gpt(13, max_len, seed=2).eval()
    stream = torch.randint(0, 13, (length,), generator=torch.Generator().manual_seed(length))
    ppl, n = stream_perplexity(model, stream, first=0, batch_size=3)
    inputs = torch.cat([torch.tensor([0]), stream[:-1]])
    nll = 0.0
    with torch.no_grad():
        half = max_len // 2
        starts = list(range(0, length - max_len + 1, half)) if length > max_len else [0]
        if length > max_len and starts[-1] + max_len < length:
            starts.append(length - max_len)  # the last window ends with the stream
        for t in range(length):
            start = next(s for s in starts if t < s + max_len)  # the first window reaching t
            assert t - start + 1 >= min(t + 1, half)  # at least half a window of context
            logits = model(inputs[start : t + 1][None])[0, -1]
            nll -= float(F.log_softmax(logits, -1)[stream[t]])
    assert n == length
    assert ppl == pytest.approx(math.exp(nll / length), rel=1e-5)


def test_stream_perplexity_rejects_an_empty_stream():
    with pytest.raises(ValueError, match="non-empty 1-D"):
        stream_perplexity(random_gpt(5, 8), torch.tensor([], dtype=torch.long), first=0)


# --- pretraining -----------------------------------------------------------------------


def test_pretraining_lowers_the_loss_and_scores_every_held_out_character(tiny, text):
    assert len(tiny.losses) == 10
    assert tiny.losses[-1] < tiny.losses[0]
    assert tiny.tokens_seen == TINY.steps * TINY.batch_size * TINY.context
    assert tiny.perplexity < len(text.vocab)  # better than guessing uniformly
    again, n = stream_perplexity(tiny.model, text.held_out, text.vocab["\n"])
    assert n == len(text.held_out) and again == pytest.approx(tiny.perplexity)


def test_pretrain_config_errors():
    with pytest.raises(TypeError, match="GPTPretrainConfig"):
        pretrain_char_gpt({"d_model": 16})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="context"):
        GPTPretrainConfig(context=1)
    with pytest.raises(ValueError, match="learning_rate"):
        GPTPretrainConfig(learning_rate=0)


# --- the particle task ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("noun", "forms", "right"),
    [("사과", ("을", "를"), "를"), ("생선", ("을", "를"), "을"), ("연필", ("으로", "로"), "로"),
     ("학교", ("으로", "로"), "로"), ("공원", ("으로", "로"), "으로"), ("고양이", ("이", "가"), "가"),
     ("책", ("과", "와"), "과"), ("우유", ("은", "는"), "는")],
)  # fmt: skip
def test_particle_items_follow_the_final_consonant(noun, forms, right):
    item = ParticleItem(noun, forms)
    assert item.right == right
    assert {item.right, item.wrong} == set(forms)
    assert item.prompt == f"{noun}+{forms[0]}/{forms[1]}:"
    assert item.answer == right + "\n"


def test_particle_nouns_are_disjoint_and_in_the_vocabulary(text):
    train, held = particle_nouns(text.vocab)
    assert len(train) > 500 and len(held) > 50
    assert not set(train) & set(held)
    assert all(c in text.vocab for noun in train + held for c in noun)
    assert "법률" in train and "사과" in held
    assert len(particle_items(held)) == len(held) * len(PARTICLES)
    with pytest.raises(TypeError, match="list of nouns"):
        particle_items("사과")


def test_sft_targets_are_the_response_tokens_only(text):
    items = [ParticleItem("사과", ("을", "를")), ParticleItem("공원", ("으로", "로"))]
    inputs, targets, prompts = encode_sft(items, text.vocab)
    for row, item in enumerate(items):
        kept = [text.vocab.token_of(int(t)) for t in targets[row] if t != -100]
        # the answer, line break included; no prompt, no padding
        assert "".join(kept) == item.answer
        assert prompts[row] == len(item.prompt)
    model = random_gpt(len(text.vocab), 16)
    with torch.no_grad():
        logits = model(inputs)
        loss = model.loss(inputs, targets)
    by_hand = [
        -F.log_softmax(logits[b, t], -1)[targets[b, t]]
        for b in range(len(items))
        for t in range(targets.shape[1])
        if targets[b, t] != -100
    ]
    assert float(loss) == pytest.approx(float(sum(by_hand) / len(by_hand)), rel=1e-6)


def test_exact_match_equals_greedy_decoding(tiny, text):
    train, held = particle_nouns(text.vocab)
    items = particle_items(train[:12]) + particle_items(held[:12])
    model = finetune_particles(tiny, config=SFTConfig(steps=30)).model
    hits = 0
    for item in items:
        prompt = torch.tensor([text.vocab.encode(list(item.prompt))])
        out = generate(model, prompt, len(item.answer), use_cache=True)[0, prompt.shape[1] :]
        hits += "".join(text.vocab.token_of(int(t)) for t in out) == item.answer
    share = exact_match(model, items, text.vocab)
    assert share == pytest.approx(hits / len(items))
    assert hits > 0  # a share of 0 would not test the equality


def test_finetuning_runs_and_lora_trains_only_its_matrices(tiny):
    full = finetune_particles(tiny, "pretrained", "full", SFTConfig(steps=5))
    lora = finetune_particles(tiny, "pretrained", "lora", SFTConfig(steps=5))
    assert full.trainable == full.total
    assert 0 < lora.trainable < lora.total / 4
    assert lora.total - lora.trainable == full.total  # the frozen model is the whole original
    for result in (full, lora):
        assert 0 <= result.test <= 1 and len(result.losses) == 5
    with pytest.raises(ValueError, match="start"):
        finetune_particles(tiny, "scratch")
    with pytest.raises(ValueError, match="method"):
        finetune_particles(tiny, method="adapter")


# --- DPO -----------------------------------------------------------------------------


def test_dpo_loss_against_transformers_log_probabilities(text):
    """Sequence log-probabilities from GPT2LMHeadModel with the same weights, the loss from
    the paper's formula written out: both equal ours."""
    transformers = pytest.importorskip("transformers")
    ours = random_gpt(len(text.vocab), 16, seed=5).double()
    torch.manual_seed(6)
    theirs = transformers.GPT2LMHeadModel(gpt2_config(ours.config)).double().eval()
    load_gpt2_weights(ours, theirs)
    items = particle_items(["사과", "공원", "연필"])
    ci, ct, ri, rt = encode_pairs(items, text.vocab)
    reference = random_gpt(len(text.vocab), 16, seed=7).double().eval()

    def hf_logps(inputs, targets):
        log_probs = torch.log_softmax(theirs(inputs).logits, -1)
        return torch.stack([
            sum(log_probs[b, t, targets[b, t]] for t in range(targets.shape[1]) if targets[b, t] >= 0)
            for b in range(len(inputs))
        ])  # fmt: skip

    ours.eval()
    pc, pr = sequence_logprobs(ours, ci, ct), sequence_logprobs(ours, ri, rt)
    assert torch.allclose(pc, hf_logps(ci, ct), atol=1e-10)
    assert torch.allclose(pr, hf_logps(ri, rt), atol=1e-10)
    rc, rr = sequence_logprobs(reference, ci, ct), sequence_logprobs(reference, ri, rt)
    beta = 0.3
    by_formula = sum(
        -math.log(1 / (1 + math.exp(-beta * ((a - c) - (b - d)))))
        for a, b, c, d in zip(pc.tolist(), pr.tolist(), rc.tolist(), rr.tolist(), strict=True)
    ) / len(items)
    assert float(dpo_loss(pc, pr, rc, rr, beta).detach()) == pytest.approx(by_formula, rel=1e-12)


def test_dpo_loss_starts_at_log_2_and_its_gradient():
    chosen = torch.tensor([-1.0, -2.0], dtype=torch.float64, requires_grad=True)
    rejected = torch.tensor([-1.5, -0.5], dtype=torch.float64)
    ref_c, ref_r = chosen.detach().clone(), rejected.clone()
    assert float(dpo_loss(chosen, rejected, ref_c, ref_r).detach()) == pytest.approx(math.log(2))
    assert torch.autograd.gradcheck(
        lambda c: dpo_loss(c, rejected, ref_c - 0.3, ref_r, 0.5), (chosen,)
    )
    with pytest.raises(ValueError, match="shape"):
        dpo_loss(chosen, rejected[:1], ref_c, ref_r)
    with pytest.raises(ValueError, match="beta"):
        dpo_loss(chosen, rejected, ref_c, ref_r, beta=0)


def test_preference_accuracy_counts_pairs_by_hand(tiny, text):
    items = particle_items(["사과", "공원"])
    ci, ct, ri, rt = encode_pairs(items, text.vocab)
    with torch.no_grad():
        better = sequence_logprobs(tiny.model, ci, ct) > sequence_logprobs(tiny.model, ri, rt)
    assert preference_accuracy(tiny.model, items, text.vocab) == pytest.approx(
        float(better.float().mean())
    )
    chosen = ["".join(text.vocab.token_of(int(t)) for t in row if t != -100) for row in ct]
    assert chosen == [item.right for item in items]


def test_dpo_moves_the_policy_and_keeps_the_reference(tiny):
    before = {k: v.clone() for k, v in tiny.model.state_dict().items()}
    result = dpo_particles(tiny, DPOConfig(steps=5))
    assert result.losses[0] == pytest.approx(math.log(2), abs=1e-6)  # policy = reference at first
    assert all(torch.equal(v, tiny.model.state_dict()[k]) for k, v in before.items())
    assert result.perplexity_before == tiny.perplexity
    assert 0 <= result.test <= 1


def test_tiny_config_has_a_short_context():
    assert replace(TINY, context=4).gpt_config(10).max_len == 4


def test_posttraining_parts_are_kept_and_read_back_alike(tiny, text, tmp_path, monkeypatch):
    """run_posttraining computes each part once, then reads it back: the SFT models (LoRA too)
    rebuilt from the cache grade as they did when trained."""
    from course_utils.experiments.ch13_posttraining import PARTS, run_posttraining

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    sft, dpo = SFTConfig(steps=5), DPOConfig(steps=3)
    first = run_posttraining(TINY, sft, dpo)
    assert not first.cached and len(list(tmp_path.glob("gpt-posttraining-*.pt"))) == len(PARTS)
    again = run_posttraining(TINY, sft, dpo)
    assert again.cached and again.dpo.test == first.dpo.test
    _, held = particle_nouns(text.vocab)
    items = particle_items(held)
    for key, result in again.sft.items():
        assert result.test == first.sft[key].test
        assert exact_match(result.model, items, text.vocab) == pytest.approx(result.test)


def test_the_large_run_works_end_to_end_for_a_step(monkeypatch):
    """COURSE_RUN=large (a GPU: 4 layers, 64-character windows, 6,000 steps) is never run by
    the build; its chapter model pretrains, scores the held-out text, fine-tunes and runs DPO
    here for a step each on the CPU, so the path a GPU takes is known to work end to end."""
    from course_utils.experiments import ch13_posttraining

    monkeypatch.setenv("COURSE_CACHE", "off")
    train, held = particle_nouns(korean_char_text().vocab)  # a few of each: one step is the point
    monkeypatch.setattr(ch13_posttraining, "particle_nouns", lambda vocab: (train[:64], held[:16]))
    large = size_sweep("large")
    assert large[-1].context == 64 and large[-1].num_layers == 4
    assert large[-1].d_model > size_sweep("small")[-1].d_model
    step = replace(large[-1], steps=2, warmup_steps=1)
    pretrained = pretrain_char_gpt(step, show_progress=False)
    assert pretrained.model.config.max_len == 64 and math.isfinite(pretrained.perplexity)
    sft = finetune_particles(pretrained, "pretrained", "lora", SFTConfig(steps=1))
    assert 0 <= sft.test <= 1 and len(sft.losses) == 1
    dpo = dpo_particles(pretrained, DPOConfig(steps=1))
    assert dpo.losses[0] == pytest.approx(math.log(2), abs=1e-6)
    assert math.isfinite(dpo.perplexity_after)
