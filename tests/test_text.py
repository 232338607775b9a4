import re
import string
import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from nltk.tokenize import TreebankWordTokenizer, word_tokenize, wordpunct_tokenize

from course_utils import text
from course_utils.datasets import load_lee_corpus
from course_utils.text import (
    ANALYZERS,
    AnalyzerTiming,
    JavaNotFoundError,
    MorphTokenizer,
    clean_text,
    fold_case,
    normalize,
    punctuation_tokenize,
    rule_tokenize,
    speed_ratio,
    time_analyzers,
    whitespace_tokenize,
)

# Text drawn from Latin letters, Hangul, digits, punctuation and white space.
mixed_text = st.text(
    alphabet=st.sampled_from(
        list(string.ascii_letters + string.digits + string.punctuation + " \t\n")
        + list("한국어형태소분석가나다")
    ),
    max_size=60,
)


def test_normalize_composes_decomposed_hangul():
    decomposed = unicodedata.normalize("NFD", "한국어")
    assert decomposed != "한국어"
    assert normalize(decomposed) == "한국어"


def test_normalize_collapses_white_space_and_zero_width():
    assert normalize("  a\u200b b\t\n c ") == "a b c"


def test_clean_text_removes_html_urls_and_emails():
    raw = "<p>안녕</p> see https://example.com/x or www.example.org, mail ta@example.com!"
    assert clean_text(raw) == "안녕 see or , mail !"


def test_fold_case_keeps_acronyms():
    assert fold_case(["There", "US", "us", "I"]) == ["there", "US", "us", "i"]
    assert fold_case(["US"], keep_acronyms=False) == ["us"]


@given(mixed_text)
def test_whitespace_tokenize_equals_str_split(s):
    assert whitespace_tokenize(s) == s.split()


@given(mixed_text)
def test_punctuation_tokenize_matches_nltk_wordpunct(s):
    assert punctuation_tokenize(s) == wordpunct_tokenize(s)


@given(mixed_text)
def test_punctuation_tokenize_keeps_every_non_space_character(s):
    assert "".join(punctuation_tokenize(s)) == "".join(s.split())


def test_rule_tokenize_reproduces_the_chapter_example():
    assert rule_tokenize("Let's tokenize! Isn't this easy?") == [
        "Let", "'s", "tokenize", "!", "Is", "n't", "this", "easy", "?",
    ]  # fmt: skip


def test_rule_tokenize_matches_nltk_treebank_on_the_whole_lee_corpus():
    treebank = TreebankWordTokenizer()
    documents = load_lee_corpus()
    mismatches = [d[:80] for d in documents if rule_tokenize(d) != treebank.tokenize(d)]
    assert mismatches == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Don't be fooled by the dark sounding name, Mr. Jone's Orphanage is as cheery as cheery goes.",
        'She said, "I cannot go -- gonna stay (home) [now]!"',
        "They'll say we'd've done it; it's 5:30, isn't it?",
        "Prices rose 3.5% to $12.50 at the U.S. store...",
    ],
)
def test_rule_tokenize_matches_nltk_word_tokenize_without_punkt(sentence):
    assert rule_tokenize(sentence) == word_tokenize(sentence, preserve_line=True)


@pytest.mark.parametrize(
    "fn", [normalize, clean_text, whitespace_tokenize, punctuation_tokenize, rule_tokenize]
)
def test_text_functions_reject_non_strings(fn):
    with pytest.raises(TypeError, match="must be a str"):
        fn(["not", "a", "string"])


def test_fold_case_rejects_a_plain_string():
    with pytest.raises(TypeError, match="tokenize the text first"):
        fold_case("There")


def test_normalize_rejects_unknown_form():
    with pytest.raises(ValueError, match="NFC"):
        normalize("a", form="NFX")


# --- KoNLPy -----------------------------------------------------------------


def test_hannanum_and_kkma_split_the_issue_example_as_documented():
    sentence = "드디어 교안 다 썼다!"
    assert MorphTokenizer("hannanum")(sentence) == ["드디어", "교안", "다", "쓰", "었다", "!"]
    assert MorphTokenizer("kkma")(sentence) == ["드디어", "교안", "다", "쓰", "었", "다", "!"]


@pytest.mark.parametrize("name", ANALYZERS)
def test_morph_tokenizer_equals_konlpy_itself(name):
    import konlpy.tag

    reference = getattr(
        konlpy.tag,
        {"hannanum": "Hannanum", "kkma": "Kkma", "komoran": "Komoran", "okt": "Okt"}[name],
    )()
    for sentence in ["아버지가방에들어가신다", "나는 배를 먹었다", "모든 국민은 법 앞에 평등하다."]:
        assert MorphTokenizer(name).morphs(sentence) == reference.morphs(sentence)
        assert MorphTokenizer(name).pos(sentence) == [tuple(p) for p in reference.pos(sentence)]


def test_morph_tokenizer_drops_line_breaks_and_handles_empty_text():
    okt = MorphTokenizer("okt")
    assert okt.morphs("국민\n\n헌법") == ["국민", "헌법"]
    assert okt.morphs("   ") == []
    assert okt.pos("") == []


def test_morph_tokenizer_rejects_unknown_analyzer():
    with pytest.raises(ValueError, match="hannanum, kkma, komoran, okt"):
        MorphTokenizer("mecab")


def test_missing_java_raises_an_error_that_names_the_fix(monkeypatch):
    import jpype

    def no_jvm():
        raise jpype.JVMNotFoundException("No JVM shared library file (libjvm.so) found.")

    monkeypatch.setattr(jpype, "getDefaultJVMPath", no_jvm)
    ok, detail = text.java_status()
    assert not ok and "could not find a JVM" in detail
    text.load_analyzer.cache_clear()
    try:
        with pytest.raises(JavaNotFoundError, match="apt-get install default-jdk"):
            MorphTokenizer("okt").morphs("안녕")
    finally:
        monkeypatch.undo()
        text.load_analyzer.cache_clear()
    assert MorphTokenizer("okt").morphs("안녕하세요")  # works again once Java is back


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("국민은헌법의모든 .,가나")), max_size=20))
def test_okt_morphemes_never_contain_white_space(s):
    assert all(m.strip() == m and m for m in MorphTokenizer("okt").morphs(s))


def test_time_analyzers_interleaves_rounds_after_an_untimed_warm_up(monkeypatch):
    calls = []

    def fake_morphs(self, text):
        calls.append(self.name)
        return text.split()

    monkeypatch.setattr(MorphTokenizer, "morphs", fake_morphs)
    timings = time_analyzers("가 나 다", names=["kkma", "okt", "komoran"], repeats=4)
    warm_up, rounds = calls[:3], calls[3:]
    assert warm_up == ["kkma", "okt", "komoran"]
    assert rounds == [
        *["kkma", "okt", "komoran"],
        *["okt", "komoran", "kkma"],
        *["komoran", "kkma", "okt"],
        *["kkma", "okt", "komoran"],
    ]
    assert list(timings) == ["kkma", "okt", "komoran"]
    for name, timing in timings.items():
        assert timing.name == name and timing.chars == 5 and timing.morphemes == 3
        assert len(timing.times) == 4 and all(t >= 0 for t in timing.times)


def test_time_analyzers_counts_the_morphemes_each_analyzer_gives():
    sentence = "아버지가방에들어가신다"
    timings = time_analyzers(sentence, names=["okt", "komoran"], repeats=2)
    for name, timing in timings.items():
        assert timing.morphemes == len(MorphTokenizer(name).morphs(sentence))
        assert timing.chars_per_second == len(sentence) / timing.seconds


def test_speed_ratio_is_the_median_of_per_round_ratios():
    fast = AnalyzerTiming("komoran", 100, 10, [1.0, 2.0, 1.0])
    slow = AnalyzerTiming("kkma", 100, 12, [10.0, 4.0, 30.0])
    assert fast.seconds == 1.0 and slow.seconds == 10.0
    assert speed_ratio(fast, slow) == 10.0  # ratios 10, 2, 30
    with pytest.raises(ValueError, match="same rounds"):
        speed_ratio(fast, AnalyzerTiming("kkma", 100, 12, [1.0]))


def test_time_analyzers_rejects_bad_input():
    with pytest.raises(ValueError, match="repeats"):
        time_analyzers("가", repeats=0)
    with pytest.raises(ValueError, match="distinct"):
        time_analyzers("가", names=["okt", "okt"])
    with pytest.raises(ValueError, match="distinct"):
        time_analyzers("가", names=[])
    with pytest.raises(TypeError, match="must be a str"):
        time_analyzers(["가"])  # type: ignore[arg-type]


def test_konlpy_jvm_leaves_termination_signals_to_python():
    # A fresh interpreter, so that no other test has started the JVM first.
    import subprocess
    import sys

    code = (
        "from course_utils.text import MorphTokenizer; MorphTokenizer('okt').morphs('안녕'); "
        "import jpype; print(list(map(str, jpype.java.lang.management.ManagementFactory"
        ".getRuntimeMXBean().getInputArguments())))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "-Xrs" in run.stdout


# The simpler patterns clean_text used to have: the reference for what it removes.
_OLD_URL = re.compile(r"(?:https?://|www\.)[^\s<>\"]*[^\s<>\".,;:!?')\]]")
_OLD_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b")
_OLD_HTML = re.compile(r"<[^>]+>")


def _old_clean_text(text: str) -> str:
    for pattern in (_OLD_HTML, _OLD_URL, _OLD_EMAIL):
        text = pattern.sub(" ", text)
    return normalize(text)


@settings(max_examples=600)
@given(
    st.text(alphabet="ab.-+@<>/: hwtps()x,!'", max_size=40)
    | st.sampled_from(
        ["see https://a.b/c). ok", "(www.x.y!)", "http://...", "-a.b@c.d.", "..x@y.z", "a <b> c"]
    )
)
def test_clean_text_removes_what_the_simple_patterns_remove(text):
    # The old tag pattern could swallow a "<" that starts no tag ("<a <b>"): compare without it.
    assume(not re.search(r"<[^>]*<", text))
    assert clean_text(text) == _old_clean_text(text)


@pytest.mark.parametrize(
    "run", ["a." * 500_000, "<" * 1_000_000, "www.," * 200_000, "a@b-" * 250_000]
)
def test_clean_text_takes_linear_time_on_long_runs(run):
    # Quadratic patterns would take hours on a megabyte; the alarm turns a hang into a failure.
    import signal

    def too_slow(signum, frame):
        raise TimeoutError("clean_text did not finish within 60 s on 1 MB: not linear")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(60)
    try:
        assert len(clean_text(run)) <= len(run)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


_JOSA_PAIRS = [("은", "는"), ("이", "가"), ("을", "를"), ("과", "와"), ("으로", "로")]


def test_josa_equals_tossi_for_every_hangul_syllable_and_number():
    import tossi

    words = [chr(c) for c in range(ord("가"), ord("힣") + 1)] + [str(n) for n in range(2001)]
    for word in words:
        for pair in _JOSA_PAIRS:
            expected = tossi.postfix(word, pair[0])
            assert text.josa(word, pair[0]) == expected == text.josa(word, pair[1]), (word, pair)


def test_josa_reads_latin_names_and_takes_a_hangul_reading():
    assert text.josa("komoran", "는") == "komoran은" and text.josa("kkma", "은") == "kkma는"
    assert text.josa("hannanum", "가") == "hannanum이" and text.josa("okt", "을") == "okt를"
    assert text.josa("mecab", "는", reading="메캅") == "mecab은"
    assert text.josa("12.3%", "이") == "12.3%가" and text.josa("서울", "으로") == "서울로"


def test_josa_rejects_what_it_cannot_read():
    with pytest.raises(ValueError, match="particle must be one of"):
        text.josa("책", "의")
    with pytest.raises(ValueError, match="pass reading="):
        text.josa("λ", "는")
    with pytest.raises(ValueError, match="must end in a letter"):
        text.josa("", "는")
