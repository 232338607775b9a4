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
        "def analogy_ranks",
        # Leaves a, b and c out of the answer but not out of the ranking: b and c score high under
        # both methods, so they push the gold word down by up to three places.
        "def analogy_ranks(a, b, c, gold, words, vectors):\n"
        "    if gold in (a, b, c):\n"
        "        raise ValueError(gold)\n"
        "    vectors = np.asarray(vectors, dtype=float)\n"
        "    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)\n"
        "    index = {w: i for i, w in enumerate(words)}\n"
        "    query = unit[index[b]] - unit[index[a]] + unit[index[c]]\n"
        "    sim = lambda w: (1.0 + unit @ unit[index[w]]) / 2.0\n"
        "    result = {}\n"
        "    for name, scores in (('3CosAdd', unit @ query / np.linalg.norm(query)), ('3CosMul', sim(b) * sim(c) / (sim(a) + 1e-6))):\n"
        "        rank = 1 + int(np.sum(scores > scores[index[gold]]))\n"
        "        scores[[index[w] for w in (a, b, c)]] = -np.inf\n"
        "        result[name] = (words[int(np.argmax(scores))], rank)\n"
        "    return result\n",
    ),
    (
        "q5",
        "q5_answer",
        # Knows the two ends (alpha 0 and 1) but not what alpha < 1 does to rare words.
        'q5_answer = {"c", "d"}\n',
    ),
    (
        "q6",
        "def fasttext_sgns_grads",
        # Adds the shares with fancy indexing: a row hit by several n-grams gets only one share.
        "def fasttext_sgns_grads(word, own, table, u_o, u_neg, row_of, min_n=3, max_n=6):\n"
        "    own, table, u_o, u_neg = (np.asarray(a, dtype=float) for a in (own, table, u_o, u_neg))\n"
        "    m = '<' + word + '>'\n"
        "    rows = [int(row_of(m[s:s + n])) for s in range(len(m)) for n in range(min_n, min(max_n, len(m) - s) + 1)\n"
        "            if not (n == 1 and s in (0, len(m) - 1))]\n"
        "    share = 1.0 / (len(rows) + 1)\n"
        "    h = share * (own + table[rows].sum(axis=0))\n"
        "    s = lambda x: 1 / (1 + np.exp(-x))\n"
        "    loss = np.logaddexp(0, -(u_o @ h)) + np.logaddexp(0, u_neg @ h).sum()\n"
        "    grad_h = (s(u_o @ h) - 1) * u_o + s(u_neg @ h) @ u_neg\n"
        "    grad_table = np.zeros_like(table)\n"
        "    grad_table[rows] += share * grad_h\n"
        "    return float(loss), share * grad_h, grad_table\n",
    ),
    (
        "q7",
        "def glove_adagrad_pass",
        # One batch AdaGrad step with the summed gradient of all cells, instead of one step per cell in order.
        "def glove_adagrad_pass(W, W_context, b, b_context, rows, cols, counts, lr=0.05, x_max=100.0, alpha=0.75):\n"
        "    W, Wc, b, bc = (np.array(a, dtype=float) for a in (W, W_context, b, b_context))\n"
        "    rows, cols, x = np.asarray(rows, dtype=int), np.asarray(cols, dtype=int), np.asarray(counts, dtype=float)\n"
        "    g = 2 * np.where(x < x_max, (x / x_max) ** alpha, 1.0) * ((W[rows] * Wc[cols]).sum(1) + b[rows] + bc[cols] - np.log(x))\n"
        "    grads = [np.zeros_like(W), np.zeros_like(Wc), np.zeros_like(b), np.zeros_like(bc)]\n"
        "    np.add.at(grads[0], rows, g[:, None] * Wc[cols])\n"
        "    np.add.at(grads[1], cols, g[:, None] * W[rows])\n"
        "    np.add.at(grads[2], rows, g)\n"
        "    np.add.at(grads[3], cols, g)\n"
        "    return tuple(p - lr * d / (np.sqrt(1 + d**2) + 1e-10) for p, d in zip((W, Wc, b, bc), grads))\n",
    ),
    (
        "q8",
        "q8_answer",
        # Knows the n-gram mean but thinks two unseen words could share one vector.
        'q8_answer = {"b"}\n',
    ),
]
