"""How an instructor uses the grader: the folder, the chapter, the output, the summaries.

Fast checks of the pieces (reading the submissions folder, the command line's
answers to mistakes, the item analysis, escaping); the sandboxed runs are in
test_grading.py and test_grading_attacks.py.
"""

from __future__ import annotations

import csv
import json
import os

import pytest
from conftest import ROOT

from course_tools import grading
from course_tools.cli import main


def test_the_folder_is_read_without_following_links(tmp_path):
    outside = tmp_path / "outside.ipynb"
    outside.write_text("{}", encoding="utf-8")
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "plain.ipynb").write_text('{"cells": []}', encoding="utf-8")
    (folder / "link.ipynb").symlink_to(outside)
    os.link(outside, folder / "hard.ipynb")
    (folder / "dir.ipynb").mkdir()
    os.mkfifo(folder / "pipe.ipynb")
    (folder / "notes.txt").write_text("not a notebook", encoding="utf-8")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "plain-checkpoint.ipynb").write_text("{}", encoding="utf-8")
    for student in ("alice", "bob"):
        (folder / student).mkdir()
        (folder / student / "ch09_seq2seq.ipynb").write_text("{}", encoding="utf-8")
    (folder / "bob" / "draft.ipynb").write_text("{}", encoding="utf-8")
    (folder / "linked_student").symlink_to(folder / "alice")
    found = {s.name: s for s in grading.find_submissions(folder)}
    assert sorted(found) == [
        "alice", "bob/ch09_seq2seq.ipynb", "bob/draft.ipynb", "dir.ipynb", "hard.ipynb",
        "link.ipynb", "linked_student", "pipe.ipynb", "plain.ipynb",
    ]  # fmt: skip
    assert found["plain.ipynb"].read() == b'{"cells": []}' and not found["plain.ipynb"].problem
    assert found["alice"].read() == b"{}"
    # Read when graded, not when listed, and only if it is still the file that was listed.
    (folder / "plain.ipynb").unlink()
    (folder / "plain.ipynb").write_text('{"cells": [1]}', encoding="utf-8")
    with pytest.raises(OSError, match="changed"):
        found["plain.ipynb"].read()
    assert "symbolic link" in found["link.ipynb"].problem and found["link.ipynb"].data is None
    assert "symbolic link" in found["linked_student"].problem
    assert "hard link" in found["hard.ipynb"].problem
    assert "folder named like a notebook" in found["dir.ipynb"].problem
    assert "not a regular file" in found["pipe.ipynb"].problem


def test_names_and_reasons_are_escaped_capped_and_never_formulas():
    assert grading.printable("\x1b[2J\x1b[31mred\x07\u202eevil\ud800", 100) == (
        "\\x1b[2J\\x1b[31mred\\x07\\u202eevil\\ud800"
    )
    assert grading.printable("two\nlines\tand tab") == "two / lines and tab"
    # invisible characters that would make two names look alike
    assert (
        grading.printable("kim\u200b.ipynb kim\u00ad\u2060") == "kim\\u200b.ipynb kim\\xad\\u2060"
    )
    assert grading.printable("x" * 1000, 10) == "x" * 9 + "…"
    assert grading._spreadsheet_safe("=1+1") == "'=1+1"
    assert grading._spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert grading._spreadsheet_safe("plain") == "plain"
    for sneaky in (" =1+1", "\u00a0=HYPERLINK(1)", "\u3000-2+3", "\uff1dSUM(A1)"):
        assert grading._spreadsheet_safe(sneaky) == "'" + sneaky


def test_a_notebook_deeper_than_json_allows_is_named_as_such():
    with pytest.raises(ValueError, match="nested far deeper"):
        grading.parse_notebook(b"[" * 200_000 + b"]" * 200_000)
    sources, made_for = grading.parse_notebook(
        json.dumps(
            {"cells": [], "metadata": {"otter": {"assignment_name": "ch11_transformer"}}}
        ).encode()
    )
    assert sources == [] and made_for == "ch11_transformer"


def _result(name, scores, possible, **kw):
    return grading.GradeResult(name, scores, possible, **kw)


def test_item_analysis_reports_means_full_and_zero_shares_rules_and_common_failures(tmp_path):
    possible = {"q1": 3.0, "q2": 2.0}
    results = [
        _result("a", {"q1": 3.0, "q2": 0.0}, possible, failures=["q2 q2 - 1: AssertionError: 최대 차이 0.5"]),
        _result("b", {"q1": 1.0, "q2": 0.0}, possible, failures=["q2 q2 - 1: AssertionError: 최대 차이 0.25"]),
        _result("c", {"q1": 0.0, "q2": 2.0}, possible, rule_breaks={"q1": ["규칙 위반(문제 1): …"]}),
    ]  # fmt: skip
    rows = {row["question"]: row for row in grading.item_analysis(results)}
    assert rows["q1"]["mean"] == pytest.approx(4 / 3)
    assert rows["q1"]["full_marks_share"] == pytest.approx(1 / 3)
    assert rows["q1"]["rule_breaks"] == 1 and rows["q1"]["common_failures"] == [("규칙 위반", 1)]
    assert rows["q2"]["zero_share"] == pytest.approx(2 / 3)
    # The same mistake with other numbers counts as one kind.
    assert rows["q2"]["common_failures"] == [("q2 - 1: AssertionError: 최대 차이 #", 2)]
    grading.write_item_analysis(results, tmp_path / "items.csv", tmp_path / "items.html")
    table = list(csv.DictReader((tmp_path / "items.csv").open(encoding="utf-8")))
    assert [r["question"] for r in table] == ["q1", "q2"] and table[0]["rule_breaks"] == "1"
    page = (tmp_path / "items.html").read_text(encoding="utf-8")
    assert "<svg" in page and "<script" not in page and "문항 분석" in page


def test_the_console_line_shows_the_status_and_the_first_error():
    ok = _result(
        "a.ipynb", {"q1": 1.0}, {"q1": 3.0}, reason="1 cell(s) raised, first cell 7: NameError: x"
    )
    assert ok.summary() == "a.ipynb: 1/3  [1 cell(s) raised, first cell 7: NameError: x]"
    late = _result("\x1b[31mb.ipynb", {"q1": 0.0}, {"q1": 3.0}, status="timeout", reason="ran past")
    assert late.summary() == "\\x1b[31mb.ipynb: 0/3  [timeout: ran past]"
    assert _result("c", {"q1": 3.0}, {"q1": 3.0}).summary() == "c: 3/3  [ok]"


def test_an_unknown_or_misspelt_chapter_lists_the_valid_names(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["grade", str(tmp_path), "--chapter", "ch09"]) == 2
    err = capsys.readouterr().err
    assert "no exercise named 'ch09'" in err and "Did you mean ch09_seq2seq?" in err
    assert "ch01_nlp_and_sequences" in err and "ch12_bert" in err
    assert main(["grade", str(tmp_path), "--chapter", "seq2seq_ch09"]) == 2
    assert "exercises: ch01_nlp_and_sequences" in capsys.readouterr().err


def test_an_output_that_cannot_be_written_is_refused_before_grading(tmp_path, capsys):
    blocked = tmp_path / "file"
    blocked.write_text("x", encoding="utf-8")
    assert main(["grade", str(tmp_path), "--autograder", "none.zip",
                 "--out", str(blocked / "grades.csv")]) == 2  # fmt: skip
    assert "cannot write the results" in capsys.readouterr().err


def test_every_judge_starts_with_the_libraries_the_hidden_tests_use():
    """multiprocessing would skip a preload it cannot import without a word, and a misspelt
    or broken name would quietly put the seconds of an import back into every submission's
    grading: a judge's process holds every module of JUDGE_PRELOAD."""
    with grading._judge_context().Pool(1) as pool:
        assert pool.apply(grading.preload_report) == {}
    assert "transformers.models.gpt2.modeling_gpt2" in grading.JUDGE_PRELOAD


def test_a_library_that_fails_to_import_is_left_out_of_the_judges(monkeypatch):
    """An error other than ImportError would stop multiprocessing's forkserver and every judge."""
    import importlib

    original = importlib.import_module

    def import_module(name):
        if name == "a_broken_library":
            raise RuntimeError("this version of the library is broken")
        return original(name)

    monkeypatch.setattr(importlib, "import_module", import_module)
    broken = {"a_broken_library": "RuntimeError: this version of the library is broken"}
    assert grading.preload(["json", "a_broken_library", "csv"]) == broken
    monkeypatch.setattr(grading, "JUDGE_PRELOAD", ["json", "a_broken_library"])
    assert grading.preload_report() == {"a_broken_library": "not imported"}
