"""Plausible wrong answers for ch10_attention: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def luong_general_attention",
        # Masks by multiplying the weights by 0 after the softmax: pads get 0, but rows no longer sum to 1.
        "def luong_general_attention(h_t, enc, W_a, key_padding_mask):\n"
        "    if key_padding_mask.all(axis=-1).any():\n"
        "        raise ValueError('all padding')\n"
        "    scores = np.einsum('bh,hk,bsk->bs', h_t, W_a, enc)\n"
        "    weights = softmax(scores) * ~key_padding_mask\n"
        "    return np.einsum('bs,bsh->bh', weights, enc), weights\n",
    ),
    (
        "q2",
        "def bahdanau_context_grad_v",
        # Right attention, but the Jacobian treats the weights as constants apart from exp(e_j):
        # it forgets the softmax's normalizer, the "- Σ_k α_k t_k" term.
        "def bahdanau_attention(s_prev, enc, W, U, v, key_padding_mask):\n"
        "    energy = np.tanh((s_prev @ W.T)[:, None, :] + enc @ U.T)\n"
        "    weights = softmax(energy @ v + np.where(key_padding_mask, -np.inf, 0.0))\n"
        "    return np.einsum('bs,bsh->bh', weights, enc), weights\n"
        "\n"
        "\n"
        "def bahdanau_context_grad_v(s_prev, enc, W, U, v, key_padding_mask):\n"
        "    t = np.tanh((s_prev @ W.T)[:, None, :] + enc @ U.T)\n"
        "    weights = softmax(t @ v + np.where(key_padding_mask, -np.inf, 0.0))\n"
        "    return np.einsum('bs,bsk,bsa->bka', weights, enc, t)\n",
    ),
    (
        "q3",
        "def sdpa_mask_from_padding",
        # Inverts the mask but puts the new axis last, (B, S, 1): it masks queries, not keys.
        "def sdpa_mask_from_padding(key_padding_mask):\n"
        "    return ~key_padding_mask[:, :, None]\n"
        "\n"
        "\n"
        "def dot_product_attention(query, key, value, attn_mask=None):\n"
        "    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])\n"
        "    if attn_mask is not None:\n"
        "        if attn_mask.dtype != bool:\n"
        "            raise TypeError('bool mask expected')\n"
        "        scores = scores + np.where(attn_mask, 0.0, -np.inf)\n"
        "    return softmax(scores) @ value\n",
    ),
    (
        "q4",
        "def alignment_score",
        # Counts target words aligned to nothing in the denominator, as if they were misses.
        "def alignment_score(attentions, gold):\n"
        "    if len(attentions) != len(gold):\n"
        "        raise ValueError('sentences')\n"
        "    hits = total = 0\n"
        "    for weights, links in zip(attentions, gold):\n"
        "        if len(links) != weights.shape[0]:\n"
        "            raise ValueError('words')\n"
        "        for t, positions in enumerate(links):\n"
        "            if any(not 0 <= s < weights.shape[1] for s in positions):\n"
        "                raise ValueError('position')\n"
        "            total += 1\n"
        "            hits += int(np.argmax(weights[t]) in positions)\n"
        "    if not any(p for links in gold for p in links):\n"
        "        raise ValueError('nothing to count')\n"
        "    return hits / total\n",
    ),
    (
        "q4",
        "def alignment_score",
        # Averages the per-sentence shares instead of pooling every counted word.
        "def alignment_score(attentions, gold):\n"
        "    if len(attentions) != len(gold):\n"
        "        raise ValueError('sentences')\n"
        "    shares = []\n"
        "    for weights, links in zip(attentions, gold):\n"
        "        if len(links) != weights.shape[0]:\n"
        "            raise ValueError('words')\n"
        "        if any(not 0 <= s < weights.shape[1] for p in links for s in p):\n"
        "            raise ValueError('position')\n"
        "        counted = [(t, p) for t, p in enumerate(links) if p]\n"
        "        if counted:\n"
        "            shares.append(np.mean([np.argmax(weights[t]) in p for t, p in counted]))\n"
        "    if not shares:\n"
        "        raise ValueError('nothing to count')\n"
        "    return float(np.mean(shares))\n",
    ),
    (
        "q5",
        "def lin_penalty",
        # Differentiates ‖M‖² as if only one factor of A A^T depended on A: 2 M A instead of 4 M A.
        "def lin_penalty(A):\n"
        "    if A.ndim != 3:\n"
        "        raise ValueError('A must be (B, r, T)')\n"
        "    B, r, _ = A.shape\n"
        "    M = A @ np.swapaxes(A, 1, 2) - np.eye(r)\n"
        "    return float((M**2).sum(axis=(1, 2)).mean()), 2 * M @ A / B\n",
    ),
    (
        "q6",
        "q6_answer",
        # Sees the row sums but not that renormalising the product gives the additive mask's weights.
        'q6_answer = {"a"}\n',
    ),
]
