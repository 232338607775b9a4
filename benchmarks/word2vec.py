"""Benchmark for chapter 4: the NumPy skip-gram beside gensim's, in one process.

Run from the repository root: ``.venv/bin/python benchmarks/word2vec.py``.
Both train on the same tokens (gensim's bundled Wikipedia sample, about
470,000 words) with the same settings (skip-gram, negative sampling, one
worker), and both are scored with gensim's own WordSim353 evaluation.
Throughput counts corpus words per second before subsampling, as gensim does.
Each implementation is trained twice: once timed, once under ``tracemalloc``
for its peak memory (tracing slows NumPy's many allocations far more than
gensim's C loop, so the two are never measured in the same run).
Goals (issue 10): throughput ratio >= 0.5, WS353 within 0.05 of gensim's,
our peak memory <= 64 MiB.
Writes ``benchmarks/results/word2vec.json``.
"""

from __future__ import annotations

import json
import platform
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from gensim.models import Word2Vec as GensimWord2Vec
from gensim.test.utils import datapath

from course_utils.datasets import load_wiki_sample
from course_utils.word2vec import Word2Vec, Word2VecConfig

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"vector_size": 100, "window": 5, "negative": 5, "min_count": 5, "sample": 1e-3,
            "epochs": 5, "alpha": 0.025, "min_alpha": 0.0001, "seed": 1}  # fmt: skip


def timed(train: Callable[[], object]) -> tuple[object, float]:
    """Run ``train`` once; return its result and wall seconds."""
    start = time.perf_counter()
    result = train()
    return result, time.perf_counter() - start


def peak_mib(train: Callable[[], object]) -> float:
    """Run ``train`` once under tracemalloc; return the peak traced MiB."""
    tracemalloc.start()
    train()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def ws353(vectors) -> float:  # gensim KeyedVectors
    return float(vectors.evaluate_word_pairs(datapath("wordsim353.tsv"))[1].statistic)


def main() -> None:
    sentences = load_wiki_sample()
    words = sum(map(len, sentences)) * SETTINGS["epochs"]

    def ours_train() -> Word2Vec:
        model = Word2Vec(sentences, Word2VecConfig(sg=True, **SETTINGS))
        model.train(show_progress=False)
        return model

    def gensim_train() -> GensimWord2Vec:
        return GensimWord2Vec(sentences, sg=1, hs=0, workers=1, **SETTINGS)

    gensim_model, gensim_s = timed(gensim_train)
    ours_model, ours_s = timed(ours_train)
    gensim_mib, ours_mib = peak_mib(gensim_train), peak_mib(ours_train)
    results = {
        "machine": f"{platform.machine()} Python {platform.python_version()}",
        "corpus_words": words // SETTINGS["epochs"],
        "settings": SETTINGS,
        "ours_s": ours_s,
        "gensim_s": gensim_s,
        "ours_words_per_s": words / ours_s,
        "gensim_words_per_s": words / gensim_s,
        "ratio": (words / ours_s) / (words / gensim_s),
        "ours_peak_mib": ours_mib,
        "gensim_peak_mib": gensim_mib,
        "ours_ws353": ws353(ours_model.to_keyed_vectors()),  # type: ignore[attr-defined]
        "gensim_ws353": ws353(gensim_model.wv),  # type: ignore[attr-defined]
    }
    corpus, epochs = results["corpus_words"], SETTINGS["epochs"]
    print(f"skip-gram, negative sampling, {corpus:,} words x {epochs} epochs")
    print(f"{'':14s}{'words/s':>12s}{'seconds':>10s}{'peak MiB':>10s}{'WS353 rho':>11s}")
    for name, key in [("ours (NumPy)", "ours"), ("gensim (1 w.)", "gensim")]:
        print(f"{name:14s}{results[key + '_words_per_s']:12,.0f}{results[key + '_s']:10.1f}"
              f"{results[key + '_peak_mib']:10.1f}{results[key + '_ws353']:11.3f}")  # fmt: skip
    print(f"throughput ratio ours / gensim = {results['ratio']:.2f} (goal >= 0.5)")
    print(f"our peak memory = {ours_mib:.1f} MiB (goal <= 64)")
    difference = results["ours_ws353"] - results["gensim_ws353"]
    print(f"WS353 difference = {difference:+.3f} (goal within 0.05)")
    out = ROOT / "benchmarks" / "results" / "word2vec.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
