"""11장's experiments: why the scale, the Transformer against 10장's attention, and its costs.

- :func:`why_scale`: scores of random vectors with and without 1/√d_k.
- :func:`new_transformer`, :func:`transformer_size`, :func:`run_transformer_comparison`:
  the translation Transformer (pre-norm, with and without label smoothing)
  trained beside 10장's Bahdanau model; :func:`prediction_confidence` and
  :func:`learned_positions_after` measure what smoothing and a trained position
  table do; :func:`torch_parameter_count` counts
  ``nn.Transformer``'s parameters as the reference for
  :func:`course_utils.transformer.transformer_parameter_count`.
- :func:`gradient_norms_at_init`, :func:`time_kv_cache`, :func:`attention_vs_lstm_cost`,
  :func:`crossover`, :func:`head_alignment_accuracy`, :func:`attention_maps`,
  :func:`epoch_seconds`: the chapter's measurements.
"""

from __future__ import annotations

import copy
import functools
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch
from torch import nn

from course_utils.attention import alignment_accuracy
from course_utils.checks import (
    check_int,
)
from course_utils.device import seed_everything
from course_utils.experiments.ch09_seq2seq import (
    ModelMaker,
    ParallelData,
    TranslationConfig,
    train_in_background,
    train_in_parallel,
    train_model,
)
from course_utils.experiments.ch10_attention import (
    ModelRun,
    new_bahdanau,
    score_after_training,
    score_model_run,
)
from course_utils.seq2seq import (
    EOS,
    PAD,
    SOS,
    EncoderDecoder,
    allowed_log_probs,
    make_batch,
    sequence_loss,
    train_seq2seq,
)
from course_utils.transformer import (
    LearnedPositionalEmbedding,
    MultiHeadAttention,
    TransformerSeq2Seq,
    TransformerSize,
    recorded_weights,
)
from course_utils.translation_data import (
    Pair,
    Splits,
)

__all__ = [
    "LABEL_SMOOTHING",
    "PAPER_SIZES",
    "PAPER_VOCAB_SIZE",
    "TRANSFORMER_VARIANTS",
    "CacheTiming",
    "Confidence",
    "CostRow",
    "ScaleRow",
    "attention_maps",
    "attention_vs_lstm_cost",
    "cache_mode",
    "crossover",
    "decode_steps",
    "epoch_seconds",
    "gradient_norms_at_init",
    "head_alignment_accuracy",
    "learned_positions_after",
    "new_transformer",
    "prediction_confidence",
    "run_transformer_comparison",
    "saved_bytes",
    "softmax_jacobian_norm",
    "start_transformer_comparison",
    "time_kv_cache",
    "torch_parameter_count",
    "transformer_size",
    "why_scale",
]

# ---------------------------------------------------------------------------
# Decoding at a fixed length, with and without the key/value cache
# ---------------------------------------------------------------------------


def decode_steps(
    model: TransformerSeq2Seq,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    steps: int,
) -> torch.Tensor:
    """Exactly ``steps`` greedy tokens (never stopping at ``<eos>``): (B, steps) ids.

    For measuring decoding cost at a fixed output length; the chapters'
    translations use :func:`course_utils.seq2seq.greedy_decode`.
    """
    check_int(steps, "steps")
    model.eval()
    memory = model.encode(source, source_lengths)
    state = model.init_state(memory)
    tokens = torch.full((source.shape[0],), SOS, device=source.device)
    out = []
    for _ in range(steps):
        logits, state, _ = model.step(tokens, state, memory)
        tokens = allowed_log_probs(logits).argmax(-1)  # (B,)
        out.append(tokens)
    return torch.stack(out, dim=1)  # (B, steps)


@contextmanager
def cache_mode(model: TransformerSeq2Seq, use_cache: bool) -> Iterator[None]:
    """Temporarily decode with or without the key/value cache."""
    before = model.use_cache
    model.use_cache = use_cache
    try:
        yield
    finally:
        model.use_cache = before


# ---------------------------------------------------------------------------
# Experiments of 11장
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScaleRow:
    """Scores q·k of random unit-variance vectors, with and without the 1/√d_k scale."""

    d_k: int
    variance: float  # Var(q·k): grows like d_k
    scaled_variance: float  # Var(q·k / √d_k): stays near 1
    max_weight: float  # mean largest softmax weight over the keys, unscaled
    scaled_max_weight: float
    jacobian_norm: float  # mean ‖∂softmax/∂scores‖_F, unscaled: near 0 when saturated
    scaled_jacobian_norm: float


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """‖diag(p) − p pᵀ‖_F for each row p of (N, S) weights → (N,)."""
    jacobian = torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)
    return jacobian.flatten(1).norm(dim=-1)


def why_scale(
    d_ks: Sequence[int] = (4, 16, 64, 256, 1024), keys: int = 16, samples: int = 2000, seed: int = 0
) -> list[ScaleRow]:
    """Why √d_k: q, k with independent N(0, 1) entries give Var(q·k) = d_k; softmax saturates."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for d_k in d_ks:
        q = torch.randn(samples, 1, d_k, generator=generator, dtype=torch.float64)
        k = torch.randn(samples, keys, d_k, generator=generator, dtype=torch.float64)
        scores = (q @ k.transpose(1, 2)).squeeze(1)  # (N, keys)
        scaled = scores / math.sqrt(d_k)
        p, p_scaled = torch.softmax(scores, -1), torch.softmax(scaled, -1)
        rows.append(
            ScaleRow(
                d_k,
                float(scores.var()),
                float(scaled.var()),
                float(p.max(-1).values.mean()),
                float(p_scaled.max(-1).values.mean()),
                float(softmax_jacobian_norm(p).mean()),
                float(softmax_jacobian_norm(p_scaled).mean()),
            )
        )
    return rows


def torch_parameter_count(
    size: TransformerSize, vocab_size: int, shared_embeddings: bool = True
) -> int:
    """The same count from ``nn.Transformer`` and ``nn.Embedding`` built on the meta device."""
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        core = nn.Transformer(
            size.d_model,
            size.nhead,
            size.num_encoder_layers,
            size.num_decoder_layers,
            size.dim_feedforward,
            batch_first=True,
        )
        tables = [
            nn.Embedding(vocab_size, size.d_model) for _ in range(1 if shared_embeddings else 3)
        ]
    return sum(p.numel() for m in (core, *tables) for p in m.parameters())


PAPER_SIZES = {
    # Vaswani et al. (2017), Table 3; the 37,000-token vocabulary of §5.1 (English-German BPE)
    "base": TransformerSize(512, 8, 6, 6, 2048, 0.1),
    "big": TransformerSize(1024, 16, 6, 6, 4096, 0.3),
}
PAPER_VOCAB_SIZE = 37_000


def transformer_size(config: TranslationConfig, norm_first: bool = True) -> TransformerSize:
    """11장's Transformer for a translation config: d_model = H/2, 4 heads, 2 + 2 layers.

    d_ff = 4·d_model as in the paper; about as many parameters as 10장's
    attention models at the same config.
    """
    d_model = config.hidden_size // 2
    return TransformerSize(d_model, 4, 2, 2, 4 * d_model, 0.1, norm_first=norm_first)


def new_transformer(
    data: ParallelData,
    config: TranslationConfig,
    norm_first: bool = True,
    learned_positions: bool = False,
) -> TransformerSeq2Seq:
    """11장's model at the config's size, seeded by the config."""
    seed_everything(config.training.seed)
    return TransformerSeq2Seq(
        len(data.source_vocab),
        len(data.target_vocab),
        transformer_size(config, norm_first),
        learned_positions=learned_positions,
    )


LABEL_SMOOTHING = 0.1  # the paper's ε (Szegedy et al. 2016's smoothing)

#: name → (model maker, label smoothing ε): the chapter's model and its label-smoothed twin
TRANSFORMER_VARIANTS: dict[str, tuple[ModelMaker, float]] = {
    "pre_norm": (new_transformer, 0.0),
    "label_smoothing": (new_transformer, LABEL_SMOOTHING),
}


def _with_smoothing(config: TranslationConfig, epsilon: float) -> TranslationConfig:
    return replace(config, training=replace(config.training, label_smoothing=epsilon))


def _comparison_jobs(
    data: ParallelData, config: TranslationConfig, names: Sequence[str]
) -> list[tuple[ModelMaker, ParallelData, TranslationConfig]]:
    if isinstance(names, str):
        raise TypeError(f"names must be a list of variant names, not the str {names!r}")
    unknown = [n for n in names if n not in TRANSFORMER_VARIANTS]
    if unknown:
        raise ValueError(
            f"unknown variant {unknown[0]!r}: expected some of {', '.join(TRANSFORMER_VARIANTS)}"
        )
    return [
        (TRANSFORMER_VARIANTS[n][0], data, _with_smoothing(config, TRANSFORMER_VARIANTS[n][1]))
        for n in names
    ]


def start_transformer_comparison(
    data: ParallelData,
    config: TranslationConfig,
    names: Sequence[str] = tuple(TRANSFORMER_VARIANTS),
    splits: Splits | None = None,
) -> bool:
    """Start training :func:`run_transformer_comparison`'s models in the background.

    One worker process per core trains the variants and 10장's Bahdanau model
    (if 10장 has not left it in the cache) while the chapter goes on, and,
    given ``splits``, scores each model it trained
    (:func:`~course_utils.experiments.ch10_attention.score_after_training`);
    :func:`run_transformer_comparison` then waits for them and loads the
    models and their scores. Nothing starts on a GPU, on one core or with the
    cache off. Returns whether anything was started.
    """
    jobs = _comparison_jobs(data, config, names)
    then = None if splits is None else functools.partial(score_after_training, splits=splits)
    return train_in_background([*jobs, (new_bahdanau, data, config)], then=then)


def run_transformer_comparison(
    data: ParallelData,
    splits: Splits,
    config: TranslationConfig,
    names: Sequence[str] = tuple(TRANSFORMER_VARIANTS),
    show_progress: bool = True,
) -> dict[str, ModelRun]:
    """Train the Transformer variants and 10장's Bahdanau model on 9장's data and budget.

    ``pre_norm`` (sinusoidal positions, the same recipe as 9장 and 10장) is the
    chapter's model; ``label_smoothing`` is the same model trained with the
    paper's ε = :data:`LABEL_SMOOTHING`. Each is scored on the stratified test
    set by length (greedy decoding), with the last decoder layer's
    cross-attention (mean over heads) as its alignment.
    """
    jobs = _comparison_jobs(data, config, names)
    train_in_parallel([*jobs, (new_bahdanau, data, config)])  # a no-op on one core or a GPU
    runs = {}
    for name, (make, _, job_config) in zip(names, jobs, strict=True):
        model = make(data, job_config)
        history = train_model(model, data, job_config.training, show_progress)
        runs[name] = score_model_run(name, model, history, data, splits, True, job_config.training)
    model = new_bahdanau(data, config)
    history = train_model(model, data, config.training, show_progress)
    runs["bahdanau"] = score_model_run(
        "bahdanau", model, history, data, splits, True, config.training
    )
    return runs


@dataclass(frozen=True)
class Confidence:
    """How sure a translation model is of its next token, teacher-forced on real positions."""

    top_probability: float  # mean probability of the token it would pick
    accuracy: float  # share of positions where that token is the reference
    reference_probability: float  # mean probability given to the reference token


@torch.no_grad()
def prediction_confidence(
    model: EncoderDecoder, examples: Sequence[tuple[list[int], list[int]]], batch_size: int = 256
) -> Confidence:
    """Mean top probability, accuracy and reference probability over the real target positions."""
    if not examples:
        raise ValueError("examples is empty: nothing to measure")
    check_int(batch_size, "batch_size")
    model.eval()
    device = next(model.parameters()).device
    top = hits = reference = 0.0
    total = 0
    for start in range(0, len(examples), batch_size):
        batch = make_batch(list(examples[start : start + batch_size])).to(device)
        logits = model(batch.source, batch.source_lengths, batch.target_in)  # (B, T, V)
        probs = allowed_log_probs(logits.flatten(0, 1)).exp()  # (B·T, V)
        real = batch.target_out.flatten() != PAD  # (B·T,)
        best, guess = probs[real].max(dim=-1)  # (N,) each
        truth = batch.target_out.flatten()[real]  # (N,)
        top += float(best.sum())
        hits += float((guess == truth).sum())
        reference += float(probs[real].gather(1, truth[:, None]).sum())
        total += int(real.sum())
    return Confidence(top / total, hits / total, reference / total)


def learned_positions_after(
    data: ParallelData, config: TranslationConfig, steps: int = 20
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(table after ``steps`` training steps, table at initialisation, positions read).

    The chapter's model with a trained position table instead of sinusoids,
    trained for a few steps on the first training batches: enough to show which
    rows ever receive a gradient. Positions read: the longest source or
    decoder input (``<sos>`` + target without ``<eos>``) among those batches.
    """
    check_int(steps, "steps")
    model = new_transformer(data, config, learned_positions=True)
    table = model.positions
    assert isinstance(table, LearnedPositionalEmbedding)
    initial = table.embedding.weight.detach().clone()  # (max_len, d_model)
    examples = data.examples("train")[: steps * config.training.batch_size]
    training = replace(config.training, epochs=1)
    train_seq2seq(model, examples, training, device="cpu", show_progress=False)
    read = max(max(len(source), len(target)) for source, target in examples)
    return table.embedding.weight.detach(), initial, read


def gradient_norms_at_init(
    data: ParallelData,
    config: TranslationConfig,
    norm_first: bool,
    num_layers: int = 6,
    batches: int = 4,
) -> dict[str, list[float]]:
    """Gradient norm of each layer's parameters at initialisation (Xiong et al., 2020, Fig. 3).

    A Transformer of the chapter's width with ``num_layers`` encoder and
    decoder layers (6 as in the paper); mean over ``batches`` training batches
    of the loss's gradient norm per layer, before any update.
    """
    size = replace(
        transformer_size(config, norm_first),
        num_encoder_layers=num_layers,
        num_decoder_layers=num_layers,
    )
    seed_everything(config.training.seed)
    model = TransformerSeq2Seq(len(data.source_vocab), len(data.target_vocab), size)
    model.train()
    examples = data.examples("train")
    norms: dict[str, list[list[float]]] = {"encoder": [], "decoder": []}
    for i in range(batches):
        batch = make_batch(
            examples[i * config.training.batch_size : (i + 1) * config.training.batch_size]
        )
        model.zero_grad()
        logits = model(batch.source, batch.source_lengths, batch.target_in)
        sequence_loss(logits, batch.target_out).backward()
        for stack in ("encoder", "decoder"):
            layers = getattr(model.transformer, stack).layers
            norms[stack].append(
                [
                    float(torch.sqrt(sum((p.grad**2).sum() for p in layer.parameters())))
                    for layer in layers
                ]
            )
    return {
        stack: [statistics.mean(col) for col in zip(*rows, strict=True)]
        for stack, rows in norms.items()
    }


@dataclass(frozen=True)
class CacheTiming:
    """Greedy decoding of a fixed number of tokens with and without the key/value cache."""

    steps: int
    seconds_without: float  # median over repeats
    seconds_with: float
    identical: bool  # the same tokens both ways

    @property
    def speedup(self) -> float:
        return self.seconds_without / self.seconds_with


def time_kv_cache(
    model: TransformerSeq2Seq,
    source: torch.Tensor,
    source_lengths: torch.Tensor,
    steps: int = 128,
    repeats: int = 3,
) -> CacheTiming:
    """Decode ``steps`` tokens both ways, interleaved and repeated; medians."""
    times: dict[bool, list[float]] = {True: [], False: []}
    outputs: dict[bool, torch.Tensor] = {}
    for _ in range(repeats):
        for use_cache in (False, True):
            with cache_mode(model, use_cache):
                start = time.perf_counter()
                outputs[use_cache] = decode_steps(model, source, source_lengths, steps)
                times[use_cache].append(time.perf_counter() - start)
    return CacheTiming(
        steps,
        statistics.median(times[False]),
        statistics.median(times[True]),
        bool(torch.equal(outputs[False], outputs[True])),
    )


@dataclass(frozen=True)
class CostRow:
    """Forward + backward cost of one layer over a sequence of n positions."""

    n: int
    attention_seconds: float  # a self-attention layer (MultiHeadAttention)
    lstm_seconds: float  # an nn.LSTM layer of the same width
    attention_bytes: int  # tensors kept for the backward pass
    lstm_bytes: int


def saved_bytes(fn: Callable[[], torch.Tensor]) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of ``fn()`` (each storage once)."""
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn()
    return sum(storages.values())


def attention_vs_lstm_cost(
    lengths: Sequence[int] = (32, 128, 512, 2048),
    d_model: int = 128,
    nhead: int = 4,
    repeats: int = 5,
    seed: int = 0,
) -> list[CostRow]:
    """Forward + backward time (median) and saved memory: self-attention vs an LSTM, one sequence.

    Self-attention does n²·d work for the scores but all positions at once; the
    LSTM does n·d² work one position after another. Short sequences are timed
    over several calls per repeat, so that each timing lasts long enough to trust;
    both layers run once untimed first (the first calls allocate), and the two
    alternate which goes first from one repeat to the next.
    """
    seed_everything(seed)
    attention_layer = MultiHeadAttention(d_model, nhead, batch_first=True)
    lstm = nn.LSTM(d_model, d_model, batch_first=True)
    rows: list[CostRow] = []
    for n in lengths:
        x = torch.randn(1, n, d_model, requires_grad=True)
        calls = max(1, 512 // n)

        def run_attention(x: torch.Tensor = x) -> torch.Tensor:
            return attention_layer(x, x, x, need_weights=False)[0]

        def run_lstm(x: torch.Tensor = x) -> torch.Tensor:
            return lstm(x)[0]

        seconds: dict[str, list[float]] = {"attention": [], "lstm": []}
        layers = [("attention", run_attention), ("lstm", run_lstm)]
        if not rows:  # warm-up, untimed
            for _, fn in layers:
                fn().sum().backward()
        for repeat in range(repeats):
            for name, fn in layers if repeat % 2 == 0 else layers[::-1]:
                start = time.perf_counter()
                for _ in range(calls):
                    fn().sum().backward()
                seconds[name].append((time.perf_counter() - start) / calls)
        rows.append(
            CostRow(
                n,
                statistics.median(seconds["attention"]),
                statistics.median(seconds["lstm"]),
                saved_bytes(run_attention),
                saved_bytes(run_lstm),
            )
        )
    return rows


def crossover(
    rows: Sequence[CostRow], cost: Callable[[CostRow], tuple[float, float]]
) -> int | None:
    """The shortest n from which attention costs more than the LSTM at every longer n, or None.

    ``cost(row)`` gives (attention, lstm), e.g. their seconds or their bytes.
    """
    found = None
    for row in reversed(rows):
        attention_cost, lstm_cost = cost(row)
        if attention_cost <= lstm_cost:
            break
        found = row.n
    return found


def head_alignment_accuracy(
    model: TransformerSeq2Seq, data: ParallelData, pairs: Sequence[Pair]
) -> list[list[float]]:
    """10장's alignment accuracy of every cross-attention head: [layer][head].

    Each head's (T, S) weights, read with teacher forcing, scored against the
    pairs' gold alignments like :func:`course_utils.attention.alignment_accuracy`.
    """
    per_head: dict[tuple[int, int], list[torch.Tensor]] = {}
    for pair in pairs:
        maps = attention_maps(
            model,
            data.source_vocab.encode(list(pair.source)),
            [*data.target_vocab.encode(list(pair.target)), EOS],
        )["cross"]
        for layer, weights in enumerate(maps):
            for head in range(weights.shape[0]):
                per_head.setdefault((layer, head), []).append(weights[head])
    gold = [pair.alignment for pair in pairs]
    layers = len(model.transformer.decoder.layers)
    heads = model.transformer.decoder_layers()[0].multihead_attn.num_heads
    return [
        [alignment_accuracy(per_head[(layer, head)], gold) for head in range(heads)]
        for layer in range(layers)
    ]


def attention_maps(
    model: TransformerSeq2Seq, source: Sequence[int], target: Sequence[int]
) -> dict[str, list[torch.Tensor]]:
    """Per-head weights of one sentence pair read with teacher forcing, layer by layer.

    ``source`` ids, ``target`` ids ending with ``<eos>``. Returns
    ``"encoder"`` (h, S, S), ``"decoder_self"`` (h, T, T) and ``"cross"``
    (h, T, S) for each layer; row j of a decoder map belongs to the step that
    predicts target token j.
    """
    model.eval()
    batch = make_batch([(list(source), list(target))])
    device = next(model.parameters()).device
    with torch.no_grad():
        memory = model.encode(batch.source.to(device), batch.source_lengths)
        model.decode(batch.target_in.to(device), memory)
    transformer = model.transformer
    return {
        "encoder": [
            recorded_weights(layer.attention_weights)[0].cpu()
            for layer in transformer.encoder_layers()
        ],
        "decoder_self": [
            recorded_weights(layer.self_attention_weights)[0].cpu()
            for layer in transformer.decoder_layers()
        ],
        "cross": [
            recorded_weights(layer.cross_attention_weights)[0].cpu()
            for layer in transformer.decoder_layers()
        ],
    }


def epoch_seconds(
    models: dict[str, EncoderDecoder],
    data: ParallelData,
    config: TranslationConfig,
    steps: int = 5,
    repeats: int = 3,
) -> dict[str, float]:
    """Seconds per training epoch of each model, from timed training steps, interleaved.

    Each model (a copy, so the trained weights stay as they are) takes the same
    ``steps`` batches with Adam, model after model, ``repeats`` times; the median
    step time × the number of batches in an epoch.
    """
    examples = data.examples("train")
    size = config.training.batch_size
    batches = [make_batch(examples[i * size : (i + 1) * size]) for i in range(steps)]
    copies = {name: copy.deepcopy(model).train() for name, model in models.items()}
    optimizers = {
        name: torch.optim.Adam(model.parameters(), lr=config.training.learning_rate)
        for name, model in copies.items()
    }
    times: dict[str, list[float]] = {name: [] for name in copies}
    for _ in range(repeats):
        for name, model in copies.items():
            for batch in batches:
                start = time.perf_counter()
                optimizers[name].zero_grad()
                logits = model(batch.source, batch.source_lengths, batch.target_in)
                sequence_loss(logits, batch.target_out).backward()
                optimizers[name].step()
                times[name].append(time.perf_counter() - start)
    per_epoch = math.ceil(len(examples) / size)
    return {name: statistics.median(t) * per_epoch for name, t in times.items()}
