"""Plausible wrong answers for ch05_language_models: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def count_sentence_ngrams",
        # Pads n - 1 end markers like NLTK's pad_both_ends: counts n-grams that predict past the end of the sentence.
        "def count_sentence_ngrams(sentences, n):\n"
        "    counts = Counter()\n"
        "    for s in sentences:\n"
        "        padded = ['<s>'] * (n - 1) + list(s) + ['</s>'] * (n - 1)\n"
        "        counts.update(tuple(padded[i : i + n]) for i in range(len(padded) - n + 1))\n"
        "    return counts\n",
    ),
    (
        "q2",
        "def add_k_adjusted_counts",
        # Counts c(h) as every occurrence of the context, the one at the very end of the text included.
        "def add_k_adjusted_counts(tokens, context, k, vocab):\n"
        "    context = tuple(context)\n"
        "    m = len(context)\n"
        "    grams = [tuple(tokens[i : i + m + 1]) for i in range(len(tokens) - m)]\n"
        "    total = len(tokens) if m == 0 else sum(1 for i in range(len(tokens) - m + 1) if tuple(tokens[i : i + m]) == context)\n"
        "    scale = total / (total + k * len(vocab))\n"
        "    return {w: (grams.count(context + (w,)) + k) * scale for w in vocab}\n",
    ),
    (
        "q3",
        "def witten_bell_weights",
        # Weighs only the contexts of length n - 1, as if the recursion never reached the shorter ones.
        "def witten_bell_weights(tokens, n):\n"
        "    followers = {}\n"
        "    for i in range(len(tokens) - n + 1):\n"
        "        followers.setdefault(tuple(tokens[i : i + n - 1]), Counter())[tokens[i + n - 1]] += 1\n"
        "    return {h: len(a) / (sum(a.values()) + len(a)) for h, a in followers.items()}\n",
    ),
    (
        "q4",
        "def sentence_and_corpus_perplexity",
        # Takes the corpus perplexity as the arithmetic mean of the sentence perplexities.
        "def sentence_and_corpus_perplexity(train_tokens, test_sentences, k, vocab_size):\n"
        "    bigrams = Counter(zip(train_tokens, train_tokens[1:]))\n"
        "    contexts = Counter(train_tokens[:-1])\n"
        "    ppls = []\n"
        "    for s in test_sentences:\n"
        "        logs = [math.log((bigrams[(a, b)] + k) / (contexts[a] + k * vocab_size)) for a, b in zip(s, s[1:])]\n"
        "        ppls.append(math.exp(-sum(logs) / len(logs)))\n"
        "    return ppls, sum(ppls) / len(ppls)\n",
    ),
    (
        "q5",
        "q5_answer",
        # Treats the bits as nats: exp(3) instead of 2 ** 3.
        "q5_answer = math.exp(3)\n",
    ),
    (
        "q6",
        "def continuation_probabilities",
        # Counts how often each token came second (raw frequency), not how many different tokens preceded it.
        "def continuation_probabilities(bigrams):\n"
        "    seconds = Counter(word for _, word in bigrams)\n"
        "    tokens = {token for bigram in bigrams for token in bigram}\n"
        "    return {token: seconds[token] / len(bigrams) for token in tokens}\n",
    ),
]
