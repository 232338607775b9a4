"""Benchmark for chapter 13: the from-scratch GPT beside ``transformers``' GPT-2.

Run from the repository root: ``.venv/bin/python benchmarks/gpt.py``. Everything runs
on the CPU in one process, on one torch thread as the chapters run; each comparison
times its variants interleaved (the order reversed every other repeat) and keeps the
median of the per-repeat ratios (``interleaved`` and ``median_ratio`` of
``benchmarks/transformer.py``).

- ``gpt_ratio``: training tokens per second, forward + backward of the next-token
  loss, of ``course_utils.gpt.GPT`` over ``transformers.GPT2LMHeadModel`` with the same
  weights (``load_gpt2_weights``) and batch, float32, dropout 0.1 in both (training
  mode), at two sizes: a small Korean GPT (d_model 128, 4 heads, 4 layers, vocabulary
  2,000, B 16, T 64) and a larger one (d_model 256, 8 heads, 4 layers, B 8, T 256).
  The key is the smaller of the two ratios. Goal: at least 0.8.
- ``kv_generate_speedup``: 128 new greedy tokens after a 16-token prompt, batch 8,
  with ``course_utils.sampling.generate`` reading the whole sequence again each
  step over the same with the key/value cache (``use_cache=True``), small size;
  ``kv_outputs_identical`` checks both give the same tokens. Goal: at least 3.

- ``lora_params_share``: the share of the small model's parameters that train under
  ``course_utils.lora.add_lora`` (r 8 on every ``q_proj`` and ``v_proj``), each shared
  tensor counted once. For information (no goal).

``loadavg`` records ``os.getloadavg()`` before and after: other work on
the machine inflates every time (the ratios less, their sides timed side by side).
Writes ``benchmarks/results/gpt.json``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from transformer import interleaved, median_ratio  # benchmarks/transformer.py

from course_utils.gpt import GPT, GPTConfig, gpt2_config, load_gpt2_weights
from course_utils.lora import add_lora, trainable_share
from course_utils.sampling import generate

RESULTS = Path(__file__).resolve().parent / "results" / "gpt.json"
SIZES = {
    "small Korean GPT": ({"vocab_size": 2000, "max_len": 256, "d_model": 128, "nhead": 4,
                          "num_layers": 4, "dropout": 0.1}, {"batch": 16, "length": 64}),
    "larger": ({"vocab_size": 2000, "max_len": 256, "d_model": 256, "nhead": 8,
                "num_layers": 4, "dropout": 0.1}, {"batch": 8, "length": 256}),
}  # fmt: skip
REPEATS = 9
GENERATE = {"batch": 8, "prompt": 16, "new_tokens": 128, "repeats": 3}
GOALS = {"gpt_ratio": 0.8, "kv_generate_speedup": 3.0}


def _pair(config: GPTConfig) -> tuple[GPT, Any]:
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    theirs = GPT2LMHeadModel(gpt2_config(config)).train()
    ours = GPT(config).train()
    load_gpt2_weights(ours, theirs)
    return ours, theirs


def training_case(config: GPTConfig, shape: dict[str, int]) -> dict[str, Any]:
    ours, theirs = _pair(config)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (shape["batch"], shape["length"] + 1),
                        generator=generator)  # fmt: skip
    inputs, targets = ids[:, :-1], ids[:, 1:]

    def ours_step() -> None:
        ours.zero_grad(set_to_none=True)
        ours.loss(inputs, targets).backward()

    def theirs_step() -> None:
        theirs.zero_grad(set_to_none=True)
        logits = theirs(inputs).logits
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()

    times = interleaved({"ours": ours_step, "transformers": theirs_step}, REPEATS)
    tokens = shape["batch"] * shape["length"]
    return {
        **shape,
        "ours_tokens_per_s": tokens / statistics.median(times["ours"]),
        "transformers_tokens_per_s": tokens / statistics.median(times["transformers"]),
        "ratio": 1 / median_ratio(times, "ours", "transformers"),  # tokens/s: ours over theirs
    }


def generate_case(config: GPTConfig) -> dict[str, Any]:
    torch.manual_seed(0)
    model = GPT(config).eval()
    prompt = torch.randint(0, config.vocab_size, (GENERATE["batch"], GENERATE["prompt"]),
                           generator=torch.Generator().manual_seed(2))  # fmt: skip
    outputs: dict[str, torch.Tensor] = {}

    def run(use_cache: bool) -> None:
        outputs[str(use_cache)] = generate(model, prompt, GENERATE["new_tokens"],
                                           use_cache=use_cache)  # fmt: skip

    times = interleaved(
        {"again": lambda: run(False), "cache": lambda: run(True)}, GENERATE["repeats"]
    )
    return {
        **GENERATE,
        "without_cache_s": statistics.median(times["again"]),
        "with_cache_s": statistics.median(times["cache"]),
        "speedup": median_ratio(times, "again", "cache"),
        "outputs_identical": bool(torch.equal(outputs["False"], outputs["True"])),
    }


def main() -> None:
    start = time.perf_counter()
    load_before = os.getloadavg()
    torch.set_num_threads(1)  # as the chapters run
    training = {name: training_case(GPTConfig(**config), shape)
                for name, (config, shape) in SIZES.items()}  # fmt: skip
    small = GPTConfig(**{**SIZES["small Korean GPT"][0], "dropout": 0.0})
    decoding = generate_case(small)
    adapted = GPT(small)
    add_lora(adapted, ("q_proj", "v_proj"), r=8)
    trainable, total = trainable_share(adapted)
    results = {
        "gpt_ratio": min(case["ratio"] for case in training.values()),
        "kv_generate_speedup": decoding["speedup"],
        "kv_outputs_identical": decoding["outputs_identical"],
        "lora_params_share": trainable / total,
        "lora": {"r": 8, "targets": ["q_proj", "v_proj"], "trainable": trainable, "total": total},
        "goals": {name: f">= {goal}" for name, goal in GOALS.items()},
        "gpt_ratio_is": "the smaller of ours / transformers training tokens per second, two sizes",
        "training": training,
        "generate": decoding,
        "threads": 1,
        "repeats": REPEATS,
        "loadavg": {"before": list(load_before), "after": list(os.getloadavg())},
        "cores": os.cpu_count(),
        "seconds": time.perf_counter() - start,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    for name, case in training.items():
        ours, theirs = case["ours_tokens_per_s"], case["transformers_tokens_per_s"]
        print(f"{name}: ours {ours:,.0f} tokens/s, transformers {theirs:,.0f} tokens/s, "
              f"ratio {case['ratio']:.2f}")  # fmt: skip
    print(
        f"gpt_ratio {results['gpt_ratio']:.2f} (goal >= {GOALS['gpt_ratio']}), "
        f"kv_generate_speedup {results['kv_generate_speedup']:.1f} "
        f"(goal >= {GOALS['kv_generate_speedup']}; identical outputs: "
        f"{results['kv_outputs_identical']}), lora_params_share "
        f"{results['lora_params_share']:.2%} ({trainable:,} of {total:,})"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
