"""What a student notebook's set-up cell calls: :class:`Grader` and :func:`notebook_named`.

A browser that downloads a notebook twice names the copy ``ch09_seq2seq (1).ipynb``;
otter then cannot find the notebook whose metadata holds the tests, and every
``grader.check`` after it fails with ``NameError``. The set-up cell asks for the
notebook by its exercise name instead, and this finds it under any file name.

On Colab the notebook is not a file at all, and otter reads tests only from a
``tests`` folder there. :func:`notebook_named` then writes the exercise's public
tests (shipped in this package, ``public_tests/``, the same as the notebook's
metadata) into ``./tests`` and returns None, so that otter reads them from there.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any, cast

from course_tools.feedback import CheckAllResult, CheckResult, run_checks

__all__ = [
    "Grader",
    "is_setup_cell",
    "notebook_named",
    "on_colab",
    "otter_cell",
    "write_public_tests",
]

# Characters that end a line for Python or IPython but not for a regular expression's
# ``\n``: a cell holding one is never an otter cell (no code can hide behind them).
_LINE_BREAKS = "\r\v\f\x1c\x1d\x1e\x1f\x85\u2028\u2029"


def _string(node: ast.expr, pattern: str = r"(?s:.*)") -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(pattern, node.value) is not None
    )


def _call_of(node: ast.expr, *name: str) -> ast.Call | None:
    """``node`` if it is a call of ``name`` (``"Grader"`` or ``"grader", "check"``)."""
    if not isinstance(node, ast.Call):
        return None
    target = node.func
    if len(name) == 1:
        return node if isinstance(target, ast.Name) and target.id == name[0] else None
    owner, attribute = name
    if (
        isinstance(target, ast.Attribute)
        and target.attr == attribute
        and isinstance(target.value, ast.Name)
        and target.value.id == owner
    ):
        return node
    return None


def _imports(node: ast.stmt, module: str | None, name: str) -> bool:
    """``import name`` (module None) or ``from module import name``, nothing else."""
    if module is None:
        return isinstance(node, ast.Import) and [(a.name, a.asname) for a in node.names] == [
            (name, None)
        ]
    return (
        isinstance(node, ast.ImportFrom)
        and node.module == module
        and node.level == 0
        and [(a.name, a.asname) for a in node.names] == [(name, None)]
    )


def _assigns_grader(node: ast.stmt) -> ast.expr | None:
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == "grader"
    ):
        return node.value
    return None


def _is_setup(body: list[ast.stmt]) -> bool:
    """Today's ``from course_tools.student import Grader; grader = Grader("x")``; otter's own
    ``import otter; grader = otter.Notebook("x.ipynb")`` (string arguments only); and this
    course's earlier ``grader = otter.Notebook(notebook_named("x"))``."""
    if len(body) == 2 and _imports(body[0], "course_tools.student", "Grader"):
        call = _call_of(_assigns_grader(body[1]) or ast.Constant(None), "Grader")
        return (
            call is not None
            and not call.keywords
            and len(call.args) == 1
            and _string(call.args[0], r"\w+")
        )
    if len(body) == 3 and _imports(body[1], "course_tools.student", "notebook_named"):
        body = [body[0], body[2]]
        named = True
    else:
        named = False
    if len(body) != 2 or not _imports(body[0], None, "otter"):
        return False
    call = _call_of(_assigns_grader(body[1]) or ast.Constant(None), "otter", "Notebook")
    if call is None or not all(_string(k.value) for k in call.keywords):
        return False
    if named:
        inner = _call_of(call.args[0], "notebook_named") if len(call.args) == 1 else None
        return (
            inner is not None
            and not inner.keywords
            and [_string(a, r"\w+") for a in inner.args] == [True]
        )
    return len(call.args) <= 1 and all(_string(a) for a in call.args)


def otter_cell(source: str) -> tuple[str, str | None] | None:
    """What an otter cell of a student notebook is, read as Python (comments aside):

    ``("setup", None)`` for the set-up cell (:func:`_is_setup`), ``("check", "q1")`` for
    ``grader.check("q1")``, ``("other", None)`` for ``grader.check_all()`` and
    ``grader.export(...)`` with string arguments; None for every other cell. The grader
    runs no otter cell, so none may do anything else: each is matched statement by
    statement, with only string constants as arguments.
    """
    if not isinstance(source, str) or any(c in source for c in _LINE_BREAKS):
        return None
    try:
        body = ast.parse(source).body
    except (SyntaxError, ValueError):
        return None
    if len(body) == 1 and isinstance(body[0], ast.Expr):
        value = body[0].value
        check = _call_of(value, "grader", "check")
        if check is not None:
            if len(check.args) == 1 and not check.keywords and _string(check.args[0], r"\w+"):
                return "check", str(cast(ast.Constant, check.args[0]).value)
            return None
        check_all = _call_of(value, "grader", "check_all")
        if check_all is not None and not check_all.args and not check_all.keywords:
            return "other", None
        export = _call_of(value, "grader", "export")
        arguments = [] if export is None else [*export.args, *(k.value for k in export.keywords)]
        if export is not None and all(_constant(a) for a in arguments):
            return "other", None
        return None
    return ("setup", None) if _is_setup(body) else None


def _constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bool, int, float))


def is_setup_cell(source: str) -> bool:
    """Whether ``source`` is a student notebook's set-up cell, which the grader does not run."""
    return otter_cell(source) == ("setup", None)


def _assignment_of(path: Path) -> str | None:
    """The ``metadata.otter.assignment_name`` of a notebook file, or None."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        name = notebook["metadata"]["otter"]["assignment_name"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None


def on_colab() -> bool:
    """Whether this kernel is Google Colab's (as otter tells: by the IPython shell's class)."""
    if "google.colab" in sys.modules:
        return True
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    return "google.colab" in str(get_ipython())


def write_public_tests(assignment: str, folder: str | Path = "tests") -> list[Path]:
    """Write exercise ``assignment``'s public test files into ``folder``; their paths."""
    shipped = Path(__file__).parent / "public_tests" / f"{assignment}.json"
    if not shipped.is_file():
        raise FileNotFoundError(
            f"강의 패키지에 연습 문제 {assignment}의 공개 테스트가 없습니다: {shipped}"
        )
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for question, source in json.loads(shipped.read_text(encoding="utf-8")).items():
        path = folder / f"{question}.py"
        path.write_text(source, encoding="utf-8")
        written.append(path)
    # Another exercise's tests left in the same folder (two exercises solved in one Colab
    # folder) would be read as this one's: otter's test files of other questions go.
    for stale in sorted(set(folder.glob("q*.py")) - set(written)):
        if "from otter.test_files import" in stale.read_text(encoding="utf-8", errors="ignore"):
            stale.unlink()
    return written


def notebook_named(assignment: str, folder: str | Path = ".") -> str | None:
    """The file of exercise ``assignment``'s notebook in ``folder``, even if it was renamed.

    ``{assignment}.ipynb`` if it is there; otherwise the one notebook of ``folder``
    whose otter metadata names ``assignment`` (and a Korean note says which file
    it is). A Korean error says what to do when there is none, or more than one.
    On Colab: the public tests written to ``folder/tests``, and None.
    """
    if not isinstance(assignment, str) or not assignment:
        raise TypeError(f"assignment must be a non-empty str, got {assignment!r}")
    if on_colab():
        write_public_tests(assignment, Path(folder) / "tests")
        return None
    folder = Path(folder)
    exact = folder / f"{assignment}.ipynb"
    if exact.is_file():
        return str(exact)  # Path(".") / name prints as the bare name
    found = sorted(p for p in folder.glob("*.ipynb") if _assignment_of(p) == assignment)
    if len(found) == 1:
        print(f"노트북 파일 이름이 바뀌어 있어, 이 파일에서 테스트를 읽습니다: {found[0].name}")
        return str(found[0])
    if not found:
        raise FileNotFoundError(
            f"이 폴더({folder.resolve()})에 연습 문제 {assignment}의 노트북이 없습니다. "
            f"노트북을 내려받은 폴더에서 Jupyter를 여세요. 원래 파일 이름은 {exact.name}입니다."
        )
    names = ", ".join(p.name for p in found)
    raise ValueError(
        f"이 폴더에 연습 문제 {assignment}의 노트북이 {len(found)}개 있습니다({names}). "
        f"풀고 있는 파일 하나만 남기거나, 그 파일의 이름을 원래대로 바꾸세요: {exact.name}"
    )


class Grader:
    """``grader`` of a student notebook: otter's tests, with Korean feedback.

    ``Grader("ch09_seq2seq")`` finds the exercise's notebook as :func:`notebook_named`
    does (on Colab, writes its public tests into ``./tests``) and reads the tests
    through ``otter.Notebook``; :meth:`check` runs them with
    :func:`course_tools.feedback.run_checks`, which says in Korean what failed.
    """

    def __init__(self, assignment: str, folder: str | Path = ".") -> None:
        import otter

        self.assignment = assignment
        path = notebook_named(assignment, folder)
        # Tests come from the notebook's metadata; only on Colab (no notebook file) from
        # ``tests`` beside it, where notebook_named wrote them. A ``tests`` folder of
        # something else beside a local notebook is never read. Both paths are absolute,
        # so a later ``%cd`` in the notebook changes nothing.
        folder = Path(folder).resolve()
        tests = str(folder / "tests") if path is None else None
        path = None if path is None else str(Path(path).resolve())
        self._otter = otter.Notebook(path, tests_dir=tests)

    def _test_file(self, question: str) -> Any:
        from otter.check.utils import resolve_test_info
        from otter.test_files import create_test_file

        if not isinstance(question, str) or not re.fullmatch(r"\w+", question):
            raise TypeError(f"question must be a name like 'q1', got {question!r}")
        known = self.questions()
        if question not in known:  # before otter, whose own error is in English
            raise ValueError(
                f"연습 문제 {self.assignment}에 {question}이라는 문항이 없습니다. "
                f"있는 문항: {', '.join(known)}"
            )
        notebook = self._otter
        path, name = resolve_test_info(
            notebook._tests_dir, notebook._notebook, notebook._tests_url_prefix, question
        )
        return create_test_file(path, notebook._nbmeta_config, test_name=name)

    def questions(self) -> list[str]:
        """The questions whose public tests this notebook has, in order (q1, q2, …, q10)."""
        from otter.check.utils import list_available_tests

        found = list_available_tests(self._otter._tests_dir, self._otter._nbmeta_config)
        return sorted(found, key=lambda q: (len(q), q))

    def check(self, question: str, global_env: dict[str, Any] | None = None) -> CheckResult:
        """Run ``question``'s public tests on the notebook's names (or ``global_env``)."""
        env = global_env if global_env is not None else sys._getframe(1).f_globals
        return run_checks(question, self._test_file(question), env)

    def check_all(self, global_env: dict[str, Any] | None = None) -> CheckAllResult:
        """:meth:`check` of every question."""
        env = global_env if global_env is not None else sys._getframe(1).f_globals
        return CheckAllResult([self.check(q, env) for q in self.questions()])
