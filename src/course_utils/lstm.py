"""8장 LSTM과 GRU: gated cells from scratch, equal to ``torch.nn.LSTM`` / ``torch.nn.GRU``.

The layers reuse :class:`course_utils.rnn.RecurrentLayer` (multi-layer,
bidirectional, weights named as in torch); only the cell differs. Gates are
stacked in torch's order: LSTM ``i, f, g, o`` and GRU ``r, z, n``.

The chapter's experiments (:func:`run_adding_problem`, :func:`input_sensitivity`,
:func:`time_recurrent_layers`, :func:`run_char_language_models`) live here, so
that the book and ``tests/test_claims_ch07_ch08.py`` run the same code with the
same settings.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from course_utils.device import get_device, run_size, seed_everything
from course_utils.progress import progress
from course_utils.rnn import (
    RNN,
    CharLMConfig,
    RecurrentLayer,
    RNNLanguageModel,
    State,
    char_lm_config,
    train_char_lm,
)
from course_utils.sequences import adding_problem
from course_utils.train import History, clip_grad_norm

__all__ = [
    "ADDING_LENGTHS",
    "CHAR_LM_COMPARISON_EPOCHS",
    "GRU",
    "LSTM",
    "AddingResult",
    "AutogradLSTM",
    "CharLMComparison",
    "CharLMRun",
    "LSTMSequence",
    "SequenceRegressor",
    "Timing",
    "char_lm_comparison_config",
    "gru_cell",
    "input_sensitivity",
    "lstm_cell",
    "recurrent_parameter_count",
    "run_adding_problem",
    "run_char_language_models",
    "time_forward_backward",
    "time_recurrent_layers",
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


# The adding problem's sequence lengths for each run size (course_utils.device.run_size).
ADDING_LENGTHS = {"small": (10, 50, 100), "large": (10, 50, 100, 200)}


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
    # The training settings, so that the text can quote them from the run itself.
    steps: int
    hidden_size: int
    batch_size: int
    lr: float
    clip_norm: float
    test_size: int

    @property
    def curve_steps(self) -> list[int]:
        """The update counts at which :attr:`curve` was measured."""
        return [self.steps // 10 * (k + 1) for k in range(len(self.curve))]


def run_adding_problem(
    cell: str,
    length: int,
    steps: int = 800,
    hidden_size: int = 32,
    batch_size: int = 64,
    lr: float = 1e-2,
    clip_norm: float = 1.0,
    test_size: int = 1000,
    seed: int = 0,
    builtin: bool = True,
    device: str | torch.device | None = None,
) -> AddingResult:
    """Train a many-to-one model on fresh adding-problem batches; score ``test_size`` sequences.

    Adam with gradient clipping at norm ``clip_norm``; the same seed gives the
    same data to every cell, so the cells differ only in the recurrence. The
    data is drawn on the CPU (the same numbers on every machine) and moved to
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
    test_data = torch.Generator().manual_seed(10_000 + length)
    test_x, test_y = adding_problem(test_size, length, test_data)  # (N, T, 2), (N,)
    test_x, test_y = test_x.to(target), test_y.to(target)
    curve = []
    start = time.perf_counter()
    for step in progress(range(1, steps + 1), f"{cell}, T={length}"):
        x, y = adding_problem(batch_size, length, data)
        x, y = x.to(target), y.to(target)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm(model.parameters(), clip_norm)
        optimizer.step()
        if step % (steps // 10) == 0:
            with torch.no_grad():
                curve.append(float(torch.nn.functional.mse_loss(model(test_x), test_y)))
    seconds = time.perf_counter() - start
    parameters = sum(p.numel() for p in model.parameters())
    return AddingResult(
        cell,
        length,
        curve[-1],
        seconds,
        parameters,
        curve,
        model.cpu(),
        steps=steps,
        hidden_size=hidden_size,
        batch_size=batch_size,
        lr=lr,
        clip_norm=clip_norm,
        test_size=test_size,
    )


def input_sensitivity(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """How strongly the prediction reacts to each step's input: ``mean_b ‖∂ŷ_b/∂x_{b,t}‖``, (T,).

    ``model`` maps ``x`` (B, T, I) to one prediction per sequence (B,), as
    :class:`SequenceRegressor` does.
    """
    if x.dim() != 3:
        expected = "(batch, seq_len, input_size)"
        raise ValueError(f"expected x of shape {expected}, got {tuple(x.shape)}")
    inputs = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(model(inputs).sum(), inputs)  # (B, T, I)
    return grad.norm(dim=-1).mean(dim=0)  # (T,)


@dataclass
class Timing:
    """Seconds of one forward and backward pass per layer, measured in interleaved rounds."""

    seconds: dict[str, list[float]]  # layer name -> one time per round
    input_shape: tuple[int, ...]  # (B, T, I)

    def median(self, name: str) -> float:
        """The median time of ``name`` over the rounds."""
        return statistics.median(self.seconds[name])

    def ratio(self, name: str, baseline: str) -> float:
        """The median over rounds of ``name``'s time divided by ``baseline``'s in the same round."""
        pairs = zip(self.seconds[name], self.seconds[baseline], strict=True)
        return statistics.median(a / b for a, b in pairs)


def time_forward_backward(
    layers: dict[str, nn.Module],
    x: torch.Tensor,
    rounds: int = 9,
) -> Timing:
    """Time a forward and backward pass of each layer on ``x`` (B, T, I), ``rounds`` times.

    Each round times every layer once, one after the other, so that a change of
    the machine's load hits all layers alike; one warm-up pass each comes first.
    The loss is the sum of the outputs.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an int >= 1, got {rounds!r}")

    def once(layer: nn.Module) -> float:
        layer.zero_grad(set_to_none=True)
        start = time.perf_counter()
        out, _ = layer(x)  # (B, T, H)
        out.sum().backward()
        return time.perf_counter() - start

    for layer in layers.values():
        once(layer)
    seconds: dict[str, list[float]] = {name: [] for name in layers}
    for _ in range(rounds):
        for name, layer in layers.items():
            seconds[name].append(once(layer))
    return Timing(seconds, tuple(x.shape))


def time_recurrent_layers(
    batch_size: int = 64,
    length: int = 100,
    input_size: int = 2,
    hidden_size: int = 32,
    rounds: int = 9,
    seed: int = 0,
) -> Timing:
    """Time torch's and our LSTM and GRU on one CPU input, interleaved (8장).

    The layers are named ``"torch.nn.LSTM"``, ``"LSTM"`` (hand-written
    backward), ``"AutogradLSTM"``, ``"torch.nn.GRU"`` and ``"GRU"`` (autograd);
    ours hold the weights copied from torch's, so all LSTMs compute the same
    numbers. The input (batch_size, length, input_size) is the adding problem's.
    """
    seed_everything(seed)
    torch_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
    torch_gru = nn.GRU(input_size, hidden_size, batch_first=True)
    layers: dict[str, nn.Module] = {
        "torch.nn.LSTM": torch_lstm,
        "LSTM": LSTM(input_size, hidden_size, batch_first=True),
        "AutogradLSTM": AutogradLSTM(input_size, hidden_size, batch_first=True),
        "torch.nn.GRU": torch_gru,
        "GRU": GRU(input_size, hidden_size, batch_first=True),
    }
    layers["LSTM"].load_state_dict(torch_lstm.state_dict())
    layers["AutogradLSTM"].load_state_dict(torch_lstm.state_dict())
    layers["GRU"].load_state_dict(torch_gru.state_dict())
    x = torch.randn(batch_size, length, input_size)  # (B, T, I)
    return time_forward_backward(layers, x, rounds)


# ---------------------------------------------------------------------------
# 8장's language models: 6장's character task with torch's LSTM and GRU.
# ---------------------------------------------------------------------------

#: Epochs per ``COURSE_RUN`` size. The CPU run trains three models, so each gets a
#: third of 6장's 24 epochs; the large run is 6장's large run (40 epochs) for every cell.
CHAR_LM_COMPARISON_EPOCHS = {"small": 8, "large": 40}

_LANGUAGE_MODEL_LAYERS: dict[str, type[nn.Module]] = {
    "rnn": nn.RNN,
    "lstm": nn.LSTM,
    "gru": nn.GRU,
}


def char_lm_comparison_config(size: str | None = None) -> CharLMConfig:
    """6장's :func:`~course_utils.rnn.char_lm_config`, with the epochs of this comparison."""
    size = run_size() if size is None else size
    if size not in CHAR_LM_COMPARISON_EPOCHS:
        raise ValueError(f"size must be one of {sorted(CHAR_LM_COMPARISON_EPOCHS)}, got {size!r}")
    return dataclasses.replace(char_lm_config(size), epochs=CHAR_LM_COMPARISON_EPOCHS[size])


@dataclass
class CharLMRun:
    """One trained character language model of the comparison."""

    cell: str  # "rnn", "lstm" or "gru"
    perplexity: float  # the held-out text read once, the state carried over (6장)
    parameters: int  # the whole model: embedding, recurrent layer, output layer
    recurrent_parameters: int  # the recurrent layer alone
    seconds: float  # training time
    history: History = field(repr=False)  # per epoch: training and held-out window losses
    model: RNNLanguageModel = field(repr=False)  # on the device it was trained on


@dataclass
class CharLMComparison:
    """The models of :func:`run_char_language_models`, one run per cell, in the order asked."""

    config: CharLMConfig
    runs: dict[str, CharLMRun]


def _check_chars(chars: object, name: str) -> None:
    if isinstance(chars, str) or not isinstance(chars, Sequence):
        raise TypeError(
            f"{name} must be a list of characters (list(text)), got {type(chars).__name__}"
        )
    if len(chars) < 2:
        raise ValueError(f"{name} must hold at least 2 characters, got {len(chars)}")


def run_char_language_models(
    train_chars: Sequence[str],
    held_out_chars: Sequence[str],
    cells: Sequence[str] = ("rnn", "lstm", "gru"),
    config: CharLMConfig | None = None,
    device: str | torch.device | None = None,
    show_progress: bool = True,
) -> CharLMComparison:
    """Train 6장's character language model once per cell with ``torch.nn.RNN/LSTM/GRU``.

    Everything but the recurrent layer is 6장's :func:`~course_utils.rnn.train_char_lm`:
    the vocabulary, the model around the layer, the windows, the loss, Adam,
    clipping, the seeds and the held-out perplexity. Every cell starts from the
    same seed and sees the same windows in the same order; with the same seed,
    ``torch.nn.RNN`` starts from the very weights of 6장's RNN. ``config``
    defaults to :func:`char_lm_comparison_config`.
    """
    _check_chars(train_chars, "train_chars")
    _check_chars(held_out_chars, "held_out_chars")
    if isinstance(cells, str) or not cells or any(c not in _LANGUAGE_MODEL_LAYERS for c in cells):
        raise ValueError(
            f"cells must be a non-empty list from {sorted(_LANGUAGE_MODEL_LAYERS)}, got {cells!r}"
        )
    if len(set(cells)) != len(cells):
        raise ValueError(f"each cell may appear once in cells, got {list(cells)}")
    config = char_lm_comparison_config() if config is None else config
    if not isinstance(config, CharLMConfig):
        raise TypeError(f"config must be a CharLMConfig, got {type(config).__name__}")
    runs = {}
    for cell in cells:
        # 6장's training with another layer: layer(embedding_size, hidden_size, batch_first=True)
        layer = functools.partial(_LANGUAGE_MODEL_LAYERS[cell], batch_first=True)
        result = train_char_lm(
            train_chars, held_out_chars, config, device, show_progress, recurrent=layer
        )
        runs[cell] = CharLMRun(
            cell=cell,
            perplexity=result.perplexity,
            parameters=result.parameters,
            recurrent_parameters=sum(p.numel() for p in result.model.recurrent.parameters()),
            seconds=result.seconds,
            history=result.history,
            model=result.model,
        )
    return CharLMComparison(config=config, runs=runs)
