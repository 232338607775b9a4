"""9장 Seq2seq: 인코더-디코더 — the model, its decoding and its evaluation.

The model (Cho et al., 2014; Sutskever et al., 2014) reads the source with a
GRU encoder (``torch.nn.GRU``: 8장 proved our own equal to it) and squeezes it
into one context vector; the decoder generates the target one token at a time
from that vector and the tokens before, so that
``log P(y | x) = sum_t log P(y_t | y_<t, x)``. Every encoder-decoder of 9장 and
10장 speaks one small protocol, so that training and every decoder below
(greedy, beam search with length normalisation, sampling) work for all of them:

- ``encode(source, source_lengths) -> Memory`` reads the source once;
- ``init_state(memory) -> State`` gives the decoder's first state;
- ``step(tokens, state, memory) -> (logits, state, weights)`` predicts the
  next token from the previous one; ``weights`` are the attention weights
  over the source (``None`` without attention).

The vocabularies start with :data:`course_utils.vocab.SEQ_SPECIALS`, so
``<pad>`` is 0, ``<unk>`` 1, ``<sos>`` 2 and ``<eos>`` 3.

BLEU is :mod:`course_utils.bleu`; the chapter's experiments (data, configurations,
trained models kept in :mod:`course_utils.runs`' cache) are in
:mod:`course_utils.experiments.ch09_seq2seq`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from course_utils.bleu import (
    corpus_bleu,
    exact_match,
)
from course_utils.checks import check_int, check_tensor
from course_utils.device import (
    get_device,
    seed_everything,
)
from course_utils.train import (
    History,
    fit,
    inverse_sqrt_schedule,
    smoothed_cross_entropy,
    warmup_schedule,
)
from course_utils.vocab import (
    SEQ_SPECIALS,
    Vocab,
)

__all__ = [
    "EOS",
    "PAD",
    "SOS",
    "UNK",
    "Batch",
    "Decoded",
    "Encoder",
    "EncoderDecoder",
    "Example",
    "Memory",
    "Seq2Seq",
    "State",
    "Tokens",
    "TrainConfig",
    "TranslationScores",
    "allowed_log_probs",
    "beam_search",
    "check_source",
    "check_step_tokens",
    "check_vocab_size",
    "decode_one_token_at_a_time",
    "encode_pair",
    "greedy_decode",
    "make_batch",
    "make_batches",
    "normalized_score",
    "sample_decode",
    "score_translations",
    "sequence_loss",
    "train_seq2seq",
    "translate",
]

Tokens = Sequence[str]


# ---------------------------------------------------------------------------
# Data: token ids, padding and batches
# ---------------------------------------------------------------------------

PAD, UNK, SOS, EOS = range(4)  # the ids of SEQ_SPECIALS in every vocabulary


class Batch(NamedTuple):
    """A padded batch of (source, target) id sequences; ``<pad>`` (0) fills the tails."""

    source: torch.Tensor  # (B, S) source ids
    source_lengths: torch.Tensor  # (B,) real source lengths, on the CPU (packing wants them there)
    target_in: torch.Tensor  # (B, T) decoder input: <sos> y_1 … y_n
    target_out: torch.Tensor  # (B, T) what it must predict: y_1 … y_n <eos>

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            self.source.to(device),
            self.source_lengths,
            self.target_in.to(device),
            self.target_out.to(device),
        )


Example = tuple[Sequence[int], Sequence[int]]  # (source ids, target ids ending in <eos>)


def _check_ids(ids: object, name: str) -> Sequence[int]:
    if isinstance(ids, torch.Tensor):
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"{name} must be a sequence of int token ids, got {type(ids).__name__}")
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"{name} must hold int token ids, found {type(i).__name__}: {i!r}")
    return ids


def encode_pair(
    source: Sequence[str], target: Sequence[str], source_vocab: Vocab, target_vocab: Vocab
) -> tuple[list[int], list[int]]:
    """Token lists → id lists; the target gets its closing ``<eos>``."""
    for vocab, name in ((source_vocab, "source_vocab"), (target_vocab, "target_vocab")):
        if tuple(vocab.specials[:4]) != SEQ_SPECIALS:
            raise ValueError(
                f"{name} must start with {SEQ_SPECIALS} (ids 0-3), got {tuple(vocab.specials)}"
            )
    return source_vocab.encode(list(source)), [*target_vocab.encode(list(target)), EOS]


def make_batch(examples: Sequence[Example]) -> Batch:
    """Pad a list of (source ids, target ids) into a :class:`Batch`.

    Every source must be non-empty and every target must end with ``<eos>``
    (and hold no ``<pad>`` or ``<sos>``): the decoder learns to stop only from
    that final ``<eos>``.
    """
    if isinstance(examples, (str, bytes)) or not isinstance(examples, Sequence) or not examples:
        raise ValueError("examples must be a non-empty list of (source ids, target ids) pairs")
    sources, targets = [], []
    for i, example in enumerate(examples):
        if not isinstance(example, (tuple, list)) or len(example) != 2:
            raise TypeError(f"examples[{i}] must be a (source ids, target ids) pair")
        source = _check_ids(example[0], f"examples[{i}] source")
        target = _check_ids(example[1], f"examples[{i}] target")
        if not source:
            raise ValueError(f"examples[{i}] has an empty source: there is nothing to encode")
        if PAD in source:
            raise ValueError(f"examples[{i}] source contains <pad> (id {PAD}) before its end")
        if not target or target[-1] != EOS:
            raise ValueError(
                f"examples[{i}] target must end with <eos> (id {EOS}), got {list(target)[-3:]}"
            )
        if PAD in target or SOS in target or EOS in target[:-1]:
            raise ValueError(
                f"examples[{i}] target may hold <pad> ({PAD}), <sos> ({SOS}) or <eos> ({EOS}) "
                f"only as its final <eos>, got {list(target)}"
            )
        sources.append(torch.tensor(source, dtype=torch.long))
        targets.append(torch.tensor(target, dtype=torch.long))
    source_lengths = torch.tensor([len(s) for s in sources])
    source_batch = pad_sequence(sources, batch_first=True, padding_value=PAD)  # (B, S)
    target_out = pad_sequence(targets, batch_first=True, padding_value=PAD)  # (B, T)
    target_in = torch.cat(  # shift right: <sos> y_1 … y_n; pads stay pads
        [torch.full((len(targets), 1), SOS), target_out[:, :-1]], dim=1
    ).masked_fill(target_out == PAD, PAD)
    return Batch(source_batch, source_lengths, target_in, target_out)


def make_batches(
    examples: Sequence[Example], batch_size: int, shuffle: bool = False, seed: int = 0
) -> list[Batch]:
    """Cut ``examples`` into padded batches of ``batch_size`` (the last may be smaller).

    With ``shuffle`` the order comes from ``seed``; examples of similar source
    length are then grouped (sorted within windows of 50 batches), so batches
    carry little padding.
    """
    batch_size = check_int(batch_size, "batch_size")
    order = list(range(len(examples)))
    if shuffle:
        random.Random(seed).shuffle(order)
        window = 50 * batch_size
        order = [
            i
            for start in range(0, len(order), window)
            for i in sorted(order[start : start + window], key=lambda j: len(examples[j][0]))
        ]
    batches = [
        make_batch([examples[i] for i in order[start : start + batch_size]])
        for start in range(0, len(order), batch_size)
    ]
    if shuffle:
        random.Random(seed + 1).shuffle(batches)
    return batches


def sequence_loss(
    logits: torch.Tensor, target_out: torch.Tensor, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean cross-entropy over the real target tokens; ``<pad>`` positions are ignored.

    With ``label_smoothing`` ε > 0 the target is (1 − ε)·one-hot + ε/V (11장).
    """
    _check_logits_and_targets(logits, target_out)  # (B, T, V) floats, (B, T) ids in 0 … V − 1
    if not bool((target_out != PAD).any()):
        raise ValueError("every target position is <pad>: there is no token to score")
    if label_smoothing:
        return smoothed_cross_entropy(
            logits.flatten(0, 1), target_out.flatten(), label_smoothing, ignore_index=PAD
        )
    return F.cross_entropy(logits.flatten(0, 1), target_out.flatten(), ignore_index=PAD)


def _check_logits_and_targets(logits: torch.Tensor, target_out: torch.Tensor) -> None:
    B, T, V = check_tensor(logits, "logits", "B, T, V")
    check_tensor(target_out, "target_out", "B, T", "int64", B=B, T=T)
    _check_vocab_ids(target_out, V, "target_out")


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


class Memory(NamedTuple):
    """What the encoder hands the decoder: every state, the pads, and a summary."""

    outputs: torch.Tensor  # (B, S, D·H) the encoder state at every source position
    padding_mask: torch.Tensor  # (B, S) True at <pad> positions, as key_padding_mask in torch
    context: torch.Tensor  # (B, D·H) the last states of both directions: the fixed context


State = tuple[torch.Tensor, ...]  # decoder state: tensors with the batch first


_INTEGER_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def check_source(source: torch.Tensor, source_lengths: torch.Tensor, vocab_size: int) -> None:
    if not isinstance(source, torch.Tensor) or source.dim() != 2 or source.dtype != torch.long:
        raise ValueError(
            "source must be a (B, S) tensor of int64 token ids, got "
            + (
                f"{tuple(source.shape)} {source.dtype}"
                if isinstance(source, torch.Tensor)
                else type(source).__name__
            )
        )
    if not isinstance(source_lengths, torch.Tensor) or source_lengths.shape != source.shape[:1]:
        raise ValueError(
            f"source_lengths must be a (B,) tensor with B = {source.shape[0]}, got "
            + (
                str(tuple(source_lengths.shape))
                if isinstance(source_lengths, torch.Tensor)
                else type(source_lengths).__name__
            )
        )
    if source_lengths.dtype not in _INTEGER_DTYPES:
        raise TypeError(
            f"source_lengths must be an integer tensor of token counts, got {source_lengths.dtype}"
        )
    if source.numel() == 0 or bool((source_lengths < 1).any()):
        raise ValueError(
            "every source must hold at least one token: an empty source has nothing to encode"
        )
    if bool((source_lengths > source.shape[1]).any()):
        raise ValueError(f"source_lengths exceed the padded length S = {source.shape[1]}")
    _check_vocab_ids(source, vocab_size, "source")
    positions = torch.arange(source.shape[1], device=source.device)
    if not torch.equal(source == PAD, positions >= source_lengths.to(source.device)[:, None]):
        raise ValueError(
            "source_lengths must agree with the <pad> positions: each source's "
            "source_lengths[b] tokens first, then only <pad>, and no <pad> inside a source"
        )


def _check_vocab_ids(ids: torch.Tensor, vocab_size: int, name: str) -> None:
    if ids.numel() == 0:
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"{name} holds token id {bad}, outside the vocabulary 0..{vocab_size - 1}")


def check_vocab_size(vocab_size: object, name: str) -> int:
    """A translation model's vocabulary size: at least the ``SEQ_SPECIALS`` (ids 0–3)."""
    specials = ", ".join(SEQ_SPECIALS)
    return check_int(vocab_size, name, len(SEQ_SPECIALS), f"the vocabulary starts with {specials}")


def check_step_tokens(tokens: torch.Tensor, memory: Memory, vocab_size: int) -> None:
    """``step``'s ``tokens``: a (B,) int64 tensor of target ids, B as in ``memory``."""
    check_tensor(tokens, "tokens", "B", "int64", B=memory.outputs.shape[0])
    _check_vocab_ids(tokens, vocab_size, "tokens")


class Encoder(nn.Module):
    """Embedding → GRU over the packed source (so pads never enter the states)."""

    def __init__(
        self, vocab_size: int, embedding_size: int, hidden_size: int, bidirectional: bool = False
    ) -> None:
        super().__init__()
        self.vocab_size = check_vocab_size(vocab_size, "vocab_size")
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=PAD)
        self.rnn = nn.GRU(
            embedding_size, hidden_size, batch_first=True, bidirectional=bidirectional
        )
        self.output_size = hidden_size * (2 if bidirectional else 1)

    def forward(self, source: torch.Tensor, source_lengths: torch.Tensor) -> Memory:
        check_source(source, source_lengths, self.vocab_size)
        embedded = self.embedding(source)  # (B, S, E)
        packed = pack_padded_sequence(
            embedded, source_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        packed_outputs, h_n = self.rnn(packed)  # h_n: (D, B, H)
        outputs, _ = pad_packed_sequence(
            packed_outputs, batch_first=True, total_length=source.shape[1]
        )  # (B, S, D·H), zeros at pads
        context = torch.cat(list(h_n), dim=-1)  # (B, D·H): forward's last state [; backward's]
        return Memory(outputs, source == PAD, context)


class EncoderDecoder(nn.Module):
    """The protocol every model of 9장 and 10장 follows (see the module docstring).

    :meth:`forward` runs the decoder over a whole target for training: with
    ``teacher_forcing_ratio = 1`` each step reads the true previous token; with
    less, each sentence at each step reads its true previous token with that
    probability and the model's own greedy guess otherwise (Bengio et al.,
    2015).
    """

    target_vocab_size: int
    encoder: Encoder

    def encode(self, source: torch.Tensor, source_lengths: torch.Tensor) -> Memory:
        return self.encoder(source, source_lengths)

    def init_state(self, memory: Memory) -> State:
        raise NotImplementedError

    def step(
        self, tokens: torch.Tensor, state: State, memory: Memory
    ) -> tuple[torch.Tensor, State, torch.Tensor | None]:
        raise NotImplementedError

    def teacher_forced(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        """Logits (B, T, V) reading the true previous tokens; models may do it faster."""
        return self.run_steps(target_in, memory, 1.0, None)

    def run_steps(
        self,
        target_in: torch.Tensor,
        memory: Memory,
        teacher_forcing_ratio: float,
        generator: torch.Generator | None,
    ) -> torch.Tensor:
        """The decoder one step at a time; logits (B, T, V)."""
        state = self.init_state(memory)
        tokens = target_in[:, 0]  # (B,) <sos>
        logits = []
        for t in range(target_in.shape[1]):
            step_logits, state, _ = self.step(tokens, state, memory)  # (B, V)
            logits.append(step_logits)
            if t + 1 < target_in.shape[1]:
                truth = target_in[:, t + 1]
                if teacher_forcing_ratio >= 1.0:
                    tokens = truth
                else:
                    guess = step_logits.detach().argmax(-1)
                    coin = torch.rand(truth.shape, generator=generator).to(truth.device)
                    tokens = torch.where(coin < teacher_forcing_ratio, truth, guess)
        return torch.stack(logits, dim=1)  # (B, T, V)

    def forward(
        self,
        source: torch.Tensor,
        source_lengths: torch.Tensor,
        target_in: torch.Tensor,
        teacher_forcing_ratio: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        if not 0.0 <= teacher_forcing_ratio <= 1.0:
            raise ValueError(
                f"teacher_forcing_ratio must be in [0, 1], got {teacher_forcing_ratio}"
            )
        memory = self.encode(source, source_lengths)
        check_tensor(target_in, "target_in", "B, T", "int64", B=source.shape[0])
        _check_vocab_ids(target_in, self.target_vocab_size, "target_in")
        if teacher_forcing_ratio == 1.0:
            return self.teacher_forced(target_in, memory)
        return self.run_steps(target_in, memory, teacher_forcing_ratio, generator)


class Seq2Seq(EncoderDecoder):
    """GRU encoder → one context vector c → GRU decoder that reads [y_(t-1); c] at every step.

    The decoder starts from s_0 = c (Sutskever et al., 2014) and also sees c at
    every step (Cho et al., 2014), so nothing but c carries the source.
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 128,
    ) -> None:
        super().__init__()
        check_vocab_size(source_vocab_size, "source_vocab_size")
        self.target_vocab_size = check_vocab_size(target_vocab_size, "target_vocab_size")
        self.encoder = Encoder(source_vocab_size, embedding_size, hidden_size)
        self.embedding = nn.Embedding(target_vocab_size, embedding_size, padding_idx=PAD)
        self.rnn = nn.GRU(embedding_size + hidden_size, hidden_size, batch_first=True)
        self.output = nn.Linear(hidden_size, target_vocab_size)

    def init_state(self, memory: Memory) -> State:
        return (memory.context,)  # s_0 = c: (B, H)

    def step(
        self, tokens: torch.Tensor, state: State, memory: Memory
    ) -> tuple[torch.Tensor, State, None]:
        check_step_tokens(tokens, memory, self.target_vocab_size)
        x = torch.cat([self.embedding(tokens), memory.context], dim=-1)  # (B, E + H)
        _, h = self.rnn(x.unsqueeze(1), state[0].unsqueeze(0))  # h: (1, B, H)
        return self.output(h[0]), (h[0],), None  # logits (B, V)

    def teacher_forced(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        # Every input is known in advance, so one call runs the GRU over all steps.
        T = target_in.shape[1]
        context = memory.context.unsqueeze(1).expand(-1, T, -1)  # (B, T, H)
        x = torch.cat([self.embedding(target_in), context], dim=-1)  # (B, T, E + H)
        outputs, _ = self.rnn(x, memory.context.unsqueeze(0))  # (B, T, H)
        return self.output(outputs)  # (B, T, V)


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Decoded:
    """Decoded sentences: ids without ``<eos>``, log-probabilities, attention rows."""

    tokens: list[list[int]]  # sentence i's ids, up to but not including <eos>
    log_probs: list[float]  # log P(y | x) of each output, <eos> included when it came
    finished: list[bool]  # whether <eos> came before max_len
    attention: list[torch.Tensor] | None = None  # (T_i, S_i) per sentence, greedy only


def allowed_log_probs(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Log-softmax over the tokens a decoder may output: never <pad> or <sos>."""
    logits = logits.float() / temperature
    logits[:, PAD] = -math.inf
    logits[:, SOS] = -math.inf
    return torch.log_softmax(logits, dim=-1)  # (B, V)


def _select(state: State, index: torch.Tensor) -> State:
    return tuple(s.index_select(0, index) for s in state)


def _check_max_len(max_len: object) -> int:
    return check_int(max_len, "max_len")


def _finish(
    steps: list[torch.Tensor], log_prob: torch.Tensor, lengths: torch.Tensor
) -> tuple[list[list[int]], list[float], list[bool]]:
    ids = torch.stack(steps, dim=1).tolist() if steps else [[] for _ in range(len(lengths))]
    tokens, finished = [], []
    for row in ids:
        if EOS in row:
            tokens.append(row[: row.index(EOS)])
            finished.append(True)
        else:
            tokens.append(row)
            finished.append(False)
    return tokens, log_prob.tolist(), finished


def decode_one_token_at_a_time(
    model: EncoderDecoder,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    max_len: int,
    choose: Callable[[torch.Tensor], torch.Tensor],
    temperature: float = 1.0,
) -> Decoded:
    """Run the decoder on its own outputs; ``choose`` picks each next token from log-probabilities.

    ``choose`` maps (B, V) log-probabilities to (B,) token ids: the argmax for
    greedy decoding, a draw for sampling. A sentence stops at ``<eos>``; all stop at ``max_len``.
    """
    max_len = _check_max_len(max_len)
    model.eval()
    memory = model.encode(source, source_lengths)
    state = model.init_state(memory)
    B = source.shape[0]
    tokens = torch.full((B,), SOS, device=source.device)
    finished = torch.zeros(B, dtype=torch.bool, device=source.device)
    total = torch.zeros(B, device=source.device)
    steps, weights = [], []
    for _ in range(max_len):
        logits, state, step_weights = model.step(tokens, state, memory)
        log_probs = allowed_log_probs(logits, temperature)  # (B, V)
        tokens = choose(log_probs)  # (B,)
        chosen = log_probs.gather(1, tokens.unsqueeze(1)).squeeze(1)  # (B,)
        total += chosen.masked_fill(finished, 0.0)
        tokens = tokens.masked_fill(finished, PAD)  # finished sentences only pad
        steps.append(tokens)
        if step_weights is not None:
            weights.append(step_weights)  # (B, S)
        finished = finished | (tokens == EOS)
        if bool(finished.all()):
            break
    out, log_probs_list, done = _finish(steps, total, source_lengths)
    attention = None
    if weights:
        stacked = torch.stack(weights, dim=1).cpu()  # (B, steps, S)
        attention = [
            stacked[i, : len(out[i]) + done[i], : int(source_lengths[i])] for i in range(B)
        ]
    return Decoded(out, log_probs_list, done, attention)


@torch.no_grad()
def greedy_decode(
    model: EncoderDecoder, source: torch.Tensor, source_lengths: torch.Tensor, max_len: int = 100
) -> Decoded:
    """The most probable next token at every step, for a batch; stops at ``<eos>``/``max_len``."""
    return decode_one_token_at_a_time(
        model, source, source_lengths, max_len, lambda log_probs: log_probs.argmax(dim=-1)
    )


def _check_length_penalty(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 2:
        raise ValueError(f"length_penalty must be a number in [0, 2], got {alpha!r}")
    return float(alpha)


def normalized_score(log_prob: float, length: int, length_penalty: float) -> float:
    """log P(y | x) / |y|^α: α = 0 keeps the raw sum, α = 1 takes the mean per token."""
    if length < 1:
        raise ValueError(f"length must be >= 1 (|y| counts <eos>), got {length}")
    return log_prob / length**length_penalty


@torch.no_grad()
def beam_search(
    model: EncoderDecoder,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    beam_size: int = 5,
    max_len: int = 100,
    length_penalty: float = 1.0,
) -> Decoded:
    """Beam search for a batch of sentences at once (B sentences × K beams in one tensor).

    Each step extends every live beam by every token and keeps the K best
    partial sums of log-probabilities; a beam that emitted ``<eos>`` stays as one
    candidate with its score unchanged. When every beam has finished (or at
    ``max_len``), the output is the beam with the best
    :func:`normalized_score`, where |y| counts the ``<eos>``.
    """
    K = check_int(beam_size, "beam_size")
    max_len = _check_max_len(max_len)
    alpha = _check_length_penalty(length_penalty)
    model.eval()
    memory = model.encode(source, source_lengths)
    B, device = source.shape[0], source.device
    flat = torch.arange(B, device=device).repeat_interleave(K)  # (B·K,) sentence of each beam
    memory = Memory(*(m.index_select(0, flat) for m in memory))
    state = model.init_state(memory)
    tokens = torch.full((B * K,), SOS, device=device)
    scores = torch.full((B, K), -math.inf, device=device)
    scores[:, 0] = 0.0  # one live beam at the start; the others join as copies would repeat it
    finished = torch.zeros(B, K, dtype=torch.bool, device=device)
    lengths = torch.zeros(B, K, dtype=torch.long, device=device)
    history = torch.zeros(B, K, 0, dtype=torch.long, device=device)
    V = model.target_vocab_size
    stay = torch.full((V,), -math.inf, device=device)
    stay[PAD] = 0.0  # a finished beam's only continuation: <pad>, at no cost
    for _ in range(max_len):
        logits, state, _ = model.step(tokens, state, memory)
        log_probs = allowed_log_probs(logits).view(B, K, V)
        log_probs = torch.where(finished.unsqueeze(-1), stay, log_probs)
        candidates = scores.unsqueeze(-1) + log_probs  # (B, K, V)
        scores, best = candidates.view(B, K * V).topk(K, dim=-1)  # (B, K)
        parent, token = best // V, best % V  # (B, K) each
        lengths = lengths.gather(1, parent) + (~finished.gather(1, parent)).long()
        finished = finished.gather(1, parent) | (token == EOS)
        history = torch.cat(
            [history.gather(1, parent.unsqueeze(-1).expand_as(history)), token.unsqueeze(-1)], -1
        )  # (B, K, t)
        rows = (parent + torch.arange(B, device=device).unsqueeze(1) * K).view(-1)  # (B·K,)
        state = _select(state, rows)
        tokens = token.view(-1)
        if bool(finished.all()):
            break
    normalized = scores / lengths.clamp(min=1).float() ** alpha  # (B, K); -inf stays -inf
    choice = normalized.argmax(dim=-1)  # (B,)
    index = torch.arange(B, device=device)
    chosen = history[index, choice]  # (B, t)
    out, log_prob, done = _finish(list(chosen.T), scores[index, choice], source_lengths)
    return Decoded(out, log_prob, done)


@torch.no_grad()
def sample_decode(
    model: EncoderDecoder,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    max_len: int = 100,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Decoded:
    """Draw each next token from softmax(logits / temperature); stops at ``<eos>``/``max_len``."""
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not temperature > 0
    ):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")

    def draw(log_probs: torch.Tensor) -> torch.Tensor:
        return torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(1)  # (B,)

    return decode_one_token_at_a_time(model, source, source_lengths, max_len, draw, temperature)


# ---------------------------------------------------------------------------
# Training and translating
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """How a translation model is trained (the same for every model of 9장 and 10장)."""

    epochs: int = 10
    batch_size: int = 64
    learning_rate: float = 3e-3  # Adam
    clip_norm: float = 1.0  # gradient norm clipping (7장)
    teacher_forcing_ratio: float = 1.0  # share of steps that read the true previous token
    seed: int = 0
    warmup_steps: int = 0  # the learning rate grows linearly over these first steps
    inverse_sqrt: bool = False  # then falls as 1/√step: the Transformer paper's schedule (11장)
    adam_beta2: float = 0.999  # Adam's β₂ (the Transformer paper: 0.98)
    label_smoothing: float = 0.0  # ε of the smoothed target (the Transformer paper: 0.1)


def train_seq2seq(
    model: EncoderDecoder,
    examples: Sequence[Example],
    config: TrainConfig = TrainConfig(),
    device: str | torch.device | None = None,
    show_progress: bool = True,
) -> History:
    """Train ``model`` on (source ids, target ids) examples with Adam and the masked loss."""
    if not examples:
        raise ValueError("examples is empty: nothing to train on")
    target = get_device() if device is None else torch.device(device)
    generator = torch.Generator().manual_seed(config.seed)
    epoch = 0

    def batches() -> list[Batch]:
        nonlocal epoch
        epoch += 1
        return make_batches(examples, config.batch_size, shuffle=True, seed=config.seed + epoch)

    def loss_fn(model: nn.Module, batch: Batch) -> torch.Tensor:
        batch = batch.to(target)
        logits = model(
            batch.source,
            batch.source_lengths,
            batch.target_in,
            config.teacher_forcing_ratio,
            generator,
        )  # (B, T, V)
        return sequence_loss(logits, batch.target_out, config.label_smoothing)

    seed_everything(config.seed)
    model.to(target)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config.learning_rate, betas=(0.9, config.adam_beta2),
        foreach=True,  # one call per step for all parameters (the same numbers as the loop)
    )  # fmt: skip
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
    if config.inverse_sqrt:
        scheduler = inverse_sqrt_schedule(optimizer, config.warmup_steps)
    elif config.warmup_steps > 0:
        scheduler = warmup_schedule(optimizer, config.warmup_steps)
    return fit(
        model,
        batches,
        loss_fn,
        optimizer,
        config.epochs,
        clip_norm=config.clip_norm,
        device=target,
        seed=None,
        show_progress=show_progress,
        scheduler=scheduler,
    )


def translate(
    model: EncoderDecoder,
    sources: Sequence[Sequence[str]],
    source_vocab: Vocab,
    target_vocab: Vocab,
    method: str = "greedy",
    beam_size: int = 5,
    length_penalty: float = 1.0,
    batch_size: int = 256,
) -> list[list[str]]:
    """Translate token lists with ``"greedy"`` decoding or ``"beam"`` search; token lists back.

    Decoding stops at ``<eos>`` or after ``2·S + 10`` tokens for the longest
    source S of a batch.
    """
    if method not in ("greedy", "beam"):
        raise ValueError(f"method must be 'greedy' or 'beam', got {method!r}")
    device = next(model.parameters()).device
    outputs: list[list[str]] = []
    for start in range(0, len(sources), batch_size):
        chunk = [list(s) for s in sources[start : start + batch_size]]
        batch = make_batch([(source_vocab.encode(s), [EOS]) for s in chunk])
        max_len = 2 * int(batch.source_lengths.max()) + 10
        args = (
            model,
            batch.source.to(device),
            batch.source_lengths,
        )
        if method == "greedy":
            decoded = greedy_decode(*args, max_len=max_len)
        else:
            decoded = beam_search(
                *args, beam_size=beam_size, max_len=max_len, length_penalty=length_penalty
            )
        outputs.extend(target_vocab.decode(ids) for ids in decoded.tokens)
    return outputs


@dataclass(frozen=True)
class TranslationScores:
    """Corpus BLEU (ours), chrF (sacrebleu) and exact match of one set of translations."""

    bleu: float  # 0–100
    chrf: float  # 0–100
    exact_match: float  # 0–1
    sentences: int


def score_translations(
    hypotheses: Sequence[Tokens], references: Sequence[Tokens]
) -> TranslationScores:
    """BLEU, chrF and exact match with one reference per sentence."""
    import sacrebleu

    bleu = corpus_bleu(list(hypotheses), [[list(r)] for r in references]).score
    chrf = sacrebleu.corpus_chrf(
        [" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]]
    )
    return TranslationScores(
        bleu,
        float(chrf.score),
        exact_match(list(hypotheses), [list(r) for r in references]),
        len(hypotheses),
    )
