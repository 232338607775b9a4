"""10장 어텐션: Bahdanau's and Luong's attention, the models built on them, and alignments.

9장's encoder-decoder hands the decoder one fixed vector. Attention lets the
decoder look back at every encoder state at every step: it scores each source
position against the decoder's state, turns the scores into weights with a
softmax over the real (not padded) positions, and reads the weighted sum of
the encoder states, the context vector. Every attention function here returns
its weights beside its output, so the chapter can plot them.

Masks follow ``torch.nn.MultiheadAttention``: ``key_padding_mask`` is True at
the positions to ignore, and a masked position gets −∞ *added* to its score
before the softmax, so its weight is exactly zero and the rest still sum to 1.

The models speak 9장's protocol (:class:`course_utils.seq2seq.EncoderDecoder`),
so 9장's training loop and decoders (greedy, beam search) work unchanged. The
chapter's experiments are in :mod:`course_utils.experiments.ch10_attention`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from course_utils.checks import check_int, check_tensor
from course_utils.seq2seq import (
    Encoder,
    EncoderDecoder,
    Memory,
    State,
    check_step_tokens,
    check_vocab_size,
    make_batch,
)

__all__ = [
    "LUONG_SCORES",
    "AdditiveAttention",
    "BahdanauSeq2Seq",
    "LuongAttention",
    "LuongSeq2Seq",
    "alignment_accuracy",
    "dot_product_attention",
    "forced_attention",
    "masked_softmax",
]

LUONG_SCORES = ("dot", "general", "concat")


def _check_attention_inputs(
    query: torch.Tensor, keys: torch.Tensor, key_padding_mask: torch.Tensor | None
) -> None:
    if not isinstance(keys, torch.Tensor) or keys.dim() != 3:
        raise ValueError(
            "keys must be (B, S, H_k), got "
            f"{tuple(getattr(keys, 'shape', ())) or type(keys).__name__}"
        )
    B, S = keys.shape[:2]
    _check_some_keys(S, "keys")
    if not isinstance(query, torch.Tensor) or query.dim() != 3 or query.shape[0] != B:
        raise ValueError(
            f"query must be (B, T, H_q) with B = {B} as in keys, "
            f"got {tuple(getattr(query, 'shape', ())) or type(query).__name__}"
        )
    _check_key_padding_mask(key_padding_mask, B, S)


def _check_some_keys(S: int, name: str) -> None:
    if S == 0:
        raise ValueError(
            f"{name} must hold at least one key position (S >= 1): with no keys there is "
            "nothing to attend to"
        )


def _check_scores(scores: torch.Tensor, key_padding_mask: torch.Tensor | None) -> None:
    if not isinstance(scores, torch.Tensor) or scores.dim() != 3:
        got = tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
        raise ValueError(f"scores must be (B, T, S), got {got}")
    _check_some_keys(scores.shape[2], "scores")
    _check_key_padding_mask(key_padding_mask, scores.shape[0], scores.shape[2])


def _check_key_padding_mask(key_padding_mask: torch.Tensor | None, B: int, S: int) -> None:
    if key_padding_mask is None:
        return
    if (
        not isinstance(key_padding_mask, torch.Tensor)
        or key_padding_mask.dtype != torch.bool
        or key_padding_mask.shape != (B, S)
    ):
        got = (
            f"{tuple(key_padding_mask.shape)} {key_padding_mask.dtype}"
            if isinstance(key_padding_mask, torch.Tensor)
            else type(key_padding_mask).__name__
        )
        raise ValueError(
            f"key_padding_mask must be a bool tensor shaped like the keys' (B, S) = ({B}, {S}), "
            f"True at the positions to ignore; got {got}"
        )
    if bool(key_padding_mask.all(dim=-1).any()):
        raise ValueError("key_padding_mask hides every position of some row: nothing to attend to")


def masked_softmax(scores: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last axis after adding −∞ where ``key_padding_mask`` is True.

    ``scores`` (B, T, S), ``key_padding_mask`` (B, S) → weights (B, T, S); a
    padded position gets weight exactly 0 and every row sums to 1.
    """
    _check_scores(scores, key_padding_mask)  # (B, T, S) with S ≥ 1; the mask (B, S), bool
    if key_padding_mask is not None:
        bias = torch.zeros(key_padding_mask.shape, dtype=scores.dtype, device=scores.device)
        bias = bias.masked_fill(key_padding_mask, -math.inf)  # (B, S): 0 or −∞
        scores = scores + bias.unsqueeze(1)  # (B, T, S)
    return torch.softmax(scores, dim=-1)


def dot_product_attention(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Luong's dot score ``scale · q·k`` → (context (B, T, H_v), weights (B, T, S)).

    With ``scale = 1/sqrt(H)`` this is the Transformer's scaled dot product (11장).
    """
    _check_attention_inputs(query, keys, key_padding_mask)
    if query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"the dot score needs query and keys of one size, got H_q = {query.shape[-1]} "
            f"and H_k = {keys.shape[-1]}"
        )
    check_tensor(values, "values", "B, S, H_v", B=keys.shape[0], S=keys.shape[1])
    scores = scale * query @ keys.transpose(1, 2)  # (B, T, S)
    weights = masked_softmax(scores, key_padding_mask)  # (B, T, S)
    return weights @ values, weights  # (B, T, H_v), (B, T, S)


class AdditiveAttention(nn.Module):
    """Bahdanau's score e = vᵀ tanh(W q + U k) (additive, or "concat" in Luong's terms)."""

    def __init__(self, query_size: int, key_size: int, attention_size: int) -> None:
        super().__init__()
        check_int(query_size, "query_size"), check_int(key_size, "key_size")
        check_int(attention_size, "attention_size")
        self.W = nn.Linear(query_size, attention_size, bias=False)
        self.U = nn.Linear(key_size, attention_size, bias=False)
        self.v = nn.Linear(attention_size, 1, bias=False)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        projected_keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """query (B, T, H_q) and keys (B, S, H_k) → context (B, T, H_k) and weights (B, T, S).

        projected_keys is U(keys) (B, S, A) when the caller computed it once
        for every decoder step, as Bahdanau et al. suggest.
        """
        _check_additive_inputs(self, query, keys, key_padding_mask, projected_keys)
        if projected_keys is None:
            projected_keys = self.U(keys)  # (B, S, A)
        hidden = torch.tanh(
            self.W(query).unsqueeze(2) + projected_keys.unsqueeze(1)
        )  # (B, T, 1, A) + (B, 1, S, A) → (B, T, S, A)
        scores = self.v(hidden).squeeze(-1)  # (B, T, S)
        weights = masked_softmax(scores, key_padding_mask)  # (B, T, S)
        return weights @ keys, weights  # (B, T, H_k), (B, T, S)


def _check_additive_inputs(
    attention: AdditiveAttention,
    query: torch.Tensor,
    keys: torch.Tensor,
    key_padding_mask: torch.Tensor | None,
    projected_keys: torch.Tensor | None,
) -> None:
    _check_attention_inputs(query, keys, key_padding_mask)
    B, S = keys.shape[:2]
    check_tensor(query, "query", "B, T, query_size", B=B, query_size=attention.W.in_features)
    check_tensor(keys, "keys", "B, S, key_size", B=B, S=S, key_size=attention.U.in_features)
    if projected_keys is not None:
        A = attention.U.out_features
        check_tensor(projected_keys, "projected_keys (U(keys))", "B, S, A", B=B, S=S, A=A)


class LuongAttention(nn.Module):
    """Luong's three scores of the current decoder state h_t against each encoder state h̄_s.

    ``dot``: h_tᵀ h̄_s; ``general``: h_tᵀ W_a h̄_s; ``concat``: v_aᵀ tanh(W_a [h_t; h̄_s]).
    """

    def __init__(self, score: str, query_size: int, key_size: int) -> None:
        super().__init__()
        if score not in LUONG_SCORES:
            raise ValueError(f"score must be one of {', '.join(LUONG_SCORES)}, got {score!r}")
        if score == "dot" and query_size != key_size:
            raise ValueError(
                f"the dot score needs query_size == key_size, got {query_size} and {key_size}"
            )
        self.score = score
        if score == "general":
            self.W_a = nn.Linear(key_size, query_size, bias=False)
        elif score == "concat":
            # W_a [h_t; h̄_s] = W_q h_t + W_k h̄_s: the same score as Bahdanau's.
            self.additive = AdditiveAttention(query_size, key_size, query_size)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``query`` (B, T, H), ``keys`` (B, S, H_k) → (context (B, T, H_k), weights (B, T, S))."""
        if self.score == "concat":
            return self.additive(query, keys, key_padding_mask)
        if self.score == "general":
            _check_attention_inputs(query, keys, key_padding_mask)
            # h_tᵀ (W_a h̄_s): project the keys once, then the dot score.
            return dot_product_attention(query, self.W_a(keys), keys, key_padding_mask)
        return dot_product_attention(query, keys, keys, key_padding_mask)


class BahdanauSeq2Seq(EncoderDecoder):
    """Bahdanau et al. (2014): a bidirectional encoder, and attention from s_(i-1).

    e_ij = vᵀ tanh(W s_(i-1) + U h_j), α_i = softmax(e_i), c_i = Σ_j α_ij h_j,
    s_i = GRU([y_(i-1); c_i], s_(i-1)), and the next word from [s_i; c_i; y_(i-1)].
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 128,
        attention_size: int = 64,
    ) -> None:
        super().__init__()
        if hidden_size % 2:
            raise ValueError(f"hidden_size must be even (two directions of H/2), got {hidden_size}")
        check_vocab_size(source_vocab_size, "source_vocab_size")
        self.target_vocab_size = check_vocab_size(target_vocab_size, "target_vocab_size")
        self.encoder = Encoder(
            source_vocab_size, embedding_size, hidden_size // 2, bidirectional=True
        )  # annotations h_j = [→h_j; ←h_j]: (B, S, H)
        self.init = nn.Linear(hidden_size // 2, hidden_size, bias=False)  # s_0 = tanh(W_s ←h_1)
        self.attention = AdditiveAttention(hidden_size, hidden_size, attention_size)
        self.embedding = nn.Embedding(target_vocab_size, embedding_size, padding_idx=0)
        self.rnn = nn.GRUCell(embedding_size + hidden_size, hidden_size)
        self.output = nn.Linear(2 * hidden_size + embedding_size, target_vocab_size)

    def init_state(self, memory: Memory) -> State:
        backward_first = memory.context[:, memory.context.shape[1] // 2 :]  # ←h_1: (B, H/2)
        return (torch.tanh(self.init(backward_first)),)  # s_0: (B, H)

    def recur(
        self,
        y_prev: torch.Tensor,
        s_prev: torch.Tensor,
        memory: Memory,
        projected_keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One decoder step without the output layer: (s_i (B, H), c_i (B, H), α_i (B, S))."""
        context, weights = self.attention(
            s_prev.unsqueeze(1), memory.outputs, memory.padding_mask, projected_keys
        )  # attention from s_(i-1): (B, 1, H), (B, 1, S)
        s = self.rnn(torch.cat([y_prev, context[:, 0]], dim=-1), s_prev)  # s_i: (B, H)
        return s, context[:, 0], weights[:, 0]

    def step(
        self, tokens: torch.Tensor, state: State, memory: Memory
    ) -> tuple[torch.Tensor, State, torch.Tensor]:
        check_step_tokens(tokens, memory, self.target_vocab_size)
        y_prev = self.embedding(tokens)  # (B, E)
        s, context, weights = self.recur(y_prev, state[0], memory)
        logits = self.output(torch.cat([s, context, y_prev], dim=-1))  # (B, V)
        return logits, (s,), weights

    def teacher_forced(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        # The same steps as step(), with U h_j, the embeddings and the output layer
        # computed once for the whole target instead of at every step.
        projected_keys = self.attention.U(memory.outputs)  # (B, S, A)
        y = self.embedding(target_in)  # (B, T, E)
        s = self.init_state(memory)[0]  # (B, H)
        states, contexts = [], []
        for t in range(target_in.shape[1]):
            s, context, _ = self.recur(y[:, t], s, memory, projected_keys)
            states.append(s)
            contexts.append(context)
        features = torch.cat([torch.stack(states, 1), torch.stack(contexts, 1), y], dim=-1)
        return self.output(features)  # (B, T, V)


class LuongSeq2Seq(EncoderDecoder):
    """Luong et al. (2015), global attention on the current state h_t, with input feeding.

    h_t = GRU([y_(t-1); h̃_(t-1)], h_(t-1)), a_t = softmax(score(h_t, h̄_s)),
    c_t = Σ_s a_t(s) h̄_s, h̃_t = tanh(W_c [c_t; h_t]), and the next word from h̃_t.
    """

    def __init__(
        self,
        source_vocab_size: int,
        target_vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 128,
        score: str = "general",
        input_feeding: bool = True,
    ) -> None:
        super().__init__()
        if hidden_size % 2:
            raise ValueError(f"hidden_size must be even (two directions of H/2), got {hidden_size}")
        check_vocab_size(source_vocab_size, "source_vocab_size")
        self.target_vocab_size = check_vocab_size(target_vocab_size, "target_vocab_size")
        self.input_feeding = input_feeding
        self.encoder = Encoder(
            source_vocab_size, embedding_size, hidden_size // 2, bidirectional=True
        )
        self.attention = LuongAttention(score, hidden_size, hidden_size)
        self.embedding = nn.Embedding(target_vocab_size, embedding_size, padding_idx=0)
        feed = hidden_size if input_feeding else 0
        self.rnn = nn.GRU(embedding_size + feed, hidden_size, batch_first=True)
        self.W_c = nn.Linear(2 * hidden_size, hidden_size, bias=False)
        self.output = nn.Linear(hidden_size, target_vocab_size)

    def init_state(self, memory: Memory) -> State:
        h0 = memory.context  # [→h_S; ←h_1]: (B, H)
        return (h0, torch.zeros_like(h0))  # (h_0, h̃_0 = 0)

    def attend(self, h: torch.Tensor, memory: Memory) -> tuple[torch.Tensor, torch.Tensor]:
        """h_t (B, T, H) → attentional states h̃_t (B, T, H) and weights a_t (B, T, S)."""
        context, weights = self.attention(
            h, memory.outputs, memory.padding_mask
        )  # (B, T, H), (B, T, S)
        attentional = torch.tanh(self.W_c(torch.cat([context, h], dim=-1)))  # h̃_t: (B, T, H)
        return attentional, weights

    def step(
        self, tokens: torch.Tensor, state: State, memory: Memory
    ) -> tuple[torch.Tensor, State, torch.Tensor]:
        check_step_tokens(tokens, memory, self.target_vocab_size)
        h_prev, attentional_prev = state  # (B, H) each
        x = self.embedding(tokens)  # (B, E)
        if self.input_feeding:
            x = torch.cat([x, attentional_prev], dim=-1)  # (B, E + H)
        h = self.rnn(x.unsqueeze(1), h_prev.unsqueeze(0))[1][0]  # h_t: (B, H)
        attentional, weights = self.attend(h.unsqueeze(1), memory)  # (B, 1, H), (B, 1, S)
        return self.output(attentional[:, 0]), (h, attentional[:, 0]), weights[:, 0]

    def teacher_forced(self, target_in: torch.Tensor, memory: Memory) -> torch.Tensor:
        x = self.embedding(target_in)  # (B, T, E)
        h, attentional = self.init_state(memory)
        if self.input_feeding:  # h̃_(t-1) enters step t: one step at a time
            outputs = []
            for t in range(target_in.shape[1]):
                step_input = torch.cat([x[:, t], attentional], dim=-1).unsqueeze(1)  # (B, 1, E + H)
                h = self.rnn(step_input, h.unsqueeze(0))[1][0]  # (B, H)
                attentional = self.attend(h.unsqueeze(1), memory)[0][:, 0]  # (B, H)
                outputs.append(attentional)
            return self.output(torch.stack(outputs, dim=1))  # (B, T, V)
        # Without input feeding the states h_t do not depend on attention: all at once.
        states, _ = self.rnn(x, h.unsqueeze(0))  # (B, T, H)
        attentional, _ = self.attend(states, memory)  # (B, T, H)
        return self.output(attentional)  # (B, T, V)


@torch.no_grad()
def forced_attention(
    model: EncoderDecoder, sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]]
) -> list[torch.Tensor]:
    """Attention weights while the decoder reads the reference target (teacher forcing).

    ``targets`` end with ``<eos>``; returns one (T, S) matrix per sentence, row j
    the weights with which the model predicts target token j.
    """
    model.eval()
    batch = make_batch(list(zip(sources, targets, strict=True)))
    device = next(model.parameters()).device
    memory = model.encode(batch.source.to(device), batch.source_lengths)
    state = model.init_state(memory)
    rows = []
    target_in = batch.target_in.to(device)
    for t in range(target_in.shape[1]):
        _, state, weights = model.step(target_in[:, t], state, memory)
        if weights is None:
            raise ValueError("this model has no attention: step() returned no weights")
        rows.append(weights)  # (B, S)
    stacked = torch.stack(rows, dim=1).cpu()  # (B, T, S)
    return [stacked[i, : len(targets[i]), : len(sources[i])] for i in range(len(sources))]


def alignment_accuracy(
    weights: Sequence[torch.Tensor], alignments: Sequence[Sequence[Sequence[int]]]
) -> float:
    """Share of target words whose attention argmax lands on a gold-aligned source word.

    ``weights[i]`` is sentence i's (T_i, S_i) attention (rows may include a final
    ``<eos>`` row, which has no gold alignment and is skipped); ``alignments[i][j]``
    lists the source positions target word j translates. Words aligned to
    nothing are skipped.
    """
    if len(weights) != len(alignments):
        raise ValueError(f"got {len(weights)} attention matrices but {len(alignments)} alignments")
    hits = total = 0
    for i, (matrix, gold) in enumerate(zip(weights, alignments, strict=True)):
        check_tensor(matrix, f"weights[{i}]", "T, S")
        if matrix.dim() != 2 or matrix.shape[0] < len(gold):
            raise ValueError(
                f"weights[{i}] must be (T, S) with at least T = {len(gold)} rows, "
                f"got {tuple(matrix.shape)}"
            )
        best = matrix[: len(gold)].argmax(dim=-1).tolist()
        for j, positions in enumerate(gold):
            if any(not 0 <= p < matrix.shape[1] for p in positions):
                raise ValueError(
                    f"alignments[{i}][{j}] = {list(positions)}: gold source positions must be in "
                    f"0 … {matrix.shape[1] - 1} (weights[{i}] has S = {matrix.shape[1]} columns)"
                )
            if positions:
                total += 1
                hits += best[j] in positions
    if total == 0:
        raise ValueError("no target word has a gold alignment")
    return hits / total
