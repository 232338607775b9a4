"""BPE is checked against Algorithm 1 of Sennrich et al. (2016): see bpe_reference.py."""

import collections

import pytest
from bpe_reference import sennrich_algorithm_1
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.bpe import (
    BPE,
    END_OF_WORD,
    compare_tokenizations,
    count_pairs,
    merge_pair,
    train_bpe,
    train_bpe_to_size,
    train_sentencepiece,
)
from course_utils.datasets import korean_corpus_lines, split_lines
from course_utils.vocab import oov_rate

PAPER_EXAMPLE = {"low": 5, "lower": 2, "newest": 6, "widest": 3}


def test_first_merges_of_the_paper_example():
    bpe = train_bpe(PAPER_EXAMPLE, num_merges=3)
    assert bpe.merges == [("e", "s"), ("es", "t"), ("est", END_OF_WORD)]
    assert [freq for _, freq in bpe.history] == [9, 9, 9]


def test_matches_algorithm_1_on_the_paper_example():
    reference, _ = sennrich_algorithm_1(PAPER_EXAMPLE, 10)
    assert train_bpe(PAPER_EXAMPLE, 10).merges == reference


def test_matches_algorithm_1_on_korean_text():
    words = collections.Counter(w for line in korean_corpus_lines()[:600] for w in line.split())
    reference, _ = sennrich_algorithm_1(words, 300)
    assert train_bpe(words, 300).merges == reference


words_strategy = st.dictionaries(
    st.text(alphabet="abcd가나", min_size=1, max_size=7), st.integers(1, 6), min_size=1, max_size=12
)


@settings(max_examples=150, deadline=None)
@given(words_strategy, st.integers(0, 25), st.integers(1, 3))
def test_incremental_counts_equal_recounting_every_step(words, num_merges, min_frequency):
    reference, _ = sennrich_algorithm_1(words, num_merges, min_frequency)
    assert train_bpe(words, num_merges, min_frequency).merges == reference


@settings(max_examples=100, deadline=None)
@given(words_strategy, st.integers(0, 25))
def test_encoding_a_training_word_gives_its_final_training_segmentation(words, num_merges):
    bpe = train_bpe(words, num_merges)
    _, segmented = sennrich_algorithm_1(words, num_merges)
    for word in words:
        assert " ".join(bpe.encode_word(word)) in segmented


@settings(max_examples=100, deadline=None)
@given(
    words_strategy, st.lists(st.text(alphabet="abcdxy가나다", min_size=1, max_size=8), max_size=8)
)
def test_decode_inverts_encode_even_for_unseen_words(words, sentence):
    bpe = train_bpe(words, 10)
    assert bpe.decode(bpe.encode(sentence)) == sentence


def test_unseen_word_is_built_from_learned_pieces():
    bpe = train_bpe(PAPER_EXAMPLE, 10)
    assert bpe.encode_word("lowest") == ["low", "est</w>"]
    assert set(bpe.encode_word("lowest")) <= set(bpe.symbols)


def test_count_pairs_and_merge_pair():
    words = {("a", "a", "a"): 2, ("b",): 7}
    assert count_pairs(words) == {("a", "a"): 4}
    assert merge_pair(("a", "a"), words) == {("aa", "a"): 2, ("b",): 7}
    assert merge_pair(("a", "b"), {("ca", "b"): 1}) == {("ca", "b"): 1}


def test_symbols_list_alphabet_end_marker_then_merges():
    bpe = train_bpe(PAPER_EXAMPLE, 2)
    assert bpe.symbols[: len(bpe.alphabet) + 1] == [*sorted(set("lowernstid")), END_OF_WORD]
    assert bpe.symbols[-2:] == ["es", "est"]


def test_bad_input_gets_clear_errors():
    with pytest.raises(ValueError, match="empty"):
        train_bpe([], 10)
    with pytest.raises(TypeError, match="not one str"):
        train_bpe("low lower", 10)
    with pytest.raises(ValueError, match="white space"):
        train_bpe(["low lower"], 10)
    with pytest.raises(ValueError, match="num_merges"):
        train_bpe(["low"], -1)
    with pytest.raises(ValueError, match="min_frequency"):
        train_bpe(["low"], 1, min_frequency=0)
    with pytest.raises(ValueError, match=r"the count of .low. must be an int >= 1"):
        train_bpe({"low": 0}, 1)
    with pytest.raises(TypeError, match="words must be str"):
        train_bpe([1, 2], 1)  # type: ignore[list-item]
    bpe = train_bpe(PAPER_EXAMPLE, 3)
    with pytest.raises(TypeError, match="split the text first"):
        bpe.encode("low lower")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="white space"):
        bpe.encode_word("lo w")
    with pytest.raises(TypeError, match="word must be a str"):
        bpe.encode_word(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="middle of a word"):
        bpe.decode(["lo"])
    with pytest.raises(TypeError, match="list of subwords"):
        bpe.decode("low</w>")  # type: ignore[arg-type]


def test_model_can_be_rebuilt_from_its_merge_table():
    trained = train_bpe(PAPER_EXAMPLE, 10)
    rebuilt = BPE(merges=list(trained.merges))
    assert rebuilt.encode(["lowest", "newer"]) == trained.encode(["lowest", "newer"])


def test_the_end_of_word_marker_inside_a_word_is_refused_not_mangled():
    # Such a word could not be told apart from two words when decoding.
    with pytest.raises(ValueError, match="end-of-word marker"):
        train_bpe(["<b>x</w>y"] * 3 + ["e</w>f"] * 5, 6)
    model = train_bpe(["low", "lower"] * 3, 3)
    with pytest.raises(ValueError, match="end-of-word marker"):
        model.encode(["a</w>b"])
    assert model.decode(model.encode(["<b>x</", "w>y"])) == ["<b>x</", "w>y"]


@pytest.mark.parametrize("pieces", [[1, 2], [None], ["lo", b"w</w>"]])
def test_decode_names_a_piece_that_is_not_a_string(pieces):
    model = train_bpe(["low", "lower"] * 3, 3)
    with pytest.raises(TypeError, match="pieces must be str subwords"):
        model.decode(pieces)


def test_train_bpe_to_size_counts_the_alphabet_and_the_end_marker():
    alphabet = set("".join(PAPER_EXAMPLE))  # d e i l n o r s t w: 10 letters
    bpe = train_bpe_to_size(PAPER_EXAMPLE, vocab_size=len(alphabet) + 1 + 4)
    assert bpe.merges == train_bpe(PAPER_EXAMPLE, 4).merges
    assert len(bpe.symbols) == len(alphabet) + 1 + 4
    assert train_bpe_to_size(PAPER_EXAMPLE, len(alphabet) + 1).merges == []
    with pytest.raises(ValueError, match="the alphabet and </w>"):
        train_bpe_to_size(PAPER_EXAMPLE, len(alphabet))
    with pytest.raises(ValueError, match="must be an int"):
        train_bpe_to_size(PAPER_EXAMPLE, 20.0)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def small_split():
    return split_lines(korean_corpus_lines()[:400], held_out_fraction=0.2)


def test_sentencepiece_is_trained_in_memory_to_the_size_asked(small_split):
    import sentencepiece as spm

    train, _ = small_split
    for model_type in ["bpe", "unigram"]:
        model = train_sentencepiece(train, model_type, 400)
        assert isinstance(model, spm.SentencePieceProcessor)
        assert model.get_piece_size() == 400
        ids = [i for line in train for i in model.encode(line)]
        assert model.unk_id() not in ids  # character_coverage=1.0: every character is known
    with pytest.raises(ValueError, match="'bpe' or 'unigram'"):
        train_sentencepiece(train, "word", 400)
    with pytest.raises(TypeError, match="not one str"):
        train_sentencepiece("한 줄", "bpe", 400)  # type: ignore[arg-type]


def test_compare_tokenizations_measures_each_vocabulary_on_held_out_text(small_split):
    train, held_out = small_split
    # Any tokenization of each line serves as "morphemes": here, characters.
    train_chars = [list(line.replace(" ", "")) for line in train]
    held_chars = [list(line.replace(" ", "")) for line in held_out]
    result = compare_tokenizations(train, held_out, train_chars, held_chars, vocab_size=400)
    rows = result.rows
    assert list(rows) == [
        "eojeol",
        "morpheme",
        "bpe",
        "sentencepiece-bpe",
        "sentencepiece-unigram",
    ]
    eojeols = [word for line in held_out for word in line.split()]
    train_eojeols = {word for line in train for word in line.split()}
    assert result.held_out_eojeols == len(eojeols)
    assert rows["eojeol"].tokens == len(eojeols) and rows["eojeol"].tokens_per_eojeol == 1
    assert rows["eojeol"].vocab_size == len(train_eojeols)
    assert rows["eojeol"].oov_rate == oov_rate(eojeols, train_eojeols)
    chars = [c for line in held_chars for c in line]
    assert rows["morpheme"].oov_rate == oov_rate(chars, {c for line in train_chars for c in line})
    pieces = result.bpe.encode(eojeols)
    assert rows["bpe"].tokens == len(pieces)
    assert rows["bpe"].oov_rate == oov_rate(pieces, set(result.bpe.symbols))
    all_train_eojeols = [word for line in train for word in line.split()]
    assert result.bpe.merges == train_bpe_to_size(all_train_eojeols, 400).merges
    for model_type in ["bpe", "unigram"]:
        row = rows[f"sentencepiece-{model_type}"]
        assert row.vocab_size == result.sentencepiece[model_type].get_piece_size() == 400
        assert row.tokens_per_eojeol == row.tokens / len(eojeols)
    with pytest.raises(ValueError, match="one list of morphemes per line"):
        compare_tokenizations(train, held_out, train_chars[1:], held_chars)
