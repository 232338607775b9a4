"""2장 텍스트 전처리와 토큰화: cleaning, normalization and tokenizers.

English tokenizers are written from scratch (whitespace, punctuation and the
Penn Treebank rules) and checked against NLTK; Korean is split into morphemes
by KoNLPy's analyzers behind one interface, :class:`MorphTokenizer`.
"""

from __future__ import annotations

import functools
import re
import shutil
import statistics
import time
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from course_utils.checks import check_int

__all__ = [
    "ANALYZERS",
    "AnalyzerTiming",
    "JavaNotFoundError",
    "MorphTokenizer",
    "clean_text",
    "fold_case",
    "java_status",
    "josa",
    "load_analyzer",
    "normalize",
    "punctuation_tokenize",
    "rule_tokenize",
    "speed_ratio",
    "time_analyzers",
    "whitespace_tokenize",
]


def _require_str(text: object, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    return text


# ---------------------------------------------------------------------------
# Cleaning and normalization
# ---------------------------------------------------------------------------

# Zero-width characters that copy-pasted web text often carries.
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
_SPACES = re.compile(r"\s+")
# A URL ends before trailing punctuation: "see www.example.org, then" keeps the comma.
# Linear time on any input: no pattern scans a run again from a later start. A URL
# runs to the next space or bracket, then its trailing punctuation is handed back
# (see _drop_url); an address or a tag is tried only where its run of characters
# starts. The result equals the simpler patterns ``\b[\w.+-]+@…`` and ``<[^>]+>``
# (tests/test_text.py checks it), which take quadratic time on long runs.
_URL = re.compile(r"(https?://|www\.)[^\s<>\"]*")
_URL_TRAILING = ".,;:!?')]"
_EMAIL = re.compile(r"(?<![\w.+-])([.+-]*)\b[\w.+-]+@[\w-]+\.[\w.-]+\b")
_HTML_TAG = re.compile(r"<[^<>]+>")


NormalForm = Literal["NFC", "NFKC", "NFD", "NFKD"]


def normalize(text: str, form: NormalForm = "NFC") -> str:
    """Unicode-normalize ``text`` and collapse every run of white space to one space.

    NFC matters for Korean: text from some systems arrives decomposed into jamo
    (``'ㅎ' 'ㅏ' 'ㄴ'`` instead of ``'한'``), and the two spellings compare unequal.
    """
    _require_str(text)
    if form not in ("NFC", "NFKC", "NFD", "NFKD"):
        raise ValueError(f"form must be one of NFC, NFKC, NFD, NFKD, got {form!r}")
    text = unicodedata.normalize(form, text)
    text = _ZERO_WIDTH.sub("", text)
    return _SPACES.sub(" ", text).strip()


def _drop_url(match: re.Match[str]) -> str:
    """A URL becomes a space; punctuation that ends the sentence after it stays."""
    body = match.group()[len(match.group(1)) :]
    kept = body.rstrip(_URL_TRAILING)
    if not kept:  # a bare prefix ("http://" then punctuation) is not a URL
        return match.group()
    return " " + body[len(kept) :]


def clean_text(
    text: str,
    *,
    remove_urls: bool = True,
    remove_emails: bool = True,
    remove_html: bool = True,
) -> str:
    """Remove URLs, e-mail addresses and HTML tags, then :func:`normalize`."""
    _require_str(text)
    if remove_html:
        text = _HTML_TAG.sub(" ", text)
    if remove_urls:
        text = _URL.sub(_drop_url, text)
    if remove_emails:
        text = _EMAIL.sub(lambda m: m.group(1) + " ", text)  # punctuation before it stays
    return normalize(text)


def fold_case(tokens: Iterable[str], keep_acronyms: bool = True) -> list[str]:
    """Lower-case tokens, optionally keeping all-capital acronyms such as ``US``.

    Lower-casing merges ``There``/``there`` (good: same word) but also
    ``US``/``us`` (bad: different words). Keeping tokens of two or more capital
    letters is the usual compromise.
    """
    if isinstance(tokens, str):
        raise TypeError("tokens must be list[str], not a str: tokenize the text first")
    folded = []
    for token in tokens:
        _require_str(token, "each token")
        if keep_acronyms and len(token) >= 2 and token.isupper():
            folded.append(token)
        else:
            folded.append(token.lower())
    return folded


# ---------------------------------------------------------------------------
# English tokenizers
# ---------------------------------------------------------------------------

_WORD_OR_PUNCT = re.compile(r"\w+|[^\w\s]+")


def whitespace_tokenize(text: str) -> list[str]:
    """Split on white space only: ``"Let's tokenize!"`` → ``["Let's", "tokenize!"]``."""
    return _require_str(text).split()


def punctuation_tokenize(text: str) -> list[str]:
    """Split into runs of word characters and runs of punctuation.

    ``"Isn't"`` → ``["Isn", "'", "t"]``; the same rule as NLTK's ``wordpunct_tokenize``.
    """
    return _WORD_OR_PUNCT.findall(_require_str(text))


# The Penn Treebank tokenization rules (the original sed script by Robert
# MacIntyre), as (pattern, replacement) pairs applied in order.
_TREEBANK_STARTING_QUOTES = [
    (re.compile(r'^"'), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r'([ (\[{<])(")'), r"\1 `` "),
]
_TREEBANK_PUNCTUATION = [
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.\.\."), r" ... "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    # Split the final period only: "Mr." inside a sentence stays whole.
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
]
_TREEBANK_BRACKETS = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
_TREEBANK_DOUBLE_DASH = (re.compile(r"--"), r" -- ")
_TREEBANK_ENDING_QUOTES = [
    (re.compile(r'"'), " '' "),
    (re.compile(r"(\S)('')"), r"\1 \2 "),
    # Clitics: it's, I'm, we'd, we'll, you're, I've, isn't.
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
# Words the Treebank splits although no apostrophe marks them.
_TREEBANK_CONTRACTIONS = [
    re.compile(pattern, flags=re.IGNORECASE)
    for pattern in (
        r"\b(can)(not)\b",
        r"\b(d)('ye)\b",
        r"\b(gim)(me)\b",
        r"\b(gon)(na)\b",
        r"\b(got)(ta)\b",
        r"\b(lem)(me)\b",
        r"\b(more)('n)\b",
        r"\b(wan)(na)(?=\s)",
        r" ('t)(is)\b",
        r" ('t)(was)\b",
    )
]


def rule_tokenize(text: str) -> list[str]:
    """Tokenize English with the Penn Treebank rules.

    ``"Let's tokenize! Isn't this easy?"`` →
    ``['Let', "'s", 'tokenize', '!', 'Is', "n't", 'this', 'easy', '?']``.
    Clitics (``'s``, ``n't``, ``'ll``) become tokens of their own, punctuation is
    split off, and only the text's final period is separated, so ``Mr.`` survives (and so
    does the period of any sentence but the last: split sentences first).
    """
    text = _require_str(text)
    for pattern, replacement in _TREEBANK_STARTING_QUOTES:
        text = pattern.sub(replacement, text)
    for pattern, replacement in _TREEBANK_PUNCTUATION:
        text = pattern.sub(replacement, text)
    pattern, replacement = _TREEBANK_BRACKETS
    text = pattern.sub(replacement, text)
    pattern, replacement = _TREEBANK_DOUBLE_DASH
    text = pattern.sub(replacement, text)
    # Pad so that the clitic rules, which look for a following space, also
    # match at the end of the text.
    text = f" {text} "
    for pattern, replacement in _TREEBANK_ENDING_QUOTES:
        text = pattern.sub(replacement, text)
    for pattern in _TREEBANK_CONTRACTIONS:
        text = pattern.sub(r" \1 \2 ", text)
    return text.split()


# ---------------------------------------------------------------------------
# Korean morphemes (KoNLPy)
# ---------------------------------------------------------------------------

ANALYZERS = ("hannanum", "kkma", "komoran", "okt")
_ANALYZER_CLASSES = {"hannanum": "Hannanum", "kkma": "Kkma", "komoran": "Komoran", "okt": "Okt"}

JAVA_FIX = (
    "KoNLPy needs a Java runtime (JDK 8 or newer). Install one and retry: "
    "Debian/Ubuntu `sudo apt-get install default-jdk`, macOS `brew install openjdk`, "
    "Windows: install a JDK (e.g. Temurin) and set JAVA_HOME to its folder. "
    "On Colab Java is already present."
)


class JavaNotFoundError(RuntimeError):
    """KoNLPy cannot start because no Java runtime was found."""


def java_status() -> tuple[bool, str]:
    """Return ``(ok, detail)``: whether JPype can find a JVM, and where or why not."""
    try:
        import jpype
    except ImportError:
        return False, "JPype1 is not installed: pip install konlpy"
    try:
        path = jpype.getDefaultJVMPath()
    except Exception as error:  # JPype raises its own JVMNotFoundException
        java = shutil.which("java")
        where = f"`java` is at {java} but " if java else "no `java` on PATH and "
        return False, f"{where}JPype could not find a JVM ({error})"
    return True, str(path)


def _start_jvm() -> None:
    """Start KoNLPy's JVM with ``-Xrs`` (if it is not running yet).

    ``-Xrs`` leaves SIGTERM and SIGINT to Python. Without it the JVM's own
    SIGTERM handler can call back into a Python interpreter that is already
    shutting down (a Jupyter kernel being stopped) and crash, leaving an
    ``hs_err_pid*.log`` behind.
    """
    import jpype
    import konlpy.jvm

    if jpype.isJVMStarted():
        return
    start = jpype.startJVM

    def start_without_signal_handlers(*args: Any, **kwargs: Any) -> Any:
        return start(*args, "-Xrs", **kwargs)

    jpype.startJVM = start_without_signal_handlers
    try:
        konlpy.jvm.init_jvm()
    finally:
        jpype.startJVM = start


@functools.cache
def load_analyzer(name: str) -> Any:
    """KoNLPy's analyzer ``name``, started once per process.

    ``load_analyzer.cache_clear()`` forgets the analyzers started so far.
    """
    ok, detail = java_status()
    if not ok:
        raise JavaNotFoundError(f"{detail}. {JAVA_FIX}")
    try:
        import konlpy.tag
    except ImportError as error:  # pragma: no cover - konlpy is in requirements.txt
        raise ImportError("KoNLPy is not installed: pip install konlpy") from error
    _start_jvm()
    return getattr(konlpy.tag, _ANALYZER_CLASSES[name])()


class MorphTokenizer:
    """One interface over KoNLPy's Hannanum, Kkma, Komoran and Okt.

    >>> MorphTokenizer("hannanum")("드디어 교안 다 썼다!")
    ['드디어', '교안', '다', '쓰', '었다', '!']

    The analyzer is created on first use and shared: starting the JVM and
    loading a dictionary takes seconds, tokenizing afterwards is fast.
    """

    def __init__(self, name: str = "okt") -> None:
        if not isinstance(name, str) or name.lower() not in ANALYZERS:
            choices = ", ".join(ANALYZERS)
            raise ValueError(f"analyzer must be one of {choices}, got {name!r}")
        self.name = name.lower()

    @property
    def analyzer(self) -> Any:
        return load_analyzer(self.name)

    def morphs(self, text: str) -> list[str]:
        """Split the text into morphemes (white space is never a token)."""
        return [morpheme for morpheme, _ in self.pos(text)]

    def pos(self, text: str) -> list[tuple[str, str]]:
        """Split the text into (morpheme, part-of-speech tag) pairs.

        Each analyzer has its own tag set (Kkma NNG, Okt Noun, …).
        Okt returns line breaks as tokens; they are dropped here.
        """
        text = _require_str(text)
        if not text.strip():
            return []
        pairs = self.analyzer.pos(text)
        return [(str(m), str(t)) for m, t in pairs if str(m).strip()]

    def __call__(self, text: str) -> list[str]:
        return self.morphs(text)

    def __repr__(self) -> str:
        return f"MorphTokenizer({self.name!r})"


@dataclass(frozen=True)
class AnalyzerTiming:
    """How long one analyzer took on a text, one time per round, and what it produced."""

    name: str
    chars: int  # length of the text
    morphemes: int  # how many morphemes the analyzer split it into
    times: list[float]  # seconds, one per round

    @property
    def seconds(self) -> float:
        """Median time over the rounds."""
        return statistics.median(self.times)

    @property
    def chars_per_second(self) -> float:
        return self.chars / self.seconds


def time_analyzers(
    text: str, names: Sequence[str] = ANALYZERS, repeats: int = 5
) -> dict[str, AnalyzerTiming]:
    """Time each analyzer on ``text``, interleaved: every round runs each analyzer once.

    Each round starts with a different analyzer, so a slow moment of the machine
    does not fall on one analyzer only; an untimed first round warms up the JVM.
    """
    _require_str(text)
    check_int(repeats, "repeats")
    tokenizers = [MorphTokenizer(name) for name in names]
    if not tokenizers or len({t.name for t in tokenizers}) != len(tokenizers):
        raise ValueError(f"names must be distinct analyzers, got {list(names)!r}")
    morphemes = {t.name: len(t.morphs(text)) for t in tokenizers}  # the warm-up round
    times: dict[str, list[float]] = {t.name: [] for t in tokenizers}
    for round_ in range(repeats):
        shift = round_ % len(tokenizers)  # each round starts with the next analyzer
        for tokenizer in tokenizers[shift:] + tokenizers[:shift]:
            start = time.perf_counter()
            tokenizer.morphs(text)
            times[tokenizer.name].append(time.perf_counter() - start)
    return {
        name: AnalyzerTiming(name, len(text), morphemes[name], seconds)
        for name, seconds in times.items()
    }


def speed_ratio(fast: AnalyzerTiming, slow: AnalyzerTiming) -> float:
    """How many times faster ``fast`` is than ``slow``: the median of the per-round ratios."""
    if len(fast.times) != len(slow.times):
        raise ValueError(
            f"timings must come from the same rounds, got {len(fast.times)} and {len(slow.times)}"
        )
    return statistics.median(s / f for f, s in zip(fast.times, slow.times, strict=True))


# ---------------------------------------------------------------------------
# Particles (조사) that depend on the last sound of the word
# ---------------------------------------------------------------------------

# (form after a final consonant, form after a vowel); 으로/로 also takes 로 after ㄹ.
_PARTICLES = {
    p: pair
    for pair in [("은", "는"), ("이", "가"), ("을", "를"), ("과", "와"), ("으로", "로")]
    for p in pair
}
# How digits are read: 영 일 이 삼 사 오 육 칠 팔 구 → the final consonant (0 none, 8 ㄹ).
_DIGIT_FINAL = {"0": 21, "1": 8, "2": 0, "3": 16, "4": 0, "5": 0, "6": 1, "7": 8, "8": 8, "9": 0}
_RIEUL = 8  # ㄹ's index among the 28 finals (0 = none)


def _final_consonant(word: str) -> int:
    """Index of the final consonant (jongseong, 0 = none) of how ``word`` ends when read."""
    last = word.rstrip(" )]}\"'.,!?")[-1:]
    if not last:
        raise ValueError(f"word must end in a letter or a digit, got {word!r}")
    if "가" <= last <= "힣":
        return (ord(last) - ord("가")) % 28
    if last in _DIGIT_FINAL:
        return _DIGIT_FINAL[last]
    if last == "%":  # 퍼센트
        return 0
    if last.isascii() and last.isalpha():
        # A Latin name read as a word ends in ㄴ/ㅁ/ㄹ after n, m, l (komoran → 코모란);
        # any other letter is read as a vowel (kkma → 꼬꼬마, okt → 오케이티).
        return {"n": 4, "m": 16, "l": _RIEUL}.get(last.lower(), 0)
    raise ValueError(f"cannot tell how {word!r} ends when read: pass reading= in Hangul")


def josa(word: str, particle: str, reading: str | None = None) -> str:
    """``word`` followed by the form of ``particle`` its last sound takes.

    ``particle`` is either form of 은/는, 이/가, 을/를, 과/와 or 으로/로:
    ``josa("책", "는")`` is ``"책은"``, ``josa("komoran", "은")`` is ``"komoran은"``.
    ``reading`` gives the Hangul reading when the word is not Korean or a digit.
    """
    _require_str(word, "word")
    if particle not in _PARTICLES:
        raise ValueError(
            f"particle must be one of {', '.join(sorted(_PARTICLES))}, got {particle!r}"
        )
    after_consonant, after_vowel = _PARTICLES[particle]
    final = _final_consonant(_require_str(reading, "reading") if reading is not None else word)
    if after_consonant == "으로":
        return word + ("으로" if final not in (0, _RIEUL) else "로")
    return word + (after_consonant if final else after_vowel)
