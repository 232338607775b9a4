"""6장 순환 신경망(RNN): the recurrent layer from scratch, and a language model on top.

``H_t = tanh(X_t W_xh + H_{t-1} W_hh + b)``, one cell applied at every time step
with the same weights. The layer keeps its weights under the names and shapes
``torch.nn.RNN`` uses (``weight_ih_l0`` is ``W_xh`` transposed), so
``ours.load_state_dict(torch_rnn.state_dict())`` copies them over and the two
can be compared number for number. 8장 reuses :class:`RecurrentLayer` for the
LSTM and the GRU: only the cell changes (and the LSTM replaces
:meth:`RecurrentLayer.run_direction` with a hand-written backward pass).

:class:`LineClassifier` (many-to-one) and :class:`SpacingTagger` (many-to-many)
are the models of the chapter's two tasks; the experiments that train them are
in :mod:`course_utils.experiments.ch06_rnn`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from course_utils.checks import check_int

__all__ = [
    "RNN",
    "LineClassifier",
    "RNNLanguageModel",
    "RecurrentLayer",
    "SpacingTagger",
    "State",
    "generate",
    "lm_loss",
    "perplexity",
    "rnn_cell",
]

#: A cell's state: ``(h,)`` for the RNN and the GRU, ``(h, c)`` for the LSTM; each (B, H).
State = tuple[torch.Tensor, ...]


def rnn_cell(
    x_proj: torch.Tensor,
    state: State,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
    nonlinearity: str = "tanh",
) -> State:
    """One step ``H_t = tanh(X_t W_xh + b_xh + H_{t-1} W_hh + b_hh)``.

    ``x_proj`` is ``X_t W_xh + b_xh`` (B, H), computed for all steps at once by the layer.
    """
    (h,) = state  # (B, H)
    pre = x_proj + h @ weight_hh.T  # (B, H)
    if bias_hh is not None:
        pre = pre + bias_hh
    return (torch.tanh(pre) if nonlinearity == "tanh" else torch.relu(pre),)


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


class RecurrentLayer(nn.Module):
    """Multi-layer, optionally bidirectional recurrent layer; subclasses supply the cell.

    Arguments and shapes follow ``torch.nn.RNN``: input (T, B, I), or (B, T, I) with
    ``batch_first=True``; output (…, D·H) with D = 2 if bidirectional else 1.
    """

    #: Rows of ``weight_ih`` per hidden unit: 1 for the RNN, 3 for the GRU, 4 for the LSTM.
    gate_count = 1
    #: Tensors in the state: 1 (h) or 2 (h, c).
    state_size = 1

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        bidirectional: bool = False,
    ) -> None:
        super().__init__()
        for name, value in (
            ("input_size", input_size),
            ("hidden_size", hidden_size),
            ("num_layers", num_layers),
        ):
            check_int(value, name)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.bidirectional = bidirectional
        self.num_directions = 2 if bidirectional else 1
        rows = self.gate_count * hidden_size
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * self.num_directions
            for suffix in self._suffixes(layer):
                self.register_parameter(
                    f"weight_ih{suffix}", nn.Parameter(torch.empty(rows, layer_input))
                )
                self.register_parameter(
                    f"weight_hh{suffix}", nn.Parameter(torch.empty(rows, hidden_size))
                )
                if bias:
                    self.register_parameter(f"bias_ih{suffix}", nn.Parameter(torch.empty(rows)))
                    self.register_parameter(f"bias_hh{suffix}", nn.Parameter(torch.empty(rows)))
        self.reset_parameters()

    def _suffixes(self, layer: int) -> list[str]:
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.num_directions]

    def reset_parameters(self) -> None:
        """Uniform in ``[-1/√H, 1/√H]``, as ``torch.nn.RNN`` initialises."""
        bound = 1 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            nn.init.uniform_(weight, -bound, bound)

    def cell(
        self,
        x_proj: torch.Tensor,
        state: State,
        weight_hh: torch.Tensor,
        bias_hh: torch.Tensor | None,
    ) -> State:
        """One time step of one direction: ``x_proj`` (B, G·H) → new state."""
        raise NotImplementedError

    def _check_input(self, input: torch.Tensor) -> None:
        layout = (
            "(batch, seq_len, input_size)" if self.batch_first else "(seq_len, batch, input_size)"
        )
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"input must be a torch.Tensor {layout}, got {type(input).__name__}")
        if input.dim() != 3 or input.size(-1) != self.input_size:
            hint = (
                " (is the batch dimension missing? use x.unsqueeze(...))"
                if input.dim() == 2
                else ""
            )
            raise ValueError(
                f"expected input of shape {layout} with input_size={self.input_size}, "
                f"got {_shape(input)}{hint}"
            )
        if input.size(0) == 0 or input.size(1) == 0:
            raise ValueError(
                f"input must have at least one time step and one sequence, got {_shape(input)}"
            )

    def _initial_state(
        self, hx: torch.Tensor | State | None, batch: int, like: torch.Tensor
    ) -> list[torch.Tensor]:
        expected = (self.num_layers * self.num_directions, batch, self.hidden_size)
        if hx is None:
            zeros = like.new_zeros(expected)
            return [zeros] * self.state_size
        parts = list(hx) if isinstance(hx, tuple | list) else [hx]
        names = "(h_0, c_0)" if self.state_size == 2 else "h_0"
        if len(parts) != self.state_size:
            raise ValueError(f"expected the initial state as {names}, got {len(parts)} tensor(s)")
        for part in parts:
            if not isinstance(part, torch.Tensor) or _shape(part) != expected:
                got = _shape(part) if isinstance(part, torch.Tensor) else type(part).__name__
                raise ValueError(
                    "expected an initial state of shape (num_layers * num_directions, batch, "
                    f"hidden_size) = {expected}, got {got}"
                )
        return parts

    def forward(
        self, input: torch.Tensor, hx: torch.Tensor | State | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | State]:
        """Run every layer over the whole sequence; return (output, final state).

        The final state is ``h_n`` (L·D, B, H), or ``(h_n, c_n)`` for the LSTM.
        """
        self._check_input(input)
        xs = input.transpose(0, 1) if self.batch_first else input  # (T, B, I)
        start = self._initial_state(hx, xs.size(1), xs)
        finals: list[State] = []
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(self._suffixes(layer)):
                index = layer * self.num_directions + direction
                state = tuple(part[index] for part in start)  # each (B, H)
                hs, state = self.run_direction(
                    xs,
                    state,
                    getattr(self, f"weight_ih{suffix}"),
                    getattr(self, f"weight_hh{suffix}"),
                    getattr(self, f"bias_ih{suffix}") if self.bias else None,
                    getattr(self, f"bias_hh{suffix}") if self.bias else None,
                    reverse=direction == 1,
                )
                outputs.append(hs)  # (T, B, H)
                finals.append(state)
            xs = torch.cat(outputs, dim=-1)  # (T, B, D·H): the next layer's input
        output = xs.transpose(0, 1) if self.batch_first else xs
        stacked = tuple(torch.stack([s[k] for s in finals]) for k in range(self.state_size))
        return output, (stacked if self.state_size == 2 else stacked[0])

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
        """One direction of one layer: input ``xs`` (T, B, I) → every h_t (T, B, H), final state."""
        # The input half of every gate for every step in one matrix product,
        # X W_x + b_x (T, B, G·H), as F.linear(xs, weight_ih, bias_ih) computes it.
        # weight_ih is W_x transposed, as torch keeps it; multiplying by a contiguous
        # copy of W_x makes autograd compute W_x's gradient as Xᵀ · ∂L/∂(X W_x),
        # which is several times faster than F.linear's (∂L/∂(X W_x)ᵀ · X)ᵀ when the
        # input is narrow (the adding problem's I = 2).
        x_2d = xs.reshape(-1, xs.size(-1))  # (T·B, I)
        weight_x = weight_ih.T.contiguous()  # (I, G·H)
        x_proj = (
            x_2d @ weight_x if bias_ih is None else torch.addmm(bias_ih, x_2d, weight_x)
        ).view(xs.size(0), xs.size(1), -1)
        return self.scan(x_proj, state, weight_hh, bias_hh, reverse)  # the cell along time

    def scan(
        self,
        x_proj: torch.Tensor,
        state: State,
        weight_hh: torch.Tensor,
        bias_hh: torch.Tensor | None,
        reverse: bool,
    ) -> tuple[torch.Tensor, State]:
        """Apply the cell along time (backwards when ``reverse``); return all h_t (T, B, H)."""
        steps = range(x_proj.size(0) - 1, -1, -1) if reverse else range(x_proj.size(0))
        hs: list[torch.Tensor] = [x_proj.new_empty(0)] * x_proj.size(0)
        for t in steps:
            state = self.cell(x_proj[t], state, weight_hh, bias_hh)
            hs[t] = state[0]
        return torch.stack(hs), state

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
            f"batch_first={self.batch_first}, bidirectional={self.bidirectional}"
        )


class RNN(RecurrentLayer):
    """The Elman RNN, equal to ``torch.nn.RNN`` (``nonlinearity`` ``"tanh"`` or ``"relu"``)."""

    def __init__(self, *args: object, nonlinearity: str = "tanh", **kwargs: object) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def cell(
        self,
        x_proj: torch.Tensor,
        state: State,
        weight_hh: torch.Tensor,
        bias_hh: torch.Tensor | None,
    ) -> State:
        return rnn_cell(x_proj, state, weight_hh, bias_hh, self.nonlinearity)


class RNNLanguageModel(nn.Module):
    """Embedding → recurrent layer (``batch_first=True``) → linear: next-token logits.

    ``forward(ids (B, T), state)`` returns logits (B, T, V) and the final state,
    so a long text can be read in pieces with the state carried over.
    """

    def __init__(self, vocab_size: int, recurrent: RecurrentLayer, dropout: float = 0.0) -> None:
        super().__init__()
        if not getattr(recurrent, "batch_first", False):
            raise ValueError("the recurrent layer must be built with batch_first=True")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, recurrent.input_size)
        self.recurrent = recurrent
        self.dropout = nn.Dropout(dropout)
        directions = 2 if getattr(recurrent, "bidirectional", False) else 1
        self.output = nn.Linear(recurrent.hidden_size * directions, vocab_size)

    def forward(
        self, ids: torch.Tensor, state: torch.Tensor | State | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | State]:
        if ids.dim() != 2:
            raise ValueError(f"expected ids of shape (batch, seq_len), got {_shape(ids)}")
        x = self.dropout(self.embedding(ids))  # (B, T, E)
        hs, state = self.recurrent(x, state)  # (B, T, H)
        return self.output(self.dropout(hs)), state  # (B, T, V)


def lm_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of next-token prediction; ``batch`` is (X, Y), each (B, T)."""
    device = next(model.parameters()).device
    x, y = (part.to(device) for part in batch)
    logits, _ = model(x)  # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))


@torch.no_grad()
def perplexity(model: RNNLanguageModel, ids: torch.Tensor, chunk: int = 256) -> float:
    """``exp`` of the mean negative log-likelihood of ``ids[1:]`` given everything before.

    The text is read once, left to right, in pieces of ``chunk`` tokens with the
    state carried over, so every prediction sees the whole history.
    """
    if ids.dim() != 1 or ids.numel() < 2:
        raise ValueError(f"ids must be a 1-D tensor of at least 2 token ids, got {_shape(ids)}")
    model.eval()
    device = next(model.parameters()).device
    state = None
    total, count = 0.0, 0
    for start in range(0, ids.numel() - 1, chunk):
        x = ids[start : start + chunk].to(device)
        y = ids[start + 1 : start + chunk + 1].to(device)
        x = x[: y.numel()]
        logits, state = model(x.unsqueeze(0), state)  # (1, t, V)
        total += float(F.cross_entropy(logits[0], y, reduction="sum"))
        count += y.numel()
    return math.exp(total / count)


@torch.no_grad()
def generate(
    model: RNNLanguageModel,
    prefix: Sequence[int],
    length: int,
    temperature: float = 1.0,
    seed: int = 0,
) -> list[int]:
    """Sample ``length`` token ids after ``prefix`` from ``softmax(logits / temperature)``.

    Low temperatures sharpen the distribution toward the most likely token;
    ``temperature → 0`` is greedy decoding, 1 samples the model as trained.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if len(prefix) == 0:
        raise ValueError("prefix must contain at least one token id")
    model.eval()
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    logits, state = model(torch.tensor([list(prefix)], device=device))  # (1, T, V)
    out: list[int] = []
    for _ in range(length):
        probs = torch.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)  # (V,)
        token = int(torch.multinomial(probs, 1, generator=generator))
        out.append(token)
        logits, state = model(torch.tensor([[token]], device=device), state)
    return out


# ---------------------------------------------------------------------------
# The models of 6장's tasks: many-to-one and many-to-many
# ---------------------------------------------------------------------------


class LineClassifier(nn.Module):
    """Many-to-one: character ids (B, T) → logits (B, 2), from the last hidden state."""

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 64,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.rnn = RNN(embedding_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h_n = self.rnn(self.embedding(x))  # h_n: (1, B, H)
        return self.head(h_n[-1])  # (B, 2)


class SpacingTagger(nn.Module):
    """Many-to-many of the same length: character ids (B, T) → logits (B, T, 2)."""

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int = 32,
        hidden_size: int = 64,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.rnn = RNN(
            embedding_size,
            hidden_size,
            batch_first=True,
            bidirectional=True,  # one pass left to right, one right to left
        )
        self.head = nn.Linear(2 * hidden_size, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hs, _ = self.rnn(self.embedding(x))  # (B, T, 2H): both directions
        return self.head(hs)  # (B, T, 2)
