"""``grader.check`` in Korean (course_tools.feedback): blank, missing, crashing and wrong
answers each get a Korean message naming the function and what it returned, with none of
otter's English framing; right answers pass exactly as otter's own run passes them."""

from __future__ import annotations

import html
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from course_tools.feedback import question_label, run_checks, shown
from course_tools.student import Grader, write_public_tests

ENGLISH = ("Test case", "Error at line", "results:", "passed!", "failed")


@pytest.fixture(scope="module")
def tests_of(tmp_path_factory):
    """Otter's test file of ``(assignment, question)``, read from the shipped public tests."""
    from otter.nbmeta_config import NBMetadataConfig
    from otter.test_files import create_test_file

    folder = tmp_path_factory.mktemp("public")

    def load(assignment: str, question: str):
        write_public_tests(assignment, folder / assignment)
        return create_test_file(str(folder / assignment / f"{question}.py"), NBMetadataConfig({}))

    return load


def _shown(result) -> str:
    text, page = repr(result), result._repr_html_()
    for english in ENGLISH:
        assert english not in text and english not in html.unescape(page), english
    return text


def _count_orderings(tokens):
    result = math.factorial(len(tokens))
    for count in Counter(tokens).values():
        result //= math.factorial(count)
    return result


def test_a_right_answer_passes_as_in_otters_own_run(tests_of):
    test_file = tests_of("ch01_nlp_and_sequences", "q1")
    result = run_checks("q1", test_file, {"count_orderings": _count_orderings})
    test_file.run({"count_orderings": _count_orderings})  # otter's own verdicts
    assert result.passed_all and test_file.passed_all
    text = _shown(result)
    assert text.startswith("문제 1 (q1): 공개 테스트 2개를 모두 통과했습니다.")
    assert "✅ 문제 1의 공개 테스트를 통과했습니다." in text


def test_a_blank_or_missing_answer_is_named_without_running_the_test(tests_of):
    test_file = tests_of("ch01_nlp_and_sequences", "q1")

    def count_orderings(tokens): ...

    def with_pass(tokens):
        """Only a docstring."""

    for env in [{"count_orderings": count_orderings}, {"count_orderings": with_pass}]:
        result = run_checks("q1", test_file, env)
        text = _shown(result)
        assert not result.passed_all and "1개를 통과했습니다" in text  # the rules case passes
        assert "❌ 아직 채우지 않은 답: count_orderings." in text
        assert "두 번 세지" not in text  # the wrong-answer hint would mislead here
    text = _shown(run_checks("q1", test_file, {}))
    assert "❌ 아직 정의되지 않은 이름: count_orderings. 답 셀을 실행했나요?" in text
    quiz = _shown(run_checks("q4", tests_of("ch01_nlp_and_sequences", "q4"), {"q4_answer": ...}))
    assert "아직 채우지 않은 답: q4_answer" in quiz


def test_an_answer_that_raises_gets_the_call_the_error_and_its_own_line(tests_of):
    def count_orderings(tokens):
        n = len(tokens)
        return n / 0

    text = _shown(run_checks("q1", tests_of("ch01_nlp_and_sequences", "q1"), locals()))
    assert "이 호출에서 오류가 났습니다: count_orderings(['dog', 'bites', 'man'])" in text
    assert "ZeroDivisionError: division by zero" in text
    assert "오류가 난 줄(count_orderings 안" in text and "return n / 0" in text


def test_a_missing_return_is_named_with_the_call_and_what_came_back(tests_of):
    def count_orderings(tokens):
        math.factorial(len(tokens))

    text = _shown(run_checks("q1", tests_of("ch01_nlp_and_sequences", "q1"), locals()))
    assert "결과 None" in text  # the test's own Korean message
    assert "count_orderings의 반환값이 None입니다: return 문을 빠뜨리지 않았나요?" in text

    def bptt_step(dh, h_prev, h, x, W_hh):
        np.zeros(1)

    text = _shown(run_checks("q1", tests_of("ch07_bptt", "q1"), locals()))
    # the test itself raised on what came back (len(None)): the call and the value are named
    assert "답이 돌려준 값을 테스트가 확인하다 오류가 났습니다: TypeError" in text
    assert "마지막 호출: bptt_step(ndarray(모양 (2, 4), float64)," in text
    assert "→ 돌려준 값: None" in text and "bptt_step의 반환값이 None입니다" in text


def test_values_and_calls_are_shown_short():
    assert shown(np.zeros((3, 4), dtype=np.float32)) == "ndarray(모양 (3, 4), float32)"
    assert shown(1.5) == "1.5" and shown(None) == "None"
    long = shown(list(range(1000)))
    assert len(long) < 60 and long.endswith("...]")
    assert shown("가" * 1000).count("가") < 70
    assert question_label("q12") == "문제 12 (q12)" and question_label("intro") == "intro"


def test_the_grader_checks_a_notebook_and_names_unknown_questions(tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)  # otter logs into the working folder

    from conftest import ROOT

    shutil.copy(ROOT / "notebooks" / "ch01_nlp_and_sequences.ipynb", tmp_path)
    grader = Grader("ch01_nlp_and_sequences", tmp_path)
    assert grader.questions()[:2] == ["q1", "q2"] and len(grader.questions()) >= 6
    result = grader.check("q1", {"count_orderings": _count_orderings})
    assert result.passed_all
    everything = grader.check_all({"count_orderings": _count_orderings})
    assert [r.question for r in everything.results] == grader.questions()
    assert repr(everything).splitlines()[0].startswith("✅ 문제 1 (q1)")
    assert not everything.passed_all  # the other answers are blank
    with pytest.raises(ValueError, match=r"q99이라는 문항이 없습니다\. 있는 문항: q1, q2"):
        grader.check("q99", {})
    with pytest.raises(TypeError, match="question must be a name"):
        grader.check("../q1", {})


def test_what_the_answer_raises_is_its_own_even_an_assert_or_sys_exit(tests_of):
    """An assert inside the answer is the answer's error, not the test's message; sys.exit is
    a failure, not a crash of the notebook; a class's error is placed in the answer."""
    import sys

    test_file = tests_of("ch01_nlp_and_sequences", "q1")

    def count_orderings(tokens):
        assert len(tokens) < 2, "토큰이 너무 많음"

    text = _shown(run_checks("q1", test_file, {"count_orderings": count_orderings}))
    assert "이 호출에서 오류가 났습니다: count_orderings(['dog', 'bites', 'man'])" in text
    assert "AssertionError: 토큰이 너무 많음" in text and "assert len(tokens) < 2" in text

    def exits(tokens):
        sys.exit("그만")

    text = _shown(run_checks("q1", test_file, {"count_orderings": exits}))
    assert "SystemExit: 그만" in text

    class Counter:  # a class is passed as it is (tests may check isinstance)
        def __init__(self, tokens):
            self.n = 1 / 0

    text = _shown(run_checks("q1", test_file, {"count_orderings": Counter}))
    assert "답의 코드에서 오류가 났습니다: ZeroDivisionError" in text and "self.n = 1 / 0" in text


def test_partials_and_cached_functions_are_recorded_and_odd_values_shown(tests_of):
    import functools

    test_file = tests_of("ch01_nlp_and_sequences", "q1")
    partial = functools.partial(lambda tokens, scale: None, scale=2)
    text = _shown(run_checks("q1", test_file, {"count_orderings": partial}))
    assert "count_orderings의 반환값이 None입니다" in text
    cached = functools.lru_cache(_count_orderings)
    text = _shown(run_checks("q1", test_file, {"count_orderings": cached}))
    assert "이 호출에서 오류가 났습니다: count_orderings(['dog', 'bites', 'man'])" in text
    assert "TypeError: unhashable type: 'list'" in text
    huge = _shown(run_checks("q1", test_file, {"count_orderings": lambda tokens: 10**5000}))
    assert "ValueError" in huge  # the test's own message failed on it; shown, not a crash
    assert shown(np.float32(4.5)) == "float32(4.5, float32)" and shown(np.arange(3)) == (
        "ndarray([0, 1, 2], int64)"
    )


def test_on_colab_another_exercises_tests_do_not_stay(tmp_path):
    write_public_tests("ch04_word2vec", tmp_path)
    assert (tmp_path / "q8.py").is_file()
    (tmp_path / "notes.py").write_text("x = 1")
    (tmp_path / "q9.py").write_text("# a student's own file")
    write_public_tests("ch05_language_models", tmp_path)
    import json

    from course_tools import student

    shipped = json.loads(
        (Path(student.__file__).parent / "public_tests" / "ch05_language_models.json").read_text()
    )
    left = sorted(p.stem for p in tmp_path.glob("q*.py"))
    assert left == sorted([*shipped, "q9"])  # only otter's tests of other questions go
    assert (tmp_path / "notes.py").is_file()
