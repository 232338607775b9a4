"""13장's byte-level BPE (course_utils.byte_bpe) against tokenizers' ByteLevelBPETokenizer
trained on the book's Korean text: the same tokens and ids, nothing unknown, bytes back."""

from __future__ import annotations

import pytest

from course_utils.byte_bpe import ByteLevelBPE, bytes_to_unicode

tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def trained():
    from course_utils.datasets import load_kolaw

    lines = [line for line in load_kolaw().splitlines() if line.strip()]
    cut = len(lines) * 4 // 5  # the last fifth is held out
    tokenizer = tokenizers.ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(lines[:cut], vocab_size=1000, min_frequency=2,
                                  show_progress=False)  # fmt: skip
    return tokenizer, ByteLevelBPE.from_tokenizers(tokenizer), lines[cut:]


def test_tokens_and_ids_equal_tokenizers_on_held_out_korean_and_english(trained):
    tokenizer, ours, held_out = trained
    assert len(held_out) > 50
    texts = [*held_out, "Hello, world! It's 2026.", "  여러 칸의   공백\n과 줄바꿈",
             "처음 보는 글자: 鑫 🙂 ÿ", ""]  # fmt: skip
    for text in texts:
        theirs = tokenizer.encode(text)
        assert ours.tokens(text) == theirs.tokens, text
        assert ours.encode(text) == theirs.ids, text
        assert ours.decode(ours.encode(text)) == text  # every byte comes back
    # the order of the merges matters: applied last-learned first, every held-out line differs
    backwards = ByteLevelBPE(ours.vocab, list(ours.ranks)[::-1])
    assert all(backwards.tokens(t) != tokenizer.encode(t).tokens for t in held_out)


def test_a_hangul_syllable_is_three_bytes_and_merges_join_them(trained):
    _, ours, _ = trained
    assert len("한".encode()) == 3 and len(b"a") == 1
    byte = bytes_to_unicode()
    assert len(byte) == 256 and len(set(byte.values())) == 256 and byte[ord(" ")] == "Ġ"
    unmerged = ByteLevelBPE(ours.vocab, [])
    assert len(unmerged.tokens("대한민국")) == 12  # 4 syllables × 3 bytes
    assert len(ours.tokens("대한민국")) < 4  # learned from the constitution


def test_bad_vocabularies_are_named():
    with pytest.raises(ValueError, match="lacks 255 of the 256 byte symbols"):
        ByteLevelBPE({"a": 0}, [])
    with pytest.raises(TypeError, match="text must be a str"):
        ByteLevelBPE({c: i for i, c in enumerate(bytes_to_unicode().values())}, []).tokens(3)
