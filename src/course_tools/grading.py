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
- What an answer may not use (the master's rules, :mod:`course_tools.rules`) is
  enforced: hidden from the sandbox (an autograder zip whose rules cannot be
  hidden is refused) and read in the cells before each question's tests. A
  question whose answer breaks a rule scores 0 with the rule named in the reason.
- Each question is graded where its ``grader.check("qN")`` cell stands (or after
  the last cell), on what the notebook had defined by then. A timeout, a crash
  or running out of memory later does not take away what was graded before;
  the CSV says what happened and where.
- A question's score is the points of its passed test cases, never more than
  the points it is worth.
- Submissions are read without following links: a symbolic link, a hard link,
  a folder or a pipe named ``*.ipynb`` gets a row of its own with 0 and the
  reason. A notebook may sit in a student's folder (``alice/ch09_seq2seq.ipynb``);
  it is then graded under the folder's name. Everything a submission controls
  (its name, its errors) is escaped and capped before it is printed or written.

Usage: ``python -m course_utils grade SUBMISSIONS --chapter ch02_tokenization --out grades.csv``
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import html
import json
import os
import re
import stat
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_tools import rules, wire
from course_tools.sandbox import (
    Isolation,
    JudgeGroup,
    Limits,
    RemoteEnvironment,
    SandboxStopped,
    SandboxUnavailable,
    Session,
    isolation,
    oom_killed_in,
)
from course_tools.student import otter_cell

__all__ = [
    "GradeResult",
    "Limits",
    "SandboxUnavailable",
    "Submission",
    "TestSuite",
    "find_submissions",
    "grade_batch",
    "grade_submission",
    "item_analysis",
    "printable",
    "question_points",
    "write_csv",
    "write_item_analysis",
]

DEFAULT_TIMEOUT_S = 300
DEFAULT_MEMORY_MB = 4096
MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024
MAX_REASON = 400  # characters of a reason or failure written or printed
MAX_NAME = 120  # characters of a submission's name
MAX_FOLDER_DEPTH = 4  # student folders inside the submissions folder


# --------------------------------------------------------------------------
# what a submission controls, made safe to print and to open in a spreadsheet
# --------------------------------------------------------------------------
_UNSAFE_CHARACTERS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff"
    # invisible ones, which would let two submissions' names look alike: soft hyphen,
    # zero-width space, non-joiner and joiner, word joiner and invisible operators
    "\u00ad\u180e\u200b-\u200d\u2060-\u2064]"
)


def printable(text: Any, limit: int = MAX_REASON) -> str:
    """``text`` on one line: control, bidirectional and invisible characters escaped, capped.

    What a submission controls (its file name, its exceptions' messages) goes
    through this before it reaches a terminal or a file: no ANSI escape sequence
    can move the cursor or recolour the instructor's terminal, and no message
    can be longer than ``limit`` characters.
    """
    text = str(text)[: limit * 4]
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    text = _UNSAFE_CHARACTERS.sub(lambda m: _escape(m.group()), text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _escape(character: str) -> str:
    code = ord(character)
    if character == "\n":
        return " / "
    if character == "\t":
        return " "
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# What starts a formula, also in its full-width forms (an East Asian keyboard's ＝).
_FORMULA_STARTS = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _spreadsheet_safe(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: never a formula (``=1+1``, ``@SUM``, …).

    Also behind leading spaces of any kind (a no-break space before ``=``), which some
    spreadsheets drop when they read a file.
    """
    risky = text[:1] in ("\t", "\r") or text.lstrip()[:1] in _FORMULA_STARTS
    return "'" + text if risky else text


# --------------------------------------------------------------------------
# results, tests and submissions
# --------------------------------------------------------------------------
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
    rule_breaks: dict[str, list[str]] = field(default_factory=dict, repr=False)
    cell_errors: list[str] = field(default_factory=list, repr=False)

    @property
    def total(self) -> float:
        return float(sum(self.scores.values()))

    @property
    def max_total(self) -> float:
        return float(sum(self.possible.values()))

    def summary(self) -> str:
        """The console line: name, score, status, and the first thing that went wrong."""
        line = f"{printable(self.submission, MAX_NAME)}: {self.total:g}/{self.max_total:g}"
        problems = []
        if self.status != "ok":
            problems.append(f"{self.status}: {printable(self.reason, 200)}")
        elif self.reason:
            problems.append(printable(self.reason, 200))
        return line + (f"  [{'; '.join(problems)}]" if problems else "  [ok]")


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
            self.rules = (
                rules.Rules.from_json(archive.read(rules.RULES_FILE).decode("utf-8"))
                if rules.RULES_FILE in archive.namelist()
                else None
            )
        for name, source in sources.items():
            if "OK_FORMAT = True" in source:
                raise ValueError(
                    f"{autograder_zip}: tests/{name}.py is in otter's OK format; the grader "
                    "needs exception-based tests (`tests: ok_format: false` in the master)"
                )
        self.sources = dict(sorted(sources.items(), key=lambda item: _question_key(item[0])))
        self.points = {q: float(self.load(q).possible) for q in self.sources}
        match = re.match(r"(.+)-autograder_", autograder_zip.name)
        self.assignment = self.rules.assignment if self.rules else (match[1] if match else "")

    def load(self, question: str) -> Any:
        """A fresh otter test file for ``question`` (it keeps its results, so one per grading)."""
        from otter.test_files import ExceptionTestFile

        return ExceptionTestFile.from_string(self.sources[question], path=f"tests/{question}.py")

    def forbid(self, question: str) -> list[str]:
        return self.rules.forbid.get(question, []) if self.rules else []


def question_points(autograder_zip: Path) -> dict[str, float]:
    """``{question: points}`` read from the test files inside an autograder zip."""
    return TestSuite(autograder_zip).points


def _question_key(name: str) -> tuple[str, int]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.rstrip("0123456789"), int(digits) if digits else -1)


@dataclass
class Submission:
    """One entry of the submissions folder: its bytes or the file they are in, or why it is
    not graded."""

    name: str  # as the CSV names it: the file's name, or the student's folder
    path: Path
    data: bytes | None = field(default=None, repr=False)
    problem: str = ""
    seen: os.stat_result | None = field(default=None, repr=False)  # the file as it was listed

    def read(self) -> bytes:
        """The notebook's bytes: given, or read now from the file listed (if it is still it)."""
        if self.data is not None:
            return self.data
        if self.problem or self.seen is None:
            raise ValueError(self.problem or "no data")
        return _read_regular_file(self.path, self.seen)


def _read_regular_file(path: Path, seen: os.stat_result) -> bytes:
    """The bytes of the regular file ``path`` is, opened without following a link."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        now = os.fstat(fd)
        same = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns, now.st_ctime_ns) == (
            seen.st_dev, seen.st_ino, seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns
        )  # fmt: skip
        if not stat.S_ISREG(now.st_mode) or not same:
            raise OSError("the file changed since the folder was listed")
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_NOTEBOOK_BYTES:
                raise OSError(f"the file is over the {MAX_NOTEBOOK_BYTES}-byte limit")
        return b"".join(chunks)
    finally:
        os.close(fd)


def find_submissions(folder: Path) -> list[Submission]:
    """Every ``*.ipynb`` in ``folder`` and its students' folders, listed without following links.

    Each is read when it is graded (:meth:`Submission.read`, by the submission's own
    grader process), so a folder of many large files is never in memory at once.

    A notebook alone in a student's folder (``alice/ch09_seq2seq.ipynb``) is named
    after the folder (``alice``). Symbolic links, hard links, and folders, pipes or
    devices named ``*.ipynb`` are listed with the reason they are not graded. Hidden
    entries (``.ipynb_checkpoints``, ``.DS_Store``) are skipped.
    """
    found: list[Submission] = []

    def visit(directory: Path, prefix: str, depth: int) -> None:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path, name = Path(entry.path), prefix + entry.name
            looks_like = entry.name.endswith(".ipynb")
            if entry.is_symlink():
                if looks_like or path.is_dir():
                    found.append(
                        Submission(name, path, problem="a symbolic link, not followed: "
                                   "submit the notebook file itself")
                    )  # fmt: skip
                continue
            if entry.is_dir(follow_symlinks=False):
                if looks_like:
                    found.append(Submission(name, path, problem="a folder named like a notebook"))
                elif depth < MAX_FOLDER_DEPTH:
                    visit(path, name + "/", depth + 1)
                continue
            if not looks_like:
                continue
            seen = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(seen.st_mode):
                problem = "not a regular file (a pipe, socket or device named like a notebook)"
                found.append(Submission(name, path, problem=problem))
            elif seen.st_nlink > 1:
                problem = (
                    f"a hard link (the same file has {seen.st_nlink} names, which may lie "
                    "outside the folder): copy the file instead"
                )
                found.append(Submission(name, path, problem=problem))
            elif seen.st_size > MAX_NOTEBOOK_BYTES:
                problem = (
                    f"the file is {seen.st_size} bytes, over the {MAX_NOTEBOOK_BYTES}-byte limit"
                )
                found.append(Submission(name, path, problem=problem))
            else:
                found.append(Submission(name, path, seen=seen))

    visit(Path(folder), "", 0)
    for submission in found:  # names are printed and written: escaped once, here
        submission.name = printable(submission.name, MAX_NAME)
    # A student's folder with one notebook is that student's submission.
    per_folder = Counter(s.name.rpartition("/")[0] for s in found if "/" in s.name)
    for submission in found:
        folder_name = submission.name.rpartition("/")[0]
        if folder_name and per_folder[folder_name] == 1 and not submission.problem:
            submission.name = folder_name
    return found


def parse_notebook(data: bytes) -> tuple[list[str], str | None]:
    """``(code cell sources, the assignment it was made for)``; ``ValueError`` if not a notebook."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"the file is {len(data)} bytes, over the {MAX_NOTEBOOK_BYTES}-byte limit")
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"not a notebook (not JSON: {error})") from None
    except RecursionError:
        raise ValueError("not a notebook (JSON nested far deeper than a notebook's)") from None
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
    metadata = notebook.get("metadata")
    otter = metadata.get("otter") if isinstance(metadata, dict) else None
    made_for = otter.get("assignment_name") if isinstance(otter, dict) else None
    return sources, made_for if isinstance(made_for, str) else None


def read_notebook(path: Path) -> list[str]:
    """The sources of a notebook's code cells, in order; ``ValueError`` if it is not one."""
    return parse_notebook(Path(path).read_bytes())[0]


def plan(sources: list[str], questions: list[str]) -> list[tuple[str, int, str]]:
    """The grading steps: ``("run", cell, source)`` and ``("grade", cell, question)``.

    A question is graded in place of its last ``grader.check`` cell, or at the end.
    """
    kinds = [otter_cell(source) for source in sources]  # the otter cells are not run
    last_check: dict[str, int] = {}
    for index, kind in enumerate(kinds):
        if kind is not None and kind[0] == "check" and kind[1] in questions:
            last_check[kind[1]] = index
    steps: list[tuple[str, int, str]] = []
    for index, (source, kind) in enumerate(zip(sources, kinds, strict=True)):
        if kind is None:
            steps.append(("run", index, source))
        elif kind[0] == "check":
            steps += [("grade", index, q) for q, at in last_check.items() if at == index]
    steps += [("grade", len(sources), q) for q in questions if q not in last_check]
    return steps


# --------------------------------------------------------------------------
# grading one submission
# --------------------------------------------------------------------------
def _grade_question(suite: TestSuite, question: str, session: Session) -> tuple[float, list[str]]:
    test_file = suite.load(question)
    try:
        test_file.run(RemoteEnvironment(session))
    finally:
        session.end_test()  # the functions its tests passed die with them
    failures = [
        printable(f"{question} {result.test_case.name}: {_last_line(result.message)}")
        for result in test_file.test_case_results
        if not result.passed
    ]
    score = min(float(test_file.score), suite.points[question])  # never above the points
    return max(score, 0.0), failures


def _last_line(message: Any) -> str:
    lines = str(message)[-4 * MAX_REASON :].splitlines()
    return lines[-1] if lines else ""


def _rule_breaks(
    suite: TestSuite, question: str, ran: list[tuple[int, str]]
) -> list[rules.Violation]:
    """The rules the answer breaks, read from the cells that ran before its check."""
    forbid = suite.forbid(question)
    if not forbid or suite.rules is None:
        return []
    provided = suite.rules.provided_cells(ran)
    names = suite.rules.names.get(question, [])
    try:
        return rules.violations(ran, question, forbid, names, trusted=provided)
    except Exception as error:  # fail closed, for this question only
        return [rules.Violation(question, f"읽을 수 없는 코드 ({type(error).__name__})", "escape")]


def grade_submission(
    submission: Submission,
    suite: TestSuite,
    how: Isolation,
    limits: Limits | None = None,
    report: Callable[..., None] | None = None,
    runner_rules: dict[str, list[str]] | None = None,
    hide: list[tuple[str, Path]] | None = None,
) -> GradeResult:
    """Grade one notebook: its cells in a sandbox, its tests in this process.

    ``report`` (if given) hears ``("cgroups", dirs)`` once the sandbox runs and
    ``("question", name, score, failures, rule_breaks)`` as each question is graded.
    ``runner_rules`` and ``hide`` are the rules' part in the sandbox (see
    :class:`course_tools.sandbox.Session`).
    """
    limits = limits or Limits()
    possible = dict(suite.points)
    result = GradeResult(submission.name, dict.fromkeys(possible, 0.0), possible)
    result.sandbox = how.description
    start = time.perf_counter()
    try:
        sources, made_for = parse_notebook(submission.read())
    except (OSError, ValueError) as error:
        result.status, result.reason = "error", f"could not read the submission: {error}"
        return result
    if made_for is not None and suite.assignment and made_for != suite.assignment:
        result.status = "error"
        result.reason = (
            f"this notebook is the exercise {printable(made_for, 60)}, not {suite.assignment}: "
            f"grade it with --chapter {printable(made_for, 60)}"
        )
        return result
    steps = plan(sources, list(possible))
    graded: set[str] = set()
    ran: list[tuple[int, str]] = []
    session = Session(how, limits, runner_rules, hide)
    try:
        session.start()
        if report is not None:
            report("cgroups", session.cgroup_dirs)
        for kind, index, payload in steps:
            if kind == "run":
                session.where = f"cell {index + 1}"
                size = len(payload.encode("utf-8", "surrogatepass"))
                if size > wire.MAX_SOURCE:
                    result.cell_errors.append(
                        f"cell {index + 1}: {size} bytes of source, over the "
                        f"{wire.MAX_SOURCE}-byte limit for one cell: not run"
                    )
                    continue
                ran.append((index + 1, payload))
                raised = session.run_cell(payload)
                if raised:
                    result.cell_errors.append(printable(f"cell {index + 1}: {raised}"))
                continue
            session.where = f"the tests of {payload}"
            breaks = [v.message() for v in _rule_breaks(suite, payload, ran)]
            failures: list[str] = []
            if breaks:  # read before running: the tests of a broken rule do not run
                score = 0.0
            else:
                score, failures = _grade_question(suite, payload, session)
            result.scores[payload] = score
            result.failures += failures
            if breaks:
                result.rule_breaks[payload] = [printable(b) for b in breaks]
            graded.add(payload)
            if report is not None:
                report("question", payload, score, failures, result.rule_breaks.get(payload, []))
    except SandboxStopped as stop:
        ungraded = [q for q in possible if q not in graded]
        lost = f"; {', '.join(ungraded)} not graded (0)" if ungraded else ""
        for question in ungraded:
            result.scores[question] = 0.0
        detail = printable(stop.detail)
        if stop.kind == "timeout":
            result.status = "timeout"
            result.reason = f"ran past the {limits.timeout_s:g} s limit in {detail}{lost}"
        elif stop.kind == "memory":
            result.status = "memory"
            result.reason = (
                f"ran out of memory (the {limits.memory_mb} MiB cap for the whole submission) "
                f"in {detail}{lost}"
            )
        else:
            result.status = "crashed"
            result.reason = f"{detail}{lost}"
    except Exception as error:  # the grader's own failure: reported, the batch goes on
        result.scores = dict.fromkeys(possible, 0.0)
        result.status = "error"
        result.reason = printable(f"grader error: {type(error).__name__}: {error}")
    finally:
        info = session.close()
        result.output = session.output
        result.seconds = time.perf_counter() - start
    result.peak_memory_mb = info.get("peak_memory_mb")
    if info.get("oom") and result.status == "crashed":
        result.status = "memory"
    if info.get("left_running"):
        result.reason += "; processes outlived the submission or its cgroup could not be removed"
    if result.status == "ok":
        notes = []
        if result.rule_breaks:
            first = next(iter(result.rule_breaks.values()))[0]
            notes.append(f"rules broken in {', '.join(result.rule_breaks)}: {first}")
        if result.cell_errors:
            notes.append(f"{len(result.cell_errors)} cell(s) raised, first {result.cell_errors[0]}")
        result.reason = printable("; ".join(notes), 2 * MAX_REASON)
    return result


# A judge: one process per submission that owns its sandbox and runs its tests,
# so that a submission's data can exhaust only that process (its memory counts in
# the submission's cap) and stall only that process's clock. Forked from a server
# that has the grader and torch already imported.
JUDGE_SLACK_S = 120.0  # the grader's own test time on top of the submission's


#: What every judge starts with: the forkserver imports these once
#: (:mod:`course_tools.judge_preload`) and each judge is a fork of it. Besides the grader's
#: own modules, the libraries that the course's hidden tests compare answers with and that
#: take seconds to import (transformers' GPT-2 and BERT about 6 s beyond torch,
#: sentence-transformers 9 s, peft 5 s, NLTK 4 s, gensim 2 s on the course's 2-core machine),
#: which a judge would otherwise import again for every submission. They live in the judge
#: only: the submission's sandbox is a process of its own. One that fails to import is
#: left out, and only the questions whose tests need it see the error.
JUDGE_PRELOAD = [
    "course_tools.grading",
    "numpy",
    "torch",
    "otter.test_files",
    "nltk",
    "gensim.models",
    "transformers.models.gpt2.modeling_gpt2",
    "transformers.models.bert.modeling_bert",
    "transformers.models.albert.modeling_albert",
    "transformers.generation.logits_process",
    "sentence_transformers",
    "peft",
]


def preload(names: list[str]) -> dict[str, str]:
    """Import each module of ``names``; those that fail, with their errors (the rest loaded)."""
    import importlib

    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # one broken library must not stop the grader
            failed[name] = f"{type(error).__name__}: {error}"
    return failed


def preload_report() -> dict[str, str]:
    """The modules of :data:`JUDGE_PRELOAD` this process lacks, with why: empty in a judge
    whose forkserver loaded them all."""
    import sys

    module = sys.modules.get("course_tools.judge_preload")
    failed = {} if module is None else module.FAILED
    return {
        name: failed.get(name, "not imported") for name in JUDGE_PRELOAD if name not in sys.modules
    }


def _judge_context() -> Any:
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["course_tools.judge_preload"])
    return context


def _judge(
    submission: Submission,
    zip_path: str,
    how: Isolation,
    limits: Limits,
    runner_rules: dict[str, list[str]] | None,
    hide: list[tuple[str, Path]],
    channel: Any,
) -> None:
    import resource

    group = None
    if how.cgroup is not None:
        # The judge and the sandbox share one memory cap: what the submission makes the
        # judge decode and hold counts against the submission.
        try:
            group = JudgeGroup(how.cgroup, limits)
        except OSError:
            group = None
        else:
            channel.send(("judge", group.cleanup_dirs(), str(group.dirs["memory"])))
            how = dataclasses.replace(how, cgroup=group.layout)
    # Room for the tests on top of what the process already maps (torch is large).
    with open("/proc/self/status", encoding="ascii") as status:
        mapped_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    cap = mapped_kb * 1024 + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    result = grade_submission(
        submission,
        TestSuite(Path(zip_path)),
        how,
        limits,
        lambda *m: channel.send(m),
        runner_rules,
        hide,
    )
    if group is not None:
        peak = group.peak_memory_mb()
        result.peak_memory_mb = peak if peak is not None else result.peak_memory_mb
    channel.send(("done", result))


def _grade_in_judge(
    submission: Submission,
    suite: TestSuite,
    how: Isolation,
    limits: Limits,
    runner_rules: dict[str, list[str]] | None,
    hide: list[tuple[str, Path]],
) -> GradeResult:
    context = _judge_context()
    receiver, sender = context.Pipe(duplex=False)
    judge = context.Process(
        target=_judge,
        args=(submission, str(suite.path), how, limits, runner_rules, hide, sender),
        daemon=True,
    )
    start = time.perf_counter()
    judge.start()
    sender.close()
    hard_limit = limits.startup_s + 2 * limits.timeout_s + JUDGE_SLACK_S
    deadline = time.monotonic() + hard_limit
    result: GradeResult | None = None
    partial = GradeResult(submission.name, dict.fromkeys(suite.points, 0.0), dict(suite.points))
    partial.sandbox = how.description
    cgroups: list[str] = []
    shared: list[str] = []
    shared_memory: str | None = None
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
        elif message[0] == "judge":
            shared, shared_memory = message[1], message[2]
        elif message[0] == "question":
            _, question, score, failures, breaks = message
            partial.scores[question] = score
            partial.failures += failures
            if breaks:
                partial.rule_breaks[question] = breaks
            graded.add(question)
    if judge.is_alive():
        judge.kill()
    judge.join()
    receiver.close()
    out_of_memory = shared_memory is not None and oom_killed_in(Path(shared_memory))
    _remove_cgroups(cgroups + shared)
    if result is not None:
        return result
    ungraded = [q for q in suite.points if q not in graded]
    lost = f"; {', '.join(ungraded)} not graded (0)" if ungraded else ""
    if time.monotonic() >= deadline:
        partial.status = "timeout"
        partial.reason = f"grading it ran past the hard limit of {hard_limit:g} s{lost}"
    elif out_of_memory:
        partial.status = "memory"
        partial.reason = (
            f"ran out of memory (the {limits.memory_mb} MiB cap for the submission, what it "
            f"sent the grader included){lost}"
        )
    else:
        partial.status = "error"
        partial.reason = (
            f"the grader's process for this submission died (exit code {judge.exitcode}; a "
            f"result too large for the {limits.memory_mb} MiB the tests may use?){lost}"
        )
    partial.seconds = time.perf_counter() - start
    return partial


def _remove_cgroups(dirs: list[str]) -> None:
    """Wait for each cgroup (children first) to be empty, then remove it."""
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


def _not_graded(submission: Submission, suite: TestSuite, how: Isolation) -> GradeResult:
    result = GradeResult(submission.name, dict.fromkeys(suite.points, 0.0), dict(suite.points))
    result.status, result.reason, result.sandbox = "error", submission.problem, how.description
    return result


def grade_batch(
    submissions: Path,
    autograder_zip: Path,
    jobs: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_mb: int = DEFAULT_MEMORY_MB,
    unsafe: bool = False,
) -> list[GradeResult]:
    """Grade every ``*.ipynb`` in the folder ``submissions``, ``jobs`` at a time.

    Students' folders inside it are searched too (see :func:`find_submissions`).
    Raises :class:`SandboxUnavailable` (naming the fix) rather than run student
    code unsandboxed, unless ``unsafe`` is set. Each submission is graded in a
    process of its own (a multiprocessing "forkserver" child): call this from a
    script's ``if __name__ == "__main__":`` block, as multiprocessing requires.
    """
    folder = Path(submissions)
    if not folder.is_dir():
        raise NotADirectoryError(f"submissions must be a folder of .ipynb files, got {folder}")
    found = find_submissions(folder)
    if not found:
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
    if suite.rules is not None:  # graded only where the sandbox can hide every forbidden name
        suite.rules.check_enforceable(str(autograder_zip))
    limits = Limits(timeout_s=float(timeout_s), memory_mb=int(memory_mb))
    how = isolation(unsafe=unsafe, limits=limits)
    how.check_secrets([suite.path.resolve(), folder.resolve()])
    runner_rules, hide = None, []
    if suite.rules is not None:
        hidden = suite.rules.hidden()
        runner_rules = {"hidden": hidden}
        hide = rules.hidden_paths(hidden) if how.mode == "bwrap" else []

    def one(submission: Submission) -> GradeResult:
        if submission.problem:
            return _not_graded(submission, suite, how)
        return _grade_in_judge(submission, suite, how, limits, runner_rules, hide)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, found))


# --------------------------------------------------------------------------
# what the instructor reads
# --------------------------------------------------------------------------
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
                "rule_breaks",
            ]
        )
        for result in results:
            percent = 100 * result.total / result.max_total if result.max_total else 0.0
            writer.writerow([
                _spreadsheet_safe(printable(result.submission, MAX_NAME)),
                *(f"{result.scores.get(q, 0.0):g}" for q in questions),
                f"{result.total:g}", f"{result.max_total:g}", f"{percent:.1f}",
                result.status,
                _spreadsheet_safe(printable(result.reason, 2 * MAX_REASON)),
                _spreadsheet_safe(result.sandbox),
                " ".join(result.rule_breaks),
            ])  # fmt: skip


def _failure_kind(failure: str) -> str:
    """A failure without the numbers in its message, so that the same mistake counts as one."""
    case, _, message = failure.partition(": ")
    message = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", message)
    return f"{case}: {message}"[:160]


def item_analysis(results: list[GradeResult]) -> list[dict[str, Any]]:
    """Per question: mean, share of full marks and of zero, rules broken, common failures."""
    if not results:
        raise ValueError("no results to analyse")
    rows = []
    for question, possible in results[0].possible.items():
        scores = [r.scores.get(question, 0.0) for r in results]
        failures: Counter[str] = Counter()
        for result in results:
            mine = [f for f in result.failures if f.startswith(question + " ")]
            kinds = {_failure_kind(f.partition(" ")[2]) for f in mine}
            kinds |= {"규칙 위반"} if question in result.rule_breaks else set()
            failures.update(kinds)
        n = len(scores)
        rows.append(
            {
                "question": question,
                "possible": possible,
                "submissions": n,
                "mean": sum(scores) / n,
                "mean_percent": 100 * sum(scores) / (n * possible) if possible else 0.0,
                "full_marks_share": sum(s >= possible for s in scores) / n,
                "zero_share": sum(s == 0 for s in scores) / n,
                "rule_breaks": sum(question in r.rule_breaks for r in results),
                "common_failures": failures.most_common(3),
            }
        )
    return rows


def write_item_analysis(results: list[GradeResult], csv_path: Path, html_path: Path) -> None:
    """The item analysis as a CSV and as a small HTML page with a bar chart (no scripts)."""
    rows = item_analysis(results)
    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["question", "possible", "submissions", "mean", "mean_percent", "full_marks_share",
             "zero_share", "rule_breaks", "common_failures"]
        )  # fmt: skip
        for row in rows:
            common = " | ".join(f"{n}× {printable(k, 160)}" for k, n in row["common_failures"])
            writer.writerow([
                row["question"], f"{row['possible']:g}", row["submissions"], f"{row['mean']:.2f}",
                f"{row['mean_percent']:.1f}", f"{row['full_marks_share']:.2f}",
                f"{row['zero_share']:.2f}", row["rule_breaks"], _spreadsheet_safe(common),
            ])  # fmt: skip
    width, bar_height, gap, left = 640, 22, 8, 60
    height = len(rows) * (bar_height + gap) + 40
    bars = []
    for i, row in enumerate(rows):
        y = 20 + i * (bar_height + gap)
        length = (width - left - 80) * row["mean_percent"] / 100
        full = (width - left - 80) * row["full_marks_share"]
        name = html.escape(row["question"])
        bars.append(
            f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{name}</text>'
            f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar_height}" fill="#4c78a8"/>'
            f'<rect x="{left}" y="{y + bar_height - 4}" width="{full:.1f}" height="4" '
            'fill="#f58518"/>'
            f'<text x="{left + length + 6:.1f}" y="{y + 16}">{row["mean_percent"]:.0f}%</text>'
        )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="13" role="img" '
        f'aria-label="문항별 평균 득점률">{"".join(bars)}</svg>'
    )
    cells = [
        (
            row["question"], f"{row['possible']:g}", f"{row['mean']:.2f}",
            f"{row['mean_percent']:.1f}%", f"{100 * row['full_marks_share']:.0f}%",
            f"{100 * row['zero_share']:.0f}%", row["rule_breaks"],
            "; ".join(f"{n}× {printable(k, 160)}" for k, n in row["common_failures"]),
        )
        for row in rows
    ]  # fmt: skip
    table = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in cells
    )
    page = (
        '<!doctype html><html lang="ko"><head><meta charset="utf-8">'
        "<title>문항 분석</title><style>body{font-family:sans-serif;margin:2em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px}</style>"
        f"</head><body><h1>문항 분석</h1><p>제출 {len(results)}개. 막대는 평균 득점률, "
        "아래의 주황 선은 만점을 받은 비율입니다.</p>"
        f"{svg}<table><tr><th>문항</th><th>배점</th><th>평균</th><th>평균 득점률</th>"
        "<th>만점 비율</th><th>0점 비율</th><th>규칙 위반</th><th>흔한 실패</th></tr>"
        f"{table}</table></body></html>\n"
    )
    Path(html_path).write_text(page, encoding="utf-8")
