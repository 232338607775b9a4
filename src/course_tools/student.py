"""What a student notebook's set-up cell calls: :func:`notebook_named`.

A browser that downloads a notebook twice names the copy ``ch09_seq2seq (1).ipynb``;
otter then cannot find the notebook whose metadata holds the tests, and every
``grader.check`` after it fails with ``NameError``. The set-up cell asks for the
notebook by its exercise name instead, and this finds it under any file name.

On Colab the notebook is not a file at all, and otter reads tests only from a
``tests`` folder there. :func:`notebook_named` then writes the exercise's public
tests (shipped in this package, ``public_tests/``, the same as the notebook's
metadata) into ``./tests`` and returns None, so that otter reads them from there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["notebook_named", "on_colab", "write_public_tests"]


def _assignment_of(path: Path) -> str | None:
    """The ``metadata.otter.assignment_name`` of a notebook file, or None."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        name = notebook["metadata"]["otter"]["assignment_name"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None


def on_colab() -> bool:
    """Whether this kernel is Google Colab's (as otter tells: by the IPython shell's class)."""
    if "google.colab" in sys.modules:
        return True
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    return "google.colab" in str(get_ipython())


def write_public_tests(assignment: str, folder: str | Path = "tests") -> list[Path]:
    """Write exercise ``assignment``'s public test files into ``folder``; their paths."""
    shipped = Path(__file__).parent / "public_tests" / f"{assignment}.json"
    if not shipped.is_file():
        raise FileNotFoundError(
            f"강의 패키지에 연습 문제 {assignment}의 공개 테스트가 없습니다: {shipped}"
        )
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for question, source in json.loads(shipped.read_text(encoding="utf-8")).items():
        path = folder / f"{question}.py"
        path.write_text(source, encoding="utf-8")
        written.append(path)
    return written


def notebook_named(assignment: str, folder: str | Path = ".") -> str | None:
    """The file of exercise ``assignment``'s notebook in ``folder``, even if it was renamed.

    ``{assignment}.ipynb`` if it is there; otherwise the one notebook of ``folder``
    whose otter metadata names ``assignment`` (and a Korean note says which file
    it is). A Korean error says what to do when there is none, or more than one.
    On Colab: the public tests written to ``folder/tests``, and None.
    """
    if not isinstance(assignment, str) or not assignment:
        raise TypeError(f"assignment must be a non-empty str, got {assignment!r}")
    if on_colab():
        write_public_tests(assignment, Path(folder) / "tests")
        return None
    folder = Path(folder)
    exact = folder / f"{assignment}.ipynb"
    if exact.is_file():
        return str(exact)  # Path(".") / name prints as the bare name
    found = sorted(p for p in folder.glob("*.ipynb") if _assignment_of(p) == assignment)
    if len(found) == 1:
        print(f"노트북 파일 이름이 바뀌어 있어, 이 파일에서 테스트를 읽습니다: {found[0].name}")
        return str(found[0])
    if not found:
        raise FileNotFoundError(
            f"이 폴더({folder.resolve()})에 연습 문제 {assignment}의 노트북이 없습니다. "
            f"노트북을 내려받은 폴더에서 Jupyter를 여세요. 원래 파일 이름은 {exact.name}입니다."
        )
    names = ", ".join(p.name for p in found)
    raise ValueError(
        f"이 폴더에 연습 문제 {assignment}의 노트북이 {len(found)}개 있습니다({names}). "
        f"풀고 있는 파일 하나만 남기거나, 그 파일의 이름을 원래대로 바꾸세요: {exact.name}"
    )
