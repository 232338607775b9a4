"""A decoder-only Transformer language model (GPT), built from 11장's layers.

GPT (Radford et al., 2018; GPT-2, 2019) keeps one half of the Transformer: a stack
of self-attention layers whose causal mask lets position t see positions 1 … t
only, with no encoder and no cross-attention. Each layer is 11장's
:class:`~course_utils.transformer.EncoderLayer` with ``norm_first=True`` (GPT-2
moved LayerNorm in front of each sublayer) and the causal mask of
:func:`~course_utils.transformer.causal_mask`; a last LayerNorm follows the
stack. Token and position embeddings are learned, and the output layer that
turns a position's vector into next-token logits is the token embedding itself
(tied weights, as in GPT-2): the logit of token v is the dot product of the
vector with v's embedding.

:func:`load_gpt2_weights` copies the weights of ``transformers``'
``GPT2LMHeadModel`` (whose linear layers are ``Conv1D``, weight ``(in, out)``,
with W^Q, W^K, W^V stacked in one ``c_attn``) into :class:`GPT`, and
:func:`gpt2_config` gives the ``GPT2Config`` of a :class:`GPTConfig`: with both,
``tests/test_gpt.py`` proves the two models' logits and gradients equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.checks import check_int, check_tensor, check_token_ids
from course_utils.transformer import EncoderLayer, LayerNorm, causal_mask

__all__ = [
    "GPT",
    "GPTConfig",
    "KVCache",
    "completion_targets",
    "gpt2_config",
    "load_gpt2_weights",
]

#: Each layer's self-attention keys and values of the positions read so far, (B, h, t, d_k).
KVCache = list[tuple[torch.Tensor, torch.Tensor]]

#: GPT-2's name for each activation of :data:`course_utils.transformer.ACTIVATIONS`.
_GPT2_ACTIVATIONS = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}


@dataclass(frozen=True)
class GPTConfig:
    """The size of a :class:`GPT`: GPT-2's hyperparameters under 11장's names."""

    vocab_size: int
    max_len: int = 128  # the longest sequence: one learned position vector each (n_positions)
    d_model: int = 64  # n_embd
    nhead: int = 4  # n_head
    num_layers: int = 2  # n_layer
    dim_feedforward: int | None = None  # n_inner; None: 4 · d_model, as GPT-2
    dropout: float = 0.0  # GPT-2's three dropouts (embeddings, attention, residual) at once
    activation: str = "gelu_tanh"  # GPT-2's "gelu_new": GELU with the tanh approximation
    layer_norm_eps: float = 1e-5

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_len", "d_model", "nhead", "num_layers"):
            check_int(getattr(self, name), name)
        if self.dim_feedforward is not None:
            check_int(self.dim_feedforward, "dim_feedforward")
        if self.d_model % self.nhead:
            raise ValueError(
                f"d_model = {self.d_model} must be divisible by nhead = {self.nhead}: "
                "each head gets d_k = d_model / nhead features"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.activation not in _GPT2_ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {', '.join(_GPT2_ACTIVATIONS)}, got {self.activation!r}"
            )

    @property
    def feedforward(self) -> int:
        """The feed-forward width: ``dim_feedforward``, or 4 · d_model."""
        return 4 * self.d_model if self.dim_feedforward is None else self.dim_feedforward


class GPT(nn.Module):
    """Token ids (B, T) → next-token logits (B, T, V): position t's logits predict token t + 1.

    Embeddings (token + learned position) → ``num_layers`` pre-norm
    :class:`~course_utils.transformer.EncoderLayer` with a causal mask → LayerNorm
    → the token embedding again as the output layer (tied). Weights start as
    GPT-2's: normal with standard deviation 0.02, biases 0, LayerNorm 1 and 0, and
    each residual branch's output projection scaled by 1/√(2 · num_layers).
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_model)
        self.position_embedding = nn.Embedding(config.max_len, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(
                config.d_model,
                config.nhead,
                config.feedforward,
                config.dropout,
                config.activation,
                config.layer_norm_eps,
                norm_first=True,
            )
            for _ in range(config.num_layers)
        )
        self.norm = LayerNorm(config.d_model, config.layer_norm_eps)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # tied: one (V, d_model) matrix
        self._init_weights()

    @property
    def blocks(self) -> list[EncoderLayer]:
        """The layers, typed (``self.layers`` is an ``nn.ModuleList``)."""
        return [cast(EncoderLayer, layer) for layer in self.layers]

    def _init_weights(self) -> None:
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        for layer in self.blocks:  # GPT-2: the residual branches' last projections, scaled
            for projection in (layer.self_attn.out_proj, layer.linear2):
                nn.init.normal_(projection.weight, 0.0, 0.02 / (2 * self.config.num_layers) ** 0.5)

    def embed(self, ids: torch.Tensor, past: int = 0) -> torch.Tensor:
        """Token + position embeddings (B, T, d_model) of ``ids`` (B, T) at positions
        ``past`` … ``past`` + T − 1 (after ``past`` positions already read)."""
        _, length = check_token_ids(ids, "ids", self.config.vocab_size)
        if past + length > self.config.max_len:
            raise ValueError(
                f"{past} earlier + T = {length} positions exceed max_len = "
                f"{self.config.max_len} (the model has one learned position vector per position)"
            )
        positions = torch.arange(past, past + length, device=ids.device)
        return self.dropout(self.token_embedding(ids) + self.position_embedding(positions))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, T) int64, T ≤ ``max_len`` → logits (B, T, vocab_size)."""
        x = self.embed(ids)
        mask = causal_mask(ids.shape[1], ids.device)  # (T, T), True above the diagonal: the future
        for layer in self.layers:
            x = layer(x, mask)
        return self.lm_head(self.norm(x))  # (B, T, V)

    def forward_cached(
        self, ids: torch.Tensor, cache: KVCache | None = None
    ) -> tuple[torch.Tensor, KVCache]:
        """Logits (B, T, V) of ``ids`` (B, T), the tokens that follow the ``cache``'s positions,
        and the cache extended by them.

        The cache holds each layer's self-attention keys and values of every
        position read so far, (B, h, t, d_k) each: a new position computes its own
        key and value once and attends to the stored ones, instead of the whole
        prefix being read again (11장's decoder cache, without cross-attention).
        ``forward_cached(ids)`` with no cache reads a prompt; then one token at a
        time. The logits equal :meth:`forward`'s on the whole sequence.
        """
        if cache is not None and len(cache) != self.config.num_layers:
            raise ValueError(f"cache must hold {self.config.num_layers} layers, got {len(cache)}")
        past = 0 if cache is None else cache[0][0].shape[2]
        x = self.embed(ids, past)
        length = ids.shape[1]
        # new position i (at past + i) may not see new position j > i; every cached one it may
        future = torch.ones(length, past + length, dtype=torch.bool, device=ids.device)
        future = future.triu(past + 1)  # (T, past + T)
        bias = torch.zeros(future.shape, dtype=x.dtype, device=x.device)
        bias = bias.masked_fill(future, -math.inf)[None, None]  # (1, 1, T, past + T)
        new_cache: KVCache = []
        for i, layer in enumerate(self.blocks):
            layer_past = None if cache is None else cache[i]
            x, kept = _layer_with_cache(layer, x, layer_past, bias)
            new_cache.append(kept)
        return self.lm_head(self.norm(x)), new_cache

    def loss(self, ids: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> Any:
        """Mean cross-entropy of ``targets`` (B, T) under ``self(ids)``; ``ignore_index``
        marks positions left out of the mean (padding, or a prompt's tokens)."""
        logits = self(ids)
        if not isinstance(targets, torch.Tensor) or targets.shape != ids.shape:
            got = tuple(targets.shape) if isinstance(targets, torch.Tensor) else targets
            raise ValueError(f"targets must be (B, T) = {tuple(ids.shape)} like ids, got {got}")
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index)


def completion_targets(
    ids: torch.Tensor, prompt_lengths: torch.Tensor, pad_id: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets for supervised fine-tuning on prompt + response sequences.

    ``ids`` (B, T) holds each example's prompt then its response (then padding
    ``pad_id``, if given); ``prompt_lengths`` (B,) says where each response starts.
    The model reads ``ids[:, :-1]`` and predicts ``ids[:, 1:]``; a target that is a
    prompt token or padding is set to −100, which :meth:`GPT.loss` leaves out of
    the mean, so the loss is the mean over the response tokens only.
    """
    batch, length = check_tensor(ids, "ids", "B, T", kind="int64")
    if length < 2:
        raise ValueError(f"ids must hold at least 2 tokens per example, got T = {length}")
    if not isinstance(prompt_lengths, torch.Tensor) or prompt_lengths.shape != (batch,):
        got = tuple(prompt_lengths.shape) if isinstance(prompt_lengths, torch.Tensor) else None
        raise ValueError(f"prompt_lengths must be (B,) = ({batch},), got {got}")
    if bool(((prompt_lengths < 1) | (prompt_lengths >= length)).any()):
        raise ValueError(
            f"each prompt length must be in 1 … T − 1 = {length - 1} (a prompt, then at least "
            f"one response token), got {prompt_lengths.tolist()}"
        )
    targets = ids[:, 1:].clone()
    position = torch.arange(1, length, device=ids.device)  # the position each target sits at
    targets[position[None, :] < prompt_lengths[:, None]] = -100  # prompt tokens
    if pad_id is not None:
        targets[ids[:, 1:] == pad_id] = -100
    return ids[:, :-1], targets


def _layer_with_cache(
    layer: EncoderLayer,
    x: torch.Tensor,
    past: tuple[torch.Tensor, torch.Tensor] | None,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """One pre-norm layer on the new positions x (B, T, d_model), the past keys and values
    of the earlier positions attended to from the cache → (B, T, d_model), extended cache."""
    kept: tuple[torch.Tensor, torch.Tensor] | None = None

    def self_attention(y: torch.Tensor) -> torch.Tensor:
        nonlocal kept
        key, value = layer.self_attn.project_key_value(y, y)  # (B, h, T, d_k) each
        if past is not None:
            key, value = torch.cat([past[0], key], dim=2), torch.cat([past[1], value], dim=2)
        kept = (key, value)
        out, _ = layer.self_attn.attend(y, key, value, bias)
        return out

    x = layer.residual(x, self_attention, layer.norm1, layer.dropout1)
    x = layer.residual(x, layer.feed_forward, layer.norm2, layer.dropout2)
    assert kept is not None  # set by self_attention above
    return x, kept


def gpt2_config(config: GPTConfig) -> Any:
    """The ``transformers.GPT2Config`` of the same model (dropouts ``config.dropout``)."""
    from transformers import GPT2Config

    return GPT2Config(
        vocab_size=config.vocab_size,
        n_positions=config.max_len,
        n_embd=config.d_model,
        n_layer=config.num_layers,
        n_head=config.nhead,
        n_inner=config.dim_feedforward,
        activation_function=_GPT2_ACTIVATIONS[config.activation],
        resid_pdrop=config.dropout,
        embd_pdrop=config.dropout,
        attn_pdrop=config.dropout,
        layer_norm_epsilon=config.layer_norm_eps,
        tie_word_embeddings=True,
        bos_token_id=None,  # GPT-2's 50256 is outside a small vocabulary
        eos_token_id=None,
    )


def _gpt2_state(theirs: Any) -> dict[str, torch.Tensor]:
    state = theirs.state_dict() if isinstance(theirs, nn.Module) else dict(theirs)
    # GPT2LMHeadModel's keys start with "transformer."; GPT2Model's do not
    return {k.removeprefix("transformer."): v for k, v in state.items()}


@torch.no_grad()
def load_gpt2_weights(ours: GPT, theirs: Any) -> None:
    """Copy a ``GPT2LMHeadModel`` (or ``GPT2Model``, or either's state dict) into ``ours``.

    GPT-2's ``Conv1D`` stores a linear layer's weight as (in, out), the transpose
    of ``nn.Linear``'s, and its ``c_attn`` holds W^Q, W^K and W^V side by side:
    (d_model, 3 · d_model).
    """
    if not isinstance(ours, GPT):
        raise TypeError(f"ours must be a GPT, got {type(ours).__name__}")
    state = _gpt2_state(theirs)
    config = ours.config
    expected = {
        "wte.weight": (config.vocab_size, config.d_model),
        "wpe.weight": (config.max_len, config.d_model),
    }
    for name, shape in expected.items():
        if name not in state or tuple(state[name].shape) != shape:
            got = tuple(state[name].shape) if name in state else "missing"
            raise ValueError(f"GPT-2 weight {name} must be {shape} for this GPTConfig, got {got}")
    ours.token_embedding.weight.copy_(state["wte.weight"])
    ours.position_embedding.weight.copy_(state["wpe.weight"])
    for i, layer in enumerate(ours.blocks):
        prefix = f"h.{i}."
        missing = [k for k in ("ln_1.weight", "attn.c_attn.weight") if prefix + k not in state]
        if missing:
            raise ValueError(f"GPT-2 state has no layer {i} ({prefix + missing[0]} missing)")
        d = config.d_model
        attn_w = state[prefix + "attn.c_attn.weight"]  # (d, 3d): [W^Q | W^K | W^V]
        attn_b = state[prefix + "attn.c_attn.bias"]
        heads = layer.self_attn
        for j, projection in enumerate((heads.q_proj, heads.k_proj, heads.v_proj)):
            projection.weight.copy_(attn_w[:, j * d : (j + 1) * d].T)
            projection.bias.copy_(attn_b[j * d : (j + 1) * d])
        heads.out_proj.weight.copy_(state[prefix + "attn.c_proj.weight"].T)
        heads.out_proj.bias.copy_(state[prefix + "attn.c_proj.bias"])
        layer.linear1.weight.copy_(state[prefix + "mlp.c_fc.weight"].T)
        layer.linear1.bias.copy_(state[prefix + "mlp.c_fc.bias"])
        layer.linear2.weight.copy_(state[prefix + "mlp.c_proj.weight"].T)
        layer.linear2.bias.copy_(state[prefix + "mlp.c_proj.bias"])
        for norm, name in ((layer.norm1, "ln_1"), (layer.norm2, "ln_2")):
            norm.weight.copy_(state[prefix + name + ".weight"])
            norm.bias.copy_(state[prefix + name + ".bias"])
    if f"h.{config.num_layers}.ln_1.weight" in state:
        raise ValueError(f"GPT-2 state has more than num_layers = {config.num_layers} layers")
    ours.norm.weight.copy_(state["ln_f.weight"])
    ours.norm.bias.copy_(state["ln_f.bias"])
