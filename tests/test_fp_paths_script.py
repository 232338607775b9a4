"""scripts/claims_on_other_fp_paths.py: a chapter's claims, recorded instead of raised."""

import importlib.util

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow  # starts a kernel


def _script():
    path = ROOT / "scripts" / "claims_on_other_fp_paths.py"
    spec = importlib.util.spec_from_file_location("claims_on_other_fp_paths", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHAPTER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A chapter

```{code-cell} ipython3
from course_tools.prose import claim

claim(1 + 1 == 2, "one and one make two")
claim(0.1 + 0.2 == 0.3, "a tenth and two tenths make three tenths")
print("after the claims")
```
"""


def test_a_false_claim_is_listed_and_the_chapter_runs_on(tmp_path):
    chapter = tmp_path / "ch99_claims.md"
    chapter.write_text(CHAPTER, encoding="utf-8")
    failed, seconds = _script().failed_claims(chapter)
    assert failed == ["a tenth and two tenths make three tenths"]
    assert seconds > 0


def test_a_chapter_that_stops_is_reported(tmp_path):
    chapter = tmp_path / "ch99_error.md"
    chapter.write_text(CHAPTER.replace('print("after the claims")', "1 / 0"), encoding="utf-8")
    failed, _ = _script().failed_claims(chapter)
    assert failed[0] == "a tenth and two tenths make three tenths"
    assert failed[1] == "the chapter stopped: ZeroDivisionError: division by zero"


def test_unknown_chapters_and_paths_are_named():
    script = _script()
    with pytest.raises(SystemExit, match="no such chapter: ch99_nothing"):
        script.chapters(["ch99_nothing"])
    assert [p.stem for p in script.chapters(["ch12_bert"])] == ["ch12_bert"]
    assert set(script.PATHS) == {"avx2", "sse2"}


def test_an_unknown_path_is_named_before_anything_runs(monkeypatch):
    script = _script()
    monkeypatch.setattr("sys.argv", ["claims_on_other_fp_paths.py", "--paths", "avx512", "ch99"])
    monkeypatch.setattr(script, "chapters", lambda names: [])  # nothing to execute
    with pytest.raises(SystemExit, match="no such path 'avx512': expected one of avx2, sse2"):
        script.main()
