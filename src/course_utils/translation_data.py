"""English → Korean sentence pairs from a small grammar, for 9장 Seq2seq and 10장 어텐션.

No Korean–English parallel corpus installs offline, so the chapters translate a
language that this module generates. A bilingual grammar turns English SVO
clauses into Korean SOV clauses, and because every Korean token is produced
from known English words, each pair carries its gold word alignment.

What the grammar covers, per clause (``[...]`` is optional)::

    English: SUBJ [does/did/will] [not] VERB [OBJ | to DEST] [with COMP] [in/at/on PLACE] [TIME]
    Korean : SUBJ-이/가|은/는 [TIME] [PLACE 에서] [COMP 와/과 함께] [OBJ 을/를 | DEST (으)로] VERB

- noun phrases take up to ``max_adjectives`` attributive adjectives in a fixed
  order (opinion, size, state, age, colour): ``the small white cat`` →
  ``작은 하얀 고양이``;
- tense (present, past, future) and negation (``-지 않다``) in the 합니다 style:
  ``eats`` → ``먹습니다``, ``ate`` → ``먹었습니다``, ``will eat`` → ``먹을 것입니다``,
  ``did not eat`` → ``먹지 않았습니다``; irregular stems (ㄹ, ㅂ, ㄷ, ㅅ, 르, ㅡ, ㅎ)
  are conjugated by rule;
- time phrases agree with the tense (``yesterday`` only with the past,
  ``tomorrow`` only with the future);
- clauses are joined by ``and``; Korean ends each clause and starts the next
  with ``그리고``: ``A and B .`` → ``A . 그리고 B .``.

Conventions that make the translation a function (one Korean output per input):

- a subject with ``a``/``an`` takes 이/가 (new information), one with ``the``
  takes the topic particle 은/는; objects always take ``the``;
- each particle's form follows the noun's last sound (고양이**가**, 생선**을**,
  서울**로**, 집**으로**), computed by :func:`course_utils.text.josa`.

Tokens. English: lowercase words and ``.``, split on spaces. Korean: eojeol
(words between spaces) with the particles (조사) split off as tokens of their
own, so ``고양이가`` is ``고양이 가``. A separate particle token keeps the
vocabulary small (no noun+particle combinations), makes the 이/가 choice a
decision the model takes from the previous token's last sound, and gives the
alignment a token to point at. Verb endings stay attached (``먹었습니다`` is one
token): irregular stems make a stem/ending split non-standard.
:func:`korean_text` glues the particles back on for display.

Alignment. ``Pair.alignment[j]`` lists the source positions that target token
``j`` translates. Every target token is aligned: a noun, adjective or verb to
its English word; the subject particle to the article and the noun (the article
chooses 이/가 or 은/는); the object particle to the noun; 에서 to in/at/on,
(으)로 to ``to``, 와/과 and 함께 to ``with``; 않습니다/않았습니다 to ``does/did not``,
않을 to ``not``, 것입니다 to ``will``; the clause-ending ``.`` and ``그리고`` to
``and``. Only articles can be left unaligned on the English side.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

import numpy as np

from course_utils.translation_lexicon import (
    LEXICON,
    NOUN_KINDS,
    PARTICLES,
    TENSES,
    Adjective,
    Noun,
    TimePhrase,
    Verb,
    conjugate,
    particle,
)

__all__ = [
    "ADJECTIVE_WEIGHTS",
    "MAX_ADJECTIVES",
    "P_COMPANION",
    "P_DEFINITE",
    "P_NEGATIVE",
    "P_PLACE",
    "P_TIME",
    "SPLITS",
    "Pair",
    "Splits",
    "alignment_matrix",
    "count_sentences",
    "english_text",
    "generate_pairs",
    "korean_text",
    "length_bounds",
    "length_histogram",
    "make_splits",
    "source_vocabulary",
    "target_vocabulary",
    "translate",
]

SPLITS = ("train", "valid", "test")

# How often the optional parts of a clause appear.
P_NEGATIVE = 0.3
P_TIME = 0.5
P_PLACE = 0.4
P_COMPANION = 0.2
P_DEFINITE = 0.5  # subject with "the" (→ 은/는) rather than "a" (→ 이/가)
ADJECTIVE_WEIGHTS = (0.55, 0.3, 0.15)  # 0, 1, 2 adjectives (3: the last weight again)
MAX_ADJECTIVES = 3


# ---------------------------------------------------------------------------
# The grammar, resolved once at import
# ---------------------------------------------------------------------------

_NOUN_BY_ENGLISH = {noun.english: noun for noun in LEXICON.nouns}


def _resolve(names: Iterable[str]) -> tuple[Noun, ...]:
    """Nouns named by kind or by English word, in lexicon order, without repeats."""
    wanted = set(names)
    unknown = wanted - set(NOUN_KINDS) - set(_NOUN_BY_ENGLISH)
    if unknown:
        raise ValueError(f"unknown noun kinds or nouns: {sorted(unknown)}")
    return tuple(n for n in LEXICON.nouns if n.kind in wanted or n.english in wanted)


@dataclass(frozen=True)
class _Frame:
    verb: Verb
    forms: dict[str, str]
    subjects: tuple[Noun, ...]
    complements: tuple[Noun, ...]  # objects, or destinations of a motion verb
    places: tuple[Noun, ...]  # empty for motion verbs


def _frames() -> tuple[_Frame, ...]:
    frames = []
    for verb in LEXICON.verbs:
        if verb.frame == "motion":
            places: tuple[Noun, ...] = ()
        else:
            places = _resolve(verb.places or ("place", "city"))
        frames.append(
            _Frame(verb, verb.forms, _resolve(verb.subjects), _resolve(verb.objects), places)
        )
    return tuple(frames)


_FRAMES = _frames()
_COMPANIONS = _resolve(("person", "animal"))
_NOT = {t: f for t, f in conjugate("않다").items() if t in TENSES}  # 않습니다, 않았습니다, 않을
_WILL = "것입니다"


def _adjective_groups(noun: Noun) -> tuple[tuple[Adjective, ...], ...]:
    """The adjectives that describe ``noun``, grouped by order (one per group in a stack)."""
    if not noun.article:
        return ()
    groups: dict[int, list[Adjective]] = {}
    for adjective in LEXICON.adjectives:
        if noun.kind in adjective.nouns or noun.english in adjective.nouns:
            groups.setdefault(adjective.order, []).append(adjective)
    return tuple(tuple(groups[order]) for order in sorted(groups))


_ADJECTIVE_GROUPS = {noun: _adjective_groups(noun) for noun in LEXICON.nouns}
_TIMES_BY_TENSE = {t: tuple(p for p in LEXICON.times if t in p.tenses) for t in TENSES}


def _stack_count(noun: Noun, max_adjectives: int) -> int:
    """How many adjective stacks (of 0..max_adjectives adjectives) ``noun`` can take."""
    counts = [1]  # counts[k]: stacks of k adjectives
    for group in _ADJECTIVE_GROUPS[noun]:
        counts = [
            (counts[k] if k < len(counts) else 0) + (counts[k - 1] * len(group) if k else 0)
            for k in range(len(counts) + 1)
        ]
    return sum(counts[: max_adjectives + 1])


# ---------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------

Alignment = tuple[tuple[int, ...], ...]
_Linked = tuple[str, tuple[int, ...]]  # a Korean token and the English positions it translates
_T = TypeVar("_T")


@dataclass(frozen=True)
class Pair:
    """One English → Korean pair.

    ``source`` (S tokens) and ``target`` (T tokens) are tuples of strings;
    ``alignment`` has T entries, ``alignment[j]`` the sorted source positions
    (each in ``range(S)``) that ``target[j]`` translates; ``clauses`` is the
    number of clauses joined by ``and``.
    """

    source: tuple[str, ...]
    target: tuple[str, ...]
    alignment: Alignment
    clauses: int

    @property
    def source_text(self) -> str:
        return english_text(self.source)

    @property
    def target_text(self) -> str:
        return korean_text(self.target)


class _Word:
    """A noun compiled for sampling: article, adjective groups and particle forms precomputed."""

    __slots__ = ("article", "english", "groups", "korean", "particles", "preposition")

    def __init__(self, noun: Noun) -> None:
        self.english = noun.english
        self.korean = noun.korean
        self.article = "the" if noun.article else ""
        self.preposition = noun.preposition
        self.groups = tuple(
            tuple((a.english, a.attributive) for a in group) for group in _ADJECTIVE_GROUPS[noun]
        )
        self.particles = {
            form: particle(noun.korean, form) for form in ("이", "은", "을", "와", "으로")
        }


class _CompiledFrame:
    __slots__ = ("base", "complements", "forms", "motion", "past", "places", "subjects", "third")

    def __init__(self, frame: _Frame, words: dict[Noun, _Word]) -> None:
        verb = frame.verb
        self.base, self.third, self.past = verb.base, verb.third, verb.past
        self.forms = dict(frame.forms)
        self.motion = verb.frame == "motion"
        self.subjects = tuple(words[n] for n in frame.subjects)
        self.complements = tuple(words[n] for n in frame.complements)
        self.places = tuple(words[n] for n in frame.places)


_WORDS = {noun: _Word(noun) for noun in LEXICON.nouns}
_COMPILED = tuple(_CompiledFrame(frame, _WORDS) for frame in _FRAMES)
_COMPANION_WORDS = tuple(_WORDS[n] for n in _COMPANIONS)
_ADJECTIVE_COUNT_WEIGHTS = tuple(
    tuple(ADJECTIVE_WEIGHTS[min(k, len(ADJECTIVE_WEIGHTS) - 1)] for k in range(most + 1))
    for most in range(MAX_ADJECTIVES + 1)
)


def _pick(rng: random.Random, options: Sequence[_T]) -> _T:
    return options[int(rng.random() * len(options))]


def _pick_adjectives(
    rng: random.Random, word: _Word, max_adjectives: int
) -> tuple[tuple[str, str], ...]:
    """Up to ``max_adjectives`` (English, Korean) adjectives for ``word``, one per group."""
    groups = word.groups
    most = min(max_adjectives, len(groups))
    if most == 0:
        return ()
    weights = _ADJECTIVE_COUNT_WEIGHTS[most]
    u = rng.random() * sum(weights)
    count = 0
    while count < most and u >= weights[count]:
        u -= weights[count]
        count += 1
    if count == 0:
        return ()
    if count == 1:
        return (_pick(rng, _pick(rng, groups)),)
    chosen = sorted(rng.sample(range(len(groups)), count))
    return tuple(_pick(rng, groups[g]) for g in chosen)


def _different(rng: random.Random, options: Sequence[_Word], *avoid: _Word) -> _Word | None:
    """A uniform choice among ``options`` that are not in ``avoid`` (None if none is left)."""
    for _ in range(16):
        word = options[int(rng.random() * len(options))]
        if word not in avoid:
            return word
    rest = [word for word in options if word not in avoid]
    return _pick(rng, rest) if rest else None


_Phrase = tuple[_Word, tuple[tuple[str, str], ...]]  # a noun and its (English, Korean) adjectives


class _Spec(NamedTuple):
    """Every choice that makes one clause."""

    frame: _CompiledFrame
    tense: str
    negative: bool
    definite: bool  # subject with "the" (은/는) or "a"/"an" (이/가)
    subject: _Phrase
    complement: _Phrase | None  # object, or destination of a motion verb
    companion: _Phrase | None
    place: _Phrase | None
    time: TimePhrase | None


def _sample_spec(rng: random.Random, max_adjectives: int) -> _Spec:
    frame = _pick(rng, _COMPILED)
    tense = _pick(rng, TENSES)
    negative = rng.random() < P_NEGATIVE
    subject = _pick(rng, frame.subjects)
    subject_phrase = (subject, _pick_adjectives(rng, subject, max_adjectives))
    definite = rng.random() < P_DEFINITE
    complement = _different(rng, frame.complements, subject) if frame.complements else None
    complement_phrase = None
    if complement is not None:
        complement_phrase = (complement, _pick_adjectives(rng, complement, max_adjectives))
    companion_phrase = None
    if rng.random() < P_COMPANION:
        avoid = (subject, complement) if complement is not None else (subject,)
        companion = _different(rng, _COMPANION_WORDS, *avoid)
        if companion is not None:
            companion_phrase = (companion, _pick_adjectives(rng, companion, max_adjectives))
    place_phrase = None
    if frame.places and rng.random() < P_PLACE:
        place = _pick(rng, frame.places)
        place_phrase = (place, _pick_adjectives(rng, place, max_adjectives))
    time = _pick(rng, _TIMES_BY_TENSE[tense]) if rng.random() < P_TIME else None
    return _Spec(
        frame,
        tense,
        negative,
        definite,
        subject_phrase,
        complement_phrase,
        companion_phrase,
        place_phrase,
        time,
    )


def _noun_phrase(english: list[str], korean: list[_Linked], phrase: _Phrase, article: str) -> int:
    """Append ``[article] adjectives noun`` to ``english`` and ``adjectives noun`` to ``korean``.

    Returns the noun's English position.
    """
    word, adjectives = phrase
    if article:
        english.append(article)
    for adjective, attributive_form in adjectives:
        korean.append((attributive_form, (len(english),)))
        english.append(adjective)
    position = len(english)
    english.append(word.english)
    korean.append((word.korean, (position,)))
    return position


def _indefinite(phrase: _Phrase) -> str:
    word, adjectives = phrase
    return "an" if (adjectives[0][0] if adjectives else word.english)[0] in "aeiou" else "a"


def _realize(spec: _Spec) -> tuple[list[str], list[_Linked]]:
    """English tokens of one clause, and its Korean (token, links) pairs in Korean order."""
    frame, tense = spec.frame, spec.tense
    english: list[str] = []

    subject_part: list[_Linked] = []
    n = _noun_phrase(
        english, subject_part, spec.subject, "the" if spec.definite else _indefinite(spec.subject)
    )
    subject_part.append((spec.subject[0].particles["은" if spec.definite else "이"], (0, n)))

    verb_part: list[_Linked]
    at = len(english)
    if tense == "future":
        if spec.negative:
            english += ["will", "not", frame.base]
            verb_part = [(frame.forms["negative"], (at + 2,)), (_NOT["future"], (at + 1,))]
        else:
            english += ["will", frame.base]
            verb_part = [(frame.forms["future"], (at + 1,))]
        verb_part.append((_WILL, (at,)))
    elif spec.negative:
        english += ["does" if tense == "present" else "did", "not", frame.base]
        verb_part = [(frame.forms["negative"], (at + 2,)), (_NOT[tense], (at, at + 1))]
    else:
        english.append(frame.third if tense == "present" else frame.past)
        verb_part = [(frame.forms[tense], (at,))]

    object_part: list[_Linked] = []
    if spec.complement is not None:
        word = spec.complement[0]
        if frame.motion:
            to = len(english)
            english.append("to")
            _noun_phrase(english, object_part, spec.complement, word.article)
            object_part.append((word.particles["으로"], (to,)))
        else:
            n = _noun_phrase(english, object_part, spec.complement, word.article)
            object_part.append((word.particles["을"], (n,)))

    companion_part: list[_Linked] = []
    if spec.companion is not None:
        with_ = len(english)
        english.append("with")
        _noun_phrase(english, companion_part, spec.companion, spec.companion[0].article)
        companion_part += [(spec.companion[0].particles["와"], (with_,)), ("함께", (with_,))]

    place_part: list[_Linked] = []
    if spec.place is not None:
        preposition = len(english)
        english.append(spec.place[0].preposition)
        _noun_phrase(english, place_part, spec.place, spec.place[0].article)
        place_part.append(("에서", (preposition,)))

    time_part: list[_Linked] = []
    if spec.time is not None:
        start = len(english)
        english += spec.time.english
        time_part = [
            (word, tuple(start + i for i in link))
            for word, link in zip(spec.time.korean, spec.time.links, strict=True)
        ]

    return english, subject_part + time_part + place_part + companion_part + object_part + verb_part


def _join(specs: Sequence[_Spec]) -> Pair:
    """The pair of clauses joined by "and" (Korean: ". 그리고"), ending in "."."""
    source: list[str] = []
    target: list[str] = []
    alignment: list[tuple[int, ...]] = []
    for k, spec in enumerate(specs):
        if k:
            joint = (len(source),)
            source.append("and")
            target += [".", "그리고"]
            alignment += [joint, joint]
        offset = len(source)
        english, korean = _realize(spec)
        source += english
        for word, links in korean:
            target.append(word)
            alignment.append(tuple([offset + i for i in links]) if offset else links)
    alignment.append((len(source),))
    source.append(".")
    target.append(".")
    return Pair(tuple(source), tuple(target), tuple(alignment), len(specs))


def _pair(rng: random.Random, clauses: int, max_adjectives: int) -> Pair:
    return _join([_sample_spec(rng, max_adjectives) for _ in range(clauses)])


# ---------------------------------------------------------------------------
# Reading English back: any sentence the grammar's syntax allows
# ---------------------------------------------------------------------------

_WORD_BY_ENGLISH = {w.english: w for w in _WORDS.values()}
_ADJECTIVE_BY_ENGLISH = {
    a.english: (a.order, (a.english, a.attributive)) for a in LEXICON.adjectives
}
_VERB_FORMS: dict[str, tuple[_CompiledFrame, str]] = {}
for _frame in _COMPILED:
    _VERB_FORMS[_frame.base] = (_frame, "base")
    _VERB_FORMS[_frame.third] = (_frame, "present")
    _VERB_FORMS[_frame.past] = (_frame, "past")  # "read" (past) overrides "read" (base)
_PREPOSITIONS = frozenset(n.preposition for n in LEXICON.nouns if n.preposition)


class _Reader:
    """A cursor over one clause's English tokens that raises a clear error when it is stuck."""

    def __init__(self, tokens: Sequence[str], sentence: str) -> None:
        self.tokens, self.at, self.sentence = tokens, 0, sentence

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def take(self) -> str:
        token = self.peek()
        self.at += 1
        return token

    def fail(self, expected: str) -> ValueError:
        got = repr(self.peek()) if self.peek() else "the end of the clause"
        return ValueError(f"expected {expected}, got {got} in {self.sentence!r}")

    def phrase(self, article: str | None) -> _Phrase:
        """``[article] adjectives noun``; ``article=None`` reads the article the noun needs."""
        start = self.at
        if article is not None:
            if self.take() != article:
                self.at = start
                raise self.fail(f"{article!r}")
        elif self.peek() == "the":
            self.take()
        adjectives: list[tuple[int, tuple[str, str]]] = []
        while self.peek() in _ADJECTIVE_BY_ENGLISH:
            adjectives.append(_ADJECTIVE_BY_ENGLISH[self.take()])
        if self.peek() not in _WORD_BY_ENGLISH:
            raise self.fail("a noun")
        word = _WORD_BY_ENGLISH[self.take()]
        orders = [order for order, _ in adjectives]
        if orders != sorted(set(orders)):
            raise ValueError(
                "adjectives go in the order opinion, size, state, age, colour, at most one of "
                f"each, got {[a for _, (a, _) in adjectives]} in {self.sentence!r}"
            )
        has_article = article is not None or self.tokens[start] == "the"
        if bool(word.article) != has_article:
            needs = "'the'" if word.article else "no article"
            raise ValueError(f"{word.english!r} takes {needs} here, in {self.sentence!r}")
        return word, tuple(a for _, a in adjectives)


def _read_clause(tokens: Sequence[str], sentence: str) -> _Spec:
    r = _Reader(tokens, sentence)
    if r.peek() not in ("a", "an", "the"):
        raise r.fail("a subject starting with 'a', 'an' or 'the'")
    article = r.take()
    r.at -= 1
    subject = r.phrase(article)
    if article != "the" and article != _indefinite(subject):
        raise ValueError(f"expected {_indefinite(subject)!r}, got {article!r} in {sentence!r}")
    negative, tense = False, ""
    if r.peek() == "will":
        r.take()
        tense = "future"
    elif r.peek() in ("does", "did"):
        tense = "present" if r.take() == "does" else "past"
        if r.peek() != "not":
            raise r.fail("'not'")
    if tense and r.peek() == "not":
        r.take()
        negative = True
    if r.peek() not in _VERB_FORMS:
        raise r.fail("a verb")
    frame, form = _VERB_FORMS[r.take()]
    if tense:  # after will/does/did: the base form
        if r.tokens[r.at - 1] != frame.base:
            raise ValueError(f"expected {frame.base!r} after {tense} auxiliary in {sentence!r}")
    elif form == "base" or r.tokens[r.at - 1] not in (frame.third, frame.past):
        raise ValueError(f"expected {frame.third!r} or {frame.past!r} in {sentence!r}")
    else:
        tense = form
    complement = None
    if frame.motion:
        if r.take() != "to":
            r.at -= 1
            raise r.fail("'to' after a verb of motion")
        complement = r.phrase(None)
    elif frame.complements:
        complement = r.phrase(None)
    companion = None
    if r.peek() == "with":
        r.take()
        companion = r.phrase("the")
    place = None
    if not frame.motion and r.peek() in _PREPOSITIONS:
        preposition = r.take()
        place = r.phrase(None)
        if place[0].preposition != preposition:
            raise ValueError(
                f"{place[0].english!r} takes {place[0].preposition!r}, got {preposition!r} "
                f"in {sentence!r}"
            )
    time = None
    if r.peek():
        rest = tuple(tokens[r.at :])
        time = next((t for t in LEXICON.times if t.english == rest), None)
        if time is None:
            raise r.fail("a time phrase or the end of the clause")
        if tense not in time.tenses:
            raise ValueError(
                f"{' '.join(time.english)!r} does not go with the {tense} tense in {sentence!r}"
            )
    return _Spec(
        frame, tense, negative, article == "the", subject, complement, companion, place, time
    )


def translate(sentence: str | Sequence[str]) -> Pair:
    """The pair for an English sentence of the grammar: its Korean tokens and gold alignment.

    ``sentence`` is text (``"The cat eats the fish."``) or its tokens. The
    grammar's syntax is checked, not which nouns a verb usually takes: ``the
    cat reads the book`` translates too. Anything else is a ``ValueError``
    that names the first word the grammar did not expect.
    """
    if isinstance(sentence, str):
        tokens = sentence.lower().replace(".", " .").split()
    elif isinstance(sentence, Sequence) and all(isinstance(t, str) for t in sentence):
        tokens = list(sentence)
    else:
        raise TypeError(f"sentence must be a str or a sequence of str, got {sentence!r}")
    text = " ".join(tokens)
    if tokens[-1:] == ["."]:
        tokens = tokens[:-1]
    if not tokens or "." in tokens:
        raise ValueError(f"expected one sentence ending in '.', got {text!r}")
    clauses: list[list[str]] = [[]]
    for token in tokens:
        if token == "and":
            clauses.append([])
        else:
            clauses[-1].append(token)
    return _join([_read_clause(clause, text) for clause in clauses])


# ---------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------


def _int(value: object, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < low or (high is not None and value > high):
        expected = f">= {low}" if high is None else f"in {low}..{high}"
        raise ValueError(f"{name} must be {expected}, got {value}")
    return value


def _seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    return seed


def _clause_range(min_clauses: object, max_clauses: object) -> tuple[int, int]:
    low = _int(min_clauses, "min_clauses", 1)
    high = _int(max_clauses, "max_clauses", 1)
    if low > high:
        raise ValueError(f"min_clauses ({low}) must be <= max_clauses ({high})")
    return low, high


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


def _clause_max_tokens(max_adjectives: int) -> int:
    """The longest clause (English tokens, without ``and``/``.``) the grammar can make."""

    def phrase(nouns: Iterable[Noun]) -> int:  # [the] adjectives noun
        return max(
            int(n.article) + min(max_adjectives, len(_ADJECTIVE_GROUPS[n])) + 1 for n in nouns
        )

    longest = 0
    time = max(len(t.english) for t in LEXICON.times)
    for frame in _FRAMES:
        length = phrase(frame.subjects) + 3  # will/does/did not VERB
        if frame.complements:
            length += phrase(frame.complements) + (frame.verb.frame == "motion")
        length += 1 + phrase(_COMPANIONS)  # with ...
        if frame.places:
            length += 1 + phrase(frame.places)  # in/at/on ...
        longest = max(longest, length + time)
    return longest


def length_bounds(clauses: int, max_adjectives: int = 2) -> tuple[int, int]:
    """Fewest and most source tokens (``and`` and ``.`` included) of ``clauses`` clauses.

    The shortest clause is three tokens (``a cat sleeps``), so the shortest
    sentence is ``4 * clauses`` tokens.
    """
    clauses = _int(clauses, "clauses", 1)
    max_adjectives = _int(max_adjectives, "max_adjectives", 0, MAX_ADJECTIVES)
    return 4 * clauses, clauses * (_clause_max_tokens(max_adjectives) + 1)


def generate_pairs(
    n: int,
    seed: int,
    min_clauses: int = 1,
    max_clauses: int = 2,
    *,
    max_adjectives: int = 2,
    min_tokens: int | None = None,
    max_tokens: int | None = None,
) -> list[Pair]:
    """``n`` random pairs, the same for the same arguments (pairs may repeat).

    Each pair has ``min_clauses..max_clauses`` clauses (uniformly); noun phrases
    take up to ``max_adjectives`` adjectives (0..3). ``min_tokens``/``max_tokens``
    keep only sources of that many tokens; a range no sentence of those clause
    counts can have is a ``ValueError``.
    """
    n = _int(n, "n", 0)
    rng = random.Random(_seed(seed))
    low, high = _clause_range(min_clauses, max_clauses)
    max_adjectives = _int(max_adjectives, "max_adjectives", 0, MAX_ADJECTIVES)
    shortest = length_bounds(low, max_adjectives)[0]
    longest = length_bounds(high, max_adjectives)[1]
    lo = shortest if min_tokens is None else _int(min_tokens, "min_tokens", 1)
    hi = longest if max_tokens is None else _int(max_tokens, "max_tokens", 1)
    if lo > hi or hi < shortest or lo > longest:
        raise ValueError(
            f"no sentence of {low}..{high} clauses has {lo}..{hi} tokens: with "
            f"max_adjectives={max_adjectives} the grammar makes {shortest}..{longest} tokens"
        )
    # Only clause counts whose lengths can meet the range.
    counts = [
        k
        for k in range(low, high + 1)
        if length_bounds(k, max_adjectives)[0] <= hi and length_bounds(k, max_adjectives)[1] >= lo
    ]
    pairs: list[Pair] = []
    tries = 0
    budget = 1000 + 200 * n
    while len(pairs) < n:
        tries += 1
        if tries > budget:
            raise ValueError(
                f"only {len(pairs)} of {n} sentences of {lo}..{hi} tokens came out of {budget} "
                "tries: that length is too rare for the grammar; widen the token range"
            )
        pair = _pair(rng, _pick(rng, counts), max_adjectives)
        if lo <= len(pair.source) <= hi:
            pairs.append(pair)
    return pairs


def _unique(
    rng: random.Random,
    n: int,
    clauses: Sequence[int],
    max_adjectives: int,
    seen: set[tuple[str, ...]],
    what: str,
) -> list[Pair]:
    """``n`` pairs whose sources are not in ``seen`` (which collects them)."""
    pairs: list[Pair] = []
    tries = 0
    while len(pairs) < n:
        tries += 1
        if tries > 1000 + 50 * n:
            raise ValueError(f"the grammar cannot make {n} new sentences for {what}")
        pair = _pair(rng, _pick(rng, clauses), max_adjectives)
        if pair.source not in seen:
            seen.add(pair.source)
            pairs.append(pair)
    return pairs


@dataclass(frozen=True)
class Splits:
    """Train/validation/test pairs; no source sentence is in two splits, or twice in one.

    ``train`` and ``valid`` have 1..``max_train_clauses`` clauses; ``test`` has
    the same number of pairs for every clause count 1..``max_test_clauses``, so
    quality can be plotted against length; those with more than
    ``max_train_clauses`` clauses are longer than anything seen in training.
    """

    train: tuple[Pair, ...]
    valid: tuple[Pair, ...]
    test: tuple[Pair, ...]
    max_train_clauses: int
    max_test_clauses: int
    seed: int = field(default=0)

    def split(self, name: str) -> tuple[Pair, ...]:
        """The split called ``name`` (``"train"``, ``"valid"`` or ``"test"``)."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {name!r}")
        pairs: tuple[Pair, ...] = getattr(self, name)
        return pairs

    def test_by_clauses(self) -> dict[int, tuple[Pair, ...]]:
        """Test pairs grouped by clause count, 1..max_test_clauses."""
        return {
            k: tuple(p for p in self.test if p.clauses == k)
            for k in range(1, self.max_test_clauses + 1)
        }

    def in_training_range(self, pair: Pair) -> bool:
        """Whether ``pair`` has no more clauses than the training sentences."""
        return pair.clauses <= self.max_train_clauses


def make_splits(
    seed: int = 0,
    *,
    train: int = 20_000,
    valid: int = 1_000,
    test_per_clauses: int = 200,
    max_train_clauses: int = 2,
    max_test_clauses: int = 6,
    max_adjectives: int = 2,
) -> Splits:
    """Disjoint train/valid/test splits; the test set is stratified by clause count.

    Each split comes from its own random stream derived from ``seed``, so the
    test set does not change when ``train`` grows (except for the rare test
    sentence that a larger train set now contains).
    """
    seed = _seed(seed)
    _int(train, "train", 1)
    _int(valid, "valid", 0)
    _int(test_per_clauses, "test_per_clauses", 0)
    _int(max_train_clauses, "max_train_clauses", 1)
    _int(max_test_clauses, "max_test_clauses", 1)
    _int(max_adjectives, "max_adjectives", 0, MAX_ADJECTIVES)
    seen: set[tuple[str, ...]] = set()

    def stream(name: str) -> random.Random:
        return random.Random(f"translation_data/{seed}/{name}")

    in_range = range(1, max_train_clauses + 1)
    train_pairs = _unique(stream("train"), train, in_range, max_adjectives, seen, "train")
    valid_pairs = _unique(stream("valid"), valid, in_range, max_adjectives, seen, "valid")
    test_pairs: list[Pair] = []
    for k in range(1, max_test_clauses + 1):
        test_pairs += _unique(
            stream(f"test/{k}"), test_per_clauses, [k], max_adjectives, seen, f"test ({k} clauses)"
        )
    return Splits(
        tuple(train_pairs),
        tuple(valid_pairs),
        tuple(test_pairs),
        max_train_clauses,
        max_test_clauses,
        seed,
    )


def length_histogram(pairs: Iterable[Pair], side: str = "source") -> dict[int, int]:
    """``{length: number of pairs}`` of source (or ``side="target"``) token counts, sorted."""
    if side not in ("source", "target"):
        raise ValueError(f"side must be 'source' or 'target', got {side!r}")
    counts = Counter(len(getattr(p, side)) for p in pairs)
    return dict(sorted(counts.items()))


def count_sentences(clauses: int = 1, max_adjectives: int = 2) -> int:
    """How many different English sentences of exactly ``clauses`` clauses the grammar makes.

    Every English sentence has one Korean translation and different sentences
    have different translations, so this also counts the pairs. Clauses are
    independent, so the count is the one-clause count to the power ``clauses``.
    """
    clauses = _int(clauses, "clauses", 1)
    max_adjectives = _int(max_adjectives, "max_adjectives", 0, MAX_ADJECTIVES)

    stacks = {noun: _stack_count(noun, max_adjectives) for noun in LEXICON.nouns}
    # a companion can be neither the subject nor the object: they lose their own stacks
    as_companion = {noun: stacks[noun] if noun in _COMPANIONS else 0 for noun in LEXICON.nouns}
    companions = sum(stacks[c] for c in _COMPANIONS)
    verb_forms = sum(2 * (1 + len(_TIMES_BY_TENSE[t])) for t in TENSES)  # ± negation, time
    total = 0
    for frame in _FRAMES:
        places = 1 + sum(stacks[p] for p in frame.places)
        objects = sum(stacks[o] for o in frame.complements)
        objects_lost = sum(stacks[o] * as_companion[o] for o in frame.complements)
        for subject in frame.subjects:
            free = 1 + companions - as_companion[subject]  # no companion, or any other one
            if not frame.complements:
                rest = free
            else:  # Σ over objects o ≠ subject of stacks(o) · (free − as_companion(o))
                rest = objects * free - objects_lost
                if subject in frame.complements:
                    rest -= stacks[subject] * (free - as_companion[subject])
            total += 2 * stacks[subject] * rest * places  # a/an or the
    total *= verb_forms
    return int(total**clauses)


def _vocabulary(side: str) -> tuple[str, ...]:
    words: set[str] = {"."}
    english = side == "source"
    words |= {"and"} if english else {"그리고"}
    for frame in _FRAMES:
        verb = frame.verb
        if english:
            words |= {verb.base, verb.third, verb.past, "will", "not", "does", "did"}
            words |= {"to"} if verb.frame == "motion" else set()
        else:
            words |= set(frame.forms.values()) | set(_NOT.values()) | {_WILL}
        for noun in frame.subjects + frame.complements + frame.places:
            if english:
                words.add(noun.english)
                words |= {"the", "a"} if noun in frame.subjects else set()
            else:
                words.add(noun.korean)
        for noun in frame.subjects:
            if english and any(
                w[0] in "aeiou"
                for w in [noun.english] + [a.english for g in _ADJECTIVE_GROUPS[noun] for a in g]
            ):
                words.add("an")
            if not english:
                words |= {particle(noun.korean, "이"), particle(noun.korean, "은")}
        for noun in frame.complements:
            if english:
                words |= {"the"} if noun.article else set()
            else:
                words.add(particle(noun.korean, "으로" if verb.frame == "motion" else "을"))
        for noun in frame.places:
            words |= {noun.preposition} if english else {"에서"}
    for noun in _COMPANIONS:
        words |= {noun.english, "with"} if english else {noun.korean, particle(noun.korean, "와")}
    words |= set() if english else {"함께"}
    for adjective in LEXICON.adjectives:
        words.add(adjective.english if english else adjective.attributive)
    for time in LEXICON.times:
        words |= set(time.english if english else time.korean)
    return tuple(sorted(words))


def source_vocabulary() -> tuple[str, ...]:
    """Every English token the grammar can produce (with up to 3 adjectives), sorted."""
    return _vocabulary("source")


def target_vocabulary() -> tuple[str, ...]:
    """Every Korean token the grammar can produce, sorted."""
    return _vocabulary("target")


def english_text(tokens: Sequence[str]) -> str:
    """English tokens as a sentence: ``the cat eats the fish.``"""
    return " ".join(tokens).replace(" .", ".")


def korean_text(tokens: Sequence[str]) -> str:
    """Korean tokens as written Korean: particles and ``.`` join the word before them.

    ``["고양이", "는", "생선", "을", "먹습니다", "."]`` → ``"고양이는 생선을 먹습니다."``
    """
    text = ""
    for token in tokens:
        text += token if (token in PARTICLES or token == ".") and text else " " + token
    return text.strip()


def alignment_matrix(pair: Pair) -> np.ndarray:
    """The gold alignment as a 0/1 matrix (T, S): row j marks what target token j translates.

    Rows sum to at least 1; compare it with an attention matrix of the same shape.
    """
    if not isinstance(pair, Pair):
        raise TypeError(f"pair must be a Pair, got {type(pair).__name__}")
    matrix = np.zeros((len(pair.target), len(pair.source)))  # (T, S)
    for j, links in enumerate(pair.alignment):
        matrix[j, list(links)] = 1.0
    return matrix
