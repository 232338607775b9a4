"""9장 Seq2seq, 10장 어텐션: an English→Korean parallel corpus from gettext catalogues.

Debian packages ship people's translations of their messages as gettext
catalogues, ``/usr/share/locale/ko/LC_MESSAGES/<domain>.mo``: git's
"Remote branch %s not found in upstream %s" is "리모트의 %s 브랜치가 업스트림 %s에
없습니다", iso-codes' "Republic of Malta" is "몰타 공화국". Read together, the
catalogues of :data:`GETTEXT_PACKAGES` make a parallel corpus of short
English→Korean pairs translated by people (about 14,600 pairs from 15,800
messages on Debian 12), with nothing to download.

Where the data comes from and what may be done with it
    The catalogues belong to the Debian packages named in
    :data:`GETTEXT_PACKAGES`; each is under its package's own licence (mostly GPL
    or LGPL; see ``/usr/share/doc/<package>/copyright``). Nothing from them is
    committed to this repository: the chapters read them at run time from the
    machine's locale directory. On Ubuntu the same translations come in the
    language packs (``language-pack-ko-base``, and ``language-pack-gnome-ko-base``
    for GLib and GTK) under ``/usr/share/locale-langpack``, which is searched too.
    Without them :func:`load_gettext_pairs` raises
    :class:`GettextCatalogueNotFoundError` naming the packages to install, and
    :func:`missing_packages` lets a chapter fall back to a generated corpus.

Reading a catalogue
    :func:`read_mo` parses the ``.mo`` format itself (magic number, revision,
    number of strings, offsets of the original and translation tables, GNU
    gettext manual §"The Format of GNU MO Files"), because the standard
    library's :class:`gettext.GNUTranslations` can look messages up but has no
    public way to list them. The tests check the parser against
    ``GNUTranslations.gettext``/``pgettext``/``ngettext`` on every entry of real
    catalogues. Only the standard string table is read; the system-dependent
    strings of revision 1 (``%<PRIu64>``) are skipped, as ``GNUTranslations``
    skips them.

Cleaning (:func:`clean_pair`), in this order
    1. The header (empty ``msgid``) is not a message; entries with plural forms
       are dropped (Korean has one form, so the English singular and plural
       would both map to it); a context (``msgctxt``, stored as
       ``"context\\x04msgid"``) is removed and the message kept.
    2. Keyboard accelerators are removed when the Korean marks one:
       ``"_Open"``/``"열기(_O)"`` and ``"&Open"``/``"열기(&O)"`` become
       ``"Open"``/``"열기"``. An underscore without such a mark is part of a name
       (``MERGE_HEAD``) and stays.
    3. Multi-line texts (``--help`` screens) are split into entries: a line
       with the lines that continue it (a wrapped paragraph, an option's wrapped
       description), since the two languages wrap at different words. They are
       paired in order when both sides have the same number of entries and
       dropped otherwise; an option or term column that starts both sides
       (``"  -a, --all   do not ignore ..."``) is removed, leaving the
       description.
    4. Each line is normalised (:func:`normalise`): Unicode NFC, curly quotes
       and backticks to ``'`` and ``"``, ``…`` to ``...``, every format
       placeholder (printf ``%s``, ``%1$s``, ``%-.*s``, ``%04lo``; Python
       ``%(name)s`` and ``{name}``; shell ``$name`` and ``${name}``) to the
       single token :data:`PLACEHOLDER` (``<ph>``), ``%%`` to ``%``, and runs of
       white space to one space.
    5. A pair is dropped when the Korean is empty or equal to the English, has
       no Hangul, the English has no Latin letter, the two sides have different
       numbers of placeholders, the English is a command synopsis
       (``"dirs [-clpv] [+N]"``), the Korean has more than twice as many Latin
       words as Hangul ones (mostly untranslated), or either side has more than
       ``max_tokens`` tokens (:data:`MAX_TOKENS`, counted with :func:`tokenize`
       and ``hangul="word"``).
    6. :func:`load_gettext_pairs` keeps one pair per English source (its
       tokens, lower-cased): the first in package order.

Tokens (:func:`tokenize`)
    ``<ph>``, runs of Hangul syllables (``hangul="word"``; or one syllable a
    token with ``hangul="syllable"``), runs of other letters (lower-cased), runs
    of digits, and every other non-space character alone. No vocabulary is
    needed to tokenize, the same rule serves both languages, and ``<ph>`` stays
    one token on both sides, so a model can learn to copy it.

Splits (:func:`gettext_splits`)
    Each English source goes to train, valid or test by a hash of its tokens and
    the seed, so a sentence's split does not depend on which other packages are
    installed, and no English source is in two splits.
"""

from __future__ import annotations

import hashlib
import re
import struct
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from course_utils.checks import check_int

__all__ = [
    "GETTEXT_PACKAGES",
    "LOCALE_DIRS",
    "MAX_TOKENS",
    "PLACEHOLDER",
    "UBUNTU_LANGUAGE_PACKS",
    "GettextCatalogueNotFoundError",
    "GettextPair",
    "MoEntry",
    "catalogue_paths",
    "clean_pair",
    "drop_reason",
    "gettext_corpus_stats",
    "gettext_splits",
    "install_command",
    "load_gettext_pairs",
    "missing_packages",
    "normalise",
    "read_mo",
    "strip_accelerators",
    "tokenize",
]

#: Debian package → the gettext domains (``<domain>.mo``) of its Korean catalogues, in
#: the order :func:`load_gettext_pairs` reads them (earlier packages win duplicates).
#: The small, plain catalogues come first: names of countries, languages, currencies,
#: scripts and file types, then the GNU tools and libraries, then git and GTK.
GETTEXT_PACKAGES: dict[str, tuple[str, ...]] = {
    "iso-codes": ("iso_3166-1", "iso_3166-3", "iso_639-2", "iso_639-3", "iso_4217", "iso_15924"),
    "shared-mime-info": ("shared-mime-info",),
    "coreutils": ("coreutils",),
    "grep": ("grep",),
    "sed": ("sed",),
    "tar": ("tar",),
    "bash": ("bash",),
    "libc-l10n": ("libc",),
    "libglib2.0-data": ("glib20",),
    "libgtk-3-common": ("gtk30", "gtk30-properties"),
    "git": ("git",),
}

#: Where the catalogues are looked for: ``<dir>/ko/LC_MESSAGES/<domain>.mo``. Debian
#: installs them under ``/usr/share/locale``; Ubuntu's language packs under
#: ``/usr/share/locale-langpack``.
LOCALE_DIRS: tuple[str, ...] = ("/usr/share/locale", "/usr/share/locale-langpack")

#: Ubuntu's packages for the same translations (they are stripped from its packages).
UBUNTU_LANGUAGE_PACKS: tuple[str, ...] = ("language-pack-ko-base", "language-pack-gnome-ko-base")

#: The token every format placeholder becomes, on both sides.
PLACEHOLDER = "<ph>"

#: Pairs with more tokens than this on either side are dropped: they are help screens
#: and long explanations, and a small seq2seq trains on short sentences.
MAX_TOKENS = 32

_LANGUAGE = "ko"
_MO_MAGIC = 0x950412DE


class GettextCatalogueNotFoundError(FileNotFoundError):
    """No Korean gettext catalogue of the requested packages is installed."""


class MoEntry(NamedTuple):
    """One message of a ``.mo`` file.

    ``translations`` has one string per plural form (one without plural forms).
    The header has ``msgid == ""`` and ``context is None``.
    """

    context: str | None
    msgid: str
    msgid_plural: str | None
    translations: tuple[str, ...]


class GettextPair(NamedTuple):
    """A cleaned parallel pair and the catalogue (gettext domain) it comes from."""

    english: str
    korean: str
    catalogue: str


# ---------------------------------------------------------------------------
# The .mo format
# ---------------------------------------------------------------------------

_CHARSET = re.compile(rb"charset=([^\s;]+)", re.IGNORECASE)


def read_mo(path: str | Path) -> list[MoEntry]:
    """Every message of a GNU ``.mo`` catalogue, in file order (sorted by ``msgid``).

    The file starts with the magic number ``0x950412de`` (in the file's byte order),
    the format revision, the number N of strings and the offsets of two tables of
    N ``(length, offset)`` pairs: the original strings and their translations.
    Strings are decoded with the ``charset`` of the header entry (the translation
    of the empty ``msgid``), ASCII without one, as ``gettext.GNUTranslations``
    does. ``"context\\x04msgid"`` splits into context and ``msgid``;
    ``"msgid\\x00msgid_plural"`` and ``"form0\\x00form1"`` into plural forms.
    """
    data = Path(path).read_bytes()
    if len(data) < 20:
        raise ValueError(f"{path} is not a .mo file: {len(data)} bytes, fewer than its header")
    for order in ("<", ">"):
        if struct.unpack(order + "I", data[:4])[0] == _MO_MAGIC:
            break
    else:
        raise ValueError(f"{path} is not a .mo file: bad magic number {data[:4].hex()}")
    revision, count, originals, translations = struct.unpack(order + "4I", data[4:20])
    if revision >> 16 not in (0, 1):
        raise ValueError(f"{path}: unsupported .mo revision {revision >> 16}.{revision & 0xFFFF}")

    def string(table: int, i: int) -> bytes:
        position = table + 8 * i
        if position + 8 > len(data):
            raise ValueError(f"{path} is truncated: string table entry {i} is past the end")
        length, offset = struct.unpack_from(order + "2I", data, position)
        if offset + length > len(data):
            raise ValueError(f"{path} is truncated: string {i} is past the end")
        return data[offset : offset + length]

    raw = [(string(originals, i), string(translations, i)) for i in range(count)]
    charset = "ascii"
    for original, translation in raw:
        if original == b"":
            match = _CHARSET.search(translation)
            if match:
                charset = match.group(1).decode("ascii")
    try:
        "".encode(charset)
    except LookupError:
        raise ValueError(f"{path}: its header names an unknown charset {charset!r}") from None
    entries = []
    for i, (msgid_bytes, msgstr_bytes) in enumerate(raw):
        try:
            msgid, msgstr = msgid_bytes.decode(charset), msgstr_bytes.decode(charset)
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{path}: string {i} is not valid {charset} ({error.reason} at byte {error.start})"
            ) from None
        context: str | None = None
        if "\x04" in msgid:
            context, msgid = msgid.split("\x04", 1)
        plural: str | None = None
        if "\x00" in msgid:
            msgid, plural = msgid.split("\x00", 1)
            forms = tuple(msgstr.split("\x00"))
        else:
            forms = (msgstr,)
        entries.append(MoEntry(context, msgid, plural, forms))
    return entries


# ---------------------------------------------------------------------------
# Finding the catalogues
# ---------------------------------------------------------------------------


def _check_packages(packages: Iterable[str] | None) -> list[str]:
    if packages is None:
        return list(GETTEXT_PACKAGES)
    if isinstance(packages, str):
        raise TypeError(f"packages must be a list of package names, not one str: [{packages!r}]")
    chosen = list(packages)
    unknown = [p for p in chosen if p not in GETTEXT_PACKAGES]
    if unknown or not chosen:
        raise ValueError(
            f"unknown packages {unknown}: expected names from GETTEXT_PACKAGES "
            f"({', '.join(GETTEXT_PACKAGES)})"
        )
    return chosen


def _check_dirs(locale_dirs: Iterable[str | Path] | None) -> list[Path]:
    if locale_dirs is None:
        return [Path(d) for d in LOCALE_DIRS]
    if isinstance(locale_dirs, (str, Path)):
        raise TypeError(f"locale_dirs must be a list of folders, not one path: [{locale_dirs!r}]")
    return [Path(d) for d in locale_dirs]


def catalogue_paths(
    packages: Iterable[str] | None = None, locale_dirs: Iterable[str | Path] | None = None
) -> dict[str, Path | None]:
    """``{domain: path of its Korean .mo, or None}`` for the packages' catalogues.

    The first of ``locale_dirs`` (default :data:`LOCALE_DIRS`) that has the file wins.
    """
    dirs = _check_dirs(locale_dirs)
    found: dict[str, Path | None] = {}
    for package in _check_packages(packages):
        for domain in GETTEXT_PACKAGES[package]:
            candidates = [d / _LANGUAGE / "LC_MESSAGES" / f"{domain}.mo" for d in dirs]
            found[domain] = next((p for p in candidates if p.is_file()), None)
    return found


def missing_packages(
    packages: Iterable[str] | None = None, locale_dirs: Iterable[str | Path] | None = None
) -> list[str]:
    """The Debian packages (of ``packages``) with a Korean catalogue missing; ``[]`` if none."""
    paths = catalogue_paths(packages, locale_dirs)
    return [
        package
        for package in _check_packages(packages)
        if any(paths[domain] is None for domain in GETTEXT_PACKAGES[package])
    ]


def install_command(packages: Sequence[str]) -> str:
    """What to run to install ``packages`` on Debian, and what on Ubuntu."""
    return (
        f"Debian: `sudo apt-get install {' '.join(packages)}`; Ubuntu keeps these "
        f"translations in its language packs: `sudo apt-get install "
        f"{' '.join(UBUNTU_LANGUAGE_PACKS)}`. If the packages are installed and the files "
        f"are still missing, dpkg was told to drop translations (a `path-exclude` line for "
        f"/usr/share/locale in /etc/dpkg/dpkg.cfg.d/, common in Docker images): remove it "
        f"and run `sudo apt-get install --reinstall {' '.join(packages)}`"
    )


# ---------------------------------------------------------------------------
# Cleaning
# ---------------------------------------------------------------------------

_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_LATIN = re.compile(r"[A-Za-z]")
# A command synopsis such as "git notes [--ref <notes-ref>]" or "dirs [-clpv] [+N]".
_SYNOPSIS = re.compile(r"\[[-+]")
# A Korean accelerator mark: "열기(_O)", "저장(&S)...".
_KO_ACCELERATOR = re.compile(r"\s*\(([_&])([A-Za-z0-9])\)")
_PLACEHOLDERS = re.compile(
    r"""
    %%                                               # a literal percent sign
    | %\([A-Za-z_]\w*\)[-+\#0]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa]  # Python %(name)s
    | %(?:\d+\$)?[-+\#0']*(?:\d+|\*(?:\d+\$)?)?      # printf: position, flags, width
      (?:\.(?:\d+|\*(?:\d+\$)?))?                    #   precision
      (?:hh|ll|[hlLqjzZtI])?[diouxXeEfFgGaAcCsSpnm]  #   length and conversion
    | \$\{[A-Za-z_]\w*\} | \$[A-Za-z_]\w*            # shell ${name} and $name
    | \{[A-Za-z_]\w*\} | \{\d+\}                     # Python/GLib {name} and {0}
    """,
    re.VERBOSE,
)
_QUOTES = str.maketrans(
    {"‘": "'", "’": "'", "‚": "'", "‛": "'", "`": "'", "“": '"', "”": '"', "„": '"', "‟": '"'}
)
_TOKEN = re.compile(
    rf"{re.escape(PLACEHOLDER)}|[\uac00-\ud7a3]+|[^\W\d_\uac00-\ud7a3]+|\d+|\S", re.UNICODE
)


def _require_str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def strip_accelerators(english: str, korean: str) -> tuple[str, str]:
    """Remove a keyboard accelerator that the Korean marks as ``(_X)`` or ``(&X)``.

    ``("_Open", "열기(_O)")`` → ``("Open", "열기")``; ``("Fo_lder", "폴더(_L)")`` →
    ``("Folder", "폴더")``; ``("&Save", "저장(&S)")`` → ``("Save", "저장")``. In the English
    the marker before the same letter goes (else the first marker before a letter).
    Without a Korean mark both texts are returned unchanged: ``MERGE_HEAD`` keeps its
    underscore.
    """
    english, korean = _require_str(english, "english"), _require_str(korean, "korean")
    match = _KO_ACCELERATOR.search(korean)
    if match is None:
        return english, korean
    marker, letter = match.groups()
    korean = korean[: match.start()] + korean[match.end() :]
    same = re.search(re.escape(marker) + f"(?={re.escape(letter)})", english, re.IGNORECASE)
    first = same or re.search(re.escape(marker) + r"(?=[^\W_])", english)
    if first is not None:
        english = english[: first.start()] + english[first.end() :]
    return english, korean


def normalise(text: str) -> str:
    """One line in the corpus's normal form: NFC, plain quotes, ``<ph>``, single spaces.

    ``"Failed to read “%s”: %s\\n"`` → ``'Failed to read "<ph>": <ph>'``;
    ``"100%% done"`` → ``"100% done"``; ``"'$sm_path' already exists"`` →
    ``"'<ph>' already exists"``.
    """
    text = unicodedata.normalize("NFC", _require_str(text, "text"))
    text = text.translate(_QUOTES).replace("…", "...")
    # "%s을(를)" becomes "<ph>을(를)": tokenize() still makes "<ph>" a token of its own.
    text = _PLACEHOLDERS.sub(lambda m: "%" if m.group() == "%%" else PLACEHOLDER, text)
    return " ".join(text.split())


def tokenize(text: str, hangul: str = "word") -> list[str]:
    """Split a normalised line into tokens; Latin letters are lower-cased.

    ``"Could not parse <ph>"`` → ``['could', 'not', 'parse', '<ph>']``;
    ``"<ph>을(를) 파싱할 수 없습니다"`` → ``['<ph>', '을', '(', '를', ')', '파싱할', '수',
    '없습니다']``. ``hangul="syllable"`` makes every Hangul syllable a token
    (``'파', '싱', '할'``): on the whole corpus about 2,900 distinct syllables instead
    of about 11,000 Korean words, for sequences about twice as long.
    """
    text = _require_str(text, "text")
    if hangul not in ("word", "syllable"):
        raise ValueError(f"hangul must be 'word' or 'syllable', got {hangul!r}")
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    if hangul == "syllable":
        tokens = [s for t in tokens for s in (list(t) if _HANGUL.match(t) else [t])]
    return tokens


# A line that starts a new entry of a help text even right below another line: an
# option ("-a, --all", "--mode=MODE") or a term with a column gap after its first one
# or two words ("erase CHAR    CHAR will erase ...").
_ITEM = re.compile(r"\s*(?:[-+]\S|\S+(?: \S+)?\s{2,}\S)")


def _entries(text: str) -> list[str]:
    """The entries of a help text: a line and the lines that continue it.

    A line continues the entry above it unless a blank line comes between, it is
    indented less than the entry's first line, or it starts an item of its own
    (:data:`_ITEM`): so a wrapped paragraph and an option's wrapped description
    are one entry, while each option and each row of a table starts one. Tabs are
    expanded first; the joins keep two spaces, so :func:`_strip_column` still sees a
    column gap.
    """
    entries: list[str] = []
    first_indent = 0
    previous_blank = True
    for line in text.expandtabs(8).splitlines():
        if not line.strip():
            previous_blank = True
            continue
        indent = len(line) - len(line.lstrip())
        if previous_blank or indent < first_indent or _ITEM.match(line):
            entries.append(line.rstrip())
            first_indent = indent
        else:
            entries[-1] += "  " + line.strip()
        previous_blank = False
    return entries


# The first column of a help line: options ("-a, --all", "--lines=[+]NUM", "-t FORMAT")
# or a short indented term ("erase CHAR"), then the gap before the description. The
# English gap is at least two spaces; Korean translators sometimes leave one.
_OPTION = r"[-+]\S*(?:,?\s[-+]\S*)*(?:\s(?:[A-Z][A-Z_]*|<[^<>\s]+>))?"
_EN_COLUMNS = (re.compile(rf"\s*{_OPTION}\s{{2,}}"), re.compile(r"\s+\S.{0,18}?\s{2,}"))
_KO_COLUMNS = (re.compile(rf"\s*{_OPTION}\s+"), re.compile(r"\s+\S.{0,18}?\s{2,}"))


def _strip_column(english: str, korean: str) -> tuple[str, str]:
    """Drop the option or term column that starts both sides of a help-text entry."""
    for en_column, ko_column in zip(_EN_COLUMNS, _KO_COLUMNS, strict=True):
        en_match, ko_match = en_column.match(english), ko_column.match(korean)
        if en_match and ko_match:
            return english[en_match.end() :], korean[ko_match.end() :]
    return english, korean


def _check_line(english: str, korean: str, max_tokens: int) -> str | None:
    if not korean:
        return "empty"
    if korean == english:
        return "untranslated"
    if not _HANGUL.search(korean):
        return "no Hangul"
    if not _LATIN.search(english.replace(PLACEHOLDER, "")):
        return "no English word"
    if english.count(PLACEHOLDER) != korean.count(PLACEHOLDER):
        return "placeholder mismatch"
    if _SYNOPSIS.search(english):
        return "command synopsis"
    ko_tokens = tokenize(korean)
    latin = sum(bool(_LATIN.match(t)) for t in ko_tokens)
    if latin > 2 * sum(bool(_HANGUL.match(t)) for t in ko_tokens):
        return "mostly English"
    if max(len(tokenize(english)), len(tokenize(korean))) > max_tokens:
        return "too long"
    return None


def _check_max_tokens(max_tokens: object) -> int:
    return check_int(max_tokens, "max_tokens")


def _clean(
    english: str, korean: str, max_tokens: int, plural: bool = False
) -> tuple[list[tuple[str, str]], list[str]]:
    """Kept pairs and the reasons for each dropped line."""
    if plural:
        return [], ["plural"]
    if not english.strip() or not korean.strip():
        return [], ["empty"]
    english, korean = strip_accelerators(english, korean)
    en_entries, ko_entries = _entries(english), _entries(korean)
    if len(en_entries) != len(ko_entries):
        return [], ["line count mismatch"]
    kept, reasons = [], []
    for en_line, ko_line in zip(en_entries, ko_entries, strict=True):
        en_line, ko_line = (normalise(text) for text in _strip_column(en_line, ko_line))
        reason = _check_line(en_line, ko_line, max_tokens)
        if reason is None:
            kept.append((en_line, ko_line))
        else:
            reasons.append(reason)
    return kept, reasons


def clean_pair(english: str, korean: str, max_tokens: int = MAX_TOKENS) -> list[tuple[str, str]]:
    """The corpus pairs one message gives: none, one, or one per line of a help text.

    ``("_Open", "열기(_O)")`` → ``[("Open", "열기")]``; ``("could not parse %s",
    "%s을(를) 파싱할 수 없습니다")`` → ``[("could not parse <ph>", "<ph>을(를) 파싱할 수
    없습니다")]``; ``("Vietnam", "")`` → ``[]``. The rules are in the module's docstring;
    :func:`drop_reason` says why a message gave nothing.
    """
    english, korean = _require_str(english, "english"), _require_str(korean, "korean")
    return _clean(english, korean, _check_max_tokens(max_tokens))[0]


def drop_reason(english: str, korean: str, max_tokens: int = MAX_TOKENS) -> str | None:
    """Why :func:`clean_pair` keeps nothing of a message (the first line's reason), or None."""
    english, korean = _require_str(english, "english"), _require_str(korean, "korean")
    kept, reasons = _clean(english, korean, _check_max_tokens(max_tokens))
    return None if kept else (reasons or ["empty"])[0]


# ---------------------------------------------------------------------------
# Loading and splitting
# ---------------------------------------------------------------------------


@dataclass
class _Tally:
    entries: int = 0
    pairs: int = 0
    dropped: Counter[str] = field(default_factory=Counter)


def _load(
    packages: Iterable[str] | None,
    locale_dirs: Iterable[str | Path] | None,
    max_tokens: int,
) -> tuple[list[GettextPair], dict[str, _Tally]]:
    chosen = _check_packages(packages)
    max_tokens = _check_max_tokens(max_tokens)
    dirs = _check_dirs(locale_dirs)
    paths = catalogue_paths(chosen, dirs)
    if all(path is None for path in paths.values()):
        searched = ", ".join(str(d) for d in dirs)
        raise GettextCatalogueNotFoundError(
            f"no Korean gettext catalogue (ko/LC_MESSAGES/*.mo) of the packages "
            f"{', '.join(chosen)} was found in {searched}. Install them: "
            f"{install_command(chosen)}"
        )
    pairs: list[GettextPair] = []
    seen: set[tuple[str, ...]] = set()
    tallies: dict[str, _Tally] = {}
    for domain, path in paths.items():
        if path is None:
            continue
        tally = tallies[domain] = _Tally()
        for entry in read_mo(path):
            if entry.msgid == "" and entry.context is None:
                continue  # the header
            tally.entries += 1
            kept, reasons = _clean(
                entry.msgid, entry.translations[0], max_tokens, entry.msgid_plural is not None
            )
            tally.dropped.update(reasons)
            for english, korean in kept:
                key = tuple(tokenize(english))
                if key in seen:
                    tally.dropped["duplicate"] += 1
                    continue
                seen.add(key)
                pairs.append(GettextPair(english, korean, domain))
                tally.pairs += 1
    return pairs, tallies


def load_gettext_pairs(
    packages: Iterable[str] | None = None,
    locale_dirs: Iterable[str | Path] | None = None,
    max_tokens: int = MAX_TOKENS,
) -> list[GettextPair]:
    """Cleaned ``(english, korean, catalogue)`` pairs from the installed Korean catalogues.

    ``packages`` are keys of :data:`GETTEXT_PACKAGES`, read in the order given
    (default: all of them, in that dictionary's order); ``locale_dirs`` default to
    :data:`LOCALE_DIRS`. Catalogues that are not installed are skipped
    (:func:`missing_packages` names them); when none is,
    :class:`GettextCatalogueNotFoundError` says what to install. Each English source
    appears once, from the first package that has it. The order is fixed: package,
    catalogue, then the catalogue's own (``msgid``) order.
    """
    return _load(packages, locale_dirs, max_tokens)[0]


def gettext_corpus_stats(
    packages: Iterable[str] | None = None,
    locale_dirs: Iterable[str | Path] | None = None,
    max_tokens: int = MAX_TOKENS,
) -> list[dict[str, object]]:
    """Per catalogue: its package, messages read, pairs kept, and lines dropped by reason."""
    chosen = _check_packages(packages)
    _, tallies = _load(chosen, locale_dirs, max_tokens)
    rows: list[dict[str, object]] = []
    for package in chosen:
        for domain in GETTEXT_PACKAGES[package]:
            if domain in tallies:
                tally = tallies[domain]
                rows.append(
                    {
                        "package": package,
                        "catalogue": domain,
                        "messages": tally.entries,
                        "pairs": tally.pairs,
                        "dropped": dict(sorted(tally.dropped.items())),
                    }
                )
    return rows


def _fraction(key: tuple[str, ...], seed: int) -> float:
    digest = hashlib.blake2b(f"{seed}\x00{' '.join(key)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def gettext_splits(
    seed: int = 0,
    valid_fraction: float = 0.1,
    test_fraction: float = 0.1,
    *,
    pairs: Sequence[GettextPair] | None = None,
    packages: Iterable[str] | None = None,
    locale_dirs: Iterable[str | Path] | None = None,
    max_tokens: int = MAX_TOKENS,
) -> dict[str, list[GettextPair]]:
    """``{"train", "valid", "test"}`` lists of pairs, disjoint by English source.

    A pair's split is decided by a hash of its English tokens and ``seed`` alone, so
    the same sentence lands in the same split on every machine, whatever else is
    installed; split sizes are close to, not exactly, the fractions. ``pairs``
    defaults to :func:`load_gettext_pairs` of ``packages``, ``locale_dirs`` and
    ``max_tokens``. Each list keeps the order of ``pairs``.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    for name, value in (("valid_fraction", valid_fraction), ("test_fraction", test_fraction)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    if valid_fraction + test_fraction >= 1:
        raise ValueError(
            f"valid_fraction + test_fraction must be below 1 to leave training data, "
            f"got {valid_fraction} + {test_fraction}"
        )
    if pairs is None:
        pairs = load_gettext_pairs(packages, locale_dirs, max_tokens)
    elif (
        isinstance(pairs, (str, bytes))
        or not isinstance(pairs, Sequence)
        or not all(isinstance(p, GettextPair) for p in pairs)
    ):
        raise TypeError(
            "pairs must be a list of GettextPair (english, korean, catalogue), "
            f"got {type(pairs).__name__}"
        )
    splits: dict[str, list[GettextPair]] = {"train": [], "valid": [], "test": []}
    split_of: dict[tuple[str, ...], str] = {}
    for pair in pairs:
        key = tuple(tokenize(pair.english))
        if key not in split_of:
            u = _fraction(key, seed)
            split_of[key] = (
                "test"
                if u < test_fraction
                else "valid"
                if u < test_fraction + valid_fraction
                else "train"
            )
        splits[split_of[key]].append(pair)
    return splits


def _main() -> None:
    """``python -m course_utils.gettext_corpus``: the missing packages, one a line.

    Used by ``.ci/run`` with the system's Python, before the course environment exists.
    """
    for package in missing_packages():
        print(package)


if __name__ == "__main__":
    _main()
