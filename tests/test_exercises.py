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
        "ch13_gpt",
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


def _root_with_one_master(root):
    """A repository at ``root`` with the first master and the book's _config.yml; the master."""
    (root / "exercises").mkdir()
    (root / "_config.yml").write_text(
        (ROOT / "_config.yml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    master = MASTERS[0]
    (root / "exercises" / master.name).write_text(
        master.read_text(encoding="utf-8"), encoding="utf-8"
    )
    return master


def test_check_reports_a_stale_notebook(tmp_path):
    master = _root_with_one_master(tmp_path)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / f"{master.stem}.ipynb").write_text("{}", encoding="utf-8")
    assert exercises.check(tmp_path) == [
        f"notebooks/{master.stem}.ipynb",  # stale
        f"src/course_tools/public_tests/{master.stem}.json",  # missing
    ]
    exercises.build(tmp_path, run_tests=False)
    assert exercises.check(tmp_path) == []


def test_check_leaves_the_solutions_to_the_grading_tests_unless_asked(monkeypatch, capsys):
    """`make check-exercises` runs `otter assign --no-run-tests`: tests/test_grading.py grades
    every solution in the sandbox and requires full marks. `--run-tests`, or a machine where
    the sandbox cannot start (the grading tests are skipped there), puts otter's run back."""
    asked = []

    def fake_check(root, only=None, run_tests=False):
        asked.append((only, run_tests))
        return []

    monkeypatch.setattr(exercises, "check", fake_check)
    monkeypatch.setattr(exercises, "_sandbox_available", lambda: True)
    assert exercises.main(["check", "--only", "ch01_nlp_and_sequences"]) == 0
    assert exercises.main(["check", "--run-tests"]) == 0
    monkeypatch.setattr(exercises, "_sandbox_available", lambda: False)
    assert exercises.main(["check"]) == 0
    assert asked == [("ch01_nlp_and_sequences", False), (None, True), (None, True)]
    assert "up to date" in capsys.readouterr().out


def test_without_the_sandbox_check_says_that_otter_runs_the_solutions(monkeypatch, capsys):
    from course_tools import sandbox

    def unavailable():
        raise sandbox.SandboxUnavailable("bubblewrap (bwrap) is not installed")

    monkeypatch.setattr(sandbox, "isolation", unavailable)
    assert exercises._sandbox_available() is False
    assert "otter runs the solutions here" in capsys.readouterr().out


def test_check_passes_no_run_tests_to_otter_unless_asked(monkeypatch, tmp_path):
    commands = []

    def fake_run(command, **kwargs):
        commands.append(command)
        raise RuntimeError("stop before otter runs")

    monkeypatch.setattr(exercises.subprocess, "run", fake_run)
    _root_with_one_master(tmp_path)
    for run_tests in (False, True):
        with pytest.raises(RuntimeError, match="stop before otter runs"):
            exercises.check(tmp_path, run_tests=run_tests)
    assert ["--no-run-tests" in c for c in commands] == [True, False]


def test_missing_exercises_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="run from the repository root"):
        exercises.masters(tmp_path)


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_reads_in_korean_states_points_and_ends_with_how_to_submit(name):
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in notebook["cells"]]
    assert sources[0].startswith("# 연습 문제"), "the title comes first"
    assert "google.colab" in sources[1] and f'grader = Grader("{name}")' in sources[2]
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


# Questions answered by a set of integers: how many integers the answer is drawn from.
SUBSET_UNIVERSES = {("ch06_rnn", "q5"): 10}


def _value_questions():
    """``(chapter, question, answer, option letters, public points, hidden points)`` for every
    question whose answer is a value (``qN_answer = ...``), read from the masters."""
    import math
    import re

    import jupytext
    import numpy as np

    found = []
    for master in MASTERS:
        questions: list[dict] = []
        for cell in jupytext.read(master).cells:
            source = cell.source
            if cell.cell_type == "raw" and source.startswith("# BEGIN QUESTION"):
                name = re.search(r"name: (\w+)", source).group(1)
                questions.append({"name": name, "options": [], "public": 0.0, "hidden": 0.0})
            elif not questions:
                continue
            elif cell.cell_type == "markdown":
                questions[-1]["options"] += re.findall(r"^- \(?([a-e])\)", source, flags=re.M)
            elif cell.cell_type == "code":
                q = questions[-1]
                match = re.search(rf"^{q['name']}_answer = (.+?)\s+# SOLUTION", source, flags=re.M)
                if match:
                    q["answer"] = eval(match.group(1), {"np": np, "math": math})  # our own master
                config = re.search(
                    r'""" # BEGIN TEST CONFIG\n(.*?)""" # END TEST CONFIG', source, re.S
                )
                if config:
                    points = float(re.search(r"points: ([\d.]+)", config.group(1)).group(1))
                    q["hidden" if "hidden: true" in config.group(1) else "public"] += points
        found += [
            (master.stem, q["name"], q["answer"], q["options"], q["public"], q["hidden"])
            for q in questions
            if "answer" in q
        ]
    return found


VALUE_QUESTIONS = _value_questions()


def test_every_chapter_has_a_conceptual_question_and_none_is_single_choice():
    assert {chapter for chapter, *_ in VALUE_QUESTIONS} == set(NAMES)
    for chapter, question, answer, *_ in VALUE_QUESTIONS:
        assert not isinstance(answer, str), f"{chapter} {question} is single choice: {answer!r}"


@pytest.mark.parametrize(
    ("chapter", "question", "answer", "options", "public", "hidden"),
    VALUE_QUESTIONS,
    ids=[f"{c}-{q}" for c, q, *_ in VALUE_QUESTIONS],
)
def test_guessing_earns_at_most_a_tenth_of_a_conceptual_question(
    chapter, question, answer, options, public, hidden
):
    """Uniform guessing's expected score, from the master: the format test earns nothing, and
    the hidden test wants the exact answer (a set of options, a set of steps, or a number)."""
    assert public == 0, "a test any well-formed guess passes must be worth 0 points"
    if isinstance(answer, (set, frozenset)) and all(isinstance(a, str) for a in answer):
        assert sorted(options) == list("abcde")[: len(options)] and len(options) >= 4
        assert answer <= set(options) and answer
        chance = 1 / (2 ** len(options) - 1)  # every non-empty set of options, equally likely
    elif isinstance(answer, (set, frozenset)):
        chance = 1 / 2 ** SUBSET_UNIVERSES[(chapter, question)]
    else:
        numbers = answer if isinstance(answer, tuple) else (answer,)
        assert numbers and all(isinstance(n, (int, float)) for n in numbers), answer
        chance = (
            0.0  # numbers graded exactly (or to four decimals): no finite guess list covers them
        )
    assert chance * hidden / (public + hidden) <= 0.10


def test_correct_options_are_spread_over_the_letters():
    letters = [
        letter
        for _, _, answer, *_ in VALUE_QUESTIONS
        if isinstance(answer, (set, frozenset))
        for letter in answer
        if isinstance(letter, str)
    ]
    counts = {letter: letters.count(letter) for letter in "abcde"}
    assert len(letters) >= 20, counts
    assert max(counts.values()) <= 0.30 * len(letters), counts


def test_a_renamed_notebook_still_finds_its_tests(tmp_path, capsys):
    import json
    import shutil

    from course_tools.student import notebook_named

    source = ROOT / "notebooks" / "ch01_nlp_and_sequences.ipynb"
    assert notebook_named("ch01_nlp_and_sequences", source.parent).endswith(source.name)
    copy = tmp_path / "ch01_nlp_and_sequences (1).ipynb"  # what a browser names a second download
    shutil.copy(source, copy)
    (tmp_path / "notes.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))
    assert notebook_named("ch01_nlp_and_sequences", tmp_path) == str(copy)
    assert "이름이 바뀌어" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="연습 문제 ch02_tokenization의 노트북이 없습니다"):
        notebook_named("ch02_tokenization", tmp_path)
    shutil.copy(source, tmp_path / "ch01 copy.ipynb")
    with pytest.raises(ValueError, match="노트북이 2개 있습니다"):
        notebook_named("ch01_nlp_and_sequences", tmp_path)
    with pytest.raises(TypeError, match="non-empty str"):
        notebook_named("")


def test_the_set_up_cell_of_every_student_notebook_finds_its_notebook_by_name():
    import json

    from course_tools.student import is_setup_cell

    for path in sorted((ROOT / "notebooks").glob("ch*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        setups = [s for s in sources if is_setup_cell(s)]
        assert len(setups) == 1 and f'grader = Grader("{path.stem}")' in setups[0], path.name
        assert not any("otter.Notebook(" in s for s in sources), path.name


def test_a_browser_renamed_notebook_runs_its_checks(tmp_path):
    """The issue's case: ``ch01_nlp_and_sequences (1).ipynb`` runs its set-up cell and a check."""
    import json
    import shutil

    import nbformat
    from nbclient import NotebookClient

    from course_tools.student import is_setup_cell

    copy = tmp_path / "ch01_nlp_and_sequences (1).ipynb"
    shutil.copy(ROOT / "notebooks" / "ch01_nlp_and_sequences.ipynb", copy)
    notebook = nbformat.read(copy, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    setup = next(i for i, c in enumerate(code) if is_setup_cell(c.source))
    check = next(c for c in code if c.source.strip().startswith("grader.check("))
    notebook.cells = [*code[: setup + 1], check]  # the answer cell not run yet
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = json.dumps([c.get("outputs", []) for c in notebook.cells], ensure_ascii=False)
    assert "NameError" not in outputs and "이름이 바뀌어" in outputs
    # the check's feedback is Korean, without otter's English framing
    assert "아직 정의되지 않은 이름: count_orderings" in outputs, outputs[-2000:]
    assert not any(english in outputs for english in ("Test case", "Error at line", "results:"))


def test_on_a_simulated_colab_a_check_reads_the_shipped_public_tests(tmp_path, monkeypatch):
    """Colab as otter sees it: the IPython shell's class comes from ``google.colab`` and the
    notebook is not a file. The set-up cell writes ``./tests`` from the package, and a check
    gives the same Korean feedback as on a laptop (the install cell, which needs the network,
    is left out). The simulation runs as an IPython start-up file, before any cell, so that
    the rule checks do not see it in the notebook's history."""
    import json

    import nbformat
    from nbclient import NotebookClient

    from course_tools.student import is_setup_cell

    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text(
        "import sys, types\n"
        "from IPython import get_ipython\n"
        "shell = get_ipython()\n"
        "shell.__class__ = type('Shell', (type(shell),), {'__module__': 'google.colab._shell'})\n"
        "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
    )
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    work = tmp_path / "content"  # Colab's working folder: no notebook file in it
    work.mkdir()
    notebook = nbformat.read(ROOT / "notebooks" / "ch01_nlp_and_sequences.ipynb", as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    setup = next(c for c in code if is_setup_cell(c.source))
    check = next(c for c in code if c.source.strip() == 'grader.check("q1")')
    answer = nbformat.v4.new_code_cell(
        "import itertools\n\n\ndef count_orderings(tokens):\n"
        "    return len(set(itertools.permutations(tokens)))"
    )
    notebook.cells = [setup, answer, check]
    NotebookClient(notebook, timeout=300, resources={"metadata": {"path": str(work)}}).execute()
    outputs = json.dumps([c.get("outputs", []) for c in notebook.cells], ensure_ascii=False)
    # the tests were written, which happens only when the kernel looks like Colab's
    assert not list(work.glob("*.ipynb")) and (work / "tests" / "q1.py").is_file()
    assert "문제 1의 공개 테스트를 통과했습니다" in outputs, outputs[-2000:]
    assert "문제 1의 답은 규칙을 지킵니다" in outputs, outputs[-2000:]
    assert "공개 테스트 2개를 모두 통과했습니다" in outputs, outputs[-2000:]
    assert "Error" not in outputs and "does not exist" not in outputs


def test_the_colab_install_cell_pins_the_versions_of_this_environment():
    from importlib.metadata import version

    from course_tools.exercises import COLAB_PACKAGES, colab_install_cell

    for pinned in COLAB_PACKAGES:
        name, _, wanted = pinned.partition("==")
        assert wanted == version(name), pinned
    assert all(f'"{p}"' in colab_install_cell("https://example.org/x") for p in COLAB_PACKAGES)
    setup_page = (ROOT / "book" / "setup.md").read_text(encoding="utf-8")
    assert all(p in setup_page for p in COLAB_PACKAGES)  # the page says what the cell installs


def test_the_shipped_public_tests_are_the_student_notebooks_own():
    import json

    shipped = ROOT / "src" / "course_tools" / "public_tests"
    for path in sorted((ROOT / "notebooks").glob("ch*.ipynb")):
        tests = json.loads(path.read_text(encoding="utf-8"))["metadata"]["otter"]["tests"]
        assert json.loads((shipped / f"{path.stem}.json").read_text(encoding="utf-8")) == tests
        assert not any("hidden=True" in source for source in tests.values()), path.name
