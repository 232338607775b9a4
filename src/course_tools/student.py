"""What a student notebook's set-up cell calls: :func:`notebook_named`.

A browser that downloads a notebook twice names the copy ``ch09_seq2seq (1).ipynb``;
otter then cannot find the notebook whose metadata holds the tests, and every
``grader.check`` after it fails with ``NameError``. The set-up cell asks for the
notebook by its exercise name instead, and this finds it under any file name.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["notebook_named"]


def _assignment_of(path: Path) -> str | None:
    """The ``metadata.otter.assignment_name`` of a notebook file, or None."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        name = notebook["metadata"]["otter"]["assignment_name"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None


def notebook_named(assignment: str, folder: str | Path = ".") -> str:
    """The file of exercise ``assignment``'s notebook in ``folder``, even if it was renamed.

    ``{assignment}.ipynb`` if it is there; otherwise the one notebook of ``folder``
    whose otter metadata names ``assignment`` (and a Korean note says which file
    it is). A Korean error says what to do when there is none, or more than one.
    """
    if not isinstance(assignment, str) or not assignment:
        raise TypeError(f"assignment must be a non-empty str, got {assignment!r}")
    folder = Path(folder)
    exact = folder / f"{assignment}.ipynb"
    if exact.is_file():
        return str(exact) if folder != Path(".") else exact.name
    found = sorted(p for p in folder.glob("*.ipynb") if _assignment_of(p) == assignment)
    if len(found) == 1:
        print(f"노트북 파일 이름이 바뀌어 있어, 이 파일에서 테스트를 읽습니다: {found[0].name}")
        return str(found[0]) if folder != Path(".") else found[0].name
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
