"""Corpora that ship inside installed packages, so no chapter downloads anything.

- KoNLPy: the Constitution of the Republic of Korea (``kolaw``) and ten
  National Assembly bills (``kobill``).
- gensim's test data: the Lee news corpus and a shortened English Wikipedia
  dump (106 articles), and the WordSim353, SimLex-999 and Google analogy
  evaluation sets.
"""

from __future__ import annotations

import bz2
import importlib
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import TypeVar

__all__ = [
    "MissingPackageError",
    "gensim_test_file",
    "korean_char_split",
    "korean_corpus_lines",
    "load_google_analogies",
    "load_kobill",
    "load_kolaw",
    "load_lee_corpus",
    "load_simlex999",
    "load_wiki_sample",
    "load_wordsim353",
    "split_lines",
]

KOBILL_IDS = tuple(str(n) for n in range(1809890, 1809900))


class MissingPackageError(ImportError):
    """A package that ships a corpus is not installed."""


def _import(module: str, package: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingPackageError(
            f"this corpus ships with the {package!r} package, which is not installed: "
            f"pip install {package} (or run `make book` to set up the course environment)"
        ) from error


def load_kolaw() -> str:
    """The Korean Constitution (대한민국헌법), about 45 KB of text, from KoNLPy."""
    corpus = _import("konlpy.corpus", "konlpy")
    return str(corpus.kolaw.open("constitution.txt").read())


def load_kobill(bill_ids: tuple[str, ...] | list[str] | None = None) -> dict[str, str]:
    """National Assembly bills (의안) bundled with KoNLPy, as ``{bill id: text}``."""
    corpus = _import("konlpy.corpus", "konlpy")
    ids = KOBILL_IDS if bill_ids is None else tuple(bill_ids)
    unknown = [i for i in ids if i not in KOBILL_IDS]
    if unknown:
        raise ValueError(f"unknown bill ids {unknown}: expected ids from {KOBILL_IDS}")
    return {i: str(corpus.kobill.open(f"{i}.txt").read()) for i in ids}


def gensim_test_file(name: str) -> Path:
    """Path of a file in gensim's bundled test data (``gensim/test/test_data``)."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"name must be a plain file name, got {name!r}")
    utils = _import("gensim.test.utils", "gensim")
    path = Path(utils.datapath(name))
    if not path.is_file():
        raise FileNotFoundError(f"{name!r} is not in gensim's test data at {path.parent}")
    return path


def load_lee_corpus(background: bool = True) -> list[str]:
    """The Lee corpus of Australian news (one document a line): 300 documents, or 50."""
    name = "lee_background.cor" if background else "lee.cor"
    raw = gensim_test_file(name).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # gensim's lee.cor is Latin-1 ("£" is byte 0xA3)
    return [line.strip() for line in text.splitlines() if line.strip()]


WIKI_SAMPLE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def load_wiki_sample() -> list[list[str]]:
    """106 English Wikipedia articles (about 470,000 words), lower-cased and tokenized.

    The shortened dump ships with gensim's tests. The result is what gensim's
    ``WikiCorpus(..., lower=True, token_min_len=1).get_texts()`` yields (a test
    checks it), built from the same functions (``extract_pages``,
    ``process_article``) but in this process: ``WikiCorpus`` forks a worker
    pool, and a fork after KoNLPy has started the Java VM can hang for ever.
    Parsing takes a few seconds.
    """
    wikicorpus = _import("gensim.corpora.wikicorpus", "gensim")
    articles = []
    with bz2.BZ2File(gensim_test_file(WIKI_SAMPLE)) as dump:
        for title, text, pageid in wikicorpus.extract_pages(dump, ("0",)):  # articles only
            tokens, _, _ = wikicorpus.process_article(
                (text, title, pageid), token_min_len=1, token_max_len=wikicorpus.TOKEN_MAX_LEN
            )
            # WikiCorpus's own pruning: redirects and stubs, and pages of other namespaces.
            stub = len(tokens) < wikicorpus.ARTICLE_MIN_WORDS
            if stub or any(title.startswith(f"{ns}:") for ns in wikicorpus.IGNORED_NAMESPACES):
                continue
            articles.append(list(tokens))
    return articles


def _read_pairs(name: str) -> list[tuple[str, str, float]]:
    pairs = []
    for line in gensim_test_file(name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue  # gensim's copies start with '#' comment lines
        a, b, score = line.split("\t")[:3]
        pairs.append((a, b, float(score)))
    return pairs


def load_wordsim353() -> list[tuple[str, str, float]]:
    """WordSim353 ``(word, word, human score 0–10)`` pairs."""
    return _read_pairs("wordsim353.tsv")


def load_simlex999() -> list[tuple[str, str, float]]:
    """SimLex-999 ``(word, word, similarity 0–10)`` pairs."""
    return _read_pairs("simlex999.txt")


def load_google_analogies() -> dict[str, list[tuple[str, str, str, str]]]:
    """Google analogy questions ``a : b :: c : d`` grouped by section."""
    sections: dict[str, list[tuple[str, str, str, str]]] = {}
    current = ""
    for line in gensim_test_file("questions-words.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith(":"):
            current = line[1:].strip()
            sections[current] = []
        elif line.strip():
            a, b, c, d = line.split()
            sections[current].append((a, b, c, d))
    return sections


Line = TypeVar("Line")


def split_lines(lines: list[Line], held_out_fraction: float = 0.2) -> tuple[list[Line], list[Line]]:
    """Deterministic split: every k-th line goes to the held-out part.

    A line is usually a str; labelled lines such as ``(line, label)`` split the same way.

    Interleaving instead of cutting at the end keeps both parts from the same
    mix of topics (a bill's opening and its closing articles differ a lot).
    """
    if isinstance(lines, str):
        raise TypeError("lines must be a list of str lines, not one str: use text.splitlines()")
    if not 0 < held_out_fraction < 1:
        raise ValueError(f"held_out_fraction must be between 0 and 1, got {held_out_fraction}")
    every = round(1 / held_out_fraction)
    train = [line for i, line in enumerate(lines) if i % every != every - 1]
    held_out = [line for i, line in enumerate(lines) if i % every == every - 1]
    return train, held_out


def korean_corpus_lines() -> list[str]:
    """Every line of the constitution and the ten bills, normalized, in a fixed order.

    Lines without a single letter (the bills' ``-----`` separators, page
    numbers) are dropped; everything else is kept as written.
    """
    texts = [load_kolaw(), *load_kobill().values()]
    lines = []
    for text in texts:
        for line in text.splitlines():
            line = " ".join(line.split())
            if any(ch.isalpha() for ch in line):
                lines.append(unicodedata.normalize("NFC", line))
    return lines


def korean_char_split(held_out_fraction: float = 0.2) -> tuple[list[str], list[str]]:
    """The Korean corpus as two character streams, training and held-out (5, 6, 8장).

    Lines are split with :func:`split_lines` and joined with their line breaks,
    so ``"\\n"`` is a character the models must predict too.
    """
    train, held_out = split_lines(korean_corpus_lines(), held_out_fraction)
    return list("".join(line + "\n" for line in train)), list(
        "".join(line + "\n" for line in held_out)
    )
