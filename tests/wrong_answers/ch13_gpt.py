"""Plausible wrong answers for ch13_gpt: each must lose its question's points and nothing else."""

# Pieces more than one answer shares, right as the master has them.
_TOP_K = (
    "def filter_logits(logits, top_k=None, top_p=None, min_tokens_to_keep=1):\n"
    "    logits = np.array(logits, dtype=float)\n"
    "    if logits.ndim != 2 or min_tokens_to_keep < 1:\n"
    "        raise ValueError('logits')\n"
    "    V = logits.shape[1]\n"
    "    if top_k is not None:\n"
    "        if top_k < 1:\n"
    "            raise ValueError('top_k')\n"
    "        k = min(max(top_k, min_tokens_to_keep), V)\n"
    "        kth = -np.sort(-logits, axis=1)[:, k - 1:k]\n"
    "        logits[logits < kth] = -np.inf\n"
)
_CHECK_BATCH = (
    "def _check_batch(logits, previous):\n"
    "    if logits.ndim != 2 or previous.ndim != 2 or len(previous) != len(logits):\n"
    "        raise ValueError('shapes')\n"
)
_PENALTY_OPENING = (
    "def repetition_penalty(logits, previous, penalty):\n"
    "    logits, previous = np.array(logits, dtype=float), np.asarray(previous)\n"
    "    _check_batch(logits, previous)\n"
    "    if not penalty > 0:\n"
    "        raise ValueError('penalty')\n"
    "    for b in range(len(logits)):\n"
    "        seen = np.unique(previous[b])\n"
)
_BAN = (
    "def ban_repeated_ngrams(logits, previous, n):\n"
    "    logits, previous = np.array(logits, dtype=float), np.asarray(previous)\n"
    "    _check_batch(logits, previous)\n"
    "    if not (isinstance(n, (int, np.integer)) and n >= 1):\n"
    "        raise ValueError('n')\n"
    "    T = previous.shape[1]\n"
    "    if T < n:\n"
    "        return logits\n"
    "    for b in range(len(logits)):\n"
    "        row = [int(t) for t in previous[b]]\n"
    "        prefix = row[T - n + 1:]\n"
    "        for start in range(T - n + 1):\n"
    "            if row[start:start + n - 1] == prefix:\n"
    "                logits[b, row[start + n - 1]] = -np.inf\n"
    "    return logits\n"
)

WRONG = [
    (
        "q1",
        "def gpt2_block",
        # The causal mask ignores the cached positions: new position i masks every key after
        # index i, cached ones included, instead of after t + i. Right without a cache.
        "def gpt2_block(x, weights, nhead, past=None):\n"
        "    x = np.asarray(x, dtype=float)\n"
        "    w = {k: np.asarray(v, dtype=float) for k, v in weights.items()}\n"
        "    if x.ndim != 2:\n"
        "        raise ValueError('x')\n"
        "    T, d = x.shape\n"
        "    if w['attn.c_attn.weight'].shape != (d, 3 * d) or d % nhead:\n"
        "        raise ValueError('shapes')\n"
        "    dk = d // nhead\n"
        "    def ln(y, name):\n"
        "        mu = y.mean(axis=-1, keepdims=True)\n"
        "        var = y.var(axis=-1, keepdims=True)\n"
        "        return (y - mu) / np.sqrt(var + 1e-5) * w[name + '.weight'] + w[name + '.bias']\n"
        "    qkv = ln(x, 'ln_1') @ w['attn.c_attn.weight'] + w['attn.c_attn.bias']\n"
        "    q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(T, nhead, dk).transpose(1, 0, 2) for i in range(3))\n"
        "    if past is not None:\n"
        "        pk, pv = (np.asarray(a, dtype=float) for a in past)\n"
        "        if pk.ndim != 3 or pk.shape != pv.shape or pk.shape[0] != nhead or pk.shape[2] != dk:\n"
        "            raise ValueError('past')\n"
        "        k, v = np.concatenate([pk, k], axis=1), np.concatenate([pv, v], axis=1)\n"
        "    mask = np.triu(np.ones((T, k.shape[1]), dtype=bool), 1)\n"
        "    scores = q @ k.transpose(0, 2, 1) / np.sqrt(dk) + np.where(mask, -np.inf, 0.0)\n"
        "    out = (softmax(scores) @ v).transpose(1, 0, 2).reshape(T, d)\n"
        "    h = x + out @ w['attn.c_proj.weight'] + w['attn.c_proj.bias']\n"
        "    u = ln(h, 'ln_2') @ w['mlp.c_fc.weight'] + w['mlp.c_fc.bias']\n"
        "    u = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))\n"
        "    return h + u @ w['mlp.c_proj.weight'] + w['mlp.c_proj.bias'], (k, v)\n",
    ),
    (
        "q2",
        "def filter_logits",
        # Top-p keeps only the tokens whose running total, most likely first, stays within p:
        # it drops the token that crosses p (and so can keep nothing but the minimum).
        _TOP_K + "    if top_p is not None:\n"
        "        if not 0 <= top_p <= 1:\n"
        "            raise ValueError('top_p')\n"
        "        order = np.argsort(-logits, axis=1, kind='stable')\n"
        "        probs = softmax(np.take_along_axis(logits, order, axis=1))\n"
        "        remove = np.cumsum(probs, axis=1) > top_p\n"
        "        remove[:, :min_tokens_to_keep] = False\n"
        "        removed = np.zeros_like(remove)\n"
        "        np.put_along_axis(removed, order, remove, axis=1)\n"
        "        logits[removed] = -np.inf\n"
        "    return logits\n",
    ),
    (
        "q2",
        "def filter_logits",
        # Top-p right, but the removed tokens get +inf instead of -inf: sampling then picks
        # only them (softmax gives nan). An attacker's answer from a review of the tests (11-30):
        # the tests compared np.isinf masks, true for both signs.
        _TOP_K + "    if top_p is not None:\n"
        "        if not 0 <= top_p <= 1:\n"
        "            raise ValueError('top_p')\n"
        "        order = np.argsort(logits, axis=1, kind='stable')\n"
        "        probs = softmax(np.take_along_axis(logits, order, axis=1))\n"
        "        remove = np.cumsum(probs, axis=1) <= 1 - top_p\n"
        "        remove[:, max(V - min_tokens_to_keep, 0):] = False\n"
        "        removed = np.zeros_like(remove)\n"
        "        np.put_along_axis(removed, order, remove, axis=1)\n"
        "        logits[removed] = np.inf\n"
        "    return logits\n",
    ),
    (
        "q3",
        "def repetition_penalty",
        # The penalty right, but the banned tokens get +inf: the ban forces the repeat it should
        # block. An attacker's answer from a review of the tests (11-30), as q2's +inf.
        _CHECK_BATCH + _PENALTY_OPENING + "        values = logits[b, seen]\n"
        "        logits[b, seen] = np.where(values < 0, values * penalty, values / penalty)\n"
        "    return logits\n" + _BAN.replace("= -np.inf", "= np.inf"),
    ),
    (
        "q3",
        "def repetition_penalty",
        # CTRL's formula as first written: always divides, so a negative logit grows (the
        # repeated token gets more likely); the n-gram ban is right.
        _CHECK_BATCH + _PENALTY_OPENING + "        logits[b, seen] = logits[b, seen] / penalty\n"
        "    return logits\n" + _BAN,
    ),
    (
        "q4",
        "def gpt2_parameter_count",
        # Right parameter count; the cache keeps a key and a value for every query head even
        # under grouped-query attention (num_kv_heads ignored).
        "def _positive_ints(**sizes):\n"
        "    for name, value in sizes.items():\n"
        "        if not (isinstance(value, (int, np.integer)) and value >= 1):\n"
        "            raise ValueError(name)\n"
        "def gpt2_parameter_count(vocab_size, n_positions, n_embd, n_layer, n_inner=None, tied=True):\n"
        "    d, V = n_embd, vocab_size\n"
        "    inner = 4 * d if n_inner is None else n_inner\n"
        "    _positive_ints(v=V, p=n_positions, d=d, l=n_layer, i=inner)\n"
        "    block = 4 * d + 3 * d * d + 3 * d + d * d + d + d * inner + inner + inner * d + d\n"
        "    return V * d + n_positions * d + n_layer * block + 2 * d + (0 if tied else V * d)\n"
        "def kv_cache_bytes(num_layers, num_heads, head_dim, seq_len, batch_size=1, num_kv_heads=None, bytes_per_value=2):\n"
        "    kv = num_heads if num_kv_heads is None else num_kv_heads\n"
        "    _positive_ints(a=num_layers, b=num_heads, c=head_dim, d=seq_len, e=batch_size, f=kv, g=bytes_per_value)\n"
        "    if num_heads % kv:\n"
        "        raise ValueError('num_kv_heads')\n"
        "    return 2 * num_layers * batch_size * num_heads * seq_len * head_dim * bytes_per_value\n",
    ),
    (
        "q5",
        "def sft_targets",
        # Off by one: masks targets[:, j] for j < prompt_length, forgetting that target j is
        # token j + 1, so the first response token is masked too; the loss is right.
        "def sft_targets(ids, prompt_lengths, pad_id=None):\n"
        "    ids, lengths = np.asarray(ids), np.asarray(prompt_lengths)\n"
        "    if ids.ndim != 2 or ids.shape[1] < 2:\n"
        "        raise ValueError('ids')\n"
        "    B, T = ids.shape\n"
        "    if lengths.shape != (B,) or (lengths < 1).any() or (lengths >= T).any():\n"
        "        raise ValueError('prompt_lengths')\n"
        "    targets = ids[:, 1:].copy()\n"
        "    targets[np.arange(T - 1)[None, :] < lengths[:, None]] = -100\n"
        "    if pad_id is not None:\n"
        "        targets[ids[:, 1:] == pad_id] = -100\n"
        "    return ids[:, :-1], targets\n"
        "def sft_loss(logits, targets, reduction='token'):\n"
        "    logits, targets = np.asarray(logits, dtype=float), np.asarray(targets)\n"
        "    if logits.ndim != 3 or targets.shape != logits.shape[:2] or reduction not in ('token', 'sequence'):\n"
        "        raise ValueError('shapes')\n"
        "    scored = targets != -100\n"
        "    if not scored.any(axis=1).all():\n"
        "        raise ValueError('empty row')\n"
        "    top = logits.max(axis=-1, keepdims=True)\n"
        "    logp = logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))\n"
        "    nll = -np.take_along_axis(logp, np.where(scored, targets, 0)[..., None], axis=-1)[..., 0] * scored\n"
        "    if reduction == 'token':\n"
        "        return float(nll.sum() / scored.sum())\n"
        "    return float((nll.sum(axis=1) / scored.sum(axis=1)).mean())\n",
    ),
    (
        "q6",
        "def sequence_logprobs",
        # -log σ(z) written as -log(1 / (1 + exp(-z))): exp overflows for a large negative
        # margin and the loss becomes inf.
        "def sequence_logprobs(logits, targets):\n"
        "    logits, targets = np.asarray(logits, dtype=float), np.asarray(targets)\n"
        "    if logits.ndim != 3 or targets.shape != logits.shape[:2]:\n"
        "        raise ValueError('shapes')\n"
        "    scored = targets != -100\n"
        "    top = logits.max(axis=-1, keepdims=True)\n"
        "    logp = logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))\n"
        "    return (np.take_along_axis(logp, np.where(scored, targets, 0)[..., None], axis=-1)[..., 0] * scored).sum(axis=1)\n"
        "def dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.1, loss_type='sigmoid', label_smoothing=0.0):\n"
        "    c, r, rc, rr = (np.asarray(a, dtype=float) for a in (chosen, rejected, ref_chosen, ref_rejected))\n"
        "    if any(a.ndim != 1 or a.shape != c.shape for a in (c, r, rc, rr)) or len(c) == 0:\n"
        "        raise ValueError('shapes')\n"
        "    if not beta > 0 or not 0 <= label_smoothing < 0.5:\n"
        "        raise ValueError('beta')\n"
        "    m = (c - rc) - (r - rr)\n"
        "    sigmoid = lambda z: 1 / (1 + np.exp(-z))\n"
        "    if loss_type == 'sigmoid':\n"
        "        losses = -(1 - label_smoothing) * np.log(sigmoid(beta * m)) - label_smoothing * np.log(sigmoid(-beta * m))\n"
        "    elif loss_type == 'hinge':\n"
        "        losses = np.maximum(0.0, 1 - beta * m)\n"
        "    elif loss_type == 'ipo':\n"
        "        losses = (m - 1 / (2 * beta)) ** 2\n"
        "    else:\n"
        "        raise ValueError('loss_type')\n"
        "    return float(losses.mean())\n",
    ),
    (
        "q7",
        "def lora_parameter_count",
        # Matches targets by the exact short name of the attention's layers only: "c_proj"
        # picks the attention's c_proj and not the MLP's; the merge is right.
        "def lora_parameter_count(n_embd, n_layer, targets, r, n_inner=None):\n"
        "    if isinstance(targets, str) or not targets:\n"
        "        raise ValueError('targets')\n"
        "    d = n_embd\n"
        "    inner = 4 * d if n_inner is None else n_inner\n"
        "    layers = {'c_attn': (d, 3 * d), 'c_proj': (d, d), 'c_fc': (d, inner),\n"
        "              'attn.c_attn': (d, 3 * d), 'attn.c_proj': (d, d), 'mlp.c_fc': (d, inner), 'mlp.c_proj': (inner, d)}\n"
        "    if any(t not in layers for t in targets):\n"
        "        raise ValueError('unknown target')\n"
        "    chosen = {t.split('.')[-1] if t != 'mlp.c_proj' else t for t in targets}\n"
        "    return n_layer * sum(r * sum(layers[t]) for t in chosen)\n"
        "def merge_lora(weight, lora_A, lora_B, alpha, rslora=False):\n"
        "    W, A, B = (np.asarray(a, dtype=float) for a in (weight, lora_A, lora_B))\n"
        "    if W.ndim != 2 or A.ndim != 2 or B.ndim != 2:\n"
        "        raise ValueError('2-D')\n"
        "    r = A.shape[0]\n"
        "    if A.shape != (r, W.shape[0]) or B.shape != (W.shape[1], r):\n"
        "        raise ValueError('shapes')\n"
        "    return W + (alpha / np.sqrt(r) if rslora else alpha / r) * (B @ A).T\n",
    ),
    (
        "q8",
        "q8_answer",
        # Takes the cache to make each step's cost constant.
        'q8_answer = {"a", "c", "d"}\n',
    ),
]
