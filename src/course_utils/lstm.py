"""8장 LSTM과 GRU: gated cells from scratch, equal to ``torch.nn.LSTM`` / ``torch.nn.GRU``.

The layers reuse :class:`course_utils.rnn.RecurrentLayer` (multi-layer,
bidirectional, weights named as in torch); only the cell differs. Gates are
stacked in torch's order: LSTM ``i, f, g, o`` and GRU ``r, z, n``.

:class:`SequenceRegressor` is the adding problem's model; the chapter's
experiments are in :mod:`course_utils.experiments.ch08_lstm_gru`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from course_utils.rnn import (
    RNN,
    RecurrentLayer,
    State,
)

__all__ = [
    "GRU",
    "LSTM",
    "AutogradLSTM",
    "LSTMSequence",
    "SequenceRegressor",
    "gru_cell",
    "lstm_cell",
    "recurrent_parameter_count",
]


def lstm_cell(
    x_proj: torch.Tensor,
    state: State,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
) -> State:
    """One LSTM step. ``x_proj = X_t W_x + b_x`` (B, 4H) for the four gates at once."""
    h, c = state  # each (B, H)
    if bias_hh is not None:
        x_proj = x_proj + bias_hh
    gates = torch.addmm(x_proj, h, weight_hh.T)  # (B, 4H) = X_t W_x + b + H_{t-1} W_h
    i, f, g, o = gates.chunk(4, dim=-1)  # each (B, H)
    i = torch.sigmoid(i)  # input gate: how much of the candidate to write
    f = torch.sigmoid(f)  # forget gate: how much of the old cell to keep
    g = torch.tanh(g)  # candidate cell content
    o = torch.sigmoid(o)  # output gate: how much of the cell to show
    c = f * c + i * g  # (B, H): additive update, the gradient's highway
    h = o * torch.tanh(c)  # (B, H)
    return h, c


def gru_cell(
    x_proj: torch.Tensor,
    state: State,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
) -> State:
    """One GRU step. ``x_proj = X_t W_x + b_x`` (B, 3H) for r, z and n at once."""
    (h,) = state  # (B, H)
    h_proj = h @ weight_hh.T  # (B, 3H)
    if bias_hh is not None:
        h_proj = h_proj + bias_hh
    x_r, x_z, x_n = x_proj.chunk(3, dim=-1)  # each (B, H)
    h_r, h_z, h_n = h_proj.chunk(3, dim=-1)
    r = torch.sigmoid(x_r + h_r)  # reset gate: how much of h enters the candidate
    z = torch.sigmoid(x_z + h_z)  # update gate: how much of the old h to keep
    n = torch.tanh(x_n + r * h_n)  # candidate state
    h = (1 - z) * n + z * h  # (B, H)
    return (h,)


class LSTMSequence(torch.autograd.Function):
    """The LSTM over a whole sequence with a hand-written backward pass (BPTT, 7장).

    Autograd through :func:`lstm_cell` records a dozen small operations per time
    step, and on a CPU their bookkeeping costs more than the arithmetic. Here the
    forward pass computes the same equations without recording, writing each
    step's gate pre-activations into one buffer, and the backward pass walks back
    in time with only the few operations the recursion needs; everything that
    does not depend on the previous step (the activations, the local
    derivatives, the weight gradient) is computed for all steps at once. Tests
    check it against ``torch.nn.LSTM``, :func:`lstm_cell` and ``gradcheck``.
    """

    @staticmethod
    def forward(
        ctx: Any,
        x_proj: torch.Tensor,  # (T, B, 4H)
        h0: torch.Tensor,  # (B, H)
        c0: torch.Tensor,  # (B, H)
        weight_hh: torch.Tensor,  # (4H, H)
        bias_hh: torch.Tensor | None,  # (4H,)
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        hidden = h0.size(-1)
        # Pre-activations of every gate, filled in place step by step and kept for backward.
        gates = x_proj.clone() if bias_hh is None else x_proj + bias_hh  # (T, B, 4H)
        h_list, c_list = [h0], [c0]
        h, c = h0, c0
        for t in range(x_proj.size(0)):
            pre = gates[t].addmm_(h, weight_hh.T)  # (B, 4H) = X_t W_x + b + H_{t-1} W_h
            act = torch.sigmoid(pre)  # i, f and o; the g slice is recomputed below with tanh
            i, f, _, o = act.chunk(4, dim=-1)
            g = torch.tanh(pre[:, 2 * hidden : 3 * hidden])
            c = torch.addcmul(f * c, i, g)  # c_t = f ⊙ c_{t-1} + i ⊙ g
            h = o * torch.tanh(c)  # h_t = o ⊙ tanh(c_t)
            h_list.append(h)
            c_list.append(c)
        hs, cs = torch.stack(h_list), torch.stack(c_list)  # h_0 … h_T and c_0 … c_T, (T+1, B, H)
        ctx.save_for_backward(gates, hs, cs, weight_hh)
        ctx.has_bias = bias_hh is not None
        return hs[1:], hs[-1], cs[-1]

    @staticmethod
    @once_differentiable
    def backward(
        ctx: Any, grad_hs: torch.Tensor, grad_hn: torch.Tensor, grad_cn: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        gates, hs, cs, weight_hh = ctx.saved_tensors
        steps, hidden = gates.size(0), hs.size(-1)
        i, f, g, o = gates.chunk(4, dim=-1)  # pre-activations, each (T, B, H)
        i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
        tanh_c = torch.tanh(cs[1:])  # (T, B, H)
        # ∂c_t/∂(i, f, g pre-activations) and ∂h_t/∂(o pre-activation), all steps at once.
        local = torch.stack(
            (
                g * i * (1 - i),  # ∂c/∂i
                cs[:-1] * f * (1 - f),  # ∂c/∂f
                i * (1 - g * g),  # ∂c/∂g
                tanh_c * o * (1 - o),  # ∂h/∂o
            ),
            dim=2,
        )  # (T, B, 4, H)
        dh_dc = o * (1 - tanh_c * tanh_c)  # ∂h_t/∂c_t through tanh, (T, B, H)
        grad_gates = torch.empty_like(local)  # (T, B, 4, H)
        grad_hs = grad_hs.contiguous()
        dh, dc = grad_hn.clone(), grad_cn.clone()  # gradients flowing in from step t+1
        for t in range(steps - 1, -1, -1):
            dh += grad_hs[t]
            # dc_t = dc_{t+1} ⊙ f_{t+1} + dh_t ⊙ o_t ⊙ (1 - tanh²c_t)
            dc = torch.addcmul(dc, dh, dh_dc[t])
            torch.mul(local[t, :, :3], dc.unsqueeze(1), out=grad_gates[t, :, :3])  # i, f, g
            torch.mul(local[t, :, 3], dh, out=grad_gates[t, :, 3])  # o
            dh = grad_gates[t].view(-1, 4 * hidden) @ weight_hh  # to h_{t-1}
            dc = dc * f[t]  # to c_{t-1}
        grad_gates = grad_gates.view(steps, -1, 4 * hidden)  # (T, B, 4H)
        flat = grad_gates.reshape(-1, 4 * hidden)  # (T·B, 4H)
        # (4H, H); (hsᵀ · flat)ᵀ is faster here than flatᵀ · hs
        grad_weight_hh = (hs[:-1].reshape(-1, hidden).T @ flat).T
        grad_bias_hh = flat.sum(0) if ctx.has_bias else None
        return grad_gates, dh, dc, grad_weight_hh, grad_bias_hh


class LSTM(RecurrentLayer):
    """Long short-term memory, equal to ``torch.nn.LSTM``; state ``(h_n, c_n)``."""

    gate_count = 4
    state_size = 2

    def cell(
        self,
        x_proj: torch.Tensor,
        state: State,
        weight_hh: torch.Tensor,
        bias_hh: torch.Tensor | None,
    ) -> State:
        return lstm_cell(x_proj, state, weight_hh, bias_hh)

    def scan(
        self,
        x_proj: torch.Tensor,
        state: State,
        weight_hh: torch.Tensor,
        bias_hh: torch.Tensor | None,
        reverse: bool,
    ) -> tuple[torch.Tensor, State]:
        if reverse:
            x_proj = x_proj.flip(0)
        hs, h, c = LSTMSequence.apply(x_proj, state[0], state[1], weight_hh, bias_hh)
        return (hs.flip(0) if reverse else hs), (h, c)


class AutogradLSTM(LSTM):
    """The same LSTM, with :func:`lstm_cell` called step by step and recorded by autograd.

    Equal to :class:`LSTM` in every number; only slower. It shows what the
    hand-written backward pass of :class:`LSTMSequence` buys.
    """

    scan = RecurrentLayer.scan


class GRU(RecurrentLayer):
    """Gated recurrent unit, equal to ``torch.nn.GRU``."""

    gate_count = 3

    def cell(
        self,
        x_proj: torch.Tensor,
        state: State,
        weight_hh: torch.Tensor,
        bias_hh: torch.Tensor | None,
    ) -> State:
        return gru_cell(x_proj, state, weight_hh, bias_hh)


_GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def recurrent_parameter_count(
    mode: str,
    input_size: int,
    hidden_size: int,
    num_layers: int = 1,
    bidirectional: bool = False,
    bias: bool = True,
) -> int:
    """``Σ_layers D · G·H·(I_l + H + 2)``: G gates, two bias vectors (b_ih and b_hh) as torch keeps.

    ``I_0`` is ``input_size`` and ``I_l = D·H`` above the first layer.
    """
    if mode not in _GATES:
        raise ValueError(f"mode must be one of {sorted(_GATES)}, got {mode!r}")
    gates = _GATES[mode]
    directions = 2 if bidirectional else 1
    total = 0
    for layer in range(num_layers):
        layer_input = input_size if layer == 0 else directions * hidden_size
        per_direction = gates * hidden_size * (layer_input + hidden_size)
        if bias:
            per_direction += 2 * gates * hidden_size
        total += directions * per_direction
    return total


class SequenceRegressor(nn.Module):
    """Many-to-one: read the whole sequence, predict one number from the last state.

    Used for the adding problem: input (B, T, 2), output (B,). ``builtin=True``
    uses ``torch.nn.RNN``/``LSTM``/``GRU`` (shown equal to ours, and faster on a CPU).
    """

    def __init__(self, cell: str, input_size: int, hidden_size: int, builtin: bool = False) -> None:
        super().__init__()
        ours: dict[str, type[nn.Module]] = {"rnn": RNN, "lstm": LSTM, "gru": GRU}
        torch_layers: dict[str, type[nn.Module]] = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
        if cell not in ours:
            raise ValueError(f"cell must be one of {sorted(ours)}, got {cell!r}")
        layer = (torch_layers if builtin else ours)[cell]
        self.recurrent = layer(input_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hs, _ = self.recurrent(x)  # (B, T, H)
        return self.head(hs[:, -1]).squeeze(-1)  # (B,)
