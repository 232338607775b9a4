"""The built site in a real browser: headless Chromium from Debian, served on localhost.

Korean text, rendered equations and figures, no failed requests, no console
errors, and a Korean search that returns results. Screenshots are saved under
_build/screenshots/. `.ci/run` installs Chromium, so CI always runs this.
"""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
from urllib.parse import urlparse

import pytest
from conftest import ROOT

pytestmark = [pytest.mark.book, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


@pytest.fixture(scope="module")
def site_url(built_site):
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip(
            "Chromium is not installed: `sudo apt-get install chromium` (Debian/Ubuntu); "
            ".ci/run installs it before the tests"
        )
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class PageProblems:
    """Console errors, failed requests and requests that left localhost."""

    def __init__(self, page, origin: str):
        self.errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url} {r.failure}"))
        page.on(
            "response",
            lambda r: r.status >= 400 and self.errors.append(f"HTTP {r.status}: {r.url}"),
        )

        def only_localhost(route):
            if urlparse(route.request.url).netloc == urlparse(origin).netloc:
                route.continue_()
            else:
                self.errors.append(f"external request: {route.request.url}")
                route.abort()

        page.route("**/*", only_localhost)


@pytest.mark.parametrize(
    "path, must_contain, needs_math",
    [
        ("book/intro.html", "로드맵", False),
        ("book/ch01_nlp_and_sequences.html", "연쇄 법칙", True),
        ("book/ch02_tokenization.html", "바이트 쌍 인코딩", False),
        ("notebooks/ch02_tokenization.html", "구두점 토크나이저", False),
        ("book/ch04_word2vec.html", "네거티브 샘플링", True),
        ("book/ch07_bptt.html", "기울기 소실", True),
        ("book/ch08_lstm_gru.html", "덧셈 문제", True),
        ("book/glossary.html", "형태소", True),
    ],
)
def test_page_renders_korean_math_and_figures_without_errors(
    browser, site_url, built_site, path, must_contain, needs_math
):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = PageProblems(page, site_url)
    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    assert must_contain in page.inner_text("body")
    if needs_math:
        page.wait_for_function(
            "() => document.querySelectorAll('mjx-container').length > 0", timeout=30000
        )
    broken = page.evaluate(
        "() => [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    assert broken == []
    if "ch02_tokenization" in path and path.startswith("book/"):
        assert page.evaluate("() => document.querySelectorAll('.cell_output img').length") >= 1
    shots = built_site.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    page.screenshot(path=str(shots / (path.replace("/", "_").replace(".html", ".png"))))
    page.close()
    assert problems.errors == []


def test_korean_search_returns_results_in_the_browser(browser, site_url, built_site):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = PageProblems(page, site_url)
    page.goto(f"{site_url}/search.html?q=모델", wait_until="networkidle")
    page.wait_for_selector("#search-results li", timeout=30000)
    results = page.eval_on_selector_all("#search-results li a", "links => links.map(a => a.href)")
    assert any("book/setup.html" in link for link in results), results
    page.screenshot(path=str(built_site.parent / "screenshots" / "search.png"))
    page.close()
    assert problems.errors == []


def test_search_snippets_quote_the_chapters_not_the_page_buttons(browser, site_url):
    """The issue's case: "어텐션" quoted the "Open issue" button, and later the page's table of
    contents. Snippets now come from the article (book/_static/course_search.js)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = PageProblems(page, site_url)
    page.goto(f"{site_url}/search.html?q=어텐션", wait_until="networkidle")
    page.wait_for_selector("#search-results li p.context", timeout=30000)
    page.wait_for_function(
        "document.querySelector('#search-results').classList.contains('empty') || "
        "document.querySelectorAll('#search-results li').length === "
        "document.querySelectorAll('#search-results li p.context').length",
        timeout=60000,
    )
    snippets = page.eval_on_selector_all(
        "#search-results li p.context", "ps => ps.map(p => p.textContent)"
    )
    page.close()
    assert problems.errors == []
    assert len(snippets) >= 5, snippets
    for label in [
        "이슈 열기",
        "저장소",
        "Binder",
        "Colab",
        "내려받기",
        "이 페이지의 내용",
        "이전 페이지",
    ]:
        assert not any(label in snippet for snippet in snippets), (label, snippets)
    # nor the page's table of contents ("내용" and the numbered sections under it)
    assert not any(re.search(r"내용\s+\d+\.\d+\.", snippet) for snippet in snippets), snippets
    assert sum("어텐션" in snippet for snippet in snippets) >= len(snippets) - 1, snippets


CHAPTER_PAGES = sorted(f"book/{p.stem}.html" for p in (ROOT / "book").glob("ch*.md"))


def _chapter_page(browser, site_url: str, path: str, width: int, height: int):
    """A chapter page at ``width`` × ``height`` px, once MathJax has typeset its equations."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    page.wait_for_function(
        "() => !document.querySelector('.math') || document.querySelectorAll('mjx-container').length > 0",
        timeout=30000,
    )
    return page


@pytest.mark.parametrize("path", CHAPTER_PAGES)
def test_no_equation_or_code_block_overflows_the_column_at_1280_px(browser, site_url, path):
    page = _chapter_page(browser, site_url, path, 1280, 900)
    overflowing = page.evaluate(
        """() => {
        const found = [];
        const article = document.querySelector('article') || document.body;
        for (const pre of article.querySelectorAll('pre')) {
            if (pre.scrollWidth > pre.clientWidth + 1) {
                found.push('code: ' + pre.innerText.split('\\n').find(l => l.length > 80)?.slice(0, 90));
            }
        }
        for (const math of article.querySelectorAll('mjx-container[display="true"]')) {
            const inner = math.querySelector('mjx-math');
            if (inner && inner.getBoundingClientRect().width > math.getBoundingClientRect().width + 1) {
                found.push('equation: ' + (math.getAttribute('aria-label') || math.textContent).slice(0, 90));
            }
        }
        return found;
    }"""
    )
    page.close()
    assert overflowing == [], f"{path}: wider than the column at 1280 px"


@pytest.mark.parametrize("path", CHAPTER_PAGES)
def test_a_phone_scrolls_wide_equations_in_place_at_390_px(browser, site_url, path):
    """At 390 px the page never scrolls sideways: a display equation wider than the column
    scrolls inside its own box, a code block wraps, and a figure keeps two thirds of its
    drawn width (its labels legible) and scrolls inside its own box."""
    page = _chapter_page(browser, site_url, path, 390, 844)
    page.wait_for_function(
        "Array.from(document.querySelectorAll('article img')).every(i => i.complete)"
    )
    found = page.evaluate(
        """() => {
        const problems = [];
        // a figure keeps two thirds of its drawn width (labels legible) and scrolls in its box
        const figures = document.querySelectorAll('article img[src*="_images/"]');
        for (const img of figures) {
            const shown = img.getBoundingClientRect().width;
            const box = img.parentElement;
            if (shown < Math.min(img.naturalWidth * 2 / 3, img.naturalWidth) - 1) {
                problems.push('figure shrunk to ' + Math.round(shown) + ' of '
                              + img.naturalWidth + ' px: ' + img.src.slice(-20));
            }
            if (shown > box.clientWidth + 1 && !(['auto', 'scroll'].includes(
                    getComputedStyle(box).overflowX) && box.scrollWidth > box.clientWidth)) {
                problems.push('figure wider than its box, which does not scroll: '
                              + img.src.slice(-20));
            }
        }
        const page = document.scrollingElement;
        if (page.scrollWidth > window.innerWidth + 1) {
            problems.push('the page scrolls sideways: ' + page.scrollWidth + ' px');
        }
        for (const math of document.querySelectorAll('article mjx-container[display="true"]')) {
            const inner = math.querySelector('mjx-math');
            const wide = inner && inner.getBoundingClientRect().width > math.clientWidth + 1;
            const scrolls = ['auto', 'scroll'].includes(getComputedStyle(math).overflowX);
            if (wide && !(scrolls && math.scrollWidth > math.clientWidth)) {
                problems.push('equation: ' + (math.getAttribute('aria-label') || '').slice(0, 60));
            }
        }
        return problems;
    }"""
    )
    page.close()
    assert found == [], f"{path} at 390 px"
