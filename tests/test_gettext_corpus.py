"""The English→Korean corpus from gettext catalogues (course_utils.gettext_corpus).

The parser is checked against the standard library's gettext.GNUTranslations on
every entry of the installed Korean catalogues, and against GNU msgfmt on a file it
compiles; the cleaning rules on hand-made messages; the loader end to end on tiny
.mo files written here.
"""

from __future__ import annotations

import gettext
import os
import shutil
import struct
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from course_utils import gettext_corpus as gc

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------------
# A small .mo writer (the GNU format: magic, revision, N, table offsets, strings)
# ---------------------------------------------------------------------------

HEADER = "Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=1; plural=0;\n"


def mo_key(msgid: str, context: str | None = None, plural: str | None = None) -> str:
    key = msgid if plural is None else f"{msgid}\x00{plural}"
    return key if context is None else f"{context}\x04{key}"


def write_mo(
    path: Path,
    messages: dict[str, str],
    header: str | None = HEADER,
    big_endian: bool = False,
    revision: int = 0,
) -> Path:
    """Write ``{key: translation}`` (keys from :func:`mo_key`) as a .mo file."""
    catalogue = dict(messages)
    if header is not None:
        catalogue[""] = header
    keys = sorted(catalogue, key=lambda k: k.encode())
    originals = [k.encode() for k in keys]
    translations = [catalogue[k].encode() for k in keys]
    order = ">" if big_endian else "<"
    n = len(keys)
    start = 28 + 16 * n
    blob = b""
    tables = []
    for strings in (originals, translations):
        table = []
        for s in strings:
            table.append((len(s), start + len(blob)))
            blob += s + b"\x00"
        tables.append(table)
    head = struct.pack(order + "7I", 0x950412DE, revision, n, 28, 28 + 8 * n, 0, 0)
    body = b"".join(struct.pack(order + "2I", *entry) for table in tables for entry in table)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head + body + blob)
    return path


def locale_with(tmp_path: Path, catalogues: dict[str, dict[str, str]]) -> Path:
    """A locale folder holding ``ko/LC_MESSAGES/<domain>.mo`` for each catalogue."""
    root = tmp_path / "locale"
    for domain, messages in catalogues.items():
        write_mo(root / "ko" / "LC_MESSAGES" / f"{domain}.mo", messages)
    return root


# ---------------------------------------------------------------------------
# The real catalogues
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed() -> dict[str, Path]:
    """The installed Korean catalogues of GETTEXT_PACKAGES; skipped (failed in CI) if none."""
    paths = {d: p for d, p in gc.catalogue_paths().items() if p is not None}
    missing = gc.missing_packages()
    if missing:
        message = (
            f"the Korean gettext catalogues of {missing} are not installed "
            f"(sudo apt-get install {' '.join(missing)}; .ci/run installs them)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return paths


@pytest.fixture(scope="module")
def corpus(installed) -> list[gc.GettextPair]:
    return gc.load_gettext_pairs()


def lookup(translations: gettext.GNUTranslations, entry: gc.MoEntry, n: int = 1) -> str:
    if entry.msgid_plural is None:
        if entry.context is None:
            return translations.gettext(entry.msgid)
        return translations.pgettext(entry.context, entry.msgid)
    if entry.context is None:
        return translations.ngettext(entry.msgid, entry.msgid_plural, n)
    return translations.npgettext(entry.context, entry.msgid, entry.msgid_plural, n)


@pytest.mark.parametrize("domain", ["git", "coreutils", "libc", "glib20", "gtk30", "iso_3166-1"])
def test_read_mo_equals_gnutranslations_on_every_entry(installed, domain):
    path = installed[domain]
    with path.open("rb") as handle:
        translations = gettext.GNUTranslations(handle)
    entries = gc.read_mo(path)
    headers = [e for e in entries if e.msgid == "" and e.context is None]
    assert len(headers) == 1 and "charset=UTF-8" in headers[0].translations[0]
    messages = [e for e in entries if e not in headers]
    assert len(messages) > 50
    for entry in messages:
        if entry.msgid_plural is None:
            assert lookup(translations, entry) == entry.translations[0], entry
            continue
        for n in (1, 2, 5):
            form = entry.translations[translations.plural(n)]
            assert lookup(translations, entry, n) == form, entry
    # Cross-check that no message is missed: GNUTranslations keeps one key per message
    # and plural form in its private _catalog (read only here, never in the module).
    forms = sum(len(e.translations) for e in entries)
    assert len(translations._catalog) == forms


def test_real_catalogues_have_contexts_plurals_and_accelerators(installed):
    gtk = gc.read_mo(installed["gtk30"])
    assert any(e.context == "Stock label" for e in gtk)
    assert any(e.msgid_plural is not None for e in gc.read_mo(installed["git"]))
    assert any("(_" in e.translations[0] and "_" in e.msgid for e in gtk)


def test_real_corpus_is_clean(corpus):
    assert len(corpus) > 10_000
    assert len({tuple(gc.tokenize(p.english)) for p in corpus}) == len(corpus)
    catalogues = {p.catalogue for p in corpus}
    assert catalogues == {d for domains in gc.GETTEXT_PACKAGES.values() for d in domains}
    for english, korean, _ in corpus:
        assert english and korean and english != korean
        assert "\n" not in english + korean and english == english.strip()
        assert any("\uac00" <= ch <= "\ud7a3" for ch in korean)
        assert english.count(gc.PLACEHOLDER) == korean.count(gc.PLACEHOLDER)
        assert "(_" not in korean and "%d" not in english + korean
        assert unicodedata.is_normalized("NFC", english + korean)
        assert max(len(gc.tokenize(english)), len(gc.tokenize(korean))) <= gc.MAX_TOKENS
    pairs = {(p.english, p.korean) for p in corpus}
    assert ("Malta", "몰타") in pairs
    assert (
        "Remote branch <ph> not found in upstream <ph>",
        "리모트의 <ph> 브랜치가 업스트림 <ph>에 없습니다",
    ) in pairs
    # ls --help: the option column "-a, --all" is removed on both sides.
    assert (
        "do not ignore entries starting with .",
        ". (점)으로 시작하는 항목을 무시하지 않습니다",
    ) in pairs


def test_real_corpus_loads_the_same_twice_and_splits_disjointly(corpus):
    assert gc.load_gettext_pairs() == corpus
    splits = gc.gettext_splits(seed=0, pairs=corpus)
    assert gc.gettext_splits(seed=0) == splits
    assert sum(len(s) for s in splits.values()) == len(corpus)
    for name in ("valid", "test"):
        assert 0.08 < len(splits[name]) / len(corpus) < 0.12
    sources = {name: {p.english.lower() for p in s} for name, s in splits.items()}
    assert not sources["train"] & sources["valid"]
    assert not sources["train"] & sources["test"]
    assert not sources["valid"] & sources["test"]


def test_corpus_stats_count_before_and_after_cleaning(installed):
    rows = gc.gettext_corpus_stats(packages=["grep", "iso-codes"])
    assert [r["catalogue"] for r in rows] == ["grep", *gc.GETTEXT_PACKAGES["iso-codes"]]
    for row in rows:
        dropped = row["dropped"]
        assert isinstance(dropped, dict) and isinstance(row["messages"], int)
        assert isinstance(row["pairs"], int) and row["pairs"] > 0
    grep = rows[0]
    assert grep["package"] == "grep" and grep["messages"] > 100


# ---------------------------------------------------------------------------
# The parser on files written here
# ---------------------------------------------------------------------------

HAND_MADE = {
    mo_key("Open"): "열기",
    mo_key("_Open", context="Stock label"): "열기(_O)",
    mo_key("%d file", plural="%d files"): "파일 %d개",
    mo_key("%d row", context="table", plural="%d rows"): "%d행",
    mo_key("Ünïcode “quotes”"): "유니코드 “따옴표”",
}


@pytest.mark.parametrize("big_endian", [False, True])
def test_read_mo_reads_contexts_plurals_and_both_byte_orders(tmp_path, big_endian):
    path = write_mo(tmp_path / "x.mo", HAND_MADE, big_endian=big_endian)
    entries = gc.read_mo(path)
    assert entries[0] == gc.MoEntry(None, "", None, (HEADER,))
    assert set(entries[1:]) == {
        gc.MoEntry(None, "Open", None, ("열기",)),
        gc.MoEntry("Stock label", "_Open", None, ("열기(_O)",)),
        gc.MoEntry(None, "%d file", "%d files", ("파일 %d개",)),
        gc.MoEntry("table", "%d row", "%d rows", ("%d행",)),
        gc.MoEntry(None, "Ünïcode “quotes”", None, ("유니코드 “따옴표”",)),
    }
    with path.open("rb") as handle:
        translations = gettext.GNUTranslations(handle)
    for entry in entries[1:]:
        assert lookup(translations, entry) == entry.translations[0]


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU msgfmt (package gettext) absent")
def test_read_mo_reads_what_gnu_msgfmt_writes(tmp_path):
    po = tmp_path / "x.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
        '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n'
        'msgctxt "menu"\nmsgid "_Open"\nmsgstr "열기(_O)"\n\n'
        'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] "파일 %d개"\nmsgstr[1] "파일들 %d개"\n\n'
        'msgid "Line one\\nline two"\nmsgstr "첫 줄\\n둘째 줄"\n',
        encoding="utf-8",
    )
    subprocess.run(["msgfmt", "-o", str(tmp_path / "x.mo"), str(po)], check=True)
    entries = gc.read_mo(tmp_path / "x.mo")
    assert set(entries[1:]) == {
        gc.MoEntry("menu", "_Open", None, ("열기(_O)",)),
        gc.MoEntry(None, "%d file", "%d files", ("파일 %d개", "파일들 %d개")),
        gc.MoEntry(None, "Line one\nline two", None, ("첫 줄\n둘째 줄",)),
    }


def test_read_mo_rejects_files_that_are_not_mo(tmp_path):
    with pytest.raises(ValueError, match="bad magic number"):
        gc.read_mo(write_bytes(tmp_path / "a.mo", b'msgid ""\nmsgstr ""\n' * 3))
    with pytest.raises(ValueError, match="fewer than its header"):
        gc.read_mo(write_bytes(tmp_path / "b.mo", b"\xde\x12\x04\x95"))
    data = write_mo(tmp_path / "c.mo", HAND_MADE).read_bytes()
    with pytest.raises(ValueError, match="truncated"):
        gc.read_mo(write_bytes(tmp_path / "d.mo", data[:40]))
    with pytest.raises(ValueError, match=r"unsupported \.mo revision 2"):
        gc.read_mo(write_mo(tmp_path / "e.mo", HAND_MADE, revision=2 << 16))


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------
# Cleaning rules
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("english", "korean", "expected"),
    [
        (
            "could not parse %s",
            "%s을(를) 파싱할 수 없습니다",
            ("could not parse <ph>", "<ph>을(를) 파싱할 수 없습니다"),
        ),
        (
            "LOCAL entry for UID %d in %s",
            "%2$s의 UID %1$d번 LOCAL 항목",
            ("LOCAL entry for UID <ph> in <ph>", "<ph>의 UID <ph>번 LOCAL 항목"),
        ),
        (
            "unknown section `%.*s'",
            "알 수 없는 섹션 `%.*s'",
            ("unknown section '<ph>'", "알 수 없는 섹션 '<ph>'"),
        ),
        ("mode %04lo (%-10s)", "모드 %04lo (%-10s)", ("mode <ph> (<ph>)", "모드 <ph> (<ph>)")),
        (
            "Failed to read “%s”: %s\n",
            "파일 “%s”에서 읽기 실패: %s\n",
            ('Failed to read "<ph>": <ph>', '파일 "<ph>"에서 읽기 실패: <ph>'),
        ),
        (
            "Cannot store $stash_sha1",
            '"$stash_sha1"을(를) 저장할 수 없습니다',
            ("Cannot store <ph>", '"<ph>"을(를) 저장할 수 없습니다'),
        ),
        (
            "Dropped ${REV} (%(name)s)",
            "${REV} 지움 (%(name)s)",
            ("Dropped <ph> (<ph>)", "<ph> 지움 (<ph>)"),
        ),
        (
            "Hello {name}, item {0}",
            "{name}님 안녕하세요, 항목 {0}",
            ("Hello <ph>, item <ph>", "<ph>님 안녕하세요, 항목 <ph>"),
        ),
        ("100%% done", "100%% 완료", ("100% done", "100% 완료")),
        ("50% of the disk", "디스크의 50%", ("50% of the disk", "디스크의 50%")),
        ("Loading…", "불러오는 중…", ("Loading...", "불러오는 중...")),
    ],
)
def test_placeholders_become_one_token_on_both_sides(english, korean, expected):
    assert gc.clean_pair(english, korean) == [expected]
    en_tokens, ko_tokens = gc.tokenize(expected[0]), gc.tokenize(expected[1])
    assert en_tokens.count("<ph>") == ko_tokens.count("<ph>") == expected[0].count("<ph>")


@pytest.mark.parametrize(
    ("english", "korean", "expected"),
    [
        ("_Open", "열기(_O)", ("Open", "열기")),
        ("Fo_lder", "폴더(_L)", ("Folder", "폴더")),
        ("Create Fo_lder", "폴더 만들기(_L)", ("Create Folder", "폴더 만들기")),
        ("&Open", "열기(&O)", ("Open", "열기")),
        ("Save &As…", "다른 이름으로 저장(&A)…", ("Save As...", "다른 이름으로 저장...")),
        ("Select Font", "글꼴 선택(_L)", ("Select Font", "글꼴 선택")),
        (
            "Corrupt MERGE_HEAD file",
            "손상된 MERGE_HEAD 파일",
            ("Corrupt MERGE_HEAD file", "손상된 MERGE_HEAD 파일"),
        ),
        ("Fish & Chips", "피시 앤드 칩스", ("Fish & Chips", "피시 앤드 칩스")),
    ],
)
def test_accelerators_are_removed_in_both_styles(english, korean, expected):
    assert gc.clean_pair(english, korean) == [expected]


def test_strip_accelerators_alone():
    assert gc.strip_accelerators("_Open", "열기(_O)") == ("Open", "열기")
    assert gc.strip_accelerators("A_t:", "시각(_T):") == ("At:", "시각:")
    assert gc.strip_accelerators("use_ipv6", "use_ipv6 사용") == ("use_ipv6", "use_ipv6 사용")


def test_multi_line_texts_split_only_when_the_entries_match():
    # A paragraph wraps at different words in each language: its lines are one entry.
    wrapped = "Removes entries from the directory stack. With no\narguments, removes the top."
    ko_wrapped = "디렉터리 스택에서 항목을\n제거합니다. 인자가 없으면 맨 위를 제거합니다."
    assert gc.clean_pair(wrapped, ko_wrapped) == [
        (wrapped.replace("\n", " "), ko_wrapped.replace("\n", " "))
    ]
    paragraphs = "First paragraph.\n\nSecond paragraph."
    assert gc.clean_pair(paragraphs, "첫 문단.\n\n둘째 문단.") == [
        ("First paragraph.", "첫 문단."),
        ("Second paragraph.", "둘째 문단."),
    ]
    assert gc.clean_pair(paragraphs, "첫 문단과 둘째 문단.") == []
    assert gc.drop_reason(paragraphs, "첫 문단과 둘째 문단.") == "line count mismatch"


def test_help_text_options_lose_their_column_and_keep_wrapped_descriptions():
    english = (
        "  -a, --all                  do not ignore entries starting with .\n"
        "  -n, --no-dereference       treat LINK_NAME as a normal file if\n"
        "                               it is a symbolic link to a directory\n"
        "      --check-order\tcheck that the input is correctly sorted\n"
    )
    korean = (
        "  -a, --all                  . 으로 시작하는 항목을 숨기지 않습니다\n"
        "  -n, --no-dereference <링크_이름>이 디렉터리 심볼릭 링크일 경우\n"
        "                               일반 파일로 간주합니다\n"
        "      --check-order\t입력을 제대로 정렬했는지 확인합니다\n"
    )
    assert gc.clean_pair(english, korean) == [
        ("do not ignore entries starting with .", ". 으로 시작하는 항목을 숨기지 않습니다"),
        (
            "treat LINK_NAME as a normal file if it is a symbolic link to a directory",
            "<링크_이름>이 디렉터리 심볼릭 링크일 경우 일반 파일로 간주합니다",
        ),
        ("check that the input is correctly sorted", "입력을 제대로 정렬했는지 확인합니다"),
    ]
    # Rows of a table are entries of their own; a row without Hangul is dropped alone.
    table = "   erase CHAR    CHAR will erase the last character\n   b     512\n"
    ko_table = "   erase <문자>    <문자>로 마지막 문자를 지웁니다\n   b     512\n"
    assert gc.clean_pair(table, ko_table) == [
        ("CHAR will erase the last character", "<문자>로 마지막 문자를 지웁니다")
    ]


@pytest.mark.parametrize(
    ("english", "korean", "reason"),
    [
        ("Vietnam", "", "empty"),
        ("Vietnam", "  \n", "empty"),
        ("\n", "\n", "empty"),
        ("CSS", "CSS", "untranslated"),
        ("%H:%M", "%H:%M", "untranslated"),
        ("Bold", "Gras", "no Hangul"),
        ("%s: %s", "%s → %s 완료", "no English word"),
        ("cannot open %s: %s", "%s을(를) 열 수 없습니다", "placeholder mismatch"),
        ("dirs [-clpv] [+N] [-N]", "dirs [-clpv] [+<갯수>] [-<갯수>]", "command synopsis"),
        ("AIFF/Amiga/Mac audio", "AIFF/Amiga/Mac 오디오", "mostly English"),
        (" ".join(["word"] * 40), " ".join(["낱말"] * 40), "too long"),
    ],
)
def test_bad_pairs_are_dropped_with_their_reason(english, korean, reason):
    assert gc.clean_pair(english, korean) == []
    assert gc.drop_reason(english, korean) == reason


def test_token_limit_and_kept_pairs_have_no_reason():
    assert gc.clean_pair("one two three", "하나 둘 셋", max_tokens=3) == [
        ("one two three", "하나 둘 셋")
    ]
    assert gc.clean_pair("one two three four", "하나 둘 셋 넷", max_tokens=3) == []
    assert gc.drop_reason("Adobe Illustrator document", "Adobe Illustrator 문서") is None
    assert gc.drop_reason("Malta", "몰타") is None


def test_normalise_makes_nfc_plain_quotes_and_single_spaces():
    decomposed = unicodedata.normalize("NFD", "‘한글’  “파일”\t`이름'")
    assert gc.normalise(decomposed) == "'한글' \"파일\" '이름'"
    assert gc.normalise("  a\n b  ") == "a b"


def test_tokenize_words_syllables_and_placeholders():
    assert gc.tokenize("Could not parse <ph>") == ["could", "not", "parse", "<ph>"]
    assert gc.tokenize("<ph>을(를) 파싱할 수 없습니다") == [
        "<ph>",
        "을",
        "(",
        "를",
        ")",
        "파싱할",
        "수",
        "없습니다",
    ]
    assert gc.tokenize("<ph>을 파싱", hangul="syllable") == ["<ph>", "을", "파", "싱"]
    assert gc.tokenize("same <<ph>> element x86 Bokmål") == [
        "same",
        "<",
        "<ph>",
        ">",
        "element",
        "x",
        "86",
        "bokmål",
    ]
    assert gc.tokenize("") == []


def test_public_functions_validate_their_inputs(tmp_path):
    with pytest.raises(TypeError, match="must be a str"):
        gc.tokenize(["a"])
    with pytest.raises(ValueError, match="'word' or 'syllable'"):
        gc.tokenize("a", hangul="char")
    with pytest.raises(TypeError, match="english must be a str"):
        gc.clean_pair(None, "열기")
    with pytest.raises(ValueError, match="max_tokens must be an int >= 1"):
        gc.clean_pair("Open", "열기", max_tokens=0)
    with pytest.raises(ValueError, match="unknown packages \\['gtk'\\]"):
        gc.load_gettext_pairs(packages=["gtk"])
    with pytest.raises(TypeError, match="not one str"):
        gc.missing_packages(packages="git")
    with pytest.raises(TypeError, match="not one path"):
        gc.catalogue_paths(locale_dirs=str(tmp_path))
    pairs = [gc.GettextPair("Open", "열기", "x")]
    with pytest.raises(ValueError, match="valid_fraction must be a number in \\[0, 1\\)"):
        gc.gettext_splits(valid_fraction=1.5, pairs=pairs)
    with pytest.raises(ValueError, match="must be below 1"):
        gc.gettext_splits(valid_fraction=0.5, test_fraction=0.5, pairs=pairs)
    with pytest.raises(TypeError, match="seed must be an int"):
        gc.gettext_splits(seed=True, pairs=pairs)
    with pytest.raises(TypeError, match="pairs must be a list of GettextPair"):
        gc.gettext_splits(pairs=["Open"])
    with pytest.raises(TypeError, match=r"pairs must be a list of GettextPair .*, got int"):
        gc.gettext_splits(pairs=5)  # not iterable: named, not "'int' object is not iterable"
    with pytest.raises(TypeError, match=r"pairs must be a list of GettextPair .*, got generator"):
        gc.gettext_splits(pairs=(pair for pair in pairs))  # would be used up by the check


# ---------------------------------------------------------------------------
# The loader end to end, on catalogues written here
# ---------------------------------------------------------------------------

TINY = {
    "git": {
        mo_key("could not parse %s"): "%s을(를) 파싱할 수 없습니다",
        mo_key("Could Not Parse %d"): "%d을(를) 파싱할 수 없음",  # the same English tokens
        mo_key("%d commit", plural="%d commits"): "커밋 %d개",
        mo_key("untranslated"): "",
        mo_key("CSS"): "CSS",
    },
    "grep": {
        mo_key("could not parse %s"): "다른 번역 %s",  # a duplicate of git's source
        mo_key("_Open", context="Stock label"): "열기(_O)",
        mo_key(
            "Usage: %s [OPTION]...\n  -i, --ignore-case   ignore case\n"
        ): "사용법: %s [<옵션>]...\n  -i, --ignore-case   대소문자 무시\n",
    },
}


def test_loader_end_to_end_on_tiny_catalogues(tmp_path):
    locale = locale_with(tmp_path, TINY)
    pairs = gc.load_gettext_pairs(packages=["git", "grep"], locale_dirs=[locale])
    # Each catalogue is read in msgid (byte) order: "Could Not…" comes before "could not…",
    # which has the same tokens and is dropped as a duplicate, in git and in grep.
    assert pairs == [
        gc.GettextPair("Could Not Parse <ph>", "<ph>을(를) 파싱할 수 없음", "git"),
        gc.GettextPair("Open", "열기", "grep"),
        gc.GettextPair("Usage: <ph> [OPTION]...", "사용법: <ph> [<옵션>]...", "grep"),
        gc.GettextPair("ignore case", "대소문자 무시", "grep"),
    ]
    # Package order decides which duplicate is kept.
    first = gc.load_gettext_pairs(packages=["grep", "git"], locale_dirs=[locale])
    assert [p.catalogue for p in first] == ["grep", "grep", "grep", "grep"]
    assert first[-1] == gc.GettextPair("could not parse <ph>", "다른 번역 <ph>", "grep")
    stats = gc.gettext_corpus_stats(packages=["git", "grep"], locale_dirs=[locale])
    assert stats == [
        {"package": "git", "catalogue": "git", "messages": 5, "pairs": 1,
         "dropped": {"duplicate": 1, "empty": 1, "plural": 1, "untranslated": 1}},
        {"package": "grep", "catalogue": "grep", "messages": 3, "pairs": 3,
         "dropped": {"duplicate": 1}},
    ]  # fmt: skip
    assert gc.missing_packages(["git", "grep", "bash"], [locale]) == ["bash"]
    # The first locale folder that has a catalogue wins; an absent folder is skipped.
    paths = gc.catalogue_paths(["git"], [tmp_path / "absent", locale])
    assert paths == {"git": locale / "ko" / "LC_MESSAGES" / "git.mo"}


def test_loader_reads_what_it_finds_and_missing_packages_names_the_rest(tmp_path):
    locale = locale_with(tmp_path, {"grep": TINY["grep"]})
    pairs = gc.load_gettext_pairs(packages=["git", "grep"], locale_dirs=[locale])
    assert {p.catalogue for p in pairs} == {"grep"}
    assert gc.missing_packages(["git", "grep"], [locale]) == ["git"]


def test_no_catalogue_raises_an_error_naming_the_packages_to_install(tmp_path):
    empty = tmp_path / "empty-locale"
    empty.mkdir()
    assert gc.missing_packages(locale_dirs=[empty]) == list(gc.GETTEXT_PACKAGES)
    with pytest.raises(gc.GettextCatalogueNotFoundError) as error:
        gc.load_gettext_pairs(locale_dirs=[empty])
    assert isinstance(error.value, FileNotFoundError)
    message = str(error.value)
    assert f"sudo apt-get install {' '.join(gc.GETTEXT_PACKAGES)}" in message
    assert str(empty) in message and "language-pack-ko-base" in message
    with pytest.raises(FileNotFoundError, match="apt-get install git"):
        gc.gettext_splits(packages=["git"], locale_dirs=[empty])


def test_splits_are_deterministic_disjoint_and_stable(tmp_path):
    pairs = [gc.GettextPair(f"message number {i}", f"메시지 {i}번", "x") for i in range(2000)]
    splits = gc.gettext_splits(seed=0, pairs=pairs)
    assert splits == gc.gettext_splits(seed=0, pairs=list(pairs))
    assert sorted(p for s in splits.values() for p in s) == sorted(pairs)
    names = {p.english: name for name, s in splits.items() for p in s}
    assert len(names) == len(pairs)
    assert 150 < len(splits["test"]) < 250 and 150 < len(splits["valid"]) < 250
    # A sentence's split depends on itself and the seed, not on the other pairs.
    half = gc.gettext_splits(seed=0, pairs=pairs[::2])
    assert all(names[p.english] == name for name, s in half.items() for p in s)
    other = gc.gettext_splits(seed=1, pairs=pairs)
    assert other["test"] != splits["test"]
    # Pairs whose English differs only in case share a split.
    twins = [
        gc.GettextPair("Open File", "파일 열기", "a"),
        gc.GettextPair("open file", "파일을 엶", "b"),
    ]
    for seed in range(20):
        split = gc.gettext_splits(seed=seed, pairs=twins)
        assert sorted(len(s) for s in split.values()) == [0, 0, 2]
    assert gc.gettext_splits(valid_fraction=0, test_fraction=0, pairs=pairs)["train"] == pairs


def test_command_line_prints_the_missing_packages():
    run = subprocess.run(
        [sys.executable, "-m", "course_utils.gettext_corpus"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert run.stdout.split() == gc.missing_packages()


def test_read_mo_names_the_file_for_an_unknown_charset_or_bad_bytes(tmp_path):
    unknown = write_mo(
        tmp_path / "unknown.mo", {"Open": "열기"}, header="Content-Type: text/plain; charset=NOPE\n"
    )
    with pytest.raises(
        ValueError, match=r"unknown\.mo: its header names an unknown charset 'NOPE'"
    ):
        gc.read_mo(unknown)
    latin = write_mo(
        tmp_path / "latin.mo", {"Open": "열기"}, header="Content-Type: text/plain; charset=ASCII\n"
    )
    with pytest.raises(ValueError, match=r"latin\.mo: string \d+ is not valid ASCII"):
        gc.read_mo(latin)


def test_gettext_splits_names_pairs_that_are_not_gettext_pairs():
    with pytest.raises(TypeError, match="pairs must be a list of GettextPair"):
        gc.gettext_splits(pairs=[("Open", "열기")])  # a plain tuple has no .english
