"""LoRA: fine-tuning a few low-rank matrices beside frozen weights (Hu et al., 2022), 13장.

A linear layer y = W x + b of a pretrained model is kept frozen; beside it LoRA
learns a low-rank update ΔW = B A, A (r × in) and B (out × r) with r ≪ in, out:

    y = W x + b + (α / r) · B A x

B starts at zero, so the model starts exactly as pretrained; A starts random
(Kaiming-uniform, as ``peft``). Only A and B train: r · (in + out) numbers per
layer instead of in · out. After training, B A can be added into W (``merge``)
and the model runs as fast as before.

:func:`add_lora` replaces the named ``nn.Linear`` layers of a model (11장's
``q_proj`` and ``v_proj``, say) and freezes every other weight.
``tests/test_lora.py`` checks the outputs against ``peft``'s LoRA on the same
model with A and B copied, and the trainable parameters counted.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from course_utils.checks import check_int

__all__ = ["LoRALinear", "add_lora", "lora_layers", "trainable_share"]


class LoRALinear(nn.Module):
    """``base`` (frozen) plus the low-rank update (α / r) · B A, A (r, in), B (out, r)."""

    def __init__(self, base: nn.Linear, r: int = 8, alpha: float = 16.0, dropout: float = 0.0):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"base must be an nn.Linear, got {type(base).__name__}")
        check_int(r, "r")
        if r > min(base.in_features, base.out_features):
            raise ValueError(
                f"r = {r} must be at most min(in, out) = "
                f"{min(base.in_features, base.out_features)} for a low-rank update"
            )
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        self.base = base
        for parameter in base.parameters():
            parameter.requires_grad_(False)
        self.r, self.alpha = r, float(alpha)
        self.scaling = self.alpha / r
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features, dtype=base.weight.dtype))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, dtype=base.weight.dtype))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))  # as nn.Linear, and peft
        self.dropout = nn.Dropout(dropout)
        self.merged = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(…, in) → (…, out): the frozen layer plus the scaled low-rank path."""
        out = self.base(x)
        if self.merged:
            return out
        return out + self.scaling * (self.dropout(x) @ self.lora_A.T @ self.lora_B.T)

    @torch.no_grad()
    def merge(self) -> None:
        """Add (α / r) · B A into the frozen weight: the same outputs, one matrix product."""
        if not self.merged:
            self.base.weight += self.scaling * (self.lora_B @ self.lora_A)
            self.merged = True

    def extra_repr(self) -> str:
        return f"r={self.r}, alpha={self.alpha}, merged={self.merged}"


def add_lora(
    model: nn.Module,
    targets: tuple[str, ...] = ("q_proj", "v_proj"),
    r: int = 8,
    alpha: float = 16.0,
    dropout: float = 0.0,
) -> list[str]:
    """Freeze ``model`` and put a :class:`LoRALinear` in place of each ``nn.Linear`` whose
    name ends with one of ``targets``; the names replaced (an error if there are none)."""
    if isinstance(targets, str) or not targets:
        raise ValueError(f"targets must be a non-empty tuple of layer names, got {targets!r}")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    replaced = []
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Linear) and name.split(".")[-1] in targets:
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, LoRALinear(module, r, alpha, dropout))
            replaced.append(name)
    if not replaced:
        raise ValueError(f"no nn.Linear of the model is named {' or '.join(targets)}")
    return replaced


def lora_layers(model: nn.Module) -> list[LoRALinear]:
    """The model's :class:`LoRALinear` layers, in order."""
    return [m for m in model.modules() if isinstance(m, LoRALinear)]


def trainable_share(model: nn.Module) -> tuple[int, int]:
    """(trainable parameters, all parameters), each shared tensor counted once."""
    seen: dict[int, nn.Parameter] = {id(p): p for p in model.parameters()}
    total = sum(p.numel() for p in seen.values())
    trainable = sum(p.numel() for p in seen.values() if p.requires_grad)
    return trainable, total
