"""``make pdf``: the whole book as one PDF, printed by Chromium from the single-page build.

Sphinx's ``singlehtml`` builder puts every page of the table of contents on one page,
numbered as on the site, with the executed outputs and glued numbers of the HTML build
(it reads the same jupyter cache). Headless Chromium serves it from localhost, waits
until MathJax has typeset every equation, and prints it to A4 with page numbers; the
Korean font is embedded by Chromium. Nothing is fetched from the network: MathJax is
the copy vendored into the site, and requests that leave localhost are refused.

Usage: ``python -m course_tools.pdf SITE_FOLDER OUTPUT.pdf`` (``make pdf`` builds the
single page into ``_build/singlehtml`` first and writes ``_build/pdf/book.pdf``).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

__all__ = ["CHROMIUM_ARGS", "print_book"]

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

# What the printed book hides: the site's navigation, buttons and search; code cells'
# copy buttons. Equations that are wider than the page shrink to fit instead of scrolling.
_PRINT_CSS = """
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .header-article,
.prev-next-area, .bd-footer, .copybtn, .bd-footer-content, .headerlink { display: none !important; }
.bd-main .bd-content .bd-article-container { max-width: 100% !important; }
mjx-container[display="true"] { overflow: visible !important; }
section { break-inside: auto; }
h1, h2 { break-before: page; }
h1:first-of-type { break-before: avoid; }
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _served(folder: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _only_the_site(route: Any, origin: str, page: Path) -> None:
    """Requests that leave the local server are refused. Sphinx's single page lies in
    ``book/`` but writes every path (``_static/``, ``_images/``) as if it lay at the root,
    so it is served at the root, as ``/book.html``."""
    address = urlparse(route.request.url)
    if address.netloc != origin:
        route.abort()
    elif address.path == "/book.html":
        route.fulfill(path=str(page), content_type="text/html; charset=utf-8")
    else:
        route.continue_()


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise FileNotFoundError(
            "make pdf prints the book with Chromium, which is not installed: "
            "`sudo apt-get install chromium` (Debian/Ubuntu)"
        )
    return found


def print_book(site: Path, output: Path, page: str = "book/intro.html") -> Path:
    """Print ``site/page`` (the single-page build) to ``output``; return ``output``."""
    from playwright.sync_api import sync_playwright

    source = site / page
    if not source.is_file():
        raise FileNotFoundError(
            f"no single-page build at {source}: run `make pdf` (it builds it first)"
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    with _served(site) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1000, "height": 1400})
            tab.route(
                "**/*",
                functools.partial(_only_the_site, origin=urlparse(url).netloc, page=source),
            )
            tab.goto(f"{url}/book.html", wait_until="load", timeout=120_000)
            tab.add_style_tag(content=_PRINT_CSS)
            # every equation typeset, every figure decoded
            tab.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
            tab.evaluate("MathJax.startup.promise")
            tab.wait_for_function(
                "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)",
                timeout=60_000,
            )
            left = tab.evaluate("document.querySelectorAll('mjx-container').length")
            raw = tab.evaluate(
                "Array.from(document.querySelectorAll('.math')).filter("
                "e => !e.querySelector('mjx-container')).length"
            )
            if not left or raw:
                raise RuntimeError(f"MathJax did not typeset every equation ({raw} left raw)")
            tab.emulate_media(media="print")
            tab.pdf(
                path=str(output),
                format="A4",
                print_background=True,
                margin={"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"},
                display_header_footer=True,
                header_template="<span></span>",
                footer_template=(
                    "<div style='width:100%;text-align:center;font-size:9px;'>"
                    "<span class='pageNumber'></span></div>"
                ),
            )
        finally:
            browser.close()
    return output


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m course_tools.pdf SITE_FOLDER OUTPUT.pdf", file=sys.stderr)
        return 2
    written = print_book(Path(args[0]), Path(args[1]))
    print(f"{written} ({written.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
