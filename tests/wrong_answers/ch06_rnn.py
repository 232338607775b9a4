"""Plausible wrong answers for ch06_rnn: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def rnn_step",
        # Forgets the nonlinearity: a linear recurrence.
        "def rnn_step(x, h, W_xh, W_hh, b):\n    return x @ W_xh + h @ W_hh + b\n",
    ),
    (
        "q2",
        "def rnn_forward",
        # Feeds the initial state to every step instead of the previous step's state.
        "def rnn_forward(xs, h0, W_xh, W_hh, b):\n"
        "    hs = np.stack([np.tanh(x @ W_xh + h0 @ W_hh + b) for x in xs])\n"
        "    return hs, hs[-1]\n",
    ),
    (
        "q3",
        "def birnn_forward",
        # Runs the backward direction on the reversed input but forgets to reverse its outputs back into time order.
        "def birnn_forward(xs, h0, forward_params, backward_params):\n"
        "    def run(sequence, h, W_xh, W_hh, b):\n"
        "        hs = []\n"
        "        for x in sequence:\n"
        "            h = np.tanh(x @ W_xh + h @ W_hh + b)\n"
        "            hs.append(h)\n"
        "        return np.stack(hs), h\n"
        "    xs = np.asarray(xs)\n"
        "    forward_hs, forward_last = run(xs, h0[0], *forward_params)\n"
        "    backward_hs, backward_last = run(xs[::-1], h0[1], *backward_params)\n"
        "    return np.concatenate([forward_hs, backward_hs], axis=-1), np.stack([forward_last, backward_last])\n",
    ),
    (
        "q4",
        "def top_p_probabilities",
        # Off by one: keeps only the tokens whose cumulative probability, their own included, stays within top_p,
        # so the token that crosses top_p is dropped.
        "def top_p_probabilities(logits, temperature, top_p):\n"
        "    if not temperature > 0 or not 0 < top_p <= 1:\n"
        "        raise ValueError('bad temperature or top_p')\n"
        "    z = np.asarray(logits, dtype=float) / temperature\n"
        "    probs = np.exp(z - z.max())\n"
        "    probs /= probs.sum()\n"
        "    order = np.argsort(-probs)\n"
        "    keep = np.zeros(probs.shape, dtype=bool)\n"
        "    keep[order[np.cumsum(probs[order]) <= top_p]] = True\n"
        "    keep[order[0]] = True\n"
        "    kept = np.where(keep, probs, 0.0)\n"
        "    return kept / kept.sum()\n",
    ),
    (
        "q5",
        "q5_answer",
        # Confuses the backward half with the forward direction's steps.
        "q5_answer = set(range(6, 10))\n",
    ),
    (
        "q6",
        "def stacked_rnn_forward",
        # Starts every layer from the first layer's initial state h0[0] instead of its own h0[l].
        "def stacked_rnn_forward(xs, h0, layer_params):\n"
        "    inputs, finals = np.asarray(xs), []\n"
        "    for W_xh, W_hh, b in layer_params:\n"
        "        h, hs = h0[0], []\n"
        "        for x in inputs:\n"
        "            h = np.tanh(x @ W_xh + h @ W_hh + b)\n"
        "            hs.append(h)\n"
        "        inputs = np.stack(hs)\n"
        "        finals.append(h)\n"
        "    return inputs, np.stack(finals)\n",
    ),
]
