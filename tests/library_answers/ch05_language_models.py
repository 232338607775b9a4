"""Library answers for ch05_language_models: NLTK's padding, n-grams and ``nltk.lm`` models, which the rules forbid."""

# NLTK's Lidstone takes |V| from its vocabulary; the question gives |V| as an argument.
_SIZED_VOCABULARY = (
    "from nltk.lm import Vocabulary\n"
    "class _SizedVocabulary(Vocabulary):\n"
    "    def __init__(self, tokens, size):\n"
    "        super().__init__(tokens)\n"
    "        self.size = size\n"
    "    def __len__(self):\n"
    "        return self.size\n"
)

LIBRARY = [
    (
        "q1",
        "def count_sentence_ngrams",
        "from nltk.lm.preprocessing import pad_both_ends\n"
        "from nltk.util import ngrams\n"
        "def count_sentence_ngrams(sentences, n):\n"
        "    return Counter(g for s in sentences for g in ngrams(pad_both_ends(s, n=n), n))\n",
        "nltk",
    ),
    (
        "q2",
        "def add_k_probability",
        "from nltk.lm import Lidstone\n"
        "from nltk.util import everygrams\n"
        + _SIZED_VOCABULARY
        + "def add_k_probability(tokens, context, word, k, vocab_size):\n"
        "    order = len(context) + 1\n"
        "    model = Lidstone(k, order, vocabulary=_SizedVocabulary(tokens, vocab_size))\n"
        "    model.fit([everygrams(list(tokens), max_len=order)])\n"
        "    return model.score(word, tuple(context))\n",
        "nltk",
    ),
    (
        "q3",
        "def witten_bell_probability",
        "from nltk.lm import WittenBellInterpolated\n"
        "from nltk.util import everygrams\n"
        "def witten_bell_probability(tokens, context, word):\n"
        "    order = len(context) + 1\n"
        "    model = WittenBellInterpolated(order)\n"
        "    model.fit([everygrams(list(tokens), max_len=order)], tokens)\n"
        "    return model.score(word, tuple(context))\n",
        "nltk",
    ),
    (
        "q4",
        "def add_k_perplexity",
        "from nltk.lm import Lidstone\n"
        "from nltk.util import bigrams, everygrams\n"
        + _SIZED_VOCABULARY
        + "def add_k_perplexity(train_tokens, test_tokens, k, vocab_size):\n"
        "    vocabulary = _SizedVocabulary(list(train_tokens) + list(test_tokens), vocab_size)\n"
        "    model = Lidstone(k, 2, vocabulary=vocabulary)\n"
        "    model.fit([everygrams(list(train_tokens), max_len=2)])\n"
        "    return model.perplexity(bigrams(test_tokens))\n",
        "nltk",
    ),
    (
        "q6",
        "def continuation_probabilities",
        "from nltk.lm import KneserNeyInterpolated\n"
        "def continuation_probabilities(bigrams):\n"
        "    bigrams = [tuple(b) for b in bigrams]\n"
        "    tokens = [token for bigram in bigrams for token in bigram]\n"
        "    model = KneserNeyInterpolated(2)\n"
        "    model.fit([bigrams], vocabulary_text=tokens)\n"
        "    return {token: model.score(token) for token in set(tokens)}\n",
        "nltk",
    ),
]
