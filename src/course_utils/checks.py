"""Argument checks shared by the course's modules: each names the argument and what it expects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

__all__ = ["check_int", "check_lines", "load_state_dict_strict"]


def check_int(value: object, name: str, least: int = 1) -> int:
    """``value`` if it is an int (not a bool) ``>= least``; else ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    return value


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
