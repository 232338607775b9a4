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


def _dump(notebook: dict[str, Any]) -> str:
    return json.dumps(notebook, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def build(root: Path, run_tests: bool = True) -> list[Assignment]:
    """Assign every master; write student notebooks to ``notebooks/`` and zips to ``dist/``."""
    root = Path(root)
    results = []
    for master in masters(root):
        result = assign(master, root / DIST_DIR / master.stem, run_tests=run_tests)
        target = root / NOTEBOOKS_DIR / f"{master.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            _dump(normalized_student_notebook(result.student_notebook)), encoding="utf-8"
        )
        results.append(result)
    return results


def check(root: Path) -> list[str]:
    """Assign every master into ``dist/`` and list committed student notebooks that differ."""
    root = Path(root)
    stale = []
    for master in masters(root):
        result = assign(master, root / DIST_DIR / master.stem)
        committed = root / NOTEBOOKS_DIR / f"{master.stem}.ipynb"
        fresh = _dump(normalized_student_notebook(result.student_notebook))
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
    args = parser.parse_args(argv)
    if args.command == "build":
        for result in build(args.root):
            print(f"{result.name}: {NOTEBOOKS_DIR}/{result.name}.ipynb, {result.autograder_zip}")
        return 0
    stale = check(args.root)
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
