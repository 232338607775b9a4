"""Every number a sentence takes from a cell is glued there; claims are checked in cells.

See ``course_tools.prose`` for the convention. These tests read the chapter
sources: a glued name a sentence uses must be glued in the same chapter (and a
glued name must be used), and no decimal, percentage or "N배" may be typed
into the prose unless the same line cites where it comes from (a paper).
Citations take the one form the book renders, with the particle after one read
from its year; the code a page shows carries no reST markup.
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest
import torch
from conftest import ROOT

from course_tools import prose
from course_tools.prose import ClaimError, ClaimWarning, claim, glue_values
from course_utils.text import josa

CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))
_GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([A-Za-z_][\w]*)(?::[^`]*)?`")
_TYPED = re.compile(r"\d+\.\d+|\d+\s?%|\d+배")


def _cells_and_prose(path):
    """(code cell sources, prose lines with their numbers) of a MyST notebook."""
    code, prose, cell, stack = [], [], None, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        bare = line.strip()
        if cell is not None:
            if bare.startswith("```") and bare.strip("`") == "":
                code.append("\n".join(cell))
                cell = None
            else:
                cell.append(line)
            continue
        if bare.startswith("```{code-cell}"):
            cell = []
            continue
        if bare.startswith(("```", ":::")):
            if bare in ("```", ":::", "````", "::::"):
                if stack:
                    stack.pop()
            else:
                prose_block = re.match(
                    r"(```+|:::+)\{(admonition|note|tip|important|warning|caution|seealso|dropdown|hint)\}",
                    bare,
                )
                stack.append(not prose_block)
            continue
        if any(stack):
            continue
        prose.append((number, line))
    return code, prose


def _glued_names(code_cells):
    names = set()
    for source in code_cells:
        source = "\n".join(
            line for line in source.splitlines() if not line.lstrip().startswith(("%", "!", ":"))
        )
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            called = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if called == "glue_values":
                names |= {k.arg for k in node.keywords if k.arg}
            elif called == "glue" and node.args and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
    return names


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_glued_name_in_the_prose_is_glued_in_the_chapter_and_used(chapter):
    code, prose = _cells_and_prose(chapter)
    used = {name for _, line in prose for name in _GLUE_ROLE.findall(line)}
    glued = _glued_names(code)
    assert used - glued == set(), f"{chapter.name}: the prose uses names no cell glues"
    assert glued - used == set(), f"{chapter.name}: glued but never used"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_number_is_typed_into_the_prose(chapter):
    _, prose = _cells_and_prose(chapter)
    typed = []
    for number, line in prose:
        bare = line.strip()
        if bare.startswith(("|", "#", "$$", "+++", ":")) or "{cite" in line:
            continue  # tables are outputs or headings; a cited constant comes from a paper
        text = re.sub(r"\$[^$]*\$|\{glue[^}]*\}`[^`]*`|`[^`]*`|\[[^\]]*\]\([^)]*\)", "", line)
        if _TYPED.search(text):
            typed.append(f"{chapter.name}:{number}: {bare[:100]}")
    assert typed == [], "glue these numbers from the cell that computes them:\n" + "\n".join(typed)


def test_glue_values_takes_plain_numbers_and_strings(monkeypatch):
    glued = {}
    monkeypatch.setattr(prose, "_glue", lambda name, value: glued.update({name: value}))
    glue_values(a=np.float64(1.5), b=torch.tensor(3), c="인/공/지/능", d=7)
    assert glued == {"a": 1.5, "b": 3, "c": "인/공/지/능", "d": 7}
    assert type(glued["a"]) is float and type(glued["b"]) is int
    for bad in (np.ones(2), [1, 2], True):
        with pytest.raises(TypeError, match="glue a number or a str"):
            glue_values(x=bad)


def test_glue_values_publishes_what_myst_nb_glue_publishes(monkeypatch):
    import IPython.display
    import myst_nb.ext.glue

    def published(display_module, glue):
        calls = []
        monkeypatch.setattr(
            display_module,
            "display" if display_module is IPython.display else "ipy_display",
            lambda *args, **kwargs: calls.append((args, kwargs)),
        )
        glue()
        return calls

    values = {"ratio": 0.8125, "count": 63_084_544, "words": "국민으로부터 / 'the'"}
    theirs = published(
        myst_nb.ext.glue,
        lambda: [myst_nb.ext.glue.glue(k, v, display=False) for k, v in values.items()],
    )
    ours = published(IPython.display, lambda: glue_values(**values))
    assert prose.GLUE_PREFIX == myst_nb.ext.glue.GLUE_PREFIX
    assert len(ours) == len(values) and ours == theirs


def test_claim_fails_the_build_with_the_sentence(monkeypatch):
    monkeypatch.setenv("COURSE_RUN", "small")  # the run the prose describes
    claim(np.float64(1.0) < 2, "하나는 둘보다 작다")
    with pytest.raises(ClaimError, match="둘보다 크다"):
        claim(1 > 2, "하나는 둘보다 크다")
    with pytest.raises(TypeError, match="bool condition"):
        claim(torch.tensor(True), "텐서는 .item()으로")


def test_claim_is_a_warning_in_a_larger_run_than_the_prose_describes(monkeypatch):
    monkeypatch.setenv("COURSE_RUN", "large")
    with pytest.warns(ClaimWarning, match="COURSE_RUN=small.*하나는 둘보다 크다"):
        claim(1 > 2, "하나는 둘보다 크다")
    claim(1 < 2, "하나는 둘보다 작다")  # a claim that holds says nothing
    monkeypatch.setenv("COURSE_RUN", "small")
    with pytest.raises(ClaimError):
        claim(1 > 2, "하나는 둘보다 크다")


# ---------------------------------------------------------------------------
# Citations: one form, and the particle after it read from the year
# ---------------------------------------------------------------------------

#: Sources whose prose cites: chapters, glossary and the other book pages, and the exercise masters.
CITING = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "exercises").glob("ch*.md"))
#: ``{cite:t}`key``` renders "Author et al. [2015]": a sentence's noun, so a particle may follow it. (A
#: particle after ``{cite:p}``'s "[Author et al., 2015]" belongs to the word before the brackets.)
_CITE_T = re.compile(r"\{cite:t\}`([\w\s,-]+)`([가-힣]*)")
#: The same form typed out (the exercise notebooks are read outside the book, without roles).
_TYPED_CITATION = re.compile(r"\[(\d{4})\]([가-힣]*)")
#: Any other form: "Luong 외(2015)", "(Devlin 외, 2019)", "Bahdanau 외는".
_OTHER_FORM = re.compile(r"[A-Z][A-Za-z-]+ 외(?:[\s,(]*\d{4}|[은는이가와과](?![가-힣]))")


def _years() -> dict[str, str]:
    bib = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    entries = re.split(r"\n(?=@)", bib)
    years = {}
    for entry in entries:
        key = re.match(r"\s*@\w+\{\s*([^,\s]+)\s*,", entry)
        year = re.search(r"\byear\s*=\s*[{\"]?(\d{4})", entry)
        if key and year:
            years[key.group(1)] = year.group(1)
    return years


def _prose_lines(path):
    """(number, line) of the text a reader sees: directives' bodies, not code, raw cells or code blocks."""
    stack = []  # the open fences: (backticks, whether what is inside is code)
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"(`{3,})(.*)", line.strip())
        if fence and stack and fence.group(1) == stack[-1][0] and not fence.group(2).strip():
            stack.pop()
        elif fence and not any(code for _, code in stack):
            info = fence.group(2).strip()
            code = not info.startswith("{") or info.startswith(("{code-cell}", "{raw-cell}"))
            stack.append((fence.group(1), code))
        elif not any(code for _, code in stack):
            yield number, line


def _particle(tail: str) -> str | None:
    """The particle that alternates with the last sound (은/는, 이/가, 을/를, 과/와, (으)로) at the start of ``tail``."""
    if tail.startswith(("으로", "로")):
        return "으로" if tail.startswith("으로") else "로"
    if tail[:1] in tuple("은는을를과와가") or tail == "이":
        return tail[:1]
    return None  # 의, 도, 에, 처럼 …; 이며, 입니다: the copula may keep its 이 after a vowel


def _citations(path, years):
    """(where, how the citation ends as rendered, the Hangul that follows it) in ``path``."""
    for number, line in _prose_lines(path):
        for keys, tail in _CITE_T.findall(line):
            last = keys.split(",")[-1].strip()
            assert last in years, f"{path.name}:{number}: {last!r} has no year in references.bib"
            yield f"{path.name}:{number}", f"[{years[last]}]", tail
        for year, tail in _TYPED_CITATION.findall(line):
            yield f"{path.name}:{number}", f"[{year}]", tail


def test_a_particle_after_a_citation_follows_how_the_year_is_read():
    """The year's last digit picks the form: Cho et al. [2014]가 (사), Vaswani et al. [2017]은 (칠)."""
    years, wrong, checked = _years(), [], 0
    for path in CITING:
        for where, end, tail in _citations(path, years):
            particle = _particle(tail)
            if particle is None:
                continue
            expected = josa(end, particle)[len(end) :]
            checked += 1
            if expected != particle:
                wrong.append(f"{where}: …{end}{tail[:4]} should take {expected}")
    assert checked > 25  # the scan sees the book's citations
    assert wrong == [], (
        "the particle after a citation follows the year's last digit:\n" + "\n".join(wrong)
    )


def test_citations_take_the_books_one_form():
    """As the book renders them: Author et al. [year] ({cite:t}), [Author et al., year] ({cite:p})."""
    other = [
        f"{path.name}:{number}: {match.group(0)}"
        for path in CITING
        for number, line in _prose_lines(path)
        for match in _OTHER_FORM.finditer(line)
    ]
    assert other == [], "cite as the book renders {cite:t} / {cite:p}:\n" + "\n".join(other)


def test_the_citation_rule_reads_years_as_korean_numbers():
    assert josa("[2014]", "이") == "[2014]가" and josa("[2015]", "은") == "[2015]는"
    assert josa("[2017]", "는") == "[2017]은" and josa("[2017]", "으로") == "[2017]로"
    assert josa("[2016]", "는") == "[2016]은" and josa("[2020]", "가") == "[2020]이"
    assert _particle("와의") == "와" and _particle("이며") is None and _particle("입니다") is None
    assert _OTHER_FORM.search("Luong 외(2015)의") and _OTHER_FORM.search("(Devlin 외, 2019)")
    assert _OTHER_FORM.search("Bahdanau 외는") and not _OTHER_FORM.search("GPU 외에도")


def test_the_code_a_page_shows_has_no_rest_markup():
    """``{course-code}`` drops the shown object's docstring; what it keeps (a method's) is plain text."""
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from course_code import object_source

    rest = re.compile(r"``|:(?:func|class|meth|attr|mod|data|obj|exc):`")
    marked = []
    for chapter in CHAPTERS:
        for target in re.findall(
            r"```\{course-code\}\s+(\S+)", chapter.read_text(encoding="utf-8")
        ):
            _, source = object_source(target)
            marked += [
                f"{chapter.name} {target}: {line.strip()}"
                for line in source.splitlines()
                if rest.search(line)
            ]
    assert marked == [], "write the docstrings of shown code in plain text:\n" + "\n".join(marked)
