"""Device selection and seeding, shared by every chapter.

The course runs on a laptop CPU by default and uses a GPU when one is present.
``COURSE_DEVICE`` (``cpu``, ``cuda``, ``mps``) overrides the automatic choice.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

DEVICE_ENV = "COURSE_DEVICE"
_KNOWN_DEVICES = ("cuda", "mps", "cpu")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def get_device(prefer: str | None = None) -> torch.device:
    """Return the best available device: cuda → mps → cpu.

    ``prefer`` (or the ``COURSE_DEVICE`` environment variable) forces one kind;
    asking for a device that is not available raises ``RuntimeError`` instead of
    silently falling back, so a GPU run never quietly becomes a CPU run.
    """
    choice = prefer if prefer is not None else os.environ.get(DEVICE_ENV) or None
    if choice is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if not isinstance(choice, str):
        raise TypeError(f"device must be a string such as 'cpu', got {type(choice).__name__}")
    kind = choice.strip().lower()
    if kind.split(":")[0] not in _KNOWN_DEVICES:
        raise ValueError(f"unknown device {choice!r}: expected one of {', '.join(_KNOWN_DEVICES)}")
    if kind.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {choice!r} was requested but CUDA is not available")
    if kind == "mps" and not _mps_available():
        raise RuntimeError("device 'mps' was requested but MPS is not available")
    return torch.device(kind)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (CPU and every GPU) so runs repeat."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


RUN_ENV = "COURSE_RUN"
_RUN_SIZES = ("small", "large")


def run_size() -> str:
    """The one knob that sizes every chapter's experiments: ``"small"`` or ``"large"``.

    ``COURSE_RUN=small`` (the CPU default, minutes on a laptop) or
    ``COURSE_RUN=large`` (longer training, meant for a GPU). Unset, it is
    ``"large"`` when a CUDA device is present and ``"small"`` otherwise.
    """
    value = os.environ.get(RUN_ENV, "").strip().lower()
    if not value:
        return "large" if torch.cuda.is_available() else "small"
    if value not in _RUN_SIZES:
        raise ValueError(f"{RUN_ENV} must be one of {', '.join(_RUN_SIZES)}, got {value!r}")
    return value
