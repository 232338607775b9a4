"""Korean full-text search for the book (Sphinx has no Korean search language).

Korean attaches particles and endings to words: a page that says only
"모델을" ("the model", object case) must still be found by the query "모델".
Both sides of the search strip the same suffixes:

- at build time, :meth:`SearchKorean.stem` turns every indexed word into its stem;
- in the browser, the ``Stemmer`` class below does the same to every query word.

Words without Hangul (English terms, code names) use the Porter stemmer, as
Sphinx's English search does, so "tokenization" finds "tokenize".
"""

from __future__ import annotations

import json
import re
from typing import Any

import snowballstemmer
from sphinx.search import SearchLanguage
from sphinx.search.en import english_stopwords, js_porter_stemmer

# Particles (조사), the copula and frequent endings, as they follow a noun or a
# 하다-verb stem. Longest first, so "에서는" wins over "는".
SUFFIXES: tuple[str, ...] = tuple(
    sorted(
        {
            # case particles
            "이",
            "가",
            "을",
            "를",
            "은",
            "는",
            "의",
            "에",
            "에서",
            "에게",
            "께",
            "로",
            "으로",
            "와",
            "과",
            "도",
            "만",
            "까지",
            "부터",
            "보다",
            "처럼",
            "이나",
            "나",
            "이며",
            "며",
            "이란",
            "란",
            "이라는",
            "라는",
            "이라고",
            "라고",
            "에는",
            "에서는",
            "에게는",
            "으로는",
            "로는",
            "와는",
            "과는",
            "에도",
            "으로도",
            "로도",
            "에서도",
            "만을",
            "만이",
            "까지는",
            "부터는",
            "이든",
            "든",
            # plural 들 with particles
            "들",
            "들이",
            "들을",
            "들은",
            "들의",
            "들에",
            "들과",
            "들로",
            "들도",
            "들에서",
            # copula and 하다/되다 endings after nouns
            "이다",
            "입니다",
            "이고",
            "이면",
            "이었다",
            "였다",
            "이지만",
            "합니다",
            "하는",
            "하고",
            "하여",
            "해서",
            "한",
            "할",
            "하면",
            "했다",
            "하지",
            "합시다",
            "하기",
            "함",
            "된다",
            "되는",
            "되어",
            "된",
            "될",
            "됩니다",
            "되고",
            "시킨다",
            "시키는",
            "적",
            "적인",
            "적으로",
        },
        key=lambda s: (-len(s), s),
    )
)
_HANGUL = re.compile("[\uac00-\ud7a3]")


def strip_korean_suffix(word: str) -> str:
    """Remove one trailing particle or ending, keeping at least one syllable."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix):
            return word[: -len(suffix)]
    return word


_JS_STEMMER = (
    js_porter_stemmer
    + """
var PorterStemmer = Stemmer;
var KOREAN_SUFFIXES = __SUFFIXES__;
var HANGUL = /[\\uac00-\\ud7a3]/;
Stemmer = function() {
  var porter = new PorterStemmer();
  this.stemWord = function(w) {
    if (!HANGUL.test(w)) return porter.stemWord(w);
    for (var i = 0; i < KOREAN_SUFFIXES.length; i++) {
      var s = KOREAN_SUFFIXES[i];
      if (w.length > s.length && w.slice(-s.length) === s) return w.slice(0, -s.length);
    }
    return w;
  };
};
""".replace("__SUFFIXES__", json.dumps(list(SUFFIXES), ensure_ascii=False))
)


class SearchKorean(SearchLanguage):
    lang = "ko"
    language_name = "Korean"
    js_stemmer_code = _JS_STEMMER
    stopwords = english_stopwords

    def init(self, options: dict[str, str]) -> None:
        self.porter = snowballstemmer.stemmer("porter")

    def stem(self, word: str) -> str:
        if _HANGUL.search(word):
            return strip_korean_suffix(word)
        return self.porter.stemWord(word.lower())


def setup(app: Any) -> dict[str, Any]:
    app.add_search_language(SearchKorean)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
