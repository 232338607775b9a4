"""Small adjustments to sphinx-book-theme for this book.

- No download button: sources are not copied into the site (solutions never
  reach it), so the button would point at files that do not exist.
- Each script once: Jupyter Book registers sphinx-thebe's inline ``const``
  configuration again on incremental rebuilds, and a second ``const`` is a
  JavaScript error.
- Code blocks wrap at the column's edge (``book/_static/course.css``) instead of
  scrolling sideways.
- Colab opens only ``.ipynb`` files, so chapter pages (MyST Markdown) keep the
  Binder button (which opens them through jupytext) and lose the Colab one;
  the exercise notebooks keep both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _theme_options(app: Any, config: Any) -> None:
    config.html_theme_options = {
        **config.html_theme_options,
        "use_download_button": False,
    }


def _script_key(script: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    attributes = getattr(script, "attributes", {}) or {}
    # Inline scripts come with a filename of None or "" depending on who added them.
    return str(getattr(script, "filename", script) or ""), tuple(
        sorted((k, str(v)) for k, v in attributes.items())
    )


def _dedupe_scripts(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    unique = []
    for script in context.get("script_files", []):
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def _drop_colab_for_markdown(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    if Path(app.env.doc2path(pagename)).suffix == ".ipynb":
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            group["buttons"] = [b for b in group["buttons"] if b.get("text") != "Colab"]


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _theme_options)
    app.add_css_file("course.css")  # book/_static/course.css: code wraps at the column
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    # After sphinx-book-theme has added its launch buttons (default priority 500).
    app.connect("html-page-context", _drop_colab_for_markdown, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
