"""The measured outcomes that chapters 1 and 2 state in words, re-measured.

Each test calls the chapter's own experiment function with the chapter's
settings, so that a sentence such as "the original order beats every shuffle"
or "subwords leave almost no token out of the vocabulary" fails loudly here
if it stops being true.
"""

from itertools import pairwise

import pytest

from course_utils.bpe import compare_tokenizations
from course_utils.datasets import korean_corpus_lines, load_kolaw, split_lines
from course_utils.natural_language import (
    BigramModel,
    edit_distance,
    shuffle_test,
    zipf_summary,
)
from course_utils.text import MorphTokenizer, fold_case, speed_ratio, time_analyzers

pytestmark = pytest.mark.slow

SUBWORDS = ["bpe", "sentencepiece-bpe", "sentencepiece-unigram"]
HEADLINE = "BREAKING NEWS : Apple opens a store in May"  # 2장's example of the rule failing
PARTICLES = {"가", "과", "는", "도", "로", "를", "에", "와", "은", "을", "의", "이"}


def _constitution_lines():
    return [line.strip() for line in load_kolaw().splitlines() if line.strip()]


# --- 1장 ---------------------------------------------------------------------


def test_original_order_beats_every_shuffle_of_its_characters():
    sentence = "모든 국민은 법 앞에 평등하다."  # its line is held out, as 1장 does
    model = BigramModel([line for line in _constitution_lines() if sentence not in line], alpha=1.0)
    result = shuffle_test(model, sentence, n_shuffles=200, seed=0)
    assert result.beaten == 1.0


def test_similar_meaning_is_not_similar_spelling():
    unrelated = [("의자", "이자"), ("과자", "과제")]
    related = [("의자", "걸상"), ("자동차", "승용차")]
    assert {edit_distance(*pair) for pair in unrelated} == {1}
    assert {edit_distance(*pair) for pair in related} == {2}


def test_constitution_morphemes_are_skewed_as_zipf_says():
    zipf = zipf_summary(
        MorphTokenizer("okt").morphs(load_kolaw()), top=10, max_rank=None, min_count=2
    )
    assert {"의", "에", "을"} <= {morpheme for morpheme, _ in zipf.ranked[:10]}
    assert zipf.half_rank / len(zipf.ranked) < 0.05
    assert zipf.singleton_share > 0.4
    assert abs(zipf.exponent - 1) < 0.25


def test_kkma_and_komoran_read_the_three_cha_as_the_chapter_says():
    sentence = "차를 마시러 공원에 가는 차 안에서 나는 그녀에게 차였다."
    kkma = MorphTokenizer("kkma").pos(sentence)
    komoran = MorphTokenizer("komoran").pos(sentence)
    assert [t for m, t in kkma if m == "차"] == ["NNG", "NNG"] and ("차이", "VV") in kkma
    assert [t for m, t in komoran if m == "차"] == ["NNG", "NNB", "NNB"]
    assert ("이", "VCP") in komoran


# --- 2장 ---------------------------------------------------------------------


def test_keeping_acronyms_costs_almost_no_vocabulary():
    from course_utils.datasets import load_lee_corpus
    from course_utils.text import rule_tokenize

    tokens = [token for document in load_lee_corpus() for token in rule_tokenize(document)]
    raw, lower = len(set(tokens)), len({t.lower() for t in tokens})
    folded = len(set(fold_case(tokens)))
    assert lower < raw and 0 < folded - lower < 0.01 * raw
    headline = fold_case(HEADLINE.split())
    assert headline[:2] == ["BREAKING", "NEWS"] and {"apple", "may"} <= set(headline)


def test_analyzers_split_the_examples_as_the_chapter_says():
    def morphs(name, text):
        return MorphTokenizer(name).morphs(text)

    wrote, father = "드디어 교안 다 썼다!", "아버지가방에들어가신다"
    assert morphs("hannanum", wrote)[-3:-1] == ["쓰", "었다"]
    assert morphs("kkma", wrote)[-4:-1] == morphs("komoran", wrote)[-4:-1] == ["쓰", "었", "다"]
    assert "썼다" in morphs("okt", wrote)
    for name in ["kkma", "komoran", "okt"]:
        assert morphs(name, father)[:2] == ["아버지", "가방"]
    assert MorphTokenizer("hannanum").pos(father)[0] == ("아버지가방에들어가", "N")
    assert "들어가신다" in morphs("okt", father)
    assert "먹었다" in morphs("okt", "나는 배를 먹었다")


def test_the_fastest_analyzer_is_several_times_faster_than_the_slowest():
    lines = [line for line in load_kolaw().splitlines() if line.strip()]
    timings = time_analyzers("\n".join(lines[::10]), repeats=5)
    fastest = min(timings.values(), key=lambda t: t.seconds)
    slowest = max(timings.values(), key=lambda t: t.seconds)
    assert speed_ratio(fastest, slowest) > 3
    assert max(timings.values(), key=lambda t: t.morphemes).name == "kkma"


@pytest.fixture(scope="module")
def comparison():
    train, held_out = split_lines(korean_corpus_lines(), held_out_fraction=0.2)
    okt = MorphTokenizer("okt")
    train_morphemes = [okt.morphs(line) for line in train]
    held_out_morphemes = [okt.morphs(line) for line in held_out]
    result = compare_tokenizations(
        train, held_out, train_morphemes, held_out_morphemes, vocab_size=2000
    )
    return result, train


def test_subwords_nearly_end_oov_at_the_price_of_longer_sequences(comparison):
    result, _ = comparison
    rows = result.rows
    oov = {name: row.oov_rate for name, row in rows.items()}
    length = {name: row.tokens_per_eojeol for name, row in rows.items()}
    assert max(rows.values(), key=lambda row: row.vocab_size).name == "eojeol"
    assert oov["eojeol"] > oov["morpheme"] > max(oov[name] for name in SUBWORDS)
    assert oov["morpheme"] < oov["eojeol"] / 3
    assert all(oov[name] < 0.01 for name in SUBWORDS)
    assert all(1.5 < length[name] < 2.5 for name in SUBWORDS)
    assert all(abs(length[name] / length["morpheme"] - 1) < 0.2 for name in SUBWORDS)


def test_bpe_learns_the_full_stop_first_then_particles(comparison):
    result, _ = comparison
    assert result.bpe.history[0][0] == (".", "</w>")
    head = result.bpe.history[:10]
    particles = [pair for pair, _ in head if pair[0] in PARTICLES and pair[1] == "</w>"]
    assert len(particles) > len(head) // 2


def test_an_unseen_eojeol_is_built_from_learned_pieces(comparison):
    result, train = comparison
    bpe = result.bpe
    train_eojeols = {word for line in train for word in line.split()}
    probe = "모든 국민은 인공지능 앞에 평등하다."
    pieces = bpe.encode(probe.split())
    assert "국민은</w>" in pieces and pieces[2:6] == ["인", "공", "지", "능"]
    assert all(char in bpe.alphabet for char in probe.replace(" ", ""))
    assert not any("인공" in word or "지능" in word for word in train_eojeols)
    assert "국민으로부터" not in train_eojeols
    unseen = bpe.encode_word("국민으로부터")
    assert len(unseen) > 1 and all(len(p.replace("</w>", "")) > 1 for p in unseen)


def test_sentencepiece_bpe_memorizes_and_unigram_splits_gukmin_eun(comparison):
    result, _ = comparison
    probe = "모든 국민은 인공지능 앞에 평등하다."
    sp_bpe = result.sentencepiece["bpe"].encode(probe, out_type=str)
    unigram = result.sentencepiece["unigram"].encode(probe, out_type=str)
    assert "▁국민은" in sp_bpe
    assert ("▁국민", "은") in pairwise(unigram)
    sizes = {len(result.bpe.symbols), *(m.get_piece_size() for m in result.sentencepiece.values())}
    assert sizes == {2000}
