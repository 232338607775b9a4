"""Tests of the tests: grading real submissions in the sandbox, in one batch per chapter.

The solution scores 100 %, the untouched student notebook 0, a plausible wrong
answer loses exactly that question's points, an infinite loop is cut at the
limit, a process that calls os._exit is reported with the reason, and a cell
that exceeds the memory cap loses only its own question. Questions graded
before a loop or a crash keep their points. (Hostile submissions: see
test_grading_attacks.py.)
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import time

import pytest
from conftest import ROOT, SOLUTION_SENTINEL

from course_tools import exercises, grading, rules

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("sandbox")]


def _load(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"answers_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _answer_modules(folder: str) -> dict:
    """``{chapter: module}`` for each chNN_*.py in tests/<folder>/."""
    return {p.stem: _load(p) for p in sorted((ROOT / "tests" / folder).glob("ch*.py"))}


# tests/wrong_answers/: a plausible mistake for every question, (question, marker, source).
WRONG_ANSWERS = {name: m.WRONG for name, m in _answer_modules("wrong_answers").items()}
# tests/library_answers/: the library's answer per code question, (question, marker, source,
# rule), and the questions no library answers, {question: why}.
_LIBRARY = _answer_modules("library_answers")
LIBRARY_ANSWERS = {name: m.LIBRARY for name, m in _LIBRARY.items()}
NO_LIBRARY_ANSWER = {name: getattr(m, "NO_LIBRARY_ANSWER", {}) for name, m in _LIBRARY.items()}
VERIFY = _load(ROOT / "tests" / "library_answers" / "verify.py")
_replace_cell = VERIFY.replace_cell


# Answers with nothing in them, shaped to slip past a test that compares values without
# checking the shape first: np.allclose broadcasts an empty array against anything.
HOLLOW = {
    "empty": "np.zeros((0,))",
    "empty-4d": "np.zeros((0, 1, 1, 1))",
    "empty-pair": "(np.zeros((0, 1, 1)), np.zeros((0, 1)))",
    "empty-four": "(np.zeros((0, 1)),) * 4",
    "empty-list": "[]",
    "nan": "float('nan')",
}


def _hollow(solution: dict, returned: str) -> dict:
    """The solution with every function it defines returning ``returned`` and every answer emptied."""
    import ast

    copy = json.loads(json.dumps(solution))
    for cell in copy["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or SOLUTION_SENTINEL not in source:
            continue
        hollow = ["import numpy as np"]
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef):
                hollow.append(f"def {node.name}(*args, **kwargs):\n    return {returned}")
            elif isinstance(node, ast.Assign):
                hollow += [f"{t.id} = {returned}" for t in node.targets if isinstance(t, ast.Name)]
        cell["source"] = "\n".join(hollow) + "\n"
    return copy


JOBS, LIMIT_S = 3, 15  # workers; each submission's limit (13장's solution: about 5 s in all)
START_S = 15  # a sandbox's start and the notebook's imports, on top of the limit


@pytest.fixture(scope="module", params=sorted(WRONG_ANSWERS))
def graded(request, assignments, tmp_path_factory):
    name = request.param
    assignment = assignments[name]
    solution = json.loads(assignment.autograder_notebook.read_text(encoding="utf-8"))
    blank = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    question, marker, _ = WRONG_ANSWERS[name][0]
    folder = tmp_path_factory.mktemp(f"submissions-{name}")
    submissions = {
        "solution": solution,
        "blank": blank,
        **{
            f"wrong-{q}-{i}": _replace_cell(solution, m, source)
            for i, (q, m, source) in enumerate(WRONG_ANSWERS[name])
        },
        **{
            f"library-{q}-{i}": _replace_cell(solution, m, source)
            for i, (q, m, source, _) in enumerate(LIBRARY_ANSWERS.get(name, []))
        },
        **{f"hollow-{kind}": _hollow(solution, returned) for kind, returned in HOLLOW.items()},
        # Asleep, so that its 15 s leave the batch's CPU to the others (a loop that spins is
        # test_grading_attacks.py's correct_then_loop): the limit counts seconds, not CPU.
        "loop": _replace_cell(solution, marker, "import time\nwhile True:\n    time.sleep(0.1)\n"),
        "exit": _replace_cell(solution, marker, "import os\nos._exit(3)\n"),
        # 8 GiB against the default 4 GiB cap: this cell fails, the rest still counts.
        "memory": _replace_cell(solution, marker, "hog = bytearray(8 * 1024**3)\n"),
    }
    for stem, notebook in submissions.items():
        (folder / f"{stem}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    start = time.perf_counter()
    results = grading.grade_batch(folder, assignment.autograder_zip, jobs=JOBS, timeout_s=LIMIT_S)
    elapsed = time.perf_counter() - start
    out = folder / "grades.csv"
    grading.write_csv(results, out)
    return name, question, {r.submission.removesuffix(".ipynb"): r for r in results}, out, elapsed


def test_solution_scores_full_marks(graded):
    _, _, results, _, _ = graded
    solution = results["solution"]
    assert solution.status == "ok" and solution.total == solution.max_total > 0


def test_hollow_answers_earn_nothing(graded):
    _, _, results, _, _ = graded
    for kind in HOLLOW:
        hollow = results[f"hollow-{kind}"]
        passed = {q: s for q, s in hollow.scores.items() if s > 0}
        assert passed == {}, f"{kind}: a test compares without checking the shape: {passed}"


def test_blank_student_notebook_scores_zero(graded):
    _, _, results, _, _ = graded
    assert results["blank"].status == "ok" and results["blank"].total == 0


def test_every_plausible_wrong_answer_loses_its_questions_points_and_nothing_else(graded):
    name, _, results, _, _ = graded
    solution = results["solution"]
    for i, (question, _, _) in enumerate(WRONG_ANSWERS[name]):
        wrong = results[f"wrong-{question}-{i}"]
        assert wrong.scores[question] < wrong.possible[question], (question, wrong.failures)
        assert all(wrong.scores[q] == solution.scores[q] for q in wrong.scores if q != question)


def test_every_library_answer_loses_its_question_by_the_rule_it_breaks(graded):
    name, _, results, _, _ = graded
    solution = results["solution"]
    for i, (question, _, _, rule) in enumerate(LIBRARY_ANSWERS[name]):
        library = results[f"library-{question}-{i}"]
        assert library.scores[question] == 0, (question, library.failures)
        assert any(f"`{rule}" in b for b in library.rule_breaks[question]), library.rule_breaks
        assert all(library.scores[q] == solution.scores[q] for q in library.scores if q != question)
        assert "rules broken in" in library.reason and question in library.reason


def test_library_answers_earn_full_marks_without_the_rules(graded, assignments, tmp_path):
    """What the rules stop is a right answer: without them each library answer earns its points."""
    name = graded[0]
    solution = json.loads(assignments[name].autograder_notebook.read_text(encoding="utf-8"))
    folder = tmp_path / "library"
    folder.mkdir()
    answers = LIBRARY_ANSWERS.get(name, [])
    if not answers:
        pytest.skip(f"{name} has no library answers")
    for i, (question, marker, source, _) in enumerate(answers):
        notebook = VERIFY.replace_cell(solution, marker, source)
        (folder / f"library-{question}-{i}.ipynb").write_text(
            json.dumps(notebook), encoding="utf-8"
        )
    zip_path = VERIFY.without_rules(assignments[name].autograder_zip, tmp_path)
    free = {
        r.submission.removesuffix(".ipynb"): r
        for r in grading.grade_batch(folder, zip_path, jobs=3, timeout_s=60, unsafe=True)
    }
    for i, (question, _, _, _) in enumerate(answers):
        result = free[f"library-{question}-{i}"]
        assert result.scores[question] == result.possible[question], (question, result.failures)


@pytest.mark.parametrize("name", sorted(WRONG_ANSWERS))
def test_every_code_question_has_a_library_answer(assignments, name):
    from course_tools import exercises

    found = exercises.read_rules(assignments[name].autograder_zip)
    assert found is not None and all(found.forbid.values()), "every question has rules"
    code_questions = {
        q for q, names in found.names.items() if not any(n.endswith("_answer") for n in names)
    }
    exempt = NO_LIBRARY_ANSWER.get(name, {})
    assert {q for q, _, _, _ in LIBRARY_ANSWERS.get(name, [])} == code_questions - set(exempt)
    assert set(exempt) <= code_questions


@pytest.mark.parametrize("name", sorted(WRONG_ANSWERS))
def test_every_question_has_a_plausible_wrong_answer(assignments, name):
    questions = set(grading.question_points(assignments[name].autograder_zip))
    assert {q for q, _, _ in WRONG_ANSWERS[name]} == questions


def _points_before(result: grading.GradeResult, question: str) -> float:
    questions = list(result.possible)
    return sum(result.possible[q] for q in questions[: questions.index(question)])


def test_infinite_loop_is_cut_at_the_limit_and_keeps_what_was_graded_before(graded):
    _, question, results, _, elapsed = graded
    loop = results["loop"]
    assert loop.status == "timeout" and f"{LIMIT_S} s" in loop.reason
    assert loop.total == _points_before(loop, question)
    assert loop.scores[question] == 0
    assert loop.seconds < LIMIT_S + START_S
    # not hanging: no longer than if every submission ran to its limit, JOBS at a time
    rounds = math.ceil(len(results) / JOBS)
    assert elapsed < rounds * (LIMIT_S + START_S), "the batch must not hang"


def test_os_exit_in_student_code_is_reported_and_keeps_what_was_graded_before(graded):
    _, question, results, _, _ = graded
    crashed = results["exit"]
    assert crashed.status == "crashed" and "exit status 3" in crashed.reason
    assert crashed.total == _points_before(crashed, question)


def test_memory_hog_loses_only_the_question_whose_cell_failed(graded):
    _, question, results, _, _ = graded
    hog, solution = results["memory"], results["solution"]
    assert hog.scores[question] == 0
    assert hog.total == solution.total - solution.possible[question]
    assert hog.status == "ok" and "MemoryError" in hog.reason


def test_csv_has_one_row_per_submission_with_per_question_scores(graded):
    _, _, results, out, _ = graded
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert sorted(r["submission"] for r in rows) == sorted(f"{s}.ipynb" for s in results)
    questions = list(next(iter(results.values())).possible)
    assert list(rows[0])[1 : 1 + len(questions)] == questions
    by_name = {r["submission"]: r for r in rows}
    assert float(by_name["solution.ipynb"]["percent"]) == 100.0
    assert by_name["loop.ipynb"]["status"] == "timeout"


def test_question_points_come_from_the_autograder(assignments):
    points = grading.question_points(assignments["ch02_tokenization"].autograder_zip)
    assert points == {"q1": 3.0, "q2": 3.0, "q3": 3.0, "q4": 3.0, "q5": 3.0, "q6": 2.0}


def test_grade_command_line(assignments, tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "only.ipynb").write_text(
        assignments["ch01_nlp_and_sequences"].autograder_notebook.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    out = tmp_path / "grades.csv"
    run = subprocess.run(
        [sys.executable, "-m", "course_utils", "grade", str(folder),
         "--autograder", str(assignments["ch01_nlp_and_sequences"].autograder_zip),
         "--out", str(out), "--timeout", "120"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    total = sum(
        grading.question_points(assignments["ch01_nlp_and_sequences"].autograder_zip).values()
    )
    assert f"only.ipynb: {total:g}/{total:g}  [ok]" in run.stdout
    assert out.is_file()
    assert (tmp_path / "grades-items.csv").is_file() and (tmp_path / "grades-items.html").is_file()
    assert "item analysis →" in run.stdout


def test_bad_grading_input_gets_clear_errors(tmp_path, assignments):
    zip_path = assignments["ch02_tokenization"].autograder_zip
    with pytest.raises(NotADirectoryError, match=r"folder of \.ipynb"):
        grading.grade_batch(tmp_path / "missing", zip_path)
    with pytest.raises(ValueError, match=r"no \.ipynb submissions"):
        grading.grade_batch(tmp_path, zip_path)
    (tmp_path / "a.ipynb").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="timeout_s"):
        grading.grade_batch(tmp_path, zip_path, timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        grading.grade_batch(tmp_path, zip_path, memory_mb=10)
    with pytest.raises(ValueError, match="jobs"):
        grading.grade_batch(tmp_path, zip_path, jobs=0)
    with pytest.raises(FileNotFoundError, match="make exercises"):
        grading.question_points(tmp_path / "none.zip")
    with pytest.raises(ValueError, match="no results"):
        grading.write_csv([], tmp_path / "x.csv")


def test_an_autograder_whose_rules_the_sandbox_cannot_hide_is_refused(tmp_path, assignments):
    """A rule the sandbox cannot hide (one question's own, a name inside a package the runner
    imports) could only be checked in the student's own process: an attacker's review (11-30)
    undid every such run-time guard. ``make exercises`` refuses such a master; a zip edited by
    hand is refused here, before anything is graded."""
    import zipfile

    original = assignments["ch01_nlp_and_sequences"].autograder_zip
    edited = tmp_path / original.name
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(edited, "w") as copy:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == rules.RULES_FILE:
                found = rules.Rules.from_json(data.decode("utf-8"))
                found.forbid["q1"] = [*found.forbid["q1"], "math.factorial"]
                for question in found.forbid:
                    found.forbid[question] = [*found.forbid[question], "numpy.prod"]
                data = found.to_json().encode("utf-8")
            copy.writestr(item, data)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.ipynb").write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot hide") as refused:
        grading.grade_batch(tmp_path / "subs", edited)
    for reason in (
        "math.factorial (not every question forbids it)",
        "numpy.prod (the sandbox's runner imports it)",
    ):
        assert reason in str(refused.value)
    grading.TestSuite(original)  # the zip as built is accepted


def test_unreadable_submission_is_reported_not_fatal(tmp_path, assignments):
    (tmp_path / "broken.ipynb").write_text("not json", encoding="utf-8")
    [result] = grading.grade_batch(
        tmp_path, assignments["ch02_tokenization"].autograder_zip, timeout_s=120
    )
    assert result.status == "error" and result.total == 0 and "not a notebook" in result.reason


def test_grade_subcommand_in_process_and_its_usage_errors(
    assignments, tmp_path, capsys, monkeypatch
):
    from course_tools.cli import main

    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "blank.ipynb").write_text(
        (ROOT / "notebooks" / "ch01_nlp_and_sequences.ipynb").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    zip_path = assignments["ch01_nlp_and_sequences"].autograder_zip
    out = tmp_path / "grades.csv"
    assert main(["grade", str(folder), "--autograder", str(zip_path), "--out", str(out)]) == 0
    total = sum(grading.question_points(zip_path).values())
    assert f"blank.ipynb: 0/{total:g}" in capsys.readouterr().out
    assert main(["grade", str(folder)]) == 2
    assert "--chapter" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)  # no exercises here: the names cannot be listed
    assert main(["grade", str(folder), "--chapter", "ch01_nlp_and_sequences"]) == 2
    assert "run from the repository root" in capsys.readouterr().err
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "ch01_nlp_and_sequences.md").write_text("", encoding="utf-8")
    assert main(["grade", str(folder), "--chapter", "ch01_nlp_and_sequences"]) == 2
    assert "run `make exercises`" in capsys.readouterr().err


def _one_submission(tmp_path, notebook_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "one.ipynb").write_text(notebook_path.read_text(encoding="utf-8"), encoding="utf-8")
    return folder


def test_without_bubblewrap_the_grader_refuses_and_names_the_fix(
    assignments, tmp_path, monkeypatch, capsys
):
    from course_tools import sandbox
    from course_tools.cli import main

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    folder = _one_submission(tmp_path, ROOT / "notebooks" / "ch01_nlp_and_sequences.ipynb")
    zip_path = assignments["ch01_nlp_and_sequences"].autograder_zip
    with pytest.raises(grading.SandboxUnavailable, match="apt-get install bubblewrap"):
        grading.grade_batch(folder, zip_path)
    out = tmp_path / "grades.csv"
    assert main(["grade", str(folder), "--autograder", str(zip_path), "--out", str(out)]) == 2
    assert "refusing to grade" in capsys.readouterr().err
    assert not out.exists()


def test_a_bubblewrap_that_cannot_start_is_refused_with_the_reason(
    assignments, tmp_path, monkeypatch
):
    from course_tools import sandbox

    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: str(fake))
    with pytest.raises(grading.SandboxUnavailable, match="No permissions to create new namespace"):
        sandbox.isolation()


def test_unsafe_grading_works_and_says_so_in_the_csv(assignments, tmp_path):
    assignment = assignments["ch01_nlp_and_sequences"]
    folder = _one_submission(tmp_path, assignment.autograder_notebook)
    [result] = grading.grade_batch(folder, assignment.autograder_zip, unsafe=True, timeout_s=60)
    assert result.total == result.max_total > 0 and "UNSAFE" in result.sandbox
    out = tmp_path / "grades.csv"
    grading.write_csv([result], out)
    assert "UNSAFE: no sandbox (--unsafe)" in out.read_text(encoding="utf-8")


def test_answers_inside_a_folder_the_sandbox_shows_are_refused(assignments, tmp_path):
    from course_tools import sandbox

    how = sandbox.isolation()
    visible = how.visible[-1]
    with pytest.raises(grading.SandboxUnavailable, match="move it elsewhere"):
        how.check_secrets([visible / "dist" / "answers.zip"])
    how.check_secrets([tmp_path / "answers.zip"])  # elsewhere is fine


def test_questions_are_graded_at_their_check_cell_and_otter_cells_are_not_run():
    sources = [
        '# Initialize Otter\nimport otter\ngrader = otter.Notebook("x.ipynb")',
        "def f(): return 1",
        'grader.check("q1")',
        "def g(): return 2",
        'grader.check("q1")',
        "h = 3",
        "grader.check_all()",
    ]
    steps = grading.plan(sources, ["q1", "q2"])
    renamed = grading.plan(
        [exercises.init_cell("ch09_seq2seq"), *sources[1:]], ["q1", "q2"]
    )  # the set-up cell of today's student notebooks is not run either
    earlier = grading.plan(
        [
            "import otter\nfrom course_tools.student import notebook_named\n\n"
            'grader = otter.Notebook(notebook_named("ch09_seq2seq"))',
            *sources[1:],
        ],
        ["q1", "q2"],
    )  # nor that of the notebooks handed out before the Korean feedback
    assert renamed == steps == earlier
    for runs in [
        'import otter\ngrader = otter.Notebook(print("x"))',
        # code hidden in what looks like an otter cell: a walrus, a \r that Python reads as
        # a line break, keyword values, statements after a check
        "import otter\ngrader = otter.Notebook(count_orderings := lambda tokens: 6)",
        'import otter\ngrader = otter.Notebook("a", tests_dir=[q := 3] and None)',
        '# set-up\rf = 1\nfrom course_tools.student import Grader\ngrader = Grader("x")',
        'from course_tools.student import Grader as G\ngrader = G("x")',
        'grader.check("q1"); f = 1',
        "grader.check_all(f := 1)",
        "grader.export(f := lambda: 1)",
        'f = 1  # grader.check("q1")',
        'from course_tools.student import Grader\ngrader = Grader("x"); import os',
        'from course_tools.student import Grader\ngrader = Grader(open("x").read())',
        'from course_tools.student import Grader\ndef f(): return 1\ngrader = Grader("x")',
    ]:
        assert grading.plan([runs], [])[0][0] == "run", runs
    assert steps == [
        ("run", 1, "def f(): return 1"),
        ("run", 3, "def g(): return 2"),
        ("grade", 4, "q1"),
        ("run", 5, "h = 3"),
        ("grade", 7, "q2"),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "no list of cells"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "not text"),
    ],
)
def test_malformed_notebooks_are_named(tmp_path, content, message):
    path = tmp_path / "bad.ipynb"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        grading.read_notebook(path)


def test_a_tests_functions_die_with_the_test():
    """A function a test passed cannot be called from a later cell (issue 18)."""
    from course_tools.sandbox import Session, isolation

    with Session(isolation(unsafe=True), grading.Limits(timeout_s=60)) as session:
        assert (
            session.run_cell("def f(cb):\n    global kept\n    kept = cb\n    return cb(2)") is None
        )
        assert session.lookup("f")(lambda x: x + 1) == 3
        session.end_test()
        error = session.run_cell("kept(5)")
    assert error is not None and error.startswith("RuntimeError") and "테스트가 끝나면" in error


def test_the_judge_and_the_sandbox_share_one_memory_cap(tmp_path):
    """The judge moves into <group>/judge and the group holds the submission's cap."""
    from course_tools.sandbox import _cgroup_layout

    if _cgroup_layout() is None:
        pytest.skip("no writable cgroup here")
    code = (
        "import json\n"
        "from course_tools.sandbox import JudgeGroup, Limits, _cgroup_layout\n"
        "group = JudgeGroup(_cgroup_layout(), Limits(memory_mb=300))\n"
        "memory = group.dirs['memory']\n"
        "limit = next(p for p in ('memory.max', 'memory.limit_in_bytes') if (memory / p).exists())\n"
        "mine = [l for l in open('/proc/self/cgroup').read().splitlines() if 'memory' in l or l.startswith('0::')]\n"
        "print(json.dumps({'dirs': group.cleanup_dirs(), 'limit': (memory / limit).read_text().strip(),\n"
        "                  'mine': mine, 'name': memory.name}))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    grading._remove_cgroups(found["dirs"])
    assert found["limit"] == str(300 * 2**20)
    assert any(line.endswith(f"{found['name']}/judge") for line in found["mine"]), found["mine"]
    assert not any(__import__("pathlib").Path(d).exists() for d in found["dirs"])


def test_the_system_call_filter_refuses_io_uring():
    import struct

    from course_tools.sandbox import seccomp_program

    program = seccomp_program("x86_64")
    compared = {struct.unpack_from("<HBBI", program, i)[3] for i in range(0, len(program), 8)}
    assert {425, 426, 427} <= compared


def test_answers_in_a_system_folder_the_sandbox_shows_are_refused():
    from course_tools import sandbox

    how = sandbox.isolation()
    with pytest.raises(grading.SandboxUnavailable, match="move it elsewhere"):
        how.check_secrets([__import__("pathlib").Path("/usr/share/course/dist/answers.zip")])


def test_a_notebook_of_another_exercise_is_named_as_such(assignments, tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "x.ipynb").write_text(
        (ROOT / "notebooks" / "ch11_transformer.ipynb").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    [result] = grading.grade_batch(folder, assignments["ch09_seq2seq"].autograder_zip, timeout_s=60)
    assert result.status == "error" and result.total == 0
    assert "ch11_transformer, not ch09_seq2seq" in result.reason
    assert "--chapter ch11_transformer" in result.reason
