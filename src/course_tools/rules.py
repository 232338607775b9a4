"""What an answer may not use, declared in the master and enforced in depth.

An exercise asks a student to build something a library already has (an RNN
cell, BLEU, attention). Its master declares what the answers may not use:
packages (``torch``) and modules (``course_utils.rnn``), as dotted names::

    # ASSIGNMENT CONFIG            (every question)
    rules:
      forbid: [torch, transformers, course_utils.rnn]

A question's config may declare ``rules: forbid: [...]`` too, on top of the
above; the grader can enforce such a rule only if every question has it (1.).

The grader enforces a rule two ways:

1. **Hidden.** What an exercise forbids is not in the student's sandbox at all:
   its package's folder or its module's file is mounted empty, so no trick
   inside the process, a program it starts or a shell command can reach its
   code (:meth:`Rules.hidden`). That needs a rule every question of the
   exercise has, on a package or module outside the standard library that the
   sandboxed runner does not import (numpy, IPython: :data:`RUNNER_NEEDS`), with
   a file or folder of its own (a module, not a function or class). A rule that
   cannot be hidden (``numpy.linalg.svd``, ``collections``, or ``torch`` in one
   question only) could only be checked inside the student's own process, which
   the answer controls; so ``make exercises`` refuses a master with one and the
   grader an autograder zip with one, naming why (:meth:`Rules.check_enforceable`).
2. **Read.** Before a question's tests run, the notebook's cells so far are read
   (:func:`violations`): the question's answer (the names its tests read) and
   everything it refers to, through functions, classes, imports and aliases,
   may not name a forbidden thing; and no cell may use the ways around a rule
   (``getattr`` with a computed name, ``importlib``, ``__import__``, ``eval``,
   ``sys.modules``, ``gc``, ``ctypes``, pickling, ``subprocess``, frame and
   closure introspection, private names of a module), including in the Python
   IPython evaluates in a shell command's or a magic's line (``!cmd {expr}``).
   A question whose answer breaks a rule scores 0, with a reason that names the
   rule. The read names the rule an answer breaks before the sandbox's missing
   module fails it, and catches a use in the notebook's own process of a copy
   of a forbidden package that the hiding missed; a program the notebook starts
   (a shell command) it does not follow. It is a list of known ways around.

The student's own ``grader.check`` runs the same read (2) in the notebook's
kernel (:func:`check_here`), so a rule shows before submission.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.util
import json
import re
import string
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_MAGIC_OPTION_WORDS",
    "HiddenModules",
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
    "locals": "locals()",
    "breakpoint": "breakpoint()",
}
ESCAPE_MODULES = (
    "importlib", "imp", "builtins", "ctypes", "cffi", "inspect", "pickle", "_pickle", "cPickle",
    "marshal", "shelve", "copyreg", "dill", "cloudpickle", "joblib", "runpy", "pkgutil",
    "zipimport", "code", "codeop", "subprocess", "multiprocessing", "pty", "pydoc", "site",
    "unittest.mock", "logging.config", "concurrent.futures.process",
    "course_tools",  # the grader's own code: the runner and its wire to the grader
    "_posixsubprocess", "pexpect", "ptyprocess", "webbrowser", "asyncio.subprocess",
    "IPython.core", "IPython.utils", "IPython.terminal", "IPython.testing",  # the shell itself
)  # fmt: skip
# Single callables that reach objects by a name in a string, or walk the interpreter's objects.
ESCAPE_PATHS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.garbage",
                "concurrent.futures.ProcessPoolExecutor", "IPython.get_ipython",
                "IPython.InteractiveShell", "IPython.embed", "IPython.start_ipython",
                "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell"}  # fmt: skip
# Modules whose every name a star import would bring in unread: `from os import *; execv(…)`.
STAR_ESCAPES = ("os", "posix", "nt", "sys", "gc", "operator", "concurrent", "IPython")
# Like getattr: an attribute named by a string.
ATTRIBUTE_GETTERS = {"operator.attrgetter", "operator.methodcaller"}
ESCAPE_SYS = {
    "modules", "meta_path", "path_hooks", "path_importer_cache", "settrace", "setprofile",
    "_getframe", "exc_info", "exception", "last_traceback", "addaudithook", "path",
}  # fmt: skip
# os's ways to start a program or a process; and every exec*, spawn* and posix_spawn* (_os_escape).
ESCAPE_OS = {"system", "popen", "fork", "forkpty", "dup2", "startfile"}
ESCAPE_ATTRIBUTES = {
    "__globals__", "__closure__", "__code__", "__wrapped__", "__builtins__",
    "__subclasses__", "__getattribute__", "__import__", "__loader__", "__spec__", "__self__",
    "__func__", "__reduce__", "__reduce_ex__", "__mro__", "__bases__", "__base__",
    "f_globals", "f_locals", "f_back", "f_builtins", "gi_frame", "cr_frame", "ag_frame",
    "tb_frame", "tb_next", "co_consts", "__setattr__", "__delattr__", "__set_name__",
    "__init_subclass__", "__getattr__", "__kwdefaults__", "__defaults__",
}  # fmt: skip
ATTRIBUTE_BUILTINS = {"getattr", "setattr", "delattr"}
# Magics whose text is Python that IPython runs: the read reads it too.
PYTHON_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
# Magics that run code the notebook's cells do not show.
CODE_MAGICS = {"run", "load", "loadpy", "writefile", "file", "macro", "store", "recall", "rerun",
               "edit", "script", "python", "python3", "pypy", "bash", "sh", "system", "sx",
               "perl", "ruby", "js", "javascript", "html", "sc",
               # ... or make a later line run one the read does not see: %run under a new name,
               # a bare `run x.py` with automagic back on
               "alias_magic", "automagic", "autocall"}  # fmt: skip
# What the sandboxed runner itself imports: never hidden, so a rule on one is refused
# (Rules.check_enforceable), as is one on the standard library.
RUNNER_NEEDS = ("numpy", "IPython", "course_tools", "traitlets", "prompt_toolkit", "jedi",
                "parso", "pygments", "decorator", "stack_data", "executing", "asttokens",
                "pure_eval", "matplotlib_inline", "pexpect", "ptyprocess", "wcwidth")  # fmt: skip


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

    def unenforceable(self) -> list[str]:
        """Forbidden names the sandbox cannot hide: refused by ``make exercises`` and the grader.

        A name only some questions forbid, or one inside a package the runner needs.
        """
        hidden = self.hidden()
        names = {n for forbid in self.forbid.values() for n in forbid}
        return sorted(n for n in names if not _covered(n, hidden))

    def check_enforceable(self, where: str) -> None:
        """Raise ``ValueError`` naming each rule the sandbox cannot hide, and why.

        Besides :meth:`unenforceable`'s: a module of Python's standard library (the
        sandbox's Python needs many, and others have private twins: ``csv`` and ``_csv``),
        and a name that is not a module with a file or folder of its own (a function or a
        class, ``scipy.linalg.svd``: nothing to mount empty). A package this machine does
        not have is accepted: the sandbox runs this Python, so it has none either.
        """
        why: dict[str, str] = {}
        for name in self.unenforceable():
            why[name] = (
                "the sandbox's runner imports it"
                if _covered(name.split(".")[0], RUNNER_NEEDS)
                else "not every question forbids it"
            )
        for name in self.hidden():
            top = name.split(".")[0]
            if top in sys.stdlib_module_names:
                why[name] = "a module of Python's standard library"
            elif _installed(top) and not hidden_paths([name]):
                why[name] = "not a module with a file or folder of its own (a function, a class)"
        if why:
            listed = "; ".join(f"{name} ({reason})" for name, reason in sorted(why.items()))
            raise ValueError(
                f"{where}: the grading sandbox cannot hide what these rules forbid: {listed}. "
                "A rule must name a package or module outside the standard library that every "
                "question forbids and the sandbox's runner does not import "
                f"({', '.join(RUNNER_NEEDS[:3])}, …); move questions with rules of their own to "
                "an exercise of their own."
            )

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

    def provided_cells(self, cells: Iterable[tuple[int, str]]) -> set[int]:
        """The numbers of the cells the notebook provides (unchanged by the student)."""
        trusted = set(self.trusted)
        return {i for i, s in cells if cell_digest(s) in trusted}


def _installed(name: str) -> bool:
    """Whether the top-level package or module ``name`` can be found here."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


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
    trusted: bool = False  # a cell the notebook provides: read for aliases, not for escapes


@dataclass(frozen=True)
class _Scope:
    """Inside a function: the names it binds for itself, and the aliases it makes."""

    shadowed: frozenset[str] = frozenset()
    aliases: tuple[tuple[str, str], ...] = ()

    def alias(self, name: str) -> str | None:
        return dict(self.aliases).get(name)


TOP = _Scope()
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _bound_names(node: ast.AST) -> list[str]:
    """Names a top-level statement binds in the notebook's namespace."""
    if isinstance(node, _DEFINITIONS):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*"]
    names = []
    stack = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.append(sub.id)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            names.append(sub.name)
        elif isinstance(sub, ast.MatchMapping) and sub.rest:
            names.append(sub.rest)
        elif isinstance(sub, _DEFINITIONS):
            names.append(sub.name)
            continue
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name.split(".")[0]) for a in sub.names if a.name != "*"]
        elif isinstance(sub, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(sub))
    return names


def _base_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _stored_bases(targets: Iterable[ast.AST]) -> set[str]:
    """``box`` in ``box.f = …`` and ``d`` in ``d[k] = …``: names changed, not rebound."""
    found = set()
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, (ast.Attribute, ast.Subscript)) and isinstance(
                part.ctx, (ast.Store, ast.Del)
            ):
                base = _base_name(part)
                if base:
                    found.add(base)
    return found


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in node.items if i.optional_vars is not None]
    return []


def _touched_names(node: ast.AST, aliases: dict[str, str]) -> set[str]:
    """Names a top-level statement changes without rebinding them: ``box.f = …``,
    ``d[k] = …``, ``items.append(…)``, ``setattr(math, …)``; for a function, the names it
    declares ``global`` and the outside names it stores into when it runs."""
    found: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        local = _arguments(node.args)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Global):
                found |= set(sub.names)
            found |= _stored_bases(_targets(sub)) - local
        return found
    if isinstance(node, ast.ClassDef):
        return found
    for sub in ast.walk(node):
        found |= _stored_bases(_targets(sub))
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id in ATTRIBUTE_BUILTINS
            and sub.args
        ):
            base = _base_name(sub.args[0])  # setattr(math, "f", …)
            if base:
                found.add(base)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func  # items.append(…): a notebook object changed by its method
        changed = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
        if changed and func.value.id not in aliases:  # type: ignore[attr-defined]
            found.add(func.value.id)  # type: ignore[attr-defined]
    return found


def _magic_call(node: ast.AST) -> tuple[str, str] | None:
    """``get_ipython().run_line_magic(name, text)`` or ``run_cell_magic(name, line, text)``."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("run_line_magic", "run_cell_magic")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return None
    parts = node.args[-1:] if node.func.attr == "run_cell_magic" else node.args[1:2]
    text = parts[0] if parts else None
    body = text.value if isinstance(text, ast.Constant) and isinstance(text.value, str) else ""
    return node.args[0].value, body


# %config settings that change how the shell reads a line: with automagic back on, a bare
# `run x.py` runs a file, and the read (which skips a line that is not Python) sees nothing.
_SHELL_SETTINGS = re.compile(r"automagic|autocall|InteractiveShell|Prefilter|AutoMagic")


def _expanded_python(node: ast.AST) -> list[ast.stmt]:
    """The Python IPython evaluates in the notebook while it expands a line, as statements.

    ``!cmd {expr}``, ``x = !cmd $name`` and a line magic's ``{expr}`` (``%env X={expr}``):
    IPython evaluates each field before it starts the command or the magic, in the
    notebook's own process. ``%config`` runs its line as Python (``cfg.<line>``). A field
    that is not Python runs nothing (IPython then leaves the line as it is).
    """
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return []
    shell = _shell_call(node.func) and node.func.attr in ("system", "getoutput")
    magic = node.func.attr in ("run_line_magic", "run_cell_magic") and len(node.args) >= 2
    if not (shell or magic) or not node.args:
        return []
    text = node.args[0 if shell else 1]
    if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
        return []
    name = node.args[0].value if magic and isinstance(node.args[0], ast.Constant) else ""
    if name in PYTHON_MAGICS:
        return []  # not expanded; their code is read as code
    sources = [f"cfg.{text.value}"] if name == "config" else []
    sources += [m.group(1) for m in re.finditer(r"(?<!\$)\$([A-Za-z_][\w.]*)", text.value)]
    fields = iter(string.Formatter().parse(text.value))
    while True:  # IPython evaluates the fields in order, up to one that breaks the format
        try:
            _, field, spec, _ = next(fields)
        except (StopIteration, ValueError):
            break
        if field is not None:
            sources.append(f"{field}:{spec}" if spec else field)
    body: list[ast.stmt] = []
    for source in sources:
        try:
            body += ast.parse(source).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return body


# More leading words than any option list of %time, %timeit or %%capture has ("-n 10 -r 3
# -o -q -p 3 -t -c" is ten). Each attempt reads the whole line, so trying every word of a
# long line would cost its square (a 16 KB line of "a a a …" took minutes): past this many
# words the magic's code is not read, and the read fails closed (the magic is unreadable).
MAX_MAGIC_OPTION_WORDS = 16


def _magic_python(text: str) -> list[ast.stmt] | None:
    """The Python a ``%time``/``%%capture``-like magic runs, or None if it cannot be read."""
    words = text.split(None, MAX_MAGIC_OPTION_WORDS + 1)
    for skip in range(min(len(words), MAX_MAGIC_OPTION_WORDS) + 1):  # options: "-n 10", "-o"
        candidate = text.split(None, skip)[-1] if skip else text
        try:
            return ast.parse(_python(candidate)).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


class _Reader:
    """The notebook's top-level statements in order: what binds each name, and the import
    aliases in force when the question is graded (a later definition replaces an alias)."""

    def __init__(self, cells: Sequence[tuple[int, str]], trusted: Iterable[int] = ()) -> None:
        self.bindings: dict[str, list[_Statement]] = {}
        self.statements: list[_Statement] = []
        self.aliases: dict[str, str] = {}
        self.raw: dict[int, str] = {}
        self.unreadable: list[tuple[str, int]] = []  # magics whose code cannot be read
        trusted = set(trusted)
        for cell, source in cells:
            self.raw[cell] = source
            try:
                body = ast.parse(_python(source)).body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue  # a cell that does not parse defined nothing when it ran
            pending = list(body)
            while pending:
                node = pending.pop(0)
                statement = _Statement(node, cell, cell in trusted)
                self._add(statement)
                # The code inside %time, %%capture and their like runs too: read it, in order;
                # and so does what IPython evaluates in a shell command's or a magic's line.
                inner: list[ast.stmt] = []
                for sub in ast.walk(node):
                    magic = _magic_call(sub)
                    if magic and magic[0] in PYTHON_MAGICS:
                        code = _magic_python(magic[1])
                        if code is None:
                            self.unreadable.append((f"%{magic[0]}", cell))
                        else:
                            inner += code
                    elif magic and magic[0] == "config" and _SHELL_SETTINGS.search(magic[1]):
                        self.unreadable.append(("%config", cell))  # automagic back on
                    inner += _expanded_python(sub)
                pending = inner + pending

    def _add(self, statement: _Statement) -> None:
        node = statement.node
        self.statements.append(statement)
        bound = _bound_names(node)
        for name in bound:
            if isinstance(node, (*_DEFINITIONS, ast.Import, ast.ImportFrom, ast.Assign)):
                self.bindings[name] = [statement]
            else:
                self.bindings.setdefault(name, []).append(statement)
        for name in _touched_names(node, self.aliases) - set(bound):
            self.bindings.setdefault(name, []).append(statement)
        made = dict(self._aliases_made(node, TOP))
        for name in bound:  # the alias in force is the last binding's
            if name in made:
                self.aliases[name] = made[name]
            else:
                self.aliases.pop(name, None)

    def _aliases_made(self, node: ast.AST, scope: _Scope) -> Iterable[tuple[str, str]]:
        if isinstance(node, ast.Import):
            for a in node.names:
                yield (
                    (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    yield a.asname or a.name, f"{node.module}.{a.name}"
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                dotted = self.dotted(node.value, scope)
                if dotted is not None:
                    yield target.id, dotted

    def dotted(self, node: ast.AST, scope: _Scope = TOP) -> str | None:
        """``np.linalg.svd`` → ``numpy.linalg.svd`` where the base is an import alias."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call):  # getattr(np, "linalg").svd
            inner = self.getattr_target(node, scope)
            if inner is None:
                return None
            return ".".join([inner, *reversed(parts)])
        if not isinstance(node, ast.Name):
            return None
        base = scope.alias(node.id)
        if base is None and node.id not in scope.shadowed:
            base = self.aliases.get(node.id)
        if base is None:
            return None
        return ".".join([base, *reversed(parts)])

    def getattr_target(self, call: ast.Call, scope: _Scope = TOP) -> str | None:
        if not (isinstance(call.func, ast.Name) and call.func.id == "getattr"):
            return None
        if call.func.id in scope.shadowed or call.func.id in self.bindings or len(call.args) < 2:
            return None
        if not (isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)):
            return None
        base = self.dotted(call.args[0], scope)
        return None if base is None else f"{base}.{call.args[1].value}"

    def own(self, name: str, scope: _Scope) -> bool:
        """Whether ``name`` is the notebook's own (a function, a variable) and not a builtin."""
        return name in scope.shadowed or scope.alias(name) is not None or name in self.bindings


def _arguments(args: ast.arguments) -> set[str]:
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in named if a is not None}


def _function_scope(
    reader: _Reader, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, outer: _Scope
) -> _Scope:
    """The scope a function's body runs in: its own names, and the aliases it makes."""
    stored, declared = _arguments(function.args), set()
    aliases = dict(outer.aliases)
    body: list[ast.AST] = (
        [function.body] if isinstance(function, ast.Lambda) else list(function.body)
    )
    stack = list(body)
    while stack:
        sub = stack.pop()
        if isinstance(sub, _DEFINITIONS):
            stored.add(sub.name)
            continue  # its body is a scope of its own
        if isinstance(sub, ast.Lambda):
            continue
        if isinstance(sub, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            # Its loop variables are its own (a walrus inside still binds here).
            for generator in sub.generators:
                stack += [generator.iter, *generator.ifs]
            stack += [c for c in ast.iter_child_nodes(sub) if not isinstance(c, ast.comprehension)]
            continue
        if isinstance(sub, (ast.Global, ast.Nonlocal)):
            declared |= set(sub.names)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            stored.add(sub.id)
        elif isinstance(sub, (ast.MatchAs, ast.MatchStar)) and sub.name:
            stored.add(sub.name)
        stack.extend(ast.iter_child_nodes(sub))
    for statement in ast.walk(function) if not isinstance(function, ast.Lambda) else []:
        if isinstance(statement, (ast.Import, ast.ImportFrom, ast.Assign)):
            aliases.update(reader._aliases_made(statement, outer))
    local = (stored | set(outer.shadowed)) - declared
    own_aliases = {n: a for n, a in aliases.items() if n not in declared}
    return _Scope(frozenset(local - set(own_aliases)), tuple(sorted(own_aliases.items())))


def _scoped_walk(
    reader: _Reader, node: ast.AST, scope: _Scope = TOP
) -> Iterable[tuple[ast.AST, _Scope]]:
    """Every node under ``node`` with the scope it is in (no recursion: deep code is fine)."""
    stack: list[tuple[ast.AST, _Scope]] = [(node, scope)]
    while stack:
        current, where = stack.pop()
        yield current, where
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outer: list[ast.AST] = [*current.decorator_list, *current.args.defaults]
            outer += [d for d in current.args.kw_defaults if d is not None]
            stack += [(child, where) for child in outer]
            inner = _function_scope(reader, current, where)
            stack += [(child, inner) for child in current.body]
        elif isinstance(current, ast.Lambda):
            defaults: list[ast.AST] = [*current.args.defaults]
            defaults += [d for d in current.args.kw_defaults if d is not None]
            stack += [(child, where) for child in defaults]
            stack.append((current.body, _function_scope(reader, current, where)))
        elif isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            targets = {
                n.id
                for g in current.generators
                for n in ast.walk(g.target)
                if isinstance(n, ast.Name)
            }
            inner = _Scope(where.shadowed | targets, where.aliases)
            first = current.generators[0].iter  # evaluated outside the comprehension
            stack.append((first, where))
            for child in ast.iter_child_nodes(current):
                if child is not current.generators[0]:
                    stack.append((child, inner))
            generator = current.generators[0]
            stack += [(generator.target, inner), *((c, inner) for c in generator.ifs)]
        else:
            stack += [(child, where) for child in ast.iter_child_nodes(current)]


def _where(statement: _Statement, node: ast.AST) -> str:
    line = getattr(node, "lineno", None) or getattr(statement.node, "lineno", 0)
    return f"셀 {statement.cell}, {line}행"


def _attribute_name_escape(call: ast.Call, what: str) -> str | None:
    """``getattr(x, name)`` and its like: computed names and introspection names are ways around."""
    names = call.args[1:2] if what in ATTRIBUTE_BUILTINS else call.args
    for name in names:
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return f"{what}(…, 계산한 이름)"
        value = name.value
        if value in ESCAPE_ATTRIBUTES or (value.startswith("_") and not value.startswith("__")):
            return f"{what}(…, {value!r})"
        # attrgetter("system")(os): the object comes later, so judge by the name alone
        taken = value.split(".")[-1] if what in ATTRIBUTE_GETTERS else ""
        if taken and (taken in ESCAPE_SYS or _os_escape(taken) or taken in _ESCAPE_LAST):
            return f"{what}(…, {value!r})"
    if what in ("setattr", "delattr"):
        return None if names else f"{what}(…)"
    return None


_ESCAPE_LAST = {path.rsplit(".", 1)[-1] for path in ESCAPE_PATHS}


def _os_escape(name: str) -> bool:
    """Whether ``os.<name>`` starts a program or a process (``execvpe``, ``posix_spawnp``, …)."""
    return name in ESCAPE_OS or name.startswith(("exec", "spawn", "posix_spawn"))


def _is_os(base: str) -> bool:
    """``os``, or the module it wraps (``posix``, ``nt``), under any name that ends in it."""
    return base in ("os", "posix", "nt") or base.endswith(".os")


def _path_escape(path: str) -> bool:
    """Whether importing ``path`` or taking it by name is a way around (``os.execv``, …)."""
    base, _, name = path.rpartition(".")
    return (
        path in ESCAPE_PATHS
        or _covered(path, ESCAPE_MODULES)
        or (base == "sys" and name in ESCAPE_SYS)
        or (bool(base) and _is_os(base) and _os_escape(name))
    )


def _shell_call(node: ast.Attribute) -> bool:
    """``get_ipython().<anything>``: what ``!cmd`` and ``x = !cmd`` become, and the shell itself.

    The magics' own form, ``get_ipython().run_line_magic(…)``/``run_cell_magic(…)``, is read
    as a magic instead (:func:`_magic_call`). A shell command is not held against the
    notebook (``!pip install konlpy``, ``!nvidia-smi`` are habits): a program it starts runs in
    the same sandbox, where a hidden package is not. The Python IPython evaluates in the
    command's ``{expr}`` and ``$name`` is read (:func:`_expanded_python`).
    """
    value = node.value
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "get_ipython"
        and node.attr not in ("run_line_magic", "run_cell_magic")
    )


def _escapes(reader: _Reader, statement: _Statement) -> Iterable[tuple[str, ast.AST]]:
    """The ways around a rule in one statement: ``(what, node)``."""
    membership = {  # `"x" in sys.modules` only looks: not a way around
        id(c)
        for sub in ast.walk(statement.node)
        if isinstance(sub, ast.Compare) and all(isinstance(o, (ast.In, ast.NotIn)) for o in sub.ops)
        for c in sub.comparators
    }
    called = {id(sub.func) for sub in ast.walk(statement.node) if isinstance(sub, ast.Call)}
    for node, scope in _scoped_walk(reader, statement.node):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            for module in modules:
                if _path_escape(module):
                    yield module, node
            if (
                isinstance(node, ast.ImportFrom)
                and any(a.name == "*" for a in node.names)
                and (node.module or "").split(".")[0] in STAR_ESCAPES
            ):
                yield f"from {node.module} import *", node
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in ESCAPE_CALLS and not reader.own(node.id, scope):
                yield ESCAPE_CALLS[node.id], node
            elif node.id in ("__builtins__", "__loader__", "__spec__"):
                yield node.id, node
            elif node.id == "get_ipython" and "get_ipython" in reader.raw.get(statement.cell, ""):
                # Magics become get_ipython() calls; the shell itself, written out, is a way around.
                yield "get_ipython()", node
            elif node.id == "vars" and not reader.own("vars", scope):
                yield "vars()", node
            elif (
                node.id in ATTRIBUTE_BUILTINS
                and id(node) not in called
                and not reader.own(node.id, scope)
            ):
                # reduce(getattr, ["fact" + "orial"], math): getattr handed on, its name unread
                yield f"{node.id} (값으로 넘김)", node
            elif id(node) not in called and reader.dotted(node, scope) in ATTRIBUTE_GETTERS:
                yield f"{reader.dotted(node, scope)} (값으로 넘김)", node
        elif isinstance(node, ast.Attribute):
            if node.attr in ESCAPE_ATTRIBUTES:
                yield node.attr, node
                continue
            if _shell_call(node):
                if id(node) not in called:  # the shell's method itself, handed on
                    yield "get_ipython()", node
                continue  # !cmd: see _shell_call
            base = reader.dotted(node.value, scope)
            if base is None:
                continue
            path = f"{base}.{node.attr}"
            is_sys = base == "sys" or base.endswith(".sys")  # os.sys is sys
            if path in ESCAPE_PATHS:
                yield path, node
            elif path in ATTRIBUTE_GETTERS and id(node) not in called:
                yield f"{path} (값으로 넘김)", node
            elif node.attr == "__dict__":
                yield path, node  # a module's or an imported object's namespace
            elif is_sys and node.attr in ESCAPE_SYS and id(node) not in membership:
                yield f"sys.{node.attr}", node
            elif _is_os(base) and _os_escape(node.attr):
                yield path, node
            elif (
                node.attr.startswith("_")
                and not node.attr.startswith("__")
                and _is_module_path(base)
            ):
                yield path, node  # a module's private name (torch._C)
        elif isinstance(node, ast.Call):
            magic = _magic_call(node)
            if magic and magic[0] in CODE_MAGICS:
                yield f"%{magic[0]}", node  # runs code the notebook does not show
                continue
            target = reader.getattr_target(node, scope)
            if target is not None and _path_escape(target):
                yield target, node  # getattr(os, "system"): a way around taken by its name
                continue
            what = None
            if isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_BUILTINS:
                if not reader.own(node.func.id, scope):
                    what = node.func.id
            else:
                dotted = reader.dotted(node.func, scope)
                if dotted in ATTRIBUTE_GETTERS:
                    what = dotted
            if what is not None:
                escape = _attribute_name_escape(node, what)
                if escape:
                    yield escape, node


def _is_module_path(dotted: str) -> bool:
    top = dotted.split(".")[0]
    try:
        return top in sys.stdlib_module_names or importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _uses(reader: _Reader, statement: _Statement, forbidden: Sequence[str]):
    """Forbidden names one statement uses: ``(used, rule, node)``."""
    for node, scope in _scoped_walk(reader, statement.node):
        used: list[str] = []
        if isinstance(node, ast.Import):
            used = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            used = [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, (ast.Attribute, ast.Name)):
            dotted = reader.dotted(node, scope)
            used = [dotted] if dotted else []
        elif isinstance(node, ast.Call):
            target = reader.getattr_target(node, scope)
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
    trusted: Iterable[int] = (),
) -> list[Violation]:
    """What question ``question``'s answer uses against its rules, read from ``cells``.

    ``cells`` are ``(cell number, source)`` of the cells that ran before the
    question is graded; ``names`` are the notebook names its tests read;
    ``trusted`` are the numbers of the cells the notebook provides (read for their
    imports, never held against the student). The answer is those names'
    definitions and everything they refer to, including what changes them later
    (``box.f = …``, ``global``). A way around the rules counts against the
    questions whose answers reach it, and, written at the top level of a cell
    (outside any function or class), against every question that has rules.
    """
    if not forbidden:
        return []
    reader = _Reader(cells, trusted)
    found: list[Violation] = []
    seen: set[tuple[str, str]] = set()

    def add(used: str, rule: str, where: str) -> None:
        if (used, rule) not in seen:
            seen.add((used, rule))
            found.append(Violation(question, used, rule, where))

    for what, cell in reader.unreadable:
        add(what, "escape", f"셀 {cell}")
    for statement in reader.statements:
        if statement.trusted:
            continue
        node = statement.node
        if not isinstance(node, _DEFINITIONS):  # top-level code runs once for every question
            for what, sub in _escapes(reader, statement):
                add(what, "escape", _where(statement, sub))
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            for used, rule, sub in _uses(reader, statement, forbidden):  # names it cannot list
                add(used, rule, _where(statement, sub))
    queue, visited = list(names), set()
    while queue:
        name = queue.pop()
        if name in visited:
            continue
        visited.add(name)
        alias = reader.aliases.get(name)
        if alias is not None:  # the answer is, or uses, an imported name
            for rule in forbidden:
                if _covered(alias, [rule]):
                    add(alias, rule, "")
        for statement in reader.bindings.get(name, []):
            for used, rule, node in _uses(reader, statement, forbidden):
                add(used, rule, _where(statement, node))
            if isinstance(statement.node, _DEFINITIONS) and not statement.trusted:
                for what, node in _escapes(reader, statement):  # a way around inside the answer
                    add(what, "escape", _where(statement, node))
            for node, scope in _scoped_walk(reader, statement.node):
                name_here = node.id if isinstance(node, ast.Name) else ""
                own = name_here not in scope.shadowed and scope.alias(name_here) is None
                if name_here in reader.bindings and own:
                    queue.append(name_here)
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
    # The otter cells (set-up, checks) read nothing the answer uses; the grader does not
    # run them either, and every other cell it runs is read here (course_tools.student).
    from course_tools.student import otter_cell

    cells = [(i, s) for i, s in cells if otter_cell(s) is None]
    provided = Rules("", trusted=list(trusted)).provided_cells(cells)
    found = violations(cells, question, forbidden, names, trusted=provided)
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


def install_in_runner(hidden: Sequence[str]) -> None:
    """What the sandboxed runner does before any student code: refuse the hidden modules."""
    sys.meta_path.insert(0, HiddenModules(hidden))
    for name in list(sys.modules):
        if _covered(name, hidden):
            del sys.modules[name]
