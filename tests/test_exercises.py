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
        "ch09_seq2seq",
        "ch10_attention",
        "ch11_transformer",
        "ch12_bert",
    ]


@pytest.mark.parametrize("name", NAMES)
def test_masters_carry_the_sentinels_the_leak_tests_look_for(name):
    master = (ROOT / "exercises" / f"{name}.md").read_text(encoding="utf-8")
    assert SOLUTION_SENTINEL in master and HIDDEN_SENTINEL in master


@pytest.mark.parametrize("name", NAMES)
def test_committed_student_notebook_is_up_to_date_with_its_master(assignments, name):
    fresh = exercises.dressed_student_notebook(assignments[name], exercises.repository_url(ROOT))
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
    (tmp_path / "_config.yml").write_text(
        (ROOT / "_config.yml").read_text(encoding="utf-8"), encoding="utf-8"
    )
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


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_reads_in_korean_states_points_and_ends_with_how_to_submit(name):
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in notebook["cells"]]
    assert sources[0].startswith("# 연습 문제"), "the title comes first"
    assert "google.colab" in sources[1] and "otter.Notebook(" in sources[2]
    assert not any("Initialize Otter" in s or "double-check your work" in s for s in sources)
    headings = [s for s in sources if s.startswith("## 문제")]
    assert headings and all("**배점" in h and "숨은 테스트" in h for h in headings)
    assert sources[-1].startswith("## 제출하기") and f"{name}.ipynb" in sources[-1]


def test_colab_install_cell_launch_buttons_and_setup_page_use_the_one_repository_url():
    url = exercises.repository_url(ROOT)
    for path in sorted((ROOT / "notebooks").glob("ch*.ipynb")):
        install = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][1]["source"])
        assert f"course-utils @ git+{url}" in install, path.name
    assert f"git+{url}" in (ROOT / "book" / "setup.md").read_text(encoding="utf-8")
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert config.count(url) == 1, "the URL is set once, under repository:"


def test_the_colab_install_cell_does_nothing_outside_colab():
    source = exercises.colab_install_cell("https://example.org/x")
    namespace: dict = {}
    exec(compile(source, "<install>", "exec"), namespace)  # no pip, no network here
    assert "packages" not in namespace
