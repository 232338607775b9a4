"""2장 텍스트 전처리와 토큰화: a vocabulary that maps tokens to integer ids.

Special tokens come first, in a fixed order, so every later chapter can rely on
``<pad>`` being id 0: sequence models use :data:`SEQ_SPECIALS`, BERT uses
:data:`BERT_SPECIALS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable, Iterator, Sequence

from course_utils.checks import check_int

__all__ = ["BERT_SPECIALS", "SEQ_SPECIALS", "Vocab", "oov_rate"]

#: Padding, unknown word, start and end of sequence (RNN, seq2seq chapters).
SEQ_SPECIALS: tuple[str, ...] = ("<pad>", "<unk>", "<sos>", "<eos>")
#: The special tokens of BERT's WordPiece vocabulary.
BERT_SPECIALS: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _check_tokens(tokens: object, what: str) -> Sequence[str]:
    if isinstance(tokens, str):
        raise TypeError(f"{what} must be a sequence of str tokens, not one str: tokenize it first")
    if not isinstance(tokens, Sequence):
        raise TypeError(f"{what} must be a sequence of str tokens, got {type(tokens).__name__}")
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(f"{what} must contain only str tokens, found {type(token).__name__}")
    return tokens


class Vocab:
    """Token ↔ id mapping with special tokens and frequency cut-offs.

    Ids are assigned: special tokens first (in the order given), then corpus
    tokens by descending frequency, ties in order of first appearance.
    Unknown tokens map to the unknown token (``<unk>`` or ``[UNK]``) when the
    vocabulary has one, and raise ``KeyError`` otherwise.
    """

    def __init__(self, tokens: Iterable[str], specials: Sequence[str] = SEQ_SPECIALS) -> None:
        if isinstance(tokens, (str, bytes)):
            raise TypeError(
                "tokens must be an iterable of str tokens, not one str: "
                f"Vocab({tokens[:20]!r}) would make a vocabulary of its characters"
            )
        specials = tuple(_check_tokens(specials, "specials"))
        if len(set(specials)) != len(specials):
            raise ValueError(f"specials must be distinct, got {specials}")
        self.specials = specials
        #: Corpus token counts (filled by :meth:`build`, before any cut-off).
        self.counts: Counter[str] = Counter()
        self._itos: list[str] = list(specials)
        self._stoi: dict[str, int] = {token: i for i, token in enumerate(specials)}
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(f"tokens must be str, found {type(token).__name__}")
            if token not in self._stoi:
                self._stoi[token] = len(self._itos)
                self._itos.append(token)
        unknown = [token for token in specials if token in ("<unk>", "[UNK]")]
        self.unk_token: str | None = unknown[0] if unknown else None

    @classmethod
    def build(
        cls,
        corpus: Iterable[Sequence[str]],
        min_freq: int = 1,
        max_size: int | None = None,
        specials: Sequence[str] = SEQ_SPECIALS,
    ) -> Vocab:
        """Build from tokenized sentences (``list[list[str]]``).

        Tokens seen fewer than ``min_freq`` times are left out; ``max_size``
        caps the number of corpus tokens (specials not counted).
        """
        if isinstance(corpus, str):
            raise TypeError("corpus must be tokenized sentences (list[list[str]]), not str")
        check_int(min_freq, "min_freq")
        if max_size is not None:
            check_int(max_size, "max_size (None for no limit)", least=0)
        counts: Counter[str] = Counter()
        for i, sentence in enumerate(corpus):
            counts.update(_check_tokens(sentence, f"corpus[{i}]"))
        specials_set = set(specials)
        # most_common keeps first-appearance order among equal counts.
        kept = [
            token
            for token, count in counts.most_common()
            if count >= min_freq and token not in specials_set
        ]
        if max_size is not None:
            kept = kept[:max_size]
        vocab = cls(kept, specials=specials)
        vocab.counts = counts
        return vocab

    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def __iter__(self) -> Iterator[str]:
        return iter(self._itos)

    def __getitem__(self, token: str) -> int:
        if not isinstance(token, str):
            raise TypeError(f"token must be a str, got {type(token).__name__}")
        index = self._stoi.get(token)
        if index is not None:
            return index
        if self.unk_token is None:
            raise KeyError(f"{token!r} is not in the vocabulary and it has no unknown token")
        return self._stoi[self.unk_token]

    def token_of(self, index: int) -> str:
        """The token whose id is ``index``."""
        if isinstance(index, bool) or not isinstance(index, int):
            # numpy and torch integers are fine; floats are not.
            try:
                import operator

                index = operator.index(index)
            except TypeError:
                raise TypeError(f"id must be an int, got {type(index).__name__}") from None
        if not 0 <= index < len(self._itos):
            raise IndexError(f"id {index} is out of range: expected 0 <= id < {len(self._itos)}")
        return self._itos[index]

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Map tokens to ids."""
        return [self[token] for token in _check_tokens(tokens, "tokens")]

    def decode(self, ids: Iterable[int], skip_specials: bool = False) -> list[str]:
        """Map ids back to tokens, optionally dropping special tokens."""
        if isinstance(ids, (str, bytes)):
            raise TypeError("ids must be a sequence of int ids, not a string")
        tokens = []
        for i in ids:
            if isinstance(i, bool):  # True is an int to Python, not an id
                raise TypeError("ids must be int ids, got bool")
            tokens.append(self.token_of(i))
        if skip_specials:
            specials = set(self.specials)
            tokens = [t for t in tokens if t not in specials]
        return tokens

    def id_of_special(self, token: str) -> int:
        """The id of a special token; raises ``KeyError`` if this vocabulary lacks it."""
        if token not in self.specials:
            raise KeyError(f"{token!r} is not a special token of this vocabulary {self.specials}")
        return self._stoi[token]

    @property
    def pad_id(self) -> int:
        """The id of the padding token (``<pad>`` or ``[PAD]``)."""
        for token in ("<pad>", "[PAD]"):
            if token in self.specials:
                return self._stoi[token]
        raise KeyError(f"this vocabulary has no padding token among {self.specials}")

    @property
    def unk_id(self) -> int:
        """The id of the unknown token (``<unk>`` or ``[UNK]``)."""
        if self.unk_token is None:
            raise KeyError(f"this vocabulary has no unknown token among {self.specials}")
        return self._stoi[self.unk_token]

    @property
    def tokens(self) -> list[str]:
        """All tokens, in id order."""
        return list(self._itos)

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, specials={self.specials})"


def oov_rate(tokens: Sequence[str], known: Container[str]) -> float:
    """The out-of-vocabulary rate: the fraction of ``tokens`` not in ``known``.

    ``known`` is any container of tokens: a :class:`Vocab`, a set, a dict.
    """
    tokens = _check_tokens(tokens, "tokens")
    if len(tokens) == 0:
        raise ValueError("tokens is empty: the OOV rate of no tokens is undefined")
    return sum(token not in known for token in tokens) / len(tokens)
