"""Plausible wrong answers for ch11_transformer: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def local_causal_mask",
        # The right mask (True = ignore), read with SDPA's polarity (True = attend) in the attention:
        # every query sees the future and the far past, and not the window.
        "def local_causal_mask(T, window):\n"
        "    if T < 1 or window < 0:\n"
        "        raise ValueError('T >= 1, window >= 0')\n"
        "    t, s = np.arange(T)[:, None], np.arange(T)[None, :]\n"
        "    return (s > t) | (s < t - window)\n"
        "\n"
        "\n"
        "def local_causal_attention(query, key, value, window):\n"
        "    mask = local_causal_mask(query.shape[-2], window)\n"
        "    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])\n"
        "    weights = softmax(scores + np.where(mask, 0.0, -np.inf))\n"
        "    return weights @ value, weights\n",
    ),
    (
        "q1",
        "def local_causal_mask",
        # Off by one: a window of w positions including itself (t - w < s), not itself and w before.
        "def local_causal_mask(T, window):\n"
        "    if T < 1 or window < 0:\n"
        "        raise ValueError('T >= 1, window >= 0')\n"
        "    t, s = np.arange(T)[:, None], np.arange(T)[None, :]\n"
        "    return (s > t) | (s <= t - window)\n"
        "\n"
        "\n"
        "def local_causal_attention(query, key, value, window):\n"
        "    mask = local_causal_mask(query.shape[-2], window)\n"
        "    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])\n"
        "    weights = softmax(scores + np.where(mask, -np.inf, 0.0))\n"
        "    return weights @ value, weights\n",
    ),
    (
        "q2",
        "def head_self_attention",
        # Scales the head's scores by √d_model (the input width) instead of √d_k (the head's width).
        "def head_self_attention(x, W_q, W_k, W_v, num_heads, i):\n"
        "    d_model = x.shape[-1]\n"
        "    if d_model % num_heads or not 0 <= i < num_heads:\n"
        "        raise ValueError('bad heads')\n"
        "    d_k = d_model // num_heads\n"
        "    rows = slice(i * d_k, (i + 1) * d_k)\n"
        "    q, k, v = x @ W_q[rows].T, x @ W_k[rows].T, x @ W_v[rows].T\n"
        "    weights = softmax(q @ k.T / np.sqrt(d_model))\n"
        "    return weights @ v, weights\n"
        "\n"
        "\n"
        "def multi_head_self_attention(x, W_q, W_k, W_v, W_o, num_heads):\n"
        "    heads = [head_self_attention(x, W_q, W_k, W_v, num_heads, i)[0] for i in range(num_heads)]\n"
        "    return np.concatenate(heads, axis=-1) @ W_o.T\n",
    ),
    (
        "q2",
        "def head_self_attention",
        # Splits the projected (T, d_model) queries with a reshape to (h, T, d_k), no transpose:
        # head i gets a jumble of positions and features instead of columns i·d_k … (i+1)·d_k − 1.
        "def head_self_attention(x, W_q, W_k, W_v, num_heads, i):\n"
        "    T, d_model = x.shape\n"
        "    if d_model % num_heads or not 0 <= i < num_heads:\n"
        "        raise ValueError('bad heads')\n"
        "    d_k = d_model // num_heads\n"
        "    q, k, v = ((x @ W.T).reshape(num_heads, T, d_k)[i] for W in (W_q, W_k, W_v))\n"
        "    weights = softmax(q @ k.T / np.sqrt(d_k))\n"
        "    return weights @ v, weights\n"
        "\n"
        "\n"
        "def multi_head_self_attention(x, W_q, W_k, W_v, W_o, num_heads):\n"
        "    heads = [head_self_attention(x, W_q, W_k, W_v, num_heads, i)[0] for i in range(num_heads)]\n"
        "    return np.concatenate(heads, axis=-1) @ W_o.T\n",
    ),
    (
        "q3",
        "def pe_shift_block",
        # The textbook rotation [[cos, -sin], [sin, cos]]: with the (sin, cos) order it moves pos to pos - k.
        "def pe_shift_block(k, i, d_model):\n"
        "    if d_model % 2 or not 0 <= i < d_model // 2:\n"
        "        raise ValueError('bad d_model or i')\n"
        "    angle = k / 10000 ** (2 * i / d_model)\n"
        "    c, s = np.cos(angle), np.sin(angle)\n"
        "    return np.array([[c, -s], [s, c]])\n"
        "\n"
        "\n"
        "def pe_squared_distance(k, d_model):\n"
        "    if d_model % 2:\n"
        "        raise ValueError('odd d_model')\n"
        "    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)\n"
        "    return float(np.sum(2 - 2 * np.cos(k * omega)))\n",
    ),
    (
        "q3",
        "def pe_shift_block",
        # Frequencies 10000^(-i/d_model) per pair instead of 10000^(-2i/d_model).
        "def pe_shift_block(k, i, d_model):\n"
        "    if d_model % 2 or not 0 <= i < d_model // 2:\n"
        "        raise ValueError('bad d_model or i')\n"
        "    angle = k / 10000 ** (i / d_model)\n"
        "    c, s = np.cos(angle), np.sin(angle)\n"
        "    return np.array([[c, s], [-s, c]])\n"
        "\n"
        "\n"
        "def pe_squared_distance(k, d_model):\n"
        "    if d_model % 2:\n"
        "        raise ValueError('odd d_model')\n"
        "    omega = 10000.0 ** (-np.arange(d_model // 2) / d_model)\n"
        "    return float(np.sum(2 - 2 * np.cos(k * omega)))\n",
    ),
    (
        "q4",
        "def translation_model_parameter_count",
        # Gives every head its own d_model × d_model projections: h times too many attention weights.
        "def translation_model_parameter_count(d_model, nhead, d_ff, num_layers, src_vocab, tgt_vocab, sharing):\n"
        "    if d_model % nhead or sharing not in ('none', 'decoder', 'all'):\n"
        "        raise ValueError('bad sizes')\n"
        "    if sharing == 'all' and src_vocab != tgt_vocab:\n"
        "        raise ValueError('one vocabulary')\n"
        "    attention = nhead * 3 * d_model * d_model + 3 * d_model + d_model * d_model + d_model\n"
        "    feed_forward = 2 * d_model * d_ff + d_ff + d_model\n"
        "    encoder_layer = attention + feed_forward + 4 * d_model\n"
        "    decoder_layer = 2 * attention + feed_forward + 6 * d_model\n"
        "    core = num_layers * (encoder_layer + decoder_layer) + 4 * d_model\n"
        "    matrices = {'none': src_vocab + 2 * tgt_vocab, 'decoder': src_vocab + tgt_vocab, 'all': src_vocab}[sharing]\n"
        "    return core + matrices * d_model + tgt_vocab\n",
    ),
    (
        "q4",
        "def translation_model_parameter_count",
        # Forgets the decoder's cross-attention: a decoder layer counted like an encoder layer plus a LayerNorm.
        "def translation_model_parameter_count(d_model, nhead, d_ff, num_layers, src_vocab, tgt_vocab, sharing):\n"
        "    if d_model % nhead or sharing not in ('none', 'decoder', 'all'):\n"
        "        raise ValueError('bad sizes')\n"
        "    if sharing == 'all' and src_vocab != tgt_vocab:\n"
        "        raise ValueError('one vocabulary')\n"
        "    attention = 4 * (d_model * d_model + d_model)\n"
        "    feed_forward = 2 * d_model * d_ff + d_ff + d_model\n"
        "    encoder_layer = attention + feed_forward + 4 * d_model\n"
        "    decoder_layer = attention + feed_forward + 6 * d_model\n"
        "    core = num_layers * (encoder_layer + decoder_layer) + 4 * d_model\n"
        "    matrices = {'none': src_vocab + 2 * tgt_vocab, 'decoder': src_vocab + tgt_vocab, 'all': src_vocab}[sharing]\n"
        "    return core + matrices * d_model + tgt_vocab\n",
    ),
    (
        "q5",
        "def score_statistics",
        # Keeps only the diagonal of the softmax Jacobian, p_i (1 - p_i), and drops the -p_i p_j terms.
        "def score_statistics(queries, keys):\n"
        "    raw = np.einsum('nsd,nd->ns', keys, queries)\n"
        "    stats = {}\n"
        "    for name, scores in [('raw', raw), ('scaled', raw / np.sqrt(queries.shape[-1]))]:\n"
        "        p = softmax(scores)\n"
        "        stats[f'var_{name}'] = float(np.var(scores))\n"
        "        stats[f'max_{name}'] = float(p.max(axis=-1).mean())\n"
        "        stats[f'jac_{name}'] = float(np.sqrt(((p * (1 - p)) ** 2).sum(axis=-1)).mean())\n"
        "    return stats\n",
    ),
    (
        "q5",
        "def score_statistics",
        # Scales the scores by 1/d_k instead of 1/√d_k.
        "def score_statistics(queries, keys):\n"
        "    raw = np.einsum('nsd,nd->ns', keys, queries)\n"
        "    stats = {}\n"
        "    for name, scores in [('raw', raw), ('scaled', raw / queries.shape[-1])]:\n"
        "        p = softmax(scores)\n"
        "        J = np.einsum('ns,st->nst', p, np.eye(p.shape[-1])) - np.einsum('ns,nt->nst', p, p)\n"
        "        stats[f'var_{name}'] = float(np.var(scores))\n"
        "        stats[f'max_{name}'] = float(p.max(axis=-1).mean())\n"
        "        stats[f'jac_{name}'] = float(np.sqrt((J**2).sum(axis=(1, 2))).mean())\n"
        "    return stats\n",
    ),
    (
        "q6",
        "q6_answer",
        # Misses that the cache grows by one key and value per token and layer.
        'q6_answer = {"c"}\n',
    ),
    (
        "q6",
        "q6_answer",
        # Believes cached keys and values are stale, so the outputs differ from recomputing the prefix.
        "q6_answer = 'd'\n",
    ),
]
