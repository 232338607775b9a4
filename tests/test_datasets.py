import hashlib
import json
import subprocess
import sys

import pytest

from course_utils import datasets


def test_konlpy_corpora_load_offline():
    assert "대한민국헌법" in datasets.load_kolaw()
    bills = datasets.load_kobill()
    assert len(bills) == 10 and all(text for text in bills.values())
    assert list(datasets.load_kobill(["1809890"])) == ["1809890"]


def test_korean_corpus_lines_drop_separator_lines_and_are_nfc():
    import unicodedata

    lines = datasets.korean_corpus_lines()
    assert len(lines) > 2000
    assert all(any(ch.isalpha() for ch in line) for line in lines)
    assert all(unicodedata.is_normalized("NFC", line) for line in lines)


def test_gensim_evaluation_sets_have_their_published_sizes():
    assert len(datasets.load_wordsim353()) == 353
    assert len(datasets.load_simlex999()) == 999
    analogies = datasets.load_google_analogies()
    assert sum(len(v) for v in analogies.values()) == 19544
    assert analogies["capital-common-countries"][0] == ("Athens", "Greece", "Baghdad", "Iraq")
    assert len(datasets.load_lee_corpus()) == 300
    assert len(datasets.load_lee_corpus(background=False)) == 50


def test_wiki_sample_is_real_unstemmed_english():
    articles = datasets.load_wiki_sample()
    words = [w for article in articles for w in article]
    assert len(articles) == 106 and 400_000 < len(words) < 600_000
    assert {"city", "army", "queen", "paris"} <= set(words)
    assert all(w == w.lower() for w in words[:1000])


def test_wiki_sample_equals_gensims_wikicorpus_without_forking():
    # The reference runs in a fresh interpreter: WikiCorpus forks, which may
    # hang in a process where another test has started KoNLPy's Java VM.
    script = (
        "import hashlib, json; from gensim.corpora import WikiCorpus;"
        "from course_utils.datasets import gensim_test_file, WIKI_SAMPLE;"
        "w = WikiCorpus(str(gensim_test_file(WIKI_SAMPLE)), dictionary={}, processes=1,"
        " lower=True, token_min_len=1);"
        "print(hashlib.sha256(json.dumps(list(w.get_texts())).encode()).hexdigest())"
    )
    reference = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    ).stdout.strip()
    ours = hashlib.sha256(json.dumps(datasets.load_wiki_sample()).encode()).hexdigest()
    assert ours == reference


def test_split_lines_is_deterministic_and_disjoint():
    lines = [f"line {i}" for i in range(100)]
    train, held_out = datasets.split_lines(lines, 0.2)
    assert len(held_out) == 20 and len(train) == 80
    assert set(train).isdisjoint(held_out) and sorted(train + held_out) == sorted(lines)
    assert datasets.split_lines(lines, 0.2) == (train, held_out)


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="unknown bill ids"):
        datasets.load_kobill(["123"])
    with pytest.raises(ValueError, match="plain file name"):
        datasets.gensim_test_file("../setup.py")
    with pytest.raises(FileNotFoundError, match="not in gensim's test data"):
        datasets.gensim_test_file("no-such-file.txt")
    with pytest.raises(ValueError, match="between 0 and 1"):
        datasets.split_lines(["a"], 1.5)
    with pytest.raises(TypeError, match="splitlines"):
        datasets.split_lines("a\nb", 0.5)  # type: ignore[arg-type]


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "konlpy.corpus", None)
    with pytest.raises(datasets.MissingPackageError, match="pip install konlpy"):
        datasets.load_kolaw()
