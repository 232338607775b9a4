"""Library answers for ch05_language_models: NLTK's padding, n-grams and ``nltk.lm`` models, which the rules forbid."""

# NLTK's Lidstone takes |V| from its vocabulary; the questions give |V| (or the vocabulary) as an argument.
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
        "from nltk.util import ngrams, pad_sequence\n"
        "def count_sentence_ngrams(sentences, n):\n"
        "    counts = Counter()\n"
        "    for s in sentences:\n"
        "        padded = list(pad_sequence(s, n, pad_left=True, left_pad_symbol='<s>')) + ['</s>']\n"
        "        counts.update(ngrams(padded, n))\n"
        "    return counts\n",
        "nltk",
    ),
    (
        "q2",
        "def add_k_adjusted_counts",
        "from nltk.lm import Lidstone\n"
        "from nltk.util import everygrams\n"
        + _SIZED_VOCABULARY
        + "def add_k_adjusted_counts(tokens, context, k, vocab):\n"
        "    context = tuple(context)\n"
        "    order = len(context) + 1\n"
        "    model = Lidstone(k, order, vocabulary=_SizedVocabulary(vocab, len(vocab)))\n"
        "    model.fit([everygrams(list(tokens), max_len=order)])\n"
        "    total = model.context_counts(context).N()\n"
        "    return {w: model.score(w, context) * total for w in vocab}\n",
        "nltk",
    ),
    (
        "q3",
        "def witten_bell_weights",
        # NLTK's Witten-Bell estimator returns the weight of the shorter context as its gamma.
        "from nltk.lm import WittenBellInterpolated\n"
        "from nltk.util import everygrams\n"
        "def witten_bell_weights(tokens, n):\n"
        "    model = WittenBellInterpolated(n)\n"
        "    model.fit([everygrams(list(tokens), max_len=n)], tokens)\n"
        "    contexts = [h for order in range(2, n + 1) for h in model.counts[order].keys() if model.counts[order][h].N()]\n"
        "    return {tuple(h): model.estimator.alpha_gamma(h[0], h)[1] for h in contexts}\n",
        "nltk",
    ),
    (
        "q4",
        "def sentence_and_corpus_perplexity",
        "from nltk.lm import Lidstone\n"
        "from nltk.util import bigrams, everygrams\n"
        + _SIZED_VOCABULARY
        + "def sentence_and_corpus_perplexity(train_tokens, test_sentences, k, vocab_size):\n"
        "    tokens = list(train_tokens) + [t for s in test_sentences for t in s]\n"
        "    model = Lidstone(k, 2, vocabulary=_SizedVocabulary(tokens, vocab_size))\n"
        "    model.fit([everygrams(list(train_tokens), max_len=2)])\n"
        "    per_sentence = [model.perplexity(bigrams(s)) for s in test_sentences]\n"
        "    return per_sentence, model.perplexity([g for s in test_sentences for g in bigrams(s)])\n",
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
