"""The exercise pipeline: masters → student notebooks (committed) and autograder zips."""

from __future__ import annotations

import json

import pytest
from conftest import HIDDEN_SENTINEL, ROOT, SOLUTION_SENTINEL

from course_tools import exercises

MASTERS = exercises.masters(ROOT)
NAMES = [m.stem for m in MASTERS]


def test_there_are_exercises_for_every_finished_chapter():
    assert NAMES == [
        "ch01_nlp_and_sequences",
        "ch02_tokenization",
        "ch03_word_representations",
        "ch04_word2vec",
        "ch05_language_models",
        "ch06_rnn",
        "ch07_bptt",
        "ch08_lstm_gru",
    ]


@pytest.mark.parametrize("name", NAMES)
def test_masters_carry_the_sentinels_the_leak_tests_look_for(name):
    master = (ROOT / "exercises" / f"{name}.md").read_text(encoding="utf-8")
    assert SOLUTION_SENTINEL in master and HIDDEN_SENTINEL in master


@pytest.mark.parametrize("name", NAMES)
def test_committed_student_notebook_is_up_to_date_with_its_master(assignments, name):
    fresh = exercises.normalized_student_notebook(assignments[name].student_notebook)
    committed = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    assert committed == fresh, "run `make exercises` and commit notebooks/"


def test_no_solution_or_hidden_test_in_the_notebooks_folder():
    for path in (ROOT / "notebooks").rglob("*"):
        if path.is_file():
            content = path.read_text(encoding="utf-8", errors="ignore")
            assert SOLUTION_SENTINEL not in content, path
            assert HIDDEN_SENTINEL not in content, path
            assert "hidden=True" not in content, path


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_has_public_tests_no_outputs_and_at_least_three_questions(name):
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    tests = notebook["metadata"]["otter"]["tests"]
    assert len(tests) >= 3
    assert all("hidden=False" in source for source in tests.values())
    assert all(not c.get("outputs") for c in notebook["cells"] if c["cell_type"] == "code")
    assert notebook["metadata"]["otter"]["assignment_name"] == name


@pytest.mark.parametrize("name", NAMES)
def test_autograder_holds_hidden_tests_and_korean_messages(assignments, name):
    import zipfile

    with zipfile.ZipFile(assignments[name].autograder_zip) as archive:
        tests = {n: archive.read(n).decode() for n in archive.namelist() if n.startswith("tests/")}
    assert any("hidden=True" in source for source in tests.values())
    assert all("통과했습니다" in source for source in tests.values())


def test_check_reports_a_stale_notebook(tmp_path):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "notebooks").mkdir()
    master = MASTERS[0]
    (tmp_path / "exercises" / master.name).write_text(
        master.read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "notebooks" / f"{master.stem}.ipynb").write_text("{}", encoding="utf-8")
    assert exercises.check(tmp_path) == [f"notebooks/{master.stem}.ipynb"]
    exercises.build(tmp_path, run_tests=False)
    assert exercises.check(tmp_path) == []


def test_missing_exercises_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="run from the repository root"):
        exercises.masters(tmp_path)
