"""10장's experiments: Bahdanau and Luong against 9장's seq2seq, and the self-attentive classifier.

- :func:`new_bahdanau`, :func:`new_luong`, :func:`score_model_run`,
  :func:`run_attention_comparison`: the attention models trained beside 9장's
  seq2seq on the generated corpus, scored by BLEU, by length and by alignment.
- :func:`start_chapter_runs`: every training of the chapter started at its
  first cell, in worker processes.
- :func:`constitution_chapter_lines`, :func:`run_penalty_experiment`: which
  chapter of the constitution (국민의 권리와 의무, 국회, 정부, 법원) a clause
  comes from, read syllable by syllable by
  :class:`~course_utils.self_attentive.SelfAttentiveClassifier`, trained with
  and without the penalty (same seed, same data, same budget); the chapter and
  ``tests/test_claims_ch10_self_attentive.py`` both call it.
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from course_utils import runs
from course_utils.attention import (
    BahdanauSeq2Seq,
    LuongSeq2Seq,
    alignment_accuracy,
    forced_attention,
)
from course_utils.checks import check_int
from course_utils.datasets import (
    load_kolaw,
    split_lines,
)
from course_utils.device import (
    get_device,
    run_size,
    seed_everything,
)
from course_utils.experiments.ch09_seq2seq import (
    LengthRow,
    ModelMaker,
    ParallelData,
    TranslationConfig,
    new_seq2seq,
    scores_by_length,
    train_in_background,
    train_in_parallel,
    train_model,
    trained_recipe,
)
from course_utils.progress import (
    progress,
)
from course_utils.self_attentive import (
    SelfAttentiveClassifier,
    attention_penalty,
    hop_distinctness,
)
from course_utils.seq2seq import (
    EOS,
    EncoderDecoder,
    TrainConfig,
    TranslationScores,
    score_translations,
    translate,
)
from course_utils.train import (
    History,
)
from course_utils.translation_data import Splits
from course_utils.vocab import (
    Vocab,
)

__all__ = [
    "COMPARED_MODELS",
    "CONSTITUTION_MIN_LINES",
    "ModelRun",
    "PenaltyExperiment",
    "PenaltyRun",
    "SelfAttentiveConfig",
    "bag_of_ngrams_accuracy",
    "constitution_chapter_lines",
    "encode_lines",
    "new_bahdanau",
    "new_luong",
    "plot_hops",
    "run_attention_comparison",
    "run_penalty_experiment",
    "score_after_training",
    "score_model_run",
    "self_attentive_config",
    "start_attention_comparison",
    "start_chapter_runs",
    "train_run",
]


def new_bahdanau(data: ParallelData, config: TranslationConfig) -> BahdanauSeq2Seq:
    """Bahdanau's model at 9장's sizes (encoder H/2 per direction), seeded by the config."""
    seed_everything(config.training.seed)
    return BahdanauSeq2Seq(
        len(data.source_vocab),
        len(data.target_vocab),
        config.embedding_size,
        config.hidden_size,
        attention_size=config.hidden_size // 2,
    )


def new_luong(
    data: ParallelData, config: TranslationConfig, score: str = "dot", input_feeding: bool = False
) -> LuongSeq2Seq:
    """Luong's model at 9장's sizes, seeded by the config."""
    seed_everything(config.training.seed)
    return LuongSeq2Seq(
        len(data.source_vocab),
        len(data.target_vocab),
        config.embedding_size,
        config.hidden_size,
        score=score,
        input_feeding=input_feeding,
    )


@dataclass
class ModelRun:
    """One model of the comparison: trained on the generated corpus and scored on its test set."""

    name: str
    model: EncoderDecoder
    parameters: int
    seconds: float  # training time
    train_loss: list[float]  # per epoch
    in_range: TranslationScores  # test sentences with no more clauses than in training
    beyond: TranslationScores | None  # sentences with more clauses than in training (None: none)
    by_length: list[LengthRow]
    alignment: float | None  # alignment_accuracy on the in-range test sentences


COMPARED_MODELS = ("seq2seq", "bahdanau", "luong")


def score_model_run(
    name: str,
    model: EncoderDecoder,
    history: History,
    data: ParallelData,
    splits: Splits,
    with_alignment: bool,
    training: TrainConfig | None = None,
) -> ModelRun:
    """Score a trained model on the stratified test set (greedy decoding), as 10장 and 11장 do.

    With ``training`` (the budget the model was trained with) the scores are
    kept in the cache beside the trained weights' key: 11장 reads 10장's
    scores of the Bahdanau model, and its own models' scores from the workers
    that trained them (:func:`score_after_training`), instead of decoding again.
    """
    if training is None:
        scores = _model_scores(model, data, splits, with_alignment)
    else:
        recipe = (trained_recipe(model, data, training), with_alignment, _splits_digest(splits))
        scores, _ = runs.cached(
            "seq2seq-scores", recipe, lambda: _model_scores(model, data, splits, with_alignment)
        )
    return ModelRun(
        name,
        model,
        sum(p.numel() for p in model.parameters()),
        sum(history.seconds),
        history.train_loss,
        TranslationScores(**scores["in_range"]),
        None if scores["beyond"] is None else TranslationScores(**scores["beyond"]),
        [LengthRow(**row) for row in scores["by_length"]],
        scores["alignment"],
    )


def score_after_training(
    model: EncoderDecoder,
    history: History,
    data: ParallelData,
    config: TranslationConfig,
    *,
    splits: Splits,
    with_alignment: bool = True,
) -> None:
    """:func:`score_model_run` into the cache, in the worker that has just trained ``model``
    (``then`` of :func:`~course_utils.experiments.ch09_seq2seq.train_in_background`)."""
    score_model_run("", model, history, data, splits, with_alignment, config.training)


def _splits_digest(splits: Splits) -> str:
    """What decides the scores besides the trained model: the test pairs and the training range."""
    text = repr((splits.test, splits.max_train_clauses))
    return hashlib.sha256(text.encode()).hexdigest()


def _model_scores(
    model: EncoderDecoder, data: ParallelData, splits: Splits, with_alignment: bool
) -> dict[str, Any]:
    """The scores of :class:`ModelRun` as plain values (what the cache keeps)."""
    test = list(splits.test)
    inside = [i for i, p in enumerate(test) if splits.in_training_range(p)]
    outside = [i for i, p in enumerate(test) if not splits.in_training_range(p)]
    hypotheses = translate(
        model, [list(p.source) for p in test], data.source_vocab, data.target_vocab
    )

    def scores(rows: list[int]) -> TranslationScores:
        return score_translations(
            [hypotheses[i] for i in rows], [list(test[i].target) for i in rows]
        )

    alignment = None
    if with_alignment:
        chosen = [test[i] for i in inside]
        weights = forced_attention(
            model,
            [data.source_vocab.encode(list(p.source)) for p in chosen],
            [[*data.target_vocab.encode(list(p.target)), EOS] for p in chosen],
        )
        alignment = alignment_accuracy(weights, [p.alignment for p in chosen])
    return {
        "in_range": asdict(scores(inside)),
        "beyond": asdict(scores(outside)) if outside else None,
        "by_length": [
            asdict(row) for row in scores_by_length(hypotheses, test, splits.max_train_clauses)
        ],
        "alignment": alignment,
    }


def _makers(names: Sequence[str]) -> dict[str, ModelMaker]:
    makers: dict[str, ModelMaker] = {
        "seq2seq": new_seq2seq,
        "bahdanau": new_bahdanau,
        "luong": new_luong,
    }
    if isinstance(names, str):
        raise TypeError(f"names must be a list of model names, not the str {names!r}")
    unknown = [n for n in names if n not in makers]
    if unknown:
        raise ValueError(f"unknown model {unknown[0]!r}: expected some of {', '.join(makers)}")
    return makers


def start_attention_comparison(
    data: ParallelData,
    config: TranslationConfig,
    names: Sequence[str] = COMPARED_MODELS,
    gettext: ParallelData | None = None,
) -> bool:
    """Start training :func:`run_attention_comparison`'s models in the background.

    One worker process per core trains the models the cache lacks, and
    Bahdanau's model on ``gettext`` (the catalogues' data) when given, while
    the chapter goes on; :func:`~course_utils.experiments.ch09_seq2seq.train_model`
    waits for them and loads them. Nothing starts on a GPU, on one core or
    with the cache off. Returns whether anything was started.
    """
    makers = _makers(names)
    jobs = [(makers[n], data, config) for n in names]
    if gettext is not None:
        jobs.append((new_bahdanau, gettext, config))
    return train_in_background(jobs)


def run_attention_comparison(
    data: ParallelData,
    splits: Splits,
    config: TranslationConfig,
    names: Sequence[str] = COMPARED_MODELS,
    show_progress: bool = True,
) -> dict[str, ModelRun]:
    """Train 9장's seq2seq, Bahdanau's and Luong's (dot score) models on the same data and budget.

    Each is scored on the whole stratified test set by length (greedy decoding),
    and the attention models' alignments on the in-range test sentences.
    """
    makers = _makers(names)
    train_in_parallel([(makers[n], data, config) for n in names])  # a no-op on one core or a GPU
    runs = {}
    for name in names:
        model = makers[name](data, config)
        history = train_model(model, data, config.training, show_progress)
        runs[name] = score_model_run(
            name, model, history, data, splits, name != "seq2seq", config.training
        )
    return runs


# ---------------------------------------------------------------------------
# The structured self-attentive classifier on the constitution
# ---------------------------------------------------------------------------

#: A chapter of the constitution becomes a class when it has at least this many
#: clause lines, so that every class keeps at least five of them for evaluation.
CONSTITUTION_MIN_LINES = 25


def constitution_chapter_lines(min_lines: int = CONSTITUTION_MIN_LINES) -> list[tuple[str, str]]:
    """``(clause, chapter title)`` for every clause of the constitution's larger chapters.

    One line of the text is one clause (①, ②, …) or one numbered item of an
    article. The article and clause numbers are removed: they would give the
    chapter away (제40조 to 제65조 are all 국회). The preamble, the section
    headings and the addenda (부칙) are left out, and so are chapters with fewer
    than ``min_lines`` clauses. Lines stay in the order of the text.
    """
    check_int(min_lines, "min_lines")
    rows: list[tuple[str, str]] = []
    chapter = None
    for raw in load_kolaw().splitlines():
        line = " ".join(raw.split())
        if "부칙" in line:
            break  # the addenda follow the last chapter
        heading = re.fullmatch(r"제\d+장 (.+)", line)
        if heading:
            chapter = heading.group(1)
            continue
        if chapter is None or not line or re.fullmatch(r"제\d+[절관] .+", line):
            continue
        line = re.sub(r"^제\d+조(의\d+)?\s*", "", line)  # article number
        line = re.sub(r"^[①-⑳]\s*", "", line)  # clause number
        line = re.sub(r"^\d+\.\s*", "", line)  # item number
        rows.append((line, chapter))
    counts = Counter(label for _, label in rows)
    return [(line, label) for line, label in rows if counts[label] >= min_lines]


def encode_lines(lines: Sequence[Sequence[str]], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor]:
    """Token lists → ``tokens`` (B, T) padded with ``<pad>`` and ``key_padding_mask`` (B, T)."""
    if isinstance(lines, str) or not lines:
        raise ValueError("lines must be a non-empty list of token lists")
    if any(len(line) == 0 for line in lines):
        raise ValueError("every line needs at least one token")
    longest = max(len(line) for line in lines)
    tokens = torch.full((len(lines), longest), vocab.pad_id, dtype=torch.long)  # (B, T)
    for row, line in enumerate(lines):
        tokens[row, : len(line)] = torch.tensor(vocab.encode(list(line)))
    return tokens, tokens == vocab.pad_id


@dataclass(frozen=True)
class SelfAttentiveConfig:
    """The chapter's classifier and its training budget."""

    embedding_size: int = 32  # syllable embedding
    hidden_size: int = 32  # u: each LSTM direction; H has 2u columns
    attention_size: int = 32  # d_a: rows of W_s1
    hops: int = 4  # r: rows of A and of M
    mlp_size: int = 64  # hidden layer of the classifier
    penalty_coefficient: float = 1.0  # the run with the penalty; the other run uses 0
    epochs: int = 12
    batch_size: int = 32
    lr: float = 5e-3  # Adam
    held_out_fraction: float = 0.2  # every 5th clause is held out
    seed: int = 0


def self_attentive_config(size: str | None = None) -> SelfAttentiveConfig:
    """The CPU run (``"small"``, the book's) or the ``"large"`` one (``COURSE_RUN``)."""
    size = run_size() if size is None else size
    if size == "small":
        return SelfAttentiveConfig()
    if size == "large":
        return SelfAttentiveConfig(hidden_size=64, attention_size=64, hops=8, epochs=40)
    raise ValueError(f"size must be 'small' or 'large', got {size!r}")


@dataclass
class PenaltyRun:
    """One training run: its penalty coefficient, held-out scores and trained model (on the CPU)."""

    coefficient: float
    test_accuracy: float
    train_accuracy: float
    test_penalty: float  # mean ||AA^T − I||_F^2 over the held-out clauses
    test_distinctness: float  # mean pairwise Jensen–Shannon divergence of the hops (bits)
    test_peak: float  # a hop's largest weight, averaged over hops and held-out clauses
    model: SelfAttentiveClassifier
    seconds: float
    loss_curve: list[float] = field(default_factory=list)  # mean training loss per epoch


@dataclass
class PenaltyExperiment:
    """The same classifier trained with and without the penalty, and two baselines."""

    config: SelfAttentiveConfig
    classes: list[str]
    vocab: Vocab
    train: list[tuple[str, str]]
    test: list[tuple[str, str]]
    without_penalty: PenaltyRun
    with_penalty: PenaltyRun
    majority_accuracy: float  # always answer the most frequent training class
    bag_of_ngrams_accuracy: float  # logistic regression on syllable 1-, 2-grams

    def attention_of(self, run: PenaltyRun, line: str) -> tuple[list[str], torch.Tensor]:
        """``(tokens, A)`` of one clause under ``run``'s model: A is (r, T)."""
        tokens, mask = encode_lines([list(line)], self.vocab)  # (1, T), (1, T)
        run.model.eval()
        with torch.no_grad():
            _, attention = run.model(tokens, mask)  # (1, r, T)
        return list(line), attention[0]

    def predict(self, run: PenaltyRun, line: str) -> str:
        """The chapter that ``run``'s model assigns to one clause."""
        tokens, mask = encode_lines([list(line)], self.vocab)  # (1, T), (1, T)
        run.model.eval()
        with torch.no_grad():
            logits, _ = run.model(tokens, mask)  # (1, C)
        return self.classes[int(logits.argmax())]

    def peak_tokens(self, run: PenaltyRun) -> list[Counter[str]]:
        """Per hop, how often each syllable carries its largest weight in the held-out clauses."""
        counts: list[Counter[str]] = [Counter() for _ in range(self.config.hops)]
        for line, _ in self.test:
            tokens, attention = self.attention_of(run, line)  # attention: (r, T)
            for hop, position in enumerate(attention.argmax(dim=1).tolist()):
                counts[hop][tokens[position]] += 1
        return counts

    def same_peak_share(self, run: PenaltyRun) -> float:
        """The share of held-out clauses in which every hop's largest weight is on one position."""
        same = 0
        for line, _ in self.test:
            _, attention = self.attention_of(run, line)  # (r, T)
            same += len(set(attention.argmax(dim=1).tolist())) == 1
        return same / len(self.test)


def train_run(
    config: SelfAttentiveConfig,
    coefficient: float,
    data: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    vocab_size: int,
    num_classes: int,
    device: torch.device,
) -> PenaltyRun:
    seed_everything(config.seed)
    model = SelfAttentiveClassifier(
        vocab_size,
        num_classes,
        config.embedding_size,
        config.hidden_size,
        config.attention_size,
        config.hops,
        config.mlp_size,
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, foreach=True)
    tokens, mask, labels = (t.to(device) for t in data["train"])
    order = torch.Generator().manual_seed(config.seed)  # the same batches for every coefficient
    curve = []
    start = time.perf_counter()
    for _ in progress(range(config.epochs), f"벌점 계수 {coefficient:g}"):
        model.train()
        losses = []
        for batch in torch.randperm(len(labels), generator=order).split(config.batch_size):
            batch = batch.to(device)
            width = int((~mask[batch]).sum(dim=1).max())  # trim the batch's all-pad columns
            logits, attention = model(tokens[batch, :width], mask[batch, :width])
            loss = nn.functional.cross_entropy(logits, labels[batch])
            loss = loss + coefficient * attention_penalty(attention)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        curve.append(sum(losses) / len(losses))
    seconds = time.perf_counter() - start
    model.eval()
    scores = {}
    with torch.no_grad():
        for part in ("train", "test"):
            part_tokens, part_mask, part_labels = (t.to(device) for t in data[part])
            logits, attention = model(part_tokens, part_mask)
            accuracy = float((logits.argmax(dim=1) == part_labels).float().mean())
            scores[part] = accuracy, attention
    test_attention = scores["test"][1]
    return PenaltyRun(
        coefficient=coefficient,
        test_accuracy=scores["test"][0],
        train_accuracy=scores["train"][0],
        test_penalty=float(attention_penalty(test_attention)),
        test_distinctness=float(hop_distinctness(test_attention)),
        test_peak=float(test_attention.amax(dim=-1).mean()),
        model=model.cpu(),
        seconds=seconds,
        loss_curve=curve,
    )


def bag_of_ngrams_accuracy(
    train: list[tuple[str, str]], test: list[tuple[str, str]], seed: int
) -> float:
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = CountVectorizer(analyzer="char", ngram_range=(1, 2))
    features = vectorizer.fit_transform([line for line, _ in train])
    model = LogisticRegression(max_iter=2000, random_state=seed)
    model.fit(features, [label for _, label in train])
    predicted = model.predict(vectorizer.transform([line for line, _ in test]))
    correct = sum(p == label for p, (_, label) in zip(predicted, test, strict=True))
    return float(correct / len(test))


PenaltyData = dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def _penalty_data(
    config: SelfAttentiveConfig,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str], Vocab, PenaltyData]:
    """``(train, test, classes, vocab, data)``: the clauses split and encoded for train_run."""
    rows = constitution_chapter_lines()
    train, test = split_lines(rows, config.held_out_fraction)
    classes = list(dict.fromkeys(label for _, label in rows))  # in the order of the text
    vocab = Vocab.build([list(line) for line, _ in train])
    data = {}
    for part, pairs in (("train", train), ("test", test)):
        tokens, mask = encode_lines([list(line) for line, _ in pairs], vocab)
        labels = torch.tensor([classes.index(label) for _, label in pairs])  # (B,)
        data[part] = tokens, mask, labels
    return train, test, classes, vocab, data


def _penalty_key(config: SelfAttentiveConfig, part: float | str, device: str) -> Hashable:
    """What :func:`start_chapter_runs` announces (:func:`runs.will_produce`) for one part of
    :func:`run_penalty_experiment`: a run's coefficient, or ``"bag-of-ngrams"``."""
    return ("self-attentive", config, part, device)


def run_penalty_experiment(
    config: SelfAttentiveConfig | None = None, device: str | torch.device | None = None
) -> PenaltyExperiment:
    """Train the classifier with penalty coefficient 0 and ``config.penalty_coefficient``.

    Both runs start from the same weights and see the same batches in the same
    order for the same number of epochs; only the penalty term of the loss
    differs. Clauses are read syllable by syllable (spaces included), the
    vocabulary comes from the training clauses, and every
    ``1/held_out_fraction``-th clause is held out (:func:`split_lines`). A run
    that :func:`start_chapter_runs` started in a worker process is waited for
    and taken from there: single-threaded like the chapter, it is the same run.
    """
    config = self_attentive_config() if config is None else config
    if not isinstance(config, SelfAttentiveConfig):
        raise TypeError(f"config must be a SelfAttentiveConfig, got {type(config).__name__}")
    if not config.penalty_coefficient > 0:
        raise ValueError(
            f"penalty_coefficient must be > 0 (the other run is the one without), "
            f"got {config.penalty_coefficient}"
        )
    target = get_device() if device is None else torch.device(device)
    train, test, classes, vocab, data = _penalty_data(config)
    majority = Counter(label for _, label in train).most_common(1)[0][0]
    bag_key = _penalty_key(config, "bag-of-ngrams", target.type)
    if runs.pending(bag_key):  # start_chapter_runs computes it in a worker process
        bag_of_ngrams = runs.wait_for(bag_key)
    else:
        bag_of_ngrams = bag_of_ngrams_accuracy(train, test, config.seed)
    trained = []
    for coefficient in (0.0, config.penalty_coefficient):
        key = _penalty_key(config, coefficient, target.type)
        if runs.pending(key):
            trained.append(runs.wait_for(key))
        else:
            trained.append(train_run(config, coefficient, data, len(vocab), len(classes), target))
    return PenaltyExperiment(
        config=config,
        classes=classes,
        vocab=vocab,
        train=train,
        test=test,
        without_penalty=trained[0],
        with_penalty=trained[1],
        majority_accuracy=sum(label == majority for _, label in test) / len(test),
        bag_of_ngrams_accuracy=bag_of_ngrams,
    )


# ---------------------------------------------------------------------------
# Every training of the chapter at once
# ---------------------------------------------------------------------------


def _penalty_part(config: SelfAttentiveConfig, part: float | str) -> Any:
    """One part of :func:`run_penalty_experiment` (a run, or the n-gram baseline), as a job."""
    train, test, classes, vocab, data = _penalty_data(config)
    if part == "bag-of-ngrams":
        return bag_of_ngrams_accuracy(train, test, config.seed)
    return train_run(config, float(part), data, len(vocab), len(classes), get_device())


def _penalty_result(jobs: runs.Jobs, index: int) -> Any:
    return jobs.results([index], "학습 중인 분류기")[0]


def start_chapter_runs(
    data: ParallelData,
    config: TranslationConfig,
    gettext: ParallelData | None = None,
    penalty: SelfAttentiveConfig | None = None,
) -> bool:
    """Start every training of 10장 at its first cell, in worker processes.

    The translation models that the cache lacks (Bahdanau's, 9장's seq2seq
    and Luong's on ``data``, then Bahdanau's and 9장's seq2seq on ``gettext``
    when given) train one per core
    (:func:`~course_utils.experiments.ch09_seq2seq.train_in_background`), the
    longest first and then in the order the chapter needs them;
    :func:`~course_utils.experiments.ch09_seq2seq.train_model` waits only for
    its own model and the ones started before it. The two runs of
    :func:`run_penalty_experiment` (``penalty``, default
    :func:`self_attentive_config`) and its n-gram baseline run in two more
    workers at the lowest priority, so they take a core only when the chapter
    and the translation models leave one idle, and both cores once those are
    done;
    :func:`run_penalty_experiment` waits for them. Every worker runs on the
    chapter's thread count, so the results are the ones computed here. Nothing
    starts on a GPU, on one core or with the cache off (``COURSE_CACHE=off``):
    everything then trains where it is needed. Returns whether anything was
    started.
    """
    if runs.background_workers() < 2:
        return False
    penalty = self_attentive_config() if penalty is None else penalty
    # single-core seconds on the CPU run: 28, 18, 17, 22, 12 (9장 has usually left both seq2seq)
    jobs = [(new_bahdanau, data, config), (new_seq2seq, data, config), (new_luong, data, config)]
    if gettext is not None:
        jobs += [(new_bahdanau, gettext, config), (new_seq2seq, gettext, config)]
    started = train_in_background(jobs, wait_for_all=False)
    device = get_device().type
    parts: list[float | str] = [0.0, penalty.penalty_coefficient, "bag-of-ngrams"]
    todo = [part for part in parts if not runs.pending(_penalty_key(penalty, part, device))]
    if not todo:
        return started
    # two workers at the lowest priority (POSIX), on the chapter's thread count: the cores go
    # to the chapter and the translation models first, then both to the two training runs
    penalty_jobs = runs.Jobs(
        [(_penalty_part, (penalty, part)) for part in todo],
        workers=2, threads=torch.get_num_threads(), nice=19, least=1,
    )  # fmt: skip
    for index, part in enumerate(todo):
        wait = functools.partial(_penalty_result, penalty_jobs, index)
        runs.will_produce(_penalty_key(penalty, part, device), wait)
    return True


def plot_hops(
    ax: Any,
    tokens: Sequence[str],
    attention: torch.Tensor,
    title: str | None = None,
    vmax: float | None = None,
    cmap: str = "Reds",
) -> Any:
    """Draw ``tokens`` once per hop, each cell shaded by that hop's weight; ``attention`` is (r, T).

    One row per hop, read left to right. The shade runs from white (0) to
    ``vmax`` (default: the largest weight in ``attention``), the same scale for
    every row so that the hops can be compared. Returns the colour mapping for
    ``fig.colorbar``.
    """
    import matplotlib as mpl
    from matplotlib.patches import Rectangle

    from course_utils.viz import use_korean_font

    use_korean_font(strict=False)
    if isinstance(tokens, str):
        tokens = list(tokens)
    weights = torch.as_tensor(attention).detach().cpu().double()
    if weights.dim() != 2 or weights.shape[1] != len(tokens):
        raise ValueError(
            f"attention must be (hops, len(tokens)) = (r, {len(tokens)}), "
            f"got {tuple(weights.shape)}"
        )
    top = float(weights.max()) if vmax is None else vmax
    if not top > 0:
        raise ValueError(f"vmax must be > 0, got {top}")
    norm, colour = mpl.colors.Normalize(0, top), mpl.colormaps[cmap]
    hops = weights.shape[0]
    for hop in range(hops):
        for position, token in enumerate(tokens):
            weight = float(weights[hop, position])
            y = hops - 1 - hop  # the first hop on top
            ax.add_patch(Rectangle((position, y), 1, 1, color=colour(norm(weight)), lw=0))
            dark = weight > 0.6 * top
            ax.text(
                position + 0.5, y + 0.5, token, ha="center", va="center", fontsize=10,
                color="white" if dark else "black",
            )  # fmt: skip
    ax.set_xlim(0, len(tokens))
    ax.set_ylim(0, hops)
    ax.set_yticks(
        [hops - 0.5 - hop for hop in range(hops)], [f"홉 {hop + 1}" for hop in range(hops)]
    )
    ax.set_xticks([])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if title is not None:
        ax.set_title(title, loc="left", fontsize=11)
    return mpl.cm.ScalarMappable(norm, colour)
