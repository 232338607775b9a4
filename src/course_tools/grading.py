"""Batch grading for instructors: a folder of submissions in, one CSV out.

What a student's notebook can and cannot do to its grade:

- Its cells run one by one in a sandbox (:mod:`course_tools.sandbox`): its own
  process, its own unprivileged user, no network, a private ``/tmp``, and no
  view of the answers, the tests, the instructor's files or other submissions.
- The tests (public and hidden, from the autograder zip ``otter assign`` built)
  run here, in the grader, never in the sandbox. A test receives stand-ins for
  the student's functions; calling one sends the test's inputs into the sandbox
  and brings back plain data (:mod:`course_tools.wire`), which the test compares
  with the reference using the grader's own NumPy and torch. Nothing the
  notebook patches, prints, writes or returns changes how that is done.
- Each question is graded where its ``grader.check("qN")`` cell stands (or after
  the last cell), on what the notebook had defined by then. A timeout, a crash
  or running out of memory later does not take away what was graded before;
  the CSV says what happened and where.
- A question's score is the points of its passed test cases, never more than
  the points it is worth.

Usage: ``python -m course_utils grade SUBMISSIONS --chapter ch02_tokenization --out grades.csv``
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_tools.sandbox import (
    Isolation,
    Limits,
    RemoteEnvironment,
    SandboxStopped,
    SandboxUnavailable,
    Session,
    isolation,
)

__all__ = [
    "GradeResult",
    "Limits",
    "SandboxUnavailable",
    "TestSuite",
    "grade_batch",
    "grade_submission",
    "question_points",
    "write_csv",
]

DEFAULT_TIMEOUT_S = 300
DEFAULT_MEMORY_MB = 4096
MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024

# The cells otter adds to a student notebook; the grader does not run them.
_INIT_CELL = re.compile(
    r"^(\s*#[^\n]*\n)*\s*import otter\s*\n\s*grader\s*=\s*otter\.Notebook\([^)]*\)\s*$"
)
_CHECK_CELL = re.compile(r"^\s*grader\.check\(\s*[\"'](\w+)[\"']\s*\)\s*$")
_OTHER_OTTER_CELL = re.compile(r"^\s*grader\.(check_all|export)\([^)]*\)\s*$")


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
    sandbox: str = ""
    failures: list[str] = field(default_factory=list, repr=False)
    peak_memory_mb: float | None = None  # measured by the cgroup, when there is one

    @property
    def total(self) -> float:
        return float(sum(self.scores.values()))

    @property
    def max_total(self) -> float:
        return float(sum(self.possible.values()))


class TestSuite:
    """The tests of one exercise, read from its autograder zip (trusted: the instructor's)."""

    def __init__(self, autograder_zip: Path) -> None:
        autograder_zip = Path(autograder_zip)
        if not autograder_zip.is_file():
            raise FileNotFoundError(
                f"autograder zip not found: {autograder_zip} (run `make exercises`)"
            )
        self.path = autograder_zip
        with zipfile.ZipFile(autograder_zip) as archive:
            names = [n for n in archive.namelist() if n.startswith("tests/") and n.endswith(".py")]
            if not names:
                raise ValueError(
                    f"{autograder_zip} holds no tests/*.py: is it an otter autograder zip?"
                )
            sources = {Path(n).stem: archive.read(n).decode("utf-8") for n in names}
        for name, source in sources.items():
            if "OK_FORMAT = True" in source:
                raise ValueError(
                    f"{autograder_zip}: tests/{name}.py is in otter's OK format; the grader "
                    "needs exception-based tests (`tests: ok_format: false` in the master)"
                )
        self.sources = dict(sorted(sources.items(), key=lambda item: _question_key(item[0])))
        self.points = {q: float(self.load(q).possible) for q in self.sources}

    def load(self, question: str) -> Any:
        """A fresh otter test file for ``question`` (it keeps its results, so one per grading)."""
        from otter.test_files import ExceptionTestFile

        return ExceptionTestFile.from_string(self.sources[question], path=f"tests/{question}.py")


def question_points(autograder_zip: Path) -> dict[str, float]:
    """``{question: points}`` read from the test files inside an autograder zip."""
    return TestSuite(autograder_zip).points


def _question_key(name: str) -> tuple[str, int]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits else -1)


def read_notebook(path: Path) -> list[str]:
    """The sources of a notebook's code cells, in order; ``ValueError`` if it is not one."""
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"the file is {size} bytes, over the {MAX_NOTEBOOK_BYTES}-byte limit")
    try:
        notebook = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"not a notebook (not JSON: {error})") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a notebook (no list of cells)")
    sources = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise ValueError("not a notebook (a cell's source is not text)")
        sources.append(source)
    return sources


def plan(sources: list[str], questions: list[str]) -> list[tuple[str, int, str]]:
    """The grading steps: ``("run", cell, source)`` and ``("grade", cell, question)``.

    A question is graded in place of its last ``grader.check`` cell, or at the end.
    """
    last_check: dict[str, int] = {}
    for index, source in enumerate(sources):
        match = _CHECK_CELL.match(source)
        if match and match.group(1) in questions:
            last_check[match.group(1)] = index
    steps: list[tuple[str, int, str]] = []
    for index, source in enumerate(sources):
        if _CHECK_CELL.match(source):
            steps += [("grade", index, q) for q, at in last_check.items() if at == index]
        elif not (_INIT_CELL.match(source) or _OTHER_OTTER_CELL.match(source)):
            steps.append(("run", index, source))
    steps += [("grade", len(sources), q) for q in questions if q not in last_check]
    return steps


def _grade_question(suite: TestSuite, question: str, session: Session) -> tuple[float, list[str]]:
    test_file = suite.load(question)
    test_file.run(RemoteEnvironment(session))
    failures = [
        f"{question} {result.test_case.name}: {result.message.splitlines()[-1]}"
        for result in test_file.test_case_results
        if not result.passed
    ]
    score = min(float(test_file.score), suite.points[question])  # never above the points
    return max(score, 0.0), failures


def grade_submission(
    submission: Path,
    suite: TestSuite,
    how: Isolation,
    limits: Limits | None = None,
    report: Callable[..., None] | None = None,
) -> GradeResult:
    """Grade one notebook: its cells in a sandbox, its tests in this process.

    ``report`` (if given) hears ``("cgroups", dirs)`` once the sandbox runs and
    ``("question", name, score, failures)`` as each question is graded.
    """
    limits = limits or Limits()
    submission = Path(submission)
    possible = dict(suite.points)
    result = GradeResult(submission.name, dict.fromkeys(possible, 0.0), possible)
    result.sandbox = how.description
    start = time.perf_counter()
    try:
        sources = read_notebook(submission)
    except (OSError, ValueError) as error:
        result.status, result.reason = "error", f"could not read the submission: {error}"
        return result
    steps = plan(sources, list(possible))
    graded: set[str] = set()
    cell_errors: list[str] = []
    session = Session(how, limits)
    try:
        session.start()
        if report is not None:
            report("cgroups", session.cgroup_dirs)
        for kind, index, payload in steps:
            if kind == "run":
                session.where = f"cell {index + 1}"
                raised = session.run_cell(payload)
                if raised:
                    cell_errors.append(f"cell {index + 1}: {raised}")
            else:
                session.where = f"the tests of {payload}"
                score, failures = _grade_question(suite, payload, session)
                result.scores[payload] = score
                result.failures += failures
                graded.add(payload)
                if report is not None:
                    report("question", payload, score, failures)
    except SandboxStopped as stop:
        ungraded = [q for q in possible if q not in graded]
        lost = f"; {', '.join(ungraded)} not graded (0)" if ungraded else ""
        for question in ungraded:
            result.scores[question] = 0.0
        if stop.kind == "timeout":
            result.status = "timeout"
            result.reason = f"ran past the {limits.timeout_s:g} s limit in {stop.detail}{lost}"
        elif stop.kind == "memory":
            result.status = "memory"
            result.reason = (
                f"ran out of memory (the {limits.memory_mb} MiB cap for the whole submission) "
                f"in {stop.detail}{lost}"
            )
        else:
            result.status = "crashed"
            result.reason = f"{stop.detail}{lost}"
    except Exception as error:  # the grader's own failure: reported, the batch goes on
        result.scores = dict.fromkeys(possible, 0.0)
        result.status, result.reason = "error", f"grader error: {type(error).__name__}: {error}"
    finally:
        info = session.close()
        result.output = session.output
        result.seconds = time.perf_counter() - start
    result.peak_memory_mb = info.get("peak_memory_mb")
    if info.get("oom") and result.status == "crashed":
        result.status = "memory"
    if info.get("left_running"):
        result.reason += "; processes outlived the submission or its cgroup could not be removed"
    if result.status == "ok" and cell_errors:
        result.reason = f"{len(cell_errors)} cell(s) raised, first {cell_errors[0]}"
    return result


# A judge: one process per submission that owns its sandbox and runs its tests,
# so that a submission's data can exhaust only that process (its memory is capped)
# and stall only that process's clock. Forked from a server that has the grader
# and torch already imported.
JUDGE_SLACK_S = 120.0  # the grader's own test time on top of the submission's


def _judge_context() -> Any:
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["course_tools.grading", "numpy", "torch", "otter.test_files"])
    return context


def _judge(notebook: str, zip_path: str, how: Isolation, limits: Limits, channel: Any) -> None:
    import resource

    # Room for the tests on top of what the process already maps (torch is large).
    with open("/proc/self/status", encoding="ascii") as status:
        mapped_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    cap = mapped_kb * 1024 + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    result = grade_submission(
        Path(notebook), TestSuite(Path(zip_path)), how, limits, lambda *m: channel.send(m)
    )
    channel.send(("done", result))


def _grade_in_judge(
    notebook: Path, suite: TestSuite, how: Isolation, limits: Limits
) -> GradeResult:
    context = _judge_context()
    receiver, sender = context.Pipe(duplex=False)
    judge = context.Process(
        target=_judge, args=(str(notebook), str(suite.path), how, limits, sender), daemon=True
    )
    start = time.perf_counter()
    judge.start()
    sender.close()
    hard_limit = limits.startup_s + 2 * limits.timeout_s + JUDGE_SLACK_S
    deadline = time.monotonic() + hard_limit
    result: GradeResult | None = None
    partial = GradeResult(notebook.name, dict.fromkeys(suite.points, 0.0), dict(suite.points))
    partial.sandbox = how.description
    cgroups: list[str] = []
    graded: set[str] = set()
    while result is None:
        left = deadline - time.monotonic()
        if left <= 0 or not receiver.poll(left):
            break
        try:
            message = receiver.recv()
        except (EOFError, OSError):
            break
        if message[0] == "done":
            result = message[1]
        elif message[0] == "cgroups":
            cgroups = message[1]
        elif message[0] == "question":
            _, question, score, failures = message
            partial.scores[question] = score
            partial.failures += failures
            graded.add(question)
    if judge.is_alive():
        judge.kill()
    judge.join()
    receiver.close()
    if result is not None:
        return result
    _remove_cgroups(cgroups)
    ungraded = [q for q in suite.points if q not in graded]
    lost = f"; {', '.join(ungraded)} not graded (0)" if ungraded else ""
    if time.monotonic() >= deadline:
        partial.status = "timeout"
        partial.reason = f"grading it ran past the hard limit of {hard_limit:g} s{lost}"
    else:
        partial.status = "error"
        partial.reason = (
            f"the grader's process for this submission died (exit code {judge.exitcode}; a "
            f"result too large for the {limits.memory_mb} MiB the tests may use?){lost}"
        )
    partial.seconds = time.perf_counter() - start
    return partial


def _remove_cgroups(dirs: list[str]) -> None:
    """Wait for a dead judge's sandbox to be gone, then remove its cgroups."""
    deadline = time.monotonic() + 5
    for directory in map(Path, dirs):
        while time.monotonic() < deadline:
            try:
                if not (directory / "cgroup.procs").read_text().split():
                    break
            except OSError:
                break
            time.sleep(0.05)
        with contextlib.suppress(OSError):
            directory.rmdir()


def grade_batch(
    submissions: Path,
    autograder_zip: Path,
    jobs: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    unsafe: bool = False,
) -> list[GradeResult]:
    """Grade every ``*.ipynb`` in the folder ``submissions``, ``jobs`` at a time.

    Raises :class:`SandboxUnavailable` (naming the fix) rather than run student
    code unsandboxed, unless ``unsafe`` is set. Each submission is graded in a
    process of its own (a multiprocessing "forkserver" child): call this from a
    script's ``if __name__ == "__main__":`` block, as multiprocessing requires.
    """
    folder = Path(submissions)
    if not folder.is_dir():
        raise NotADirectoryError(f"submissions must be a folder of .ipynb files, got {folder}")
    notebooks = sorted(p for p in folder.iterdir() if p.suffix == ".ipynb" and p.is_file())
    if not notebooks:
        raise ValueError(f"no .ipynb submissions in {folder}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
    if memory_mb < 256:
        raise ValueError(
            f"memory_mb must be at least 256 (a Python kernel needs it), got {memory_mb}"
        )
    workers = jobs if jobs is not None else max(1, os.cpu_count() or 1)
    if workers < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    suite = TestSuite(autograder_zip)
    limits = Limits(timeout_s=float(timeout_s), memory_mb=int(memory_mb))
    how = isolation(unsafe=unsafe, limits=limits)
    how.check_secrets([suite.path.resolve(), folder.resolve()])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda nb: _grade_in_judge(nb, suite, how, limits), notebooks))


def write_csv(results: list[GradeResult], path: Path) -> None:
    """One row per submission: per-question scores, total, possible, percent, status, reason."""
    if not results:
        raise ValueError("no results to write")
    questions = list(results[0].possible)
    # errors="replace": whatever a submission managed to put into a reason, the CSV gets written.
    with open(path, "w", newline="", encoding="utf-8", errors="replace") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "submission",
                *questions,
                "total",
                "possible",
                "percent",
                "status",
                "reason",
                "sandbox",
            ]
        )
        for result in results:
            percent = 100 * result.total / result.max_total if result.max_total else 0.0
            writer.writerow([
                result.submission,
                *(f"{result.scores.get(q, 0.0):g}" for q in questions),
                f"{result.total:g}", f"{result.max_total:g}", f"{percent:.1f}",
                result.status, result.reason, result.sandbox,
            ])  # fmt: skip
