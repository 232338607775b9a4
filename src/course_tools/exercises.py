"""Exercise pipeline: otter-grader masters → student notebooks and autograder zips.

Masters live in ``exercises/<chapter>.md`` (MyST Markdown notebooks in otter's
assign format, with solutions and hidden tests). ``build`` turns each into

- ``notebooks/<chapter>.ipynb``: the student notebook, committed, public tests only;
- ``dist/exercises/<chapter>/autograder/<chapter>-autograder_*.zip``: build output
  for grading, never committed or published.

``check`` rebuilds and fails if a committed student notebook is out of date.

Usage: ``python -m course_tools.exercises build|check [--root DIR]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def assign(master: Path, out_dir: Path, run_tests: bool = True) -> Assignment:
    """Run ``otter assign`` on one master, writing into ``out_dir`` (replaced)."""
    master = Path(master)
    name = master.stem
    out_dir = Path(out_dir)
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
    return Assignment(name, student, solution, autograder_zip(out_dir))


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


COLAB_PACKAGES = ("konlpy", "otter-grader", "koreanize-matplotlib")


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
    tests); otter's English note before the check-all cell is dropped (the
    master says it in Korean); the notebook ends with how to submit.
    """
    notebook = normalized_student_notebook(assignment.student_notebook)
    cells = notebook["cells"]
    points = _question_points(assignment.autograder_zip)
    init = next(c for c in cells if c["cell_type"] == "code" and "otter.Notebook(" in _source(c))
    title = next(c for c in cells if c["cell_type"] == "markdown" and _source(c).startswith("# "))
    init["source"] = _source(init).replace(
        "# Initialize Otter", "# 채점 도구를 준비합니다: 아래의 grader.check(...) 셀이 씁니다."
    )
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
    for index, cell in enumerate(notebook["cells"]):
        cell["id"] = f"cell-{index:03d}"
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
    """Assign every master; write student notebooks to ``notebooks/`` and zips to ``dist/``."""
    root = Path(root)
    results = []
    url = repository_url(root)
    for master in _selected(root, only):
        result = assign(master, root / DIST_DIR / master.stem, run_tests=run_tests)
        target = root / NOTEBOOKS_DIR / f"{master.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_dump(dressed_student_notebook(result, url)), encoding="utf-8")
        results.append(result)
    return results


def check(root: Path, only: str | None = None) -> list[str]:
    """Assign every master into ``dist/`` and list committed student notebooks that differ."""
    root = Path(root)
    stale = []
    url = repository_url(root)
    for master in _selected(root, only):
        result = assign(master, root / DIST_DIR / master.stem)
        committed = root / NOTEBOOKS_DIR / f"{master.stem}.ipynb"
        fresh = _dump(dressed_student_notebook(result, url))
        if not committed.is_file() or committed.read_text(encoding="utf-8") != fresh:
            stale.append(str(committed.relative_to(root)))
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.exercises",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["build", "check"])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root")
    parser.add_argument("--only", help="one exercise, e.g. ch06_rnn (default: all)")
    args = parser.parse_args(argv)
    if args.command == "build":
        for result in build(args.root, only=args.only):
            print(f"{result.name}: {NOTEBOOKS_DIR}/{result.name}.ipynb, {result.autograder_zip}")
        return 0
    stale = check(args.root, only=args.only)
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
