"""8장 LSTM과 GRU: gated cells from scratch, equal to ``torch.nn.LSTM`` / ``torch.nn.GRU``.

The layers reuse :class:`course_utils.rnn.RecurrentLayer` (multi-layer,
bidirectional, weights named as in torch); only the cell differs, and the LSTM
runs each direction through :class:`LSTMSequence` (``run_direction``). Gates are
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
    "sigmoid_grad",
    "tanh_grad",
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


def sigmoid_grad(
    grad: torch.Tensor, s: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``grad ⊙ s ⊙ (1 - s)``: the chain rule through ``s = σ(x)``, given ``s``.

    One pass of the kernel autograd itself uses, instead of three; ``out`` is
    written in place when given.
    """
    if out is None:
        return torch.ops.aten.sigmoid_backward(grad, s)
    return torch.ops.aten.sigmoid_backward(grad, s, grad_input=out)


def tanh_grad(grad: torch.Tensor, y: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``grad ⊙ (1 - y²)``: the chain rule through ``y = tanh(x)``, given ``y``.

    One pass, as :func:`sigmoid_grad`.
    """
    if out is None:
        return torch.ops.aten.tanh_backward(grad, y)
    return torch.ops.aten.tanh_backward(grad, y, grad_input=out)


class LSTMSequence(torch.autograd.Function):
    """The LSTM over a whole sequence with a hand-written backward pass (BPTT, 7장).

    Autograd through :func:`lstm_cell` records a dozen small operations per time
    step, and on a CPU their bookkeeping costs more than the arithmetic. Here the
    forward pass computes the same equations without recording: each step's
    gate pre-activations are written into one buffer and turned into the gates
    in place, and the gates, cells and hidden states of every step are kept for
    the backward pass. That pass walks back in time with only the few operations
    the recursion needs; everything that does not depend on the previous step
    (the input product ``X W_x``, the local derivatives, the weight gradients)
    is computed for all steps at once. Tests check it against ``torch.nn.LSTM``,
    :func:`lstm_cell` and ``gradcheck``.

    At the chapter's sizes a step's arithmetic takes less time than the calls
    that start it, so the loops make no call they can do without: every per-step
    view comes from a tuple made before the loop (``x.unbind(0)``; ``x[t]`` in
    the loop would be a call per view and step), results are written in place
    into the buffers, and the loops run in ``torch.inference_mode``, which skips
    autograd's bookkeeping for each call. The forward pass computes each tanh
    as ``tanh(x) = 2σ(2x) - 1``, because torch's sigmoid is several times faster
    than its tanh on a CPU: the rows of g are doubled beforehand and the cell is
    kept doubled during the loop (doubling and halving are exact in floating
    point).
    """

    @staticmethod
    def forward(
        ctx: Any,
        x: torch.Tensor,  # (T, B, I)
        h0: torch.Tensor,  # (B, H)
        c0: torch.Tensor,  # (B, H)
        weight_ih: torch.Tensor,  # (4H, I)
        weight_hh: torch.Tensor,  # (4H, H)
        bias_ih: torch.Tensor | None,  # (4H,)
        bias_hh: torch.Tensor | None,  # (4H,)
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if (bias_ih is None) != (bias_hh is None):
            raise ValueError("bias_ih and bias_hh must both be tensors or both be None")
        steps, batch, hidden = x.size(0), x.size(1), h0.size(-1)
        double_g = x.new_tensor([1.0, 1.0, 2.0, 1.0]).view(4, 1)  # i, f, g, o

        def doubled(weight: torch.Tensor) -> torch.Tensor:  # (4H, ·) with g's rows doubled
            return (weight.view(4, hidden, -1) * double_g[..., None]).view(4 * hidden, -1)

        # X_t W_x + b for every step with g doubled, in one product, (T, B, 4, H); each step
        # adds H_{t-1} W_h and applies σ in place, so that this buffer ends up holding the gates.
        x_2d = x.reshape(-1, x.size(-1))  # (T·B, I)
        weight_x = doubled(weight_ih).T  # (I, 4H)
        if bias_ih is None or bias_hh is None:
            gates = x_2d @ weight_x
        else:  # b = b_x + b_h
            gates = torch.addmm(doubled((bias_ih + bias_hh)[:, None]).view(-1), x_2d, weight_x)
        gates = gates.view(steps, batch, 4, hidden)
        weight_t = doubled(weight_hh).T  # (H, 4H)
        hs = h0.new_empty(steps + 1, batch, hidden)  # h_0 … h_T
        cs = c0.new_empty(steps + 1, batch, hidden)  # 2c_0 … 2c_T, halved after the loop
        tanh_cs = c0.new_empty(steps, batch, hidden)  # tanh(c_1) … tanh(c_T)
        hs[0] = h0
        torch.mul(c0, 2, out=cs[0])
        one = x.new_ones(())  # y.lerp_(one, -1) is y - (1 - y) = 2y - 1
        h, c2 = h0, cs[0]
        # No autograd bookkeeping at all here, not even for views and in-place writes; nothing
        # made in this block leaves it (what forward returns are views made above).
        with torch.inference_mode():
            per_step = zip(
                *(
                    buffer.unbind(0)
                    for buffer in (
                        gates.view(steps, batch, 4 * hidden),
                        *gates.unbind(2),  # i, f, g, o
                        hs[1:],
                        cs[1:],
                        tanh_cs,
                    )
                ),
                strict=True,
            )
            for gates_t, i, f, g, o, h_t, c2_t, tanh_c in per_step:
                gates_t.addmm_(h, weight_t).sigmoid_()  # i, f, o; σ(2·pre-activation) for g
                g.lerp_(one, -1)  # g = tanh(pre-activation)
                # 2c_t = f ⊙ 2c_{t-1} + 2 i ⊙ g, and h_t = o ⊙ tanh(c_t) = o ⊙ (2σ(2c_t) - 1)
                c2 = torch.mul(f, c2, out=c2_t).addcmul_(i, g, value=2)
                h = torch.mul(o, torch.sigmoid(c2, out=tanh_c).lerp_(one, -1), out=h_t)
        cs.mul_(0.5)
        ctx.save_for_backward(gates, hs, cs, tanh_cs, weight_hh, x_2d, weight_ih)
        ctx.has_bias = bias_ih is not None
        return hs[1:], hs[-1], cs[-1]  # views made outside inference mode

    @staticmethod
    @once_differentiable
    def backward(
        ctx: Any, grad_hs: torch.Tensor, grad_hn: torch.Tensor, grad_cn: torch.Tensor
    ) -> tuple[torch.Tensor | None, ...]:
        gates, hs, cs, tanh_c, weight_hh, x_2d, weight_ih = ctx.saved_tensors
        steps, batch, _, hidden = gates.shape
        i, f, g, o = gates.unbind(2)  # the gates of every step, each (T, B, H)
        # Local derivatives, all steps at once: ∂c_t/∂(pre-activations of i, f, g) and
        # ∂h_t/∂(pre-activation of o). The loop multiplies them in place by dc_t or dh_t,
        # which turns this buffer into the gradient of the pre-activations.
        grad_gates = torch.empty_like(gates)  # (T, B, 4, H)
        d_i, d_f, d_g, d_o = grad_gates.unbind(2)
        sigmoid_grad(g, i, out=d_i)  # g ⊙ i ⊙ (1 - i)
        sigmoid_grad(cs[:-1], f, out=d_f)  # c_{t-1} ⊙ f ⊙ (1 - f)
        tanh_grad(i, g, out=d_g)  # i ⊙ (1 - g²)
        sigmoid_grad(tanh_c, o, out=d_o)  # tanh(c_t) ⊙ o ⊙ (1 - o)
        dh_dc = tanh_grad(o, tanh_c)  # ∂h_t/∂c_t = o ⊙ (1 - tanh²c_t), (T, B, H)
        # ∂L/∂h_0 … ∂L/∂h_T; so far what comes from the outputs, the loop adds the rest.
        grad_h = torch.cat((torch.zeros_like(grad_hn)[None], grad_hs))  # (T+1, B, H)
        grad_h[-1] += grad_hn
        dc = grad_cn.unsqueeze(1)  # what reaches c_t from step t+1
        with torch.inference_mode():  # as in forward; dc is cloned out below
            # One view per step of each, made here at once, from the last step back to the
            # first; dh and dc are (B, 1, H) so that they broadcast over the gates.
            per_step = zip(
                *(
                    reversed(buffer.unbind(0))
                    for buffer in (
                        grad_gates[:, :, :3],  # i, f, g
                        grad_gates[:, :, 3:],  # o
                        grad_gates.view(steps, batch, 4 * hidden),
                        dh_dc.unsqueeze(2),
                        f.unsqueeze(2),
                        grad_h[1:].unsqueeze(2),  # ∂L/∂h_t
                        grad_h[:-1],  # ∂L/∂h_{t-1}
                    )
                ),
                strict=True,
            )
            for grad_ifg, grad_o, grad_matrix, dh_dc_t, f_t, dh, dh_prev in per_step:
                # dc_t = dc_{t+1} ⊙ f_{t+1} + dh_t ⊙ o_t ⊙ (1 - tanh²c_t)
                dc = torch.addcmul(dc, dh, dh_dc_t)
                grad_ifg.mul_(dc)
                grad_o.mul_(dh)
                dh_prev.addmm_(grad_matrix, weight_hh)  # to h_{t-1}: (B, 4H) · (4H, H)
                dc = dc * f_t  # to c_{t-1}
        grad_c0 = dc.squeeze(1).clone()  # made in inference mode: clone it out for autograd
        flat = grad_gates.view(-1, 4 * hidden)  # (T·B, 4H), ∂L/∂(pre-activations)
        # The weights' gradients, all steps in one product each: (Xᵀ · flat)ᵀ (4H, I) and
        # (Hᵀ · flat)ᵀ (4H, H), faster here than flatᵀ · X and flatᵀ · H.
        grad_weight_ih = (x_2d.T @ flat).T
        grad_weight_hh = (hs[:-1].reshape(-1, hidden).T @ flat).T
        grad_bias = flat.sum(0) if ctx.has_bias else None  # bias_ih, bias_hh: added alike, same
        grad_x = (flat @ weight_ih).view(steps, batch, -1) if ctx.needs_input_grad[0] else None
        return grad_x, grad_h[0], grad_c0, grad_weight_ih, grad_weight_hh, grad_bias, grad_bias


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

    def run_direction(
        self,
        xs: torch.Tensor,
        state: State,
        weight_ih: torch.Tensor,
        weight_hh: torch.Tensor,
        bias_ih: torch.Tensor | None,
        bias_hh: torch.Tensor | None,
        reverse: bool,
    ) -> tuple[torch.Tensor, State]:
        """The input product and the loop over time in one :class:`LSTMSequence`."""
        if reverse:
            xs = xs.flip(0)
        hs, h, c = LSTMSequence.apply(
            xs, state[0], state[1], weight_ih, weight_hh, bias_ih, bias_hh
        )
        return (hs.flip(0) if reverse else hs), (h, c)


class AutogradLSTM(LSTM):
    """The same LSTM, with :func:`lstm_cell` called step by step and recorded by autograd.

    Equal to :class:`LSTM` in every number; only slower. It shows what the
    hand-written backward pass of :class:`LSTMSequence` buys.
    """

    run_direction = RecurrentLayer.run_direction


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
