"""4장 Word2Vec, 그다음: fastText's subword vectors and GloVe's objective.

fastText (Bojanowski et al., 2017) gives every word a bag of character n-grams
of ``"<" + word + ">"`` (3 <= n <= 6 by default; ``<`` and ``>`` mark where the
word starts and ends), hashes each n-gram into one of ``bucket`` rows and
represents the word by its n-gram vectors together with its own vector. A word
never seen in training still has n-grams, so it still gets a vector.
:func:`char_ngrams`, :func:`fasttext_hash` and :func:`fasttext_vector` rebuild
what gensim's ``FastText`` does, and :func:`compare_unseen_eojeols` is 4장's
experiment: held-out Korean eojeol, fastText against Word2Vec on eojeol and on
morpheme tokens.

GloVe (Pennington et al., 2014) fits word vectors to the logarithm of a
co-occurrence count matrix ``X`` by weighted least squares,

    J = Σ_{X_ij > 0} f(X_ij) (w_i · w̃_j + b_i + b̃_j - log X_ij)²,
    f(x) = (x / x_max)^α if x < x_max else 1,  x_max = 100, α = 3/4;

:func:`glove_weight` and :func:`glove_loss_and_grads` are the two formulas, and
:func:`pair_weight_shares` shows what f does to the co-occurrence counts
(``course_utils.count_vectors.cooccurrence_matrix``, 3장).

"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse

from course_utils.checks import check_int

__all__ = [
    "PairWeightShares",
    "SubwordConfig",
    "UnseenEojeolComparison",
    "char_ngrams",
    "compare_unseen_eojeols",
    "eojeol_morphemes",
    "fasttext_hash",
    "fasttext_vector",
    "glove_loss_and_grads",
    "glove_weight",
    "ngram_buckets",
    "pair_weight_shares",
    "split_eojeols",
]


def _check_ngram_range(min_n: int, max_n: int) -> None:
    for name, value in (("min_n", min_n), ("max_n", max_n)):
        check_int(value, name)
    if max_n < min_n:
        raise ValueError(f"max_n must be >= min_n, got min_n={min_n}, max_n={max_n}")


def _check_word(word: str) -> str:
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    return word


def char_ngrams(word: str, min_n: int = 3, max_n: int = 6) -> list[str]:
    """fastText's character n-grams of ``"<" + word + ">"``, in fastText's order.

    Every substring of length ``min_n`` to ``max_n``, by start position and then
    by length. A lone boundary mark (``"<"`` or ``">"`` when ``min_n`` is 1) is
    not an n-gram. The whole ``"<word>"`` is one when it is short enough.
    """
    _check_ngram_range(min_n, max_n)
    marked = "<" + _check_word(word) + ">"
    ngrams = []
    for start in range(len(marked)):
        for n in range(min_n, min(max_n, len(marked) - start) + 1):
            if n == 1 and start in (0, len(marked) - 1):
                continue  # "<" or ">" alone says nothing about the word
            ngrams.append(marked[start : start + n])
    return ngrams


def fasttext_hash(ngram: str) -> int:
    """The 32-bit FNV-1a hash fastText gives an n-gram's UTF-8 bytes.

    fastText's C++ reads each byte as a *signed* char before the XOR, so a byte
    of 0x80 or more (every byte of a Hangul syllable) is sign-extended to 32
    bits first. gensim copies this; a textbook FNV-1a gives other buckets.
    """
    h = 2166136261
    for byte in _check_word(ngram).encode("utf-8"):
        signed = byte - 256 if byte >= 128 else byte  # int8_t(byte)
        h = (h ^ (signed & 0xFFFFFFFF)) * 16777619 & 0xFFFFFFFF
    return h


def ngram_buckets(word: str, bucket: int, min_n: int = 3, max_n: int = 6) -> list[int]:
    """The rows of the n-gram table that ``word``'s n-grams hash to."""
    check_int(bucket, "bucket")
    return [fasttext_hash(ngram) % bucket for ngram in char_ngrams(word, min_n, max_n)]


def fasttext_vector(
    word: str,
    ngram_vectors: np.ndarray,
    min_n: int = 3,
    max_n: int = 6,
    word_vector: np.ndarray | None = None,
) -> np.ndarray:
    """A word's fastText vector: the mean of its n-gram rows (and its own vector).

    ``ngram_vectors`` is the hashed n-gram table ``(bucket, D)`` (gensim's
    ``wv.vectors_ngrams``). A word in the vocabulary passes its own trained
    vector ``(D,)`` as ``word_vector``; a word never seen has only its n-grams.
    The paper writes the sum; fastText and gensim take the mean, which points
    the same way.
    """
    table = np.asarray(ngram_vectors)
    if table.ndim != 2:
        raise ValueError(f"ngram_vectors must be (bucket, D), got shape {table.shape}")
    rows = [table[b] for b in ngram_buckets(word, table.shape[0], min_n, max_n)]  # each (D,)
    if word_vector is not None:
        own = np.asarray(word_vector)
        if own.shape != (table.shape[1],):
            raise ValueError(f"word_vector must be (D,) = ({table.shape[1]},), got {own.shape}")
        rows.append(own)
    if not rows:
        raise ValueError(f"{word!r} has no n-grams of length {min_n} to {max_n}")
    return np.mean(rows, axis=0)  # (D,)


# --- 4장's experiment: held-out eojeol, fastText against Word2Vec -------------------

_EOJEOL = re.compile(r"[가-힣A-Za-z0-9]+")


def split_eojeols(line: str) -> list[str]:
    """A line's eojeol without punctuation: the runs of Hangul, Latin letters and digits."""
    return _EOJEOL.findall(_check_word(line))


@dataclass(frozen=True)
class SubwordConfig:
    """Settings shared by the three models of :func:`compare_unseen_eojeols`."""

    vector_size: int = 50  # D
    window: int = 5
    min_count: int = 1  # 1: a word has a vector exactly when training saw it
    epochs: int = 30  # a small corpus needs many passes
    min_n: int = 3  # fastText's n-gram lengths (gensim's defaults)
    max_n: int = 6
    bucket: int = 100_000  # n-gram table rows (gensim: 2,000,000); this corpus has ~22,000 n-grams
    seed: int = 1

    def __post_init__(self) -> None:
        for name in ("vector_size", "window", "min_count", "epochs", "bucket"):
            value = getattr(self, name)
            check_int(value, name)
        _check_ngram_range(self.min_n, self.max_n)


@dataclass
class UnseenEojeolComparison:
    """What three models trained on the same lines do with held-out eojeol."""

    fasttext: Any  # gensim FastText on training eojeol
    eojeol_word2vec: Any  # gensim Word2Vec on training eojeol
    morpheme_word2vec: Any  # gensim Word2Vec on training morphemes
    held_out_tokens: int  # eojeol tokens in the held-out lines
    unseen: list[str]  # held-out eojeol types training never saw, in order of appearance
    unseen_tokens: int  # held-out tokens of those types
    covered_tokens: dict[str, int]  # model name → held-out tokens it has a vector for
    stems: dict[str, str]  # unseen eojeol → its first morpheme, where the eojeol starts with it
    stem_cosine: float  # mean over unseen u of cos(fastText(u), fastText(stem of u))
    other_stem_cosine: float  # mean over u of cos(fastText(u), fastText(another stem))


def _gensim_settings(config: SubwordConfig) -> dict[str, Any]:
    # skip-gram with negative sampling as in the paper, one worker so that a seed fixes the result
    return {
        "vector_size": config.vector_size,
        "window": config.window,
        "min_count": config.min_count,
        "epochs": config.epochs,
        "seed": config.seed,
        "sg": 1,
        "workers": 1,
    }


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def eojeol_morphemes(line: str, morphemes: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Each eojeol of ``line`` (:func:`split_eojeols`) with the morphemes that fall inside it.

    ``morphemes`` is the line's analysis in order, each a piece of the line as
    written (Okt's ``morphs``); a morpheme the line does not contain is skipped.
    """
    spans = []  # (start, end, morpheme) in the line
    position = 0
    for morpheme in morphemes:
        start = line.find(morpheme, position)
        if start >= 0:
            spans.append((start, start + len(morpheme), morpheme))
            position = start + len(morpheme)
    return [
        (match.group(), [m for s, e, m in spans if s < match.end() and e > match.start()])
        for match in _EOJEOL.finditer(_check_word(line))
    ]


def compare_unseen_eojeols(
    lines: Sequence[str],
    morpheme_lines: Sequence[Sequence[str]],
    config: SubwordConfig | None = None,
    held_out_fraction: float = 0.2,
) -> UnseenEojeolComparison:
    """Train fastText and two Word2Vecs on the training lines; count who covers the held-out eojeol.

    ``morpheme_lines[i]`` is ``lines[i]`` split into morphemes (4장 passes its
    Okt analysis). Lines are split as in 2장
    (:func:`course_utils.datasets.split_lines`). A held-out token counts as
    covered by the eojeol Word2Vec when it is in its vocabulary, by the
    morpheme Word2Vec when all its morphemes are, and by fastText when at
    least one of its n-grams was trained.
    """
    from gensim.models import FastText
    from gensim.models import Word2Vec as GensimWord2Vec

    from course_utils.datasets import split_lines

    config = config or SubwordConfig()
    if isinstance(lines, str) or len(lines) != len(morpheme_lines):
        raise ValueError(
            "lines must be a list of str and morpheme_lines one morpheme list per line: "
            f"got {type(lines).__name__} and {len(morpheme_lines)} morpheme lists"
        )
    pairs = list(zip(lines, morpheme_lines, strict=True))
    train, held_out = split_lines(pairs, held_out_fraction)
    train_eojeols = [split_eojeols(line) for line, _ in train]
    train_morphemes = [list(morphemes) for _, morphemes in train]
    held_out_tokens = [token for line, ms in held_out for token in eojeol_morphemes(line, ms)]

    settings = _gensim_settings(config)
    fasttext = FastText(
        train_eojeols, min_n=config.min_n, max_n=config.max_n, bucket=config.bucket, **settings
    )
    eojeol_model = GensimWord2Vec(train_eojeols, **settings)
    morpheme_model = GensimWord2Vec(train_morphemes, **settings)

    trained_buckets = {int(b) for buckets in fasttext.wv.buckets_word for b in buckets}
    ngram_range = (config.min_n, config.max_n)
    covers = {
        "eojeol_word2vec": lambda word, _: word in eojeol_model.wv.key_to_index,
        "morpheme_word2vec": lambda _, parts: (
            bool(parts) and all(m in morpheme_model.wv.key_to_index for m in parts)
        ),
        "fasttext": lambda word, _: any(
            b in trained_buckets for b in ngram_buckets(word, config.bucket, *ngram_range)
        ),
    }
    covered = {
        name: sum(bool(covers_token(word, parts)) for word, parts in held_out_tokens)
        for name, covers_token in covers.items()
    }

    first_analysis: dict[str, list[str]] = {}
    for word, parts in held_out_tokens:
        first_analysis.setdefault(word, parts)
    unseen = [w for w in first_analysis if w not in eojeol_model.wv.key_to_index]
    stems = {}
    for word in unseen:
        parts = first_analysis[word]
        if len(parts) >= 2 and len(parts[0]) >= 2 and word.startswith(parts[0]):
            stems[word] = parts[0]  # 첫 형태소(대개 명사) + 조사·어미로 나뉘는 어절
    distinct = sorted(set(stems.values()))
    if len(distinct) < 2:
        raise ValueError("fewer than two unseen eojeol split into a stem and an ending")
    stem_vectors = _unit(np.stack([fasttext.wv[s] for s in distinct]))  # (S, D)
    unseen_vectors = _unit(np.stack([fasttext.wv[w] for w in stems]))  # (U, D)
    cosines = unseen_vectors @ stem_vectors.T  # (U, S)
    own = np.array([distinct.index(s) for s in stems.values()])  # (U,)
    own_cosine = cosines[np.arange(len(own)), own]  # (U,)
    other_cosine = (cosines.sum(axis=1) - own_cosine) / (len(distinct) - 1)  # (U,)

    return UnseenEojeolComparison(
        fasttext=fasttext,
        eojeol_word2vec=eojeol_model,
        morpheme_word2vec=morpheme_model,
        held_out_tokens=len(held_out_tokens),
        unseen=unseen,
        unseen_tokens=sum(word not in eojeol_model.wv.key_to_index for word, _ in held_out_tokens),
        covered_tokens=covered,
        stems=stems,
        stem_cosine=float(own_cosine.mean()),
        other_stem_cosine=float(other_cosine.mean()),
    )


# --- GloVe -------------------------------------------------------------------------


def glove_weight(counts: np.ndarray, x_max: float = 100.0, alpha: float = 0.75) -> np.ndarray:
    """GloVe's weight f(x) = (x / x_max)^α below x_max and 1 from x_max on; f(0) = 0."""
    x = np.asarray(counts, dtype=float)
    if np.any(x < 0) or not np.all(np.isfinite(x)):
        raise ValueError("counts must be finite and >= 0")
    if not x_max > 0 or not alpha > 0:
        raise ValueError(f"x_max and alpha must be > 0, got x_max={x_max}, alpha={alpha}")
    return np.where(x < x_max, (x / x_max) ** alpha, 1.0)


def glove_loss_and_grads(
    W: np.ndarray,
    W_context: np.ndarray,
    b: np.ndarray,
    b_context: np.ndarray,
    X: np.ndarray,
    x_max: float = 100.0,
    alpha: float = 0.75,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GloVe's J and its gradients with respect to ``W``, ``W_context``, ``b``, ``b_context``.

    ``W`` and ``W_context`` are ``(V, D)``, ``b`` and ``b_context`` ``(V,)``, the
    counts ``X`` ``(V, V)``. The sum runs over the nonzero counts only: f(0) = 0,
    and log 0 does not exist.
    """
    W, W_context = np.asarray(W, dtype=float), np.asarray(W_context, dtype=float)
    b, b_context, X = (np.asarray(a, dtype=float) for a in (b, b_context, X))
    if W.ndim != 2 or W_context.shape != W.shape:
        raise ValueError(
            f"W and W_context must both be (V, D), got {W.shape} and {W_context.shape}"
        )
    V = W.shape[0]
    if b.shape != (V,) or b_context.shape != (V,) or X.shape != (V, V):
        raise ValueError(
            f"with V = {V}: b and b_context must be (V,), X (V, V); "
            f"got {b.shape}, {b_context.shape}, {X.shape}"
        )
    rows, cols = np.nonzero(X)  # (N,), (N,): the pairs seen together
    x = X[rows, cols]  # (N,)
    weight = glove_weight(x, x_max, alpha)  # (N,)
    residual = (W[rows] * W_context[cols]).sum(axis=1) + b[rows] + b_context[cols] - np.log(x)
    loss = float(np.sum(weight * residual**2))

    g = 2 * weight * residual  # (N,): ∂J/∂(w_i · w̃_j + b_i + b̃_j)
    grad_W, grad_W_context = np.zeros_like(W), np.zeros_like(W_context)
    np.add.at(grad_W, rows, g[:, None] * W_context[cols])  # (V, D)
    np.add.at(grad_W_context, cols, g[:, None] * W[rows])  # (V, D)
    grad_b = np.bincount(rows, weights=g, minlength=V)  # (V,)
    grad_b_context = np.bincount(cols, weights=g, minlength=V)  # (V,)
    return loss, grad_W, grad_W_context, grad_b, grad_b_context


@dataclass
class PairWeightShares:
    """How much of the total weight goes to the rarest and to the most frequent pairs."""

    once: dict[str, float]  # weighting → share of the pairs seen exactly once
    top: dict[str, float]  # weighting → share of the top ``top_fraction`` of pairs by count
    pairs: int  # nonzero cells of X
    top_fraction: float


def pair_weight_shares(
    X: Any, top_fraction: float = 0.01, x_max: float = 100.0, alpha: float = 0.75
) -> PairWeightShares:
    """Shares of the weight when each nonzero count weighs 1, GloVe's f(x), or x itself.

    ``X`` ``(V, V)`` is a dense array or a SciPy sparse matrix of counts.
    """
    if not 0 < top_fraction < 1:
        raise ValueError(f"top_fraction must be in (0, 1), got {top_fraction}")
    counts = X.toarray() if scipy.sparse.issparse(X) else np.asarray(X, dtype=float)
    nonzero = counts[counts > 0].astype(float)  # (N,)
    if nonzero.size == 0:
        raise ValueError("X has no nonzero count")
    top = nonzero >= np.quantile(nonzero, 1 - top_fraction)  # (N,): the most frequent pairs
    weightings = {
        "uniform": np.ones_like(nonzero),
        "glove": glove_weight(nonzero, x_max, alpha),
        "count": nonzero,
    }
    return PairWeightShares(
        once={k: float(w[nonzero == 1].sum() / w.sum()) for k, w in weightings.items()},
        top={k: float(w[top].sum() / w.sum()) for k, w in weightings.items()},
        pairs=int(nonzero.size),
        top_fraction=top_fraction,
    )
