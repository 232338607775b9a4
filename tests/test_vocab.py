import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_utils.vocab import BERT_SPECIALS, SEQ_SPECIALS, Vocab, oov_rate

CORPUS = [["국민", "은", "헌법", "을"], ["국민", "의", "헌법"], ["국민", "은"]]


def test_special_tokens_come_first_in_a_fixed_order():
    vocab = Vocab.build(CORPUS)
    assert vocab.tokens[:4] == ["<pad>", "<unk>", "<sos>", "<eos>"]
    assert (vocab.pad_id, vocab.unk_id) == (0, 1)
    assert vocab.id_of_special("<eos>") == 3


def test_tokens_are_ordered_by_frequency_then_first_appearance():
    vocab = Vocab.build(CORPUS)
    assert vocab.tokens[4:] == ["국민", "은", "헌법", "을", "의"]
    assert vocab.counts["국민"] == 3


def test_min_freq_and_max_size_cut_the_vocabulary():
    assert Vocab.build(CORPUS, min_freq=2).tokens[4:] == ["국민", "은", "헌법"]
    assert Vocab.build(CORPUS, max_size=1).tokens[4:] == ["국민"]


def test_unknown_tokens_map_to_unk_and_decode_back_as_unk():
    vocab = Vocab.build(CORPUS, min_freq=2)
    ids = vocab.encode(["국민", "인공지능"])
    assert ids == [vocab["국민"], vocab.unk_id]
    assert vocab.decode(ids) == ["국민", "<unk>"]
    assert vocab.decode([vocab.pad_id, *ids], skip_specials=True) == ["국민"]


def test_bert_specials():
    vocab = Vocab.build(CORPUS, specials=BERT_SPECIALS)
    assert vocab.tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert vocab.unk_id == 1 and vocab.pad_id == 0
    assert vocab["없는말"] == 1


def test_vocabulary_without_unk_raises_on_unknown_tokens():
    vocab = Vocab(["a"], specials=())
    with pytest.raises(KeyError, match="no unknown token"):
        vocab["b"]
    with pytest.raises(KeyError, match="no padding token"):
        _ = vocab.pad_id
    with pytest.raises(KeyError, match="no unknown token"):
        _ = vocab.unk_id


@given(st.lists(st.lists(st.text(min_size=1, max_size=4), max_size=6), max_size=6))
def test_encode_then_decode_round_trips_every_known_token(corpus):
    vocab = Vocab.build(corpus, specials=SEQ_SPECIALS)
    for sentence in corpus:
        assert vocab.decode(vocab.encode(sentence)) == sentence
    assert len(set(vocab.tokens)) == len(vocab)


def test_bad_input_gets_clear_errors():
    with pytest.raises(TypeError, match=r"list\[list\[str\]\]"):
        Vocab.build("국민은 헌법을")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one str"):
        Vocab.build(["국민은", "헌법을"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(CORPUS, min_freq=0)
    with pytest.raises(ValueError, match="max_size"):
        Vocab.build(CORPUS, max_size=-1)
    with pytest.raises(ValueError, match="distinct"):
        Vocab([], specials=("<pad>", "<pad>"))
    vocab = Vocab.build(CORPUS)
    with pytest.raises(IndexError, match=r"0 <= id < 9"):
        vocab.decode([99])
    with pytest.raises(TypeError, match="id must be an int"):
        vocab.decode([1.5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not a string"):
        vocab.decode("12")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="token must be a str"):
        vocab[3]  # type: ignore[index]
    with pytest.raises(KeyError, match="not a special token"):
        vocab.id_of_special("국민")


def test_numpy_integer_ids_decode():
    import numpy as np

    vocab = Vocab.build(CORPUS)
    assert vocab.decode(np.array([4, 5])) == ["국민", "은"]


def test_oov_rate_counts_tokens_not_types():
    assert oov_rate(["x", "x", "x", "a"], {"a"}) == 0.75
    assert oov_rate(["국민", "인공지능"], Vocab.build(CORPUS)) == 0.5
    with pytest.raises(ValueError, match="empty"):
        oov_rate([], {"a"})


def test_a_string_where_a_sequence_was_meant_is_an_error_not_its_characters():
    with pytest.raises(TypeError, match="specials must be a sequence of str tokens, not one str"):
        Vocab.build([["a"]], specials="<unk>")
    with pytest.raises(TypeError, match="not one str"):
        Vocab("hello")
    vocab = Vocab.build([["a", "b"]])
    with pytest.raises(TypeError, match="got bool"):
        vocab.decode([True])
