"""13장's DPO loss against an independent implementation: trl's ``DPOTrainer``.

trl (Hugging Face's post-training library) tokenizes the preference pairs, collates
them, runs the policy and the reference model and computes DPO's sigmoid loss
with its own code. Here it does so on ``GPT2LMHeadModel``s carrying the course
GPT's weights (a policy and a different reference), with a ``tokenizers``
tokenizer of the course's character vocabulary, and its loss must equal
``dpo_loss(sequence_logprobs(policy, …), …)`` on ``encode_pairs``' sequences.

trl appends the tokenizer's end-of-sequence token to plain-text completions,
which ``encode_pairs`` does not score (its response is the particle alone). The
pairs are therefore given in trl's conversational form with a chat template that
writes each message's text and nothing else: trl adds no token to those, and the
test checks that the ids trl scores are ``encode_pairs``' ids.
"""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.experiments.ch13_gpt import korean_char_text
from course_utils.experiments.ch13_posttraining import (
    PARTICLES,
    ParticleItem,
    dpo_loss,
    encode_pairs,
    sequence_logprobs,
)
from course_utils.gpt import GPT, GPTConfig, gpt2_config, load_gpt2_weights
from course_utils.vocab import Vocab

try:
    import trl
    from datasets import Dataset
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import GPT2LMHeadModel, PreTrainedTokenizerFast
except ImportError as error:  # trl is in requirements.txt: a missing one is an error, not a skip
    raise ImportError(
        f"tests/test_dpo_trl.py needs trl (and datasets, tokenizers, transformers): {error}. "
        "Install them with `pip install -r requirements.txt`."
    ) from error

#: Nouns ending in a consonant (책, 물: ㄹ takes 로) and in a vowel (사과, 학교).
NOUNS = ("사과", "책", "학교", "물")
#: 이/가, 을/를 and (으)로, whose 으로 and 로 differ in length (padding within a pair).
FORMS = (PARTICLES[1], PARTICLES[2], PARTICLES[4])
#: A chat template that writes the messages' text and nothing else (no roles, no end token).
PLAIN_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"


def char_tokenizer(vocab: Vocab) -> PreTrainedTokenizerFast:
    """A Hugging Face tokenizer with ``vocab``'s ids, one token per character."""
    word_level = models.WordLevel(
        {token: vocab[token] for token in vocab.tokens}, unk_token=vocab.unk_token
    )
    tokenizer = Tokenizer(word_level)
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token=vocab.unk_token,
        pad_token=vocab.unk_token,  # encode_pairs pads with <unk> too
        chat_template=PLAIN_TEMPLATE,
    )


def twin_models(config: GPTConfig, seed: int) -> tuple[GPT, GPT2LMHeadModel]:
    """A random GPT2LMHeadModel and the course GPT with its weights, both float64."""
    torch.manual_seed(seed)
    hf_config = gpt2_config(config)
    hf_config.initializer_range = 0.5  # GPT-2's 0.02 makes every sequence about equally likely
    theirs = GPT2LMHeadModel(hf_config).double().eval()
    ours = GPT(config).double().eval()
    load_gpt2_weights(ours, theirs)
    return ours, theirs


def course_rows(inputs: torch.Tensor, targets: torch.Tensor) -> list[tuple[list[int], list[int]]]:
    """Each sequence of encode_pairs' (inputs, targets): (its ids, its scored ids)."""
    rows = []
    for x, y in zip(inputs, targets, strict=True):
        scored = (y != -100).nonzero().flatten()
        last = int(scored[-1])
        rows.append(([*x[: last + 1].tolist(), int(y[last])], y[scored].tolist()))
    return rows


# trl 1.16 asks the model whether gradient checkpointing is on by transformers 5's deprecated name
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_dpo_loss_equals_trls_dpo_trainer(tmp_path):
    vocab = korean_char_text().vocab
    config = GPTConfig(vocab_size=len(vocab), max_len=16, d_model=16, nhead=2, num_layers=2)
    policy, hf_policy = twin_models(config, seed=11)
    reference, hf_reference = twin_models(config, seed=12)  # π_ref ≠ π: the loss is not log 2
    items = [ParticleItem(noun, forms) for noun in NOUNS for forms in FORMS]
    beta = 0.3

    pairs = Dataset.from_list([
        {
            "prompt": [{"role": "user", "content": "\n" + item.noun}],
            "chosen": [{"role": "assistant", "content": item.right}],
            "rejected": [{"role": "assistant", "content": item.wrong}],
        }
        for item in items
    ])  # fmt: skip
    args = trl.DPOConfig(
        output_dir=str(tmp_path),
        report_to=[],
        beta=beta,
        loss_type="sigmoid",
        bf16=False,  # trl's default is bf16; the models are float64
        activation_checkpointing=False,
        use_cpu=True,
        per_device_train_batch_size=len(items),
    )
    trainer = trl.DPOTrainer(
        model=hf_policy,
        ref_model=hf_reference,
        args=args,
        train_dataset=pairs,
        processing_class=char_tokenizer(vocab),
    )
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(len(items))])

    # trl scores the same characters as encode_pairs: "\n" + noun, then the particle
    ci, ct, ri, rt = encode_pairs(items, vocab)
    trl_rows = [
        (ids[real.bool()].tolist(), ids[scored.bool()].tolist())
        for ids, real, scored in zip(
            batch["input_ids"], batch["attention_mask"], batch["completion_mask"], strict=True
        )
    ]
    assert trl_rows == course_rows(ci, ct) + course_rows(ri, rt)
    texts = ["".join(vocab.decode(ids)) for ids, _ in trl_rows]
    assert texts == [f"\n{item.noun}{item.right}" for item in items] + [
        f"\n{item.noun}{item.wrong}" for item in items
    ]

    with torch.no_grad():
        trl_loss = trainer.compute_loss(trainer.model, trainer._prepare_inputs(batch))
        ours = dpo_loss(
            sequence_logprobs(policy, ci, ct),
            sequence_logprobs(policy, ri, rt),
            sequence_logprobs(reference, ci, ct),
            sequence_logprobs(reference, ri, rt),
            beta,
        )
    assert float(ours) > math.log(2) + 0.1  # π ≠ π_ref: the loss is far from its start, log 2
    # trl's fused LM head (trl/kernels/chunked_logprob.py) folds each tile of logits in float32,
    # whatever the model's dtype: its log-probabilities (≈ −10) carry float32's rounding, ~1e-6.
    assert float(trl_loss) == pytest.approx(float(ours), abs=1e-6)
