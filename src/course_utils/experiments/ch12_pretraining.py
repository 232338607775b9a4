"""12장's Korean experiments, part 1: a Korean vocabulary, the data, and a tiny BERT pretrained.

- :func:`compare_korean_vocabularies`: WordPiece vs 2장's BPE and
  SentencePiece vs the English MiniLM vocabulary on held-out Korean, and our
  tokenizer checked token for token against ``tokenizers``.
- :func:`korean_task_splits`, :func:`korean_pretraining_text`: 6장's two tasks
  and the only text the tiny BERT may read (6장's training lines and the
  gettext messages' Korean side, never a held-out line).
- :func:`korean_bert_config`: sizes and budgets, one per ``COURSE_RUN`` size.
- :func:`pretrain_korean_bert`: a tiny BERT that reads one token per character
  (syllable), pretrained from scratch with MLM alone; :func:`evaluate_mlm`
  (held-out accuracy against unigram guesses), :func:`fill_in_blanks`,
  :func:`nsp_topic_probe` (why no NSP). Results are kept by recipe in
  :mod:`course_utils.runs`' cache.
"""

from __future__ import annotations

import functools
import math
import random
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
from torch import nn

from course_utils import runs
from course_utils.bert import (
    IGNORE_INDEX,
    BertConfig,
    BertForMaskedLM,
    MaskedTokens,
    make_nsp_pairs,
    mask_tokens,
)
from course_utils.bpe import END_OF_WORD
from course_utils.checks import check_int, check_lines
from course_utils.train import adamw_with_warmup
from course_utils.vocab import BERT_SPECIALS
from course_utils.wordpiece import (
    WordPieceTokenizer,
    WordPieceVocab,
    load_wordpiece_tokenizer,
    train_wordpiece_vocab,
)

__all__ = [
    "KOREAN_BERT_CONFIGS",
    "BlankGuesses",
    "FinetuneConfig",
    "KoreanBertConfig",
    "KoreanSplits",
    "KoreanVocabularyComparison",
    "KoreanWordPiece",
    "MLMEvaluation",
    "NSPProbe",
    "PretrainConfig",
    "PretrainedKoreanBert",
    "PretrainingText",
    "VocabularyRow",
    "char_ids",
    "char_naive_bayes",
    "check_config",
    "compare_korean_vocabularies",
    "evaluate_mlm",
    "fill_in_blanks",
    "korean_bert_config",
    "korean_char_vocab",
    "korean_pretraining_text",
    "korean_task_splits",
    "korean_wordpiece_pipeline",
    "nsp_topic_probe",
    "pretrain_korean_bert",
    "train_korean_wordpiece",
    "with_cls_sep",
    "wordpiece_agreement",
]

# ---------------------------------------------------------------------------
# A Korean WordPiece vocabulary
# ---------------------------------------------------------------------------


def korean_wordpiece_pipeline(vocab: Mapping[str, int] | None = None) -> Any:
    """The ``tokenizers`` pipeline that tokenizes as our Korean :class:`WordPieceTokenizer`.

    Ours is ``WordPieceTokenizer(vocab, lowercase=False, keep_accents=True)``.

    ``BertNormalizer`` with ``strip_accents=False`` and ``lowercase=False``
    (NFD would take every Hangul syllable apart into jamo, and Korean has no
    case), ``BertPreTokenizer`` (white space, then punctuation) and a
    ``WordPiece`` model (``[UNK]``, ``##``, 100 characters at most per word).
    ``vocab`` (token → id) fills the model; ``None`` leaves it empty for
    training.
    """
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    model = models.WordPiece(
        dict(vocab) if vocab is not None else {},
        unk_token="[UNK]",
        max_input_chars_per_word=100,
    )
    pipeline = Tokenizer(model)
    pipeline.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False
    )
    pipeline.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return pipeline


@dataclass
class KoreanWordPiece:
    """A WordPiece vocabulary trained on Korean lines, with both tokenizers that read it."""

    tokenizer: WordPieceTokenizer  # ours: greedy longest-match-first, from scratch
    reference: Any = field(repr=False)  # the ``tokenizers.Tokenizer`` with the same vocabulary
    seconds: float  # training time


def train_korean_wordpiece(lines: Sequence[str], vocab_size: int = 2000) -> KoreanWordPiece:
    """A Korean WordPiece vocabulary (:func:`train_wordpiece_vocab`) and two tokenizers of it.

    ``tokenizer`` is ours (:class:`WordPieceTokenizer` with ``lowercase=False``
    and ``keep_accents=True``: no NFD, which would take Hangul apart, and
    Korean has no case); ``reference`` is the ``tokenizers`` pipeline
    (:func:`korean_wordpiece_pipeline`) filled with the same vocabulary.
    """
    start = time.perf_counter()
    vocab, _ = train_wordpiece_vocab(lines, vocab_size)
    seconds = time.perf_counter() - start
    reference = korean_wordpiece_pipeline({token: vocab[token] for token in vocab})
    return KoreanWordPiece(WordPieceTokenizer(vocab, lowercase=False, keep_accents=True),
                           reference, seconds)  # fmt: skip


def wordpiece_agreement(
    ours: WordPieceTokenizer, reference: Any, lines: Sequence[str]
) -> tuple[int, list[str]]:
    """How many of ``lines`` our tokenizer cuts exactly as the ``tokenizers`` pipeline does.

    Returns the count and the lines where the two differ (empty when all agree).
    """
    if not isinstance(ours, WordPieceTokenizer):
        raise TypeError(f"ours must be a WordPieceTokenizer, got {type(ours).__name__}")
    lines = check_lines(lines)
    differing = [
        line
        for line in lines
        if ours.tokenize(line) != reference.encode(line, add_special_tokens=False).tokens
    ]
    return len(lines) - len(differing), differing


@dataclass(frozen=True)
class VocabularyRow:
    """One vocabulary measured on held-out Korean text."""

    name: str
    vocab_size: int
    tokens: int  # pieces of the held-out text
    unk_share: float  # share of those pieces that are unknown ([UNK], <unk>, an unseen symbol)
    unk_eojeol_share: float  # share of held-out eojeols with at least one unknown piece
    tokens_per_eojeol: float  # pieces per white-space word (어절)
    single_characters: int  # vocabulary entries that stand for one character (## and ▁ aside)


def _covered_characters(piece: str) -> int:
    for marker in ("##", "▁"):
        piece = piece.removeprefix(marker)
    return len(piece.removesuffix(END_OF_WORD))


@dataclass
class KoreanVocabularyComparison:
    """:func:`compare_korean_vocabularies`: the table, and the WordPiece model it trained."""

    rows: dict[str, VocabularyRow]
    wordpiece: KoreanWordPiece
    with_gettext: bool  # the gettext messages' Korean side was training text too
    train_lines: int
    held_out_lines: int
    held_out_eojeols: int
    agreeing_lines: int  # held-out lines our WordPiece cuts exactly as ``tokenizers``

    def table(self) -> list[dict[str, object]]:
        """The rows as plain dicts, in order, for a DataFrame."""
        return [asdict(row) for row in self.rows.values()]


def compare_korean_vocabularies(
    vocab_size: int = 2000, with_gettext: bool = False
) -> KoreanVocabularyComparison:
    """WordPiece vs 2장's BPE and SentencePiece vs the English MiniLM vocabulary, on Korean.

    Every vocabulary except MiniLM's is trained on the same text, 2장's
    training lines (:func:`~course_utils.datasets.split_lines` of the
    constitution and the bills; with ``with_gettext`` also the Korean side
    of every gettext message), at the same ``vocab_size``, the way 2장 trains
    them: :func:`~course_utils.bpe.train_bpe_to_size` on the training
    eojeols and :func:`~course_utils.bpe.train_sentencepiece` (BPE and
    unigram) on the lines. All are measured on 2장's held-out lines, which
    none of them saw. An unknown piece stands for different amounts of text:
    WordPiece's ``[UNK]`` replaces a whole word, an unknown BPE or
    SentencePiece piece one character; ``unk_eojeol_share`` compares them
    on equal terms.
    """
    from course_utils.bpe import train_bpe_to_size, train_sentencepiece
    from course_utils.datasets import korean_corpus_lines, split_lines

    check_int(vocab_size, "vocab_size", 100)
    train, held_out = split_lines(korean_corpus_lines())
    if with_gettext:
        train = [*train, *_gettext_korean_lines()]
    eojeols = [line.split() for line in held_out]
    n_eojeols = sum(map(len, eojeols))

    def row(name: str, size: int, pieces: list[list[list[Any]]], unknown: Callable[[Any], bool],
            alphabet: int) -> VocabularyRow:  # fmt: skip
        # pieces: per held-out line, per eojeol, its pieces (strings, or SentencePiece ids)
        flat = [p for line in pieces for word in line for p in word]
        return VocabularyRow(
            name,
            size,
            len(flat),
            sum(map(unknown, flat)) / len(flat),
            sum(any(map(unknown, word)) for line in pieces for word in line) / n_eojeols,
            len(flat) / n_eojeols,
            alphabet,
        )

    rows: dict[str, VocabularyRow] = {}
    wordpiece_model = train_korean_wordpiece(train, vocab_size)
    ours = wordpiece_model.tokenizer
    rows["wordpiece"] = row(
        "wordpiece",
        len(ours),
        [[ours.tokenize(word) for word in words] for words in eojeols],
        lambda piece: piece == "[UNK]",
        sum(_covered_characters(t) == 1 for t in ours.vocab),
    )
    bpe = train_bpe_to_size([word for line in train for word in line.split()], vocab_size)
    known = set(bpe.symbols)
    rows["bpe"] = row(
        "bpe",
        len(known),
        [[bpe.encode_word(word) for word in words] for words in eojeols],
        lambda piece: piece not in known,
        sum(_covered_characters(t) == 1 for t in known),
    )
    for model_type in ("bpe", "unigram"):
        processor = train_sentencepiece(train, model_type, vocab_size)
        unk_id: int = processor.unk_id()  # a character never seen in training
        entries = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
        rows[f"sentencepiece-{model_type}"] = row(
            f"sentencepiece-{model_type}",
            processor.get_piece_size(),
            [[processor.encode(word) for word in words] for words in eojeols],
            unk_id.__eq__,
            sum(_covered_characters(t) == 1 for t in entries),
        )
    english = load_wordpiece_tokenizer()
    rows["minilm-english"] = row(
        "minilm-english",
        len(english),
        [[english.tokenize(word) for word in words] for words in eojeols],
        lambda piece: piece == "[UNK]",
        sum(_covered_characters(t) == 1 for t in english.vocab),
    )
    agreeing, _ = wordpiece_agreement(ours, wordpiece_model.reference, held_out)
    return KoreanVocabularyComparison(
        rows, wordpiece_model, with_gettext, len(train), len(held_out), n_eojeols, agreeing
    )


@functools.cache
def _gettext_korean_lines() -> tuple[str, ...]:
    """The Korean side of every cleaned gettext message (9장's corpus), in its fixed order."""
    from course_utils.gettext_corpus import load_gettext_pairs

    return tuple(pair.korean for pair in load_gettext_pairs())


# ---------------------------------------------------------------------------
# 6장's tasks and the text the tiny BERT may read
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KoreanSplits:
    """6장's lines and labels (0 constitution, 1 bills), split as 6장 splits them.

    ``validation=True`` carves a validation part out of 6장's training split
    (every fifth training line) and calls it ``test_*``: for choosing
    settings without looking at the real test lines. ``unseen`` are the lines
    no pretraining may read: the test lines, and with ``validation`` the
    real test lines as well.
    """

    train_lines: tuple[str, ...]
    train_labels: tuple[int, ...]
    test_lines: tuple[str, ...]
    test_labels: tuple[int, ...]
    unseen: frozenset[str]
    validation: bool

    def chars(self, part: str) -> list[str]:
        """``"train"`` or ``"test"`` lines as one character stream, each line ended by ``\\n``.

        For the training and test parts this is exactly
        :func:`~course_utils.datasets.korean_char_split`, 6장's spacing data.
        """
        if part not in ("train", "test"):
            raise ValueError(f"part must be 'train' or 'test', got {part!r}")
        lines = self.train_lines if part == "train" else self.test_lines
        return list("".join(line + "\n" for line in lines))


@functools.cache
def korean_task_splits(validation: bool = False) -> KoreanSplits:
    """6장's splits: :func:`~course_utils.rnn.source_lines` through ``split_lines``.

    Its lines are those of :func:`~course_utils.datasets.korean_corpus_lines`
    (checked), so the line classifier's test lines and the spacing tagger's
    test text are the same held-out lines.
    """
    from course_utils.datasets import korean_corpus_lines, split_lines
    from course_utils.experiments.ch06_rnn import source_lines

    labelled = source_lines()
    lines = korean_corpus_lines()
    if [unicodedata.normalize("NFC", line) for line, _ in labelled] != lines:
        raise RuntimeError("6장's two tasks no longer read the same lines")
    train, test = split_lines(labelled)
    unseen = {line for line, _ in test}
    if validation:
        train, test = split_lines(train)
        unseen |= {line for line, _ in test}
    return KoreanSplits(
        tuple(line for line, _ in train),
        tuple(label for _, label in train),
        tuple(line for line, _ in test),
        tuple(label for _, label in test),
        frozenset(unseen),
        validation,
    )


@dataclass(frozen=True)
class PretrainingText:
    """The lines the tiny Korean BERT is pretrained on, and where they come from."""

    lines: tuple[str, ...]
    task_lines: int  # from the tasks' training split (constitution and bills)
    gettext_lines: int  # Korean sides of gettext messages
    removed: int  # lines dropped because they equal a line the tasks hold out

    @property
    def characters(self) -> int:
        """Characters that are not spaces (the tiny BERT's tokens), line breaks included."""
        return sum(len(line.replace(" ", "")) + 1 for line in self.lines)


def korean_pretraining_text(splits: KoreanSplits, with_gettext: bool = True) -> PretrainingText:
    """The tasks' training lines, and the gettext messages' Korean side, minus every unseen line.

    A line is dropped when it equals, character for character, a line in
    ``splits.unseen`` (a test line; 6장's training split itself repeats some
    test lines, such as "부 칙", which the fine-tuning data keeps for every
    model, as in 6장). So no held-out line is ever read during pretraining.
    """
    if not isinstance(splits, KoreanSplits):
        raise TypeError(f"splits must be KoreanSplits, got {type(splits).__name__}")
    gettext = _gettext_korean_lines() if with_gettext else []
    task = [line for line in splits.train_lines if line not in splits.unseen]
    extra = [line for line in gettext if line not in splits.unseen]
    removed = len(splits.train_lines) + len(gettext) - len(task) - len(extra)
    return PretrainingText((*task, *extra), len(task), len(extra), removed)


@functools.cache
def korean_text_digest(with_gettext: bool = True, validation: bool = False) -> str:
    """A digest of everything 12장's models read: 6장's splits and the pretraining text.

    The pretraining text holds the Korean side of this machine's gettext
    catalogues, which differ with the packages installed, so the cached
    weights are kept under this digest as well as under the configuration
    (:func:`course_utils.runs.recipe_key`): other text, or another vocabulary
    built from it, is trained again instead of loaded into the wrong shapes.
    """
    import hashlib

    splits = korean_task_splits(validation)
    text = korean_pretraining_text(splits, with_gettext)
    digest = hashlib.sha256()
    for part in (splits.train_lines, splits.train_labels, splits.test_lines, splits.test_labels,
                 text.lines):  # fmt: skip
        digest.update(repr(part).encode())
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def pretraining_key(config: KoreanBertConfig, validation: bool = False) -> tuple[object, ...]:
    """The recipe under which :func:`pretrain_korean_bert` keeps ``config``'s weights."""
    return (config.pretraining_recipe(), validation,
            korean_text_digest(config.with_gettext, validation))  # fmt: skip


def korean_char_vocab(lines: Sequence[str]) -> WordPieceVocab:
    """The tiny BERT's vocabulary: BERT's specials, ``\\n``, then every other character, sorted.

    One token per character (a Hangul syllable, a digit, a punctuation
    mark); spaces are not tokens, since spacing restoration must find them.
    """
    lines = check_lines(lines)
    chars = sorted({c for line in lines for c in line if c not in " \n"})
    return WordPieceVocab([*BERT_SPECIALS, "\n", *chars])


def char_ids(chars: Sequence[str], vocab: WordPieceVocab) -> torch.Tensor:
    """The ids of the characters that are not spaces (N,); an unknown character is ``[UNK]``."""
    from course_utils.experiments.ch06_rnn import spacing_stream

    return spacing_stream(chars, vocab)[0]


# ---------------------------------------------------------------------------
# The recipe: sizes and budgets, one configuration per COURSE_RUN size
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PretrainConfig:
    """MLM pretraining: ``steps`` batches of random windows, short ones first, then full length.

    As BERT (90 % of the steps at 128 tokens, the last 10 % at 512), most
    steps read windows of ``short_len`` tokens and the last ``long_share``
    of them windows of the model's full ``seq_len``, so that the later
    positions are learned too. A batch holds ``batch_tokens`` tokens
    whatever the window length.
    """

    steps: int = 1000
    batch_tokens: int = 2048  # windows per batch: batch_tokens // window length
    short_len: int = 16  # tokens per window ([CLS], [SEP] included) for most of the steps
    long_share: float = 0.1  # the last 10 % of the steps: windows of seq_len tokens
    task_share: float = 0.5  # of the windows, from the tasks' own training lines (the rest gettext)
    learning_rate: float = 3e-3  # AdamW's peak, reached after the warm-up, then linear to 0
    warmup_steps: int = 100
    weight_decay: float = 0.01  # on the weight matrices and embeddings, not on biases or LayerNorm
    mask_probability: float = 0.15
    dropout: float = 0.0  # a few passes over the text: nothing to regularise yet
    seed: int = 0

    def __post_init__(self) -> None:
        check_int(self.steps, "steps")
        check_int(self.short_len, "short_len", 3)
        for name in ("long_share", "task_share"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value <= 1
            ):
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


@dataclass(frozen=True)
class FinetuneConfig:
    """Fine-tuning: the same budget for the pretrained and the randomly initialised model."""

    spacing_epochs: int = 10
    spacing_len: int = 16  # tokens per spacing window, [CLS] and [SEP] included
    lines_epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 3e-3
    warmup_share: float = 0.1  # of the steps, then linear decay to 0
    weight_decay: float = 0.01
    dropout: float = 0.1  # BERT's hidden and attention dropout
    max_chars: int = 48  # a line's first 48 characters, as 6장's line classifier reads
    seed: int = 0


@dataclass(frozen=True)
class KoreanBertConfig:
    """The tiny Korean BERT: its size, and how long it is pretrained and fine-tuned."""

    hidden_size: int = 64
    layers: int = 2
    heads: int = 2
    intermediate_size: int = 256
    seq_len: int = 64  # tokens per window, [CLS] and [SEP] included: the position table's size
    with_gettext: bool = True  # pretrain on the gettext messages' Korean side too
    pretraining: PretrainConfig = field(default_factory=PretrainConfig)
    finetuning: FinetuneConfig = field(default_factory=FinetuneConfig)

    def __post_init__(self) -> None:
        check_int(self.seq_len, "seq_len", 3)
        if self.finetuning.max_chars + 2 > self.seq_len:
            raise ValueError(
                f"seq_len = {self.seq_len} has no room for max_chars = "
                f"{self.finetuning.max_chars} characters and [CLS], [SEP]"
            )

    def pretraining_recipe(self) -> KoreanBertConfig:
        """This configuration with the default fine-tuning: what decides the pretrained weights."""
        return replace(self, finetuning=FinetuneConfig())

    def bert_config(self, vocab_size: int, dropout: float) -> BertConfig:
        """The :class:`BertConfig` of this size, with ``dropout`` on hidden and attention."""
        return BertConfig(
            vocab_size=vocab_size,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            intermediate_size=self.intermediate_size,
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            max_position_embeddings=self.seq_len,
        )


#: ``COURSE_RUN=small`` (the CPU default: pretraining about half a minute on one core) and
#: ``large`` (a GPU: a wider, deeper model, longer windows, ten times the steps).
KOREAN_BERT_CONFIGS = {
    "small": KoreanBertConfig(),
    "large": KoreanBertConfig(
        hidden_size=256,
        layers=4,
        heads=4,
        intermediate_size=1024,
        seq_len=128,
        pretraining=PretrainConfig(steps=5000, batch_tokens=16384, short_len=32,
                                   learning_rate=1e-3, warmup_steps=500),
        finetuning=FinetuneConfig(spacing_len=32, lines_epochs=6, learning_rate=1e-3),
    ),
}  # fmt: skip


def korean_bert_config(size: str | None = None) -> KoreanBertConfig:
    """The configuration of a run size (default: :func:`course_utils.device.run_size`)."""
    from course_utils.device import run_size

    size = run_size() if size is None else size
    if size not in KOREAN_BERT_CONFIGS:
        raise ValueError(f"size must be one of {', '.join(KOREAN_BERT_CONFIGS)}, got {size!r}")
    return KOREAN_BERT_CONFIGS[size]


def check_config(config: object) -> KoreanBertConfig:
    if config is None:
        return korean_bert_config()
    if not isinstance(config, KoreanBertConfig):
        raise TypeError(f"config must be a KoreanBertConfig or None, got {type(config).__name__}")
    return config


# ---------------------------------------------------------------------------
# Pretraining
# ---------------------------------------------------------------------------


def with_cls_sep(ids: torch.Tensor, vocab: WordPieceVocab) -> torch.Tensor:
    """(B, C) character ids → (B, C + 2): ``[CLS]`` in front, ``[SEP]`` at the end."""
    B = ids.shape[0]
    cls = torch.full((B, 1), vocab.id_of("[CLS]"), dtype=torch.long)
    sep = torch.full((B, 1), vocab.id_of("[SEP]"), dtype=torch.long)
    return torch.cat([cls, ids, sep], dim=1)


@dataclass
class PretrainedKoreanBert:
    """The tiny Korean BERT after MLM pretraining."""

    config: KoreanBertConfig  # the pretraining recipe (the default fine-tuning settings)
    splits: KoreanSplits = field(repr=False)
    text: PretrainingText = field(repr=False)
    vocab: WordPieceVocab = field(repr=False)
    model: BertForMaskedLM = field(repr=False)  # in eval mode, on the CPU
    losses: list[float]  # mean MLM loss of each tenth of the steps
    seconds: float  # training time (when it was trained, if it came from the cache)
    cached: bool
    parameters: int  # the encoder's (embeddings + layers), what fine-tuning starts from
    #: (V,) how often each id occurs in the tasks' training text (the unigram baselines)
    token_counts: torch.Tensor = field(repr=False)

    @property
    def tokens_seen(self) -> int:
        """Tokens read during pretraining, about ``steps × batch_tokens``."""
        p = self.config.pretraining
        return (p.steps // 10) * 10 * p.batch_tokens


def _pretraining_stream(lines: Sequence[str], vocab: WordPieceVocab) -> torch.Tensor:
    """The lines as one stream of ids (N,): spaces dropped, ``\n`` after each line."""
    return char_ids(list("".join(line + "\n" for line in lines)), vocab)


def _sample_windows(
    streams: Sequence[torch.Tensor],
    weights: Sequence[float],
    count: int,
    width: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """``count`` windows of ``width`` ids (count, width), each from stream k with ``weights[k]``."""
    which = torch.multinomial(torch.tensor(weights, dtype=torch.float), count, replacement=True,
                              generator=generator)  # fmt: skip
    rows = []
    for k, stream in enumerate(streams):
        n = int((which == k).sum())
        if n:
            starts = torch.randint(0, stream.numel() - width + 1, (n, 1), generator=generator)
            rows.append(stream[starts + torch.arange(width)])  # (n, width)
    return torch.cat(rows)[torch.randperm(count, generator=generator)]


def pretrain_korean_bert(
    config: KoreanBertConfig | None = None,
    validation: bool = False,
    show_progress: bool = True,
) -> PretrainedKoreanBert:
    """Pretrain the tiny Korean BERT with MLM alone (no NSP) on the pretraining text (cached).

    The text (:func:`korean_pretraining_text`) is one stream of characters,
    spaces removed and each line ended by ``\n``. Every step reads windows
    at random offsets (``short_len`` tokens for most steps, ``seq_len`` for
    the last ``long_share``; :class:`PretrainConfig`), puts ``[CLS]``/``[SEP]``
    around them and masks them with :func:`mask_tokens` (15 %, 80/10/10, a
    fresh mask every time: RoBERTa's dynamic masking). The loss is
    cross-entropy at the chosen positions. Seeded; the trained weights are
    kept by recipe (:func:`course_utils.runs.cached`), so the chapter and its claims test
    train once.
    """
    config = check_config(config)
    if not validation:  # pretraining that start_korean_training runs in a worker
        runs.wait_for(("bert-pretrain", config.pretraining_recipe()))
    key = (*pretraining_key(config, validation), runs.recipe_key("bert-pretrain", None))
    if key in _PRETRAINED:  # already trained or loaded in this process
        return _PRETRAINED[key]
    p = config.pretraining
    splits = korean_task_splits(validation)
    text = korean_pretraining_text(splits, config.with_gettext)
    vocab = korean_char_vocab(text.lines)
    streams, weights = [_pretraining_stream(text.lines[: text.task_lines], vocab)], [1.0]
    if text.gettext_lines:  # two streams, each window from one of them
        streams.append(_pretraining_stream(text.lines[text.task_lines :], vocab))
        weights = [p.task_share, 1 - p.task_share]
    if min(s.numel() for s in streams) < config.seq_len:
        raise ValueError(f"the pretraining text is shorter than {config.seq_len} characters")

    def train() -> dict[str, Any]:
        from course_utils.device import get_device, seed_everything
        from course_utils.train import fit

        seed_everything(p.seed)
        model = BertForMaskedLM(config.bert_config(len(vocab), p.dropout))
        chunks = 10  # the loss is recorded once per tenth of the steps
        per_chunk = max(1, p.steps // chunks)
        total = per_chunk * chunks
        long_from = total - round(p.long_share * total)  # the first step with full-length windows
        optimizer, schedule = adamw_with_warmup(
            model, p.learning_rate, p.weight_decay, total, p.warmup_steps
        )
        generator = torch.Generator().manual_seed(p.seed)
        target = get_device()
        taken = 0

        def batches() -> Iterator[MaskedTokens]:
            nonlocal taken
            for _ in range(per_chunk):
                length = config.seq_len if taken >= long_from else min(p.short_len, config.seq_len)
                count = max(1, p.batch_tokens // length)
                windows = _sample_windows(streams, weights, count, length - 2, generator)  # (B, C)
                taken += 1
                yield mask_tokens(with_cls_sep(windows, vocab), None, vocab, generator,
                                  p.mask_probability)  # fmt: skip

        def loss_fn(m: nn.Module, batch: MaskedTokens) -> torch.Tensor:
            assert isinstance(m, BertForMaskedLM)
            inputs, labels = batch.input_ids.to(target), batch.labels.to(target)
            hidden = m.bert(inputs).last_hidden_state  # (B, T, d)
            chosen = labels != IGNORE_INDEX  # (B, T): the positions to predict
            return nn.functional.cross_entropy(m.predict(hidden[chosen]), labels[chosen])

        start = time.perf_counter()
        history = fit(model, batches, loss_fn, optimizer, chunks, device=target, seed=None,
                      show_progress=show_progress, scheduler=schedule)  # fmt: skip
        seconds = time.perf_counter() - start
        return {"state": {k: v.cpu() for k, v in model.state_dict().items()},
                "losses": history.train_loss, "seconds": seconds}  # fmt: skip

    saved, cached = runs.cached("bert-pretrain", pretraining_key(config, validation), train)
    model = BertForMaskedLM(config.bert_config(len(vocab), p.dropout))
    model.load_state_dict(saved["state"])
    counts = torch.bincount(streams[0], minlength=len(vocab))  # the tasks' training text
    encoder = sum(t.numel() for t in model.bert.state_dict().values())
    _PRETRAINED[key] = PretrainedKoreanBert(
        config.pretraining_recipe(), splits, text, vocab, model.eval(), list(saved["losses"]),
        float(saved["seconds"]), cached, encoder, counts
    )  # fmt: skip
    return _PRETRAINED[key]


#: Pretrained models already trained or loaded in this process, by recipe and package code.
_PRETRAINED: dict[tuple[object, ...], PretrainedKoreanBert] = {}


# ---------------------------------------------------------------------------
# What MLM learned: held-out accuracy against unigram baselines, and blanks filled in
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MLMEvaluation:
    """Masked positions of held-out text predicted by the tiny BERT, and by unigram guesses."""

    accuracy: float  # the top prediction is the hidden character
    top5: float  # the hidden character is among the top five
    most_frequent: float  # always guess the most frequent training token
    most_frequent_token: str
    unigram_sampling: float  # guess by drawing from the training unigram distribution (expected)
    predictions: int  # masked positions scored
    characters: int  # held-out characters (tokens) the masks were drawn from


@torch.no_grad()
def evaluate_mlm(
    pretrained: PretrainedKoreanBert,
    draws: int = 5,
    probability: float = 0.15,
    width: int | None = None,
) -> MLMEvaluation:
    """MLM accuracy on the held-out lines (the tasks' test lines, never pretrained on).

    The held-out stream (spaces removed, ``\\n`` after each line) is cut into
    windows of ``seq_len − 2`` characters. In each of ``draws`` seeded
    draws, every real character is hidden with ``probability`` and every
    hidden one becomes ``[MASK]`` (no random or unchanged 10 %: here it is a
    test). Baselines, over the same hidden positions, from the character
    counts of the tasks' training text (the in-domain part of the
    pretraining text, ``token_counts``): *most frequent* always answers its
    most frequent character; *unigram sampling* answers a character drawn
    from its unigram distribution p, whose expected accuracy is the mean of
    p(hidden character), computed exactly.
    """
    if not isinstance(pretrained, PretrainedKoreanBert):
        raise TypeError(
            f"pretrained must be a PretrainedKoreanBert, got {type(pretrained).__name__}"
        )
    check_int(draws, "draws")
    if not 0 < probability < 1:
        raise ValueError(f"probability must be in (0, 1), got {probability!r}")
    vocab, model = pretrained.vocab, pretrained.model.eval()
    ids = char_ids(pretrained.splits.chars("test"), vocab)  # (N,)
    if width is None:
        width = min(pretrained.config.pretraining.short_len, pretrained.config.seq_len) - 2
    if not 1 <= width <= pretrained.config.seq_len - 2:
        raise ValueError(f"width must be in 1 … {pretrained.config.seq_len - 2}, got {width!r}")
    windows = list(ids.split(width))
    lengths = torch.tensor([len(w) for w in windows])
    padded = nn.utils.rnn.pad_sequence(windows, batch_first=True, padding_value=vocab.pad_id)
    inputs = with_cls_sep(padded, vocab)  # (W, C + 2); [SEP] after the padding of the last one
    mask = torch.ones_like(inputs)
    mask[:, 1:-1] = torch.arange(padded.shape[1]) < lengths[:, None]  # 0 at padding
    counts = pretrained.token_counts.double()
    counts[sorted(vocab.special_ids)] = 0
    unigram = counts / counts.sum()  # (V,)
    frequent = int(unigram.argmax())
    right = top5 = n = 0
    sampling = frequent_right = 0.0
    for draw in range(draws):
        masked = mask_tokens(inputs, mask, vocab, torch.Generator().manual_seed(draw), probability,
                             mask_share=1.0, random_share=0.0)  # fmt: skip
        chosen = masked.labels != IGNORE_INDEX  # (W, T)
        truth = masked.labels[chosen]  # (n,)
        logits = model(masked.input_ids, mask)[chosen]  # (n, V)
        best = logits.topk(5, dim=-1).indices  # (n, 5)
        right += int((best[:, 0] == truth).sum())
        top5 += int((best == truth[:, None]).any(-1).sum())
        frequent_right += float((truth == frequent).sum())
        sampling += float(unigram[truth].sum())
        n += len(truth)
    return MLMEvaluation(right / n, top5 / n, frequent_right / n, vocab.token_of(frequent),
                         sampling / n, n, len(ids))  # fmt: skip


@dataclass(frozen=True)
class BlankGuesses:
    """The top guesses for one ``[MASK]`` in a sentence."""

    text: str  # the sentence as given, with [MASK]
    guesses: list[tuple[str, float]]  # (character, probability), most likely first


@torch.no_grad()
def fill_in_blanks(
    pretrained: PretrainedKoreanBert, text: str, k: int = 5, width: int | None = None
) -> list[BlankGuesses]:
    """The ``k`` most likely characters for each ``[MASK]`` in ``text`` (spaces are dropped).

    The model reads ``width`` characters around each blank (default
    ``short_len − 2``, the windows of most pretraining steps), the blank as
    near the middle as the text allows; the other blanks stay ``[MASK]``.
    """
    if not isinstance(pretrained, PretrainedKoreanBert):
        raise TypeError(
            f"pretrained must be a PretrainedKoreanBert, got {type(pretrained).__name__}"
        )
    if not isinstance(text, str) or "[MASK]" not in text:
        raise ValueError(f"text must be a str with at least one [MASK], got {text!r}")
    check_int(k, "k")
    config, vocab = pretrained.config, pretrained.vocab
    if width is None:
        width = min(config.pretraining.short_len, config.seq_len) - 2
    if not 1 <= width <= config.seq_len - 2:
        raise ValueError(f"width must be in 1 … {config.seq_len - 2}, got {width!r}")
    ids: list[int] = []
    blanks: list[int] = []
    for i, part in enumerate(text.split("[MASK]")):
        if i:
            blanks.append(len(ids))
            ids.append(vocab.id_of("[MASK]"))
        ids.extend(char_ids(list(part), vocab).tolist())
    model = pretrained.model.eval()
    out = []
    for position in blanks:
        first = min(max(0, position - width // 2), max(0, len(ids) - width))
        window = torch.tensor([ids[first : first + width]])  # (1, ≤ width)
        probs = model(with_cls_sep(window, vocab))[0, 1 + position - first].softmax(-1)  # (V,)
        top = probs.topk(k)
        guesses = [(vocab.token_of(int(i)), float(p)) for p, i in zip(*top, strict=True)]
        out.append(BlankGuesses(text, guesses))
    return out


# ---------------------------------------------------------------------------
# Why no NSP: a rule that sees only the topic solves BERT's NotNext
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NSPProbe:
    """BERT's NSP answered by a rule that knows only each sentence's topic (its source)."""

    other_document: float  # accuracy when NotNext comes from the other source (BERT's NSP)
    same_document: float  # … when NotNext is another sentence of the same source
    topic_accuracy: float  # the topic classifier's accuracy on the single sentences
    pairs: int  # pairs scored per kind


def char_naive_bayes(lines: Sequence[str], labels: Sequence[int]) -> Callable[[str], int]:
    """Multinomial naive Bayes over characters (add-one smoothing): line → label.

    As scikit-learn's ``MultinomialNB(alpha=1)`` on character counts (spaces
    dropped; a character never seen in training is ignored); ties go to the
    smaller label.
    """
    counts: dict[int, Counter[str]] = {}
    for line, label in zip(lines, labels, strict=True):
        counts.setdefault(label, Counter()).update(line.replace(" ", ""))
    alphabet = set().union(*counts.values())
    labels_seen = sorted(counts)
    log_prior = {k: math.log(sum(label == k for label in labels) / len(labels)) for k in counts}
    log_p = {
        k: {c: math.log((counts[k][c] + 1) / (sum(counts[k].values()) + len(alphabet)))
            for c in alphabet}
        for k in counts
    }  # fmt: skip

    def classify(line: str) -> int:
        chars = [c for c in line if c in alphabet]
        scores = [log_prior[k] + sum(log_p[k][c] for c in chars) for k in labels_seen]
        return labels_seen[scores.index(max(scores))]

    return classify


def nsp_topic_probe(seed: int = 0) -> NSPProbe:
    """Why no NSP: answer it by topic alone, with NotNext from the other source or the same one.

    The topic rule: a naive Bayes classifier over characters, fitted on 6장's
    training lines to tell the constitution from the bills, says IsNext
    exactly when it puts both sentences in the same source; it knows nothing
    of order or coherence. The pairs come from :func:`make_nsp_pairs` on 6장's
    *test* lines (which the classifier never saw), one document per source,
    consecutive lines as IsNext. With BERT's NotNext (from the other
    document) the rule scores about as well as it classifies; with a NotNext
    from the same document it is at chance. ALBERT's reading: NSP mostly
    tests topic, which MLM already learns.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    splits = korean_task_splits()
    topic = char_naive_bayes(splits.train_lines, splits.train_labels)
    documents = [
        [line for line, label in zip(splits.test_lines, splits.test_labels, strict=True)
         if label == source]
        for source in (0, 1)
    ]  # fmt: skip
    right = sum(topic(line) == label for line, label in zip(splits.test_lines, splits.test_labels,
                                                             strict=True))  # fmt: skip
    accuracy = {}
    for kind in ("other_document", "same_document"):
        pairs = make_nsp_pairs(documents, random.Random(seed), not_next_from=kind)
        said_next = [topic(p.first) == topic(p.second) for p in pairs]
        accuracy[kind] = sum(s == p.is_next for s, p in zip(said_next, pairs, strict=True)) / len(
            pairs
        )
    return NSPProbe(accuracy["other_document"], accuracy["same_document"],
                    right / len(splits.test_lines), len(pairs))  # fmt: skip
