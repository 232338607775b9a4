"""Command line: ``python -m course_utils doctor`` and ``python -m course_utils grade``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_tools import grading


def _grade(args: argparse.Namespace) -> int:
    from course_tools.exercises import DIST_DIR, autograder_zip

    if args.autograder is not None:
        zip_path = args.autograder
    elif args.chapter is not None:
        zip_path = autograder_zip(Path.cwd() / DIST_DIR / args.chapter)
    else:
        print("give --chapter NAME (after `make exercises`) or --autograder ZIP", file=sys.stderr)
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
        print(f"refusing to grade: {error}", file=sys.stderr)
        return 2
    grading.write_csv(results, args.out)
    failed = [r for r in results if r.status != "ok"]
    print(f"graded {len(results)} submissions → {args.out} ({len(failed)} not ok)")
    print(f"sandbox: {results[0].sandbox}")
    for result in results:
        note = f"  [{result.status}: {result.reason}]" if result.status != "ok" else ""
        print(f"  {result.submission}: {result.total:g}/{result.max_total:g}{note}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils")
    commands = parser.add_subparsers(dest="command", required=True)

    doctor = commands.add_parser(
        "doctor", help="check the course environment and say how to fix it"
    )
    doctor.add_argument("--quick", action="store_true", help="skip starting the JVM and KoNLPy")

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

        return run_doctor(quick=args.quick)
    return _grade(args)


if __name__ == "__main__":
    sys.exit(main())
