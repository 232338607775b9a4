"""The project's set-up promises, checked where they are written down."""

from __future__ import annotations

import re

import yaml
from conftest import ROOT


def _config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def test_requirements_pin_torch_and_jupyter_book_1_and_range_the_rest():
    lines = [
        line.split("#")[0].strip()
        for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    ]
    lines = [line for line in lines if line]
    assert "torch==2.13.0" in lines
    assert any(re.fullmatch(r"jupyter-book>=1[.\d]*,<2", line) for line in lines)
    pinned = [line for line in lines if "==" in line and not line.startswith("torch==")]
    assert pinned == [], f"only torch is pinned exactly: {pinned}"


def test_book_build_is_strict_and_offline():
    config = _config()
    sphinx = config["sphinx"]["config"]
    assert config["execute"]["stderr_output"] == "warn"  # a printed warning fails -W
    assert config["execute"]["allow_errors"] is False
    assert sphinx["nb_execution_raise_on_error"] is True
    assert sphinx["html_copy_source"] is False
    assert sphinx["language"] == "ko"
    assert not sphinx["mathjax_path"].startswith("http")
    assert config["launch_buttons"]["thebe"] is False
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "-W -n --keep-going" in makefile


def test_readme_names_the_two_commands_and_ci_runs_the_test_one():
    for readme in ["README.md", "README.ko.md"]:
        text = (ROOT / readme).read_text(encoding="utf-8")
        assert "make book" in text and "make test" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().endswith("make test") and "set -euo pipefail" in ci
    assert "chromium" in ci


def test_toc_lists_only_pages_that_exist():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]
    for name in files:
        assert any((ROOT / f"{name}{suffix}").is_file() for suffix in (".md", ".ipynb")), name


def test_preface_lists_all_twelve_chapters():
    preface = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    titles = ["자연어와 시퀀스 데이터", "텍스트 전처리와 토큰화", "단어 표현", "Word2Vec",
              "시퀀스 모델과 언어 모델", "RNN", "BPTT", "LSTM과 GRU", "Seq2seq", "어텐션",
              "트랜스포머", "BERT"]  # fmt: skip
    for number, title in enumerate(titles, start=1):
        assert re.search(rf"\|\s*{number}\s*\|\s*{re.escape(title)}", preface), title


def test_course_utils_holds_the_books_code_and_the_machinery_lives_beside_it():
    package = ROOT / "src" / "course_utils"
    machinery = {"grading", "exercises", "doctor", "sandbox", "runner", "wire", "cli"}
    modules = {p.stem for p in package.glob("*.py")}
    assert not modules & machinery, modules & machinery
    assert (package / "__main__.py").read_text(encoding="utf-8").count("\n") < 15  # a shim
    tools = {p.stem for p in (ROOT / "src" / "course_tools").glob("*.py")}
    assert machinery <= tools
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "bubblewrap" in ci


def test_every_exercise_master_uses_the_graders_format():
    for master in sorted((ROOT / "exercises").glob("ch*.md")):
        text = master.read_text(encoding="utf-8")
        assert "ok_format: false" in text, master.name  # exception-based tests, run in the grader
        assert "init_cell: true" in text, master.name


def test_every_benchmark_imports_and_has_a_main(monkeypatch):
    """``make benchmarks`` runs them all; a renamed import must fail here, not there."""
    import importlib.util

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # as when run as a script
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"benchmark_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert callable(getattr(module, "main", None)), path.name
