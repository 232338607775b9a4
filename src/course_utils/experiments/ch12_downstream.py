"""12장's Korean experiments, part 3: the BERT paper's two other downstream formats.

Korean made by 9장's translation grammar (:mod:`course_utils.translation_lexicon`),
so every label is exact:

- :func:`make_tense_pairs`: sentence pairs, ``[CLS] A [SEP] B [SEP]``. A
  says who did what to whom, where and when; B repeats who did what to whom
  without the place and the time, in A's tense (label 1) or in another tense
  (label 0). Each sentence alone is balanced, so only the comparison of the
  two tenses tells the label.
- :func:`make_span_questions`: a question (누가? 누구를/무엇을? 어디에서? 언제?) and
  a sentence with its phrases in a random order; the answer is the span of the
  phrase that the particles mark (its characters, spaces removed).
- :func:`bag_of_words_baseline`: logistic regression on A's and B's words
  (:func:`words`: particles apart, as 9장's grammar tokenizes);
  :func:`random_span_baseline`: a span drawn at random, in expectation.
- :func:`finetune_downstream`: one run of one task from one start
  (``"pretrained"``: every weight updated; ``"random"``: the same architecture
  from BERT's initialisation; ``"frozen"``: the pretrained encoder fixed, the
  head alone trained on its features), cached by recipe;
  :func:`run_downstream` runs all of them, three seeds each, in
  :func:`~course_utils.experiments.ch12_finetuning.start_korean_training`'s
  workers.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
import time
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from course_utils import runs
from course_utils.bert import BertForSequenceClassification
from course_utils.bert_span import BertForQuestionAnswering, best_span, span_f1, span_loss
from course_utils.checks import check_int
from course_utils.experiments.ch12_finetuning import start_korean_training, wait_for_training
from course_utils.experiments.ch12_pretraining import (
    KoreanBertConfig,
    char_ids,
    check_config,
    korean_char_vocab,
    korean_pretraining_text,
    korean_task_splits,
    pretrain_korean_bert,
    pretraining_key,
)
from course_utils.train import adamw_with_warmup
from course_utils.translation_lexicon import LEXICON, Noun, TimePhrase, Verb, particle
from course_utils.wordpiece import WordPieceVocab

__all__ = [
    "STARTS",
    "TASKS",
    "BagOfWordsBaseline",
    "ConstantSpan",
    "DownstreamComparison",
    "DownstreamConfig",
    "DownstreamResult",
    "SentencePair",
    "SpanBaseline",
    "SpanQuestion",
    "additive_tense_ceiling",
    "bag_of_words_baseline",
    "constant_span_baseline",
    "downstream_jobs",
    "encode_pairs",
    "encode_questions",
    "finetune_downstream",
    "make_span_questions",
    "make_tense_pairs",
    "random_span_baseline",
    "run_downstream",
    "tense_of",
    "words",
]

TASKS = ("pairs", "spans")
STARTS = ("pretrained", "random", "frozen")

# ---------------------------------------------------------------------------
# Korean with exact labels, from the translation grammar's lexicon
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SentencePair:
    """Two Korean sentences; ``label`` 1 if B's verb has A's tense, 0 if not."""

    first: str  # A, with its spaces
    second: str  # B
    label: int


@dataclass(frozen=True)
class SpanQuestion:
    """A question about a sentence, and its answer's span in the sentence without spaces."""

    question: str  # "누가?", "누구를?", "무엇을?", "어디에서?" or "언제?"
    sentence: str  # with its spaces
    answer: str  # the phrase without its particle
    start: int  # the answer's first character, counting the sentence's characters without spaces
    end: int  # its last character (inclusive)


def _fits(text: str, alphabet: Container[str] | None) -> bool:
    return alphabet is None or all(c in alphabet for c in text if c != " ")


def _nouns(names: Sequence[str], alphabet: Container[str] | None) -> list[Noun]:
    return [
        n for n in LEXICON.nouns if (n.kind in names or n.english in names)
        and _fits(n.korean, alphabet)
    ]  # fmt: skip


def _adjectives(noun: Noun, alphabet: Container[str] | None) -> list[str]:
    if not noun.article:  # a city takes no adjective
        return []
    return [
        a.attributive for a in LEXICON.adjectives
        if (noun.kind in a.nouns or noun.english in a.nouns) and _fits(a.attributive, alphabet)
    ]  # fmt: skip


_TENSES = ("present", "past", "future")


def _verb_forms(verb: Verb, alphabet: Container[str] | None) -> dict[str, str]:
    """The verb's 합니다-style forms by tense (the future as ``먹을 것입니다``), those that fit."""
    forms = verb.forms
    options = {"present": forms["present"], "past": forms["past"],
               "future": forms["future"] + " 것입니다"}  # fmt: skip
    return {tense: f for tense, f in options.items() if _fits(f, alphabet)}


def _times(alphabet: Container[str] | None) -> list[TimePhrase]:
    return [t for t in LEXICON.times if _fits(" ".join(t.korean), alphabet)]


def _time_and_verb(
    rng: random.Random, forms: dict[str, str], times: Sequence[TimePhrase], with_time: bool
) -> tuple[str | None, str]:
    """A time phrase (or None) and a verb form whose tense it allows: no "어제 닫습니다"."""
    if with_time:
        options = [t for t in times if t.tenses & forms.keys()]
        if options:
            time_phrase = rng.choice(options)
            tense = rng.choice(sorted(time_phrase.tenses & forms.keys()))
            return " ".join(time_phrase.korean), forms[tense]
    return None, forms[rng.choice(sorted(forms))]


def _noun_phrase(rng: random.Random, noun: Noun, alphabet: Container[str] | None) -> str:
    """The noun, with one adjective half of the time."""
    adjectives = _adjectives(noun, alphabet)
    if adjectives and rng.random() < 0.5:
        return f"{rng.choice(adjectives)} {noun.korean}"
    return noun.korean


def _check_count_seed(count: object, seed: object) -> int:
    check_int(seed, "seed", 0)
    return check_int(count, "count")


def make_tense_pairs(
    count: int, seed: int = 0, alphabet: Container[str] | None = None
) -> list[SentencePair]:
    """``count`` sentence pairs, half of each label, in a seeded random order.

    A: a subject (이/가), an object (을/를), a place (에서) and a time in a
    random order, then the verb in a tense the time allows (the tense drawn
    uniformly first). B: A's subject and object, in a new random order, and the
    verb in A's tense (label 1: B tells A's event at A's time) or in one of the
    other two tenses (label 0). The label is whether the tenses agree, not
    entailment: "매일 먹습니다" arguably implies "먹었습니다", yet is labelled 0.
    B's tense is uniform in both labels, so neither sentence alone tells the
    label: only comparing the two tenses does. ``alphabet`` keeps only words
    whose characters it holds.
    """
    count = _check_count_seed(count, seed)
    rng = random.Random(seed)
    times = _times(alphabet)
    tenses_with_time = {tense for t in times for tense in t.tenses}
    frames = []
    for verb in LEXICON.verbs:
        subjects, objects = _nouns(verb.subjects, alphabet), _nouns(verb.objects, alphabet)
        places = _nouns(verb.places or ("place", "city"), alphabet)
        forms = _verb_forms(verb, alphabet)
        if (verb.frame == "transitive" and subjects and objects and places
                and set(forms) == set(_TENSES) <= tenses_with_time):  # fmt: skip
            frames.append((subjects, objects, places, forms))
    if not frames:
        raise ValueError("alphabet leaves no transitive verb with all three tenses")
    pairs = []
    for k in range(count):
        subjects, objects, places, forms = rng.choice(frames)
        subject = rng.choice(subjects)
        obj = rng.choice([n for n in objects if n != subject] or objects)
        tense = rng.choice(_TENSES)
        time_phrase = " ".join(rng.choice([t for t in times if tense in t.tenses]).korean)
        label = k % 2
        b_tense = tense if label else rng.choice([t for t in _TENSES if t != tense])
        core = [_noun_phrase(rng, subject, alphabet) + particle(subject.korean, "이"),
                _noun_phrase(rng, obj, alphabet) + particle(obj.korean, "을")]  # fmt: skip
        a = [*core, rng.choice(places).korean + "에서", time_phrase]
        rng.shuffle(a)
        rng.shuffle(core)
        pairs.append(SentencePair(" ".join([*a, forms[tense]]),
                                  " ".join([*core, forms[b_tense]]), label))  # fmt: skip
    rng.shuffle(pairs)
    return pairs


_OBJECT_QUESTION = {True: "누구를?", False: "무엇을?"}


def make_span_questions(
    count: int, seed: int = 0, alphabet: Container[str] | None = None
) -> list[SpanQuestion]:
    """``count`` questions, each about a new sentence whose phrases come in a random order.

    The sentence: a subject (이/가), an object (을/를), a place (에서) and a time,
    each of the last two half of the time, then the verb in a tense the time
    allows. The question asks for one of them, chosen uniformly: 누가? (the
    subject), 누구를?/무엇을? (the object, a person or animal or not), 어디에서? (the
    place), 언제? (the time). The spans count the characters of the sentence
    without its spaces, from 0; ``end`` is the answer's last character.
    """
    count = _check_count_seed(count, seed)
    rng = random.Random(seed)
    frames = []
    for verb in LEXICON.verbs:
        subjects, objects = _nouns(verb.subjects, alphabet), _nouns(verb.objects, alphabet)
        places = _nouns(verb.places or ("place", "city"), alphabet)
        forms = _verb_forms(verb, alphabet)
        if verb.frame == "transitive" and subjects and objects and forms:
            frames.append((subjects, objects, places, forms))
    if not frames:
        raise ValueError("alphabet leaves no transitive verb")
    times = _times(alphabet)
    questions = []
    for _ in range(count):
        subjects, objects, places, forms = rng.choice(frames)
        subject = rng.choice(subjects)
        obj = rng.choice([n for n in objects if n != subject] or objects)
        animate = obj.kind in ("person", "animal")
        phrases = [  # (question, answer, particle)
            ("누가?", _noun_phrase(rng, subject, alphabet), particle(subject.korean, "이")),
            (_OBJECT_QUESTION[animate], _noun_phrase(rng, obj, alphabet),
             particle(obj.korean, "을")),
        ]  # fmt: skip
        if places and rng.random() < 0.5:
            phrases.append(("어디에서?", _noun_phrase(rng, rng.choice(places), alphabet), "에서"))
        time_phrase, verb_form = _time_and_verb(rng, forms, times, rng.random() < 0.5)
        if time_phrase is not None:
            phrases.append(("언제?", time_phrase, ""))
        rng.shuffle(phrases)
        asked = rng.randrange(len(phrases))
        offset = 0
        for k, (_, answer, _) in enumerate(phrases):
            length = len(answer.replace(" ", ""))
            if k == asked:
                start, end = offset, offset + length - 1
            offset += length + len(phrases[k][2])
        words = [answer + ending for _, answer, ending in phrases]
        sentence = " ".join([*words, verb_form])
        questions.append(SpanQuestion(phrases[asked][0], sentence, phrases[asked][1], start, end))
    return questions


@dataclass(frozen=True)
class SpanBaseline:
    """What guessing a span scores: the expectation over every span the decoder may answer."""

    exact: float  # expected share of questions answered exactly
    f1: float  # expected character F1


def _spans(n: int, max_length: int) -> list[tuple[int, int]]:
    """Every span ``best_span`` may answer in ``n`` characters: ``i <= j < i + max_length``."""
    return [(i, j) for i in range(n) for j in range(i, min(n, i + max_length))]


def _check_examples(name: str, examples: Sequence[object], kind: type) -> None:
    """A non-empty sequence of ``kind`` (SentencePair or SpanQuestion), else ``TypeError``."""
    if not examples or not all(isinstance(e, kind) for e in examples):
        raise TypeError(f"{name} must be a non-empty sequence of {kind.__name__}")


def random_span_baseline(questions: Sequence[SpanQuestion], max_length: int) -> SpanBaseline:
    """Exact match and F1 of a span drawn uniformly from the sentence's spans of at most
    ``max_length`` characters (as :func:`~course_utils.bert_span.best_span` may answer),
    computed exactly by going through every such span of every question."""
    _check_examples("questions", questions, SpanQuestion)
    check_int(max_length, "max_length")
    exact = f1 = 0.0
    for q in questions:
        spans = _spans(len(q.sentence.replace(" ", "")), max_length)
        exact += sum((i, j) == (q.start, q.end) for i, j in spans) / len(spans)
        f1 += sum(span_f1((i, j), (q.start, q.end)) for i, j in spans) / len(spans)
    return SpanBaseline(exact / len(questions), f1 / len(questions))


@dataclass(frozen=True)
class ConstantSpan:
    """Answer every question with the same span, the one best on the training questions."""

    exact_span: tuple[int, int]  # the span with the most exact matches on the training questions
    exact: float  # its exact match on the test questions
    f1_span: tuple[int, int]  # the span with the highest mean F1 on the training questions
    f1: float  # its F1 on the test questions


def constant_span_baseline(
    train: Sequence[SpanQuestion], test: Sequence[SpanQuestion], max_length: int
) -> ConstantSpan:
    """The position prior: the fixed spans (of at most ``max_length`` characters, inside the
    shortest training sentence) that score best on ``train``, scored on ``test``. A rule
    that reads neither the question nor the sentence."""
    _check_examples("train", train, SpanQuestion)
    _check_examples("test", test, SpanQuestion)
    check_int(max_length, "max_length")
    spans = _spans(min(len(q.sentence.replace(" ", "")) for q in train), max_length)

    def exact(span: tuple[int, int], questions: Sequence[SpanQuestion]) -> float:
        return sum(span == (q.start, q.end) for q in questions) / len(questions)

    def f1(span: tuple[int, int], questions: Sequence[SpanQuestion]) -> float:
        return sum(span_f1(span, (q.start, q.end)) for q in questions) / len(questions)

    by_exact = max(spans, key=lambda span: exact(span, train))
    by_f1 = max(spans, key=lambda span: f1(span, train))
    return ConstantSpan(by_exact, exact(by_exact, test), by_f1, f1(by_f1, test))


@functools.cache
def _tense_of_form() -> dict[str, str]:
    """Every verb form the grammar makes → its tense."""
    return {
        form: tense for verb in LEXICON.verbs for tense, form in _verb_forms(verb, None).items()
    }


def tense_of(sentence: str) -> str:
    """The tense (``"present"``, ``"past"``, ``"future"``) of a generated sentence's verb."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    words = sentence.split()
    ending = " ".join(words[-2:]) if sentence.endswith(" 것입니다") else words[-1] if words else ""
    if ending not in _tense_of_form():
        raise ValueError(f"sentence must end in a verb form of the grammar, got {sentence!r}")
    return _tense_of_form()[ending]


def additive_tense_ceiling(pairs: Sequence[SentencePair]) -> float:
    """The best accuracy on ``pairs`` of a rule that scores A's tense and B's tense apart and
    thresholds the sum: ``u[tense of A] + v[tense of B] > θ`` (or ``< θ``). Exact: every
    such rule on three tenses labels the nine (A, B) tense cells in a pattern that integer
    scores from −3 to 3 reach, and each pattern is scored on the pairs' cell counts."""
    _check_examples("pairs", pairs, SentencePair)
    ones = torch.zeros(3, 3)  # pairs of label 1 in each (tense of A, tense of B) cell
    zeros = torch.zeros(3, 3)
    for p in pairs:
        cell = (_TENSES.index(tense_of(p.first)), _TENSES.index(tense_of(p.second)))
        (ones if p.label else zeros)[cell] += 1
    scores = torch.tensor(list(itertools.product(range(-3, 4), repeat=3)), dtype=torch.float)
    sums = (scores[:, None, :, None] + scores[None, :, None, :]).reshape(-1, 9)  # (u, v) → cells
    best = 0.0
    for threshold in torch.arange(-6.5, 7.0):
        says_one = sums > threshold  # (rules, 9); the rule "< θ" is its complement
        right = (says_one.float() @ ones.flatten()) + ((~says_one).float() @ zeros.flatten())
        best = max(best, float(right.max()), float(len(pairs) - right.min()))
    return best / len(pairs)


# ---------------------------------------------------------------------------
# What a bag of words can do with the pairs
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BagOfWordsBaseline:
    """Logistic regression on the words of A and, apart, the words of B."""

    accuracy: float  # on the test pairs
    train_accuracy: float


_NOUN_WORDS = frozenset(n.korean for n in LEXICON.nouns)


def words(sentence: str) -> list[str]:
    """The sentence's words with the particles apart, as 9장's grammar tokenizes Korean:
    ``"고양이가 개를 봅니다"`` → ``["고양이", "가", "개", "를", "봅니다"]``."""
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
    tokens = []
    for word in sentence.split():
        if word[:-1] in _NOUN_WORDS and word[-1] in "이가을를":
            tokens += [word[:-1], word[-1]]
        else:
            tokens.append(word)
    return tokens


def bag_of_words_baseline(
    train: Sequence[SentencePair], test: Sequence[SentencePair]
) -> BagOfWordsBaseline:
    """Fit logistic regression on [count of each word in A, count of each word in B]."""
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    _check_examples("train", train, SentencePair)
    _check_examples("test", test, SentencePair)
    vectorizer = CountVectorizer(analyzer=words).fit([p.first for p in train])

    def features(pairs: Sequence[SentencePair]) -> Any:
        return hstack([vectorizer.transform([p.first for p in pairs]),
                       vectorizer.transform([p.second for p in pairs])]).tocsr()  # fmt: skip

    model = LogisticRegression(max_iter=2000).fit(features(train), [p.label for p in train])

    def score(pairs: Sequence[SentencePair]) -> float:
        return float(model.score(features(pairs), [p.label for p in pairs]))

    return BagOfWordsBaseline(score(test), score(train))


# ---------------------------------------------------------------------------
# Encoding: [CLS] A [SEP] B [SEP], segment ids 0 then 1
# ---------------------------------------------------------------------------


def _encode_two(
    firsts: Sequence[str], seconds: Sequence[str], vocab: WordPieceVocab, max_len: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Ids, segment ids and attention mask (N, T) of ``[CLS] a [SEP] b [SEP]``, spaces dropped."""
    cls, sep, pad = (torch.tensor([vocab.id_of(t)]) for t in ("[CLS]", "[SEP]", "[PAD]"))
    rows, segments = [], []
    for a, b in zip(firsts, seconds, strict=True):
        left = torch.cat([cls, char_ids(list(a), vocab), sep])
        right = torch.cat([char_ids(list(b), vocab), sep])
        rows.append(torch.cat([left, right]))
        segments.append(torch.cat([torch.zeros_like(left), torch.ones_like(right)]))
    T = max(len(r) for r in rows)
    if max_len < T:
        raise ValueError(f"a pair has {T} tokens but the model reads at most {max_len}")
    ids = torch.full((len(rows), T), int(pad))  # (N, T)
    types = torch.zeros_like(ids)
    for i, (row, segment) in enumerate(zip(rows, segments, strict=True)):
        ids[i, : len(row)], types[i, : len(row)] = row, segment
    return ids, types, (ids != int(pad)).long()


def encode_pairs(
    pairs: Sequence[SentencePair], vocab: WordPieceVocab, max_len: int = 64
) -> dict[str, torch.Tensor]:
    """``input_ids``, ``token_type_ids``, ``attention_mask`` (N, T) and ``labels`` (N,)."""
    _check_examples("pairs", pairs, SentencePair)
    ids, types, mask = _encode_two([p.first for p in pairs], [p.second for p in pairs], vocab,
                                   max_len)  # fmt: skip
    labels = torch.tensor([p.label for p in pairs])
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": labels}


def encode_questions(
    questions: Sequence[SpanQuestion], vocab: WordPieceVocab, max_len: int = 64
) -> dict[str, torch.Tensor]:
    """``[CLS] question [SEP] sentence [SEP]``: the three (N, T) inputs, ``start`` and ``end``
    (N,) positions in that sequence, and ``allowed`` (N, T), True at the sentence's characters."""
    _check_examples("questions", questions, SpanQuestion)
    ids, types, mask = _encode_two([q.question for q in questions],
                                   [q.sentence for q in questions], vocab, max_len)  # fmt: skip
    offset = torch.tensor(
        [len(q.question.replace(" ", "")) + 2 for q in questions]
    )  # [CLS] q [SEP]
    allowed = (types == 1) & (ids != vocab.id_of("[SEP]"))  # (N, T)
    return {
        "input_ids": ids, "token_type_ids": types, "attention_mask": mask,
        "start": offset + torch.tensor([q.start for q in questions]),
        "end": offset + torch.tensor([q.end for q in questions]), "allowed": allowed,
    }  # fmt: skip


# ---------------------------------------------------------------------------
# Fine-tuning: pretrained, random start, or frozen encoder (feature-based)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DownstreamConfig:
    """The recipe of both tasks: the same for the three starts and the three seeds."""

    train_examples: int = 800
    test_examples: int = 400
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 3e-3  # AdamW's peak (6장's tasks' too), after the warm-up, then to 0
    warmup_share: float = 0.1  # of the steps
    weight_decay: float = 0.01
    dropout: float = 0.1
    max_answer_length: int = 12  # characters: the longest span best_span may answer
    seeds: tuple[int, ...] = (0, 1, 2)

    def __post_init__(self) -> None:
        for name in ("train_examples", "test_examples", "epochs", "batch_size",
                     "max_answer_length"):  # fmt: skip
            check_int(getattr(self, name), name)
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct, got {self.seeds!r}")

    @property
    def steps(self) -> int:
        """Optimizer steps of one run."""
        return self.epochs * math.ceil(self.train_examples / self.batch_size)


@dataclass(frozen=True)
class DownstreamResult:
    """One run: ``task`` fine-tuned from ``start`` with ``seed``, scored on the test examples."""

    task: str
    start: str
    seed: int
    accuracy: float  # pairs: labels right; spans: exact match (both ends right)
    f1: float  # spans: SQuAD's F1 over characters; pairs: the accuracy again
    losses: tuple[float, ...]  # mean training loss of each epoch
    trained: int  # parameters that the optimizer updated
    tested: int  # test examples (those that repeat a training example are dropped)
    seconds: float
    predicted_ones: float | None  # pairs: share of test pairs labelled 1 (0 or 1: one label only)


@functools.lru_cache(maxsize=2)
def _vocab(config: KoreanBertConfig) -> WordPieceVocab:
    """The pretraining text's characters: the same vocabulary for every start."""
    return korean_char_vocab(
        korean_pretraining_text(korean_task_splits(), config.with_gettext).lines
    )


Encoded = dict[str, torch.Tensor]


def _key(example: SentencePair | SpanQuestion) -> tuple[str, str]:
    if isinstance(example, SentencePair):
        return example.first, example.second
    return example.question, example.sentence


def _split(task: str, d: DownstreamConfig, vocab: WordPieceVocab) -> tuple[list[Any], list[Any]]:
    """Train and test examples; the test seed is not a training seed, repeats are dropped."""
    make: Callable[..., list[Any]] = make_tense_pairs if task == "pairs" else make_span_questions
    train = make(d.train_examples, 0, vocab)
    seen = {_key(e) for e in train}
    return train, [e for e in make(d.test_examples, 1, vocab) if _key(e) not in seen]


@functools.lru_cache(maxsize=4)
def _data(
    task: str, config: KoreanBertConfig, d: DownstreamConfig, vocab: WordPieceVocab
) -> tuple[Encoded, Encoded]:
    """:func:`_split`'s examples, encoded."""
    train, test = _split(task, d, vocab)
    encode: Callable[..., Encoded] = encode_pairs if task == "pairs" else encode_questions
    return encode(train, vocab, config.seq_len), encode(test, vocab, config.seq_len)


def _check_run(task: object, start: object) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if start not in STARTS:
        raise ValueError(f"start must be one of {STARTS}, got {start!r}")


def finetune_downstream(
    task: str,
    start: str,
    seed: int = 0,
    config: KoreanBertConfig | None = None,
    downstream: DownstreamConfig | None = None,
) -> DownstreamResult:
    """Fine-tune the tiny Korean BERT on ``task`` (``"pairs"`` or ``"spans"``) from ``start``.

    ``"pretrained"`` and ``"random"`` update every weight; ``"frozen"`` runs
    the pretrained encoder once (no dropout, no gradient) and trains only the
    head on its final hidden states: the pooler and the classifier for pairs,
    the start and end vectors for spans. Cached by recipe.
    """
    _check_run(task, start)
    check_int(seed, "seed", 0)
    config = check_config(config)
    d = DownstreamConfig() if downstream is None else downstream
    if not isinstance(d, DownstreamConfig):
        raise TypeError(f"downstream must be a DownstreamConfig or None, got {type(d).__name__}")
    if start != "random":
        wait_for_training(config)

    def train() -> dict[str, Any]:
        from course_utils.device import seed_everything

        vocab = _vocab(config)
        train_set, test_set = _data(task, config, d, vocab)
        # before seeding: loading the pretrained model the first time in a process draws
        # random numbers (its layers are built, then overwritten), which would change this
        # run's dropout masks according to what the process had run before
        encoder = None
        if start != "random":
            encoder = pretrain_korean_bert(config, show_progress=False).model.bert.state_dict()
        seed_everything(seed)
        bert_config = config.bert_config(len(vocab), d.dropout)
        model: Any = (BertForSequenceClassification(bert_config) if task == "pairs"
                            else BertForQuestionAnswering(bert_config))  # fmt: skip
        if encoder is not None:
            missing = model.bert.load_state_dict(encoder, strict=False)
            assert not missing.unexpected_keys
        inputs = ("input_ids", "attention_mask", "token_type_ids")

        def hidden(batch: dict[str, torch.Tensor]) -> torch.Tensor:
            return model.bert(*(batch[k] for k in inputs)).last_hidden_state  # (B, T, d)

        def head(h: torch.Tensor) -> Any:
            if task == "pairs":  # the pooler (tanh on [CLS]), dropout, the classifier
                return model.classifier(model.dropout(model.bert.pooler(h)))  # (B, 2)
            scores = model.qa_outputs(h)  # (B, T, 2)
            return scores[..., 0], scores[..., 1]  # (B, T) each

        def loss_fn(out: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
            if task == "pairs":
                return nn.functional.cross_entropy(out, batch["labels"])
            outside = ~batch["allowed"]  # the softmax runs over the sentence's characters only
            return span_loss(out[0].masked_fill(outside, -1e4), out[1].masked_fill(outside, -1e4),
                             batch["start"], batch["end"])  # fmt: skip

        frozen = start == "frozen"
        if frozen:  # features once, as the paper's feature-based approach
            model.bert.eval()
            with torch.no_grad():
                train_set = {**train_set, "hidden": hidden(train_set)}
                test_set = {**test_set, "hidden": hidden(test_set)}
            for p in model.bert.parameters():
                p.requires_grad_(False)
            if task == "pairs":
                for p in model.bert.pooler.parameters():
                    p.requires_grad_(True)
        trainable = [p for p in model.parameters() if p.requires_grad]
        holder = nn.ParameterList(trainable)
        optimizer, schedule = adamw_with_warmup(
            holder, d.learning_rate, d.weight_decay, d.steps, round(d.warmup_share * d.steps)
        )
        order = torch.Generator().manual_seed(seed)
        n = len(train_set["input_ids"])
        losses = []
        clock = time.perf_counter()
        for _ in range(d.epochs):
            model.train()
            if frozen:
                model.bert.eval()
            total = 0.0
            rows = torch.randperm(n, generator=order).split(d.batch_size)
            for r in rows:
                batch = {k: v[r] for k, v in train_set.items()}
                out = head(batch["hidden"] if frozen else hidden(batch))
                loss = loss_fn(out, batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                schedule.step()
                total += loss.item()
            losses.append(total / len(rows))
        seconds = time.perf_counter() - clock
        model.eval()
        with torch.no_grad():
            out = head(test_set["hidden"] if frozen else hidden(test_set))
        ones = -1.0  # spans: no label
        if task == "pairs":
            accuracy = f1 = float((out.argmax(-1) == test_set["labels"]).float().mean())
            ones = float(out.argmax(-1).float().mean())
        else:
            first, last = best_span(out[0], out[1], test_set["allowed"], d.max_answer_length)
            gold = zip(test_set["start"].tolist(), test_set["end"].tolist(), strict=True)
            pairs = list(zip(zip(first.tolist(), last.tolist(), strict=True), gold, strict=True))
            accuracy = sum(p == g for p, g in pairs) / len(pairs)
            f1 = sum(span_f1(p, g) for p, g in pairs) / len(pairs)
        return {"accuracy": accuracy, "f1": f1, "losses": losses, "ones": ones,
                "trained": sum(p.numel() for p in trainable),
                "tested": len(test_set["input_ids"]), "seconds": seconds}  # fmt: skip

    saved, _ = runs.cached("bert-downstream", (*pretraining_key(config), d, task, start, seed),
                           lambda: runs.single_threaded(train))  # fmt: skip
    return DownstreamResult(task, start, seed, float(saved["accuracy"]), float(saved["f1"]),
                            tuple(saved["losses"]), int(saved["trained"]), int(saved["tested"]),
                            float(saved["seconds"]),
                            float(saved["ones"]) if task == "pairs" else None)  # fmt: skip


def downstream_jobs(
    config: KoreanBertConfig | None = None, downstream: DownstreamConfig | None = None
) -> list[tuple[bool, Callable[..., Any], tuple[Any, ...]]]:
    """The runs the cache lacks, as ``(needs pretraining, function, args)``."""
    config = check_config(config)
    d = DownstreamConfig() if downstream is None else downstream
    jobs = []
    for start in ("random", "pretrained", "frozen"):
        for task in TASKS:
            for seed in d.seeds:
                path = runs.cache_path(
                    "bert-downstream", (*pretraining_key(config), d, task, start, seed)
                )
                if path is not None and not path.is_file():
                    jobs.append((start != "random", finetune_downstream,
                                 (task, start, seed, config, d)))  # fmt: skip
    return jobs


@dataclass
class DownstreamComparison:
    """Both tasks, three starts, every seed: :func:`run_downstream`'s results."""

    results: dict[tuple[str, str, int], DownstreamResult] = field(repr=False)
    baseline: BagOfWordsBaseline  # the pairs
    tense_ceiling: float  # the pairs: the best rule that scores A's and B's tenses apart
    span_baseline: SpanBaseline  # the span questions: a span drawn at random
    constant_span: ConstantSpan  # the span questions: the same span for every question
    config: DownstreamConfig

    def scores(self, task: str, start: str, metric: str = "accuracy") -> list[float]:
        """``metric`` (``"accuracy"`` or ``"f1"``) of every seed, in seed order."""
        _check_run(task, start)
        if metric not in ("accuracy", "f1"):
            raise ValueError(f"metric must be 'accuracy' or 'f1', got {metric!r}")
        return [getattr(self.results[task, start, s], metric) for s in self.config.seeds]

    def table(self) -> list[dict[str, object]]:
        """One row per task and start: the mean, the lowest and the highest over the seeds."""
        rows: list[dict[str, object]] = []
        for task in TASKS:
            for metric in ("accuracy",) if task == "pairs" else ("accuracy", "f1"):
                for start in STARTS:
                    s = self.scores(task, start, metric)
                    rows.append({"task": task, "metric": metric, "start": start,
                                 "mean": sum(s) / len(s), "min": min(s),
                                 "max": max(s)})  # fmt: skip
        return rows


def run_downstream(
    config: KoreanBertConfig | None = None, downstream: DownstreamConfig | None = None
) -> DownstreamComparison:
    """Every run of both tasks (training only what the cache lacks) and the baselines: on the
    pairs, a bag of words and the best additive rule on the two tenses; on the questions, a
    random span and the best constant span."""
    config = check_config(config)
    d = DownstreamConfig() if downstream is None else downstream
    start_korean_training(config, downstream_jobs(config, d))
    vocab = _vocab(config)
    pairs, questions = _split("pairs", d, vocab), _split("spans", d, vocab)
    baseline = bag_of_words_baseline(*pairs)
    span_baseline = random_span_baseline(questions[1], d.max_answer_length)
    constant = constant_span_baseline(*questions, d.max_answer_length)
    wait_for_training(config)
    results = {
        (task, start, seed): finetune_downstream(task, start, seed, config, d)
        for task in TASKS for start in STARTS for seed in d.seeds
    }  # fmt: skip
    return DownstreamComparison(results, baseline, additive_tense_ceiling(pairs[1]), span_baseline,
                                constant, d)  # fmt: skip
