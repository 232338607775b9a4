"""13장's pretraining experiments: a character-level GPT on 5·6·8장's Korean text.

The text is :func:`~course_utils.datasets.korean_char_split`'s: the
constitution and the National Assembly bills, four lines of five for training
and the fifth held out, exactly as 5장's n-grams and 6/8장's recurrent models
read it, with 6장's character vocabulary (a held-out character never seen in
training is ``<unk>`` for every model). :func:`pretrain_char_gpt` trains
:class:`~course_utils.gpt.GPT` on random windows of the training stream;
:func:`stream_perplexity` scores the held-out stream the way the other
chapters do, every character predicted from the ones before it.

A result is kept by recipe (:func:`course_utils.runs.cached`);
:func:`~course_utils.experiments.ch13_posttraining.start_ch13_training` trains the
sweep's sizes (:func:`pretrain_group`) in worker processes while the chapter goes on.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F

from course_utils import runs
from course_utils.checks import check_int
from course_utils.datasets import korean_char_split
from course_utils.gpt import GPT, GPTConfig
from course_utils.vocab import Vocab

__all__ = [
    "LARGE_SWEEP",
    "SIZE_SWEEP",
    "CharText",
    "GPTPretrainConfig",
    "GenerationTiming",
    "ModelRow",
    "PretrainedGPT",
    "TokenizerRow",
    "compare_korean_tokenizers",
    "continue_text",
    "distinct_share",
    "earlier_models",
    "korean_char_text",
    "pretrain_char_gpt",
    "pretrain_group",
    "processor_gaps",
    "sample_windows",
    "size_sweep",
    "stream_perplexity",
    "time_generation",
]


@dataclass(frozen=True)
class GPTPretrainConfig:
    """One pretraining run: the model's size and the training budget."""

    d_model: int = 96
    num_layers: int = 2
    nhead: int = 4
    context: int = 16  # characters per training window: the model's max_len
    batch_size: int = 64  # windows per step: batch_size · context characters
    steps: int = 600
    learning_rate: float = 3e-3  # AdamW's peak after the warm-up, then linear to 0
    warmup_steps: int = 60
    weight_decay: float = 0.1  # on matrices and embeddings (GPT-2, nanoGPT)
    clip_norm: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("d_model", "num_layers", "nhead", "batch_size", "steps"):
            check_int(getattr(self, name), name)
        check_int(self.context, "context", 2)
        check_int(self.warmup_steps, "warmup_steps", 0)
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")

    def gpt_config(self, vocab_size: int) -> GPTConfig:
        """The :class:`~course_utils.gpt.GPTConfig` of this size (no dropout)."""
        return GPTConfig(vocab_size=vocab_size, max_len=self.context, d_model=self.d_model,
                         nhead=self.nhead, num_layers=self.num_layers)  # fmt: skip


#: The size sweep: the same budget (steps, batch, context) for three widths; the last is
#: the chapter's model.
SIZE_SWEEP: tuple[GPTPretrainConfig, ...] = (
    GPTPretrainConfig(d_model=32, nhead=2),
    GPTPretrainConfig(d_model=64),
    GPTPretrainConfig(),
)

#: ``COURSE_RUN=large`` (a GPU): four layers, longer windows, ten times the steps.
LARGE_SWEEP: tuple[GPTPretrainConfig, ...] = tuple(
    GPTPretrainConfig(d_model=d, nhead=h, num_layers=4, context=64, steps=6000, warmup_steps=600)
    for d, h in ((64, 4), (128, 4), (256, 8))
)


def size_sweep(size: str | None = None) -> tuple[GPTPretrainConfig, ...]:
    """The sweep of a run size (default :func:`course_utils.device.run_size`); its last
    configuration is the chapter's model."""
    from course_utils.device import run_size

    size = run_size() if size is None else size
    sweeps = {"small": SIZE_SWEEP, "large": LARGE_SWEEP}
    if size not in sweeps:
        raise ValueError(f"size must be one of {', '.join(sweeps)}, got {size!r}")
    return sweeps[size]


@dataclass(frozen=True)
class CharText:
    """The training and held-out character streams as ids of 6장's vocabulary."""

    vocab: Vocab
    train: torch.Tensor  # (N_train,) int64
    held_out: torch.Tensor  # (N_held_out,) int64, unseen characters as <unk>
    unknown: int  # held-out characters that are <unk>


def korean_char_text() -> CharText:
    """:func:`~course_utils.datasets.korean_char_split` encoded with 6장's ``char_vocab``."""
    from course_utils.experiments.ch06_rnn import char_vocab

    train_chars, held_out_chars = korean_char_split()
    vocab = char_vocab(train_chars)
    held = torch.tensor(vocab.encode(held_out_chars))
    return CharText(vocab, torch.tensor(vocab.encode(train_chars)), held,
                    int((held == vocab.unk_id).sum()))  # fmt: skip


def sample_windows(
    stream: torch.Tensor, count: int, length: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` windows at random offsets of ``stream``: inputs (count, length) and the
    targets (count, length), each window shifted by one character."""
    check_int(count, "count")
    check_int(length, "length")
    if stream.dim() != 1 or stream.numel() < length + 1:
        raise ValueError(
            f"stream must be 1-D with at least length + 1 = {length + 1} tokens, "
            f"got shape {tuple(stream.shape)}"
        )
    starts = torch.randint(0, stream.numel() - length, (count,), generator=generator)
    index = starts[:, None] + torch.arange(length + 1)  # (count, length + 1)
    windows = stream[index]
    return windows[:, :-1], windows[:, 1:]


@torch.no_grad()
def stream_perplexity(
    model: GPT, stream: torch.Tensor, first: int, batch_size: int = 512
) -> tuple[float, int]:
    """Perplexity of ``stream`` (N,) under ``model``, and N: every token predicted once.

    The model reads at most ``max_len`` tokens, so the stream is cut into
    windows that overlap by half: the first window scores all its positions,
    each later one only the positions not scored before, so every token after
    the first few is predicted from at least ``max_len // 2`` tokens before
    it. ``first`` is the token read before the stream's first token (the line
    break that ended the line before it), so the first token is predicted too,
    as an n-gram predicts it.
    """
    if stream.dim() != 1 or stream.numel() == 0:
        raise ValueError(f"stream must be a non-empty 1-D tensor, got shape {tuple(stream.shape)}")
    length, total = model.config.max_len, stream.numel()
    inputs = torch.cat([torch.tensor([first]), stream[:-1]])  # (N,): token t is read before t
    if total <= length:
        starts, new_from = [0], [0]
        length = total
    else:
        step = length // 2 or 1
        starts = list(range(0, total - length + 1, step))
        if starts[-1] + length < total:
            starts.append(total - length)
        # window i predicts positions [starts[i], starts[i] + length); the first new one:
        new_from = [0] + [prev + length - s for prev, s in itertools.pairwise(starts)]
    model.eval()
    nll = 0.0
    offsets = torch.arange(length)
    for b in range(0, len(starts), batch_size):
        s = torch.tensor(starts[b : b + batch_size])
        index = s[:, None] + offsets  # (W, length)
        log_probs = F.log_softmax(model(inputs[index]), dim=-1)  # (W, length, V)
        picked = log_probs.gather(-1, stream[index][..., None])[..., 0]  # (W, length)
        keep = offsets[None, :] >= torch.tensor(new_from[b : b + batch_size])[:, None]
        nll -= float(picked[keep].sum())
    return math.exp(nll / total), total


@dataclass
class PretrainedGPT:
    """A pretrained character GPT, its training record and its held-out perplexity."""

    config: GPTPretrainConfig
    model: GPT
    text: CharText
    losses: list[float]  # mean training loss of each tenth of the steps
    seconds: float  # training time (where it was trained)
    perplexity: float  # held-out, every character predicted (stream_perplexity)
    cached: bool

    @property
    def parameters(self) -> int:
        """Every parameter (the tied embedding counted once)."""
        return sum(p.numel() for p in self.model.parameters())

    @property
    def tokens_seen(self) -> int:
        """Characters read in training: steps · batch_size · context."""
        c = self.config
        return c.steps * c.batch_size * c.context


def _train(config: GPTPretrainConfig, text: CharText, show_progress: bool) -> dict[str, Any]:
    from course_utils.device import get_device, seed_everything
    from course_utils.train import adamw_with_warmup, fit

    seed_everything(config.seed)
    model = GPT(config.gpt_config(len(text.vocab)))
    chunks = 10  # the loss is recorded once per tenth of the steps
    per_chunk = max(1, config.steps // chunks)
    total = per_chunk * chunks
    optimizer, schedule = adamw_with_warmup(
        model, config.learning_rate, config.weight_decay, total, config.warmup_steps
    )
    generator = torch.Generator().manual_seed(config.seed)

    def batches() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for _ in range(per_chunk):
            yield sample_windows(text.train, config.batch_size, config.context, generator)

    target = get_device()  # the CPU, or a GPU for COURSE_RUN=large

    def loss_fn(m: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        assert isinstance(m, GPT)
        inputs, targets = batch
        return m.loss(inputs.to(target), targets.to(target))

    start = time.perf_counter()
    history = fit(model, batches, loss_fn, optimizer, chunks, clip_norm=config.clip_norm,
                  device=target, seed=None, show_progress=show_progress,
                  scheduler=schedule)  # fmt: skip
    return {"state": {k: v.cpu() for k, v in model.state_dict().items()},
            "losses": history.train_loss,
            "seconds": time.perf_counter() - start}  # fmt: skip


#: Models already trained or loaded in this process, by recipe.
_LOADED: dict[GPTPretrainConfig, PretrainedGPT] = {}


def pretrain_char_gpt(
    config: GPTPretrainConfig | None = None, show_progress: bool = True
) -> PretrainedGPT:
    """Pretrain a character GPT on the training stream (next-character cross-entropy),
    on :func:`course_utils.device.get_device`'s device; cached by recipe; the model
    returned is on the CPU.

    Every step reads ``batch_size`` windows of ``context`` characters at random
    offsets; AdamW (weight decay on matrices and embeddings) with a linear
    warm-up and a linear decay to 0; gradient norm clipped at ``clip_norm``.
    """
    config = GPTPretrainConfig() if config is None else config
    if not isinstance(config, GPTPretrainConfig):
        raise TypeError(f"config must be a GPTPretrainConfig, got {type(config).__name__}")
    runs.wait_for(("gpt-pretrain", config))
    if config in _LOADED:
        return _LOADED[config]
    text = korean_char_text()
    saved, cached = runs.cached(
        "gpt-pretrain", asdict(config), lambda: _train(config, text, show_progress)
    )
    model = GPT(config.gpt_config(len(text.vocab)))
    model.load_state_dict(saved["state"])
    model.eval()
    perplexity, _ = stream_perplexity(model, text.held_out, text.vocab["\n"])
    _LOADED[config] = PretrainedGPT(config, model, text, list(saved["losses"]),
                                    float(saved["seconds"]), perplexity, cached)  # fmt: skip
    return _LOADED[config]


def pretrain_group(configs: Sequence[GPTPretrainConfig]) -> None:
    """Pretrain each configuration in turn into the cache (one worker's job)."""
    for config in configs:
        pretrain_char_gpt(config, show_progress=False)


# ---------------------------------------------------------------------------
# Tokens for Korean: syllables, SentencePiece and GPT-2's byte-level BPE
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenizerRow:
    """One tokenizer, trained on the training lines and measured on the held-out ones."""

    name: str
    vocab_size: int
    tokens_per_line: float  # held-out lines, mean
    unknown: int  # held-out tokens that are the unknown token (byte-level BPE: none, by design)
    base_symbols: int  # what every text is spelled with before any merge


@dataclass
class TokenizerComparison:
    """:func:`compare_korean_tokenizers`' table and what it checked."""

    rows: dict[str, TokenizerRow]
    held_out_lines: int
    agreeing: int  # held-out lines whose byte-level BPE tokens equal ``tokenizers``'
    byte_bpe: Any  # the trained :class:`~course_utils.byte_bpe.ByteLevelBPE`


def compare_korean_tokenizers(vocab_size: int = 1000) -> TokenizerComparison:
    """Syllables (this chapter's GPT), 2장's SentencePiece BPE and GPT-2's byte-level BPE.

    All are trained on :func:`~course_utils.datasets.korean_char_split`'s training
    lines (the byte-level BPE with ``tokenizers``, then read by
    :class:`~course_utils.byte_bpe.ByteLevelBPE`; SentencePiece at the same
    ``vocab_size``) and measured on its held-out lines.
    """
    import tokenizers

    from course_utils.bpe import train_sentencepiece
    from course_utils.byte_bpe import ByteLevelBPE
    from course_utils.datasets import korean_corpus_lines, split_lines

    check_int(vocab_size, "vocab_size", 300)
    train, held_out = split_lines(korean_corpus_lines(), 0.2)
    rows: dict[str, TokenizerRow] = {}
    seen = set("".join(train))
    rows["syllables"] = TokenizerRow(
        "syllables", len(seen) + 1,  # + <unk>
        sum(map(len, held_out)) / len(held_out),
        sum(c not in seen for line in held_out for c in line), len(seen) + 1,
    )  # fmt: skip
    processor = train_sentencepiece(train, "bpe", vocab_size)
    pieces = [processor.encode(line) for line in held_out]
    entries = [processor.id_to_piece(i).lstrip("▁") for i in range(processor.get_piece_size())]
    alphabet = len({piece for piece in entries if len(piece) == 1})  # characters with a piece
    rows["sentencepiece"] = TokenizerRow(
        "sentencepiece", processor.get_piece_size(),
        sum(map(len, pieces)) / len(held_out),
        sum(p == processor.unk_id() for line in pieces for p in line), alphabet,
    )  # fmt: skip
    reference = tokenizers.ByteLevelBPETokenizer()
    reference.train_from_iterator(train, vocab_size=vocab_size, min_frequency=2,
                                  show_progress=False)  # fmt: skip
    ours = ByteLevelBPE.from_tokenizers(reference)
    encoded = [ours.encode(line) for line in held_out]
    agreeing = sum(ids == reference.encode(line).ids for ids, line in zip(encoded, held_out,
                                                                          strict=True))  # fmt: skip
    rows["byte_bpe"] = TokenizerRow("byte_bpe", len(ours.vocab),
                                    sum(map(len, encoded)) / len(held_out), 0, 256)  # fmt: skip
    return TokenizerComparison(rows, len(held_out), agreeing, ours)


# ---------------------------------------------------------------------------
# The GPT beside 5장's n-grams and 6/8장's recurrent models
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelRow:
    """One language model on the held-out stream."""

    name: str
    chapter: int
    parameters: int | None  # None: an n-gram (counts, not parameters)
    seconds: float | None  # training time where it was trained
    perplexity: float


def earlier_models(orders: Sequence[int] = (3, 4)) -> list[ModelRow]:
    """5장's Kneser–Ney n-grams and the recurrent models of 6장 (RNN) and 8장 (LSTM, GRU),
    on the same split; a recurrent model that its chapter trained in this cache is read
    back (:func:`~course_utils.experiments.ch06_rnn.char_lm_summary`), else trained here."""
    import functools

    from torch import nn

    from course_utils.experiments.ch06_rnn import char_lm_config, char_lm_summary, train_char_lm
    from course_utils.experiments.ch08_lstm_gru import char_lm_comparison_config
    from course_utils.ngram import NGramLM

    train_chars, held_out_chars = korean_char_split()
    rows = [
        ModelRow(f"KN {n}-gram", 5, None, None, NGramLM(train_chars, n).perplexity(held_out_chars))
        for n in orders
    ]
    recurrent: list[tuple[str, int, Any, str, Any]] = [
        ("RNN", 6, char_lm_config(), "RNN", None),
        ("LSTM", 8, char_lm_comparison_config(), "LSTM", nn.LSTM),
        ("GRU", 8, char_lm_comparison_config(), "GRU", nn.GRU),
    ]
    for name, chapter, config, layer, torch_layer in recurrent:
        summary = char_lm_summary(train_chars, held_out_chars, config, layer)
        if summary is None:
            make = None if torch_layer is None else functools.partial(torch_layer, batch_first=True)
            result = train_char_lm(train_chars, held_out_chars, config, "cpu", False, make)
            summary = {"perplexity": result.perplexity, "parameters": result.parameters,
                       "seconds": result.seconds}  # fmt: skip
        rows.append(ModelRow(name, chapter, int(summary["parameters"]), float(summary["seconds"]),
                             float(summary["perplexity"])))  # fmt: skip
    return rows


# ---------------------------------------------------------------------------
# Generating: the decoding rules against transformers', samples, and the KV cache's speed
# ---------------------------------------------------------------------------


def processor_gaps(vocab_size: int = 50, seed: int = 0) -> dict[str, float]:
    """The largest difference between each of :mod:`course_utils.sampling`'s rules and the
    ``transformers`` logits processor of the same name, on the same random logits (B = 4)
    and previous tokens; a token both remove (−∞) counts as equal."""
    from transformers import (
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    from course_utils.sampling import (
        apply_repetition_penalty,
        apply_temperature,
        keep_top_k,
        keep_top_p,
    )

    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, vocab_size, generator=generator) * 3  # (B, V)
    previous = torch.randint(0, vocab_size, (4, 12), generator=generator)  # (B, t)
    pairs = {
        "temperature": (apply_temperature(logits, 0.7), TemperatureLogitsWarper(0.7)),
        "top_k": (keep_top_k(logits, 10), TopKLogitsWarper(10)),
        "top_p": (keep_top_p(logits, 0.9), TopPLogitsWarper(0.9)),
        "repetition_penalty": (apply_repetition_penalty(logits, previous, 1.3),
                               RepetitionPenaltyLogitsProcessor(1.3)),
    }  # fmt: skip
    gaps = {}
    for name, (ours, processor) in pairs.items():
        theirs = processor(previous, logits.clone())
        same_removed = torch.equal(torch.isinf(ours), torch.isinf(theirs))
        kept = ~torch.isinf(ours)
        gaps[name] = float((ours[kept] - theirs[kept]).abs().max()) if same_removed else math.inf
    return gaps


def distinct_share(text: str, n: int = 4) -> float:
    """The share of distinct character n-grams among all of ``text``'s: 1 when nothing
    repeats, low when generation loops."""
    check_int(n, "n")
    grams = [text[i : i + n] for i in range(len(text) - n + 1)]
    if not grams:
        raise ValueError(f"text must be at least n = {n} characters long, got {len(text)}")
    return len(set(grams)) / len(grams)


def continue_text(
    model: GPT, vocab: Vocab, prompt: str, new_tokens: int, sampling: Any = None, seed: int = 0
) -> str:
    """``prompt`` continued by ``new_tokens`` characters (greedy by default), without the KV
    cache: each step reads the last ``max_len`` characters again (a sliding window), since
    the model's learned positions stop at ``max_len``."""
    from course_utils.sampling import Sampling, next_token

    sampling = Sampling(greedy=True) if sampling is None else sampling
    ids = torch.tensor([vocab.encode(list(prompt))])
    generator = torch.Generator().manual_seed(seed)
    model.eval()
    with torch.no_grad():
        for _ in range(new_tokens):
            window = ids[:, -model.config.max_len :]
            token = next_token(model(window)[:, -1], ids, sampling, generator)
            ids = torch.cat([ids, token[:, None]], dim=1)
    return "".join(vocab.decode(ids[0].tolist()))


@dataclass(frozen=True)
class GenerationTiming:
    """Greedy generation of ``new_tokens`` tokens without and with the KV cache (medians)."""

    new_tokens: int
    without_cache: float
    with_cache: float
    identical: bool

    @property
    def speedup(self) -> float:
        return self.without_cache / self.with_cache


def time_generation(
    model: GPT, prompt: torch.Tensor, new_tokens: int, repeats: int = 3
) -> GenerationTiming:
    """:func:`course_utils.sampling.generate` both ways, interleaved and repeated; medians."""
    import statistics

    from course_utils.sampling import generate

    check_int(repeats, "repeats")
    times: dict[bool, list[float]] = {False: [], True: []}
    outputs: dict[bool, torch.Tensor] = {}
    generate(model, prompt, 2, use_cache=True)  # a first, untimed call for each
    generate(model, prompt, 2, use_cache=False)
    for repeat in range(repeats):
        for use_cache in (False, True) if repeat % 2 == 0 else (True, False):
            start = time.perf_counter()
            outputs[use_cache] = generate(model, prompt, new_tokens, use_cache=use_cache)
            times[use_cache].append(time.perf_counter() - start)
    return GenerationTiming(new_tokens, statistics.median(times[False]),
                            statistics.median(times[True]),
                            bool(torch.equal(outputs[False], outputs[True])))  # fmt: skip
