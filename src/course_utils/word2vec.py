"""4장 Word2Vec: skip-gram and CBOW with negative sampling, from scratch in NumPy.

Mikolov et al. (2013a, 2013b). For a centre word ``c`` and a context word ``o``
skip-gram with negative sampling (SGNS) minimises

    L = -log σ(u_o · v_c) - Σ_k log σ(-u_k · v_c),   k = 1..K noise words,

where ``v`` are the input vectors (``W_in``), ``u`` the output vectors
(``W_out``) and the noise words are drawn from the unigram distribution raised
to the power 3/4. CBOW uses the mean of the context's input vectors as ``v``
and predicts the centre word.

The training loop is vectorised: pairs are generated for a chunk of about
50,000 corpus words at a time (so memory stays small whatever the corpus
size), each mini-batch's gradients are computed with array operations and
summed into the tables by one sparse matrix product, and noise words are drawn
in constant time per draw from an alias table; no Python loop runs per word
pair.

The chapter's comparison with gensim lives here too, so that the chapter and
its claim test run the same experiment: :func:`compare_with_gensim` trains
gensim with the same settings and scores both with gensim's own evaluation,
and :func:`time_against_gensim` times one epoch of each, alternating.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse

from course_utils.checks import check_int
from course_utils.count_vectors import keyed_pair_scores
from course_utils.progress import progress

__all__ = [
    "AliasSampler",
    "ArchitectureTiming",
    "GensimComparison",
    "SpeedComparison",
    "VectorScores",
    "Word2Vec",
    "Word2VecConfig",
    "cbow_loss_and_grads",
    "compare_with_gensim",
    "gensim_scores",
    "keep_probability",
    "noise_distribution",
    "scatter_add",
    "sgns_coefficients",
    "sgns_loss_and_grads",
    "time_against_gensim",
    "time_skipgram_and_cbow",
    "train_gensim",
    "train_word2vec",
]


@dataclass
class Word2VecConfig:
    """Hyper-parameters, named as in gensim's ``Word2Vec``."""

    vector_size: int = 100  # D, the embedding dimension
    window: int = 5  # largest distance between centre and context word
    negative: int = 5  # K, noise words per positive pair
    min_count: int = 5  # words seen fewer times are dropped
    sample: float = 1e-3  # subsampling threshold t (0 turns subsampling off)
    ns_exponent: float = 0.75  # noise distribution ∝ count ** ns_exponent
    alpha: float = 0.025  # initial learning rate, decays linearly to min_alpha
    min_alpha: float = 0.0001
    epochs: int = 5
    sg: bool = True  # True: skip-gram, False: CBOW
    batch_size: int = 2048  # positive pairs (or centre words for CBOW) per update
    seed: int = 1

    def __post_init__(self) -> None:
        for name in ("vector_size", "window", "negative", "min_count", "epochs", "batch_size"):
            value = getattr(self, name)
            check_int(value, name)
        if not 0 <= self.sample < 1:
            raise ValueError(f"sample must be in [0, 1), got {self.sample}")
        if not 0 < self.min_alpha <= self.alpha:
            raise ValueError(f"need 0 < min_alpha <= alpha, got {self.min_alpha}, {self.alpha}")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # σ(x) = (1 + tanh(x/2)) / 2: one vectorised call, and it never overflows.
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    # log σ(x) = min(x, 0) − log(1 + e^{−|x|}): never overflows, and several
    # times faster than np.logaddexp(0, −x) on float32.
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def sgns_coefficients(
    v_c: np.ndarray,
    u_o: np.ndarray,
    u_neg: np.ndarray,
    neg_mask: np.ndarray | None = None,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The loss, ``∂L/∂v_c`` and the two score derivatives the other gradients are made of.

    ``∂L/∂u_o = g_pos · v_c`` and ``∂L/∂u_k = g_neg[k] · v_c``, so the training
    loop never needs the ``(B, K, D)`` gradient itself. Returns
    ``(loss, ∂L/∂v_c (B, D), g_pos (B,), g_neg (B, K))``.
    """
    noise_agrees = u_neg.ndim == 3 and u_neg.shape[::2] == v_c.shape
    if v_c.ndim != 2 or u_o.shape != v_c.shape or not noise_agrees:
        got = f"{v_c.shape}, {u_o.shape}, {u_neg.shape}"
        raise ValueError(f"expected v_c (B, D), u_o (B, D), u_neg (B, K, D); got {got}")
    pos_score = np.einsum("bd,bd->b", v_c, u_o)  # (B,)
    neg_score = np.einsum("bkd,bd->bk", u_neg, v_c)  # (B, K)
    # Noise draws that hit the true word count for nothing (mask 0), as in the C code.
    mask = np.ones(neg_score.shape, dtype=bool) if neg_mask is None else neg_mask
    weight = mask.astype(neg_score.dtype)  # (B, K)
    loss = -(_log_sigmoid(pos_score).sum() + (weight * _log_sigmoid(-neg_score)).sum())
    g_pos = _sigmoid(pos_score) - 1.0  # ∂L/∂pos_score  (B,)
    g_neg = weight * _sigmoid(neg_score)  # ∂L/∂neg_score  (B, K)
    grad_v = g_pos[:, None] * u_o + (g_neg[:, None, :] @ u_neg)[:, 0]  # (B, D)
    return float(loss), grad_v, g_pos, g_neg


def sgns_loss_and_grads(
    v_c: np.ndarray,
    u_o: np.ndarray,
    u_neg: np.ndarray,
    neg_mask: np.ndarray | None = None,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Skip-gram negative-sampling loss, summed over the batch, and its gradients.

    ``v_c`` ``(B, D)`` centre input vectors, ``u_o`` ``(B, D)`` context output
    vectors, ``u_neg`` ``(B, K, D)`` noise output vectors; ``neg_mask`` ``(B, K)``
    zeroes noise draws that hit the true word, as the word2vec C code skips them.
    Returns ``(loss, ∂L/∂v_c (B, D), ∂L/∂u_o (B, D), ∂L/∂u_neg (B, K, D))``.
    """
    loss, grad_v, g_pos, g_neg = sgns_coefficients(v_c, u_o, u_neg, neg_mask)
    grad_u_o = g_pos[:, None] * v_c  # (B, D)
    grad_u_neg = g_neg[:, :, None] * v_c[:, None, :]  # (B, K, D)
    return loss, grad_v, grad_u_o, grad_u_neg


def _context_mean(v_context: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if v_context.ndim != 3 or mask.shape != v_context.shape[:2]:
        got = f"{v_context.shape}, {mask.shape}"
        raise ValueError(f"expected v_context (B, C, D) and mask (B, C); got {got}")
    counts = mask.sum(axis=1, keepdims=True)  # (B, 1)
    if np.any(counts == 0):
        raise ValueError("every CBOW example needs at least one context word")
    h = np.einsum("bcd,bc->bd", v_context, mask) / counts  # (B, D)
    return h, counts


def cbow_loss_and_grads(
    v_context: np.ndarray,
    mask: np.ndarray,
    u_o: np.ndarray,
    u_neg: np.ndarray,
    neg_mask: np.ndarray | None = None,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """CBOW with negative sampling: the context mean ``h`` predicts the centre word.

    ``v_context`` ``(B, C, D)`` input vectors of up to ``C`` context words,
    ``mask`` ``(B, C)`` 1 where a context slot is used, ``u_o`` ``(B, D)`` the
    centre word's output vector, ``u_neg`` ``(B, K, D)``. Returns
    ``(loss, ∂L/∂v_context (B, C, D), ∂L/∂u_o, ∂L/∂u_neg)``.
    """
    h, counts = _context_mean(v_context, mask)
    loss, grad_h, grad_u_o, grad_u_neg = sgns_loss_and_grads(h, u_o, u_neg, neg_mask)
    grad_context = (grad_h / counts)[:, None, :] * mask[:, :, None]  # (B, C, D)
    return loss, grad_context, grad_u_o, grad_u_neg


def noise_distribution(counts: np.ndarray, exponent: float = 0.75) -> np.ndarray:
    """``P_n(w) ∝ count(w) ** exponent``: flattens the unigram distribution."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or counts.size == 0 or np.any(counts <= 0):
        raise ValueError("counts must be a non-empty 1-D array of positive counts")
    weights = counts**exponent
    return weights / weights.sum()


def keep_probability(counts: np.ndarray, sample: float) -> np.ndarray:
    """Probability of keeping each occurrence of a word under subsampling.

    The formula of the reference word2vec C code (and gensim):
    ``(sqrt(f / t) + 1) · t / f`` with ``f`` the word's share of the corpus and
    ``t = sample``, capped at 1. The paper's ``1 - sqrt(t / f)`` is the
    discard probability of an earlier version.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if sample == 0:
        return np.ones_like(counts)
    if not 0 < sample < 1:
        raise ValueError(f"sample must be in [0, 1), got {sample}")
    frequency = counts / counts.sum()
    return np.minimum(1.0, (np.sqrt(frequency / sample) + 1.0) * sample / frequency)


def _unique_with_inverse(rows: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, return_inverse=True)`` for ids in ``[0, size)``, without sorting."""
    if size > 64 * rows.size:  # a marker array as long as the table would cost more than a sort
        unique, inverse = np.unique(rows, return_inverse=True)
        return unique, inverse.reshape(-1)
    seen = np.zeros(size, dtype=bool)
    seen[rows] = True
    unique = np.flatnonzero(seen)  # (U,) sorted
    position = np.empty(size, dtype=np.intp)
    position[unique] = np.arange(unique.size)
    return unique, position[rows]


def scatter_add(
    table: np.ndarray,
    rows: np.ndarray,
    source: np.ndarray,
    weights: np.ndarray | None = None,
    columns: np.ndarray | None = None,
) -> None:
    """``table[rows[r]] += weights[r] · source[columns[r]]`` for every ``r``, repeats summed.

    With the defaults (weights 1, ``columns = arange``) this is
    ``np.add.at(table, rows, source)``. It is computed as one sparse
    (unique rows × source rows) matrix times ``source``, which is many times
    faster than ``np.add.at`` and lets the ``(B, K, D)`` gradient of the noise
    vectors stay implicit: it is ``g_neg[b, k] · v_c[b]``. When ``columns`` is
    already in order (as the training loop lays it out) the sparse matrix is
    assembled column by column without any sort.
    """
    rows = np.asarray(rows).reshape(-1)
    n = rows.size
    columns = np.arange(n) if columns is None else np.asarray(columns).reshape(-1)
    values = np.ones(n, dtype=source.dtype) if weights is None else np.asarray(weights).reshape(-1)
    if table.ndim != 2 or source.ndim != 2 or table.shape[1] != source.shape[1]:
        raise ValueError(
            f"expected table (V, D) and source (N, D); got {table.shape}, {source.shape}"
        )
    if columns.size != n or values.size != n:
        raise ValueError(
            f"rows, columns and weights need one entry each; got {n}, {columns.size}, {values.size}"
        )
    if n == 0:
        return
    if rows.min() < 0 or rows.max() >= table.shape[0]:
        raise ValueError(f"rows must lie in [0, {table.shape[0]})")
    if columns.min() < 0 or columns.max() >= source.shape[0]:
        raise ValueError(f"columns must lie in [0, {source.shape[0]})")
    unique, inverse = _unique_with_inverse(rows, table.shape[0])
    if np.any(columns[1:] < columns[:-1]):
        order = np.argsort(columns, kind="stable")
        columns, inverse, values = columns[order], inverse[order], values[order]
    starts = np.zeros(source.shape[0] + 1, dtype=np.int64)  # where each column's entries begin
    np.cumsum(np.bincount(columns, minlength=source.shape[0]), out=starts[1:])
    selector = scipy.sparse.csc_matrix(
        (values.astype(source.dtype, copy=False), inverse, starts),
        shape=(unique.size, source.shape[0]),
    )  # (U, N)
    # np.take gathers rows faster than fancy indexing does.
    table[unique] = np.take(table, unique, axis=0) + selector @ source  # (U, D)


class AliasSampler:
    """Draws ids from a fixed distribution in constant time per draw (Walker's alias method).

    Each id ``i`` owns one slot of equal width: a draw picks a slot uniformly,
    then keeps ``i`` with probability ``keep[i]`` and otherwise takes the slot's
    ``alias[i]``. The table is built once in ``O(V)`` (Vose's construction);
    a binary search in the cumulative distribution costs ``O(log V)`` per draw.
    """

    def __init__(self, probabilities: np.ndarray):
        p = np.asarray(probabilities, dtype=np.float64)
        if p.ndim != 1 or p.size == 0 or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
            raise ValueError("probabilities must be a non-empty 1-D array of p >= 0 summing to 1")
        n = p.size
        scaled = p * n  # slot mass of each id; a slot holds exactly 1
        keep = np.ones(n)
        alias = np.arange(n)
        small = [i for i in range(n) if scaled[i] < 1.0]
        large = [i for i in range(n) if scaled[i] >= 1.0]
        while small and large:
            under, over = small.pop(), large[-1]
            keep[under], alias[under] = scaled[under], over  # the rest of the slot goes to over
            scaled[over] -= 1.0 - scaled[under]
            if scaled[over] < 1.0:
                small.append(large.pop())
        self.keep = keep  # (V,) leftovers of either list are full slots (rounding)
        self.alias = alias  # (V,)

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Ids of the given shape, independent draws."""
        # One uniform number per draw: its integer part picks the slot and its
        # fractional part, uniform and independent of it, decides keep or alias.
        position = rng.random(shape) * self.keep.size
        slot = position.astype(np.intp)
        return np.where(position - slot < self.keep[slot], slot, self.alias[slot])


@dataclass
class TrainingLog:
    """Per-epoch mean loss, words/second and the number of words trained."""

    loss: list[float] = field(default_factory=list)
    words_per_second: list[float] = field(default_factory=list)
    words: int = 0


class Word2Vec:
    """Skip-gram or CBOW with negative sampling, trained with vectorised mini-batches.

    >>> model = Word2Vec(sentences, Word2VecConfig(vector_size=50, min_count=2))
    >>> model.train()
    >>> model.most_similar("king", topn=5)
    """

    CHUNK_WORDS = 50_000  # corpus words whose pairs are made and shuffled together

    def __init__(self, sentences: Iterable[Sequence[str]], config: Word2VecConfig | None = None):
        self.config = config if config is not None else Word2VecConfig()
        if isinstance(sentences, str):
            raise TypeError("sentences must be tokenized sentences (list[list[str]]), not one str")
        sentences = [list(s) for s in sentences]
        for i, sentence in enumerate(sentences):
            if any(not isinstance(token, str) for token in sentence):
                raise TypeError(f"sentences[{i}] must contain only str tokens")
        counts = Counter(token for sentence in sentences for token in sentence)
        if not counts:
            raise ValueError("the corpus is empty: Word2Vec needs at least one sentence with words")
        # Most frequent first; ties keep the order of first appearance (as gensim does).
        kept = [w for w, c in counts.most_common() if c >= self.config.min_count]
        if not kept:
            raise ValueError(f"no word occurs at least min_count={self.config.min_count} times")
        self.index_to_key: list[str] = kept
        self.key_to_index: dict[str, int] = {w: i for i, w in enumerate(kept)}
        self.counts = np.array([counts[w] for w in kept], dtype=np.int64)
        ids = [np.array([self.key_to_index[t] for t in s if t in self.key_to_index], dtype=np.int32)
               for s in sentences]  # fmt: skip
        # The corpus as two flat int32 arrays: word ids and the sentence each word is in.
        self._ids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int32)
        self._sentence = np.repeat(np.arange(len(ids), dtype=np.int32), [len(x) for x in ids])
        size, dim = len(kept), self.config.vector_size
        rng = np.random.default_rng(self.config.seed)
        # gensim's initialisation: small uniform input vectors, zero output vectors.
        self.W_in = ((rng.random((size, dim)) - 0.5) / dim).astype(np.float32)  # (V, D)
        self.W_out = np.zeros((size, dim), dtype=np.float32)  # (V, D)
        self._noise = AliasSampler(noise_distribution(self.counts, self.config.ns_exponent))
        self._keep = keep_probability(self.counts, self.config.sample)
        self._rng = rng
        self.log = TrainingLog()

    # -- data -----------------------------------------------------------------

    def _subsample(self) -> tuple[np.ndarray, np.ndarray]:
        keep = self._rng.random(self._ids.size) < self._keep[self._ids]
        return self._ids[keep], self._sentence[keep]

    def _reduced_windows(self, n: int) -> np.ndarray:
        # As in the C code, each centre word uses a window drawn from 1..window.
        return self._rng.integers(1, self.config.window + 1, size=n)

    def skipgram_pairs(
        self, ids: np.ndarray, sentence: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """All ``(centre, context)`` id pairs of ``ids`` (one chunk of the corpus), shuffled.

        ``sentence`` gives each position's sentence number: pairs never cross
        sentences. Returns ``(P,)`` centres and ``(P,)`` contexts.
        """
        window = self._reduced_windows(ids.size)
        centres, contexts = [], []
        for d in range(1, self.config.window + 1):
            if d >= ids.size:
                break
            right = np.nonzero((window[:-d] >= d) & (sentence[:-d] == sentence[d:]))[0]
            left = np.nonzero((window[d:] >= d) & (sentence[d:] == sentence[:-d]))[0] + d
            centres += [ids[right], ids[left]]
            contexts += [ids[right + d], ids[left - d]]
        if not centres:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        order = self._rng.permutation(sum(len(c) for c in centres))
        return np.concatenate(centres)[order], np.concatenate(contexts)[order]

    def cbow_examples(
        self, ids: np.ndarray, sentence: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Centre ids ``(N,)``, context ids ``(N, 2·window)`` and their mask, shuffled."""
        n, width = ids.size, self.config.window
        window = self._reduced_windows(n)
        context = np.zeros((n, 2 * width), dtype=np.int64)
        mask = np.zeros((n, 2 * width), dtype=np.float32)
        positions = np.arange(n)
        for d in range(1, width + 1):
            for column, source in ((width - d, positions - d), (width + d - 1, positions + d)):
                inside = (source >= 0) & (source < n)
                valid = inside.copy()
                valid[inside] &= (window[inside] >= d) & (
                    sentence[source[inside]] == sentence[inside]
                )
                context[valid, column] = ids[source[valid]]
                mask[valid, column] = 1.0
        has_context = mask.sum(axis=1) > 0
        order = self._rng.permutation(int(has_context.sum()))
        return ids[has_context][order], context[has_context][order], mask[has_context][order]

    def _negatives(self, shape: tuple[int, int]) -> np.ndarray:
        return self._noise.draw(self._rng, shape)

    def _chunks(self, sentence: np.ndarray) -> list[tuple[int, int]]:
        """``[start, stop)`` pieces of about ``CHUNK_WORDS`` words, cut where a sentence starts.

        Pairs are made and shuffled one piece at a time, so memory does not grow
        with the corpus. A sentence longer than a piece is cut inside; the few
        pairs that straddle such a cut are lost, as gensim loses them when it
        splits texts longer than 10,000 words.
        """
        n, size = sentence.size, self.CHUNK_WORDS
        sentence_starts = np.flatnonzero(np.diff(sentence)) + 1
        cuts = [0]
        while cuts[-1] + size < n:
            target = cuts[-1] + size
            after = np.searchsorted(sentence_starts, target)
            near = after < sentence_starts.size and sentence_starts[after] < target + size
            cuts.append(int(sentence_starts[after]) if near else target)
        cuts.append(n)
        return list(itertools.pairwise(cuts))

    # -- training -------------------------------------------------------------

    def train(self, show_progress: bool = True) -> TrainingLog:
        """Run ``config.epochs`` passes; return per-epoch loss and throughput."""
        config = self.config
        corpus = self._ids.size  # words per epoch before subsampling, as gensim counts them
        total_words = corpus * config.epochs
        if total_words == 0:
            raise ValueError("no word of the corpus survives min_count: nothing to train on")
        for epoch in range(config.epochs):
            start = time.perf_counter()
            ids, sentence = self._subsample()
            epoch_loss, examples = 0.0, 0
            chunks: Iterable[tuple[int, int]] = self._chunks(sentence)
            if show_progress:
                chunks = progress(chunks, f"epoch {epoch + 1}/{config.epochs}")
            # Overflow only happens when training diverges, which is reported below.
            with np.errstate(over="ignore", invalid="ignore"):
                for first_word, last_word in chunks:
                    piece = ids[first_word:last_word], sentence[first_word:last_word]
                    if config.sg:
                        centres, contexts = self.skipgram_pairs(*piece)
                    else:
                        centres, contexts, mask = self.cbow_examples(*piece)
                    for first in range(0, centres.size, config.batch_size):
                        last = min(first + config.batch_size, centres.size)
                        # Linear decay by the share of the corpus already seen.
                        done = first_word + (last_word - first_word) * last / centres.size
                        seen = corpus * (epoch + done / max(ids.size, 1))
                        lr = config.alpha - (config.alpha - config.min_alpha) * seen / total_words
                        batch = slice(first, last)
                        if config.sg:
                            epoch_loss += self._sgns_step(centres[batch], contexts[batch], lr)
                        else:
                            epoch_loss += self._cbow_step(
                                centres[batch], contexts[batch], mask[batch], lr
                            )
                    examples += centres.size
            if not (
                np.isfinite(epoch_loss)
                and np.isfinite(self.W_in).all()
                and np.isfinite(self.W_out).all()
            ):
                raise FloatingPointError(
                    f"training diverged in epoch {epoch + 1} (loss {epoch_loss}): "
                    f"lower alpha or batch_size (now {config.alpha}, {config.batch_size})"
                )
            seconds = time.perf_counter() - start
            self.log.loss.append(epoch_loss / max(examples, 1))
            self.log.words_per_second.append(corpus / seconds)
            self.log.words += int(corpus)
        return self.log

    def _sgns_step(self, centres: np.ndarray, contexts: np.ndarray, lr: float) -> float:
        batch, k = centres.size, self.config.negative
        # Row b: example b's true word, then its K noise words.
        outputs = np.column_stack([contexts, self._negatives((batch, k))])  # (B, 1 + K)
        v_c = np.take(self.W_in, centres, axis=0)  # (B, D)
        u = np.take(self.W_out, outputs, axis=0)  # (B, 1 + K, D), one gather for both
        loss, grad_v, g_pos, g_neg = sgns_coefficients(
            v_c, u[:, 0], u[:, 1:], outputs[:, 1:] != contexts[:, None]
        )
        scatter_add(self.W_in, centres, -lr * grad_v)
        # Every output-vector gradient is a multiple of v_c: ∂L/∂u = g · v_c.
        self._add_to_outputs(outputs, g_pos, g_neg, v_c, lr)
        return loss

    def _add_to_outputs(
        self, outputs: np.ndarray, g_pos: np.ndarray, g_neg: np.ndarray, source: np.ndarray,
        lr: float,
    ) -> None:  # fmt: skip
        # outputs (B, 1 + K) lists row b's words in the column order scatter_add wants.
        batch, width = outputs.shape
        weights = -lr * np.column_stack([g_pos, g_neg])  # (B, 1 + K)
        columns = np.repeat(np.arange(batch), width)  # (B·(1 + K),)
        scatter_add(self.W_out, outputs, source, weights, columns)

    def _cbow_step(
        self, centres: np.ndarray, context: np.ndarray, mask: np.ndarray, lr: float
    ) -> float:
        batch, k = centres.size, self.config.negative
        outputs = np.column_stack([centres, self._negatives((batch, k))])  # (B, 1 + K)
        h, counts = _context_mean(np.take(self.W_in, context, axis=0), mask)  # (B, D), (B, 1)
        u = np.take(self.W_out, outputs, axis=0)  # (B, 1 + K, D)
        loss, grad_h, g_pos, g_neg = sgns_coefficients(
            h, u[:, 0], u[:, 1:], outputs[:, 1:] != centres[:, None]
        )
        # Each used context word gets grad_h / (number of context words).
        used_b, used_c = np.nonzero(mask)
        share = (-lr / counts[:, 0])[used_b]
        scatter_add(self.W_in, context[used_b, used_c], grad_h, share, used_b)
        self._add_to_outputs(outputs, g_pos, g_neg, h, lr)
        return loss

    # -- using the vectors ----------------------------------------------------

    def _index(self, word: str) -> int:
        if not isinstance(word, str):
            raise TypeError(f"word must be a str, got {type(word).__name__}")
        index = self.key_to_index.get(word)
        if index is None:
            raise KeyError(
                f"{word!r} is not in the vocabulary ({len(self.index_to_key)} words with "
                f"count >= min_count={self.config.min_count})"
            )
        return index

    def __contains__(self, word: object) -> bool:
        return word in self.key_to_index

    def vector(self, word: str) -> np.ndarray:
        """The input vector of ``word`` ``(D,)``."""
        return self.W_in[self._index(word)]

    def _unit_vectors(self) -> np.ndarray:
        norms = np.linalg.norm(self.W_in, axis=1, keepdims=True)
        return self.W_in / np.maximum(norms, 1e-12)

    def similarity(self, first: str, second: str) -> float:
        """Cosine similarity of two words' vectors."""
        a, b = self.vector(first), self.vector(second)
        return float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12))

    def most_similar(
        self, positive: str | Sequence[str], negative: Sequence[str] = (), topn: int = 10
    ) -> list[tuple[str, float]]:
        """Nearest words by cosine to ``Σ positive − Σ negative`` (3CosAdd), inputs excluded."""
        positive = [positive] if isinstance(positive, str) else list(positive)
        if not positive:
            raise ValueError("give at least one positive word")
        check_int(topn, "topn")
        unit = self._unit_vectors()
        query = np.zeros(unit.shape[1], dtype=unit.dtype)  # (D,)
        for word in positive:
            query += unit[self._index(word)]
        for word in negative:
            query -= unit[self._index(word)]
        scores = unit @ (query / max(float(np.linalg.norm(query)), 1e-12))  # (V,)
        for word in [*positive, *negative]:
            scores[self.key_to_index[word]] = -np.inf
        order = np.argsort(-scores, kind="stable")[:topn]
        return [(self.index_to_key[i], float(scores[i])) for i in order]

    def analogy(self, a: str, b: str, c: str) -> str:
        """``a : b :: c : ?`` by 3CosAdd: the word nearest to ``b − a + c``."""
        return self.most_similar(positive=[b, c], negative=[a], topn=1)[0][0]

    def to_keyed_vectors(self) -> Any:
        """The vectors as gensim ``KeyedVectors``, to evaluate with gensim's own code."""
        from gensim.models import KeyedVectors

        vectors = KeyedVectors(self.config.vector_size)
        vectors.add_vectors(self.index_to_key, self.W_in.copy())
        return vectors


# -- beside gensim -------------------------------------------------------------


@dataclass
class VectorScores:
    """One set of word vectors scored on the three evaluation sets that gensim ships."""

    ws353_rho: float  # Spearman ρ with WordSim353's human relatedness scores
    ws353_pairs: int  # pairs whose two words are both in the vocabulary
    simlex_rho: float  # Spearman ρ with SimLex-999's human similarity scores
    simlex_pairs: int
    analogy_accuracy: float  # Google analogies answered right by 3CosAdd
    analogy_questions: int  # questions whose four words are all in the vocabulary


def gensim_scores(vectors: Any) -> VectorScores:
    """Score gensim ``KeyedVectors`` with gensim's own evaluation functions and data.

    The word pairs are scored as 3장 scores its count-based vectors
    (``course_utils.count_vectors.keyed_pair_scores``); the analogies are added here.
    """
    from gensim.test.utils import datapath

    pairs = keyed_pair_scores(vectors)
    accuracy, sections = vectors.evaluate_word_analogies(datapath("questions-words.txt"))
    total = next(s for s in sections if s["section"] == "Total accuracy")
    return VectorScores(
        ws353_rho=pairs.ws353_rho,
        ws353_pairs=pairs.ws353_pairs,
        simlex_rho=pairs.simlex_rho,
        simlex_pairs=pairs.simlex_pairs,
        analogy_accuracy=float(accuracy),
        analogy_questions=len(total["correct"]) + len(total["incorrect"]),
    )


def _gensim_settings(config: Word2VecConfig) -> dict[str, Any]:
    """``config`` in gensim's names: one worker, negative sampling, no hierarchical softmax."""
    names = ("vector_size", "window", "negative", "min_count", "sample", "ns_exponent", "alpha",
             "min_alpha", "epochs", "seed")  # fmt: skip
    return {name: getattr(config, name) for name in names} | {
        "sg": int(config.sg),
        "hs": 0,
        "workers": 1,
    }


def train_word2vec(sentences: Sequence[Sequence[str]], config: Word2VecConfig) -> Word2Vec:
    """Our :class:`Word2Vec` built on ``sentences`` and trained with ``config``, without a bar.

    One call that returns the trained model, so that a worker process can run it
    (:class:`course_utils.runs.Jobs`); seeded by ``config.seed``.
    """
    model = Word2Vec(sentences, config)
    model.train(show_progress=False)
    return model


def train_gensim(sentences: Sequence[Sequence[str]], config: Word2VecConfig) -> Any:
    """gensim's ``Word2Vec`` trained on ``sentences`` with the same settings as ``config``."""
    from gensim.models import Word2Vec as GensimWord2Vec

    return GensimWord2Vec([list(s) for s in sentences], **_gensim_settings(config))


def _trained_like(reference: Any, config: Word2VecConfig) -> bool:
    """Whether gensim's model ``reference`` was trained with ``config``'s settings."""
    settings = _gensim_settings(config)  # epochs included
    return all(getattr(reference, name, None) == value for name, value in settings.items())


@dataclass
class GensimComparison:
    """Our model and gensim's, trained alike, with their scores."""

    ours: Word2Vec
    reference: Any  # gensim.models.Word2Vec
    ours_scores: VectorScores
    reference_scores: VectorScores


def compare_with_gensim(
    sentences: Sequence[Sequence[str]],
    config: Word2VecConfig,
    ours: Word2Vec | None = None,
    reference: Any | None = None,
) -> GensimComparison:
    """Score our model and gensim's, both trained with ``config``, with gensim's evaluation.

    ``ours`` is our model already trained on the same sentences with the same
    config (4장 passes the one it trained), and ``reference`` gensim's
    (:func:`train_gensim`); each one not given is trained here. The two
    vocabularies must agree, so that both are scored on the same pairs.
    """
    if ours is None:
        ours = train_word2vec(sentences, config)
    elif ours.config != config or ours.log.words == 0:
        raise ValueError("ours must be a model trained with the same config")
    if reference is None:
        reference = train_gensim(sentences, config)
    elif not _trained_like(reference, config):
        raise ValueError(
            f"reference must be gensim's Word2Vec trained with the same config: "
            f"expected {_gensim_settings(config)}"
        )
    if set(ours.index_to_key) != set(reference.wv.index_to_key):
        raise ValueError("ours was built from other sentences: the vocabularies differ")
    return GensimComparison(
        ours, reference, gensim_scores(ours.to_keyed_vectors()), gensim_scores(reference.wv)
    )


@dataclass
class SpeedComparison:
    """Seconds of one training epoch, ours and gensim's, measured in alternation."""

    ours_seconds: list[float]
    gensim_seconds: list[float]
    words: int  # corpus words in one epoch, before subsampling

    @property
    def gensim_speedup(self) -> float:
        """Median over the repeats of our time divided by gensim's."""
        ratios = np.array(self.ours_seconds) / np.array(self.gensim_seconds)
        return float(np.median(ratios))


def time_against_gensim(
    sentences: Sequence[Sequence[str]], config: Word2VecConfig, repeats: int = 3
) -> SpeedComparison:
    """Time one epoch of each implementation, alternating, ``repeats`` times.

    Both use ``config`` with one epoch and one worker; building the vocabulary
    is not timed. Alternating the two keeps a change in the machine's load from
    falling on one side only.
    """
    from gensim.models import Word2Vec as GensimWord2Vec

    check_int(repeats, "repeats")
    sentences = [list(s) for s in sentences]
    one_epoch = replace(config, epochs=1)
    ours_seconds, gensim_seconds = [], []
    for _ in range(repeats):
        ours = Word2Vec(sentences, one_epoch)
        start = time.perf_counter()
        ours.train(show_progress=False)
        ours_seconds.append(time.perf_counter() - start)
        theirs = GensimWord2Vec(**_gensim_settings(one_epoch))
        theirs.build_vocab(sentences)
        start = time.perf_counter()
        theirs.train(sentences, total_examples=theirs.corpus_count, epochs=1)
        gensim_seconds.append(time.perf_counter() - start)
    return SpeedComparison(ours_seconds, gensim_seconds, sum(map(len, sentences)))


# -- skip-gram against CBOW: the speed half of the trade-off -----------------


@dataclass
class ArchitectureTiming:
    """Seconds of one epoch of skip-gram and of CBOW, measured in alternation."""

    skipgram_seconds: list[float]
    cbow_seconds: list[float]

    @property
    def cbow_speedup(self) -> float:
        """Median over the repeats of skip-gram's time divided by CBOW's."""
        return float(np.median(np.array(self.skipgram_seconds) / np.array(self.cbow_seconds)))


def time_skipgram_and_cbow(
    sentences: Sequence[Sequence[str]], config: Word2VecConfig, repeats: int = 3
) -> ArchitectureTiming:
    """One epoch of 4장's skip-gram and CBOW (``config`` otherwise), alternating ``repeats`` times.

    Building the vocabulary is not timed; alternating keeps a change in the
    machine's load from falling on one side only.
    """
    check_int(repeats, "repeats")
    sentences = [list(s) for s in sentences]
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeats):
        for sg in (True, False):
            model = Word2Vec(sentences, replace(config, sg=sg, epochs=1))
            start = time.perf_counter()
            model.train(show_progress=False)
            seconds[sg].append(time.perf_counter() - start)
    return ArchitectureTiming(seconds[True], seconds[False])
