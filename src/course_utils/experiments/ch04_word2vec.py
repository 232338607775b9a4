"""4장's experiment kept for its claims test: our skip-gram against gensim's, scored alike.

The chapter scores its two models with
:func:`course_utils.word2vec.compare_with_gensim` and then calls
:func:`keep_comparison`; :func:`comparison_scores` reads that record back (the
claims test), or compares anew where the chapter has not run.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from course_utils import runs
from course_utils.word2vec import (
    GensimComparison,
    VectorScores,
    Word2VecConfig,
    compare_with_gensim,
)

__all__ = ["ScoreRecord", "comparison_scores", "keep_comparison"]


@dataclass
class ScoreRecord:
    """What is kept of a comparison: both models' scores and our model's per-epoch mean loss."""

    ours_scores: VectorScores
    reference_scores: VectorScores
    loss: list[float]


def _record(comparison: GensimComparison) -> dict[str, Any]:
    """The comparison's scores and loss as plain numbers, all that the cache reads back."""

    def plain(scores: VectorScores) -> dict[str, float | int]:
        values = {f.name: getattr(scores, f.name) for f in fields(scores)}
        return {name: int(v) if isinstance(v, (int, np.integer)) else float(v)
                for name, v in values.items()}  # fmt: skip

    return {
        "ours_scores": plain(comparison.ours_scores),
        "reference_scores": plain(comparison.reference_scores),
        "loss": [float(v) for v in comparison.ours.log.loss],
    }


def _record_path(sentences: Sequence[Sequence[str]], config: Word2VecConfig) -> Path | None:
    """Where the record is kept: the sentences, the config and the libraries' versions (gensim
    trains the reference and scores both) decide it, on top of what every cached run names."""
    import gensim
    import scipy

    text = hashlib.sha256()
    for sentence in sentences:
        text.update("\x1f".join(sentence).encode() + b"\x1e")
    versions = f"gensim {gensim.__version__}, numpy {np.__version__}, scipy {scipy.__version__}"
    return runs.cache_path("word2vec-vs-gensim", (text.hexdigest(), config, versions))


def keep_comparison(
    sentences: Sequence[Sequence[str]], config: Word2VecConfig, comparison: GensimComparison
) -> None:
    """Keep ``comparison``'s scores and loss, made on ``sentences`` with ``config``, in the
    result cache (under this thread count)."""
    ours = comparison.ours
    if ours.config != config:
        raise ValueError(f"the comparison's models were trained with {ours.config}, not {config}")
    counts = Counter(word for sentence in sentences for word in sentence)
    kept = [word for word, count in counts.items() if count >= config.min_count]
    same_counts = [counts[word] for word in ours.index_to_key] == ours.counts.tolist()
    if not same_counts or len(kept) != len(ours.index_to_key):
        raise ValueError("the comparison's models were trained on other sentences")
    runs.save_result(_record_path(sentences, config), _record(comparison))


def comparison_scores(sentences: Sequence[Sequence[str]], config: Word2VecConfig) -> ScoreRecord:
    """The scores and loss of :func:`~course_utils.word2vec.compare_with_gensim` for
    ``sentences`` and ``config``: what :func:`keep_comparison` kept (4장's, read by its claims
    test), else compared here and kept."""
    record = runs.load_result(_record_path(sentences, config))
    if record is None:
        comparison = compare_with_gensim(sentences, config)
        keep_comparison(sentences, config, comparison)
        record = _record(comparison)
    return ScoreRecord(
        VectorScores(**record["ours_scores"]),
        VectorScores(**record["reference_scores"]),
        list(record["loss"]),
    )
