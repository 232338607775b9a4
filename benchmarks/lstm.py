"""Benchmark for chapter 8: the from-scratch LSTM beside ``torch.nn.LSTM``, in one process.

Run from the repository root: ``.venv/bin/python benchmarks/lstm.py``.
Times one forward plus backward pass (a sum of the outputs and the final
states as the loss) with the same weights and the same input, on the CPU,
single-threaded as the chapter runs.
Five runs are timed, interleaved and repeated, and the median is kept:

- ``torch``: ``torch.nn.LSTM`` as shipped. On a CPU with oneDNN (Intel's deep
  learning kernel library, built into the x86 wheels) it runs oneDNN's fused
  LSTM: the whole sequence, forward and backward, in one call.
- ``torch, no oneDNN``: the same module with oneDNN switched off
  (``course_utils.experiments.ch08_lstm_gru.WithoutOneDNN``): torch's own C++
  loop over time, recording a dozen or so operations per step for autograd and
  multiplying matrices with the same BLAS as ours. It separates what the
  implementation costs from what the kernel library costs; the two libraries'
  matrix products need not run at the same speed on a given CPU.
- ``ours``: ``course_utils.lstm.LSTM`` (Python loop, hand-written backward);
- ``ours, autograd``: the same cell with autograd recording every operation,
  to show what the hand-written backward buys;
- ``ours, matrix products only``: nothing but the matrix products ours makes,
  with the same shapes and operand layouts (:func:`matrix_products`). It is the
  floor of ours with this BLAS: ``ours ÷ products`` is what the rest of our
  implementation costs, ``products ÷ torch`` what the BLAS alone costs against
  torch. The ratio to torch is their product.
- ``ours, oneDNN's matrix products`` (a diagnostic; the course never runs this
  way): ours again, with torch's fp32 matrix products sent to oneDNN, the
  library torch's own LSTM runs on. torch does that only under
  ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``, a setting that
  *allows* bf16 arithmetic, so this run is made only where checks
  (:func:`onednn_products_unavailable`) find that torch sends the products to
  oneDNN on this CPU and that they are still computed in fp32 there (the layer's
  outputs and gradients agree with its plain run); otherwise a line says why it
  was not run. It shows how much of ours ÷ torch is the two libraries' matrix
  products rather than ours.

The headline row is the configuration of the chapter's adding-problem
experiment; a wider layer is reported beside it. Writes
``benchmarks/results/lstm.json`` with ``ours_s``, ``torch_s`` and ``ratio``.
"""

from __future__ import annotations

import contextlib
import json
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from course_utils.experiments.ch08_lstm_gru import WithoutOneDNN
from course_utils.lstm import (
    LSTM,
    AutogradLSTM,
)

ROOT = Path(__file__).resolve().parents[1]
HEADLINE = "adding problem, T=100 (8장)"
CONFIGS = {
    # 8장's long-range experiment at its longest setting: the headline.
    HEADLINE: {"input_size": 2, "hidden_size": 32, "batch": 64, "steps": 100},
    # A wider layer, the size of 6장's language model (embedding 64, hidden 256, 64 steps).
    "wider: H=256, T=64": {"input_size": 64, "hidden_size": 256, "batch": 32, "steps": 64},
}
REPEATS = 15


def forward_backward(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """One forward and backward pass, the sum of the outputs and final states as the loss."""
    out, (h, c) = model(x)
    (out.sum() + h.sum() + c.sum()).backward()
    return out.detach()


def time_once(model: torch.nn.Module | Callable[[], None], x: torch.Tensor) -> float:
    if not isinstance(model, torch.nn.Module):
        start = time.perf_counter()
        model()
        return time.perf_counter() - start
    model.zero_grad(set_to_none=True)
    start = time.perf_counter()
    forward_backward(model, x)
    return time.perf_counter() - start


def matrix_products(config: dict[str, int]) -> Callable[[], None]:
    """The matrix products of one forward and backward pass of ``course_utils.lstm.LSTM``, alone.

    Same shapes and operand layouts as the layer (``LSTMSequence``'s input product,
    its two products per step and its two weight gradients; the input needs no
    gradient), on random operands: what ours would take if everything else were free.
    """
    steps, batch = config["steps"], config["batch"]
    inputs, hidden = config["input_size"], config["hidden_size"]
    generator = torch.Generator().manual_seed(0)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator)

    x_2d, weight_ih = randn(steps * batch, inputs), randn(4 * hidden, inputs)
    bias = randn(4 * hidden)
    weight_hh, h = randn(4 * hidden, hidden), randn(batch, hidden)
    hs, grad_gates = randn(steps * batch, hidden), randn(steps * batch, 4 * hidden)
    gates, grad_h = randn(steps, batch, 4 * hidden), randn(steps, batch, hidden)

    # Per-step views made once, as LSTMSequence makes them, and its loops' inference mode.
    gates_t, grad_h_t = gates.unbind(0), grad_h.unbind(0)
    grad_t = grad_gates.view(steps, batch, 4 * hidden).unbind(0)
    weight_x, weight_t = weight_ih.T, weight_hh.T  # W_x, W_h as the views LSTMSequence uses

    def run() -> None:
        torch.addmm(bias, x_2d, weight_x)  # X W_x + b for every step
        with torch.inference_mode():
            for out in gates_t:  # H_{t-1} W_h
                out.addmm_(h, weight_t)
            for out, grad in zip(grad_h_t, grad_t, strict=True):  # to h_{t-1}: (B, 4H) · (4H, H)
                out.addmm_(grad, weight_hh)
        hs.T @ grad_gates  # W_h's gradient
        x_2d.T @ grad_gates  # W_x's gradient

    return run


ONEDNN = "ours, oneDNN's matrix products"
# What ATen asks of the CPU before it sends fp32 products to oneDNN under the setting below.
ONEDNN_ROUTING_FLAGS = ({"avx512bw", "avx512vl", "avx512dq"}, {"avx_ne_convert"})


def cpu_fields() -> dict[str, str]:
    """The last processor's fields of /proc/cpuinfo (every core has the same); {} elsewhere."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in info.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    return fields


def onednn_products_unavailable(model: torch.nn.Module, x: torch.Tensor) -> str | None:
    """Why the oneDNN diagnostic cannot run here, or None when it can.

    It needs torch's setting, oneDNN, a CPU for which torch sends fp32 products to oneDNN
    under it, and products still computed in fp32 there (the setting allows bf16): ``model``'s
    outputs and gradients on ``x`` must agree with and without the setting within 1e-5 of
    each tensor's largest entry (both are about 1e-6 from float64 here; bf16's 8 significant
    bits would be off by about 1e-2).
    """
    matmul = getattr(getattr(torch.backends.mkldnn, "matmul", None), "fp32_precision", None)
    if matmul is None:
        return "this torch has no torch.backends.mkldnn.matmul.fp32_precision"
    if not torch.backends.mkldnn.is_available():
        return "this torch is built without oneDNN"
    flags = set(cpu_fields().get("flags", "").split())
    if not any(needed <= flags for needed in ONEDNN_ROUTING_FLAGS):
        return "on this CPU torch keeps fp32 products in its BLAS under that setting"
    results = []
    for setting in (contextlib.nullcontext(), onednn_products()):
        with setting:
            model.zero_grad(set_to_none=True)
            out = forward_backward(model, x)
            results.append([out, *(p.grad for p in model.parameters())])
    for plain, onednn in zip(*results, strict=True):  # relative to each tensor's largest entry
        if (plain - onednn).abs().max() > 1e-5 * plain.abs().max():
            return "on this CPU oneDNN computes them with less than fp32 precision"
    return None


@contextlib.contextmanager
def onednn_products() -> Iterator[None]:
    """torch's fp32 matrix products sent to oneDNN, for the block (the setting restored after)."""
    matmul = torch.backends.mkldnn.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = "bf16"
    try:
        yield
    finally:
        matmul.fp32_precision = previous


def with_onednn_products(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], None]:
    """:func:`forward_backward` of ``model`` with oneDNN's products, timed as time_once does."""

    def run() -> None:
        model.zero_grad(set_to_none=True)
        with onednn_products():
            forward_backward(model, x)

    return run


def run(config: dict[str, int]) -> dict[str, float]:
    torch.manual_seed(0)
    reference = torch.nn.LSTM(config["input_size"], config["hidden_size"], batch_first=True)
    ours, autograd = (
        cls(config["input_size"], config["hidden_size"], batch_first=True)
        for cls in (LSTM, AutogradLSTM)
    )
    ours.load_state_dict(reference.state_dict())
    autograd.load_state_dict(reference.state_dict())
    x = torch.randn(config["batch"], config["steps"], config["input_size"])
    models: dict[str, torch.nn.Module | Callable[[], None]] = {
        "torch": reference,
        "torch, no oneDNN": WithoutOneDNN(reference),
        "ours": ours,
        "ours, autograd": autograd,
        "ours, matrix products only": matrix_products(config),
    }
    unavailable = onednn_products_unavailable(ours, x)
    if unavailable is None:
        models[ONEDNN] = with_onednn_products(ours, x)
    else:
        print(f"{ONEDNN} not run: {unavailable}")
    times: dict[str, list[float]] = {name: [] for name in models}
    for model in models.values():  # warm-up
        time_once(model, x)
    for _ in range(REPEATS):
        for name, model in models.items():
            times[name].append(time_once(model, x))
    return {name: statistics.median(values) for name, values in times.items()}


def cpu_description() -> str:
    """The CPU's model name and its widest vector instructions (Linux; else the platform's name)."""
    fields = cpu_fields()
    if not fields:
        return platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{fields.get('model name', platform.machine())}, {vector}"


def main() -> None:
    torch.set_num_threads(1)  # as 8장 runs (its trainings share the cores, one process each)
    rows = {name: run(config) for name, config in CONFIGS.items()}
    threads = torch.get_num_threads()
    print(f"LSTM forward + backward on the CPU ({threads} threads), median of {REPEATS}")
    print(f"CPU: {cpu_description()}")
    print("ratio: ours (or autograd) over torch; the 'no oneDNN' ratio is ours over that run;")
    print("products: ours' matrix products alone, then ours over them and them over torch")
    print(
        f"{'configuration':<30} {'torch':>9} {'ours':>9} {'ratio':>6} "
        f"{'no oneDNN':>10} {'ratio':>6} {'autograd':>9} {'ratio':>6} "
        f"{'products':>9} {'ours/':>6} {'/torch':>6}"
    )
    for name, t in rows.items():
        products = t["ours, matrix products only"]
        print(
            f"{name:<30} {t['torch'] * 1e3:7.1f}ms {t['ours'] * 1e3:7.1f}ms "
            f"{t['ours'] / t['torch']:5.2f}× {t['torch, no oneDNN'] * 1e3:8.1f}ms "
            f"{t['ours'] / t['torch, no oneDNN']:5.2f}× {t['ours, autograd'] * 1e3:7.1f}ms "
            f"{t['ours, autograd'] / t['torch']:5.2f}× {products * 1e3:7.1f}ms "
            f"{t['ours'] / products:5.2f}× {products / t['torch']:5.2f}×"
        )
    if all(ONEDNN in t for t in rows.values()):
        print(f"diagnostic, {ONEDNN} (the fp32 products of torch's own LSTM library):")
        for name, t in rows.items():
            print(f"{name:<30} {t[ONEDNN] * 1e3:7.1f}ms {t[ONEDNN] / t['torch']:5.2f}× torch")
    headline = rows[HEADLINE]
    results = {
        "ours_s": headline["ours"],
        "torch_s": headline["torch"],
        "ratio": headline["ours"] / headline["torch"],
        "configurations": {
            name: {
                **CONFIGS[name],
                **{f"{k}_s": v for k, v in t.items()},
                "ratio": t["ours"] / t["torch"],
                "ratio_to_torch_without_onednn": t["ours"] / t["torch, no oneDNN"],
                "autograd_ratio": t["ours, autograd"] / t["torch"],
                "ratio_to_matrix_products": t["ours"] / t["ours, matrix products only"],
                "matrix_products_ratio": t["ours, matrix products only"] / t["torch"],
                **({"onednn_products_ratio": t[ONEDNN] / t["torch"]} if ONEDNN in t else {}),
            }
            for name, t in rows.items()
        },
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": cpu_description(),
    }
    out = ROOT / "benchmarks" / "results" / "lstm.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
