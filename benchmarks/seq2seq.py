"""Benchmark for chapters 9 and 10: training and decoding speed, BLEU's cost, and CPU threads.

Run from the repository root: ``.venv/bin/python benchmarks/seq2seq.py``.
Everything runs on the CPU with the chapters' exact sizes:
``translation_config("small")`` and ``generated_data(config)``. The models are
9장's ``new_seq2seq`` and 10장's ``new_bahdanau`` and ``new_luong``.

- ``train_tokens_per_s``: real target tokens (non-pad, ``<eos>`` included) per second of training
  (forward, backward, gradient clipping, Adam step) on the chapters' batches of
  64, each model from its fresh initialisation; the models take turns over
  ``ROUNDS`` rounds of ``BATCHES_PER_ROUND`` batches and the median round counts.
- ``greedy_sentences_per_s`` and ``beam_sentences_per_s``: the whole test set
  translated by ``course_utils.seq2seq.translate`` (greedy, and beam search of
  width 5 batched over the sentences), with each model after one epoch of
  training (decoding time grows with the output length, so an untrained model
  that never says ``<eos>`` would run to ``max_len``); ``mean_output_tokens``
  beside them, and the references' mean length.
- ``bleu_ratio``: our corpus BLEU's time over sacrebleu's
  (``time_against_sacrebleu``) on the test set's greedy translations of 9장's
  model against their references. Goal: at most 2.
- ``threads``: one training step of each model, and a forward plus backward
  pass of a bidirectional GRU encoder alone, with ``torch.set_num_threads(1)``
  against 2, interleaved and repeated, (a) with nothing else of ours running
  and (b) beside a subprocess that keeps one core busy with a pure-Python loop.
  The ratios are medians of (2-thread time / 1-thread time); above 1 means
  2 threads are slower.

Every number except ``threads`` is measured with one thread, as the chapters
run. ``load_average`` records ``os.getloadavg()`` before and after: the
machine may be shared, and other work inflates every time here.
Writes ``benchmarks/results/seq2seq.json``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch

from course_utils.bleu import time_against_sacrebleu
from course_utils.experiments.ch09_seq2seq import (
    ParallelData,
    TranslationConfig,
    generated_data,
    new_seq2seq,
    translation_config,
)
from course_utils.experiments.ch10_attention import (
    new_bahdanau,
    new_luong,
)
from course_utils.seq2seq import (
    PAD,
    Batch,
    Encoder,
    EncoderDecoder,
    make_batches,
    sequence_loss,
    train_seq2seq,
    translate,
)

ROOT = Path(__file__).resolve().parents[1]
MAKERS: dict[str, Callable[[ParallelData, TranslationConfig], EncoderDecoder]] = {
    "seq2seq": new_seq2seq,
    "bahdanau": new_bahdanau,
    "luong": new_luong,
}
ROUNDS, BATCHES_PER_ROUND = 5, 8  # training speed: 40 timed batches per model
DECODE_EPOCHS = 1  # training before the decoding benchmark
GREEDY_REPEATS, BEAM_REPEATS = 5, 3
BEAM_SIZE = 5
BLEU_REPEATS = 21
THREAD_REPEATS = 7  # steps timed per (workload, thread count, load), interleaved
LOAD = "while True:\n    pass\n"  # one core kept busy, as another job would


def train_step(model: EncoderDecoder, optimizer: torch.optim.Optimizer, batch: Batch) -> None:
    """One step of the chapters' training loop (train_seq2seq: teacher forcing, clip 1.0, Adam)."""
    optimizer.zero_grad(set_to_none=True)
    logits = model(batch.source, batch.source_lengths, batch.target_in)  # (B, T, V)
    sequence_loss(logits, batch.target_out).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()


def train_speed(
    data: ParallelData, config: TranslationConfig, batches: list[Batch]
) -> dict[str, float]:
    """Median target tokens/s of each model over interleaved rounds of training batches."""
    models = {name: make(data, config) for name, make in MAKERS.items()}
    optimizers = {
        name: torch.optim.Adam(m.parameters(), lr=config.training.learning_rate)
        for name, m in models.items()
    }
    for name, model in models.items():  # warm-up
        model.train()
        train_step(model, optimizers[name], batches[-1])
    rates: dict[str, list[float]] = {name: [] for name in models}
    for r in range(ROUNDS):
        chunk = batches[r * BATCHES_PER_ROUND : (r + 1) * BATCHES_PER_ROUND]
        tokens = sum(int((b.target_out != PAD).sum()) for b in chunk)
        for name, model in models.items():
            start = time.perf_counter()
            for batch in chunk:
                train_step(model, optimizers[name], batch)
            rates[name].append(tokens / (time.perf_counter() - start))
    return {name: statistics.median(values) for name, values in rates.items()}


def decode_speed(
    model: EncoderDecoder, data: ParallelData, method: str, repeats: int
) -> tuple[float, float, list[list[str]]]:
    """Sentences/s and mean output tokens of translating the test set; the outputs."""
    sources = [s for s, _ in data.test]
    outputs: list[list[str]] = []
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = translate(model, sources, data.source_vocab, data.target_vocab, method, BEAM_SIZE)
        seconds.append(time.perf_counter() - start)
    mean_len = statistics.fmean(len(o) for o in outputs)
    return len(sources) / statistics.median(seconds), mean_len, outputs


def thread_workloads(
    data: ParallelData, config: TranslationConfig, batch: Batch
) -> dict[str, Callable[[], None]]:
    """Each model's training step, and forward + backward of a BiGRU encoder alone."""
    workloads: dict[str, Callable[[], None]] = {}
    for name, make in MAKERS.items():
        model = make(data, config)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.training.learning_rate)
        workloads[f"{name} train step"] = lambda model=model, optimizer=optimizer: train_step(
            model, optimizer, batch
        )
    encoder = Encoder(
        len(data.source_vocab), config.embedding_size, config.hidden_size // 2, bidirectional=True
    )

    def encoder_step() -> None:
        encoder.zero_grad(set_to_none=True)
        memory = encoder(batch.source, batch.source_lengths)
        (memory.outputs.sum() + memory.context.sum()).backward()

    workloads["BiGRU encoder fwd+bwd"] = encoder_step
    return workloads


def time_threads(workloads: dict[str, Callable[[], None]]) -> dict[str, dict[str, float]]:
    """Median seconds per step with 1 and 2 threads, interleaved, and the median ratio.

    Each repeat times every workload once with 1 thread, then once with 2; after
    each switch one untimed step of the cheapest workload (the last) warms the pool.
    """
    times: dict[str, dict[int, list[float]]] = {n: {1: [], 2: []} for n in workloads}
    warm = list(workloads.values())[-1]
    for _ in range(THREAD_REPEATS):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            warm()
            for name, work in workloads.items():
                start = time.perf_counter()
                work()
                times[name][threads].append(time.perf_counter() - start)
    torch.set_num_threads(1)
    result = {}
    for name, by_count in times.items():
        one, two = statistics.median(by_count[1]), statistics.median(by_count[2])
        ratios = [b / a for a, b in zip(by_count[1], by_count[2], strict=True)]
        result[name] = {"one_s": one, "two_s": two, "ratio": statistics.median(ratios)}
    return result


def thread_measurements(
    data: ParallelData, config: TranslationConfig, batch: Batch
) -> dict[str, object]:
    workloads = thread_workloads(data, config, batch)
    load_idle = os.getloadavg()
    idle = time_threads(workloads)
    load = subprocess.Popen([sys.executable, "-c", LOAD])
    try:
        time.sleep(0.5)  # let the load take its core
        load_loaded = os.getloadavg()
        loaded = time_threads(workloads)
    finally:
        load.terminate()
        load.wait()
    worst_loaded = max(row["ratio"] for row in loaded.values())
    worst_idle = max(row["ratio"] for row in idle.values())
    best_idle = min(row["ratio"] for row in idle.values())
    return {
        "idle": idle,
        "beside_load": loaded,
        "load_average_at_start": {"idle": list(load_idle), "beside_load": list(load_loaded)},
        "load": "a subprocess running a pure-Python busy loop (one core)",
        "repeats": THREAD_REPEATS,
        "max_ratio_idle": worst_idle,
        "min_ratio_idle": best_idle,
        "max_ratio_beside_load": worst_loaded,
        # 2 threads only if they are faster for every step, idle and beside the load.
        "recommended": 2 if max(worst_idle, worst_loaded) < 1 else 1,
    }


def main() -> None:
    torch.set_num_threads(1)  # as the chapters run
    total_start = time.perf_counter()
    load_before = os.getloadavg()
    config = translation_config("small")
    data, _ = generated_data(config)
    batches = make_batches(data.examples("train"), config.training.batch_size, True, seed=1)

    phases: dict[str, float] = {}
    mark = time.perf_counter()
    train = train_speed(data, config, batches)
    phases["train_speed"], mark = time.perf_counter() - mark, time.perf_counter()

    decoding: dict[str, dict[str, float]] = {}
    greedy_outputs: list[list[str]] = []
    training = replace(config.training, epochs=DECODE_EPOCHS)
    for name, make in MAKERS.items():
        model = make(data, config)
        train_seq2seq(model, data.examples("train"), training, device="cpu", show_progress=False)
        greedy, greedy_len, outputs = decode_speed(model, data, "greedy", GREEDY_REPEATS)
        beam, beam_len, _ = decode_speed(model, data, "beam", BEAM_REPEATS)
        decoding[name] = {
            "greedy_sentences_per_s": greedy,
            "greedy_mean_output_tokens": greedy_len,
            "beam_sentences_per_s": beam,
            "beam_mean_output_tokens": beam_len,
        }
        if name == "seq2seq":
            greedy_outputs = outputs

    references = [list(t) for _, t in data.test]
    bleu = time_against_sacrebleu(greedy_outputs, references, repeats=BLEU_REPEATS)
    phases["decoding_and_bleu"], mark = time.perf_counter() - mark, time.perf_counter()

    threads = thread_measurements(data, config, batches[0])
    phases["threads"] = time.perf_counter() - mark
    load_after = os.getloadavg()

    results = {
        "train_tokens_per_s": train,
        "greedy_sentences_per_s": {n: d["greedy_sentences_per_s"] for n, d in decoding.items()},
        "beam_sentences_per_s": {n: d["beam_sentences_per_s"] for n, d in decoding.items()},
        "mean_output_tokens": {
            n: {"greedy": d["greedy_mean_output_tokens"], "beam": d["beam_mean_output_tokens"]}
            for n, d in decoding.items()
        },
        "reference_mean_tokens": statistics.fmean(len(r) for r in references),
        "test_sentences": len(data.test),
        "beam_size": BEAM_SIZE,
        "decode_models_trained_epochs": DECODE_EPOCHS,
        "bleu_ratio": bleu.ratio,
        "bleu_ours_s": bleu.ours_seconds,
        "bleu_sacrebleu_s": bleu.sacrebleu_seconds,
        "bleu_sentences": bleu.sentences,
        "threads": threads,
        "timed_with_threads": 1,
        "config": "translation_config('small')",
        "batch_size": config.training.batch_size,
        "load_average": {"before": list(load_before), "after": list(load_after)},
        "cores": os.cpu_count(),
        "seconds": time.perf_counter() - total_start,
        "phase_seconds": phases,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }

    batch_size = config.training.batch_size
    print(f"9–10장 models on the CPU (1 thread), translation_config('small'), batch {batch_size}")
    print(f"{'model':<10}{'train tok/s':>12}{'greedy sent/s':>15}{'len':>6}"
          f"{'beam-5 sent/s':>15}{'len':>6}")  # fmt: skip
    for name in MAKERS:
        d = decoding[name]
        print(f"{name:<10}{train[name]:12,.0f}{d['greedy_sentences_per_s']:15,.0f}"
              f"{d['greedy_mean_output_tokens']:6.1f}{d['beam_sentences_per_s']:15,.0f}"
              f"{d['beam_mean_output_tokens']:6.1f}")  # fmt: skip
    mean_ref = results["reference_mean_tokens"]
    print(f"(test set: {len(data.test)} sentences, references {mean_ref:.1f} tokens on average;"
          f" decoders after {DECODE_EPOCHS} epoch of training)")  # fmt: skip
    print(
        f"BLEU on {bleu.sentences} sentences: ours {bleu.ours_seconds * 1e3:.2f} ms, sacrebleu "
        f"{bleu.sacrebleu_seconds * 1e3:.2f} ms, ratio {bleu.ratio:.2f} (goal <= 2)"
    )
    print(f"threads: 2-thread / 1-thread time per step, median of {THREAD_REPEATS}")
    print(f"{'step':<24}{'idle: 1 thr':>12}{'2 thr':>9}{'ratio':>7}"
          f"{'+ busy loop: 1 thr':>20}{'2 thr':>9}{'ratio':>7}")  # fmt: skip
    for name, row in threads["idle"].items():  # type: ignore[union-attr]
        other = threads["beside_load"][name]  # type: ignore[index]
        print(f"{name:<24}{row['one_s'] * 1e3:10.1f}ms{row['two_s'] * 1e3:7.1f}ms"
              f"{row['ratio']:6.2f}×{other['one_s'] * 1e3:18.1f}ms{other['two_s'] * 1e3:7.1f}ms"
              f"{other['ratio']:6.2f}×")  # fmt: skip
    saving = 1 - threads["min_ratio_idle"]  # type: ignore[operator]
    alone = f"save at most {saving:.0%} of a step" if saving > 0 else "are no faster"
    print(
        f"the numbers support {threads['recommended']} thread(s) for the CPU chapters: "
        f"2 threads {alone} without our load, and beside one busy core they are up to "
        f"{threads['max_ratio_beside_load']:.1f}× slower"
    )
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        f"({os.cpu_count()} cores); total {results['seconds']:.0f} s"
    )
    out = ROOT / "benchmarks" / "results" / "seq2seq.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
