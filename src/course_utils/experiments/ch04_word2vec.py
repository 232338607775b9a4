"""4장's experiment kept for its claims test: our skip-gram against gensim's, scored alike.

The chapter scores its two models with
:func:`course_utils.word2vec.compare_with_gensim` and then calls
:func:`keep_comparison`; :func:`comparison_scores` reads that record back (the
claims test), or compares anew where the chapter has not run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

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
        return {f.name: (int if f.type == "int" else float)(getattr(scores, f.name))
                for f in fields(scores)}  # fmt: skip

    return {
        "ours_scores": plain(comparison.ours_scores),
        "reference_scores": plain(comparison.reference_scores),
        "loss": [float(v) for v in comparison.ours.log.loss],
    }


def _record_path(sentences: Sequence[Sequence[str]], config: Word2VecConfig) -> Path | None:
    text = hashlib.sha256()
    for sentence in sentences:
        text.update("\x1f".join(sentence).encode() + b"\x1e")
    return runs.cache_path("word2vec-vs-gensim", (text.hexdigest(), config))


def keep_comparison(
    sentences: Sequence[Sequence[str]], config: Word2VecConfig, comparison: GensimComparison
) -> None:
    """Keep ``comparison``'s scores and loss, made on ``sentences`` with ``config``, in the
    result cache (under this thread count)."""
    if comparison.ours.config != config:
        raise ValueError(
            f"the comparison's models were trained with {comparison.ours.config}, not {config}"
        )
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
