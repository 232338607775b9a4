"""12장 BERT: the span-extraction head of the BERT paper's question answering (SQuAD).

A start vector S and an end vector E score every final hidden state T_i:
the answer starts at i with probability softmax_i(S·T_i) and ends at j with
softmax_j(E·T_j); training minimises the mean of the two cross-entropies,
and the predicted answer is the span i ≤ j with the largest S·T_i + E·T_j.

- :class:`BertForQuestionAnswering`: :class:`~course_utils.bert.BertModel`
  and one linear layer whose two rows are S and E (Hugging Face's
  ``qa_outputs``, so ``transformers.BertForQuestionAnswering``'s weights fit).
- :func:`span_loss`, :func:`best_span`, :func:`span_f1`.
"""

from __future__ import annotations

import torch
from torch import nn

from course_utils.bert import BertConfig, BertModel
from course_utils.checks import check_int, check_tensor

__all__ = ["BertForQuestionAnswering", "best_span", "span_f1", "span_loss"]


class BertForQuestionAnswering(nn.Module):
    """BERT → start and end scores at every position: (B, T) ids → (B, T), (B, T)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooler=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)  # row 0: S, row 1: E
        nn.init.normal_(self.qa_outputs.weight, std=config.initializer_range)
        nn.init.zeros_(self.qa_outputs.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state  # (B, T, d)
        scores = self.qa_outputs(hidden)  # (B, T, 2): S·T_i and E·T_i
        return scores[..., 0], scores[..., 1]  # (B, T) each


def span_loss(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    start_positions: torch.Tensor,
    end_positions: torch.Tensor,
) -> torch.Tensor:
    """The mean of the start and the end cross-entropy (softmax over the T positions)."""
    B, T = check_tensor(start_logits, "start_logits", "B, T")
    check_tensor(end_logits, "end_logits", "B, T", B=B, T=T)
    for name, positions in (("start_positions", start_positions), ("end_positions", end_positions)):
        check_tensor(positions, name, "B", "int64", B=B)
        if bool(((positions < 0) | (positions >= T)).any()):
            raise ValueError(f"{name} must be positions in 0 … {T - 1}")
    start = nn.functional.cross_entropy(start_logits, start_positions)
    end = nn.functional.cross_entropy(end_logits, end_positions)
    return (start + end) / 2


def best_span(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    allowed: torch.Tensor,
    max_length: int = 16,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The span i ≤ j < i + max_length with the largest start + end score: (B,), (B,).

    ``allowed`` (B, T) bool is True where an answer may lie (the sentence,
    not the question, the special tokens or the padding); both ends must be
    allowed.
    """
    B, T = check_tensor(start_logits, "start_logits", "B, T")
    check_tensor(end_logits, "end_logits", "B, T", B=B, T=T)
    check_tensor(allowed, "allowed", "B, T", "any", B=B, T=T)
    check_int(max_length, "max_length")
    if allowed.dtype != torch.bool or not bool(allowed.any(dim=1).all()):
        raise ValueError("allowed must be a bool tensor with at least one True in every row")
    i = torch.arange(T)
    band = (i[None, :] >= i[:, None]) & (i[None, :] < i[:, None] + max_length)  # (T, T): i ≤ j
    ok = band & allowed[:, :, None] & allowed[:, None, :]  # (B, T, T)
    scores = start_logits[:, :, None] + end_logits[:, None, :]  # (B, T, T): S·T_i + E·T_j
    best = scores.masked_fill(~ok, float("-inf")).flatten(1).argmax(dim=1)  # (B,)
    return best // T, best % T


def span_f1(predicted: tuple[int, int], gold: tuple[int, int]) -> float:
    """SQuAD's F1 of two spans (first, last), over the positions they share."""
    for name, span in (("predicted", predicted), ("gold", gold)):
        if len(span) != 2 or span[0] > span[1]:
            raise ValueError(f"{name} must be a span (first, last) with first <= last, got {span}")
    shared = min(predicted[1], gold[1]) - max(predicted[0], gold[0]) + 1
    if shared <= 0:
        return 0.0
    precision = shared / (predicted[1] - predicted[0] + 1)
    recall = shared / (gold[1] - gold[0] + 1)
    return 2 * precision * recall / (precision + recall)
