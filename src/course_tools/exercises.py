"""Exercise pipeline: otter-grader masters → student notebooks and autograder zips.

Masters live in ``exercises/<chapter>.md`` (MyST Markdown notebooks in otter's
assign format, with solutions and hidden tests). ``build`` turns each into

- ``notebooks/<chapter>.ipynb``: the student notebook, committed, public tests only;
- ``dist/exercises/<chapter>/autograder/<chapter>-autograder_*.zip``: build output
  for grading, never committed or published.

``check`` rebuilds and fails if a committed student notebook is out of date. It does not
run the solutions (``otter assign --no-run-tests``) where the grading sandbox starts: there
the test suite grades every solution in it and requires full marks (``tests/test_grading.py``),
which checks more than otter's own run and would repeat it. ``--run-tests``, or a machine
without the sandbox (where those tests are skipped), lets otter run them.

Usage: ``python -m course_tools.exercises build|check [--root DIR] [--only NAME] [--run-tests]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_tools import rules

__all__ = ["Assignment", "assign", "autograder_zip", "build", "check", "masters"]

MASTERS_DIR = "exercises"
NOTEBOOKS_DIR = "notebooks"
DIST_DIR = Path("dist") / "exercises"


@dataclass(frozen=True)
class Assignment:
    """What ``otter assign`` produced for one master."""

    name: str
    student_notebook: Path
    autograder_notebook: Path
    autograder_zip: Path


def masters(root: Path) -> list[Path]:
    """The exercise masters under ``root/exercises``, in chapter order."""
    folder = Path(root) / MASTERS_DIR
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no {MASTERS_DIR}/ folder under {root}: run from the repository root"
        )
    return sorted(folder.glob("ch*.md"))


def _master_to_ipynb(master: Path, target: Path) -> None:
    import jupytext
    import nbformat

    notebook = jupytext.read(master)
    notebook.metadata.pop("jupytext", None)
    for cell in notebook.cells:  # otter refuses keys it does not know: the rules are ours
        if cell.cell_type == "raw":
            cell.source = _without_rules(cell.source)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def _without_rules(config: str) -> str:
    """A raw config cell without its ``rules:`` block (read by :mod:`course_tools.rules`)."""
    lines, kept, inside = config.split("\n"), [], False
    for line in lines:
        if line.startswith("rules:"):
            inside = True
            continue
        if inside and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        inside = False
        kept.append(line)
    return "\n".join(kept)


def assign(master: Path, out_dir: Path, run_tests: bool = True) -> Assignment:
    """Run ``otter assign`` on one master, writing into ``out_dir`` (replaced).

    The master's rules (what each answer may not use, :mod:`course_tools.rules`)
    go into the autograder zip as ``rules.json``, beside the tests. A rule the
    grading sandbox cannot hide raises ``ValueError`` before anything is written.
    """
    import jupytext

    master = Path(master)
    name = master.stem
    out_dir = Path(out_dir)
    # Before anything is written: a rule the sandbox cannot hide is refused (rules.py).
    _, forbid = rules.parse_master_rules(jupytext.read(master))
    rules.Rules(name, forbid).check_enforceable(str(master))
    if out_dir.exists():
        shutil.rmtree(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / f"{name}.ipynb"
        _master_to_ipynb(master, source)
        command = [sys.executable, "-m", "otter", "assign", "--no-pdfs", str(source), str(out_dir)]
        if not run_tests:
            command.insert(-2, "--no-run-tests")
        run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"otter assign failed for {master}:\n{run.stdout}\n{run.stderr}")
    student = out_dir / "student" / f"{name}.ipynb"
    solution = out_dir / "autograder" / f"{name}.ipynb"
    assignment = Assignment(name, student, solution, autograder_zip(out_dir))
    _add_rules(assignment, master, forbid)
    return assignment


def _config_root(master: Path) -> Path:
    """The nearest folder above a master that holds ``_config.yml`` (the repository root)."""
    for folder in Path(master).resolve().parents:
        if (folder / "_config.yml").is_file():
            return folder
    raise FileNotFoundError(f"no _config.yml in any folder above {master}")


def _add_rules(assignment: Assignment, master: Path, forbid: dict[str, list[str]]) -> None:
    """Write the master's rules (``forbid``, read by :func:`assign`) into the autograder zip."""
    import zipfile

    with zipfile.ZipFile(assignment.autograder_zip) as archive:
        names = {
            Path(n).stem: rules.test_parameters(archive.read(n).decode("utf-8"))
            for n in archive.namelist()
            if n.startswith("tests/") and n.endswith(".py")
        }
    student = _dress(assignment, repository_url(_config_root(master)))
    trusted = sorted(
        {
            rules.cell_digest(_source(c))
            for c in student["cells"]
            if c["cell_type"] == "code" and "..." not in _source(c)
        }
    )
    found = rules.Rules(assignment.name, {q: forbid.get(q, []) for q in names}, names, trusted)
    with zipfile.ZipFile(assignment.autograder_zip, "a") as archive:
        archive.writestr(rules.RULES_FILE, found.to_json())


def read_rules(autograder_zip: Path) -> rules.Rules | None:
    """The rules inside an autograder zip, or None for a zip built without them."""
    import zipfile

    with zipfile.ZipFile(autograder_zip) as archive:
        if rules.RULES_FILE not in archive.namelist():
            return None
        return rules.Rules.from_json(archive.read(rules.RULES_FILE).decode("utf-8"))


def autograder_zip(assignment_dir: Path) -> Path:
    """The single autograder zip in an ``otter assign`` output folder."""
    zips = sorted((Path(assignment_dir) / "autograder").glob("*-autograder_*.zip"))
    if len(zips) != 1:
        raise FileNotFoundError(
            f"expected one autograder zip in {assignment_dir}/autograder, found {len(zips)}: "
            "run `make exercises`"
        )
    return zips[0]


def normalized_student_notebook(path: Path) -> dict[str, Any]:
    """The student notebook as committed: no outputs, stable cell ids, no volatile metadata."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    for index, cell in enumerate(notebook["cells"]):
        cell["id"] = f"cell-{index:03d}"
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.setdefault("metadata", {}).pop("execution", None)
    notebook["metadata"].pop("jupytext", None)
    notebook["metadata"]["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    notebook["nbformat"], notebook["nbformat_minor"] = 4, 5
    return notebook


def repository_url(root: Path) -> str:
    """The repository URL set once in ``_config.yml`` (launch buttons, Colab install cell)."""
    import yaml

    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8"))
    try:
        url = config["repository"]["url"]
    except (KeyError, TypeError):
        raise ValueError("_config.yml has no repository: url: setting") from None
    if not isinstance(url, str) or not url.startswith("https://"):
        raise ValueError(f"repository url in _config.yml must be an https URL, got {url!r}")
    return url.rstrip("/")


#: What the Colab install cell adds to the course package, pinned to the versions the course
#: is tested with (tests/test_exercises.py checks them against this environment's).
COLAB_PACKAGES = ("konlpy==0.6.0", "otter-grader==6.1.6", "koreanize-matplotlib==0.1.1")


def colab_install_cell(url: str) -> str:
    """The first code cell of every student notebook: installs the course on Colab only."""
    packages = "".join(f'        "{p}",\n' for p in (f"course-utils @ git+{url}", *COLAB_PACKAGES))
    return (
        "# Colab에서 열었을 때만 강의 패키지를 설치합니다.\n"
        "# 내 컴퓨터에서는 아무 일도 하지 않습니다.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        f"    packages = [\n{packages}    ]\n"
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *packages], check=True)'
    )


def init_cell(assignment: str) -> str:
    """The set-up cell of a student notebook: :class:`course_tools.student.Grader`, which reads
    otter's tests from this exercise's notebook whatever its file name and answers in Korean.
    The grader does not run it (:func:`course_tools.student.is_setup_cell`)."""
    return (
        "# 채점 도구를 준비합니다: 아래의 grader.check(...) 셀이 씁니다.\n"
        '# 파일 이름이 바뀌어도(브라우저가 붙이는 " (1)" 같은) 이 연습 문제의 노트북을 찾고,\n'
        "# 테스트의 결과를 한국어로 알려 줍니다.\n"
        "from course_tools.student import Grader\n"
        "\n"
        f'grader = Grader("{assignment}")'
    )


def _question_points(autograder_zip: Path) -> dict[str, tuple[float, float]]:
    """``{question: (public points, hidden points)}`` from the autograder's test files."""
    import zipfile

    from otter.test_files import ExceptionTestFile

    points = {}
    with zipfile.ZipFile(autograder_zip) as archive:
        for name in archive.namelist():
            if name.startswith("tests/") and name.endswith(".py"):
                tests = ExceptionTestFile.from_string(archive.read(name).decode("utf-8"), name)
                public = sum(t.points for t in tests.test_cases if not t.hidden)
                hidden = sum(t.points for t in tests.test_cases if t.hidden)
                points[Path(name).stem] = (float(public), float(hidden))
    return points


def _markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _number(value: float) -> str:
    return f"{value:g}"


def dressed_student_notebook(assignment: Assignment, url: str) -> dict[str, Any]:
    """The student notebook as students get it.

    On top of otter's: the title first, then a Colab install cell and otter's
    init cell (in Korean); each question states its points (public and hidden
    tests) and what its answer may not use; otter's English note before the
    check-all cell is dropped (the master says it in Korean); ``grader.check``
    also checks each question's rules; the notebook ends with how to submit.
    """
    notebook = _dress(assignment, url)
    found = read_rules(assignment.autograder_zip)
    if found is not None:
        _show_rules(notebook, found)
        _number_cells(notebook)
    return notebook


def _number_cells(notebook: dict[str, Any]) -> None:
    for index, cell in enumerate(notebook["cells"]):
        cell["id"] = f"cell-{index:03d}"


def _show_rules(notebook: dict[str, Any], found: rules.Rules) -> None:
    """The rules once after the title (every question has the same: see
    :meth:`course_tools.rules.Rules.check_enforceable`), and a public rules test per
    question for ``grader.check``."""
    tests = notebook["metadata"]["otter"]["tests"]
    forbid_sets = [set(found.forbid.get(q, [])) for q in tests]
    common = sorted(set.intersection(*forbid_sets)) if forbid_sets else []
    if common:
        listed = ", ".join(f"`{n}`" for n in common)
        cell = _markdown(
            "**규칙**: 모든 문항의 답에서 다음을 쓸 수 없습니다. 채점 환경에는 아예 없고, "
            f"답이 불러오기만 해도 그 문항은 0점입니다: {listed}. "
            "`getattr`에 만든 이름, `importlib`, `eval`처럼 규칙을 피해 가는 방법도 "
            "쓸 수 없습니다. "
            "각 문항의 `grader.check`가 규칙도 미리 확인해 줍니다."
        )
        notebook["cells"].insert(3, cell)  # after the title, the install and init cells
    for cell in notebook["cells"]:
        match = re.fullmatch(r"\s*grader\.check\([\"'](\w+)[\"']\)\s*", _source(cell))
        if not match or match.group(1) not in tests:
            continue
        question = match.group(1)
        forbid = found.forbid.get(question, [])
        if forbid:
            tests[question] += _rules_test(question, forbid, found)


def _rules_test(question: str, forbid: list[str], found: rules.Rules) -> str:
    """A public test case, worth no points, that runs the rules' read in the student's kernel."""
    number = question.lstrip("q")
    return (
        "\n@test_case(points=0, hidden=False,\n"
        f'    success_message="문제 {number}의 답은 규칙을 지킵니다.",\n'
        f'    failure_message="문제 {number}의 답이 규칙을 어깁니다. 채점에서는 0점입니다.")\n'
        f"def test_{question}_rules():\n"
        "    from course_tools.rules import check_here\n"
        f"    check_here({question!r}, {forbid!r}, {found.names.get(question, [])!r},\n"
        f"               {found.trusted!r})\n"
    )


def _dress(assignment: Assignment, url: str) -> dict[str, Any]:
    """The student notebook without its rules (see :func:`dressed_student_notebook`)."""
    notebook = normalized_student_notebook(assignment.student_notebook)
    cells = notebook["cells"]
    points = _question_points(assignment.autograder_zip)
    init = next(c for c in cells if c["cell_type"] == "code" and "otter.Notebook(" in _source(c))
    title = next(c for c in cells if c["cell_type"] == "markdown" and _source(c).startswith("# "))
    init["source"] = init_cell(assignment.name)
    install: dict[str, Any] = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": colab_install_cell(url),
    }
    rest = [
        c
        for c in cells
        if c is not init
        and c is not title
        and not (c["cell_type"] == "markdown" and "To double-check your work" in _source(c))
    ]
    heading: dict[str, Any] | None = None
    for cell in rest:
        text = _source(cell)
        if cell["cell_type"] == "markdown" and text.startswith("## "):
            heading = cell
        match = re.fullmatch(r"\s*grader\.check\([\"'](\w+)[\"']\)\s*", text)
        if match and heading is not None and match.group(1) in points:
            public, hidden = points[match.group(1)]
            line, _, body = _source(heading).partition("\n")
            total_points = _number(public + hidden)
            heading["source"] = (
                f"{line}\n\n**배점 {total_points}점**: "
                f"공개 테스트 {_number(public)}점, 숨은 테스트 {_number(hidden)}점\n{body}"
            )
            heading = None
    total = sum(public + hidden for public, hidden in points.values())
    submit = _markdown(
        "## 제출하기\n\n"
        "1. 메뉴에서 **Kernel → Restart Kernel and Run All Cells**"
        "(Colab에서는 **런타임 → 모두 실행**)를 골라 처음부터 다시 실행하고, "
        "모든 셀이 오류 없이 끝나는지 확인합니다.\n"
        f"2. 노트북을 저장한 뒤, 파일 이름(`{assignment.name}.ipynb`)을 바꾸지 말고 "
        "강사가 안내한 곳에 `.ipynb` 파일을 제출합니다.\n"
        "3. 채점은 공개 테스트와 숨은 테스트로 합니다. "
        "각 문항은 그 문항의 `grader.check` 셀 자리에서 그때까지 정의된 것으로 채점되므로, "
        "문항의 함수는 그 문항의 셀에서 정의하세요. "
        f"총점은 {_number(total)}점입니다.\n"
    )
    notebook["cells"] = [title, install, init, *rest, submit]
    _number_cells(notebook)
    return notebook


def _dump(notebook: dict[str, Any]) -> str:
    return json.dumps(notebook, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _selected(root: Path, only: str | None) -> list[Path]:
    found = masters(root)
    if only is None:
        return found
    chosen = [m for m in found if m.stem == only]
    if not chosen:
        raise ValueError(f"no master named {only!r}: expected one of {[m.stem for m in found]}")
    return chosen


def build(root: Path, run_tests: bool = True, only: str | None = None) -> list[Assignment]:
    """Assign every master; write student notebooks to ``notebooks/``, their public tests to
    ``src/course_tools/public_tests/`` and zips to ``dist/``."""
    root = Path(root)
    url = repository_url(root)
    chosen = _selected(root, only)
    results = _assign_all(root, chosen, run_tests)
    for master, result in zip(chosen, results, strict=True):
        for path, text in _outputs(root, master, dressed_student_notebook(result, url)).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return results


def _assign_all(root: Path, chosen: list[Path], run_tests: bool) -> list[Assignment]:
    """:func:`assign` for each master into ``dist/``, in order: one otter process per CPU core
    at a time, at most four."""
    # Imported once here, not by each thread at the same moment.
    import jupytext  # noqa: F401
    import nbformat  # noqa: F401

    workers = max(1, min(len(chosen), os.cpu_count() or 1, 4))  # sched_getaffinity: Linux only
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(
            pool.map(lambda m: assign(m, root / DIST_DIR / m.stem, run_tests=run_tests), chosen)
        )


#: The public tests of every student notebook, shipped in the package for Colab, where the
#: notebook's file (whose metadata holds them) is not on disk (:mod:`course_tools.student`).
PUBLIC_TESTS_DIR = Path("src") / "course_tools" / "public_tests"


def _outputs(root: Path, master: Path, dressed: dict[str, Any]) -> dict[Path, str]:
    """What a master's assignment writes into the repository: the student notebook and its
    public tests (``{question: test file}`` from the notebook's otter metadata)."""
    return {
        root / NOTEBOOKS_DIR / f"{master.stem}.ipynb": _dump(dressed),
        root / PUBLIC_TESTS_DIR / f"{master.stem}.json": _dump(
            dressed["metadata"]["otter"]["tests"]
        ),
    }


def check(root: Path, only: str | None = None, run_tests: bool = False) -> list[str]:
    """Assign every master into ``dist/`` and list the committed files (student notebooks,
    shipped public tests) that differ from what :func:`build` would write.

    ``run_tests=False`` (the default) skips otter's run of each solution against its tests;
    what ``assign`` writes is the same either way.
    """
    root = Path(root)
    stale = []
    url = repository_url(root)
    chosen = _selected(root, only)
    for master, result in zip(chosen, _assign_all(root, chosen, run_tests), strict=True):
        for path, text in _outputs(root, master, dressed_student_notebook(result, url)).items():
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(root)))
    return stale


def _sandbox_available() -> bool:
    """Whether the grading sandbox starts here. Without it the test suite skips the grading
    tests (a student's machine), so ``check`` lets otter run the solutions instead."""
    from course_tools.sandbox import SandboxUnavailable, isolation

    try:
        isolation()
    except SandboxUnavailable as error:
        print(f"the grading sandbox cannot start ({error}): otter runs the solutions here")
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.exercises",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["build", "check"])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root")
    parser.add_argument("--only", help="one exercise, e.g. ch06_rnn (default: all)")
    parser.add_argument(
        "--run-tests",
        action="store_true",
        help="check: also let otter run each solution against its tests (build always does)",
    )
    args = parser.parse_args(argv)
    if args.command == "build":
        for result in build(args.root, only=args.only):
            print(f"{result.name}: {NOTEBOOKS_DIR}/{result.name}.ipynb, {result.autograder_zip}")
        return 0
    run_tests = args.run_tests or not _sandbox_available()
    stale = check(args.root, only=args.only, run_tests=run_tests)
    if stale:
        print(
            "student notebooks out of date with their masters: " + ", ".join(stale), file=sys.stderr
        )
        print("run `make exercises` and commit the result", file=sys.stderr)
        return 1
    print("student notebooks are up to date with their masters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
