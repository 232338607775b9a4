"""Benchmark for the batch grader: one chapter-6 submission, then a class of 30.

Run from the repository root: ``.venv/bin/python benchmarks/grading.py``.

- ``one_submission_s``: the solution of chapter 6 graded by ``grade_batch``
  alone (sandbox check and start, every cell, every public and hidden test),
  median of 3 in one process; ``one_submission_cold_s`` is the first of them,
  which also pays for importing otter and torch into the grader. Goal: at most
  30 s. Beside it, in the same process and interleaved, otter's own
  ``otter run`` on the same notebook (no sandbox, the tests in the
  student's kernel), the grader this one replaced: ``ratio_to_otter_run``.
- ``batch_of_30_s``: 30 submissions (10 solutions, 10 blank notebooks, 10
  plausible wrong answers) with the default number of parallel jobs.

Writes ``benchmarks/results/grading.json``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from course_tools import exercises, grading

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "ch06_rnn"
REPEATS = 3
WRONG = (  # q1 with tanh on the output too (tests/wrong_answers/ch06_rnn.py)
    "def jordan_step(x, o_prev, W_xh, W_qh, b_h, W_hq, b_q):\n"
    "    h = np.tanh(x @ W_xh + o_prev @ W_qh + b_h)\n"
    "    return h, np.tanh(h @ W_hq + b_q)\n"
)


def _assignment(tmp: Path) -> exercises.Assignment:
    dist = ROOT / exercises.DIST_DIR / CHAPTER
    try:
        zip_path = exercises.autograder_zip(dist)
        return exercises.Assignment(
            CHAPTER,
            dist / "student" / f"{CHAPTER}.ipynb",
            dist / "autograder" / f"{CHAPTER}.ipynb",
            zip_path,
        )
    except FileNotFoundError:
        return exercises.assign(ROOT / exercises.MASTERS_DIR / f"{CHAPTER}.md", tmp / "assign")


def _wrong(solution: dict) -> dict:
    copy = json.loads(json.dumps(solution))
    for cell in copy["cells"]:
        if cell["cell_type"] == "code" and "".join(cell["source"]).startswith("def jordan_step"):
            cell["source"] = WRONG
    return copy


def _time_ours(folder: Path, zip_path: Path) -> float:
    start = time.perf_counter()
    [result] = grading.grade_batch(folder, zip_path, jobs=1)
    elapsed = time.perf_counter() - start
    assert result.total == result.max_total, result.reason
    return elapsed


def _time_otter(notebook: Path, zip_path: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "otter", "run", "--no-logo", "-a", str(zip_path), "-o", str(out),
         str(notebook)],
        check=True, capture_output=True, cwd=out,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        assignment = _assignment(tmp)
        solution = json.loads(assignment.autograder_notebook.read_text(encoding="utf-8"))
        blank = json.loads((ROOT / "notebooks" / f"{CHAPTER}.ipynb").read_text(encoding="utf-8"))

        one = tmp / "one"
        one.mkdir()
        (one / "solution.ipynb").write_text(json.dumps(solution), encoding="utf-8")
        otter_out = tmp / "otter-out"
        otter_out.mkdir()
        ours, otter = [], []
        for _ in range(REPEATS):  # interleaved, so both see the same machine
            ours.append(_time_ours(one, assignment.autograder_zip))
            otter.append(_time_otter(one / "solution.ipynb", assignment.autograder_zip, otter_out))

        batch = tmp / "batch"
        batch.mkdir()
        for i in range(10):
            for name, notebook in (("solution", solution), ("blank", blank)):
                (batch / f"{name}-{i:02d}.ipynb").write_text(json.dumps(notebook), "utf-8")
            (batch / f"wrong-{i:02d}.ipynb").write_text(json.dumps(_wrong(solution)), "utf-8")
        start = time.perf_counter()
        results = grading.grade_batch(batch, assignment.autograder_zip)
        batch_s = time.perf_counter() - start
        totals = {r.submission.split("-")[0]: r.total for r in results}
        assert len(results) == 30 and all(r.status == "ok" for r in results)
        full = results[0].max_total
        assert totals["solution"] == full and totals["blank"] == 0, totals
        assert 0 < totals["wrong"] < full, totals  # the wrong jordan_step loses its question

    report = {
        "one_submission_s": statistics.median(ours),
        "one_submission_cold_s": ours[0],
        "otter_run_s": statistics.median(otter),
        "ratio_to_otter_run": statistics.median(ours) / statistics.median(otter),
        "batch_of_30_s": batch_s,
        "jobs": os.cpu_count(),
        "sandbox": results[0].sandbox,
        "peak_memory_mb_per_submission": max(r.peak_memory_mb or 0.0 for r in results),
        "chapter": CHAPTER,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
    }
    print(
        f"one submission ({CHAPTER}, sandboxed): {report['one_submission_s']:.2f} s "
        f"(first, with the grader's imports: {ours[0]:.2f} s; goal ≤ 30 s)"
    )
    print(
        f"otter run, same notebook, no sandbox:   {report['otter_run_s']:.2f} s "
        f"(ratio {report['ratio_to_otter_run']:.2f})"
    )
    print(f"batch of 30 with {report['jobs']} jobs:            {batch_s:.1f} s")
    print(f"sandbox: {report['sandbox']}")
    out = ROOT / "benchmarks" / "results" / "grading.json"
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
