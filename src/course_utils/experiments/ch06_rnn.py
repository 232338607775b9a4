"""6장's experiments, one function each, called by the chapter and by its claims test.

:func:`train_char_lm` (the character language model and its held-out
perplexity), :func:`sample_at_temperatures` (what the samples are made of at
each temperature), :func:`run_line_classifier` (many-to-one: which source a
line comes from), :func:`run_spacing_tagger` (many-to-many: restoring the
spaces of Korean text) and :func:`state_norms` (why the state's nonlinearity
is tanh).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from course_utils import runs
from course_utils.checks import check_int
from course_utils.datasets import (
    load_kobill,
    load_kolaw,
    split_lines,
)
from course_utils.device import (
    get_device,
    run_size,
    seed_everything,
)
from course_utils.rnn import (
    RNN,
    LineClassifier,
    RNNLanguageModel,
    SpacingTagger,
    generate,
    lm_loss,
    perplexity,
)
from course_utils.sequences import (
    lm_windows,
)
from course_utils.train import (
    History,
    fit,
)
from course_utils.vocab import (
    Vocab,
)

__all__ = [
    "CHAR_LM_EPOCHS",
    "CharLMConfig",
    "CharLMResult",
    "LineClassifierResult",
    "SpacingResult",
    "StateNorms",
    "TemperatureSamples",
    "char_lm_config",
    "char_lm_run",
    "char_lm_summary",
    "char_text_digest",
    "char_vocab",
    "encode_lines",
    "keep_char_lm",
    "line_classifier_score",
    "restore_spacing",
    "run_line_classifier",
    "run_spacing_tagger",
    "sample_at_temperatures",
    "source_lines",
    "spacing_stream",
    "spacing_tagger_score",
    "state_norms",
    "train_char_lm",
]


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

    epochs: int = 16  # passes over the training text
    embedding_size: int = 64  # E: a character's vector
    hidden_size: int = 256  # H: the hidden state
    dropout: float = 0.2  # on embeddings and hidden states, while training
    batch_size: int = 32  # windows per batch
    num_steps: int = 64  # T: characters per window
    lr: float = 3e-3  # Adam's learning rate
    clip_norm: float = 1.0  # gradient norm clipping (7장)
    seed: int = 0  # initial weights, dropout and where the windows are cut


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
    result = CharLMResult(
        config=config,
        vocab=vocab,
        model=model,
        history=history,
        perplexity=perplexity(model, held_out_ids.to(target)),
        seconds=seconds,
        parameters=sum(p.numel() for p in model.parameters()),
    )
    summary = {"perplexity": result.perplexity, "parameters": result.parameters,
               "seconds": seconds}  # fmt: skip
    runs.save_result(_summary_path(train_chars, held_out_chars, config, type(layer).__name__),
                     summary)  # fmt: skip
    return result


def _summary_path(
    train_chars: Sequence[str], held_out_chars: Sequence[str], config: CharLMConfig, layer: str
) -> Path | None:
    recipe = (char_text_digest(train_chars, held_out_chars), dataclasses.asdict(config), layer)
    return runs.cache_path("char-lm-summary", recipe, any_threads=True)


def _run_path(
    train_chars: Sequence[str],
    held_out_chars: Sequence[str],
    config: CharLMConfig,
    device: torch.device,
) -> Path | None:
    text = char_text_digest(train_chars, held_out_chars)
    return runs.cache_path("char-lm-run", (text, dataclasses.asdict(config), device.type))


def keep_char_lm(
    train_chars: Sequence[str], held_out_chars: Sequence[str], result: CharLMResult
) -> None:
    """Keep ``result``, :func:`train_char_lm`'s run of 6장's RNN on this text, whole in the
    result cache (weights, history, the model's mode, perplexity, parameters, seconds), for
    :func:`char_lm_run` to read back on the same device and thread count."""
    if not isinstance(result.model.recurrent, RNN):
        raise TypeError(f"only 6장's RNN is kept, not {type(result.model.recurrent).__name__}")
    if list(result.vocab) != list(char_vocab(train_chars)):
        raise ValueError("result was trained on another text: its vocabulary differs")
    device = next(result.model.parameters()).device
    record = {
        "state": {name: value.cpu() for name, value in result.model.state_dict().items()},
        "history": dataclasses.asdict(result.history),
        "training": result.model.training,
        "perplexity": result.perplexity,
        "parameters": result.parameters,
        "seconds": result.seconds,
    }
    runs.save_result(_run_path(train_chars, held_out_chars, result.config, device), record)


def char_lm_run(
    train_chars: Sequence[str],
    held_out_chars: Sequence[str],
    config: CharLMConfig | None = None,
    device: str | torch.device = "cpu",
) -> CharLMResult:
    """6장's :func:`train_char_lm` run for this text, configuration and device: what
    :func:`keep_char_lm` kept of the chapter's run (the same weights, history, perplexity and
    seconds) on this thread count, else trained here. The claims test reads the chapter's
    run this way instead of training it again."""
    config = char_lm_config() if config is None else config
    target = torch.device(device)
    saved = runs.load_result(_run_path(train_chars, held_out_chars, config, target))
    if saved is None:
        return train_char_lm(train_chars, held_out_chars, config, target, show_progress=False)
    vocab = char_vocab(train_chars)
    layer = RNN(config.embedding_size, config.hidden_size, batch_first=True)
    model = RNNLanguageModel(len(vocab), layer, dropout=config.dropout)
    model.load_state_dict(saved["state"])
    model.to(target).train(saved["training"])
    return CharLMResult(
        config=config,
        vocab=vocab,
        model=model,
        history=History(**saved["history"]),
        perplexity=saved["perplexity"],
        seconds=saved["seconds"],
        parameters=saved["parameters"],
    )


def char_text_digest(train_chars: Sequence[str], held_out_chars: Sequence[str]) -> str:
    """A SHA-256 of the training and held-out characters: what the cached runs of 6장 and 8장
    name as their text."""
    text = hashlib.sha256("".join(train_chars).encode() + b"\0" + "".join(held_out_chars).encode())
    return text.hexdigest()


def char_lm_summary(
    train_chars: Sequence[str], held_out_chars: Sequence[str], config: CharLMConfig, layer: str
) -> dict[str, float] | None:
    """What :func:`train_char_lm` recorded for this text, configuration and recurrent layer
    (its class name: ``"RNN"`` for 6장's, ``"LSTM"``, ``"GRU"`` for torch's): the held-out
    perplexity, the parameters and the training seconds, on whatever thread count it ran;
    None when it has not run (or the cache is off). 13장 compares its GPT with them without
    training them again.
    """
    saved = runs.load_result(_summary_path(train_chars, held_out_chars, config, layer))
    return None if saved is None else dict(saved)


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


@dataclass
class LineClassifierResult:
    """Which text a line comes from, read by :class:`LineClassifier`."""

    accuracy: float  # on the held-out lines
    majority: float  # accuracy of always answering the larger class
    train_lines: int
    test_lines: int
    max_chars: int  # lines are cut to this many characters (their first ones)
    cut_test_lines: int  # held-out lines longer than max_chars
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
    result = LineClassifierResult(
        accuracy=(predicted == y_test).float().mean().item(),
        majority=max(share, 1 - share),
        train_lines=len(train_pairs),
        test_lines=len(test_pairs),
        max_chars=max_chars,
        cut_test_lines=sum(len(line) > max_chars for line, _ in test_pairs),
        model=model,
    )
    settings = (epochs, max_chars, batch_size, lr, seed, target.type)
    _record("line-classifier-summary", settings, result, ("accuracy", "majority"))
    return result


def line_classifier_score(show_progress: bool = True) -> tuple[float, float]:
    """(accuracy, majority) of :func:`run_line_classifier` with its default settings: what it
    recorded when it ran (6장, on whatever thread count), else trained here. 12장 compares its
    BERT with it without training it again."""
    settings = (*_LINE_DEFAULTS, get_device().type)
    return _recorded_or_run("line-classifier-summary", settings, ("accuracy", "majority"),
                            lambda: run_line_classifier(show_progress=show_progress))  # fmt: skip


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
    result = SpacingResult(
        accuracy=(predicted == test_y).float().mean().item(),
        all_joined=1 - test_y.float().mean().item(),
        characters=len(test_y),
        vocab=vocab,
        model=model,
    )
    text = char_text_digest(train_chars, held_out_chars)
    settings = (text, epochs, num_steps, batch_size, lr, seed, target.type)
    _record("spacing-tagger-summary", settings, result, ("accuracy", "all_joined"))
    return result


def spacing_tagger_score(
    train_chars: Sequence[str], held_out_chars: Sequence[str], show_progress: bool = True
) -> tuple[float, float]:
    """(accuracy, all_joined) of :func:`run_spacing_tagger` on this text with its default
    settings: what it recorded when it ran (6장, on whatever thread count), else trained here."""
    text = char_text_digest(train_chars, held_out_chars)
    settings = (text, *_SPACING_DEFAULTS, get_device().type)
    return _recorded_or_run("spacing-tagger-summary", settings, ("accuracy", "all_joined"),
                            lambda: run_spacing_tagger(train_chars, held_out_chars,
                                                       show_progress=show_progress))  # fmt: skip


def _defaults(function: Callable[..., Any], names: Sequence[str]) -> tuple[object, ...]:
    parameters = inspect.signature(function).parameters
    return tuple(parameters[name].default for name in names)


#: The default settings of run_line_classifier and run_spacing_tagger that decide their scores
#: (the device is added when a score is asked for).
_LINE_DEFAULTS = _defaults(run_line_classifier, ("epochs", "max_chars", "batch_size", "lr", "seed"))
_SPACING_DEFAULTS = _defaults(run_spacing_tagger, ("epochs", "num_steps", "batch_size", "lr",
                                                   "seed"))  # fmt: skip


def _record(kind: str, settings: tuple[object, ...], result: object, fields: Sequence[str]) -> None:
    """Keep ``result``'s ``fields`` under ``settings``, whatever the thread count."""
    runs.save_result(runs.cache_path(kind, settings, any_threads=True),
                     {name: getattr(result, name) for name in fields})  # fmt: skip


def _recorded_or_run(
    kind: str, settings: tuple[object, ...], fields: Sequence[str], run: Callable[[], object]
) -> tuple[float, float]:
    """What :func:`_record` kept under ``settings``, else ``run()``'s (which records it)."""
    saved = runs.load_result(runs.cache_path(kind, settings, any_threads=True))
    if saved is None:
        result = run()
        first, second = (float(getattr(result, name)) for name in fields)
    else:
        first, second = (float(saved[name]) for name in fields)
    return first, second


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
        check_int(value, name)
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


#: Epochs per ``COURSE_RUN`` size: a few minutes on a laptop CPU, or longer on a GPU.
CHAR_LM_EPOCHS = {"small": 16, "large": 40}
