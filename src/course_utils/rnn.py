"""6장 순환 신경망(RNN): the recurrent layer from scratch, and a language model on top.

``H_t = tanh(X_t W_xh + H_{t-1} W_hh + b)``, one cell applied at every time step
with the same weights. The layer keeps its weights under the names and shapes
``torch.nn.RNN`` uses (``weight_ih_l0`` is ``W_xh`` transposed), so
``ours.load_state_dict(torch_rnn.state_dict())`` copies them over and the two
can be compared number for number. 8장 reuses :class:`RecurrentLayer` for the
LSTM and the GRU: only the cell changes.

The chapter's experiments live here too, one function each, called by the
chapter and by its claim test: :func:`train_char_lm` (the character language
model and its held-out perplexity), :func:`sample_at_temperatures` (what the
samples are made of at each temperature), :func:`run_line_classifier`
(many-to-one), :func:`run_spacing_tagger` (many-to-many) and :func:`state_norms`
(why the state's nonlinearity is tanh).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

from course_utils.datasets import load_kobill, load_kolaw, split_lines
from course_utils.device import get_device, run_size, seed_everything
from course_utils.sequences import lm_windows
from course_utils.train import History, fit
from course_utils.vocab import Vocab

__all__ = [
    "RNN",
    "CharLMConfig",
    "CharLMResult",
    "LineClassifier",
    "LineClassifierResult",
    "RNNLanguageModel",
    "RecurrentLayer",
    "SpacingResult",
    "SpacingTagger",
    "State",
    "StateNorms",
    "TemperatureSamples",
    "char_lm_config",
    "char_vocab",
    "encode_lines",
    "generate",
    "lm_loss",
    "perplexity",
    "restore_spacing",
    "rnn_cell",
    "run_line_classifier",
    "run_spacing_tagger",
    "sample_at_temperatures",
    "source_lines",
    "spacing_stream",
    "state_norms",
    "train_char_lm",
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
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
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
                weight_ih = getattr(self, f"weight_ih{suffix}")
                bias_ih = getattr(self, f"bias_ih{suffix}") if self.bias else None
                # The input half of every gate for every step in one matrix product.
                x_proj = F.linear(xs, weight_ih, bias_ih)  # (T, B, G·H)
                state = tuple(part[index] for part in start)  # each (B, H)
                hs, state = self.scan(
                    x_proj,
                    state,
                    getattr(self, f"weight_hh{suffix}"),
                    getattr(self, f"bias_hh{suffix}") if self.bias else None,
                    reverse=direction == 1,
                )
                outputs.append(hs)  # (T, B, H)
                finals.append(state)
            xs = torch.cat(outputs, dim=-1)  # (T, B, D·H): the next layer's input
        output = xs.transpose(0, 1) if self.batch_first else xs
        stacked = tuple(torch.stack([s[k] for s in finals]) for k in range(self.state_size))
        return output, (stacked if self.state_size == 2 else stacked[0])

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
# 6장's experiments: one function each, called by the chapter and its claim test.
# ---------------------------------------------------------------------------


#: A list of (inputs, targets) batches, what ``fit`` takes once per epoch.
Batches = list[tuple[torch.Tensor, torch.Tensor]]


def char_vocab(train_chars: Sequence[str]) -> Vocab:
    """The characters of the training text, sorted, after ``<unk>`` (id 0)."""
    if isinstance(train_chars, str):
        raise TypeError("train_chars must be a list of characters: pass list(text)")
    return Vocab(sorted(set(train_chars)), specials=["<unk>"])


@dataclass
class CharLMConfig:
    """Settings of the character language model; the defaults are the CPU run."""

    epochs: int = 24  # passes over the training text
    embedding_size: int = 64  # E: a character's vector
    hidden_size: int = 256  # H: the hidden state
    dropout: float = 0.2  # on embeddings and hidden states, while training
    batch_size: int = 32  # windows per batch
    num_steps: int = 64  # T: characters per window
    lr: float = 3e-3  # Adam's learning rate
    clip_norm: float = 1.0  # gradient norm clipping (7장)
    seed: int = 0  # initial weights, dropout and where the windows are cut


#: Epochs per ``COURSE_RUN`` size: a few minutes on a laptop CPU, or longer on a GPU.
CHAR_LM_EPOCHS = {"small": 24, "large": 40}


def char_lm_config(size: str | None = None) -> CharLMConfig:
    """The chapter's configuration for ``size`` (default: :func:`run_size`)."""
    size = run_size() if size is None else size
    if size not in CHAR_LM_EPOCHS:
        raise ValueError(f"size must be one of {sorted(CHAR_LM_EPOCHS)}, got {size!r}")
    return CharLMConfig(epochs=CHAR_LM_EPOCHS[size])


@dataclass
class CharLMResult:
    """A trained character language model and its held-out perplexity."""

    config: CharLMConfig
    vocab: Vocab
    model: RNNLanguageModel  # on the device it was trained on
    history: History  # per epoch: training loss, and the loss on held-out windows
    perplexity: float  # the held-out text read once, the state carried over
    seconds: float
    parameters: int


def train_char_lm(
    train_chars: Sequence[str],
    held_out_chars: Sequence[str],
    config: CharLMConfig | None = None,
    device: str | torch.device | None = None,
    show_progress: bool = True,
    recurrent: Callable[[int, int], nn.Module] | None = None,
) -> CharLMResult:
    """Train the RNN language model of 6장 on characters; score the held-out text.

    Each epoch cuts the training text into windows of ``num_steps`` characters
    at a random offset and shuffles them (:func:`lm_windows`). The recorded
    held-out loss uses windows whose state starts at zero; ``perplexity`` reads
    the whole held-out text once, as the n-gram models of 5장 do. Seeded: the
    same configuration on the same device gives the same numbers.
    ``recurrent(embedding_size, hidden_size)`` builds another recurrent layer
    (``batch_first=True``) in place of 6장's RNN: 8장 passes torch's LSTM and GRU.
    """
    config = char_lm_config() if config is None else config
    vocab = char_vocab(train_chars)
    train_ids = torch.tensor(vocab.encode(list(train_chars)))  # (N,)
    held_out_ids = torch.tensor(vocab.encode(list(held_out_chars)))  # (M,)
    target = get_device() if device is None else torch.device(device)
    seed_everything(config.seed)
    if recurrent is None:
        layer: nn.Module = RNN(config.embedding_size, config.hidden_size, batch_first=True)
    else:
        layer = recurrent(config.embedding_size, config.hidden_size)
    # torch's layers have the attributes RNNLanguageModel reads from a RecurrentLayer.
    model = RNNLanguageModel(len(vocab), layer, dropout=config.dropout)  # type: ignore[arg-type]
    windows = torch.Generator().manual_seed(config.seed)  # new cuts every epoch

    def train_batches() -> Batches:
        return lm_windows(train_ids, config.batch_size, config.num_steps, windows)

    def val_batches() -> Batches:
        same_cuts = torch.Generator().manual_seed(1)  # the same windows every epoch
        return lm_windows(held_out_ids, 16, config.num_steps, same_cuts)

    start = time.perf_counter()
    history = fit(
        model,
        train_batches,
        lm_loss,
        torch.optim.Adam(model.parameters(), lr=config.lr),
        epochs=config.epochs,
        clip_norm=config.clip_norm,
        val_batches=val_batches,
        device=target,
        seed=config.seed,
        show_progress=show_progress,
    )
    seconds = time.perf_counter() - start
    return CharLMResult(
        config=config,
        vocab=vocab,
        model=model,
        history=history,
        perplexity=perplexity(model, held_out_ids.to(target)),
        seconds=seconds,
        parameters=sum(p.numel() for p in model.parameters()),
    )


def source_lines() -> list[tuple[str, int]]:
    """Every line with a letter in it, labelled 0 (constitution) or 1 (bills)."""

    def clean(text: str) -> list[str]:
        return [" ".join(line.split()) for line in text.splitlines() if any(map(str.isalpha, line))]

    law = [(line, 0) for line in clean(load_kolaw())]
    bills = [(line, 1) for text in load_kobill().values() for line in clean(text)]
    return law + bills


def encode_lines(
    pairs: Sequence[tuple[str, int]], vocab: Vocab, max_chars: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Character ids (N, max_chars), padded with ``<pad>`` on the left, and labels (N,).

    Padding in front keeps every line's last character at the last time step,
    where the many-to-one model reads its answer.
    """
    x = torch.full((len(pairs), max_chars), vocab.pad_id, dtype=torch.long)  # (N, T)
    for row, (line, _) in enumerate(pairs):
        ids = vocab.encode(list(line[:max_chars]))
        x[row, max_chars - len(ids) :] = torch.tensor(ids, dtype=torch.long)
    return x, torch.tensor([label for _, label in pairs])


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


@dataclass
class LineClassifierResult:
    """Which text a line comes from, read by :class:`LineClassifier`."""

    accuracy: float  # on the held-out lines
    majority: float  # accuracy of always answering the larger class
    train_lines: int
    test_lines: int
    model: LineClassifier = field(repr=False)


def run_line_classifier(
    epochs: int = 8,
    max_chars: int = 48,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    device: str | torch.device | None = None,
    show_progress: bool = True,
) -> LineClassifierResult:
    """Train :class:`LineClassifier` to tell constitution lines from bill lines.

    Every fifth line is held out (:func:`split_lines`); lines are cut to
    ``max_chars`` characters. Seeded: the same settings give the same numbers.
    """
    train_pairs, test_pairs = split_lines(source_lines())
    chars = sorted({c for line, _ in train_pairs for c in line})
    vocab = Vocab(chars, specials=["<pad>", "<unk>"])
    x_train, y_train = encode_lines(train_pairs, vocab, max_chars)
    x_test, y_test = encode_lines(test_pairs, vocab, max_chars)
    target = get_device() if device is None else torch.device(device)
    seed_everything(seed)
    model = LineClassifier(len(vocab))
    order = torch.Generator().manual_seed(seed)

    def batches() -> Batches:
        rows = torch.randperm(len(y_train), generator=order).split(batch_size)
        return [(x_train[r], y_train[r]) for r in rows]

    def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(m(batch[0].to(target)), batch[1].to(target))

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    fit(model, batches, loss_fn, optimizer, epochs, device=target, seed=seed,
        show_progress=show_progress)  # fmt: skip
    model.eval()
    with torch.no_grad():
        predicted = model(x_test.to(target)).argmax(-1).cpu()  # (N,)
    share = y_test.float().mean().item()
    return LineClassifierResult(
        accuracy=(predicted == y_test).float().mean().item(),
        majority=max(share, 1 - share),
        train_lines=len(train_pairs),
        test_lines=len(test_pairs),
        model=model,
    )


def spacing_stream(
    chars: Sequence[str],
    vocab: Vocab,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids of the characters without spaces (N,), and 1 where a space followed (N,)."""
    ids: list[int] = []
    labels: list[int] = []
    for char in chars:
        if char == " ":
            if labels:
                labels[-1] = 1
            continue
        ids.append(vocab.encode([char])[0])
        labels.append(0)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(labels, dtype=torch.long)


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


@dataclass
class SpacingResult:
    """Where the spaces go in the held-out text, tagged by :class:`SpacingTagger`."""

    accuracy: float  # share of held-out characters tagged right
    all_joined: float  # accuracy of never putting a space
    characters: int  # held-out characters tagged (spaces removed)
    vocab: Vocab = field(repr=False)
    model: SpacingTagger = field(repr=False)


def run_spacing_tagger(
    train_chars: Sequence[str],
    held_out_chars: Sequence[str],
    epochs: int = 6,
    num_steps: int = 48,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    device: str | torch.device | None = None,
    show_progress: bool = True,
) -> SpacingResult:
    """Train :class:`SpacingTagger` to restore the spaces of text written without them.

    Training windows of ``num_steps`` characters are cut as for the language
    model; the held-out text is tagged in one piece. Seeded.
    """
    vocab = char_vocab(train_chars)
    train_x, train_y = spacing_stream(train_chars, vocab)
    test_x, test_y = spacing_stream(held_out_chars, vocab)
    positions = torch.arange(len(train_x))
    target = get_device() if device is None else torch.device(device)
    seed_everything(seed)
    model = SpacingTagger(len(vocab))
    cuts = torch.Generator().manual_seed(seed)

    def batches() -> Batches:
        windows = lm_windows(positions, batch_size, num_steps, generator=cuts)
        return [(train_x[p], train_y[p]) for p, _ in windows]  # each (B, T)

    def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        logits = m(batch[0].to(target))  # (B, T, 2)
        return F.cross_entropy(logits.flatten(0, 1), batch[1].to(target).flatten())

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    fit(model, batches, loss_fn, optimizer, epochs, device=target, seed=seed,
        show_progress=show_progress)  # fmt: skip
    model.eval()
    with torch.no_grad():
        predicted = model(test_x.unsqueeze(0).to(target))[0].argmax(-1).cpu()  # (N,)
    return SpacingResult(
        accuracy=(predicted == test_y).float().mean().item(),
        all_joined=1 - test_y.float().mean().item(),
        characters=len(test_y),
        vocab=vocab,
        model=model,
    )


@torch.no_grad()
def restore_spacing(model: SpacingTagger, vocab: Vocab, chars: Sequence[str]) -> str:
    """``chars`` with its spaces removed and put back where ``model`` says."""
    x, _ = spacing_stream(chars, vocab)
    model.eval()
    device = next(model.parameters()).device
    marks = model(x.unsqueeze(0).to(device))[0].argmax(-1).cpu()  # (N,)
    letters = [c for c in chars if c != " "]  # as written, unknown characters included
    return "".join(c + (" " if m else "") for c, m in zip(letters, marks.tolist(), strict=True))


@dataclass
class TemperatureSamples:
    """Texts sampled at one temperature, and what they are made of."""

    temperature: float
    length: int  # characters drawn per text
    texts: list[str]  # one per seed, the prefix not included
    distinct_chars: float  # different characters per text, averaged over the texts
    known_trigrams: float  # share of the texts' 3-character pieces found in the training text
    repeated_4grams: float  # share of 4-character pieces already seen earlier in the same text


def _pieces(text: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return list(zip(*(text[i:] for i in range(n)), strict=False))


def sample_at_temperatures(
    model: RNNLanguageModel,
    vocab: Vocab,
    train_chars: Sequence[str],
    prefix: str = "대한민국",
    temperatures: Sequence[float] = (0.2, 0.5, 0.7, 1.0, 1.5),
    length: int = 200,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
) -> list[TemperatureSamples]:
    """Sample ``length`` characters after ``prefix`` once per seed at each temperature.

    Two measurements tell apart copying, looping and babbling:
    ``known_trigrams`` (how much of the text the training text also has) and
    ``repeated_4grams`` (how much of the text repeats itself). Seeded.
    """
    if length < 4:
        raise ValueError(f"length must be >= 4 (4-character pieces), got {length}")
    seen = set(_pieces(list(train_chars), 3))
    results = []
    for temperature in temperatures:
        drawn = []  # one list of characters per seed ('<unk>' counts as one)
        for seed in seeds:
            ids = generate(model, vocab.encode(list(prefix)), length, temperature, seed)
            drawn.append(vocab.decode(ids))
        trigrams = [gram for chars in drawn for gram in _pieces(chars, 3)]
        fourgrams = [_pieces(chars, 4) for chars in drawn]
        repeated = sum(len(grams) - len(set(grams)) for grams in fourgrams)
        results.append(
            TemperatureSamples(
                temperature=temperature,
                length=length,
                texts=["".join(chars) for chars in drawn],
                distinct_chars=sum(len(set(chars)) for chars in drawn) / len(drawn),
                known_trigrams=sum(gram in seen for gram in trigrams) / len(trigrams),
                repeated_4grams=repeated / sum(len(grams) for grams in fourgrams),
            )
        )
    return results


# ---------------------------------------------------------------------------
# Why tanh: the same W_hh applied step after step, with a bounded and an unbounded φ.
# ---------------------------------------------------------------------------


@dataclass
class StateNorms:
    """How large the hidden state grows along time, for each nonlinearity (6장)."""

    spectral_radius: float  # largest |eigenvalue| of the shared W_hh
    hidden_size: int  # H: a tanh state can never be longer than √H
    norms: dict[str, list[float]]  # nonlinearity → ‖h_t‖ averaged over the batch, t = 1 … T


def state_norms(
    spectral_radius: float = 2.0,
    steps: int = 50,
    hidden_size: int = 64,
    input_size: int = 8,
    batch_size: int = 16,
    seed: int = 0,
) -> StateNorms:
    """Run one RNN with ``tanh`` and with ``relu`` on the same inputs; measure ‖h_t‖.

    Both layers get the same weights: ``torch.nn.RNN``'s initialisation, except
    ``W_hh``, a Gaussian matrix rescaled to the given spectral radius. Float64,
    so that a growing state is measured, not overflowed. Seeded.
    """
    if not spectral_radius > 0:
        raise ValueError(f"spectral_radius must be > 0, got {spectral_radius!r}")
    for name, value in (("steps", steps), ("hidden_size", hidden_size),
                        ("input_size", input_size), ("batch_size", batch_size)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    generator = torch.Generator().manual_seed(seed)
    bound = 1 / math.sqrt(hidden_size)
    weights = {  # uniform in [-1/√H, 1/√H], as torch.nn.RNN initialises
        name: (2 * torch.rand(p.shape, generator=generator, dtype=torch.float64) - 1) * bound
        for name, p in RNN(input_size, hidden_size).named_parameters()
    }
    w_hh = torch.randn(hidden_size, hidden_size, generator=generator, dtype=torch.float64)
    w_hh *= spectral_radius / torch.linalg.eigvals(w_hh).abs().max()  # (H, H)
    weights["weight_hh_l0"] = w_hh
    x = torch.randn(steps, batch_size, input_size, generator=generator, dtype=torch.float64)
    norms = {}
    for nonlinearity in ("tanh", "relu"):
        layer = RNN(input_size, hidden_size, nonlinearity=nonlinearity).double()
        layer.load_state_dict(weights)
        with torch.no_grad():
            hs, _ = layer(x)  # (T, B, H)
        norms[nonlinearity] = hs.norm(dim=-1).mean(dim=-1).tolist()  # (T,)
    return StateNorms(spectral_radius, hidden_size, norms)
