"""The PDF of the whole book (``make pdf``, ``_build/pdf/book.pdf``), read back.

Its text holds every chapter's title with the site's number and, per chapter, a number
the chapter glued from its executed output, equal to the one on the site's page; the
glossary and the bibliography are there; no equation is left as raw TeX; the Korean
font is embedded; pages rendered to images are not blank.
"""

from __future__ import annotations

import html
import os
import re

import pytest
from conftest import BUILD_HTML, ROOT

pytestmark = [pytest.mark.book]

PDF = ROOT / "_build" / "pdf" / "book.pdf"
CHAPTERS = sorted(BUILD_HTML.glob("book/ch[0-9][0-9]_*.html"))


@pytest.fixture(scope="module")
def book():
    if not PDF.is_file():
        message = "the PDF is not built: run `make pdf` (`make test` does when Chromium is there)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    pdfium = pytest.importorskip("pypdfium2")
    document = pdfium.PdfDocument(str(PDF))
    pages = [document[i].get_textpage().get_text_range() for i in range(len(document))]
    yield document, pages
    document.close()


def _flat(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _plain(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_every_chapter_title_is_there_numbered_as_on_the_site(book):
    _, pages = book
    everything = _flat("".join(pages))
    assert len(CHAPTERS) == 13
    for page in CHAPTERS:
        raw = page.read_text(encoding="utf-8")
        heading = re.search(r'<h1><span class="section-number">(.*?)</h1>', raw, re.S).group(1)
        title = _plain(heading).rstrip("#")
        assert re.match(r"\d+\.\s", title), title  # "1. 자연어와 시퀀스 데이터"
        assert _flat(title) in everything, title
    for part in ["용어집", "참고 문헌", "연습 문제 12: BERT", "연습 문제 13: GPT"]:
        assert _flat(part) in everything, part
    assert "Vaswani" in everything and "Sennrich" in everything  # bibliography entries


def test_a_glued_number_per_chapter_equals_the_sites(book):
    _, pages = book
    everything = _flat("".join(pages))
    glued = r'<span class="pasted-text">([^<]*\d[^<]*)</span>'
    for page in CHAPTERS:
        raw = page.read_text(encoding="utf-8")
        paragraph = next(p for p in re.findall(r"<p>(.*?)</p>", raw, re.S) if re.search(glued, p))
        value = _flat(html.unescape(re.search(glued, paragraph).group(1)))
        text = _flat(_plain(paragraph))
        at = text.index(value)
        # the words around it, up to an inline equation (its TeX is not the PDF's text)
        left = text[max(0, at - 8) : at].rpartition("\\)")[2]
        right = text[at + len(value) : at + len(value) + 8].partition("\\(")[0]
        assert left + value + right in everything, f"{page.stem}: {left + value + right!r}"


def test_equations_are_typeset_and_the_korean_font_is_embedded(book):
    _, pages = book
    everything = "".join(pages)
    for raw_tex in ["\\frac", "\\mathbf", "\\begin{", "$$"]:
        assert raw_tex not in everything, raw_tex
    content = PDF.read_bytes()
    fonts = set(re.findall(rb"/BaseFont\s*/([A-Za-z0-9+_-]+)", content))
    korean = [f for f in fonts if b"Nanum" in f or b"CJK" in f]
    assert korean and all(re.match(rb"[A-Z]{6}\+", f) for f in korean), fonts  # subsets
    assert content.count(b"/FontFile") >= len(fonts)  # every font's program is in the file


def test_pages_render_to_images_that_are_not_blank(book):
    document, pages = book
    first_chapter = next(i for i, text in enumerate(pages) if "자연어와 시퀀스 데이터" in text)
    for index in [0, first_chapter, len(pages) // 2]:
        image = document[index].render(scale=0.5).to_pil().convert("L")
        dark = sum(1 for value in image.tobytes() if value < 200)
        assert dark > 0.01 * image.width * image.height, f"page {index + 1} looks blank"
