"""Benchmark for chapter 11 (and later 12): the from-scratch Transformer beside ``torch.nn``.

Run from the repository root: ``.venv/bin/python benchmarks/transformer.py``.
Everything runs on the CPU in one process. Each comparison times its
variants interleaved (the order reversed every other repeat), repeated, and
keeps the median of the per-repeat ratios; the main numbers use one torch
thread, as the chapters run, and the whole set is measured again with two
threads (nothing else of ours running) for information.

- ``mha_ratio``: forward + backward time of ``course_utils.transformer.MultiHeadAttention``
  over ``nn.MultiheadAttention`` with the same weights (``load_torch_weights``) and
  inputs: self-attention, ``batch_first``, a ``key_padding_mask`` (lengths drawn
  between T/2 and T), the input requiring grad and ``output.sum()`` as the loss.
  Two sizes: 11장's model (d_model 64, 4 heads, B 64, T 20) and a larger one
  (d_model 256, 8 heads, B 32, T 128). torch's module is timed both with
  ``need_weights=True`` (its default: explicit softmax weights, like ours) and
  ``need_weights=False`` (what ``nn.TransformerEncoderLayer`` passes: the fused
  ``F.scaled_dot_product_attention`` kernel); ours with its defaults
  (head-averaged weights returned). The key is the *largest* of the four ratios (two sizes ×
  two torch paths); ``mha`` holds each. ``torch_attention_kernels`` names the
  attention kernels torch's module ran (read off ``torch.profiler``). Goal: at most 1.5.
- ``encoder_layer_ratio``: the same for our ``EncoderLayer`` over
  ``nn.TransformerEncoderLayer(batch_first=True)`` in training mode (dropout 0.1
  in both, ReLU, post-norm, d_ff 4·d_model), with ``src_key_padding_mask``; the
  larger of the two sizes' ratios, each in ``encoder_layer``. Goal: at most 1.5.
  (torch 2.13 on the CPU: with attention dropout in training its layer's SDPA call
  falls back to the ``_scaled_dot_product_attention_math`` kernel, an explicit softmax.)
- ``kv_cache_speedup``: ``decode_steps`` of 128 greedy tokens without the
  key/value cache over with it (``cache_mode``), for 11장's ``TransformerSeq2Seq``
  size (d_model 64, 4 heads, 2 + 2 layers, d_ff 256) with random weights, on 32
  random source sentences of 10 to 20 tokens; ``kv_cache_outputs_identical``
  checks that both give the same tokens. Goal: at least 3.

``loadavg`` records ``os.getloadavg()`` before and after: the machine may be
shared, and other work inflates every time here (the ratios less so, since
their two sides are timed side by side). Writes ``benchmarks/results/transformer.json``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from course_utils.experiments.ch11_transformer import cache_mode, decode_steps
from course_utils.seq2seq import PAD
from course_utils.transformer import (
    EncoderLayer,
    MultiHeadAttention,
    TransformerSeq2Seq,
    TransformerSize,
    load_torch_weights,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTER, LARGER = "11장 model", "larger"
SIZES = {  # d_model, heads, batch, length; d_ff is 4·d_model in the encoder layer
    CHAPTER: {"d_model": 64, "heads": 4, "batch": 64, "length": 20},
    LARGER: {"d_model": 256, "heads": 8, "batch": 32, "length": 128},
}
REPEATS = {1: 15, 2: 9}  # fwd+bwd repeats per variant (MHA, encoder layer), by thread count
DECODE_REPEATS = {1: 5, 2: 2}  # the 2-thread rerun is for information: kept short
DECODE = {"batch": 32, "min_len": 10, "max_len": 20, "steps": 128}
VOCAB = {"source": 360, "target": 400}  # about 9–10장's generated data (355 and 406 types)
GOALS = {"mha_ratio": 1.5, "encoder_layer_ratio": 1.5, "kv_cache_speedup": 3.0, "bert_ratio": 0.8}


def interleaved(
    work: dict[str, Callable[[], None]], repeats: int, warm_up: Callable[[], None] | None = None
) -> dict[str, list[float]]:
    """Seconds of each callable per repeat, after ``warm_up`` (or one untimed call of each)."""
    for run in [warm_up] if warm_up is not None else work.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in work}
    names = list(work)
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            work[name]()
            times[name].append(time.perf_counter() - start)
    return times


def median_ratio(times: dict[str, list[float]], top: str, bottom: str) -> float:
    return statistics.median(a / b for a, b in zip(times[top], times[bottom], strict=True))


def padded_input(size: dict[str, int], seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (B, T, d_model) and a key padding mask (B, T), True at pads; example 0 has no pads."""
    g = torch.Generator().manual_seed(seed)
    B, T = size["batch"], size["length"]
    x = torch.randn(B, T, size["d_model"], generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    lengths[0] = T
    return x, torch.arange(T)[None, :] >= lengths[:, None]


def fwd_bwd(
    module: nn.Module, call: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor
) -> Callable[[], None]:
    """One forward and backward pass (loss = sum of the outputs) with fresh gradients."""

    def run() -> None:
        module.zero_grad(set_to_none=True)
        inputs = x.detach().requires_grad_()
        call(inputs).sum().backward()

    return run


@contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (torch.profiler's C++ side prints start/stop lines there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def attention_kernels(run: Callable[[], None]) -> list[str]:
    """The attention-related aten operators one call runs (SDPA kernels or an explicit softmax)."""
    with (
        quiet_stderr(),
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p,
    ):
        run()
    names = {event.key for event in p.key_averages()}
    return sorted(
        n for n in names if "scaled_dot_product" in n or n in ("aten::_softmax", "aten::baddbmm")
    )


def mha_case(size: dict[str, int], repeats: int) -> dict[str, Any]:
    d, h = size["d_model"], size["heads"]
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(d, h, batch_first=True)
    ours = MultiHeadAttention(d, h, batch_first=True)
    load_torch_weights(ours, theirs)
    x, pad = padded_input(size, seed=1)
    work = {
        "ours": fwd_bwd(ours, lambda y: ours(y, y, y, key_padding_mask=pad)[0], x),
        "torch (need_weights=True)": fwd_bwd(
            theirs, lambda y: theirs(y, y, y, key_padding_mask=pad)[0], x
        ),
        "torch (need_weights=False, SDPA)": fwd_bwd(
            theirs, lambda y: theirs(y, y, y, key_padding_mask=pad, need_weights=False)[0], x
        ),
    }
    times = interleaved(work, repeats)
    return {
        **size,
        **{f"{name} s": statistics.median(t) for name, t in times.items()},
        "ratio vs need_weights=True": median_ratio(times, "ours", "torch (need_weights=True)"),
        "ratio vs need_weights=False": median_ratio(
            times, "ours", "torch (need_weights=False, SDPA)"
        ),
    }


def encoder_case(size: dict[str, int], repeats: int) -> dict[str, Any]:
    d, h = size["d_model"], size["heads"]
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.1, batch_first=True)
    ours = EncoderLayer(d, h, 4 * d, dropout=0.1)
    load_torch_weights(ours, theirs)
    theirs.train()
    ours.train()
    x, pad = padded_input(size, seed=2)
    work = {
        "ours": fwd_bwd(ours, lambda y: ours(y, src_key_padding_mask=pad), x),
        "torch": fwd_bwd(theirs, lambda y: theirs(y, src_key_padding_mask=pad), x),
    }
    times = interleaved(work, repeats)
    return {
        **size,
        "d_ff": 4 * d,
        **{f"{name} s": statistics.median(t) for name, t in times.items()},
        "ratio": median_ratio(times, "ours", "torch"),
    }


def kv_cache_case(repeats: int) -> dict[str, Any]:
    size = TransformerSize(
        d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=256
    )
    torch.manual_seed(0)
    model = TransformerSeq2Seq(VOCAB["source"], VOCAB["target"], size)
    g = torch.Generator().manual_seed(3)
    B = DECODE["batch"]
    lengths = torch.randint(DECODE["min_len"], DECODE["max_len"] + 1, (B,), generator=g)
    source = torch.randint(4, VOCAB["source"], (B, int(lengths.max())), generator=g)
    source[torch.arange(source.shape[1])[None, :] >= lengths[:, None]] = PAD
    outputs: dict[bool, torch.Tensor] = {}

    def decode(use_cache: bool, steps: int = DECODE["steps"]) -> Callable[[], None]:
        def run() -> None:
            with cache_mode(model, use_cache):
                outputs[use_cache] = decode_steps(model, source, lengths, steps)

        return run

    def warm_up() -> None:  # a short decode in both modes, not a whole untimed 128-token one
        decode(False, 8)()
        decode(True, 8)()

    work = {"without cache": decode(False), "with cache": decode(True)}
    times = interleaved(work, repeats, warm_up)
    differing = int((outputs[False] != outputs[True]).sum())
    return {
        **DECODE,
        "mean_source_tokens": float(lengths.float().mean()),
        "size": "d_model 64, 4 heads, 2 + 2 layers, d_ff 256, random weights",
        **{f"{name} s": statistics.median(t) for name, t in times.items()},
        "speedup": median_ratio(times, "without cache", "with cache"),
        "outputs_identical": differing == 0,
        "differing_tokens": differing,
    }


def bert_case(repeats: int) -> dict[str, Any]:
    """Sentences/s of our BertModel / transformers.BertModel, same MiniLM weights, same batch.

    The first 32 Lee-corpus sentences (gensim's test data), padded to the batch's longest,
    forward only under ``torch.inference_mode``: what encoding sentences costs.
    """
    from transformers import BertModel as HFBertModel

    from course_utils.bert import (
        load_bert,
    )
    from course_utils.datasets import load_lee_corpus
    from course_utils.wordpiece import (
        load_wordpiece_tokenizer,
        minilm_folder,
        split_sentences,
    )

    sentences = [s for doc in load_lee_corpus() for s in split_sentences(doc)][:32]
    batch = load_wordpiece_tokenizer().encode_batch(sentences, max_length=128)
    ours = load_bert()
    folder = str(minilm_folder())
    theirs = HFBertModel.from_pretrained(folder).eval()  # the default attention (sdpa)
    eager = HFBertModel.from_pretrained(folder, attn_implementation="eager").eval()
    inputs = batch.as_dict()

    def run_ours() -> None:
        with torch.inference_mode():
            ours(batch.input_ids, batch.attention_mask, batch.token_type_ids)

    def run_theirs() -> None:
        with torch.inference_mode():
            theirs(**inputs)

    def run_eager() -> None:
        with torch.inference_mode():
            eager(**inputs)

    times = interleaved({"ours": run_ours, "theirs": run_theirs, "eager": run_eager}, repeats)
    with torch.inference_mode():
        a = ours(batch.input_ids, batch.attention_mask, batch.token_type_ids).last_hidden_state
        b = theirs(**inputs).last_hidden_state
    real = batch.attention_mask.bool()
    n = len(sentences)
    return {
        "ratio": median_ratio(times, "theirs", "ours"),  # our sentences/s over theirs
        "ours_sentences_per_s": n / statistics.median(times["ours"]),
        "transformers_sentences_per_s": n / statistics.median(times["theirs"]),
        "sentences": n,
        "tokens_per_sentence": float(real.sum()) / n,
        "transformers_attention": theirs.config._attn_implementation,
        "ratio_against_eager": median_ratio(times, "eager", "ours"),
        "max_abs_difference": float((a - b)[real].abs().max()),
    }


def measure(threads: int) -> dict[str, Any]:
    torch.set_num_threads(threads)
    repeats, decode_repeats = REPEATS[threads], DECODE_REPEATS[threads]
    mha = {name: mha_case(size, repeats) for name, size in SIZES.items()}
    encoder = {name: encoder_case(size, repeats) for name, size in SIZES.items()}
    kv = kv_cache_case(decode_repeats)
    return {
        "mha_ratio": max(
            float(row[key])
            for row in mha.values()
            for key in ("ratio vs need_weights=True", "ratio vs need_weights=False")
        ),
        "encoder_layer_ratio": max(float(row["ratio"]) for row in encoder.values()),
        "kv_cache_speedup": kv["speedup"],
        "mha": mha,
        "encoder_layer": encoder,
        "kv_cache": kv,
    }


def torch_kernels() -> dict[str, list[str]]:
    """Which attention kernels torch's modules run in these benchmarks (11장's size)."""
    size = SIZES[CHAPTER]
    d, h = size["d_model"], size["heads"]
    x, pad = padded_input(size, seed=1)
    mha = nn.MultiheadAttention(d, h, batch_first=True)
    layer = nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.1, batch_first=True).train()
    return {
        "nn.MultiheadAttention need_weights=True": attention_kernels(
            fwd_bwd(mha, lambda y: mha(y, y, y, key_padding_mask=pad)[0], x)
        ),
        "nn.MultiheadAttention need_weights=False": attention_kernels(
            fwd_bwd(mha, lambda y: mha(y, y, y, key_padding_mask=pad, need_weights=False)[0], x)
        ),
        "nn.TransformerEncoderLayer (training)": attention_kernels(
            fwd_bwd(layer, lambda y: layer(y, src_key_padding_mask=pad), x)
        ),
    }


def print_table(title: str, m: dict[str, Any]) -> None:
    print(title)
    print(f"{'MultiHeadAttention fwd+bwd':<30}{'ours':>9}{'torch w':>10}{'ratio':>7}"
          f"{'torch SDPA':>11}{'ratio':>7}")  # fmt: skip
    for name, row in m["mha"].items():
        label = f"{name}: d{row['d_model']} h{row['heads']} B{row['batch']} T{row['length']}"
        weights, sdpa = (
            row["torch (need_weights=True) s"],
            row["torch (need_weights=False, SDPA) s"],
        )
        print(f"{label:<30}{row['ours s'] * 1e3:7.2f}ms{weights * 1e3:8.2f}ms"
              f"{row['ratio vs need_weights=True']:6.2f}×{sdpa * 1e3:9.2f}ms"
              f"{row['ratio vs need_weights=False']:6.2f}×")  # fmt: skip
    print(f"{'EncoderLayer fwd+bwd (train)':<30}{'ours':>9}{'torch':>10}{'ratio':>7}")
    for name, row in m["encoder_layer"].items():
        label = f"{name}: d{row['d_model']} h{row['heads']} B{row['batch']} T{row['length']}"
        print(f"{label:<30}{row['ours s'] * 1e3:7.2f}ms{row['torch s'] * 1e3:8.2f}ms"
              f"{row['ratio']:6.2f}×")  # fmt: skip
    kv = m["kv_cache"]
    print(
        f"greedy decoding, {kv['steps']} tokens × {kv['batch']} sentences: without cache "
        f"{kv['without cache s']:.2f} s, with {kv['with cache s']:.2f} s, "
        f"speedup {kv['speedup']:.1f}× (identical outputs: {kv['outputs_identical']})"
    )


def main() -> None:
    total_start = time.perf_counter()
    load_before = os.getloadavg()
    one = measure(threads=1)  # as the chapters run
    kernels = torch_kernels()

    bert = bert_case(REPEATS[1])  # 12장: our BertModel against transformers', MiniLM weights

    two = measure(threads=2)
    torch.set_num_threads(1)
    load_after = os.getloadavg()

    results = {
        "mha_ratio": one["mha_ratio"],
        "encoder_layer_ratio": one["encoder_layer_ratio"],
        "kv_cache_speedup": one["kv_cache_speedup"],
        "kv_cache_outputs_identical": one["kv_cache"]["outputs_identical"],
        "bert_ratio": bert["ratio"],
        "goals": {
            "bert_ratio": f">= {GOALS['bert_ratio']}",
            "mha_ratio": f"<= {GOALS['mha_ratio']}",
            "encoder_layer_ratio": f"<= {GOALS['encoder_layer_ratio']}",
            "kv_cache_speedup": f">= {GOALS['kv_cache_speedup']}",
        },
        "mha_ratio_is": "the largest of ours / torch over both sizes and both torch paths",
        "encoder_layer_ratio_is": "the larger of ours / torch over both sizes",
        "mha": one["mha"],
        "encoder_layer": one["encoder_layer"],
        "kv_cache": one["kv_cache"],
        "bert": bert,
        "torch_attention_kernels": kernels,
        "threads": 1,
        "two_threads_idle": two,
        "repeats": {"forward_backward": REPEATS, "decoding": DECODE_REPEATS},  # by thread count
        "loadavg": {"before": list(load_before), "after": list(load_after)},
        "cores": os.cpu_count(),
        "seconds": time.perf_counter() - total_start,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }

    print_table(
        f"11장 Transformer on the CPU, 1 thread: median of {REPEATS[1]} "
        f"(decoding {DECODE_REPEATS[1]})",
        one,
    )
    print(
        "torch's attention kernels:", "; ".join(f"{k}: {', '.join(v)}" for k, v in kernels.items())
    )
    print_table(
        f"2 threads, for information: median of {REPEATS[2]} (decoding {DECODE_REPEATS[2]})", two
    )
    print(
        f"mha_ratio {results['mha_ratio']:.2f} (goal <= {GOALS['mha_ratio']}), "
        f"encoder_layer_ratio {results['encoder_layer_ratio']:.2f} "
        f"(goal <= {GOALS['encoder_layer_ratio']}), kv_cache_speedup "
        f"{results['kv_cache_speedup']:.1f} (goal >= {GOALS['kv_cache_speedup']}), "
        f"bert_ratio {results['bert_ratio']:.2f} (goal >= {GOALS['bert_ratio']}; "
        f"ours {bert['ours_sentences_per_s']:.0f} vs transformers "
        f"{bert['transformers_sentences_per_s']:.0f} sentences/s, max difference "
        f"{bert['max_abs_difference']:.1e})"
    )
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
        f"({os.cpu_count()} cores); total {results['seconds']:.0f} s"
    )
    out = ROOT / "benchmarks" / "results" / "transformer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
