"""8장's experiments: the adding problem, speed against torch, and the language models.

:func:`run_adding_problem` and :func:`input_sensitivity` (the RNN against the
LSTM and the GRU on long dependencies), :func:`time_forward_backward` and
:func:`time_recurrent_layers` (our layers against torch's), and
:func:`run_char_language_models` (8장's character language models).
:func:`start_chapter_runs` starts the chapter's independent trainings at once,
one worker process per core; :func:`adding_problem_run` and :func:`language_model_run` keep
each in the result cache, so that the claims tests load the chapter's runs.
"""

from __future__ import annotations

import dataclasses
import functools
import statistics
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from course_utils import runs
from course_utils.checks import check_int
from course_utils.datasets import korean_char_split
from course_utils.device import (
    get_device,
    run_size,
    seed_everything,
)
from course_utils.experiments.ch06_rnn import (
    CharLMConfig,
    char_lm_config,
    char_text_digest,
    train_char_lm,
)
from course_utils.lstm import (
    GRU,
    LSTM,
    AutogradLSTM,
    SequenceRegressor,
)
from course_utils.progress import (
    progress,
)
from course_utils.rnn import RNNLanguageModel
from course_utils.sequences import (
    adding_problem,
)
from course_utils.train import (
    History,
    clip_grad_norm,
)

__all__ = [
    "ADDING_LENGTHS",
    "CHAR_LM_COMPARISON_EPOCHS",
    "AddingResult",
    "ChapterRuns",
    "CharLMComparison",
    "CharLMRun",
    "Timing",
    "WithoutOneDNN",
    "adding_problem_run",
    "char_lm_comparison_config",
    "input_sensitivity",
    "language_model_run",
    "onednn_in_graph",
    "run_adding_problem",
    "run_char_language_models",
    "start_chapter_runs",
    "time_forward_backward",
    "time_recurrent_layers",
]


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
    check_int(steps, "steps", 10)
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
    onednn: bool = False  # whether torch.nn.LSTM ran oneDNN's fused kernel (onednn_in_graph)

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
    check_int(rounds, "rounds")

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


def onednn_in_graph(output: torch.Tensor) -> bool:
    """Whether the autograd graph that made ``output`` holds a oneDNN node.

    ``torch.nn.LSTM`` on a CPU build with oneDNN (the x86 and aarch64 Linux
    wheels) runs the whole sequence as one fused oneDNN kernel, recorded as one
    ``MkldnnRnnLayerBackward0`` node per layer and direction; without it, autograd
    records the dozen or so operations of every step.
    """
    seen: set[object] = set()
    stack = [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if "Mkldnn" in type(node).__name__:
            return True
        stack.extend(child for child, _ in node.next_functions)
    return False


class WithoutOneDNN(nn.Module):
    """``module`` run with oneDNN switched off (``torch.backends.mkldnn.flags(enabled=False)``).

    Where torch uses oneDNN (:func:`onednn_in_graph`), ``torch.nn.LSTM`` hands the
    whole sequence, forward and backward, to oneDNN's fused LSTM kernel. Switched
    off, torch runs its own C++ loop over time, recording a dozen or so operations
    per step for autograd and multiplying matrices with the same BLAS as our
    layers. (``torch.nn.GRU`` and ``torch.nn.RNN`` never use oneDNN.) The backward
    pass follows the graph the forward pass recorded.
    """

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, *args: Any) -> Any:
        with warnings.catch_warnings():
            # The switch also sets oneDNN's TF32 flag, which warns that it is for Intel GPUs.
            warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")
            with torch.backends.mkldnn.flags(enabled=False):
                return self.module(*args)


def time_recurrent_layers(
    batch_size: int = 64,
    length: int = 100,
    input_size: int = 2,
    hidden_size: int = 32,
    rounds: int = 9,
    seed: int = 0,
) -> Timing:
    """Time torch's and our LSTM and GRU on one CPU input, interleaved (8장).

    The layers are named ``"torch.nn.LSTM"``, ``"torch.nn.LSTM, no oneDNN"``
    (the same module, see :class:`WithoutOneDNN`), ``"LSTM"`` (hand-written
    backward), ``"AutogradLSTM"``, ``"torch.nn.GRU"`` and ``"GRU"`` (autograd);
    ours hold the weights copied from torch's, so all LSTMs compute the same
    numbers. The input (batch_size, length, input_size) is the adding problem's.
    """
    seed_everything(seed)
    torch_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
    torch_gru = nn.GRU(input_size, hidden_size, batch_first=True)
    layers: dict[str, nn.Module] = {
        "torch.nn.LSTM": torch_lstm,
        "torch.nn.LSTM, no oneDNN": WithoutOneDNN(torch_lstm),
        "LSTM": LSTM(input_size, hidden_size, batch_first=True),
        "AutogradLSTM": AutogradLSTM(input_size, hidden_size, batch_first=True),
        "torch.nn.GRU": torch_gru,
        "GRU": GRU(input_size, hidden_size, batch_first=True),
    }
    layers["LSTM"].load_state_dict(torch_lstm.state_dict())
    layers["AutogradLSTM"].load_state_dict(torch_lstm.state_dict())
    layers["GRU"].load_state_dict(torch_gru.state_dict())
    x = torch.randn(batch_size, length, input_size)  # (B, T, I)
    timing = time_forward_backward(layers, x, rounds)
    return dataclasses.replace(timing, onednn=onednn_in_graph(torch_lstm(x)[0]))


#: Epochs per ``COURSE_RUN`` size. The CPU run trains three models, so each gets
#: half of 6장's 16 epochs; the large run is 6장's large run (40 epochs) for every cell.
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

    Everything but the recurrent layer is 6장's
    :func:`~course_utils.experiments.ch06_rnn.train_char_lm`:
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


# ---------------------------------------------------------------------------
# The chapter's trainings, started at once
# ---------------------------------------------------------------------------


# The chapter's trainings are kept in the result cache (course_utils.runs), like 9-12장's, under
# a key made of the package's code, torch, the thread count, the device and the settings: the
# chapter, its claims test (tests/test_claims_ch07_ch08.py, on one thread in workers as here)
# and a second run of the chapter all load one training instead of repeating it.

_ADDING_FIELDS = (
    "test_mse", "seconds", "parameters", "curve", "steps", "hidden_size", "batch_size", "lr",
    "clip_norm", "test_size",
)  # fmt: skip
_LANGUAGE_MODEL_FIELDS = ("perplexity", "parameters", "recurrent_parameters", "seconds")


def adding_problem_run(cell: str, length: int) -> AddingResult:
    """:func:`run_adding_problem` with its defaults (the chapter's settings) for ``cell`` and
    ``length``, trained once and then loaded from the result cache (the same weights, curve and
    test MSE; ``seconds`` is the training's)."""

    def train() -> dict[str, Any]:
        result = run_adding_problem(cell, length)
        record = {name: getattr(result, name) for name in _ADDING_FIELDS}
        return {"state": result.model.state_dict(), **record}

    saved, _ = runs.cached("adding-problem", (cell, length), train)
    model = SequenceRegressor(cell, 2, saved["hidden_size"], builtin=True)
    model.load_state_dict(saved["state"])
    return AddingResult(cell, length, model=model, **{name: saved[name] for name in _ADDING_FIELDS})


def language_model_run(cell: str, config: CharLMConfig) -> CharLMComparison:
    """:func:`run_char_language_models` for one ``cell`` on 6장's text, trained once and then
    loaded from the result cache (the same weights, history and perplexity)."""
    train_chars, held_out_chars = korean_char_split()

    def train() -> dict[str, Any]:
        run = run_char_language_models(
            train_chars, held_out_chars, (cell,), config, device=None, show_progress=False
        ).runs[cell]
        return {
            "state": run.model.state_dict(),
            "history": dataclasses.asdict(run.history),
            **{name: getattr(run, name) for name in _LANGUAGE_MODEL_FIELDS},
        }

    text = char_text_digest(train_chars, held_out_chars)
    saved, _ = runs.cached("char-lm-comparison", (text, dataclasses.asdict(config), cell), train)
    layer = functools.partial(_LANGUAGE_MODEL_LAYERS[cell], batch_first=True)  # as trained
    vocab_size = saved["state"]["embedding.weight"].shape[0]
    recurrent = layer(config.embedding_size, config.hidden_size)
    model = RNNLanguageModel(vocab_size, recurrent, dropout=config.dropout)  # type: ignore[arg-type]
    model.load_state_dict(saved["state"])
    model.eval()  # as training leaves it (the held-out perplexity is measured last)
    run = CharLMRun(
        cell=cell,
        history=History(**saved["history"]),
        model=model.to(get_device()),
        **{name: saved[name] for name in _LANGUAGE_MODEL_FIELDS},
    )
    return CharLMComparison(config=config, runs={cell: run})


class ChapterRuns:
    """8장's trainings: each cell at each length of the adding problem, then the language models."""

    def __init__(self, cells: Sequence[str], lengths: Sequence[int], config: CharLMConfig) -> None:
        if isinstance(cells, str) or not cells:
            raise ValueError(f"cells must be a non-empty list of cell names, got {cells!r}")
        if not isinstance(config, CharLMConfig):
            raise TypeError(f"config must be a CharLMConfig, got {type(config).__name__}")
        self.cells = list(cells)
        self.lengths = [check_int(n, "each length", 2) for n in lengths]
        self.config = config
        # the longest sequences first: the slowest runs start before the rest
        self.adding_keys = [(c, n) for n in sorted(self.lengths, reverse=True) for c in self.cells]
        jobs: list[tuple[Any, tuple[Any, ...]]] = [
            (adding_problem_run, k) for k in self.adding_keys
        ]
        jobs += [(language_model_run, (cell, config)) for cell in _LANGUAGE_MODEL_LAYERS]
        self.jobs = runs.Jobs(jobs)

    def adding_problem(self) -> dict[tuple[str, int], AddingResult]:
        """:func:`run_adding_problem` for each ``(cell, length)``, the shortest length first."""
        done = self.jobs.results(range(len(self.adding_keys)), "덧셈 문제")
        by_key = dict(zip(self.adding_keys, done, strict=True))
        return {(c, n): by_key[(c, n)] for n in sorted(self.lengths) for c in self.cells}

    def language_models(self) -> CharLMComparison:
        """:func:`run_char_language_models` for the RNN, the LSTM and the GRU, with ``config``."""
        first = len(self.adding_keys)
        done = self.jobs.results(range(first, len(self.jobs.jobs)), "문자 언어 모델")
        models = dict(zip(_LANGUAGE_MODEL_LAYERS, done, strict=True))
        return CharLMComparison(self.config, {cell: run.runs[cell] for cell, run in models.items()})


def start_chapter_runs(
    cells: Sequence[str], lengths: Sequence[int], config: CharLMConfig | None = None
) -> ChapterRuns:
    """Start 8장's independent trainings: worker processes, one per core, on a CPU.

    The adding problem for each cell and length (:func:`run_adding_problem`'s
    defaults) and the three language models (:func:`run_char_language_models`
    with ``config``, default :func:`char_lm_comparison_config`) run while the
    chapter goes on; on a GPU or one core they run when their results are
    asked for. Each runs single-threaded, so its numbers are the same either way.
    """
    return ChapterRuns(cells, lengths, char_lm_comparison_config() if config is None else config)
