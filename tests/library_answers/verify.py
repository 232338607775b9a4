"""Grade one chapter's library answers with and without its rules; print what each earned.

Usage (from the repository root, after `make exercises`):
``.venv/bin/python tests/library_answers/verify.py ch06_rnn``
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def library_answers(chapter: str) -> list[tuple[str, str, str, str]]:
    path = ROOT / "tests" / "library_answers" / f"{chapter}.py"
    spec = importlib.util.spec_from_file_location(f"library_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LIBRARY


def replace_cell(notebook: dict, marker: str, source: str) -> dict:
    copy = json.loads(json.dumps(notebook))
    cells = [
        c for c in copy["cells"] if c["cell_type"] == "code" and marker in "".join(c["source"])
    ]
    if len(cells) != 1:
        raise ValueError(f"{marker!r} is in {len(cells)} code cells of the solution, not 1")
    cells[0]["source"] = source
    return copy


def without_rules(autograder_zip: Path, folder: Path) -> Path:
    """A copy of the autograder zip without its rules: what grading looked like before them."""
    target = folder / autograder_zip.name
    with zipfile.ZipFile(autograder_zip) as source, zipfile.ZipFile(target, "w") as copy:
        for item in source.infolist():
            if item.filename != "rules.json":
                copy.writestr(item, source.read(item.filename))
    return target


def main(chapter: str) -> int:
    from course_tools import exercises, grading

    dist = ROOT / exercises.DIST_DIR / chapter
    zip_path = exercises.autograder_zip(dist)
    solution = json.loads((dist / "autograder" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    answers = library_answers(chapter)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "subs"
        folder.mkdir()
        for i, (question, marker, source, _) in enumerate(answers):
            notebook = replace_cell(solution, marker, source)
            (folder / f"library-{question}-{i}.ipynb").write_text(json.dumps(notebook))
        ruled = grading.grade_batch(folder, zip_path, jobs=2, timeout_s=120)
        free = grading.grade_batch(
            folder, without_rules(zip_path, Path(tmp)), jobs=2, timeout_s=120, unsafe=True
        )
    by_name = {r.submission: r for r in free}
    ok = True
    for result, (question, _, _, rule) in zip(
        sorted(ruled, key=lambda r: int(r.submission.split("-")[-1].split(".")[0])),
        answers,
        strict=True,
    ):
        other = by_name[result.submission]
        named = any(f"`{rule}" in b for b in result.rule_breaks.get(question, []))
        good = (
            result.scores[question] == 0
            and named
            and other.scores[question] == other.possible[question]
        )
        ok &= good
        print(
            f"{'ok ' if good else 'BAD'} {result.submission}: with rules {result.scores[question]:g}"
            f" (rule named: {named}), without rules {other.scores[question]:g}"
            f"/{other.possible[question]:g}"
        )
        if not good:
            print("    with rules:", result.reason[:300], result.failures[:2])
            print("    without rules:", other.reason[:300], other.failures[:3])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
