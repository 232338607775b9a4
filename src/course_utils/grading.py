"""Batch grading for instructors: a folder of submissions in, one CSV out.

Each submission is graded by ``otter run`` in its own process group, with a
wall-clock limit and an address-space cap, several at a time. A submission
that loops forever, exhausts memory, kills its kernel or calls ``os._exit``
gets 0 for every question it did not finish, with the reason in the CSV, and
the batch goes on.

Usage: ``python -m course_utils grade SUBMISSIONS --chapter ch02_tokenization --out grades.csv``
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GradeResult", "grade_batch", "grade_submission", "question_points", "write_csv"]

DEFAULT_TIMEOUT_S = 300
DEFAULT_MEMORY_MB = 4096


@dataclass
class GradeResult:
    """One submission's grade. ``status`` is ok, timeout, memory, crashed or error."""

    submission: str
    scores: dict[str, float]
    possible: dict[str, float]
    status: str = "ok"
    reason: str = ""
    seconds: float = 0.0
    output: str = field(default="", repr=False)

    @property
    def total(self) -> float:
        return float(sum(self.scores.values()))

    @property
    def max_total(self) -> float:
        return float(sum(self.possible.values()))


def question_points(autograder_zip: Path) -> dict[str, float]:
    """``{question: points}`` read from the test files inside an autograder zip."""
    from otter.test_files import ExceptionTestFile, OKTestFile

    autograder_zip = Path(autograder_zip)
    if not autograder_zip.is_file():
        raise FileNotFoundError(
            f"autograder zip not found: {autograder_zip} (run `make exercises`)"
        )
    points: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(autograder_zip) as archive:
        names = sorted(
            n for n in archive.namelist() if n.startswith("tests/") and n.endswith(".py")
        )
        if not names:
            raise ValueError(
                f"{autograder_zip} holds no tests/*.py: is it an otter autograder zip?"
            )
        archive.extractall(tmp, members=names)
        for name in names:
            path = os.path.join(tmp, name)
            source = Path(path).read_text(encoding="utf-8")
            loader = OKTestFile if "OK_FORMAT = True" in source else ExceptionTestFile
            test_file = loader.from_file(path)
            points[Path(name).stem] = float(test_file.possible)
    return dict(sorted(points.items(), key=lambda item: _question_key(item[0])))


def _question_key(name: str) -> tuple[str, int]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits else -1)


# Set the address-space cap, then become the grader. Done in the child itself
# because ``preexec_fn`` is unsafe when grading runs in several threads.
_LIMIT_THEN_EXEC = (
    "import os, resource, sys; limit = int(sys.argv[1]) * 1024 * 1024; "
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def _kill_tree(process: subprocess.Popen[str]) -> None:
    """Kill the grader, its kernel and anything they started."""
    try:
        import psutil

        children = psutil.Process(process.pid).children(recursive=True)
    except Exception:  # the process may already be gone
        children = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for child in children:
        with contextlib.suppress(Exception):  # already gone
            child.kill()


def _reason_from_output(output: str) -> tuple[str, str]:
    lowered = output.lower()
    if "memoryerror" in lowered or "cannot allocate memory" in lowered:
        return "memory", "ran out of memory (raise --memory-mb if the exercise really needs more)"
    if "deadkernelerror" in lowered or "kernel died" in lowered:
        return "crashed", "the notebook's kernel died (os._exit, a segfault or a kill)"
    last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["no output"]
    return "crashed", f"otter run failed: {last[0][:200]}"


def grade_submission(
    submission: Path,
    autograder_zip: Path,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    possible: dict[str, float] | None = None,
) -> GradeResult:
    """Grade one notebook with ``otter run`` under a time limit and a memory cap."""
    submission = Path(submission)
    if possible is None:
        possible = question_points(autograder_zip)
    zeros = dict.fromkeys(possible, 0.0)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as out_dir:
        command = [
            sys.executable, "-c", _LIMIT_THEN_EXEC, str(memory_mb),
            sys.executable, "-m", "otter", "run", "--no-logo",
            "-a", str(Path(autograder_zip).resolve()), "-o", out_dir, str(submission.resolve()),
        ]  # fmt: skip
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=out_dir,
            start_new_session=True,  # its own process group, so a timeout kills the kernel too
        )
        try:
            output, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_tree(process)
            output, _ = process.communicate()
            return GradeResult(
                submission.name, zeros, possible, "timeout",
                f"ran past the {timeout_s:g} s limit; questions not finished score 0",
                time.perf_counter() - start, output,
            )  # fmt: skip
        finally:
            _kill_tree(process)  # a kernel left behind by a crash
        seconds = time.perf_counter() - start
        results_path = Path(out_dir) / "results.json"
        if process.returncode != 0 or not results_path.is_file():
            status, reason = _reason_from_output(output)
            return GradeResult(submission.name, zeros, possible, status, reason, seconds, output)
        results = json.loads(results_path.read_text(encoding="utf-8"))
    scores = dict(zeros)
    for test in results.get("tests", []):
        if test.get("name") in scores and test.get("score") is not None:
            scores[test["name"]] = float(test["score"])
    missing = [q for q in possible if not any(t.get("name") == q for t in results.get("tests", []))]
    status, reason = "ok", ""
    if missing:
        status, reason = _reason_from_output(output)
        reason = f"no result for {', '.join(missing)}: {reason}"
    return GradeResult(submission.name, scores, possible, status, reason, seconds, output)


def grade_batch(
    submissions: Path,
    autograder_zip: Path,
    jobs: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
) -> list[GradeResult]:
    """Grade every ``*.ipynb`` in the folder ``submissions``, ``jobs`` at a time."""
    folder = Path(submissions)
    if not folder.is_dir():
        raise NotADirectoryError(f"submissions must be a folder of .ipynb files, got {folder}")
    notebooks = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb")
    if not notebooks:
        raise ValueError(f"no .ipynb submissions in {folder}")
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    if memory_mb < 256:
        raise ValueError(
            f"memory_mb must be at least 256 (a Python kernel needs it), got {memory_mb}"
        )
    workers = jobs if jobs is not None else max(1, os.cpu_count() or 1)
    if workers < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    possible = question_points(autograder_zip)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(grade_submission, nb, autograder_zip, timeout_s, memory_mb, possible)
            for nb in notebooks
        ]
        return [future.result() for future in futures]


def write_csv(results: list[GradeResult], path: Path) -> None:
    """One row per submission: per-question scores, total, possible, percent, status, reason."""
    if not results:
        raise ValueError("no results to write")
    questions = list(results[0].possible)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["submission", *questions, "total", "possible", "percent", "status", "reason"]
        )
        for result in results:
            percent = 100 * result.total / result.max_total if result.max_total else 0.0
            writer.writerow([
                result.submission,
                *(f"{result.scores.get(q, 0.0):g}" for q in questions),
                f"{result.total:g}", f"{result.max_total:g}", f"{percent:.1f}",
                result.status, result.reason,
            ])  # fmt: skip
