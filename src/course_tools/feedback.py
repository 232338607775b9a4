"""``grader.check`` in Korean: what a student sees when a public test passes or fails.

otter's own ``check`` frames every result in English ("❌ Test case failed / Error
at line 16 in test q1:" and the test's source line, with the message's quotes
clipped). :func:`run_checks` runs the same test cases, loaded by otter from the
same files, and says in Korean

- which answer is still blank (a name not defined yet, a value still ``...``, a
  function whose body is only ``...`` or ``pass``), without running the test;
- for an assertion, the test's own Korean message, and the value the answer's
  function returned when that was None (a missing ``return``);
- for an error, the call of the answer's function that raised it (or, when the
  test raised it on what the function returned, that call and what it returned),
  and the answer's line the error came from.

Only the student's own check changes: the grading of submissions runs otter's test
files in the sandbox (:mod:`course_tools.grading`) and never imports this.
"""

from __future__ import annotations

import dis
import functools
import html
import inspect
import linecache
import re
import reprlib
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CaseResult", "CheckAllResult", "CheckResult", "question_label", "run_checks"]

MAX_SHOWN = 160  # characters of one shown value or call


def question_label(question: str) -> str:
    """``"문제 3 (q3)"`` for ``"q3"``; other names as they are."""
    match = re.fullmatch(r"q(\d+)", question)
    return f"문제 {match.group(1)} ({question})" if match else question


def _does_nothing(function: types.FunctionType) -> bool:
    """Whether ``function``'s body is only ``...``, ``pass`` or a docstring: it returns None."""
    ops = [
        (i.opname, i.argval)
        for i in dis.get_instructions(function)
        if i.opname not in ("RESUME", "NOP", "CACHE")
    ]
    return ops in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("RETURN_CONST", None)])


def _is_blank(value: Any) -> bool:
    """Whether ``value`` is an answer not written yet: ``...``, or a function doing nothing."""
    if value is Ellipsis:
        return True
    return isinstance(value, types.FunctionType) and _does_nothing(value)


_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60
_repr.maxlist = _repr.maxtuple = _repr.maxset = _repr.maxdict = 6


def shown(value: Any) -> str:
    """A short, one-line picture of ``value``: a large array or tensor by shape and type."""
    try:
        shape = getattr(value, "shape", None)
        dtype = getattr(value, "dtype", None)
        if shape is not None and dtype is not None and not isinstance(value, (int, float)):
            size = 1
            for n in tuple(shape):
                size *= int(n)
            if size > 4:
                return f"{type(value).__name__}(모양 {tuple(shape)}, {dtype})"
            return f"{type(value).__name__}({value.tolist()!r}, {dtype})"
        text = _repr.repr(value).replace("\n", " ")
    except Exception:  # a value whose repr fails (an int of 10,000 digits, a broken class)
        return f"<{type(value).__name__}: 보여 줄 수 없는 값>"
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def _message(error: BaseException) -> str:
    try:
        return str(error).strip()
    except Exception:
        return "(오류 메시지를 만들 수 없습니다)"


@dataclass
class _Call:
    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    returned: Any = None
    done: bool = False

    def __str__(self) -> str:
        parts = [shown(a) for a in self.args] + [f"{k}={shown(v)}" for k, v in self.kwargs.items()]
        call = f"{self.name}({', '.join(parts)})"
        return call if len(call) <= MAX_SHOWN else call[: MAX_SHOWN - 2] + "…)"


class _Recorder:
    """Wraps the answer's functions a test receives; remembers the last call of each."""

    def __init__(self) -> None:
        self.last: _Call | None = None
        self.codes: set[types.CodeType] = set()

    def wrap(self, name: str, value: Any) -> Any:
        """``value`` itself for a value, a class (tests may check ``isinstance``) or a builtin;
        any other callable (a function, a lambda, a ``functools.partial``, an ``lru_cache``)
        wrapped so that its calls are recorded."""
        if isinstance(value, type):  # its methods' errors are placed in the answer
            self.codes.update(f.__code__ for f in vars(value).values() if inspect.isfunction(f))
            return value
        if not callable(value) or isinstance(
            value, (types.BuiltinFunctionType, types.BuiltinMethodType)
        ):
            return value
        code = getattr(value, "__code__", None) or getattr(
            getattr(value, "__wrapped__", None), "__code__", None
        )
        if isinstance(code, types.CodeType):
            self.codes.add(code)

        @functools.wraps(value)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            call = _Call(name, args, kwargs)
            self.last = call
            call.returned = value(*args, **kwargs)
            call.done = True
            return call.returned

        return recorded


@dataclass
class CaseResult:
    """One test case: passed or not, and the Korean lines that say why."""

    name: str
    passed: bool
    lines: list[str] = field(default_factory=list)


def _answer_line(error: BaseException, answer_codes: set[types.CodeType]) -> str | None:
    """``"답의 3번째 줄: x = y / 0"`` for the innermost frame in the answer's own code."""
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        filename = code.co_filename
        if code in answer_codes or "ipykernel" in filename or filename.startswith("<ipython-input"):
            found = (filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    if found is None:
        return None
    filename, lineno, function = found
    text = linecache.getline(filename, lineno).strip()
    where = f"{function} 안" if function != "<module>" else "답 셀"
    return f"오류가 난 줄({where}, 셀의 {lineno}번째 줄): {text}" if text else None


def _error_lines(error: BaseException, recorder: _Recorder) -> list[str]:
    lines = []
    call = recorder.last
    kind = f"{type(error).__name__}: {_message(error)}".rstrip(": ")
    where = _answer_line(error, recorder.codes)
    if call is not None and not call.done:  # the answer's function raised (an assert too)
        lines.append(f"이 호출에서 오류가 났습니다: {call}")
        lines.append(kind)
        if where:
            lines.append(where)
        return lines
    if isinstance(error, AssertionError) and where is None:  # the test's own check failed
        message = _message(error)
        if message:
            lines += message.splitlines()
    elif where is not None:  # the answer's code raised, called some other way (a class)
        lines += [f"답의 코드에서 오류가 났습니다: {kind}", where]
    elif call is not None:
        lines.append(f"답이 돌려준 값을 테스트가 확인하다 오류가 났습니다: {kind}")
        lines.append(f"마지막 호출: {call} → 돌려준 값: {shown(call.returned)}")
    else:
        lines.append(f"답의 값을 테스트가 확인하다 오류가 났습니다: {kind}")
    if call is not None and call.done and call.returned is None:
        lines.append(f"{call.name}의 반환값이 None입니다: return 문을 빠뜨리지 않았나요?")
    return lines


def _unanswered(names: list[str], env: Mapping[str, Any]) -> str | None:
    """The Korean line for an answer not run or not written yet, or None."""
    missing = [n for n in names if n != "env" and n not in env]
    if missing:
        return f"아직 정의되지 않은 이름: {', '.join(missing)}. 답 셀을 실행했나요?"
    blank = [n for n in names if n != "env" and _is_blank(env[n])]
    if blank:
        return f"아직 채우지 않은 답: {', '.join(blank)}. 답의 ...를 지우고 답을 쓰세요."
    return None


def _run_case(
    test_func: Callable[..., None], names: list[str], env: Mapping[str, Any]
) -> tuple[bool, list[str]]:
    recorder = _Recorder()
    kwargs = {n: env if n == "env" else recorder.wrap(n, env[n]) for n in names}
    try:
        test_func(**kwargs)
    except (Exception, SystemExit, GeneratorExit) as error:  # the answer's, or the test's
        return False, _error_lines(error, recorder)
    return True, []


@dataclass
class CheckResult:
    """What ``grader.check("qN")`` shows: each test case's result, in Korean."""

    question: str
    cases: list[CaseResult]

    @property
    def passed_all(self) -> bool:
        return all(c.passed for c in self.cases)

    def _heading(self) -> str:
        passed = sum(c.passed for c in self.cases)
        label = f"{question_label(self.question)}: 공개 테스트 {len(self.cases)}개"
        if self.passed_all:
            return f"{label}를 모두 통과했습니다."
        return f"{label} 가운데 {passed}개를 통과했습니다."

    def _items(self) -> Iterable[tuple[str, list[str]]]:
        for case in self.cases:
            yield ("✅" if case.passed else "❌"), case.lines

    def __repr__(self) -> str:
        out = [self._heading()]
        for mark, lines in self._items():
            out.append(f"{mark} {lines[0]}" if lines else mark)
            out += [f"   {line}" for line in lines[1:]]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        colour = "green" if self.passed_all else "#b00020"
        heading = html.escape(self._heading())
        out = [f"<p><strong style='color: {colour};'>{heading}</strong></p><ul>"]
        for mark, lines in self._items():
            first = html.escape(lines[0]) if lines else ""
            rest = "".join(
                f"<br><code style='white-space: pre-wrap;'>{html.escape(line)}</code>"
                for line in lines[1:]
            )
            out.append(f"<li style='list-style: none;'>{mark} {first}{rest}</li>")
        return "".join(out) + "</ul>"


@dataclass
class CheckAllResult:
    """What ``grader.check_all()`` shows: one line per question."""

    results: list[CheckResult]

    @property
    def passed_all(self) -> bool:
        return all(r.passed_all for r in self.results)

    def __repr__(self) -> str:
        return "\n".join(("✅ " if r.passed_all else "❌ ") + r._heading() for r in self.results)

    def _repr_html_(self) -> str:
        return "".join(r._repr_html_() for r in self.results)


def run_checks(question: str, test_file: Any, env: Mapping[str, Any]) -> CheckResult:
    """Run the cases of otter's ``test_file`` (exception-based) against ``env``, in Korean."""
    if not all(hasattr(case.body, "test_func") for case in test_file.test_cases):
        raise TypeError(
            f"{question}: only exception-based test files are supported, "
            f"got {type(test_file).__name__}"
        )
    cases = []
    for case in test_file.test_cases:
        test_func = case.body.test_func
        names = list(inspect.signature(test_func).parameters)  # what the test reads
        unanswered = _unanswered(names, env)
        if unanswered:  # the case's hint is about a wrong answer, not a missing one
            cases.append(CaseResult(case.name, False, [unanswered]))
            continue
        passed, why = _run_case(test_func, names, env)
        message = case.success_message if passed else case.failure_message
        lines = ([message] if message else []) + why
        if not lines and not passed:
            lines = ["테스트를 통과하지 못했습니다."]
        cases.append(CaseResult(case.name, passed, lines))
    return CheckResult(question, cases)
