"""``{course-code}``: show a function or method of the package without its docstring.

    ```{course-code} course_utils.rnn.RecurrentLayer.scan
    ```

The chapter's prose has explained what the function does; its docstring is
written for ``help()`` (in English, with reST markup) and would only clutter
the page. The code shown is read from the package's source at build time, so
the book and the package cannot drift apart. Options: ``:docstring:`` keeps
the docstring after all.
"""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


def _source_file(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ValueError(f"module {module!r} not found")
    return Path(spec.origin)


def object_source(dotted: str, keep_docstring: bool = False) -> tuple[Path, str]:
    """``(file, source)`` of ``package.module.Object[.method]``, docstring removed."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module, names = ".".join(parts[:split]), parts[split:]
        try:
            path = _source_file(module)
        except (ImportError, ValueError):
            continue
        break
    else:
        raise ValueError(f"no module found for {dotted!r}")
    text = path.read_text(encoding="utf-8")
    body: list[ast.stmt] = ast.parse(text).body
    node: Any = None
    for name in names:
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == name
            ),
            None,
        )
        if node is None:
            raise ValueError(f"{name!r} not found in {path.name} (looking for {dotted!r})")
        body = node.body
    lines = text.splitlines()
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    shown = lines[start : node.end_lineno]
    first = node.body[0]
    is_docstring = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    if is_docstring and not keep_docstring:
        drop = set(range(first.lineno - 1 - start, first.end_lineno - start))  # type: ignore[operator]
        after = first.end_lineno - start  # type: ignore[operator]
        if after < len(shown) and not shown[after].strip():
            drop.add(after)  # the blank line that separated the docstring from the body
        shown = [line for i, line in enumerate(shown) if i not in drop]
    return path, textwrap.dedent("\n".join(shown))


class CourseCode(SphinxDirective):
    required_arguments = 1
    option_spec: ClassVar[dict[str, Any]] = {"docstring": directives.flag}

    def run(self) -> list[nodes.Node]:
        try:
            path, source = object_source(self.arguments[0], "docstring" in self.options)
        except ValueError as error:
            raise self.error(f"course-code: {error}") from None
        self.env.note_dependency(str(path))
        block = nodes.literal_block(source, source, language="python")
        self.set_source_info(block)
        return [block]


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("course-code", CourseCode)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
