"""8장 LSTM과 GRU: gated cells from scratch, equal to ``torch.nn.LSTM`` / ``torch.nn.GRU``.

The layers reuse :class:`course_utils.rnn.RecurrentLayer` (multi-layer,
bidirectional, weights named as in torch); only the cell differs. Gates are
stacked in torch's order: LSTM ``i, f, g, o`` and GRU ``r, z, n``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from course_utils.device import get_device, seed_everything
from course_utils.progress import progress
from course_utils.rnn import RNN, RecurrentLayer, State
from course_utils.sequences import adding_problem
from course_utils.train import clip_grad_norm

__all__ = [
    "GRU",
    "LSTM",
    "AddingResult",
    "LSTMSequence",
    "SequenceRegressor",
    "gru_cell",
    "lstm_cell",
    "recurrent_parameter_count",
    "run_adding_problem",
]


def lstm_cell(
    x_proj: torch.Tensor, state: State, weight_hh: torch.Tensor, bias_hh: torch.Tensor | None
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
    x_proj: torch.Tensor, state: State, weight_hh: torch.Tensor, bias_hh: torch.Tensor | None
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
            (g * i * (1 - i), cs[:-1] * f * (1 - f), i * (1 - g * g), tanh_c * o * (1 - o)), 2
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
        grad_weight_hh = (hs[:-1].reshape(-1, hidden).T @ flat).T  # (4H, H); this order is faster
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

    def _scan(
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


@dataclass
class AddingResult:
    """One run of the adding problem: test MSE (1/6 ≈ 0.167 means nothing was learned)."""

    cell: str
    length: int
    test_mse: float
    seconds: float
    parameters: int
    curve: list[float]  # test MSE every ``steps // 10`` updates
    model: SequenceRegressor


def run_adding_problem(
    cell: str,
    length: int,
    steps: int = 800,
    hidden_size: int = 32,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
    builtin: bool = True,
    device: str | torch.device | None = None,
) -> AddingResult:
    """Train a many-to-one model on fresh adding-problem batches; score 1,000 test sequences.

    Adam with gradient clipping at norm 1; the same seed gives the same data
    to every cell, so the cells differ only in the recurrence. The data is
    drawn on the CPU (the same numbers on every machine) and moved to
    ``device`` (default: :func:`course_utils.device.get_device`). The returned
    model is back on the CPU.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 10:
        raise ValueError(f"steps must be an int >= 10, got {steps!r}")
    seed_everything(seed)
    target = get_device() if device is None else torch.device(device)
    model = SequenceRegressor(cell, 2, hidden_size, builtin=builtin).to(target)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    data = torch.Generator().manual_seed(seed + 1)
    test_x, test_y = adding_problem(1000, length, torch.Generator().manual_seed(10_000 + length))
    test_x, test_y = test_x.to(target), test_y.to(target)
    curve = []
    start = time.perf_counter()
    for step in progress(range(1, steps + 1), f"{cell}, T={length}"):
        x, y = adding_problem(batch_size, length, data)
        x, y = x.to(target), y.to(target)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm(model.parameters(), 1.0)
        optimizer.step()
        if step % (steps // 10) == 0:
            with torch.no_grad():
                curve.append(float(torch.nn.functional.mse_loss(model(test_x), test_y)))
    seconds = time.perf_counter() - start
    parameters = sum(p.numel() for p in model.parameters())
    return AddingResult(cell, length, curve[-1], seconds, parameters, curve, model.cpu())
