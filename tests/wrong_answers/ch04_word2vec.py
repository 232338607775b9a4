"""Plausible wrong answers for ch04_word2vec: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def skipgram_pairs",
        # Looks only to the right of the centre, as NLTK's skip-grams do: half the pairs are missing.
        "def skipgram_pairs(ids, window):\n"
        "    return [(ids[i], ids[j]) for i in range(len(ids)) for j in range(i + 1, min(len(ids), i + window + 1))]\n",
    ),
    (
        "q2",
        "def cbow_loss_and_grad",
        # Gives every context word the whole of dL/dh, forgetting that h is a mean (the 1/C).
        "def cbow_loss_and_grad(v_context, u_o, u_neg):\n"
        "    v_context, u_o, u_neg = (np.asarray(a, dtype=float) for a in (v_context, u_o, u_neg))\n"
        "    s = lambda x: 1 / (1 + np.exp(-x))\n"
        "    h = v_context.mean(axis=0)\n"
        "    loss = np.logaddexp(0, -(u_o @ h)) + np.logaddexp(0, u_neg @ h).sum()\n"
        "    grad_h = (s(u_o @ h) - 1) * u_o + s(u_neg @ h) @ u_neg\n"
        "    return float(loss), np.tile(grad_h, (len(v_context), 1))\n",
    ),
    (
        "q3",
        "def softmax_grads",
        # Thinks like negative sampling: only the true context row u_o gets a gradient.
        "def softmax_grads(v_c, U, o):\n"
        "    v_c, U = np.asarray(v_c, dtype=float), np.asarray(U, dtype=float)\n"
        "    scores = U @ v_c\n"
        "    p = np.exp(scores - scores.max())\n"
        "    p /= p.sum()\n"
        "    grad_U = np.zeros_like(U)\n"
        "    grad_U[o] = (p[o] - 1) * v_c\n"
        "    return U.T @ p - U[o], grad_U\n",
    ),
    (
        "q4",
        "def solve_analogy_cosmul",
        # Multiplies raw cosines without shifting them to [0, 1]: negative cosines flip the ranking.
        "def solve_analogy_cosmul(a, b, c, words, vectors):\n"
        "    vectors = np.asarray(vectors, dtype=float)\n"
        "    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)\n"
        "    index = {w: i for i, w in enumerate(words)}\n"
        "    cos = lambda w: unit @ unit[index[w]]\n"
        "    scores = cos(b) * cos(c) / (cos(a) + 1e-6)\n"
        "    for w in (a, b, c):\n"
        "        scores[index[w]] = -np.inf\n"
        "    return words[int(np.argmax(scores))]\n",
    ),
    (
        "q5",
        "q5_answer",
        # Reads "alpha = 0" as "no flattening at all", i.e. the plain unigram distribution.
        'q5_answer = "a"\n',
    ),
    (
        "q6",
        "def oov_vector",
        # Takes the n-grams of the bare word, forgetting fastText's boundary marks < and >.
        "def oov_vector(word, table, min_n, max_n, row_of):\n"
        "    table = np.asarray(table, dtype=float)\n"
        "    ngrams = [word[i:i + n] for i in range(len(word)) for n in range(min_n, min(max_n, len(word) - i) + 1)]\n"
        "    if not ngrams:\n"
        "        raise ValueError('no n-grams')\n"
        "    return table[[int(row_of(g)) for g in ngrams]].mean(axis=0)\n",
    ),
    (
        "q7",
        "def glove_sparse",
        # Adds with fancy indexing: a word that is the row of several cells gets only one of them.
        "def glove_sparse(W, W_context, b, b_context, rows, cols, counts, x_max=100.0, alpha=0.75):\n"
        "    W, W_context, b, b_context, counts = (np.asarray(a, dtype=float) for a in (W, W_context, b, b_context, counts))\n"
        "    rows, cols = np.asarray(rows, dtype=int), np.asarray(cols, dtype=int)\n"
        "    weight = np.where(counts < x_max, (counts / x_max) ** alpha, 1.0)\n"
        "    residual = (W[rows] * W_context[cols]).sum(axis=1) + b[rows] + b_context[cols] - np.log(counts)\n"
        "    g = 2 * weight * residual\n"
        "    grad_W, grad_b = np.zeros_like(W), np.zeros_like(b)\n"
        "    grad_W[rows] += g[:, None] * W_context[cols]\n"
        "    grad_b[rows] += g\n"
        "    return float(np.sum(weight * residual**2)), grad_W, grad_b\n",
    ),
    (
        "q8",
        "q8_answer",
        # Mixes fastText up with the morpheme route: it uses no analyzer.
        'q8_answer = "b"\n',
    ),
]
