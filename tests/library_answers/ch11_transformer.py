"""Library answers for ch11_transformer: the course's own Transformer (course_utils.transformer),
nn.MultiheadAttention, nn.Transformer on the meta device and torch.func, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def local_causal_mask",
        "import torch\n"
        "from course_utils import transformer as course_transformer\n"
        "def local_causal_mask(T, window):\n"
        "    if T < 1 or window < 0:\n"
        "        raise ValueError(f'T >= 1 and window >= 0, got T={T}, window={window}')\n"
        "    ones = torch.ones(T, T, dtype=torch.bool)\n"
        "    return (ones.triu(1) | ones.tril(-window - 1)).numpy()\n"
        "def local_causal_attention(query, key, value, window):\n"
        "    mask = torch.from_numpy(local_causal_mask(query.shape[-2], window))\n"
        "    query, key, value = (torch.from_numpy(np.asarray(t, dtype=float)) for t in (query, key, value))\n"
        "    output, weights = course_transformer.attention(query, key, value, attn_mask=mask)\n"
        "    return output.numpy(), weights.numpy()\n",
        "torch",
    ),
    (
        "q2",
        "def head_self_attention",
        "import torch\n"
        "def torch_multihead(x, W_q, W_k, W_v, W_o, num_heads):\n"
        "    d_model = x.shape[-1]\n"
        "    mha = torch.nn.MultiheadAttention(d_model, num_heads, bias=False, batch_first=True, dtype=torch.float64)\n"
        "    as_tensor = lambda a: torch.from_numpy(np.asarray(a, dtype=float))\n"
        "    with torch.no_grad():\n"
        "        mha.in_proj_weight.copy_(torch.cat([as_tensor(W_q), as_tensor(W_k), as_tensor(W_v)]))\n"
        "        mha.out_proj.weight.copy_(as_tensor(W_o))\n"
        "        x = as_tensor(x)[None]\n"
        "        output, weights = mha(x, x, x, average_attn_weights=False)\n"
        "    return output[0].numpy(), weights[0].numpy()\n"
        "def head_self_attention(x, W_q, W_k, W_v, num_heads, i):\n"
        "    d_model = x.shape[-1]\n"
        "    if d_model % num_heads or not 0 <= i < num_heads:\n"
        "        raise ValueError(f'd_model={d_model}, num_heads={num_heads}, i={i}')\n"
        "    d_k = d_model // num_heads\n"
        "    concat, weights = torch_multihead(x, W_q, W_k, W_v, np.eye(d_model), num_heads)\n"
        "    return concat[:, i * d_k : (i + 1) * d_k], weights[i]\n"
        "def multi_head_self_attention(x, W_q, W_k, W_v, W_o, num_heads):\n"
        "    if x.shape[-1] % num_heads:\n"
        "        raise ValueError(f'd_model={x.shape[-1]} is not divisible by num_heads={num_heads}')\n"
        "    return torch_multihead(x, W_q, W_k, W_v, W_o, num_heads)[0]\n",
        "torch",
    ),
    (
        "q3",
        "def pe_shift_block",
        "from course_utils.transformer import position_shift_matrix, sinusoidal_table\n"
        "def pe_shift_block(k, i, d_model):\n"
        "    R = position_shift_matrix(k, d_model)  # ValueError for an odd d_model\n"
        "    if not 0 <= i < d_model // 2:\n"
        "        raise ValueError(f'i must be in 0 … {d_model // 2 - 1}, got {i}')\n"
        "    return R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2].numpy()\n"
        "def pe_squared_distance(k, d_model):\n"
        "    R = position_shift_matrix(k, d_model)  # PE(pos + k) = R PE(pos)\n"
        "    start = sinusoidal_table(1, d_model)[0].double()  # PE(0)\n"
        "    return float(((R @ start - start) ** 2).sum())\n",
        "course_utils",
    ),
    (
        "q4",
        "def translation_model_parameter_count",
        "import warnings\n"
        "import torch\n"
        "from torch import nn\n"
        "def translation_model_parameter_count(d_model, nhead, d_ff, num_layers, src_vocab, tgt_vocab, sharing):\n"
        "    if d_model % nhead:\n"
        "        raise ValueError(f'd_model={d_model} is not divisible by nhead={nhead}')\n"
        "    if sharing not in ('none', 'decoder', 'all'):\n"
        "        raise ValueError(f'unknown sharing {sharing!r}')\n"
        "    if sharing == 'all' and src_vocab != tgt_vocab:\n"
        "        raise ValueError('sharing=all needs one vocabulary')\n"
        "    with torch.device('meta'), warnings.catch_warnings():\n"
        "        warnings.simplefilter('ignore')\n"
        "        core = nn.Transformer(d_model, nhead, num_layers, num_layers, d_ff, batch_first=True)\n"
        "        source, target = nn.Embedding(src_vocab, d_model), nn.Embedding(tgt_vocab, d_model)\n"
        "        output = nn.Linear(d_model, tgt_vocab)\n"
        "    if sharing in ('decoder', 'all'):\n"
        "        output.weight = target.weight\n"
        "    if sharing == 'all':\n"
        "        target.weight = output.weight = source.weight\n"
        "    return sum(p.numel() for p in nn.ModuleList([core, source, target, output]).parameters())\n",
        "torch",
    ),
    (
        "q5",
        "def score_statistics",
        "import torch\n"
        "def score_statistics(queries, keys):\n"
        "    queries = torch.from_numpy(np.asarray(queries, dtype=float))\n"
        "    keys = torch.from_numpy(np.asarray(keys, dtype=float))\n"
        "    jacobians = torch.func.vmap(torch.func.jacrev(lambda z: torch.softmax(z, dim=-1)))\n"
        "    raw = torch.einsum('nsd,nd->ns', keys, queries)\n"
        "    stats = {}\n"
        "    for name, scores in [('raw', raw), ('scaled', raw / queries.shape[-1] ** 0.5)]:\n"
        "        p = torch.softmax(scores, dim=-1)\n"
        "        stats[f'var_{name}'] = float(scores.var(unbiased=False))\n"
        "        stats[f'max_{name}'] = float(p.max(dim=-1).values.mean())\n"
        "        stats[f'jac_{name}'] = float(torch.linalg.matrix_norm(jacobians(scores)).mean())\n"
        "    return stats\n",
        "torch",
    ),
]
