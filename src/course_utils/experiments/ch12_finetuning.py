"""12장's Korean experiments, part 2: fine-tuning on 6장's two tasks, and the comparison.

:func:`finetune_spacing` and :func:`finetune_lines` fine-tune the pretrained
tiny BERT (or a random start) on 6장's spacing and line-classification tasks,
on 6장's splits; :func:`run_korean_finetuning` compares pretrained vs random
start vs 6장's RNN. :func:`start_korean_training` trains what the comparison
needs in :mod:`course_utils.runs`' worker processes while the chapter runs.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from course_utils import runs
from course_utils.bert import (
    IGNORE_INDEX,
    BertForSequenceClassification,
    BertForTokenClassification,
)
from course_utils.checks import check_int
from course_utils.experiments.ch12_pretraining import (
    KoreanBertConfig,
    KoreanSplits,
    PretrainedKoreanBert,
    char_ids,
    check_config,
    korean_char_vocab,
    korean_pretraining_text,
    korean_task_splits,
    korean_text_digest,
    pretrain_korean_bert,
    pretraining_key,
    with_cls_sep,
)
from course_utils.train import adamw_with_warmup
from course_utils.wordpiece import WordPieceVocab

__all__ = [
    "FinetuneComparison",
    "FinetuneResult",
    "finetune_lines",
    "finetune_spacing",
    "run_korean_finetuning",
    "start_korean_training",
    "tag_characters",
    "wait_for_training",
]

# ---------------------------------------------------------------------------
# Fine-tuning on 6장's tasks
# ---------------------------------------------------------------------------


@dataclass
class FinetuneResult:
    """One fine-tuned model on one of 6장's tasks, scored on 6장's test split."""

    task: str  # "spacing" or "lines"
    pretrained: bool  # started from the MLM weights (True) or from BERT's random initialisation
    curve: list[float]  # 6장's metric on the test split after each epoch (nothing is chosen by it)
    baseline: float  # never a space / always the larger class
    test_size: int  # characters / lines scored
    losses: list[float]  # mean training loss per epoch
    seconds: float
    cached: bool
    model: nn.Module = field(repr=False)

    @property
    def accuracy(self) -> float:
        """6장's metric after the last epoch: characters tagged right / lines classified right."""
        return self.curve[-1]


def _fit_scored(
    model: nn.Module,
    batches: Callable[[], Any],
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    epochs: int,
    target: torch.device,
    show_progress: bool,
    score: Callable[[], float],
) -> dict[str, Any]:
    """:func:`~course_utils.train.fit` one epoch at a time, ``score()`` after each (not timed)."""
    from course_utils.train import fit

    losses, curve, seconds = [], [], 0.0
    for _ in range(epochs):
        start = time.perf_counter()
        history = fit(model, batches, loss_fn, optimizer, 1, device=target, seed=None,
                      show_progress=show_progress, scheduler=schedule)  # fmt: skip
        seconds += time.perf_counter() - start
        losses += history.train_loss
        curve.append(score())
    return {"state": {k: v.cpu() for k, v in model.state_dict().items()},
            "losses": losses, "curve": curve, "seconds": seconds}  # fmt: skip


def _encoder_init(model: BertForTokenClassification | BertForSequenceClassification,
                  pretrained: PretrainedKoreanBert | None) -> None:  # fmt: skip
    """Copy the pretrained encoder (embeddings, layers) into ``model``; heads stay as they are."""
    if pretrained is None:
        return
    weights = pretrained.model.bert.state_dict()
    missing = model.bert.load_state_dict(weights, strict=False)
    if missing.unexpected_keys or any(not k.startswith("pooler.") for k in missing.missing_keys):
        raise RuntimeError(f"the pretrained encoder does not fit: {missing}")


def _finetune_setup(
    config: KoreanBertConfig, pretrained: bool, validation: bool
) -> tuple[KoreanSplits, WordPieceVocab, PretrainedKoreanBert | None]:
    """The splits, the vocabulary (the pretraining text's, for both starts) and the MLM model."""
    if not validation:
        _wait_for_background(config)
    if pretrained:
        mlm = pretrain_korean_bert(config, validation, show_progress=False)
        return mlm.splits, mlm.vocab, mlm
    splits = korean_task_splits(validation)
    return (
        splits,
        korean_char_vocab(korean_pretraining_text(splits, config.with_gettext).lines),
        None,
    )


@torch.no_grad()
def tag_characters(
    model: BertForTokenClassification,
    vocab: WordPieceVocab,
    ids: torch.Tensor,
    width: int,
    batch_size: int = 64,
) -> torch.Tensor:
    """Labels (N,) for a long stream of character ids (N,), read in overlapping windows.

    Windows of ``width`` characters (``[CLS]`` and ``[SEP]`` added) start
    every ``width // 2`` characters, the last one ending at the end; each
    character takes its label from the window in which it lies farthest from
    an edge, so every decision sees context on both sides.
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"ids must be a non-empty 1-D tensor, got {getattr(ids, 'shape', ids)!r}")
    check_int(width, "width")
    check_int(batch_size, "batch_size")
    model.eval()
    device = next(model.parameters()).device
    N = ids.numel()
    width = min(width, N)
    starts = list(range(0, N - width + 1, max(1, width // 2)))
    if starts[-1] + width < N:
        starts.append(N - width)
    offsets = torch.arange(width)
    margin = torch.minimum(offsets, width - 1 - offsets)  # (C,): distance to the nearer edge
    best = torch.full((N,), -1)
    labels = torch.zeros(N, dtype=torch.long)
    for first in range(0, len(starts), batch_size):
        group = starts[first : first + batch_size]
        windows = ids[torch.tensor(group)[:, None] + offsets]  # (W, C)
        inputs = with_cls_sep(windows, vocab).to(device)  # (W, C + 2)
        predicted = model(inputs)[:, 1:-1].argmax(-1).cpu()  # (W, C)
        for row, start in enumerate(group):
            span = slice(start, start + width)
            better = margin > best[span]
            best[span] = torch.where(better, margin, best[span])
            labels[span] = torch.where(better, predicted[row], labels[span])
    return labels


def _with_cls_sep_padded(
    sequences: Sequence[torch.Tensor], vocab: WordPieceVocab
) -> tuple[torch.Tensor, torch.Tensor]:
    """``[CLS] ids [SEP]`` for each, padded on the right: ids (B, T) and attention mask (B, T)."""
    rows = [with_cls_sep(ids[None], vocab)[0] for ids in sequences]  # (T_b + 2,) each
    padded = nn.utils.rnn.pad_sequence(rows, batch_first=True, padding_value=vocab.pad_id)
    lengths = torch.tensor([len(row) for row in rows])
    return padded, (torch.arange(padded.shape[1]) < lengths[:, None]).long()


def finetune_spacing(
    config: KoreanBertConfig | None = None,
    pretrained: bool = True,
    validation: bool = False,
    show_progress: bool = True,
) -> FinetuneResult:
    """6장's spacing restoration as token classification: one label per character (cached).

    The data are 6장's: :func:`~course_utils.rnn.spacing_stream` of the
    training and test streams (label 1 where a space followed). Each epoch
    cuts the training stream into windows of ``seq_len − 2`` characters at a
    random offset (:func:`~course_utils.sequences.lm_windows`, as 6장);
    the test stream is tagged by :func:`tag_characters`. ``pretrained=False``
    trains the same model from BERT's random initialisation with the same
    budget.
    """
    from course_utils.device import get_device, seed_everything
    from course_utils.experiments.ch06_rnn import spacing_stream
    from course_utils.sequences import lm_windows

    config = check_config(config)
    f = config.finetuning
    splits, vocab, mlm = _finetune_setup(config, pretrained, validation)
    train_x, train_y = spacing_stream(splits.chars("train"), vocab)  # (N,), (N,)
    test_x, test_y = spacing_stream(splits.chars("test"), vocab)
    width = min(f.spacing_len, config.seq_len) - 2
    bert_config = config.bert_config(len(vocab), f.dropout)

    def train() -> dict[str, Any]:
        seed_everything(f.seed)
        model = BertForTokenClassification(bert_config)
        _encoder_init(model, mlm)
        target = get_device()
        positions = torch.arange(len(train_x))
        cuts = torch.Generator().manual_seed(f.seed)
        total = f.spacing_epochs * ((len(train_x) - width) // width // f.batch_size)
        optimizer, schedule = adamw_with_warmup(
            model, f.learning_rate, f.weight_decay, total, round(f.warmup_share * total)
        )
        edge = torch.full((f.batch_size, 1), IGNORE_INDEX)

        def batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
            return [
                (with_cls_sep(train_x[p], vocab), torch.cat([edge, train_y[p], edge], dim=1))
                for p, _ in lm_windows(positions, f.batch_size, width, cuts)
            ]  # each (B, C + 2)

        def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
            logits = m(batch[0].to(target))  # (B, T, 2)
            return nn.functional.cross_entropy(logits.flatten(0, 1), batch[1].to(target).flatten())

        def score() -> float:
            return float((tag_characters(model, vocab, test_x, width) == test_y).float().mean())

        return _fit_scored(model, batches, loss_fn, optimizer, schedule, f.spacing_epochs, target,
                           show_progress, score)  # fmt: skip

    saved, cached = runs.cached(
        "bert-spacing", finetuning_key(config, pretrained, validation), train
    )
    model = BertForTokenClassification(bert_config)
    model.load_state_dict(saved["state"])
    return FinetuneResult("spacing", pretrained, list(saved["curve"]),
                          1 - float(test_y.float().mean()), len(test_y), list(saved["losses"]),
                          float(saved["seconds"]), cached, model.eval())  # fmt: skip


def finetune_lines(
    config: KoreanBertConfig | None = None,
    pretrained: bool = True,
    validation: bool = False,
    show_progress: bool = True,
) -> FinetuneResult:
    """6장's line classification (constitution or bills) from the pooled ``[CLS]`` (cached).

    Each line is cut to its first ``max_chars`` characters as 6장 cuts it
    (then its spaces are dropped: the tiny BERT has no space token), read as
    ``[CLS] characters [SEP]``; the classifier reads BERT's pooler output.
    The pooler is not pretrained (there is no NSP), so it starts from BERT's
    random initialisation in both models, like the classifier.
    """
    from course_utils.device import get_device, seed_everything

    config = check_config(config)
    f = config.finetuning
    splits, vocab, mlm = _finetune_setup(config, pretrained, validation)

    def encode(lines: Sequence[str]) -> list[torch.Tensor]:
        return [char_ids(list(line[: f.max_chars]), vocab) for line in lines]

    train_x, train_y = encode(splits.train_lines), torch.tensor(splits.train_labels)
    test_x, test_y = encode(splits.test_lines), torch.tensor(splits.test_labels)
    bert_config = config.bert_config(len(vocab), f.dropout)

    def train() -> dict[str, Any]:
        seed_everything(f.seed)
        model = BertForSequenceClassification(bert_config)
        _encoder_init(model, mlm)
        target = get_device()
        order = torch.Generator().manual_seed(f.seed)
        total = f.lines_epochs * math.ceil(len(train_x) / f.batch_size)
        optimizer, schedule = adamw_with_warmup(
            model, f.learning_rate, f.weight_decay, total, round(f.warmup_share * total)
        )

        def batches() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
            rows = torch.randperm(len(train_x), generator=order).split(f.batch_size)
            return [(*_with_cls_sep_padded([train_x[i] for i in r.tolist()], vocab), train_y[r])
                    for r in rows]  # fmt: skip

        def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
            ids, mask, labels = (t.to(target) for t in batch)
            return nn.functional.cross_entropy(m(ids, mask), labels)

        @torch.no_grad()
        def score() -> float:
            model.eval()
            predicted = []
            for first in range(0, len(test_x), 128):
                ids, mask = _with_cls_sep_padded(test_x[first : first + 128], vocab)
                predicted.append(model(ids.to(target), mask.to(target)).argmax(-1).cpu())
            return float((torch.cat(predicted) == test_y).float().mean())

        return _fit_scored(model, batches, loss_fn, optimizer, schedule, f.lines_epochs, target,
                           show_progress, score)  # fmt: skip

    saved, cached = runs.cached("bert-lines", finetuning_key(config, pretrained, validation), train)
    model = BertForSequenceClassification(bert_config)
    model.load_state_dict(saved["state"])
    share = float(test_y.float().mean())
    return FinetuneResult("lines", pretrained, list(saved["curve"]), max(share, 1 - share),
                          len(test_y), list(saved["losses"]), float(saved["seconds"]), cached,
                          model.eval())  # fmt: skip


# ---------------------------------------------------------------------------
# The comparison: pretrained vs random start vs 6장's RNN, trained one process per core
# ---------------------------------------------------------------------------


@dataclass
class FinetuneComparison:
    """6장's two tasks: the tiny BERT pretrained or not, and 6장's RNN, on 6장's test splits."""

    results: dict[tuple[str, bool], FinetuneResult]  # (task, pretrained) → result
    rnn: dict[str, float]  # task → 6장's RNN accuracy (its own function, its own settings)
    baseline: dict[str, float]  # task → never a space / always the larger class
    pretrained: PretrainedKoreanBert = field(repr=False)
    seconds: float  # wall time of the whole comparison here

    def accuracy(self, task: str, model: str) -> float:
        """``model``: ``"pretrained"``, ``"random"``, ``"rnn"`` or ``"baseline"``."""
        if task not in self.rnn:
            raise ValueError(f"task must be one of {sorted(self.rnn)}, got {task!r}")
        if model == "rnn":
            return self.rnn[task]
        if model == "baseline":
            return self.baseline[task]
        if model not in ("pretrained", "random"):
            raise ValueError(
                f"model must be 'pretrained', 'random', 'rnn' or 'baseline', got {model!r}"
            )
        return self.results[task, model == "pretrained"].accuracy

    def table(self) -> list[dict[str, object]]:
        """One row per task: the four accuracies and the test size."""
        return [
            {"task": task, "test_size": self.results[task, True].test_size,
             **{m: self.accuracy(task, m) for m in ("baseline", "rnn", "random", "pretrained")}}
            for task in ("spacing", "lines")
        ]  # fmt: skip


def _pretrain_job(config: KoreanBertConfig, threads: int) -> None:
    torch.set_num_threads(threads)  # the parent's count: it is part of the cache key
    pretrain_korean_bert(config, show_progress=False)


#: The niceness of a worker that runs a job nothing waits for while pretraining runs: when the
#: chapter, pretraining and that job share two cores, pretraining (which every pretrained
#: fine-tuning waits for) and the chapter's own cells go first.
BEHIND_NICENESS = 5


def _behind(behind: bool) -> None:
    """Lower this worker's priority to :data:`BEHIND_NICENESS` if ``behind`` (it stays lowered)."""
    if behind:
        runs.lower_priority(BEHIND_NICENESS)


def _finetune_job(
    task: str, config: KoreanBertConfig, pretrained: bool, threads: int, behind: bool = False
) -> None:
    torch.set_num_threads(threads)
    _behind(behind)
    (finetune_spacing if task == "spacing" else finetune_lines)(
        config, pretrained, show_progress=False
    )


def _extra_job(
    function: Callable[..., Any], args: tuple[Any, ...], threads: int, behind: bool = False
) -> None:
    torch.set_num_threads(threads)
    _behind(behind)
    function(*args)


def finetuning_key(
    config: KoreanBertConfig, pretrained: bool, validation: bool = False
) -> tuple[object, ...]:
    """The recipe under which a fine-tuning of ``config`` is kept (with the text's digest)."""
    return (config, pretrained, validation, korean_text_digest(config.with_gettext, validation))


def _missing(kind: str, recipe: object) -> bool:
    path = runs.cache_path(f"bert-{kind}", recipe)
    return path is not None and not path.is_file()


class _BackgroundTraining:
    """The trainings :func:`run_korean_finetuning` needs, in two worker processes.

    Pretraining and the two random-start fine-tunings start at once; the two
    pretrained fine-tunings are submitted as soon as pretraining is done, so
    both cores stay busy. Extra jobs (:func:`start_korean_training`'s
    ``extra``) queue behind them: those that need the pretrained weights after
    the pretrained fine-tunings. A job that does not need pretraining and
    starts while it runs lowers its worker's priority (:data:`BEHIND_NICENESS`):
    on two cores, pretraining and the chapter's cells then go first, and the
    pretrained fine-tunings can start sooner. Everything lands in the training
    cache.
    """

    def __init__(self, config: KoreanBertConfig, workers: int) -> None:
        from concurrent.futures import Future

        self.threads = torch.get_num_threads()
        self.pool = runs.worker_pool(workers)
        self.finetunes: list[Future[None]] = []
        self.submitted = threading.Event()  # the pretrained fine-tunings are in the queue
        self.lock = threading.Lock()
        self.pretraining: Future[None] | None = None
        self.seen: set[str] = set()  # repr of every job submitted or waiting for pretraining
        self.after: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
            (_finetune_job, (task, config, True, self.threads))
            for task in ("spacing", "lines")
            if _missing(task, finetuning_key(config, True))
        ]
        if _missing("pretrain", pretraining_key(config)):
            self.pretraining = self.pool.submit(_pretrain_job, config, self.threads)
            runs.will_produce(("bert-pretrain", config.pretraining_recipe()), self.wait_pretraining)
        behind = self._pretraining_running()
        self.finetunes += [
            self.pool.submit(_finetune_job, task, config, False, self.threads, behind)
            for task in ("spacing", "lines")
            if _missing(task, finetuning_key(config, False))
        ]
        if self.pretraining is None:
            self._submit_after()
        else:  # from a thread of ours, not the executor's own callback thread
            self.pretraining.add_done_callback(
                lambda _: threading.Thread(target=self._submit_after, daemon=True).start()
            )

    def _submit_after(self) -> None:
        with self.lock:
            try:
                if self.pretraining is None or self.pretraining.exception() is None:
                    self.finetunes += [self.pool.submit(f, *args) for f, args in self.after]
                self.after = []
            finally:
                self.submitted.set()

    def add(self, jobs: Sequence[tuple[bool, Callable[..., Any], tuple[Any, ...]]]) -> None:
        """Queue ``(needs pretraining, function, args)`` jobs not queued before."""
        with self.lock:
            for needs_pretraining, function, args in jobs:
                key = f"{function.__module__}.{function.__qualname__}{args!r}"
                if key in self.seen:
                    continue
                self.seen.add(key)
                if needs_pretraining and not self.submitted.is_set():
                    self.after.append((_extra_job, (function, args, self.threads)))
                else:
                    behind = not needs_pretraining and self._pretraining_running()
                    self.finetunes.append(
                        self.pool.submit(_extra_job, function, args, self.threads, behind)
                    )

    def _pretraining_running(self) -> bool:
        """Whether pretraining is running or queued here (what a job submitted now runs beside)."""
        return self.pretraining is not None and not self.pretraining.done()

    def wait_pretraining(self) -> None:
        if self.pretraining is not None:
            runs.wait_all([self.pretraining], "사전 학습 (백그라운드)")
            self.pretraining.result()

    def wait(self) -> None:
        try:
            self.wait_pretraining()
            self.submitted.wait()
            with self.lock:
                futures = list(self.finetunes)
            runs.wait_all(futures, "미세 조정 (백그라운드)")
            for future in futures:
                future.result()
        finally:
            self.pool.shutdown()


#: Background trainings started by :func:`start_korean_training`, by configuration.
_BACKGROUND: dict[KoreanBertConfig, _BackgroundTraining] = {}


def start_korean_training(
    config: KoreanBertConfig | None = None,
    extra: Sequence[tuple[bool, Callable[..., Any], tuple[Any, ...]]] = (),
) -> bool:
    """Start training, in the background, what :func:`run_korean_finetuning` will need.

    On a CPU with two cores or more and the training cache on, two worker
    processes (each single-threaded, as the chapter) pretrain and fine-tune
    whatever the cache lacks while this process goes on with other work;
    :func:`pretrain_korean_bert`, :func:`finetune_spacing`,
    :func:`finetune_lines` and :func:`run_korean_finetuning` wait for them
    instead of training again. ``extra`` jobs ``(needs pretraining, function,
    args)`` (the downstream runs of
    :mod:`course_utils.experiments.ch12_downstream`) queue behind them.
    Returns whether anything runs in the background (nothing does on a GPU, on
    one core, with ``COURSE_CACHE=off``, or when everything is cached).
    9장's :func:`~course_utils.experiments.ch09_seq2seq.train_in_parallel`
    pattern, without blocking.
    """
    config = check_config(config)
    if config not in _BACKGROUND:
        cores = runs.background_workers()
        if cores < 2:
            return False
        needed = _missing("pretrain", pretraining_key(config)) or any(
            _missing(task, finetuning_key(config, pretrained))
            for task in ("spacing", "lines")
            for pretrained in (True, False)
        )
        if not needed and not extra:
            return False
        _BACKGROUND[config] = _BackgroundTraining(config, min(2, cores))
    _BACKGROUND[config].add(extra)
    return True


def wait_for_training(config: KoreanBertConfig | None = None) -> None:
    """Wait until :func:`start_korean_training`'s workers are done (at once if none run)."""
    _wait_for_background(check_config(config))


def _wait_for_background(config: KoreanBertConfig) -> None:
    """Wait for :func:`start_korean_training`'s workers."""
    background = _BACKGROUND.get(config) or next(
        (
            b
            for c, b in _BACKGROUND.items()
            if c.pretraining_recipe() == config.pretraining_recipe()
        ),
        None,
    )
    if background is None:
        return
    for key, value in list(_BACKGROUND.items()):
        if value is background:
            del _BACKGROUND[key]
    background.wait()


def run_korean_finetuning(
    config: KoreanBertConfig | None = None, show_progress: bool = True
) -> FinetuneComparison:
    """Pretrain, fine-tune both ways on both tasks, and score 6장's RNNs; all on 6장's test splits.

    The trainings run in two worker processes (:func:`start_korean_training`;
    already started, or started here) while this process reads 6장's RNN scores
    (:func:`~course_utils.experiments.ch06_rnn.line_classifier_score` and
    :func:`~course_utils.experiments.ch06_rnn.spacing_tagger_score`: what 6장 recorded,
    else trained here with 6장's settings); then every result is read back from the cache.
    Without workers (a GPU, one core, ``COURSE_CACHE=off``) everything trains here, in turn.
    """
    from course_utils.datasets import korean_char_split
    from course_utils.experiments.ch06_rnn import line_classifier_score, spacing_tagger_score

    config = check_config(config)
    start = time.perf_counter()
    start_korean_training(config)
    rnn_lines = line_classifier_score(show_progress)  # (accuracy, majority)
    rnn_spacing = spacing_tagger_score(*korean_char_split(), show_progress)  # (…, all joined)
    _wait_for_background(config)
    results = {}
    for pretrained in (True, False):
        results["spacing", pretrained] = finetune_spacing(config, pretrained,
                                                          show_progress=show_progress)  # fmt: skip
        results["lines", pretrained] = finetune_lines(config, pretrained,
                                                      show_progress=show_progress)  # fmt: skip
    return FinetuneComparison(
        results,
        {"spacing": rnn_spacing[0], "lines": rnn_lines[0]},
        {"spacing": rnn_spacing[1], "lines": rnn_lines[1]},
        pretrain_korean_bert(config, show_progress=False),
        time.perf_counter() - start,
    )
