"""Argument checks shared by the course's modules: each names the argument and what it expects."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["check_int", "check_lines"]


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
