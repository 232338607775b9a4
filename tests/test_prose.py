"""Every number a sentence takes from a cell is glued there; claims are checked in cells.

See ``course_tools.prose`` for the convention. These tests read the chapter
sources: a glued name a sentence uses must be glued in the same chapter (and a
glued name must be used), and no decimal, percentage or "N배" may be typed
into the prose unless the same line cites where it comes from (a paper).
"""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest
import torch
from conftest import ROOT

from course_tools.prose import ClaimError, ClaimWarning, claim, glue_values

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
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display: glued.update({name: value}))
    glue_values(a=np.float64(1.5), b=torch.tensor(3), c="인/공/지/능", d=7)
    assert glued == {"a": 1.5, "b": 3, "c": "인/공/지/능", "d": 7}
    assert type(glued["a"]) is float and type(glued["b"]) is int
    for bad in (np.ones(2), [1, 2], True):
        with pytest.raises(TypeError, match="glue a number or a str"):
            glue_values(x=bad)


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
