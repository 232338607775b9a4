"""Plausible wrong answers for ch12_bert: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def wordpiece_greedy",
        # Where no piece matches, emits [UNK] for that one character and goes on, instead of
        # turning the whole word into a single [UNK]; the fewest-pieces count is right.
        "def wordpiece_greedy(word, vocab, max_chars=100):\n"
        "    if not word or any(c.isspace() for c in word):\n"
        "        raise ValueError('word')\n"
        "    vocab = set(vocab)\n"
        "    if len(word) > max_chars:\n"
        "        return ['[UNK]']\n"
        "    pieces, start = [], 0\n"
        "    while start < len(word):\n"
        "        for end in range(len(word), start, -1):\n"
        "            piece = word[start:end] if start == 0 else '##' + word[start:end]\n"
        "            if piece in vocab:\n"
        "                pieces.append(piece)\n"
        "                start = end\n"
        "                break\n"
        "        else:\n"
        "            pieces.append('[UNK]')\n"
        "            start += 1\n"
        "    return pieces\n"
        "\n"
        "\n"
        "def fewest_pieces(word, vocab):\n"
        "    if not word or any(c.isspace() for c in word):\n"
        "        raise ValueError('word')\n"
        "    vocab = set(vocab)\n"
        "    best = [0] + [None] * len(word)\n"
        "    for end in range(1, len(word) + 1):\n"
        "        for start in range(end):\n"
        "            piece = word[start:end] if start == 0 else '##' + word[start:end]\n"
        "            if best[start] is not None and piece in vocab:\n"
        "                if best[end] is None or best[start] + 1 < best[end]:\n"
        "                    best[end] = best[start] + 1\n"
        "    return best[len(word)]\n",
    ),
    (
        "q1",
        "def wordpiece_greedy",
        # Right greedy segmentation, but "fewest pieces" is taken to be the greedy count
        # (None when greedy gives [UNK]): greedy is not optimal.
        "def wordpiece_greedy(word, vocab, max_chars=100):\n"
        "    if not word or any(c.isspace() for c in word):\n"
        "        raise ValueError('word')\n"
        "    vocab = set(vocab)\n"
        "    if len(word) > max_chars:\n"
        "        return ['[UNK]']\n"
        "    pieces, start = [], 0\n"
        "    while start < len(word):\n"
        "        for end in range(len(word), start, -1):\n"
        "            piece = word[start:end] if start == 0 else '##' + word[start:end]\n"
        "            if piece in vocab:\n"
        "                break\n"
        "        else:\n"
        "            return ['[UNK]']\n"
        "        pieces.append(piece)\n"
        "        start = end\n"
        "    return pieces\n"
        "\n"
        "\n"
        "def fewest_pieces(word, vocab):\n"
        "    pieces = wordpiece_greedy(word, vocab, max_chars=10**9)\n"
        "    return None if pieces == ['[UNK]'] else len(pieces)\n",
    ),
    (
        "q2",
        "def original_bert_masking",
        # Stops at the first whole word that would overflow (break) instead of skipping it.
        "def original_bert_masking(tokens, priority, action, random_tokens, masked_lm_prob=0.15,\n"
        "                          max_predictions=20, whole_word=False):\n"
        "    if not len(priority) == len(action) == len(random_tokens) == len(tokens):\n"
        "        raise ValueError('lengths')\n"
        "    groups = []\n"
        "    for i, token in enumerate(tokens):\n"
        "        if token in ('[CLS]', '[SEP]'):\n"
        "            continue\n"
        "        if whole_word and groups and token.startswith('##'):\n"
        "            groups[-1].append(i)\n"
        "        else:\n"
        "            groups.append([i])\n"
        "    groups.sort(key=lambda g: priority[g[0]])\n"
        "    num = min(max_predictions, max(1, int(round(len(tokens) * masked_lm_prob))))\n"
        "    output, chosen = list(tokens), []\n"
        "    for group in groups:\n"
        "        if len(chosen) + len(group) > num:\n"
        "            break\n"
        "        for i in group:\n"
        "            if action[i] < 0.8:\n"
        "                output[i] = '[MASK]'\n"
        "            elif action[i] >= 0.9:\n"
        "                output[i] = random_tokens[i]\n"
        "            chosen.append(i)\n"
        "    positions = sorted(chosen)\n"
        "    return output, positions, [tokens[i] for i in positions]\n",
    ),
    (
        "q3",
        "def encode_pair",
        # On a tie, longest_first cuts the first text (>= instead of >); the rest is right.
        "def encode_pair(first_ids, second_ids, max_length, cls_id, sep_id, pad_id,\n"
        "                truncation='longest_first'):\n"
        "    first, second = list(first_ids), list(second_ids)\n"
        "    if not first or not second:\n"
        "        raise ValueError('empty')\n"
        "    budget = max_length - 3\n"
        "    if truncation == 'longest_first':\n"
        "        if max_length < 5:\n"
        "            raise ValueError('max_length')\n"
        "        while len(first) + len(second) > budget:\n"
        "            (first if len(first) >= len(second) else second).pop()\n"
        "    elif truncation == 'only_second':\n"
        "        if len(first) > budget:\n"
        "            raise ValueError('first does not fit')\n"
        "        del second[budget - len(first):]\n"
        "    else:\n"
        "        raise ValueError('truncation')\n"
        "    ids = [cls_id, *first, sep_id, *second, sep_id]\n"
        "    pad = max_length - len(ids)\n"
        "    return {\n"
        "        'input_ids': ids + [pad_id] * pad,\n"
        "        'token_type_ids': [0] * (len(first) + 2) + [1] * (len(second) + 1) + [0] * pad,\n"
        "        'attention_mask': [1] * len(ids) + [0] * pad,\n"
        "        'special_tokens_mask': [1] + [0] * len(first) + [1] + [0] * len(second) + [1] * (1 + pad),\n"
        "    }\n",
    ),
    (
        "q4",
        "def albert_parameter_count",
        # Factorizes the embeddings but forgets the E → H projection that follows them.
        "def albert_parameter_count(vocab_size, hidden_size, num_layers, intermediate_size,\n"
        "                           max_positions=512, type_vocab=2, embedding_size=None,\n"
        "                           num_groups=None, pooler=True):\n"
        "    H, I = hidden_size, intermediate_size\n"
        "    E = H if embedding_size is None else embedding_size\n"
        "    G = num_layers if num_groups is None else num_groups\n"
        "    if num_layers % G:\n"
        "        raise ValueError('groups')\n"
        "    embeddings = (vocab_size + max_positions + type_vocab) * E + 2 * E\n"
        "    layer = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H\n"
        "    return embeddings + G * layer + (H * H + H if pooler else 0)\n",
    ),
    (
        "q5",
        "def pool_sentences",
        # cls and lasttoken take positions 0 and T - 1, right only when padding is on the right.
        "def pool_sentences(hidden, attention_mask, mode='mean', normalize=True):\n"
        "    hidden = np.asarray(hidden, dtype=float)\n"
        "    mask = np.asarray(attention_mask).astype(bool)\n"
        "    if hidden.ndim != 3 or mask.shape != hidden.shape[:2] or not mask.any(axis=1).all():\n"
        "        raise ValueError('shapes')\n"
        "    if mode == 'cls':\n"
        "        out = hidden[:, 0]\n"
        "    elif mode == 'lasttoken':\n"
        "        out = hidden[np.arange(len(hidden)), mask.sum(axis=1) - 1]\n"
        "    elif mode == 'max':\n"
        "        out = np.where(mask[:, :, None], hidden, -np.inf).max(axis=1)\n"
        "    elif mode in ('mean', 'mean_sqrt_len_tokens'):\n"
        "        count = mask.sum(axis=1, keepdims=True)\n"
        "        out = (hidden * mask[:, :, None]).sum(axis=1)\n"
        "        out = out / (count if mode == 'mean' else np.sqrt(count))\n"
        "    else:\n"
        "        raise ValueError('mode')\n"
        "    if normalize:\n"
        "        out = out / np.linalg.norm(out, axis=1, keepdims=True)\n"
        "    return out\n",
    ),
    (
        "q5",
        "def pool_sentences",
        # Max pooling over every position, padding included.
        "def pool_sentences(hidden, attention_mask, mode='mean', normalize=True):\n"
        "    hidden = np.asarray(hidden, dtype=float)\n"
        "    mask = np.asarray(attention_mask).astype(bool)\n"
        "    if hidden.ndim != 3 or mask.shape != hidden.shape[:2] or not mask.any(axis=1).all():\n"
        "        raise ValueError('shapes')\n"
        "    rows, T = np.arange(len(hidden)), mask.shape[1]\n"
        "    if mode == 'cls':\n"
        "        out = hidden[rows, mask.argmax(axis=1)]\n"
        "    elif mode == 'lasttoken':\n"
        "        out = hidden[rows, T - 1 - mask[:, ::-1].argmax(axis=1)]\n"
        "    elif mode == 'max':\n"
        "        out = hidden.max(axis=1)\n"
        "    elif mode in ('mean', 'mean_sqrt_len_tokens'):\n"
        "        count = mask.sum(axis=1, keepdims=True)\n"
        "        out = (hidden * mask[:, :, None]).sum(axis=1)\n"
        "        out = out / (count if mode == 'mean' else np.sqrt(count))\n"
        "    else:\n"
        "        raise ValueError('mode')\n"
        "    if normalize:\n"
        "        out = out / np.linalg.norm(out, axis=1, keepdims=True)\n"
        "    return out\n",
    ),
    (
        "q6",
        "q6_answer",
        # Explains the jamo but not what happens with strip_accents=False.
        'q6_answer = {"b"}\n',
    ),
]
