"""Byte-level BPE, GPT-2's tokenizer (Radford et al., 2019), 13장.

2장's BPE merges characters, so a character it never saw has no symbol. GPT-2's
merges bytes instead: the alphabet is the 256 byte values, so every text has a
tokenization and nothing is unknown. UTF-8 writes a Hangul syllable in three
bytes (U+AC00 … U+D7A3 lie above U+0800), so before any merge a Korean syllable
is three symbols; merges learned on Korean text join them back.

Encoding, as GPT-2 and ``tokenizers``' ``ByteLevel`` do it:

1. split the text with GPT-2's pattern (contractions, a letter run, a digit run
   or a run of other symbols, each with the space before it; spaces);
2. write each piece's UTF-8 bytes as printable characters (:func:`bytes_to_unicode`:
   the printable bytes stand for themselves, the others are shifted above 255;
   a space becomes ``Ġ``);
3. apply the merges to each piece, lowest rank first (2장's rule), and look the
   symbols up in the vocabulary.

``tests/test_byte_bpe.py`` trains ``tokenizers``' ``ByteLevelBPETokenizer`` and checks
:class:`ByteLevelBPE` on its vocabulary and merges against its encoder.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import regex

__all__ = ["GPT2_PATTERN", "ByteLevelBPE", "bytes_to_unicode"]

#: GPT-2's pre-tokenizer: contractions, letters, digits, other symbols (each with the
#: space before it), then runs of white space.
GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """Each byte value 0 … 255 → one printable character: the printable bytes stand for
    themselves, the 68 others (controls, the space) take 256, 257, … in order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]  # fmt: skip
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


class ByteLevelBPE:
    """GPT-2's encoder: a vocabulary (symbol → id) and merges in the order they were learned."""

    def __init__(self, vocab: dict[str, int], merges: Sequence[tuple[str, str]]) -> None:
        if not isinstance(vocab, dict) or not vocab:
            raise ValueError("vocab must be a non-empty dict of symbol → id")
        missing = [b for b in bytes_to_unicode().values() if b not in vocab]
        if missing:
            raise ValueError(
                f"vocab lacks {len(missing)} of the 256 byte symbols (e.g. {missing[0]!r}): "
                "byte-level BPE needs every byte"
            )
        self.vocab = dict(vocab)
        self.ranks = {tuple(pair): rank for rank, pair in enumerate(merges)}
        self._byte = bytes_to_unicode()
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def from_tokenizers(cls, tokenizer: Any) -> ByteLevelBPE:
        """The vocabulary and merges of a trained ``tokenizers`` byte-level BPE."""
        model = json.loads(tokenizer.to_str())["model"]
        merges: list[tuple[str, str]] = []
        for merge in model["merges"]:  # "a b" in older files, ["a", "b"] in newer
            first, second = merge.split(" ") if isinstance(merge, str) else merge
            merges.append((first, second))
        return cls(model["vocab"], merges)

    def _merge(self, piece: str) -> list[str]:
        cached = self._cache.get(piece)
        if cached is not None:
            return cached
        symbols = list(piece)
        while len(symbols) > 1:
            ranked = [
                (self.ranks[p], i) for i, p in enumerate(pairwise(symbols)) if p in self.ranks
            ]
            if not ranked:
                break
            _, best = min(ranked)  # the pair learned first, at its leftmost place
            first, second = symbols[best], symbols[best + 1]
            merged: list[str] = []
            i = 0
            while i < len(symbols):  # every occurrence of the pair, left to right
                if i + 1 < len(symbols) and symbols[i] == first and symbols[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        self._cache[piece] = symbols
        return symbols

    def tokens(self, text: str) -> list[str]:
        """The symbols of ``text`` (``Ġ`` stands for a space)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        out: list[str] = []
        for piece in GPT2_PATTERN.findall(text):
            out += self._merge("".join(self._byte[b] for b in piece.encode("utf-8")))
        return out

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``; every text has some, since every byte is a symbol."""
        return [self.vocab[symbol] for symbol in self.tokens(text)]

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``: the symbols' bytes, read as UTF-8 (invalid bytes replaced)."""
        inverse = {i: s for s, i in self.vocab.items()}
        byte_of = {c: b for b, c in self._byte.items()}
        unknown = [i for i in ids if i not in inverse]
        if unknown:
            raise ValueError(f"ids not in the vocabulary: {unknown[:5]}")
        data = bytes(byte_of[c] for i in ids for c in inverse[i])
        return data.decode("utf-8", errors="replace")
