"""Plausible wrong answers for ch05_language_models: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def count_sentence_ngrams",
        # Joins the sentences into one stream and pads only its two ends: n-grams cross sentence boundaries.
        "def count_sentence_ngrams(sentences, n):\n"
        "    tokens = ['<s>'] * (n - 1) + [t for s in sentences for t in s] + ['</s>'] * (n - 1)\n"
        "    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))\n",
    ),
    (
        "q2",
        "def add_k_probability",
        # Counts c(h) as every occurrence of the context, the one at the very end of the text included.
        "def add_k_probability(tokens, context, word, k, vocab_size):\n"
        "    n = len(context) + 1\n"
        "    joint = sum(1 for i in range(len(tokens) - n + 1) if tuple(tokens[i : i + n]) == tuple(context) + (word,))\n"
        "    m = len(context)\n"
        "    total = len(tokens) if m == 0 else sum(1 for i in range(len(tokens) - m + 1) if tuple(tokens[i : i + m]) == tuple(context))\n"
        "    return (joint + k) / (total + k * vocab_size)\n",
    ),
    (
        "q3",
        "def witten_bell_probability",
        # Interpolates every context straight with the unigram distribution instead of recursing one token shorter.
        "def witten_bell_probability(tokens, context, word):\n"
        "    context = tuple(context)\n"
        "    unigram = tokens.count(word) / len(tokens)\n"
        "    if not context:\n"
        "        return unigram\n"
        "    n = len(context) + 1\n"
        "    followers = Counter(tokens[i + n - 1] for i in range(len(tokens) - n + 1) if tuple(tokens[i : i + n - 1]) == context)\n"
        "    total, types = sum(followers.values()), len(followers)\n"
        "    if total == 0:\n"
        "        return unigram\n"
        "    return (followers[word] + types * unigram) / (total + types)\n",
    ),
    (
        "q4",
        "def add_k_perplexity",
        # Inverts the average probability instead of exponentiating the average negative log-probability.
        "def add_k_perplexity(train_tokens, test_tokens, k, vocab_size):\n"
        "    bigrams = Counter(zip(train_tokens, train_tokens[1:]))\n"
        "    contexts = Counter(train_tokens[:-1])\n"
        "    probs = [(bigrams[(a, b)] + k) / (contexts[a] + k * vocab_size) for a, b in zip(test_tokens, test_tokens[1:])]\n"
        "    return len(probs) / sum(probs)\n",
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
