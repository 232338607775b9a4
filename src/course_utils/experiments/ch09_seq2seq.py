"""9장's experiments: the data, the configurations, and the trained models kept by recipe.

- :class:`ParallelData`, :func:`generated_data`, :func:`gettext_data`: the
  generated English→Korean corpus and the gettext messages, tokenized, with
  their vocabularies; :func:`translation_config` sizes them per ``COURSE_RUN``.
- :func:`train_model` trains a model once per recipe (:mod:`course_utils.runs`'
  cache); :func:`train_in_parallel` trains several at once, one process per core.
- :func:`evaluate_model`, :func:`scores_by_length`, :func:`teacher_forcing_sweep`,
  :func:`token_accuracy`: the chapter's measurements.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from course_utils import runs
from course_utils.bpe import (
    train_sentencepiece,
)
from course_utils.device import (
    get_device,
    run_size,
    seed_everything,
)
from course_utils.gettext_corpus import (
    GettextPair,
    gettext_splits,
)
from course_utils.seq2seq import (
    EOS,
    PAD,
    EncoderDecoder,
    Example,
    Seq2Seq,
    Tokens,
    TrainConfig,
    TranslationScores,
    allowed_log_probs,
    encode_pair,
    greedy_decode,
    make_batch,
    score_translations,
    train_seq2seq,
    translate,
)
from course_utils.train import (
    History,
)
from course_utils.translation_data import (
    Pair,
    Splits,
    make_splits,
    source_vocabulary,
    target_vocabulary,
)
from course_utils.vocab import (
    Vocab,
)

__all__ = [
    "GETTEXT_MAX_TOKENS",
    "GETTEXT_VOCAB_SIZE",
    "LENGTH_BINS",
    "TRANSLATION_CONFIGS",
    "LengthRow",
    "ModelMaker",
    "ParallelData",
    "TeacherForcingRun",
    "TranslationConfig",
    "evaluate_model",
    "generated_data",
    "gettext_data",
    "new_seq2seq",
    "scores_by_length",
    "teacher_forcing_sweep",
    "token_accuracy",
    "train_in_background",
    "train_in_parallel",
    "train_model",
    "translation_config",
]

# ---------------------------------------------------------------------------
# The chapters' experiments
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ParallelData:
    """Tokenized train/valid/test pairs with their vocabularies.

    ``words`` turns a target token list into the words BLEU counts (the
    generated corpus: its own tokens; SentencePiece pieces: the words of the
    detokenized text).
    """

    name: str
    train: list[tuple[list[str], list[str]]]
    valid: list[tuple[list[str], list[str]]]
    test: list[tuple[list[str], list[str]]]
    source_vocab: Vocab
    target_vocab: Vocab
    words: Callable[[Sequence[str]], list[str]] = list

    def split(self, name: str) -> list[tuple[list[str], list[str]]]:
        if name not in ("train", "valid", "test"):
            raise ValueError(f"split must be 'train', 'valid' or 'test', got {name!r}")
        pairs: list[tuple[list[str], list[str]]] = getattr(self, name)
        return pairs

    def examples(self, name: str) -> list[tuple[list[int], list[int]]]:
        """The split as id lists, targets ending with ``<eos>``."""
        return [
            encode_pair(s, t, self.source_vocab, self.target_vocab) for s, t in self.split(name)
        ]


@dataclass(frozen=True)
class TranslationConfig:
    """The data, model size and training budget every model of 9장 and 10장 gets."""

    train: int  # generated training pairs (1..max_train_clauses clauses)
    valid: int
    test_per_clauses: int  # test pairs for each clause count 1..max_test_clauses
    max_train_clauses: int
    max_test_clauses: int  # beyond max_train_clauses: longer than anything trained on
    max_adjectives: int
    embedding_size: int
    hidden_size: int  # the context vector's size without attention
    training: TrainConfig


TRANSLATION_CONFIGS = {
    "small": TranslationConfig(
        10_000, 500, 100, 2, 3, 2, 32, 128, TrainConfig(epochs=3, batch_size=64, learning_rate=3e-3)
    ),
    "large": TranslationConfig(
        60_000,
        1_000,
        200,
        3,
        4,
        2,
        64,
        256,
        TrainConfig(epochs=8, batch_size=64, learning_rate=2e-3),
    ),
}


def translation_config(size: str | None = None) -> TranslationConfig:
    """The configuration of a run size (default: :func:`course_utils.device.run_size`)."""
    size = run_size() if size is None else size
    if size not in TRANSLATION_CONFIGS:
        raise ValueError(f"size must be one of {', '.join(TRANSLATION_CONFIGS)}, got {size!r}")
    return TRANSLATION_CONFIGS[size]


def generated_data(config: TranslationConfig, seed: int = 0) -> tuple[ParallelData, Splits]:
    """The generated English→Korean corpus of :mod:`course_utils.translation_data`."""
    splits = make_splits(
        seed,
        train=config.train,
        valid=config.valid,
        test_per_clauses=config.test_per_clauses,
        max_train_clauses=config.max_train_clauses,
        max_test_clauses=config.max_test_clauses,
        max_adjectives=config.max_adjectives,
    )

    def tokens(pairs: Sequence[Pair]) -> list[tuple[list[str], list[str]]]:
        return [(list(p.source), list(p.target)) for p in pairs]

    data = ParallelData(
        "generated",
        tokens(splits.train),
        tokens(splits.valid),
        tokens(splits.test),
        Vocab(source_vocabulary()),
        Vocab(target_vocabulary()),
    )
    return data, splits


GETTEXT_VOCAB_SIZE = 1000  # SentencePiece pieces on each side
GETTEXT_MAX_TOKENS = 6  # the short messages: menu items, labels, country and language names


def _pieces_to_words(pieces: Sequence[str]) -> list[str]:
    return "".join(pieces).replace("▁", " ").split()


def gettext_data(
    seed: int = 0, vocab_size: int = GETTEXT_VOCAB_SIZE, max_tokens: int = GETTEXT_MAX_TOKENS
) -> ParallelData:
    """The gettext catalogues' English→Korean pairs in SentencePiece pieces (2장).

    Each side gets a unigram model of ``vocab_size`` pieces trained on its own
    training sentences; BLEU then counts the words of the detokenized Korean.
    Only pairs of at most ``max_tokens`` tokens on each side are kept (see
    :func:`~course_utils.gettext_corpus.load_gettext_pairs`).
    Raises :class:`~course_utils.gettext_corpus.GettextCatalogueNotFoundError`
    (naming the packages to install) when the catalogues are missing.
    """
    splits = gettext_splits(seed, max_tokens=max_tokens)
    english = train_sentencepiece([p.english for p in splits["train"]], "unigram", vocab_size)
    korean = train_sentencepiece([p.korean for p in splits["train"]], "unigram", vocab_size)

    def pieces(pairs: Sequence[GettextPair]) -> list[tuple[list[str], list[str]]]:
        return [
            (english.encode(p.english, out_type=str), korean.encode(p.korean, out_type=str))
            for p in pairs
        ]

    train = pieces(splits["train"])
    return ParallelData(
        "gettext",
        train,
        pieces(splits["valid"]),
        pieces(splits["test"]),
        Vocab([t for s, _ in train for t in s]),
        Vocab([piece for _, target in train for piece in target]),
        _pieces_to_words,
    )


def evaluate_model(
    model: EncoderDecoder,
    data: ParallelData,
    split: str = "test",
    method: str = "greedy",
    beam_size: int = 5,
) -> tuple[TranslationScores, list[list[str]]]:
    """Translate a split and score it; also returns the hypotheses (as BLEU's words)."""
    pairs = data.split(split)
    outputs = translate(
        model, [s for s, _ in pairs], data.source_vocab, data.target_vocab, method, beam_size
    )
    hypotheses = [data.words(o) for o in outputs]
    return score_translations(hypotheses, [data.words(t) for _, t in pairs]), hypotheses


def _training_recipe(model: EncoderDecoder, data: ParallelData, training: TrainConfig) -> str:
    """What decides the trained weights besides the code: the model, the data and the budget."""
    digest = hashlib.sha256()
    device = next(model.parameters()).device
    digest.update(f"{device.type}|{model!r}|{training!r}|{data.name}".encode())
    for source, target in data.train:
        digest.update(("\x1f".join(source) + "\x1e" + "\x1f".join(target) + "\x1d").encode())
    digest.update("\x1f".join([*data.source_vocab, "\x1e", *data.target_vocab]).encode())
    return digest.hexdigest()


def train_model(
    model: EncoderDecoder,
    data: ParallelData,
    training: TrainConfig,
    show_progress: bool = True,
) -> History:
    """Train ``model`` on ``data``'s training split (the chapters' one call).

    9장 and 10장 train some models twice (10장 compares 9장's seq2seq with the
    attention models, and each chapter's claims test re-measures them). The
    trained weights and history are kept in ``~/.cache/nlp-course`` (or the folder
    in ``COURSE_CACHE``; ``COURSE_CACHE=off`` always trains), under a key made of
    the package's source code, the model, the data and the training settings,
    so a changed recipe never reuses an old result.
    """
    path = _cache_path(model, data, training)  # also moves the model where it would train
    runs.wait_for(("seq2seq", path))  # a model that train_in_background is training
    saved = runs.load_result(path, map_location=next(model.parameters()).device)
    if saved is not None:
        model.load_state_dict(saved["state"])
        return History(**saved["history"])
    history = train_seq2seq(model, data.examples("train"), training, show_progress=show_progress)
    runs.save_result(path, {"state": model.state_dict(), "history": asdict(history)})
    return history


def _cache_path(model: EncoderDecoder, data: ParallelData, training: TrainConfig) -> Path | None:
    if runs.cache_folder() is None:
        return None
    model.to(get_device())
    return runs.cache_path("seq2seq", _training_recipe(model, data, training))


def _train_cached(
    make: ModelMaker,
    data: ParallelData,
    config: TranslationConfig,
    threads: int,
) -> None:
    torch.set_num_threads(threads)  # the parent's count: it is part of the cache key
    train_model(make(data, config), data, config.training, show_progress=False)


ModelMaker = Callable[[ParallelData, TranslationConfig], EncoderDecoder]


def _start_training(
    jobs: Sequence[tuple[ModelMaker, ParallelData, TranslationConfig]], least: int
) -> tuple[Executor, list[tuple[Path, Future[None]]]] | None:
    """Submit the jobs whose model is neither trained nor being trained; None if under ``least``."""
    cores = runs.background_workers()
    if cores < 2:
        return None
    todo = []
    for make, data, config in jobs:
        path = _cache_path(make(data, config), data, config.training)
        if path is not None and not path.is_file() and not runs.pending(("seq2seq", path)):
            todo.append((path, (make, data, config)))
    if len(todo) < least:
        return None
    threads = torch.get_num_threads()
    pool = runs.worker_pool(min(len(todo), cores))
    return pool, [(path, pool.submit(_train_cached, *job, threads)) for path, job in todo]


def train_in_parallel(jobs: Sequence[tuple[ModelMaker, ParallelData, TranslationConfig]]) -> None:
    """Train several models at once, one process per CPU core, into :func:`train_model`'s cache.

    A job ``(make, data, config)`` is the model ``make(data, config)`` trained on
    ``data`` with ``config.training``. Each model trains single-threaded in its
    own process, as it would here, so the result is the one a later
    ``train_model`` call loads instead of training. Jobs start in the order
    given (put the longest first). Nothing happens on a GPU, with one core,
    with the cache off (``COURSE_CACHE=off``) or for models already trained.
    """
    started = _start_training(jobs, least=2)  # one model alone trains as fast here
    if started is None:
        return
    pool, submitted = started
    with pool:
        for _, future in submitted:
            future.result()


def train_in_background(jobs: Sequence[tuple[ModelMaker, ParallelData, TranslationConfig]]) -> bool:
    """:func:`train_in_parallel` without waiting: the chapter goes on while the models train.

    :func:`train_model` waits for a model that is training here (with a
    progress bar) and then loads it. Returns whether anything was started.
    """
    started = _start_training(jobs, least=1)  # even one model trains while the chapter goes on
    if started is None:
        return False
    pool, submitted = started
    futures = [future for _, future in submitted]

    def wait() -> None:
        runs.wait_all(futures, "학습 중인 모델")  # one bar, shown by the first to wait
        for future in futures:
            future.result()  # a worker's error is raised here
        pool.shutdown()

    for path, _ in submitted:
        runs.will_produce(("seq2seq", path), wait)
    return True


def new_seq2seq(data: ParallelData, config: TranslationConfig) -> Seq2Seq:
    """9장's model, sized by ``config``, seeded by ``config.training.seed``."""
    seed_everything(config.training.seed)
    return Seq2Seq(
        len(data.source_vocab), len(data.target_vocab), config.embedding_size, config.hidden_size
    )


@dataclass(frozen=True)
class LengthRow:
    """Scores of the test sentences in one source-length bin."""

    low: int  # source tokens, inclusive
    high: int
    sentences: int
    bleu: float
    exact_match: float
    in_training_range: bool  # no more clauses than any training sentence


LENGTH_BINS = (4, 9, 14, 19, 24, 29, 34, 40, 50, 60)  # bin i holds low_i <= S < low_(i+1)


def scores_by_length(
    hypotheses: Sequence[Tokens],
    pairs: Sequence[Pair],
    max_train_clauses: int,
    edges: Sequence[int] = LENGTH_BINS,
) -> list[LengthRow]:
    """BLEU and exact match per source-length bin; bins of fewer than 20 sentences are dropped.

    A bin is ``in_training_range`` when all its sentences have at most
    ``max_train_clauses`` clauses; sentences longer than that are kept in
    bins of their own.
    """
    if len(hypotheses) != len(pairs):
        raise ValueError(f"got {len(hypotheses)} hypotheses for {len(pairs)} pairs")
    rows = []
    for inside in (True, False):
        for low, high in itertools.pairwise(edges):
            chosen = [
                i
                for i, p in enumerate(pairs)
                if low <= len(p.source) < high and (p.clauses <= max_train_clauses) == inside
            ]
            if len(chosen) < 20:
                continue
            hyps = [list(hypotheses[i]) for i in chosen]
            refs = [list(pairs[i].target) for i in chosen]
            scores = score_translations(hyps, refs)
            rows.append(
                LengthRow(low, high - 1, len(chosen), scores.bleu, scores.exact_match, inside)
            )
    return rows


@dataclass(frozen=True)
class TeacherForcingRun:
    """One model of the sweep: its ratio, validation scores and training time."""

    teacher_forcing_ratio: float
    exact_match: float
    bleu: float
    train_loss: float  # last epoch's mean training loss (under that ratio)
    seconds: float


def teacher_forcing_sweep(
    data: ParallelData,
    splits: Splits,
    config: TranslationConfig,
    ratios: Sequence[float] = (1.0, 0.5, 0.0),
    clauses: int = 1,
    show_progress: bool = True,
) -> list[TeacherForcingRun]:
    """Train one seq2seq per teacher-forcing ratio on the training pairs of ``clauses`` clauses.

    Every model has the same seed, data and budget (``config.training`` but the
    ratio); the validation sentences of that many clauses are decoded greedily
    (free running), as at test time. ``data`` and ``splits`` are
    :func:`generated_data`'s pair.
    """
    if not ratios:
        raise ValueError("give at least one teacher_forcing_ratio")
    if len(splits.train) != len(data.train) or len(splits.valid) != len(data.valid):
        raise ValueError("data and splits must come from the same generated_data() call")
    examples = [
        e for e, p in zip(data.examples("train"), splits.train, strict=True) if p.clauses == clauses
    ]
    valid = [p for p in splits.valid if p.clauses == clauses]
    if not examples or not valid:
        raise ValueError(f"no training or validation pair has {clauses} clause(s)")
    runs = []
    for ratio in ratios:
        training = replace(config.training, teacher_forcing_ratio=ratio)
        model = new_seq2seq(data, config)
        history = train_seq2seq(model, examples, training, show_progress=show_progress)
        hypotheses = translate(
            model, [list(p.source) for p in valid], data.source_vocab, data.target_vocab
        )
        scores = score_translations(hypotheses, [list(p.target) for p in valid])
        runs.append(
            TeacherForcingRun(
                ratio,
                scores.exact_match,
                scores.bleu,
                history.train_loss[-1],
                sum(history.seconds),
            )
        )
    return runs


@torch.no_grad()
def token_accuracy(
    model: EncoderDecoder, examples: Sequence[Example], batch_size: int = 256
) -> tuple[float, float]:
    """(teacher-forced, free-running) share of target positions predicted right.

    Teacher-forced: the decoder reads the reference prefix and the argmax at
    each position is compared with the reference token (``<eos>`` included).
    Free-running: greedy decoding reads its own outputs, and output token j is
    compared with reference token j (a missing token counts as wrong).
    """
    if not examples:
        raise ValueError("examples is empty")
    model.eval()
    device = next(model.parameters()).device
    forced_hits = free_hits = total = 0
    for start in range(0, len(examples), batch_size):
        batch = make_batch(list(examples[start : start + batch_size])).to(device)
        logits = model(batch.source, batch.source_lengths, batch.target_in)  # (B, T, V)
        guesses = allowed_log_probs(logits.flatten(0, 1)).argmax(-1).view_as(batch.target_out)
        real = batch.target_out != PAD
        forced_hits += int(((guesses == batch.target_out) & real).sum())
        total += int(real.sum())
        decoded = greedy_decode(
            model, batch.source, batch.source_lengths, max_len=batch.target_out.shape[1]
        )
        for b, (ids, finished) in enumerate(zip(decoded.tokens, decoded.finished, strict=True)):
            output = [*ids, EOS] if finished else ids
            reference = batch.target_out[b][real[b]].tolist()
            free_hits += sum(o == r for o, r in zip(output, reference, strict=False))
    return forced_hits / total, free_hits / total
