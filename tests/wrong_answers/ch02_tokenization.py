"""Plausible wrong answers for ch02_tokenization: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def punct_tokenize_spans",
        # Finds each token with text.find from the start of the string: a token seen before (a
        # second "a", a second ",") gets the first one's position, and the space before it is wrong.
        "def punct_tokenize_spans(text):\n"
        "    spans, previous = [], 0\n"
        '    for token in re.findall(r"\\w+|[^\\w\\s]+", text):\n'
        "        start = text.find(token)\n"
        "        spans.append((token, start, start + len(token), text[previous:start]))\n"
        "        previous = start + len(token)\n"
        "    return spans\n",
    ),
    (
        "q2",
        "def bpe_encode_word",
        # Merges the leftmost known pair in the word instead of the pair learned first.
        "def bpe_encode_word(word, merges):\n"
        '    symbols = [*word, "</w>"]\n'
        "    known = {tuple(pair) for pair in merges}\n"
        "    while True:\n"
        "        for i in range(len(symbols) - 1):\n"
        "            if (symbols[i], symbols[i + 1]) in known:\n"
        "                symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]\n"
        "                break\n"
        "        else:\n"
        "            return symbols\n",
    ),
    (
        "q3",
        "def unigram_segment",
        # Greedy longest match (as WordPiece does): fast, but not the best-scoring segmentation.
        "def unigram_segment(word, log_probs):\n"
        "    pieces, i = [], 0\n"
        "    while i < len(word):\n"
        "        for j in range(len(word), i, -1):\n"
        "            if word[i:j] in log_probs:\n"
        "                pieces.append(word[i:j])\n"
        "                i = j\n"
        "                break\n"
        "        else:\n"
        "            raise ValueError(word)\n"
        "    return pieces\n",
    ),
    (
        "q4",
        "q4_answer",
        # Sees the frequency argument but not what </w> distinguishes.
        'q4_answer = {"a"}\n',
    ),
    (
        "q5",
        "def unigram_log_likelihood",
        # Viterbi instead of the sum: the best segmentation's log probability.
        "def unigram_log_likelihood(word, log_probs):\n    best = [0.0] + [-math.inf] * len(word)\n    for end in range(1, len(word) + 1):\n        for start in range(end):\n            piece = word[start:end]\n            if piece in log_probs:\n                best[end] = max(best[end], best[start] + log_probs[piece])\n    return best[-1]\n",
    ),
    (
        "q6",
        "q6_answer",
        # Two bytes per syllable (UTF-16's count) and three jamo for every syllable.
        "q6_answer = (8, 4, 12)\n",
    ),
]
