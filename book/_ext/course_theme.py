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
- Korean labels: the themes leave some of their labels in English ("Back to top",
  "Color mode", "Repository", "Open issue"); ``book/_locale/ko`` holds them in
  Korean, compiled here and added after the themes' own catalogues. The search
  field and the issue a reader opens from a page are in Korean too.
"""

from __future__ import annotations

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


def setup(app: Any) -> dict[str, Any]:
    app.connect("config-inited", _theme_options)
    app.connect("config-inited", _korean_catalogues, priority=900)  # after the themes' setup
    app.add_css_file("course.css")  # book/_static/course.css: code wraps at the column
    app.connect("html-page-context", _dedupe_scripts, priority=900)
    # After sphinx-book-theme has added its launch buttons (default priority 500).
    app.connect("html-page-context", _drop_colab_for_markdown, priority=900)
    app.connect("html-page-context", _korean_issue, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
