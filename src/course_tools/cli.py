"""Command line: ``python -m course_utils doctor`` and ``python -m course_utils grade``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_tools import grading


def _chapter_zip(chapter: str) -> Path | None:
    """The autograder zip of ``chapter``, or None after printing what the valid names are."""
    from course_tools.exercises import DIST_DIR, MASTERS_DIR, autograder_zip

    root = Path.cwd()
    known = sorted(p.stem for p in (root / MASTERS_DIR).glob("ch*.md"))
    built = sorted(p.name for p in (root / DIST_DIR).glob("ch*") if p.is_dir())
    if chapter not in known and chapter not in built:
        names = ", ".join(known or built) or "none here (run from the repository root)"
        close = [n for n in known or built if n.startswith(chapter) or chapter in n]
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        print(f"no exercise named {grading.printable(chapter, 80)!r}.{hint}", file=sys.stderr)
        print(f"exercises: {names}", file=sys.stderr)
        return None
    try:
        return autograder_zip(root / DIST_DIR / chapter)
    except FileNotFoundError:
        print(
            f"{chapter} has no autograder zip yet: run `make exercises` (it builds dist/)",
            file=sys.stderr,
        )
        return None


def _grade(args: argparse.Namespace) -> int:
    if args.autograder is not None:
        zip_path = args.autograder
    elif args.chapter is not None:
        found = _chapter_zip(args.chapter)
        if found is None:
            return 2
        zip_path = found
    else:
        print("give --chapter NAME (after `make exercises`) or --autograder ZIP", file=sys.stderr)
        return 2
    out: Path = args.out
    items_csv = out.with_name(f"{out.stem}-items.csv")
    items_html = out.with_name(f"{out.stem}-items.html")
    try:  # before grading: a class's results are never lost to a missing folder
        out.parent.mkdir(parents=True, exist_ok=True)
        for path in (out, items_csv, items_html):
            with open(path, "a", encoding="utf-8"):
                pass
    except OSError as error:
        print(f"cannot write the results to {out}: {error}", file=sys.stderr)
        return 2
    try:
        results = grading.grade_batch(
            args.submissions,
            zip_path,
            jobs=args.jobs,
            timeout_s=args.timeout,
            memory_mb=args.memory_mb,
            unsafe=args.unsafe,
        )
    except grading.SandboxUnavailable as error:
        for path in (out, items_csv, items_html):
            if path.exists() and path.stat().st_size == 0:
                path.unlink()
        print(f"refusing to grade: {error}", file=sys.stderr)
        return 2
    grading.write_csv(results, out)
    grading.write_item_analysis(results, items_csv, items_html)
    failed = [r for r in results if r.status != "ok"]
    print(f"graded {len(results)} submissions → {out} ({len(failed)} not ok)")
    print(f"item analysis → {items_csv}, {items_html}")
    print(f"sandbox: {results[0].sandbox}")
    for result in results:
        print(f"  {result.summary()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils")
    commands = parser.add_subparsers(dest="command", required=True)

    doctor = commands.add_parser(
        "doctor", help="check the course environment and say how to fix it"
    )
    doctor.add_argument("--quick", action="store_true", help="skip starting the JVM and KoNLPy")
    doctor.add_argument("--english", action="store_true", help="report in English (default Korean)")

    grade = commands.add_parser("grade", help="grade a folder of submitted notebooks into one CSV")
    grade.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    grade.add_argument("--chapter", help="exercise name, e.g. ch02_tokenization")
    grade.add_argument("--autograder", type=Path, help="autograder zip (instead of --chapter)")
    grade.add_argument("--out", type=Path, default=Path("grades.csv"), help="CSV to write")
    grade.add_argument("--jobs", type=int, default=None, help="parallel graders (default: CPUs)")
    grade.add_argument(
        "--timeout",
        type=float,
        default=grading.DEFAULT_TIMEOUT_S,
        help="seconds of the submission's own code (default 300)",
    )
    grade.add_argument(
        "--memory-mb",
        type=int,
        default=grading.DEFAULT_MEMORY_MB,
        help="memory cap for each submission as a whole, in MiB (default 4096)",
    )
    grade.add_argument(
        "--unsafe",
        action="store_true",
        help="run students' code without the sandbox (a trusted local check only; the CSV says so)",
    )

    args = parser.parse_args(argv)
    if args.command == "doctor":
        from course_tools.doctor import run_doctor

        return run_doctor(quick=args.quick, english=args.english)
    return _grade(args)


if __name__ == "__main__":
    sys.exit(main())
