"""The layout's rules, read from the source: taught code apart from the chapters' experiments.

- A model module (``course_utils/*.py``) never imports ``course_utils.experiments``
  or the result cache (``course_utils.runs``), and never another module's
  private names (``from m import _x``, ``m._x``).
- An experiment module (``course_utils/experiments/chNN_*.py``) imports model
  modules, and experiments of its own or earlier chapters only.
- Tests and benchmarks import no private name of ``course_utils``.
- No module of ``course_utils`` is over 1,000 lines.
- The book shows and names public functions only.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "src" / "course_utils"
MAX_LINES = 1000


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` for every import in ``path`` (name None for ``import m``), and
    ``(module, attribute)`` for ``alias.attr`` reads of an imported course module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, str | None]] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, None))
                if alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if alias.name[:1] != "_" and _is_module(full):
                    found.append((full, None))
                    aliases[alias.asname or alias.name] = full
                else:
                    found.append((node.module, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = aliases.get(node.value.id)
            if module and module.startswith("course_utils"):
                found.append((module, node.attr))
    return found


def _is_module(dotted: str) -> bool:
    if not dotted.startswith("course_utils."):
        return False
    relative = Path(*dotted.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").is_file() or (PACKAGE / relative).is_dir()


def _chapter(module: str) -> int | None:
    match = re.search(r"experiments\.ch(\d\d)_", module)
    return int(match.group(1)) if match else None


def _breaks() -> set[tuple[str, str]]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE.parent))
        me = _module_name(path)
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            found.add((where, f"is over {MAX_LINES:,} lines"))
        experiment = me.startswith("course_utils.experiments")
        for module, name in _imports(path):
            if not module.startswith("course_utils"):
                continue
            private = name is not None and name[:1] == "_" and name[:2] != "__"
            if private and module != me:
                found.add((where, f"imports private {module}.{name}"))
            if experiment:
                theirs = _chapter(module)
                if theirs is not None and theirs > (_chapter(me) or 0):
                    found.add((where, f"imports a later chapter's {module}"))
            elif module.startswith("course_utils.experiments"):
                found.add((where, f"imports the experiments {module}"))
            elif module == "course_utils.runs" and me != "course_utils.runs":
                found.add((where, "imports the cache course_utils.runs"))
    return found


def test_model_modules_and_experiments_keep_the_layout():
    breaks = sorted(_breaks())
    assert not breaks, f"the layout's rules are broken here: {breaks}"


def test_tests_and_benchmarks_import_no_private_names():
    found = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]):
        for module, name in _imports(path):
            if module.startswith("course_utils") and name and name[:1] == "_" and name[:2] != "__":
                found.append(f"{path.relative_to(ROOT)}: {module}.{name}")
    assert not found, found


def test_the_reader_sees_what_it_must():
    """The checks above catch each kind of break in a module written for the purpose."""
    sample = PACKAGE / "experiments" / "ch12_pretraining.py"
    imports = _imports(sample)
    assert ("course_utils.runs", "cached") in imports  # runs.cached(...) read as an attribute
    assert ("course_utils.bert", "mask_tokens") in imports
    assert _chapter("course_utils.experiments.ch12_finetuning") == 12
    assert _is_module("course_utils.runs") and not _is_module("course_utils.runs.cached")


def test_the_book_shows_public_names_only():
    shown = []
    for chapter in sorted((ROOT / "book").glob("ch*.md")):
        for target in re.findall(
            r"```\{course-code\}\s+(\S+)", chapter.read_text(encoding="utf-8")
        ):
            shown.append(target)
            private = [p for p in target.split(".") if p[:1] == "_" and not p.endswith("__")]
            assert not private, f"{chapter.name} shows the private {target}: give it a public name"
    assert len(shown) > 100  # every chapter shows its code
    named = re.findall(r"`(?:[\w.]+\.)?(_[a-z]\w*)`", chapter_texts())
    assert not named, f"the book names private functions in its prose: {named}"


def chapter_texts() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "book").glob("ch*.md")))


#: ``isinstance(x, bool) or not isinstance(x, int…) or x < n``: the positive-int check by hand
_HAND_INT_CHECK = re.compile(
    r"isinstance\((?P<v>[\w.]+), bool\)\s+or not isinstance\((?P=v), [^)]*int[^)]*\)\s+or (?P=v) <"
)


def test_shared_plumbing_is_written_once():
    """One int check (``checks.check_int``), one result cache and one worker pool (``runs``)."""
    hand_checks, pools = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(PACKAGE))
        if path.name != "checks.py":
            hand_checks += [f"{where}: {m.group(0)}" for m in _HAND_INT_CHECK.finditer(text)]
        if path.name != "runs.py" and re.search(r"ProcessPoolExecutor|os\.replace\(", text):
            pools.append(where)
    assert not hand_checks, f"use checks.check_int: {hand_checks}"
    assert not pools, f"the cache and the worker pool live in course_utils.runs: {pools}"
    # the pattern catches the hand-written check it is meant to catch
    assert _HAND_INT_CHECK.search("if isinstance(k, bool) or not isinstance(k, int) or k < 1:")
