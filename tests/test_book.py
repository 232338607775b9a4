"""Checks on the built site in _build/html (built strictly by `make test` first)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HIDDEN_SENTINEL, ROOT, SOLUTION_SENTINEL

sys.path.insert(0, str(ROOT / "book" / "_ext"))
from korean_search import SUFFIXES, SearchKorean, strip_korean_suffix

pytestmark = pytest.mark.book


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def _text(page: Path, article_only: bool = False) -> str:
    raw = page.read_text(encoding="utf-8")
    if article_only:  # what Sphinx indexes: the page body, not the navigation or footer
        raw = raw[raw.index("<article") : raw.rindex("</article>")]
    raw = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", raw, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


def _search_index(site: Path) -> dict:
    raw = (site / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(raw[raw.index("(") + 1 : raw.rindex(")")])


def test_every_toc_chapter_was_built(built_site):
    for page in [
        "book/intro",
        "book/setup",
        "book/ch01_nlp_and_sequences",
        "book/ch02_tokenization",
        "notebooks/ch01_nlp_and_sequences",
        "notebooks/ch02_tokenization",
        "book/ch05_language_models",
        "book/ch06_rnn",
        "book/ch07_bptt",
        "book/ch08_lstm_gru",
        "notebooks/ch05_language_models",
        "notebooks/ch06_rnn",
        "notebooks/ch07_bptt",
        "notebooks/ch08_lstm_gru",
        "book/ch09_seq2seq",
        "book/ch10_attention",
        "notebooks/ch09_seq2seq",
        "notebooks/ch10_attention",
        "book/ch11_transformer",
        "notebooks/ch11_transformer",
        "book/ch12_bert",
        "notebooks/ch12_bert",
        "book/ch13_gpt",
        "notebooks/ch13_gpt",
        "book/glossary",
        "book/bibliography",
    ]:
        assert (built_site / f"{page}.html").is_file(), page


def test_no_solution_or_hidden_test_reaches_the_site(built_site):
    assert not (built_site / "_sources").exists(), "html_copy_source must stay off"
    for path in built_site.rglob("*"):
        if path.is_file() and path.suffix in {".html", ".js", ".txt", ".ipynb", ".json", ".md"}:
            content = path.read_text(encoding="utf-8", errors="ignore")
            assert SOLUTION_SENTINEL not in content, f"solution text in {path}"
            assert HIDDEN_SENTINEL not in content, f"hidden test in {path}"


def test_no_placeholder_text_in_the_book(built_site):
    for page in _pages(built_site):
        text = _text(page)
        assert not re.search(r"\bTODO\b|\bFIXME\b|\bTBD\b", text), page


def test_mathjax_is_served_locally_and_nothing_loads_from_a_cdn(built_site):
    assert (built_site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    for page in _pages(built_site):
        raw = page.read_text(encoding="utf-8")
        external = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', raw)
        assert external == [], f"{page} loads {external}"
    ch01 = (built_site / "book" / "ch01_nlp_and_sequences.html").read_text(encoding="utf-8")
    assert 'src="../_static/mathjax/tex-chtml.js' in ch01


def test_chapters_show_executed_outputs_and_figures(built_site):
    for chapter in ["ch01_nlp_and_sequences", "ch02_tokenization", "ch03_word_representations",
                    "ch04_word2vec", "ch05_language_models", "ch06_rnn", "ch07_bptt",
                    "ch08_lstm_gru", "ch09_seq2seq", "ch10_attention", "ch11_transformer",
                    "ch12_bert", "ch13_gpt"]:  # fmt: skip
        raw = (built_site / "book" / f"{chapter}.html").read_text(encoding="utf-8")
        assert raw.count("cell_output") >= 5, chapter
        assert re.search(r'<img[^>]+src="../_images/[^"]+\.png"', raw), f"no figure in {chapter}"
        assert "Traceback" not in raw


def test_launch_buttons_colab_only_for_notebooks_binder_everywhere(built_site):
    notebook = (built_site / "notebooks" / "ch02_tokenization.html").read_text(encoding="utf-8")
    chapter = (built_site / "book" / "ch02_tokenization.html").read_text(encoding="utf-8")
    assert (
        "colab.research.google.com/github/" in notebook
        and "notebooks/ch02_tokenization.ipynb" in notebook
    )
    assert "mybinder.org/v2/gh/" in notebook and "mybinder.org/v2/gh/" in chapter
    assert "colab.research.google.com" not in chapter
    assert "_sources/" not in chapter, "the download button would point at missing sources"


def test_every_chapter_and_exercise_page_offers_its_notebook(built_site):
    """A chapter's notebook as executed (outputs, figures); an exercise's as students get it:
    the cells of notebooks/ with no outputs, its tests in the metadata, under its own name."""
    import nbformat

    pages = sorted(built_site.glob("book/ch*.html")) + sorted(built_site.glob("notebooks/ch*.html"))
    assert len(pages) == 26
    for page in pages:
        name = page.stem + ".ipynb"
        raw = page.read_text(encoding="utf-8")
        assert re.search(
            rf'<a href="{re.escape(name)}"[^>]*\n?\s*class="[^"]*download-notebook', raw
        ), page
        notebook = nbformat.read(page.with_suffix(".ipynb"), as_version=4)
        nbformat.validate(notebook)
        code = [c for c in notebook.cells if c.cell_type == "code"]
        if page.parent.name == "book":
            outputs = [o for c in code for o in c.outputs]
            assert len(outputs) >= 5 and any("image/png" in o.get("data", {}) for o in outputs)
            assert "Traceback" not in json.dumps(outputs), page
        else:
            given = nbformat.read(ROOT / "notebooks" / name, as_version=4)
            assert [c.source for c in notebook.cells] == [c.source for c in given.cells], page
            assert notebook.metadata["otter"] == given.metadata["otter"], page
            assert all(c.outputs == [] and c.execution_count is None for c in code), page
    assert not list(built_site.glob("book/*.md")) and not list(built_site.rglob("exercises"))


def test_glossary_terms_link_from_chapters(built_site):
    raw = (built_site / "book" / "ch02_tokenization.html").read_text(encoding="utf-8")
    assert re.search(r'href="glossary.html#term-[^"]+"', raw)


def test_korean_search_finds_a_word_written_only_with_a_particle(built_site):
    # setup.md says "모델을" and never the bare "모델": Sphinx alone would not find it.
    setup_words = re.findall(r"\w+", _text(built_site / "book" / "setup.html", article_only=True))
    assert "모델을" in setup_words and "모델" not in setup_words
    index = _search_index(built_site)
    docs = index["docnames"]
    hits = index["terms"]["모델"]
    hits = [hits] if isinstance(hits, int) else hits
    assert docs.index("book/setup") in hits


def test_every_particle_form_on_every_page_is_indexed_under_its_stem(built_site):
    index = _search_index(built_site)
    docs, terms = index["docnames"], index["terms"]
    checked = 0
    for number, doc in enumerate(docs):
        page = built_site / f"{doc}.html"
        words = re.findall(r"\w+", _text(page, article_only=True))  # as Sphinx splits
        for word in {w for w in words if re.fullmatch(r"[가-힣]+", w)}:
            stem = strip_korean_suffix(word)
            if stem != word and stem in terms:
                hits = terms[stem]
                hits = [hits] if isinstance(hits, int) else hits
                title_hits = index["titleterms"].get(stem, [])
                title_hits = [title_hits] if isinstance(title_hits, int) else title_hits
                assert number in hits or number in title_hits, (doc, word, stem)
                checked += 1
    assert checked > 100


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_browser_stemmer_equals_the_index_stemmer(built_site):
    words = [
        "모델을",
        "모델",
        "토큰화는",
        "국민에게서는",
        "형태소들의",
        "차",
        "tokenization",
        "tokenize",
        "Models",
        "학습합니다",
        "정규화하는",
        "어휘",
    ]
    language_data = (built_site / "_static" / "language_data.js").read_text(encoding="utf-8")
    script = (
        language_data
        + "\nconst s = new Stemmer();\n"
        + f"console.log(JSON.stringify({json.dumps(words, ensure_ascii=False)}.map(w => s.stemWord(w.toLowerCase()))));"
    )
    run = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    python = SearchKorean({})
    assert json.loads(run.stdout) == [python.stem(w).lower() for w in words]


def test_suffix_list_is_longest_first():
    lengths = [len(s) for s in SUFFIXES]
    assert lengths == sorted(lengths, reverse=True)
    assert strip_korean_suffix("에서는") == "에서"  # keeps at least one syllable
    assert strip_korean_suffix("국민에서는") == "국민"


def test_glossary_entries_are_in_korean_dictionary_order():
    text = (ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    body = text.split("```{glossary}\n", 1)[1].split("\n```", 1)[0]
    heads = [block.splitlines()[0].strip() for block in re.split(r"\n\s*\n", body) if block.strip()]
    latin = [h for h in heads if not "가" <= h[0] <= "힣"]
    hangul = [h for h in heads if "가" <= h[0] <= "힣"]
    assert heads == latin + hangul, "Latin-led entries first, then 가나다 order"
    assert hangul == sorted(hangul), "가나다 order (Hangul syllables sort by code point)"
    assert latin == sorted(latin, key=str.lower)
    for coined in ["더하기-k 스무딩", "이어짐 횟수", "메아리 과제"]:
        assert coined in heads


def test_the_footer_names_the_authors_in_korean(built_site):
    page = (built_site / "book" / "intro.html").read_text(encoding="utf-8")
    assert "지은이: 자연어 처리를 위한 딥러닝 저자들" in page
    assert "으로 자연어 처리를 위한 딥러닝 저자들" not in page  # the theme's "By" in Korean


def test_the_themes_labels_and_the_issue_a_reader_opens_are_in_korean(built_site):
    english = ["Back to top", "Color mode", "Skip to main content", "Toggle primary sidebar",
               "Toggle secondary sidebar", ">Repository<", ">Open issue<", "Search this book",
               "Your%20issue%20content%20here"]  # fmt: skip
    korean = [
        "맨 위로",
        "화면 색",
        "본문으로 건너뛰기",
        "차례 열고 닫기",
        "저장소",
        "이슈 열기",
        "이 책에서 검색",
    ]
    for page in sorted((built_site / "book").glob("ch*.html")):
        raw = page.read_text(encoding="utf-8")
        assert [e for e in english if e in raw] == [], page.name
        assert [k for k in korean if k not in raw] == [], page.name
