"""The lexicon of 9장's generated English → Korean corpus, and the Korean it needs.

Hangul syllables are put together and taken apart by code point; verbs are
conjugated in the 합니다 style (present, past, future, negation), irregular
stems (ㄹ, ㅂ, ㄷ, ㅅ, 르, ㅡ, ㅎ) by rule; particles (조사) take the form the
noun's last sound asks for. :data:`LEXICON` lists the nouns, verbs,
adjectives and time phrases that :mod:`course_utils.translation_data`'s
grammar combines.
"""

from __future__ import annotations

from dataclasses import dataclass

from course_utils.text import josa

__all__ = [
    "IRREGULAR",
    "LEXICON",
    "NOUN_KINDS",
    "PARTICLES",
    "TENSES",
    "Adjective",
    "Lexicon",
    "Noun",
    "TimePhrase",
    "Verb",
    "attributive",
    "conjugate",
    "lexicon_size",
    "particle",
]

TENSES = ("present", "past", "future")
#: Korean tokens that are particles (조사): written attached to the word before them.
PARTICLES = frozenset({"이", "가", "은", "는", "을", "를", "와", "과", "으로", "로", "에서"})


# ---------------------------------------------------------------------------
# Hangul syllables and verb conjugation (합니다 style)
# ---------------------------------------------------------------------------

_SYLLABLE_BASE = 0xAC00
# Indices of the medial vowels and final consonants in the Unicode syllable table.
_A, _EO, _O, _U, _EU, _I = 0, 4, 8, 13, 18, 20
_WA, _WO, _YEO, _WAE, _OE, _WI, _UI = 9, 14, 6, 10, 11, 16, 19
_NO_FINAL, _NIEUN, _RIEUL, _BIEUP, _SIOT, _SSANG_SIOT = 0, 4, 8, 17, 19, 20
_BRIGHT = (_A, _O)  # ㅏ, ㅗ take -아; every other vowel takes -어


def _parts(syllable: str) -> tuple[int, int, int]:
    """(initial, medial, final) indices of one Hangul syllable."""
    code = ord(syllable) - _SYLLABLE_BASE
    if not 0 <= code < 11172:
        raise ValueError(f"expected a Hangul syllable, got {syllable!r}")
    return code // 588, (code % 588) // 28, code % 28


def _syllable(initial: int, medial: int, final: int) -> str:
    return chr(_SYLLABLE_BASE + initial * 588 + medial * 28 + final)


def _with_final(syllable: str, final: int) -> str:
    initial, medial, _ = _parts(syllable)
    return _syllable(initial, medial, final)


def _with_medial(syllable: str, medial: int) -> str:
    initial, _, final = _parts(syllable)
    return _syllable(initial, medial, final)


# Irregular stem classes a lexicon entry can name; ㄹ-stems, ㅡ-stems and 하다 are regular by rule.
IRREGULAR = ("ㅂ", "ㄷ", "ㅅ", "르", "ㅎ")


def _stem(dictionary_form: str, irregular: str) -> str:
    if not isinstance(dictionary_form, str) or len(dictionary_form) < 2:
        raise ValueError(f"expected a dictionary form ending in 다, got {dictionary_form!r}")
    if not dictionary_form.endswith("다"):
        raise ValueError(f"expected a dictionary form ending in 다, got {dictionary_form!r}")
    if irregular and irregular not in IRREGULAR:
        raise ValueError(f"irregular must be '' or one of {IRREGULAR}, got {irregular!r}")
    stem = dictionary_form[:-1]
    _parts(stem[-1])
    return stem


def _infinitive(stem: str, irregular: str) -> str:
    """The -아/어 form (연결형): 먹 → 먹어, 가 → 가, 돕 → 도와, 부르 → 불러."""
    last = stem[-1]
    _, medial, final = _parts(last)
    if last == "하":
        return stem[:-1] + "해"
    if irregular == "ㅂ":
        ending = "와" if stem in ("돕", "곱") else "워"
        return stem[:-1] + _with_final(last, _NO_FINAL) + ending
    if irregular == "르":
        before = stem[-2]
        ending = "라" if _parts(before)[1] in _BRIGHT else "러"
        return stem[:-2] + _with_final(before, _RIEUL) + ending
    bright = medial in _BRIGHT
    if irregular == "ㄷ":
        return stem[:-1] + _with_final(last, _RIEUL) + ("아" if bright else "어")
    if irregular == "ㅅ":
        return stem[:-1] + _with_final(last, _NO_FINAL) + ("아" if bright else "어")
    if final != _NO_FINAL:
        return stem + ("아" if bright else "어")
    if medial == _EU:  # ㅡ drops: 쓰 → 써, 바쁘 → 바빠, 예쁘 → 예뻐
        if len(stem) == 1:
            return _with_medial(last, _EO)
        vowel_before = _parts(stem[-2])[1]
        return stem[:-1] + _with_medial(last, _A if vowel_before in _BRIGHT else _EO)
    contracted = {_O: _WA, _U: _WO, _I: _YEO, _OE: _WAE}
    if medial in contracted:  # 오 → 와, 배우 → 배워, 마시 → 마셔, 되 → 돼
        return stem[:-1] + _with_medial(last, contracted[medial])
    if medial in (_WI, _UI):  # 쉬 → 쉬어
        return stem + "어"
    return stem  # ㅏ, ㅓ, ㅐ, ㅔ, ㅕ absorb the ending: 가 → 가, 서 → 서


def conjugate(dictionary_form: str, irregular: str = "") -> dict[str, str]:
    """The four verb forms the grammar uses, in the 합니다 style.

    Returns ``{"present": 먹습니다, "past": 먹었습니다, "future": 먹을, "negative": 먹지}``;
    the future is the adnominal form that precedes ``것입니다`` (``먹을 것입니다``) and
    the negative stem precedes ``않습니다`` (``먹지 않습니다``). ``irregular`` names an
    irregular stem class from ``IRREGULAR`` (``"ㅂ"`` for 돕다, ``"르"`` for 부르다, …).
    """
    stem = _stem(dictionary_form, irregular)
    last = stem[-1]
    final = _parts(last)[2]
    if final in (_NO_FINAL, _RIEUL):  # ㄹ drops before ㅂ: 팔 → 팝니다
        present = stem[:-1] + _with_final(last, _BIEUP) + "니다"
    else:
        present = stem + "습니다"
    infinitive = _infinitive(stem, irregular)
    past = infinitive[:-1] + _with_final(infinitive[-1], _SSANG_SIOT) + "습니다"
    if irregular == "ㅂ":
        future = stem[:-1] + _with_final(last, _NO_FINAL) + "울"
    elif irregular == "ㄷ":
        future = stem[:-1] + _with_final(last, _RIEUL) + "을"
    elif irregular == "ㅅ":
        future = stem[:-1] + _with_final(last, _NO_FINAL) + "을"
    elif final in (_NO_FINAL, _RIEUL):
        future = stem[:-1] + _with_final(last, _RIEUL)
    else:
        future = stem + "을"
    return {"present": present, "past": past, "future": future, "negative": stem + "지"}


def attributive(dictionary_form: str, irregular: str = "") -> str:
    """The form of an adjective before a noun: 크다 → 큰, 작다 → 작은, 귀엽다 → 귀여운.

    ``irregular`` is ``"ㅂ"`` (귀엽다 → 귀여운) or ``"ㅎ"`` (빨갛다 → 빨간); ㄹ-stems drop
    their ㄹ (길다 → 긴) and 있다/없다 take -는 (맛있다 → 맛있는).
    """
    stem = _stem(dictionary_form, irregular)
    last = stem[-1]
    final = _parts(last)[2]
    if last in ("있", "없"):
        return stem + "는"
    if irregular == "ㅂ":
        return stem[:-1] + _with_final(last, _NO_FINAL) + "운"
    if irregular == "ㅎ" or final in (_NO_FINAL, _RIEUL):
        return stem[:-1] + _with_final(last, _NIEUN)
    return stem + "은"


_PARTICLE_FORMS = ("이", "가", "은", "는", "을", "를", "와", "과", "으로", "로")


def particle(noun: str, form: str) -> str:
    """The particle form that ``noun`` takes: ``particle("고양이", "이")`` is ``"가"``.

    ``form`` is either form of 이/가, 은/는, 을/를, 와/과 or (으)로 (``"으로"`` or ``"로"``).
    """
    if form not in _PARTICLE_FORMS:
        raise ValueError(f"form must be one of {', '.join(_PARTICLE_FORMS)}, got {form!r}")
    return josa(noun, form)[len(noun) :]


# ---------------------------------------------------------------------------
# The lexicon
# ---------------------------------------------------------------------------

NOUN_KINDS = ("person", "animal", "food", "drink", "thing", "fixture", "media", "place", "city")


@dataclass(frozen=True)
class Noun:
    """A noun: ``kind`` is one of ``NOUN_KINDS``; places carry their locative preposition."""

    english: str
    korean: str
    kind: str
    preposition: str = ""  # "in"/"at"/"on" for places and cities

    @property
    def article(self) -> bool:
        """Whether the English noun takes an article (city names do not)."""
        return self.kind != "city"


@dataclass(frozen=True)
class Verb:
    """A verb with its English forms, Korean dictionary form and what it combines with.

    ``frame`` is ``"transitive"`` (takes an object), ``"intransitive"`` or
    ``"motion"`` (takes ``to`` + destination → (으)로). ``subjects``, ``objects`` and
    ``places`` name noun kinds or individual English nouns; an empty ``places``
    means every place and city.
    """

    base: str
    third: str
    past: str
    korean: str
    frame: str
    subjects: tuple[str, ...]
    objects: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    irregular: str = ""

    @property
    def forms(self) -> dict[str, str]:
        """The Korean forms from :func:`conjugate`."""
        return conjugate(self.korean, self.irregular)


@dataclass(frozen=True)
class Adjective:
    """An attributive adjective; ``order`` sorts a stack (0 opinion … 4 colour)."""

    english: str
    korean: str
    order: int
    nouns: tuple[str, ...]  # noun kinds or individual English nouns it describes
    irregular: str = ""

    @property
    def attributive(self) -> str:
        """The Korean form before a noun, from :func:`attributive`."""
        return attributive(self.korean, self.irregular)


@dataclass(frozen=True)
class TimePhrase:
    """A time phrase: ``links[j]`` are the English positions Korean token ``j`` translates."""

    english: tuple[str, ...]
    korean: tuple[str, ...]
    links: tuple[tuple[int, ...], ...]
    tenses: frozenset[str]


def _nouns(kind: str, entries: str, preposition: str = "") -> list[Noun]:
    """Nouns from ``"english:한국어 english:한국어@at ..."`` (``@`` overrides the preposition)."""
    nouns = []
    for entry in entries.split():
        english, korean = entry.split(":")
        korean, _, prep = korean.partition("@")
        nouns.append(Noun(english, korean, kind, prep or preposition))
    return nouns


_NOUNS = (
    _nouns(
        "person",
        "boy:소년 girl:소녀 man:남자 woman:여자 child:아이 baby:아기 student:학생 teacher:교사 "
        "doctor:의사 nurse:간호사 farmer:농부 chef:요리사 singer:가수 artist:화가 friend:친구 "
        "soldier:군인 king:왕 queen:여왕 writer:작가 pilot:조종사 baker:제빵사 neighbor:이웃 "
        "scientist:과학자",
    )
    + _nouns(
        "animal",
        "cat:고양이 dog:개 bird:새 horse:말 cow:소 rabbit:토끼 bear:곰 tiger:호랑이 "
        "monkey:원숭이 mouse:쥐 duck:오리 fox:여우 lion:사자 pig:돼지 sheep:양 elephant:코끼리 "
        "frog:개구리 wolf:늑대 deer:사슴 penguin:펭귄 squirrel:다람쥐 owl:부엉이",
    )
    + _nouns(
        "food",
        "fish:생선 bread:빵 apple:사과 rice:밥 cake:케이크 egg:달걀 meat:고기 soup:수프 "
        "banana:바나나 orange:오렌지 cheese:치즈 cookie:쿠키 salad:샐러드 carrot:당근 "
        "potato:감자 tomato:토마토 strawberry:딸기 watermelon:수박 sandwich:샌드위치 pizza:피자 "
        "corn:옥수수 candy:사탕 kimchi:김치 tofu:두부",
    )
    + _nouns("drink", "water:물 milk:우유 tea:차 coffee:커피 juice:주스")
    + _nouns(
        "thing",
        "book:책 letter:편지 newspaper:신문 ball:공 box:상자 bag:가방 chair:의자 table:탁자 "
        "picture:그림 cup:컵 hat:모자 pen:펜 pencil:연필 car:자동차 bicycle:자전거 key:열쇠 "
        "umbrella:우산 phone:전화기 computer:컴퓨터 clock:시계 flower:꽃 toy:장난감 map:지도 "
        "camera:카메라 bottle:병 ticket:표 shirt:셔츠 spoon:숟가락 dish:접시 basket:바구니 "
        "doll:인형 stone:돌 guitar:기타",
    )
    + _nouns("fixture", "door:문 window:창문")
    + _nouns("media", "song:노래 music:음악 news:뉴스 poem:시")
    + _nouns(
        "place",
        "park:공원 school:학교@at house:집 kitchen:부엌 room:방 library:도서관 market:시장@at "
        "store:가게@at river:강 sea:바다 mountain:산@on garden:정원 hospital:병원@at "
        "classroom:교실 restaurant:식당@at station:역@at village:마을 hotel:호텔@at "
        "office:사무실 museum:박물관@at beach:해변@on forest:숲 farm:농장@on zoo:동물원@at "
        "bank:은행@at airport:공항@at cafe:카페@at theater:극장@at",
        "in",
    )
    + _nouns(
        "city",
        "seoul:서울 busan:부산 jeju:제주 incheon:인천 daegu:대구 gwangju:광주 daejeon:대전 "
        "paris:파리 london:런던 tokyo:도쿄",
        "in",
    )
)

_BUILDINGS = "house school hospital library hotel museum station bank"
_MOVABLE = "fixture box bag bottle umbrella"


def _verb(
    english: str, korean: str, frame: str, subjects: str, objects: str = "", places: str = "",
    irregular: str = "",
) -> Verb:  # fmt: skip
    """A verb from space-separated fields: ``_verb("eat eats ate", "먹다", ...)``."""
    base, third, past = english.split()
    return Verb(
        base, third, past, korean, frame, tuple(subjects.split()), tuple(objects.split()),
        tuple(places.split()), irregular,
    )  # fmt: skip


# fmt: off
_VERBS = (
    # transitive: English object → Korean object + 을/를
    _verb("eat eats ate", "먹다", "transitive", "person animal", "food"),
    _verb("drink drinks drank", "마시다", "transitive", "person animal", "drink"),
    _verb("buy buys bought", "사다", "transitive", "person", "food drink thing"),
    _verb("sell sells sold", "팔다", "transitive", "person", "food drink thing"),
    _verb("make makes made", "만들다", "transitive", "person",
          "cake bread salad sandwich pizza cookie soup kimchi tofu box chair table toy doll hat "
          "basket map"),
    _verb("cook cooks cooked", "요리하다", "transitive", "person",
          "fish meat egg potato carrot corn tofu", "kitchen restaurant house cafe farm beach"),
    _verb("bake bakes baked", "굽다", "transitive", "person",
          "bread cake cookie fish meat potato pizza", "kitchen restaurant house cafe", "ㅂ"),
    _verb("see sees saw", "보다", "transitive", "person animal", "person animal food thing"),
    _verb("find finds found", "찾다", "transitive", "person animal", "person animal food thing"),
    _verb("read reads read", "읽다", "transitive", "person", "book letter newspaper map poem news"),
    _verb("write writes wrote", "쓰다", "transitive", "person", "letter book poem song"),
    _verb("draw draws drew", "그리다", "transitive", "person", "picture map flower animal"),
    _verb("open opens opened", "열다", "transitive", "person", _MOVABLE),
    _verb("close closes closed", "닫다", "transitive", "person", _MOVABLE),
    _verb("catch catches caught", "잡다", "transitive", "person animal",
          "ball mouse rabbit bird frog duck squirrel"),
    _verb("throw throws threw", "던지다", "transitive", "person", "ball stone apple hat cookie"),
    _verb("carry carries carried", "나르다", "transitive", "person horse cow elephant",
          "box bag chair table basket water stone", irregular="르"),
    _verb("hear hears heard", "듣다", "transitive", "person animal", "media", irregular="ㄷ"),
    _verb("like likes liked", "좋아하다", "transitive", "person animal",
          "person animal food drink thing fixture media place city"),
    _verb("love loves loved", "사랑하다", "transitive", "person", "person animal"),
    _verb("help helps helped", "돕다", "transitive", "person animal", "person animal",
          irregular="ㅂ"),
    _verb("call calls called", "부르다", "transitive", "person", "person animal", irregular="르"),
    _verb("meet meets met", "만나다", "transitive", "person", "person"),
    _verb("teach teaches taught", "가르치다", "transitive", "person",
          "child student boy girl soldier pilot"),
    _verb("learn learns learned", "배우다", "transitive", "person", "song music poem"),
    _verb("build builds built", "짓다", "transitive", "person", _BUILDINGS, irregular="ㅅ"),
    _verb("wash washes washed", "씻다", "transitive", "person",
          "apple potato carrot tomato strawberry cup dish spoon rice"),
    _verb("clean cleans cleaned", "청소하다", "transitive", "person",
          "room kitchen house classroom office garden"),
    _verb("visit visits visited", "방문하다", "transitive", "person", "place city"),
    # intransitive
    _verb("sleep sleeps slept", "자다", "intransitive", "person animal",
          places="house room hotel forest farm zoo village park city"),
    _verb("play plays played", "놀다", "intransitive", "person animal"),
    _verb("work works worked", "일하다", "intransitive", "person"),
    _verb("study studies studied", "공부하다", "intransitive", "person",
          places="school library classroom house room cafe office city"),
    _verb("sing sings sang", "노래하다", "intransitive", "person bird"),
    _verb("dance dances danced", "춤추다", "intransitive", "person"),
    _verb("rest rests rested", "쉬다", "intransitive", "person animal"),
    _verb("swim swims swam", "수영하다", "intransitive",
          "person dog duck bear tiger penguin frog elephant",
          places="river sea beach hotel city"),
    _verb("cry cries cried", "울다", "intransitive", "person animal"),
    _verb("laugh laughs laughed", "웃다", "intransitive", "person"),
    _verb("wait waits waited", "기다리다", "intransitive", "person animal"),
    _verb("walk walks walked", "걷다", "intransitive", "person animal", irregular="ㄷ"),
    _verb("run runs ran", "달리다", "intransitive", "person animal"),
    # motion: "to" + destination → Korean destination + (으)로
    _verb("go goes went", "가다", "motion", "person animal", "place city"),
    _verb("come comes came", "오다", "motion", "person animal", "place city"),
    _verb("return returns returned", "돌아가다", "motion", "person animal", "place city"),
    _verb("move moves moved", "이사하다", "motion", "person", "city village house"),
    _verb("fly flies flew", "날아가다", "motion", "bird duck owl",
          "forest mountain river sea garden park city"),
)


def _adjective(english: str, korean: str, order: int, nouns: str, irregular: str = "") -> Adjective:
    return Adjective(english, korean, order, tuple(nouns.split()), irregular)


_ADJECTIVES = (
    # 0: opinion
    _adjective("pretty", "예쁘다", 0, "person animal thing place"),
    _adjective("cute", "귀엽다", 0, "animal baby child doll toy", "ㅂ"),
    _adjective("kind", "친절하다", 0, "person"),
    _adjective("famous", "유명하다", 0, "person place media"),
    _adjective("beautiful", "아름답다", 0, "place flower song music poem", "ㅂ"),
    _adjective("delicious", "맛있다", 0, "food drink"),
    # 1: size
    _adjective("big", "크다", 1, "animal food thing fixture place"),
    _adjective("small", "작다", 1, "animal food thing fixture place"),
    _adjective("long", "길다", 1, "pencil table letter song poem river"),
    # 2: state and quality
    _adjective("hungry", "배고프다", 2, "person animal"),
    _adjective("tired", "피곤하다", 2, "person animal"),
    _adjective("happy", "행복하다", 2, "person animal"),
    _adjective("angry", "화나다", 2, "person animal"),
    _adjective("sick", "아프다", 2, "person animal"),
    _adjective("busy", "바쁘다", 2, "person"),
    _adjective("quiet", "조용하다", 2, "person place"),
    _adjective("fast", "빠르다", 2, "animal car bicycle"),
    _adjective("slow", "느리다", 2, "animal car bicycle"),
    _adjective("fresh", "신선하다", 2, "food drink"),
    _adjective("hot", "뜨겁다", 2, "food drink", "ㅂ"),
    _adjective("cold", "차갑다", 2, "food drink", "ㅂ"),
    _adjective("sweet", "달콤하다", 2, "food drink"),
    _adjective("heavy", "무겁다", 2, "box bag chair table basket stone book computer camera", "ㅂ"),
    _adjective("empty", "비다", 2, "box bag cup bottle basket room house"),
    _adjective("dirty", "더럽다", 2, "animal thing place", "ㅂ"),
    # 3: age
    _adjective("young", "젊다", 3, "man woman teacher doctor nurse farmer chef singer artist "
               "soldier king queen writer pilot baker neighbor scientist friend"),
    _adjective("new", "새롭다", 3, "thing fixture place media", "ㅂ"),
    # 4: colour
    _adjective("red", "빨갛다", 4, "thing fixture apple tomato strawberry", "ㅎ"),
    _adjective("blue", "파랗다", 4, "thing fixture", "ㅎ"),
    _adjective("white", "하얗다", 4, "thing fixture animal", "ㅎ"),
    _adjective("black", "까맣다", 4, "thing fixture animal", "ㅎ"),
    _adjective("yellow", "노랗다", 4, "thing fixture duck bird banana corn", "ㅎ"),
)
# fmt: on


def _time(english: str, korean: str, links: str, tenses: str) -> TimePhrase:
    return TimePhrase(
        tuple(english.split()),
        tuple(korean.split()),
        tuple(tuple(int(i) for i in link.split("+")) for link in links.split()),
        frozenset(tenses.split()),
    )


_TIMES = (
    _time("today", "오늘", "0", "present past future"),
    _time("every day", "매일", "0+1", "present"),
    _time("every morning", "매일 아침", "0 1", "present"),
    _time("every evening", "매일 저녁", "0 1", "present"),
    _time("yesterday", "어제", "0", "past"),
    _time("last night", "어젯밤", "0+1", "past"),
    _time("last week", "지난주", "0+1", "past"),
    _time("last year", "작년", "0+1", "past"),
    _time("this morning", "오늘 아침", "0 1", "past future"),
    _time("tomorrow", "내일", "0", "future"),
    _time("tonight", "오늘 밤", "0 0", "future"),
    _time("next week", "다음 주", "0 1", "future"),
    _time("next year", "내년", "0+1", "future"),
)


@dataclass(frozen=True)
class Lexicon:
    """Every word the grammar knows. ``len(LEXICON)`` counts the entries."""

    nouns: tuple[Noun, ...]
    verbs: tuple[Verb, ...]
    adjectives: tuple[Adjective, ...]
    times: tuple[TimePhrase, ...]

    def __len__(self) -> int:
        return len(self.nouns) + len(self.verbs) + len(self.adjectives) + len(self.times)

    def noun(self, english: str) -> Noun:
        """The noun entry for an English noun."""
        for noun in self.nouns:
            if noun.english == english:
                return noun
        raise KeyError(f"no noun {english!r} in the lexicon")


LEXICON = Lexicon(tuple(_NOUNS), _VERBS, _ADJECTIVES, _TIMES)


def lexicon_size() -> dict[str, int]:
    """Entries per part of speech, and their ``"total"``."""
    sizes = {
        "nouns": len(LEXICON.nouns),
        "verbs": len(LEXICON.verbs),
        "adjectives": len(LEXICON.adjectives),
        "times": len(LEXICON.times),
    }
    sizes["total"] = len(LEXICON)
    return sizes
