"""Small adjustments to sphinx-book-theme for this book.

- The theme's download button is off: sources are not copied into the site
  (solutions never reach it), so it would point at files that do not exist.
  Instead each chapter and exercise page offers its own notebook, written beside
  the page at the end of the build: a chapter's as executed (outputs and figures),
  an exercise's as students get it (``notebooks/``, outputs stripped). Nothing is
  read from ``exercises/``, whose masters hold the solutions.
- Each script once: Jupyter Book registers sphinx-thebe's inline ``const``
  configuration again on incremental rebuilds, and a second ``const`` is a
  JavaScript error.
- Code blocks wrap at the column's edge (``book/_static/course.css``) instead of
  scrolling sideways.
- Colab opens only ``.ipynb`` files, so chapter pages (MyST Markdown) keep the
  Binder button (which opens them through jupytext) and lose the Colab one;
  the exercise notebooks keep both.
- On a phone each figure keeps two thirds of its drawn width and scrolls in its own
  box (``book/_static/course_figures.js`` with ``course.css``), so its labels stay
  legible.
- Search snippets come from the article (``book/_static/course_search.js``), not
  from the page's buttons and navigation, which Sphinx's snippet would quote.
- Korean labels: the themes leave some of their labels in English ("Back to top",
  "Color mode", "Repository", "Open issue"); ``book/_locale/ko`` holds them in
  Korean, compiled here and added after the themes' own catalogues. The search
  field and the issue a reader opens from a page are in Korean too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

LOCALE = Path(__file__).resolve().parents[1] / "_locale"


def _theme_options(app: Any, config: Any) -> None:
    config.html_theme_options = {
        **config.html_theme_options,
        "use_download_button": False,
        "search_bar_text": "이 책에서 검색...",
    }


def _korean_catalogues(app: Any, config: Any) -> None:
    """Compile ``book/_locale/ko/LC_MESSAGES/*.po`` and add them after the themes' catalogues
    (a catalogue added later is a fallback: it fills only what the others leave untranslated)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    if config.language != "ko":
        return
    compiled = Path(app.doctreedir).parent / "course_locale"
    for po in sorted((LOCALE / "ko" / "LC_MESSAGES").glob("*.po")):
        mo = compiled / "ko" / "LC_MESSAGES" / f"{po.stem}.mo"
        mo.parent.mkdir(parents=True, exist_ok=True)
        with po.open("rb") as source, mo.open("wb") as target:
            write_mo(target, read_po(source, locale="ko"))
        app.add_message_catalog(po.stem, str(compiled))


def _korean_issue(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """The issue a reader opens from a page: a Korean title and body instead of the theme's."""
    title = quote(f"{pagename} 페이지에 대해")
    body = quote("이 페이지에서 고칠 점이나 궁금한 점을 적어 주세요.")
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if button.get("label") == "source-issues-button" and "?" in button.get("url", ""):
                button["url"] = button["url"].split("?")[0] + f"?title={title}&body={body}"


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


# Pages that offer their notebook: the chapters and the exercises.
_DOWNLOADABLE = re.compile(r"(book|notebooks)/ch\d\d_\w+")


def _download_button(
    app: Any, pagename: str, templatename: str, context: dict, doctree: Any
) -> None:
    if not _DOWNLOADABLE.fullmatch(pagename):
        return
    app.course_pages_written = getattr(app, "course_pages_written", set()) | {pagename}
    exercise = pagename.startswith("notebooks/")
    button = {
        "type": "link",
        "url": pagename.rsplit("/", 1)[-1] + ".ipynb",  # beside the page (_write_notebooks)
        "tooltip": "이 연습 문제의 노트북 내려받기" if exercise else "이 장의 노트북 내려받기",
        "icon": "fas fa-download",
        "label": "download-notebook-button",
    }
    buttons = context.setdefault("header_buttons", [])
    at = next(
        (i for i, b in enumerate(buttons) if b.get("label") == "fullscreen-button"), len(buttons)
    )
    buttons.insert(at, button)


def _executed(app: Any, path: Path) -> Any:
    """A chapter's notebook with its outputs. myst-nb writes ``path`` before it merges the
    cached outputs (a chapter taken from the cache is written bare), so they come from the
    jupyter cache, matched by the notebook's cells."""
    import nbformat
    from jupyter_cache import get_cache

    if not path.is_file():
        raise FileNotFoundError(f"myst-nb did not write the notebook {path}")
    notebook = nbformat.read(path, as_version=4)
    cache = get_cache(app.env.mystnb_config.execution_cache_path)
    try:
        _, notebook = cache.merge_match_into_notebook(notebook)
    except KeyError as error:
        raise RuntimeError(f"no executed copy of {path.name} in the jupyter cache") from error
    return notebook


def _write_notebooks(app: Any, exception: Exception | None) -> None:
    """Each downloadable page's notebook, written beside its page."""
    import nbformat

    if exception is not None or app.builder.name != "html":
        return
    executed = Path(app.outdir).parent / "jupyter_execute"  # where myst-nb writes them
    # the pages this build wrote (an incremental build that wrote none keeps the notebooks
    # an earlier build wrote beside them)
    written = getattr(app, "course_pages_written", set())
    app.course_pages_written = set()
    for docname in sorted(written):
        if docname.startswith("notebooks/"):
            notebook = nbformat.read(Path(app.srcdir) / f"{docname}.ipynb", as_version=4)
            for cell in notebook.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
        else:
            notebook = _executed(app, executed / f"{docname}.ipynb")
        target = Path(app.outdir) / f"{docname}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _theme_options)
    app.connect("config-inited", _korean_catalogues, priority=900)  # after the themes' setup
    app.add_css_file("course.css")  # book/_static/course.css: code wraps at the column
    # search snippets from the article, not the page's buttons (book/_static/course_search.js)
    app.add_js_file("course_search.js", loading_method="defer")
    # figures keep a legible size on a phone and scroll in their box (course_figures.js)
    app.add_js_file("course_figures.js", loading_method="defer")
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    # After sphinx-book-theme has added its launch buttons (default priority 500).
    app.connect("html-page-context", _drop_colab_for_markdown, priority=900)
    app.connect("html-page-context", _korean_issue, priority=900)
    app.connect("html-page-context", _download_button, priority=900)
    app.connect("build-finished", _write_notebooks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
