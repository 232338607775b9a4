"""9장's experiments: the data, the configurations, and the trained models kept by recipe.

- :class:`ParallelData`, :func:`generated_data`, :func:`gettext_data`: the
  generated English→Korean corpus and the gettext messages, tokenized, with
  their vocabularies; :func:`translation_config` sizes them per ``COURSE_RUN``.
- :func:`train_model` trains a model once per recipe (:mod:`course_utils.runs`'
  cache); :func:`train_in_parallel` trains several at once, one process per core.
- :func:`evaluate_model`, :func:`scores_by_length`, :func:`teacher_forcing_sweep`,
  :func:`token_accuracy`, :func:`run_source_reversal`, :func:`subword_coverage`: the
  chapter's measurements; :func:`start_seq2seq_experiments` starts their trainings
  in the background.
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
    "AfterTraining",
    "LengthRow",
    "ModelMaker",
    "ParallelData",
    "SourceOrderRun",
    "SubwordCoverage",
    "TeacherForcingRun",
    "TimeLag",
    "TranslationConfig",
    "evaluate_model",
    "generated_data",
    "gettext_data",
    "new_seq2seq",
    "reverse_sources",
    "run_source_reversal",
    "scores_by_length",
    "start_seq2seq_experiments",
    "subword_coverage",
    "teacher_forcing_sweep",
    "time_lags",
    "token_accuracy",
    "train_in_background",
    "train_in_parallel",
    "train_model",
    "trained_recipe",
    "translation_config",
    "unseen_one_word_sources",
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


def trained_recipe(model: EncoderDecoder, data: ParallelData, training: TrainConfig) -> str:
    """What decides the trained weights besides the code: the model, the data and the budget.

    :func:`train_model`'s cache key, and the key of results computed from the
    trained weights (10장's and 11장's scores).
    """
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
    return runs.cache_path("seq2seq", trained_recipe(model, data, training))


def _train_cached(
    make: ModelMaker,
    data: ParallelData,
    config: TranslationConfig,
    threads: int,
    then: AfterTraining | None = None,
) -> None:
    torch.set_num_threads(threads)  # the parent's count: it is part of the cache key
    model = make(data, config)
    history = train_model(model, data, config.training, show_progress=False)
    if then is not None:  # e.g. score the model here, while the chapter's process is busy
        then(model, history, data, config)


ModelMaker = Callable[[ParallelData, TranslationConfig], EncoderDecoder]
#: Work a worker does with the model it has just trained (a module-level function, or a
#: ``functools.partial`` of one, so that it can be sent to the worker).
AfterTraining = Callable[[EncoderDecoder, History, ParallelData, TranslationConfig], None]


def _start_training(
    jobs: Sequence[tuple[ModelMaker, ParallelData, TranslationConfig]],
    least: int,
    then: AfterTraining | None = None,
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
    return pool, [(path, pool.submit(_train_cached, *job, threads, then)) for path, job in todo]


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


def train_in_background(
    jobs: Sequence[tuple[ModelMaker, ParallelData, TranslationConfig]],
    wait_for_all: bool = True,
    then: AfterTraining | None = None,
) -> bool:
    """:func:`train_in_parallel` without waiting: the chapter goes on while the models train.

    :func:`train_model` waits for a model that is training here (with a
    progress bar) and then loads it: by default until every job has finished;
    with ``wait_for_all=False`` only until its own job and the jobs given
    before it have, so the chapter can use the first models while the later
    ones still train. ``then(model, history, data, config)`` runs in the
    worker after each training (11장 scores its models there). Returns whether
    anything was started.
    """
    started = _start_training(jobs, least=1, then=then)  # even one model trains meanwhile
    if started is None:
        return False
    pool, submitted = started
    futures = [future for _, future in submitted]

    def waiting_for(needed: list[Future[None]]) -> Callable[[], None]:
        def wait() -> None:
            runs.wait_all(needed, "학습 중인 모델")  # one bar, shown by the first to wait
            for future in needed:
                future.result()  # a worker's error is raised here
            if all(future.done() for future in futures):
                pool.shutdown()

        return wait

    for i, (path, _) in enumerate(submitted):
        needed = futures if wait_for_all else futures[: i + 1]
        runs.will_produce(("seq2seq", path), waiting_for(needed))
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


def _clause_subset(data: ParallelData, splits: Splits, clauses: int) -> ParallelData:
    """The pairs of ``clauses`` clauses of each split (the teacher-forcing sweep's data)."""
    if len(splits.train) != len(data.train) or len(splits.valid) != len(data.valid):
        raise ValueError("data and splits must come from the same generated_data() call")

    def kept(
        pairs: Sequence[tuple[list[str], list[str]]], generated: Sequence[Pair]
    ) -> list[tuple[list[str], list[str]]]:
        return [pair for pair, p in zip(pairs, generated, strict=True) if p.clauses == clauses]

    subset = replace(
        data,
        name=f"{data.name}/{clauses}-clause",
        train=kept(data.train, splits.train),
        valid=kept(data.valid, splits.valid),
        test=kept(data.test, splits.test),
    )
    if not subset.train or not subset.valid:
        raise ValueError(f"no training or validation pair has {clauses} clause(s)")
    return subset


def _with_teacher_forcing(config: TranslationConfig, ratio: float) -> TranslationConfig:
    return replace(config, training=replace(config.training, teacher_forcing_ratio=ratio))


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
    :func:`generated_data`'s pair. The models are trained by :func:`train_model`,
    so they are kept, and :func:`start_seq2seq_experiments` can train them ahead.
    """
    if not ratios:
        raise ValueError("give at least one teacher_forcing_ratio")
    subset = _clause_subset(data, splits, clauses)
    runs = []
    for ratio in ratios:
        ratio_config = _with_teacher_forcing(config, ratio)
        model = new_seq2seq(subset, ratio_config)
        history = train_model(model, subset, ratio_config.training, show_progress=show_progress)
        hypotheses = translate(
            model, [s for s, _ in subset.valid], subset.source_vocab, subset.target_vocab
        )
        scores = score_translations(hypotheses, [t for _, t in subset.valid])
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


# ---------------------------------------------------------------------------
# Reading the source backwards (Sutskever et al., 2014)
# ---------------------------------------------------------------------------


def reverse_sources(data: ParallelData) -> ParallelData:
    """``data`` with every source sentence's tokens in reverse order; targets untouched.

    Sutskever et al. (2014) fed the encoder the source backwards. A source has no
    ``<eos>`` (the encoder stops at its length), so reversing its tokens is the
    whole change; the target keeps its order, and :meth:`ParallelData.examples`
    still closes it with ``<eos>``. The name changes too, so :func:`train_model`
    keeps the model apart from the one trained on the forward sources.
    """

    def backwards(
        pairs: Sequence[tuple[list[str], list[str]]],
    ) -> list[tuple[list[str], list[str]]]:
        return [(source[::-1], list(target)) for source, target in pairs]

    return replace(
        data,
        name=f"{data.name}/reversed",
        train=backwards(data.train),
        valid=backwards(data.valid),
        test=backwards(data.test),
    )


@dataclass(frozen=True)
class SourceOrderRun:
    """9장's seq2seq trained and tested with the sources in one order (greedy decoding)."""

    source_order: str  # "forward" or "reversed"
    in_range: TranslationScores  # test sentences of at most max_train_clauses clauses
    beyond: TranslationScores  # test sentences with more clauses than any training sentence
    by_length: list[LengthRow]
    first_token: float  # share of the in-range test sentences whose first output token is right


def _scores_where(
    hypotheses: Sequence[Tokens], references: Sequence[Tokens], keep: Sequence[bool]
) -> TranslationScores:
    chosen = [i for i, k in enumerate(keep) if k]
    return score_translations([hypotheses[i] for i in chosen], [references[i] for i in chosen])


def run_source_reversal(
    data: ParallelData,
    splits: Splits,
    config: TranslationConfig,
    show_progress: bool = True,
    forward: Sequence[Tokens] | None = None,
) -> dict[str, SourceOrderRun]:
    """Train 9장's seq2seq on forward and on reversed sources, same seed, data and budget.

    Both are scored on the generated test sentences (the reversed model reads them
    backwards too): in and beyond the training range of clauses, and by length.
    ``data`` and ``splits`` are :func:`generated_data`'s pair. ``forward``, when the
    caller has them: the greedy translations of ``data.test`` by the forward model
    (:func:`new_seq2seq` on ``data`` and ``config``, as trained by :func:`train_model`),
    which is then not loaded and run again.
    """
    if len(splits.test) != len(data.test):
        raise ValueError("data and splits must come from the same generated_data() call")
    if forward is not None and len(forward) != len(data.test):
        raise ValueError(
            f"forward must hold one translation per test sentence ({len(data.test)}), "
            f"got {len(forward)}"
        )
    inside = [p.clauses <= splits.max_train_clauses for p in splits.test]
    results = {}
    for order, ordered in (("forward", data), ("reversed", reverse_sources(data))):
        if order == "forward" and forward is not None:
            hypotheses = [list(h) for h in forward]
        else:
            model = new_seq2seq(ordered, config)
            train_model(model, ordered, config.training, show_progress=show_progress)
            hypotheses = translate(
                model, [s for s, _ in ordered.test], ordered.source_vocab, ordered.target_vocab
            )
        references = [t for _, t in ordered.test]
        results[order] = SourceOrderRun(
            order,
            _scores_where(hypotheses, references, inside),
            _scores_where(hypotheses, references, [not keep for keep in inside]),
            scores_by_length(hypotheses, splits.test, splits.max_train_clauses),
            sum(h[:1] == r[:1] for h, r, k in zip(hypotheses, references, inside, strict=True) if k)
            / sum(inside),
        )
    return results


@dataclass(frozen=True)
class TimeLag:
    """Steps from the encoder reading a source word to the decoder writing its translation."""

    mean: float  # over every aligned (source word, target token) pair of every sentence
    first: float  # the first target token's (its nearest aligned source word), mean over sentences


def time_lags(pairs: Sequence[Pair]) -> dict[str, TimeLag]:
    """``"forward"`` and ``"reversed"``: the time lags of Sutskever et al. (2014) in ``pairs``.

    The encoder reads source word i (1-based) of S at step i, or at step S − i + 1
    when the source is reversed; the decoder writes target token j at step S + j.
    The lag is the difference, from the pairs' word alignments.
    """
    lags: dict[str, tuple[list[int], list[int]]] = {"forward": ([], []), "reversed": ([], [])}
    for pair in pairs:
        length = len(pair.source)
        for order, (every, first) in lags.items():
            # the step at which the encoder reads source word i (0-based)
            read_at = [i + 1 if order == "forward" else length - i for i in range(length)]
            steps = [
                [length + j - read_at[i] for i in aligned]
                for j, aligned in enumerate(pair.alignment, start=1)
            ]
            every.extend(lag for token in steps for lag in token)
            if steps and steps[0]:
                first.append(min(steps[0]))
    if not lags["forward"][0] or not lags["forward"][1]:
        raise ValueError("pairs must hold at least one aligned first target token")
    return {
        order: TimeLag(sum(every) / len(every), sum(first) / len(first))
        for order, (every, first) in lags.items()
    }


def start_seq2seq_experiments(
    data: ParallelData,
    splits: Splits,
    config: TranslationConfig,
    gettext: ParallelData | None = None,
) -> bool:
    """Start training 9장's models in the background, in the order the chapter needs them.

    The chapter's model, the teacher-forcing sweep's models, the model on reversed
    sources and, when given, the model on ``gettext`` (the catalogues' data): one
    worker process per core trains those the cache lacks while the chapter goes
    on, and :func:`train_model` waits only for a model and those started before it.
    Nothing starts on a GPU, on one core or with the cache off (each cell then
    trains its own). Returns whether anything was started.
    """
    subset = _clause_subset(data, splits, clauses=1)
    jobs: list[tuple[ModelMaker, ParallelData, TranslationConfig]] = [(new_seq2seq, data, config)]
    jobs += [(new_seq2seq, subset, _with_teacher_forcing(config, r)) for r in (1.0, 0.5, 0.0)]
    jobs.append((new_seq2seq, reverse_sources(data), config))
    if gettext is not None:
        jobs.append((new_seq2seq, gettext, config))
    return train_in_background(jobs, wait_for_all=False)


# ---------------------------------------------------------------------------
# Why subwords: the gettext test split's words and pieces
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SubwordCoverage:
    """How much of one side of the test split a word vocabulary and the pieces miss."""

    test_words: int  # words (split at spaces) in the test split
    unseen_words: float  # share of them that no training sentence contains
    test_pieces: int
    unknown_pieces: float  # share of the test pieces that the model reads as <unk>


def _training_words(data: ParallelData, side: int) -> set[str]:
    """The words of side ``side`` (0 source, 1 target) of the training split."""
    return {w for pair in data.train for w in data.words(pair[side])}


def unseen_one_word_sources(data: ParallelData) -> list[tuple[Tokens, Tokens]]:
    """The test pairs whose source is one word that no training source contains."""
    seen = _training_words(data, 0)
    return [
        (source, target)
        for source, target in data.test
        if len(words := data.words(source)) == 1 and words[0] not in seen
    ]


def subword_coverage(data: ParallelData) -> dict[str, SubwordCoverage]:
    """``"source"`` and ``"target"``: what a word-level vocabulary of the training split
    would miss in the test split, against the pieces the model actually reads.

    Words are the detokenized text split at spaces (``data.words``); a piece is
    unknown when it is not in the side's vocabulary (a character no training
    sentence has).
    """
    sides = {"source": (0, data.source_vocab), "target": (1, data.target_vocab)}
    coverage = {}
    for side, (index, vocab) in sides.items():
        seen = _training_words(data, index)
        words = [w for pair in data.test for w in data.words(pair[index])]
        pieces = [piece for pair in data.test for piece in pair[index]]
        if not words or not pieces:
            raise ValueError(f"the test split has no {side} words")
        unknown = sum(i == vocab.unk_id for i in vocab.encode(pieces))
        coverage[side] = SubwordCoverage(
            len(words),
            sum(w not in seen for w in words) / len(words),
            len(pieces),
            unknown / len(pieces),
        )
    return coverage


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
