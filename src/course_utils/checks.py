"""Argument checks shared by the course's modules: each names the argument and what it expects."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence

import torch

__all__ = [
    "check_attention_mask",
    "check_int",
    "check_lines",
    "check_same_shape",
    "check_tensor",
    "check_token_ids",
    "load_state_dict_strict",
]


def check_int(value: object, name: str, least: int = 1, why: str = "") -> int:
    """``value`` if it is an integer (Python or NumPy, not bool) ``>= least``; else a ValueError.

    ``why``, if given, follows the expectation in the message: the reason for ``least``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ValueError(
            f"{name} must be an int >= {least}{f' ({why})' if why else ''}, got {value!r}"
        )
    return int(value)


#: check_tensor's kinds of tensor: the test of the dtype, by the word its messages use
_TENSOR_KINDS: dict[str, Callable[[torch.Tensor], bool]] = {
    "float": lambda t: t.is_floating_point(),
    "int64": lambda t: t.dtype == torch.long,
    "any": lambda t: True,
}


def check_tensor(
    value: object, name: str, dims: str, kind: str = "float", **sizes: int
) -> tuple[int, ...]:
    """``value``'s shape if it is a tensor with the named ``dims``; else an error naming ``name``.

    ``dims`` names the axes, ``"B, T, d_model"``; ``sizes`` fixes some of them
    (``d_model=8``); ``kind`` is ``"float"`` (any floating dtype), ``"int64"`` or
    ``"any"``. A non-tensor or a wrong dtype is a TypeError, a wrong shape a
    ValueError: "tgt must be a (B, T, d_model) float tensor with d_model = 8, got list".
    """
    axes = [axis.strip() for axis in dims.split(",")]
    fixed = ", ".join(f"{axis} = {size}" for axis, size in sizes.items())
    want = f"{name} must be a ({', '.join(axes)}){'' if kind == 'any' else ' ' + kind} tensor"
    want += f" with {fixed}" if fixed else ""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{want}, got {type(value).__name__}")
    if value.dim() != len(axes) or any(value.shape[axes.index(a)] != n for a, n in sizes.items()):
        raise ValueError(f"{want}, got {tuple(value.shape)}")
    if not _TENSOR_KINDS[kind](value):
        raise TypeError(f"{want}, got {value.dtype}")
    return tuple(value.shape)


def check_token_ids(ids: object, name: str, vocab_size: int) -> tuple[int, int]:
    """``(B, T)`` of a (B, T) int64 tensor of ids in ``0 … vocab_size − 1``, T ≥ 1, or an error."""
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long:
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"{name} must be an int64 (torch.long) tensor of token ids, got {got}")
    if ids.dim() != 2 or ids.shape[1] == 0:
        raise ValueError(f"{name} must be (B, T) with T >= 1, got {tuple(ids.shape)}")
    bad = (ids < 0) | (ids >= vocab_size)
    if bool(bad.any()):
        raise ValueError(
            f"unknown token id {int(ids[bad][0])} in {name}: ids must be in 0 … {vocab_size - 1}"
        )
    return ids.shape[0], ids.shape[1]


def check_same_shape(tensor: object, name: str, shape: tuple[int, ...], like: str) -> None:
    """``tensor`` must be an integer or bool tensor of ``shape``, the shape of ``like``."""
    if not isinstance(tensor, torch.Tensor) or tuple(tensor.shape) != tuple(shape):
        got = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else type(tensor).__name__
        dims = ", ".join(map(str, shape))
        raise ValueError(f"{name} must be (B, T) = ({dims}) like {like}, got {got}")
    if tensor.is_floating_point():
        raise TypeError(f"{name} must be an integer or bool tensor, got {tensor.dtype}")


def check_attention_mask(mask: object, shape: tuple[int, ...], like: str = "input_ids") -> None:
    """Hugging Face's ``attention_mask``: 1 at real tokens, 0 at padding, a real token per row."""
    check_same_shape(mask, "attention_mask", shape, like)
    assert isinstance(mask, torch.Tensor)
    if bool(((mask != 0) & (mask != 1)).any()):
        raise ValueError("attention_mask must hold 1 (a real token) or 0 (padding) only")
    if bool((mask == 0).all(dim=1).any()):
        raise ValueError("attention_mask has a row with no real token: nothing to attend to")


def check_lines(lines: object, name: str = "lines") -> list[str]:
    """``lines`` as a list if it is a sequence of str with at least one word; else a clear error."""
    if isinstance(lines, str) or not isinstance(lines, Sequence):
        raise TypeError(f"{name} must be a list of str lines, not {type(lines).__name__}")
    if not all(isinstance(line, str) for line in lines):
        raise TypeError(f"{name} must contain only str lines")
    if not any(line.split() for line in lines):
        raise ValueError(f"{name} must contain at least one word")
    return list(lines)


def load_state_dict_strict(module: torch.nn.Module, state: Mapping[str, torch.Tensor]) -> None:
    """``module.load_state_dict`` with one clear error naming every mismatch."""
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    shapes = [
        f"{name}: expected {tuple(expected[name].shape)}, got {tuple(state[name].shape)}"
        for name in sorted(set(expected) & set(state))
        if expected[name].shape != state[name].shape
    ]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            shown = [f"{name} {tuple(expected[name].shape)}" for name in missing[:8]]
            parts.append(f"missing {', '.join(shown)}{' …' if len(missing) > 8 else ''}")
        if unexpected:
            parts.append(
                f"unexpected {', '.join(unexpected[:8])}{' …' if len(unexpected) > 8 else ''}"
            )
        if shapes:
            parts.append("shape mismatch " + "; ".join(shapes[:8]))
        raise ValueError(f"weights do not fit {type(module).__name__}: " + " | ".join(parts))
    module.load_state_dict(state)
