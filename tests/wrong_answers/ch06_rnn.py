"""Plausible wrong answers for ch06_rnn: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def jordan_step",
        # Squashes the output with tanh too, as if the output were another hidden layer.
        "def jordan_step(x, o_prev, W_xh, W_qh, b_h, W_hq, b_q):\n"
        "    h = np.tanh(x @ W_xh + o_prev @ W_qh + b_h)\n"
        "    return h, np.tanh(h @ W_hq + b_q)\n",
    ),
    (
        "q2",
        "def rnn_forward_with_resets",
        # Resets a new document's state to zeros instead of the row's initial state h0.
        "def rnn_forward_with_resets(xs, h0, resets, W_xh, W_hh, b):\n"
        "    h, hs = h0, []\n"
        "    for x, starts in zip(xs, np.asarray(resets, dtype=bool)):\n"
        "        h = np.where(starts[:, None], 0.0, h)\n"
        "        h = np.tanh(x @ W_xh + h @ W_hh + b)\n"
        "        hs.append(h)\n"
        "    return np.stack(hs), h\n",
    ),
    (
        "q3",
        "def padded_birnn_forward",
        # Runs the backward direction over the whole padded sequence, so it reads the padding
        # before the last real token; it zeroes the padded outputs and takes the forward
        # direction's last state at the right step, so only the backward half is wrong.
        "def padded_birnn_forward(xs, lengths, h0, forward_params, backward_params):\n"
        "    def run(sequence, h, W_xh, W_hh, b):\n"
        "        hs = []\n"
        "        for x in sequence:\n"
        "            h = np.tanh(x @ W_xh + h @ W_hh + b)\n"
        "            hs.append(h)\n"
        "        return np.stack(hs)\n"
        "    xs, lengths = np.asarray(xs), np.asarray(lengths)\n"
        "    forward_hs = run(xs, h0[0], *forward_params)\n"
        "    backward_hs = run(xs[::-1], h0[1], *backward_params)[::-1]\n"
        "    real = (np.arange(len(xs))[:, None] < lengths[None, :])[..., None]\n"
        "    out = np.concatenate([forward_hs, backward_hs], axis=-1) * real\n"
        "    rows = np.arange(xs.shape[1])\n"
        "    return out, np.stack([forward_hs[lengths - 1, rows], backward_hs[0]])\n",
    ),
    (
        "q4",
        "def top_p_thresholds",
        # Off by one: counts the token's own probability in its threshold (the inclusive cumulative sum).
        "def top_p_thresholds(logits, temperature):\n"
        "    if not temperature > 0:\n"
        "        raise ValueError('temperature must be > 0')\n"
        "    z = np.asarray(logits, dtype=float) / temperature\n"
        "    probs = np.exp(z - z.max())\n"
        "    probs /= probs.sum()\n"
        "    order = np.argsort(-probs)\n"
        "    thresholds = np.empty_like(probs)\n"
        "    thresholds[order] = np.cumsum(probs[order])\n"
        "    return thresholds\n",
    ),
    (
        "q5",
        "q5_answer",
        # Confuses the backward half with the forward direction's steps.
        "q5_answer = set(range(6, 10))\n",
    ),
    (
        "q6",
        "def residual_rnn_forward",
        # Adds the residual to the state that recurs, not only to the output passed up.
        "def residual_rnn_forward(xs, h0, layer_params):\n"
        "    inputs, finals = np.asarray(xs), []\n"
        "    for layer, (W_xh, W_hh, b) in enumerate(layer_params):\n"
        "        h, hs = h0[layer], []\n"
        "        for x in inputs:\n"
        "            h = np.tanh(x @ W_xh + h @ W_hh + b)\n"
        "            if layer > 0:\n"
        "                h = h + x\n"
        "            hs.append(h)\n"
        "        inputs = np.stack(hs)\n"
        "        finals.append(h)\n"
        "    return inputs, np.stack(finals)\n",
    ),
]
