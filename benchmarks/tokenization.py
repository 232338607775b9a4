"""Benchmark for chapter 2: our tokenizers and BPE trainer beside their references.

Run from the repository root: ``.venv/bin/python benchmarks/tokenization.py``.
Everything runs in one process, side by side, several repeats, best time kept:

- BPE training on the Korean corpus: ours (incremental pair counts) against
  Algorithm 1 of Sennrich et al. as published (recounts every step), and
  against SentencePiece's C++ BPE trainer for scale;
- Treebank tokenization of the Lee corpus: ours against NLTK's.

Writes ``benchmarks/results/tokenization.json``.
"""

from __future__ import annotations

import io
import json
import platform
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import sentencepiece as spm  # noqa: E402
from bpe_reference import sennrich_algorithm_1  # noqa: E402
from nltk.tokenize import TreebankWordTokenizer  # noqa: E402

from course_utils.bpe import train_bpe  # noqa: E402
from course_utils.datasets import korean_corpus_lines, load_lee_corpus  # noqa: E402
from course_utils.text import rule_tokenize  # noqa: E402

NUM_MERGES = 1000
REPEATS = 3


def best_of(fn: Callable[[], object], repeats: int = REPEATS) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_mib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    lines = korean_corpus_lines()
    words = Counter(w for line in lines for w in line.split())

    ours_s, ours = best_of(lambda: train_bpe(words, NUM_MERGES))
    reference_s, (reference_merges, _) = best_of(lambda: sennrich_algorithm_1(words, NUM_MERGES), 1)
    assert ours.merges == reference_merges, "ours and the reference must learn the same merges"

    def sentencepiece() -> None:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines), model_writer=io.BytesIO(), vocab_size=1000 + 600,
            model_type="bpe", character_coverage=1.0, minloglevel=2,
        )  # fmt: skip

    spm_s, _ = best_of(sentencepiece)

    lee = load_lee_corpus()
    treebank = TreebankWordTokenizer()
    tokens = sum(len(rule_tokenize(d)) for d in lee)
    ours_tok_s, _ = best_of(lambda: [rule_tokenize(d) for d in lee])
    nltk_tok_s, _ = best_of(lambda: [treebank.tokenize(d) for d in lee])

    machine = platform.machine()
    python = f"{platform.python_implementation()} {platform.python_version()}"
    results = {
        "machine": f"{machine} {python}",
        "bpe_num_merges": NUM_MERGES,
        "bpe_word_types": len(words),
        "bpe_ours_s": ours_s,
        "bpe_reference_s": reference_s,
        "bpe_speedup_vs_reference": reference_s / ours_s,
        "bpe_sentencepiece_s": spm_s,
        "bpe_ours_over_sentencepiece": ours_s / spm_s,
        "bpe_ours_peak_mib": peak_mib(lambda: train_bpe(words, NUM_MERGES)),
        "treebank_tokens": tokens,
        "treebank_ours_tokens_per_s": tokens / ours_tok_s,
        "treebank_nltk_tokens_per_s": tokens / nltk_tok_s,
        "treebank_ours_over_nltk_time": ours_tok_s / nltk_tok_s,
    }
    speedup = results["bpe_speedup_vs_reference"]
    vs_spm = results["bpe_ours_over_sentencepiece"]
    print(f"BPE, {NUM_MERGES} merges on {len(words):,} Korean word types (best of {REPEATS})")
    print(f"  {'ours (incremental)':28s}{ours_s:8.3f} s")
    print(f"  {'Algorithm 1 (recount)':28s}{reference_s:8.3f} s   ours is {speedup:.1f}x faster")
    print(f"  {'SentencePiece (C++)':28s}{spm_s:8.3f} s   ours / SentencePiece = {vs_spm:.1f}")
    print(f"  ours peak memory {results['bpe_ours_peak_mib']:.1f} MiB")
    print(f"Treebank tokenization of the Lee corpus ({tokens:,} tokens)")
    for name, key in [
        ("ours", "treebank_ours_tokens_per_s"),
        ("NLTK TreebankWordTokenizer", "treebank_nltk_tokens_per_s"),
    ]:
        print(f"  {name:28s}{results[key]:10,.0f} tokens/s")
    print(f"  ours / NLTK time = {results['treebank_ours_over_nltk_time']:.2f}")
    out = ROOT / "benchmarks" / "results" / "tokenization.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
