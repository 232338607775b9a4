"""What an answer may not use, declared in the master and enforced in depth.

An exercise asks a student to build something a library already has (an RNN
cell, BLEU, attention). Its master declares, per question, what the answer may
not use: packages (``torch``), modules (``course_utils.rnn``) and callables
(``numpy.linalg.svd``), as dotted names::

    # ASSIGNMENT CONFIG            (every question)
    rules:
      forbid: [torch, transformers, course_utils.rnn]

    # BEGIN QUESTION               (this question, on top of the above)
    name: q2
    rules:
      forbid: [numpy.linalg.svd]

The grader enforces a rule three ways:

1. **Hidden.** A package or module that every question forbids is not in the
   student's sandbox at all: its folder or file is mounted empty, so no trick
   inside the process can reach its code (:meth:`Rules.hidden`).
2. **Read.** Before a question's tests run, the notebook's cells so far are read
   (:func:`violations`): the question's answer (the names its tests read) and
   everything it refers to, through functions, classes, imports and aliases,
   may not name a forbidden thing; and no cell may use the ways around a rule
   (``getattr`` with a computed name, ``importlib``, ``__import__``, ``eval``,
   ``sys.modules``, ``gc``, ``ctypes``, pickling, frame and closure
   introspection, private names of a module). A question whose answer breaks a
   rule scores 0, with a reason that names the rule.
3. **Refused at run time.** A forbidden callable inside a package the sandbox
   shows raises :class:`RuleViolation` (a Korean message naming the rule) when
   called while that question's tests run, and the grader scores the question 0
   even if the answer caught the exception (:class:`Guards`).

The student's own ``grader.check`` runs the same read (2) in the notebook's
kernel (:func:`check_here`), so a rule shows before submission.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.util
import json
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Guards",
    "HiddenModules",
    "RuleViolation",
    "Rules",
    "Violation",
    "check_here",
    "parse_master_rules",
    "violations",
]

RULES_FILE = "rules.json"  # its name inside the autograder zip

# The ways around a rule. Any of these in a cell that has run makes every question
# graded after it that has rules score 0: an honest answer to these exercises needs none.
ESCAPE_CALLS = {
    "__import__": "__import__",
    "eval": "eval",
    "exec": "exec",
    "compile": "compile",
    "globals": "globals()",
    "vars": "vars()",
    "locals": "locals()",
    "breakpoint": "breakpoint()",
}
ESCAPE_MODULES = (
    "importlib", "imp", "builtins", "gc", "ctypes", "cffi", "inspect", "pickle", "_pickle",
    "cPickle", "marshal", "shelve", "copyreg", "dill", "cloudpickle", "joblib", "runpy",
    "pkgutil", "zipimport", "code", "codeop", "subprocess", "multiprocessing", "pty",
)  # fmt: skip
# Callables that reach an attribute by a string, like getattr.
ESCAPE_PATHS = {"operator.attrgetter", "operator.methodcaller"}
ESCAPE_SYS = {
    "modules", "meta_path", "path_hooks", "path_importer_cache", "settrace", "setprofile",
    "_getframe", "exc_info", "exception", "last_traceback", "addaudithook", "path",
}  # fmt: skip
ESCAPE_OS = {"system", "popen", "execv", "execve", "execl", "execlp", "execvp", "spawnv",
             "spawnl", "posix_spawn", "fork", "forkpty", "dup2"}  # fmt: skip
ESCAPE_ATTRIBUTES = {
    "__dict__", "__globals__", "__closure__", "__code__", "__wrapped__", "__builtins__",
    "__subclasses__", "__getattribute__", "__import__", "__loader__", "__spec__", "__self__",
    "__func__", "__reduce__", "__reduce_ex__", "__mro__", "__bases__", "__class__",
    "f_globals", "f_locals", "f_back", "f_builtins", "gi_frame", "cr_frame", "ag_frame",
    "tb_frame", "tb_next", "co_consts", "__setattr__", "__delattr__", "__set_name__",
    "__init_subclass__", "__getattr__", "__kwdefaults__", "__defaults__",
}  # fmt: skip
ATTRIBUTE_BUILTINS = {"getattr", "setattr", "delattr", "hasattr"}
# Magics that run code the notebook's cells do not show.
CODE_MAGICS = {"run", "load", "loadpy", "writefile", "file", "macro", "store", "recall", "rerun",
               "edit", "prun", "debug", "pdb", "script", "python", "python3", "pypy"}  # fmt: skip
# What the sandboxed runner itself imports: never hidden (the read and the guards still apply).
RUNNER_NEEDS = ("numpy", "IPython", "course_tools", "traitlets", "prompt_toolkit", "jedi",
                "parso", "pygments", "decorator", "stack_data", "executing", "asttokens",
                "pure_eval", "matplotlib_inline", "pexpect", "ptyprocess", "wcwidth")  # fmt: skip


class RuleViolation(Exception):
    """A forbidden callable was called while a question that forbids it was graded."""


@dataclass(frozen=True)
class Violation:
    """One broken rule: which question, what was used, which rule forbids it, and where."""

    question: str
    used: str
    rule: str  # the forbidden name, or "escape" for a way around the rules
    where: str = ""

    def message(self) -> str:
        """The Korean reason a student and an instructor read."""
        at = f" ({self.where})" if self.where else ""
        head = f"규칙 위반(문제 {self.question.lstrip('q')})"
        if self.rule == "escape":
            return f"{head}: 노트북이 규칙을 피해 가는 방법을 씁니다 — `{self.used}`{at}."
        if self.rule == self.used:
            return f"{head}: 답이 쓸 수 없는 것을 씁니다 — `{self.used}`{at}."
        return f"{head}: 답이 쓸 수 없는 것을 씁니다 — `{self.used}`{at}; 규칙은 `{self.rule}`."


@dataclass
class Rules:
    """One exercise's rules: per question, the forbidden names and the names its tests read."""

    assignment: str
    forbid: dict[str, list[str]] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)
    # Digests of the cells the student notebook provides (imports, the Colab install
    # cell): the read skips them, since the student did not write them.
    trusted: list[str] = field(default_factory=list)

    def hidden(self) -> list[str]:
        """Dotted names every question forbids: hidden from the sandbox altogether."""
        questions = set(self.forbid) | set(self.names)
        if not questions:
            return []
        common = set.intersection(*(set(self.forbid.get(q, [])) for q in questions))
        common = {n for n in common if not _covered(n.split(".")[0], RUNNER_NEEDS)}
        # A parent hidden hides its children: keep the shortest names.
        return sorted(n for n in common if not any(n.startswith(p + ".") for p in common))

    def guarded(self) -> list[str]:
        """Every forbidden name that is not hidden: guarded at run time where it is callable."""
        hidden = self.hidden()
        names = {n for forbid in self.forbid.values() for n in forbid}
        return sorted(n for n in names if not _covered(n, hidden))

    def to_json(self) -> str:
        return json.dumps(
            {
                "assignment": self.assignment,
                "forbid": self.forbid,
                "names": self.names,
                "trusted": self.trusted,
            },
            ensure_ascii=False,
            indent=1,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Rules:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("assignment"), str):
            raise ValueError("rules.json must be an object with an 'assignment' name")
        forbid = {str(q): [str(n) for n in v] for q, v in dict(data.get("forbid", {})).items()}
        names = {str(q): [str(n) for n in v] for q, v in dict(data.get("names", {})).items()}
        trusted = [str(d) for d in data.get("trusted", [])]
        return cls(data["assignment"], forbid, names, trusted)

    def student_cells(self, cells: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
        """The cells the student wrote or changed: all but the notebook's own."""
        trusted = set(self.trusted)
        return [(i, s) for i, s in cells if cell_digest(s) not in trusted]


def cell_digest(source: str) -> str:
    """A cell's identity for :attr:`Rules.trusted`: its lines without trailing spaces."""
    import hashlib

    text = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _covered(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _check_dotted(name: Any, where: str) -> str:
    if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
        raise ValueError(f"{where}: a rule must be a dotted name such as 'torch.nn', got {name!r}")
    return name


def _forbid_list(config: Any, where: str) -> list[str]:
    if config is None:
        return []
    if not isinstance(config, dict) or set(config) - {"forbid"}:
        raise ValueError(f"{where}: rules must be a mapping with one key, forbid, got {config!r}")
    forbid = config.get("forbid", [])
    if not isinstance(forbid, list):
        raise ValueError(f"{where}: rules: forbid must be a list of dotted names, got {forbid!r}")
    return [_check_dotted(n, where) for n in forbid]


def parse_master_rules(notebook: Any) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """``(assignment config, {question: forbidden names})`` from a master's raw cells."""
    import yaml

    assignment: dict[str, Any] = {}
    chapter: list[str] = []
    per_question: dict[str, list[str]] = {}
    for cell in notebook["cells"]:
        if cell["cell_type"] != "raw":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        first, _, body = source.partition("\n")
        if first.strip() == "# ASSIGNMENT CONFIG":
            assignment = yaml.safe_load(body) or {}
            chapter = _forbid_list(assignment.get("rules"), "ASSIGNMENT CONFIG")
        elif first.strip() == "# BEGIN QUESTION":
            config = yaml.safe_load(body) or {}
            name = config.get("name")
            per_question[str(name)] = _forbid_list(config.get("rules"), f"question {name}")
    forbid = {q: sorted(set(chapter) | set(own)) for q, own in per_question.items()}
    return assignment, forbid


def test_parameters(test_source: str) -> list[str]:
    """The notebook names a question's test file reads: its test functions' parameters."""
    names: list[str] = []
    for node in ast.parse(test_source).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            for arg in node.args.args:
                if arg.arg not in names:
                    names.append(arg.arg)
    return names


# --------------------------------------------------------------------------
# 2. the read: what a question's answer refers to
# --------------------------------------------------------------------------
def _python(source: str) -> str:
    """A cell's Python, with IPython's magics and shell escapes turned into calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython is always there with otter
        return source
    try:
        return TransformerManager().transform_cell(source)
    except Exception:
        return source


@dataclass
class _Statement:
    node: ast.AST
    cell: int  # 1-based, as the grader and the CSV count cells


def _bound_names(node: ast.AST) -> list[str]:
    """Names a top-level statement binds in the notebook's namespace."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*"]
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.append(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name.split(".")[0]) for a in sub.names if a.name != "*"]
    return names


def _replaces(node: ast.AST) -> bool:
    """Whether a statement replaces a name's earlier bindings (rather than adding to them)."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    return isinstance(node, (*kinds, ast.Assign))


class _Reader:
    """The notebook's top-level statements, with the import aliases they make."""

    def __init__(self, cells: Sequence[tuple[int, str]]) -> None:
        self.bindings: dict[str, list[_Statement]] = {}
        self.statements: list[_Statement] = []
        self.aliases: dict[str, str] = {}
        self.raw: dict[int, str] = {}
        for cell, source in cells:
            self.raw[cell] = source
            try:
                tree = ast.parse(_python(source))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue  # a cell that does not parse defined nothing when it ran
            for node in tree.body:
                statement = _Statement(node, cell)
                self.statements.append(statement)
                for name in _bound_names(node):
                    if _replaces(node):
                        self.bindings[name] = [statement]
                    else:
                        self.bindings.setdefault(name, []).append(statement)
        for statement in self.statements:
            for sub in ast.walk(statement.node):
                self._note_alias(sub)

    def _note_alias(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.aliases[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    self.aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                dotted = self.dotted(node.value)
                if dotted is not None and target.id not in self.aliases:
                    self.aliases[target.id] = dotted

    def dotted(self, node: ast.AST, shadowed: frozenset[str] = frozenset()) -> str | None:
        """``np.linalg.svd`` → ``numpy.linalg.svd`` where the base is an import alias.

        ``shadowed``: the names a function binds itself (its parameters and local
        variables), which are not the notebook's aliases of the same name.
        """
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call):  # getattr(np, "linalg").svd
            inner = self.getattr_target(node, shadowed)
            if inner is None:
                return None
            return ".".join([inner, *reversed(parts)])
        if not isinstance(node, ast.Name) or node.id not in self.aliases or node.id in shadowed:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def getattr_target(self, call: ast.Call, shadowed: frozenset[str] = frozenset()) -> str | None:
        if not (isinstance(call.func, ast.Name) and call.func.id in ATTRIBUTE_BUILTINS):
            return None
        if call.func.id in shadowed or len(call.args) < 2:
            return None
        if not isinstance(call.args[1], ast.Constant):
            return None
        base = self.dotted(call.args[0], shadowed)
        attribute = call.args[1].value
        if base is None or not isinstance(attribute, str):
            return None
        return f"{base}.{attribute}"


def _arguments(args: ast.arguments) -> set[str]:
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in named if a is not None}


def _shadowed_by(reader: _Reader, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function binds for itself: its parameters and local variables, less the
    local names that are aliases (``import torch``, ``svd = np.linalg.svd`` inside it)."""
    stored, aliased, declared = _arguments(function.args), set(), set()
    stack: list[ast.AST] = list(function.body)
    while stack:
        sub = stack.pop()
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(sub.name)
            continue  # its body is a scope of its own
        if isinstance(sub, ast.Lambda):
            continue
        if isinstance(sub, (ast.Global, ast.Nonlocal)):
            declared |= set(sub.names)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            stored.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            aliased |= set(_bound_names(sub))
        elif (
            isinstance(sub, ast.Assign)
            and len(sub.targets) == 1
            and isinstance(sub.targets[0], ast.Name)
            and reader.dotted(sub.value) is not None
        ):
            aliased.add(sub.targets[0].id)
        stack.extend(ast.iter_child_nodes(sub))
    return (stored - aliased) - declared


def _scoped_walk(
    reader: _Reader, node: ast.AST, shadowed: frozenset[str] = frozenset()
) -> Iterable[tuple[ast.AST, frozenset[str]]]:
    """Every node under ``node`` with the local names that shadow the notebook's there."""
    yield node, shadowed
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        outer: list[ast.AST] = [*node.decorator_list, *node.args.defaults]
        outer += [d for d in node.args.kw_defaults if d is not None]
        for before in outer:
            yield from _scoped_walk(reader, before, shadowed)
        inner = shadowed | _shadowed_by(reader, node)
        for statement in node.body:
            yield from _scoped_walk(reader, statement, inner)
    elif isinstance(node, ast.Lambda):
        defaults: list[ast.AST] = [*node.args.defaults]
        defaults += [d for d in node.args.kw_defaults if d is not None]
        for default in defaults:
            yield from _scoped_walk(reader, default, shadowed)
        yield from _scoped_walk(reader, node.body, shadowed | _arguments(node.args))
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        targets = {
            n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
        }
        for part in ast.iter_child_nodes(node):
            yield from _scoped_walk(reader, part, shadowed | targets)
    else:
        for sub in ast.iter_child_nodes(node):
            yield from _scoped_walk(reader, sub, shadowed)


def _where(statement: _Statement, node: ast.AST) -> str:
    line = getattr(node, "lineno", None) or getattr(statement.node, "lineno", 0)
    return f"셀 {statement.cell}, {line}행"


def _escapes(reader: _Reader, statement: _Statement) -> Iterable[tuple[str, ast.AST]]:
    """The ways around a rule in one statement: ``(what, node)``."""
    for node, shadowed in _scoped_walk(reader, statement.node):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
                if node.module in ("sys", "os", "operator"):
                    modules += [f"{node.module}.{a.name}" for a in node.names]
            for module in modules:
                if (
                    module in ESCAPE_PATHS
                    or _covered(module, ESCAPE_MODULES)
                    or (module.startswith("sys.") and module[4:] in ESCAPE_SYS)
                    or (module.startswith("os.") and module[3:] in ESCAPE_OS)
                ):
                    yield module, node
        elif isinstance(node, ast.Name) and node.id in ESCAPE_CALLS:
            if node.id not in reader.bindings and node.id not in shadowed:  # not its own name
                yield ESCAPE_CALLS[node.id], node
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__", "__spec__"):
            yield node.id, node
        elif isinstance(node, ast.Name) and node.id == "get_ipython":
            # Magics become get_ipython() calls; the shell itself, written out, is a way around.
            if "get_ipython" in reader.raw.get(statement.cell, ""):
                yield "get_ipython()", node
        elif isinstance(node, ast.Attribute):
            if node.attr in ESCAPE_ATTRIBUTES:
                yield node.attr, node
                continue
            base = reader.dotted(node.value, shadowed)
            if f"{base}.{node.attr}" in ESCAPE_PATHS:
                yield f"{base}.{node.attr}", node
            elif base == "sys" and node.attr in ESCAPE_SYS:
                yield f"sys.{node.attr}", node
            elif base == "os" and node.attr in ESCAPE_OS:
                yield f"os.{node.attr}", node
            elif (
                base is not None
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and _is_module_path(base)
            ):
                yield f"{base}.{node.attr}", node  # a module's private name (torch._C)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("run_line_magic", "run_cell_magic")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in CODE_MAGICS
        ):
            yield f"%{node.args[0].value}", node  # runs code the notebook does not show
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            own = node.func.id in reader.bindings or node.func.id in shadowed
            if node.func.id in ATTRIBUTE_BUILTINS and not own:
                name = node.args[1] if len(node.args) >= 2 else None
                if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                    yield f"{node.func.id}(…, 계산한 이름)", node
                elif name.value.startswith("_"):
                    yield f"{node.func.id}(…, {name.value!r})", node
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            pass


def _is_module_path(dotted: str) -> bool:
    top = dotted.split(".")[0]
    return top in sys.stdlib_module_names or importlib.util.find_spec(top) is not None


def _uses(reader: _Reader, statement: _Statement, forbidden: Sequence[str]):
    """Forbidden names one statement uses: ``(used, rule, node)``."""
    for node, shadowed in _scoped_walk(reader, statement.node):
        used: list[str] = []
        if isinstance(node, ast.Import):
            used = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            used = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, (ast.Attribute, ast.Name)):
            dotted = reader.dotted(node, shadowed)
            used = [dotted] if dotted else []
        elif isinstance(node, ast.Call):
            target = reader.getattr_target(node, shadowed)
            used = [target] if target else []
        for name in used:
            for rule in forbidden:
                if name == rule or name.startswith(rule + "."):
                    yield name, rule, node


def violations(
    cells: Sequence[tuple[int, str]],
    question: str,
    forbidden: Sequence[str],
    names: Sequence[str],
) -> list[Violation]:
    """What question ``question``'s answer uses against its rules, read from ``cells``.

    ``cells`` are ``(cell number, source)`` of the cells that ran before the
    question is graded; ``names`` are the notebook names its tests read. The
    answer is those names' definitions and everything they refer to. A way
    around the rules counts against the questions whose answers reach it, and,
    written at the top level of a cell (outside any function or class), against
    every question that has rules.
    """
    if not forbidden:
        return []
    reader = _Reader(cells)
    found: list[Violation] = []
    seen: set[tuple[str, str]] = set()

    def add(used: str, rule: str, where: str) -> None:
        if (used, rule) not in seen:
            seen.add((used, rule))
            found.append(Violation(question, used, rule, where))

    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for statement in reader.statements:  # top-level code runs once for every question
        if not isinstance(statement.node, definitions):
            for what, node in _escapes(reader, statement):
                add(what, "escape", _where(statement, node))
    queue, visited = list(names), set()
    while queue:
        name = queue.pop()
        if name in visited:
            continue
        visited.add(name)
        if name in reader.aliases and name not in reader.bindings:
            continue
        for statement in reader.bindings.get(name, []):
            for used, rule, node in _uses(reader, statement, forbidden):
                add(used, rule, _where(statement, node))
            if isinstance(statement.node, definitions):  # a way around inside the answer
                for what, node in _escapes(reader, statement):
                    add(what, "escape", _where(statement, node))
            for node, shadowed in _scoped_walk(reader, statement.node):
                own = isinstance(node, ast.Name) and node.id in reader.bindings
                if own and node.id not in shadowed:  # type: ignore[attr-defined]
                    queue.append(node.id)  # type: ignore[attr-defined]
        # A name bound by an import of a forbidden thing, used by the answer.
        alias = reader.aliases.get(name)
        if alias is not None:
            for rule in forbidden:
                if _covered(alias, [rule]):
                    add(alias, rule, "")
    return found


def check_here(
    question: str, forbidden: Sequence[str], names: Sequence[str], trusted: Sequence[str] = ()
) -> None:
    """``grader.check``'s rule test: the same read, on the cells this kernel has run.

    Raises ``AssertionError`` with the Korean reason when the answer breaks a rule.
    """
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover
        shell = None
    history = list(shell.user_ns.get("In", [])) if shell is not None else []
    cells = [(i, s) for i, s in enumerate(history) if isinstance(s, str) and s.strip()]
    # The check cell itself and otter's own cells read nothing the answer uses.
    cells = [(i, s) for i, s in cells if "grader.check" not in s and "otter.Notebook(" not in s]
    cells = Rules("", trusted=list(trusted)).student_cells(cells)
    found = violations(cells, question, forbidden, names)
    if found:
        raise AssertionError("\n".join(v.message() for v in found[:3]))


# --------------------------------------------------------------------------
# 1. hidden: the import of a hidden module fails with the rule's name
# --------------------------------------------------------------------------
class HiddenModules(importlib.abc.MetaPathFinder):
    """Refuses to import what the rules hide (whose files the sandbox mounts empty)."""

    def __init__(self, hidden: Iterable[str]) -> None:
        self.hidden = tuple(hidden)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        for name in self.hidden:
            if fullname == name or fullname.startswith(name + "."):
                raise ModuleNotFoundError(
                    f"규칙: 이 연습 문제에서는 쓸 수 없어서 채점 환경에 없습니다 — `{name}`",
                    name=fullname,
                )
        return None


def hidden_paths(hidden: Iterable[str]) -> list[tuple[str, Path]]:
    """``("dir" | "file", path)`` to mount empty for each hidden dotted name found here."""
    found: list[tuple[str, Path]] = []
    for name in hidden:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError, AttributeError):
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found += [("dir", Path(p)) for p in spec.submodule_search_locations]
        elif spec.origin and Path(spec.origin).is_file():
            origin = Path(spec.origin)
            found.append(("file", origin))
            cache = origin.parent / "__pycache__"
            if cache.is_dir():
                found += [("file", p) for p in sorted(cache.glob(f"{origin.stem}.*.pyc"))]
    return [(kind, path) for kind, path in found if path.exists()]


# --------------------------------------------------------------------------
# 3. refused at run time: guards around forbidden callables the sandbox shows
# --------------------------------------------------------------------------
class Guards:
    """Wrappers around forbidden callables, active for the question being graded.

    Installed in the student's process before any of its code runs, so every
    reference the notebook can take is to the wrapper. A call while a question
    that forbids the callable is active raises :class:`RuleViolation` and is
    recorded; the grader collects the record after the question's tests.
    """

    def __init__(self, names: Iterable[str]) -> None:
        self.names: list[str] = []
        self.active: frozenset[str] = frozenset()
        self.question = ""
        self.record: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        for name in names:
            if self._install(name):
                self.names.append(name)

    def _install(self, name: str) -> bool:
        module_name, _, attribute = name.rpartition(".")
        if not module_name:
            return False
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            # numpy.ndarray.sum: an attribute of a class inside a module.
            outer, _, cls = module_name.rpartition(".")
            try:
                owner = getattr(importlib.import_module(outer), cls)
            except (ImportError, AttributeError, ValueError):
                return False
        except ValueError:
            return False
        original = getattr(owner, attribute, None)
        if original is None or not callable(original) or isinstance(original, type(sys)):
            return False
        guard = _Guarded(self, name, original)
        for module in list(sys.modules.values()):  # the same object under other names
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for key, value in list(namespace.items()):
                if value is original:
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(module, key, guard)
        try:
            setattr(owner, attribute, guard)
        except (AttributeError, TypeError):
            return False
        return True

    def activate(self, question: str, forbidden: Iterable[str]) -> None:
        with self._lock:
            self.question = question
            self.active = frozenset(n for n in self.names if _covered(n, forbidden))

    def collect(self) -> list[tuple[str, str]]:
        with self._lock:
            record, self.record = self.record, []
            self.active, self.question = frozenset(), ""
        return record

    def refuse(self, name: str) -> None:
        if name not in self.active:
            return
        caller = sys._getframe(2)
        top = name.split(".")[0]
        if caller.f_globals.get("__name__", "").split(".")[0] == top:
            return  # the library calling itself
        with self._lock:
            if (self.question, name) not in self.record:
                self.record.append((self.question, name))
        raise RuleViolation(called_message(self.question, name))


def called_message(question: str, name: str) -> str:
    """The reason for a forbidden callable called while ``question`` was graded."""
    head = f"규칙 위반(문제 {question.lstrip('q')})"
    return f"{head}: 답이 실행 중에 쓸 수 없는 것을 불렀습니다 — `{name}`."


class _Guarded:
    """A forbidden callable's stand-in: checks the rule, then calls the original."""

    __slots__ = ("_guards", "_name", "_original")

    def __init__(self, guards: Guards, name: str, original: Callable[..., Any]) -> None:
        object.__setattr__(self, "_guards", guards)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_original", original)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._guards.refuse(self._name)
        return self._original(*args, **kwargs)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        guards, name, original = self._guards, self._name, self._original

        def bound(*args: Any, **kwargs: Any) -> Any:
            guards.refuse(name)
            return original(instance, *args, **kwargs)

        return bound

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._original, attribute)

    def __repr__(self) -> str:
        return repr(self._original)


def install_in_runner(hidden: Sequence[str], guarded: Sequence[str]) -> Guards:
    """What the sandboxed runner does before any student code: block, then guard."""
    sys.meta_path.insert(0, HiddenModules(hidden))
    for name in list(sys.modules):
        if _covered(name, hidden):
            del sys.modules[name]
    return Guards(n for n in guarded if not _covered(n, hidden))
