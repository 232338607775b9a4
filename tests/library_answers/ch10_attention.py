"""Library answers for ch10_attention: the course's own attention (course_utils.attention), torch's
scaled_dot_product_attention and torch.autograd, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def luong_general_attention",
        "import torch\n"
        "from course_utils.attention import LuongAttention\n"
        "def luong_general_attention(h_t, enc, W_a, key_padding_mask):\n"
        "    H = W_a.shape[0]\n"
        "    attention = LuongAttention('general', H, H).double()\n"
        "    with torch.no_grad():\n"
        "        attention.W_a.weight.copy_(torch.from_numpy(np.asarray(W_a, dtype=float)))\n"
        "        context, weights = attention(\n"
        "            torch.from_numpy(np.asarray(h_t, dtype=float))[:, None],\n"
        "            torch.from_numpy(np.asarray(enc, dtype=float)),\n"
        "            torch.from_numpy(np.asarray(key_padding_mask, dtype=bool)),\n"
        "        )\n"
        "    return context[:, 0].numpy(), weights[:, 0].numpy()\n",
        "course_utils",
    ),
    (
        "q2",
        "def bahdanau_attention",
        "import torch\n"
        "from course_utils.attention import AdditiveAttention\n"
        "def bahdanau_as_function(s_prev, enc, W, U, key_padding_mask):\n"
        "    module = AdditiveAttention(W.shape[1], U.shape[1], W.shape[0]).double()\n"
        "    with torch.no_grad():\n"
        "        module.W.weight.copy_(torch.from_numpy(np.asarray(W, dtype=float)))\n"
        "        module.U.weight.copy_(torch.from_numpy(np.asarray(U, dtype=float)))\n"
        "    query = torch.from_numpy(np.asarray(s_prev, dtype=float))[:, None]\n"
        "    keys = torch.from_numpy(np.asarray(enc, dtype=float))\n"
        "    mask = torch.from_numpy(np.asarray(key_padding_mask, dtype=bool))\n"
        "    def attend(v):\n"
        "        context, weights = torch.func.functional_call(module, {'v.weight': v[None]}, (query, keys, mask))\n"
        "        return context[:, 0], weights[:, 0]\n"
        "    return attend\n"
        "def bahdanau_attention(s_prev, enc, W, U, v, key_padding_mask):\n"
        "    attend = bahdanau_as_function(s_prev, enc, W, U, key_padding_mask)\n"
        "    with torch.no_grad():\n"
        "        context, weights = attend(torch.from_numpy(np.asarray(v, dtype=float)))\n"
        "    return context.numpy(), weights.numpy()\n"
        "def bahdanau_context_grad_v(s_prev, enc, W, U, v, key_padding_mask):\n"
        "    attend = bahdanau_as_function(s_prev, enc, W, U, key_padding_mask)\n"
        "    v = torch.from_numpy(np.asarray(v, dtype=float))\n"
        "    return torch.autograd.functional.jacobian(lambda v: attend(v)[0], v).numpy()\n",
        "torch",
    ),
    (
        "q3",
        "def sdpa_mask_from_padding",
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def sdpa_mask_from_padding(key_padding_mask):\n"
        "    padding = torch.from_numpy(np.asarray(key_padding_mask, dtype=bool))\n"
        "    return torch.logical_not(padding).unsqueeze(1).numpy()\n"
        "def dot_product_attention(query, key, value, attn_mask=None):\n"
        "    if attn_mask is not None:\n"
        "        attn_mask = np.asarray(attn_mask)\n"
        "        if attn_mask.dtype != bool:\n"
        "            raise TypeError(f'attn_mask must be a bool array, got {attn_mask.dtype}')\n"
        "        attn_mask = torch.from_numpy(np.ascontiguousarray(attn_mask))\n"
        "    query, key, value = (torch.from_numpy(np.ascontiguousarray(t, dtype=float)) for t in (query, key, value))\n"
        "    return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask).numpy()\n",
        "torch",
    ),
    (
        "q4",
        "def alignment_score",
        "import torch\n"
        "from course_utils.attention import alignment_accuracy\n"
        "def alignment_score(attentions, gold):\n"
        "    if len(attentions) != len(gold):\n"
        "        raise ValueError('attentions and gold need one entry per sentence')\n"
        "    weights = []\n"
        "    for matrix, links in zip(attentions, gold):\n"
        "        matrix = np.asarray(matrix, dtype=float)\n"
        "        if matrix.ndim != 2 or len(links) != matrix.shape[0]:\n"
        "            raise ValueError('gold needs one list per row of the attention')\n"
        "        if any(not 0 <= s < matrix.shape[1] for positions in links for s in positions):\n"
        "            raise ValueError('a gold position is out of range')\n"
        "        weights.append(torch.from_numpy(matrix))\n"
        "    return alignment_accuracy(weights, gold)\n",
        "course_utils",
    ),
    (
        "q5",
        "def lin_penalty",
        "import torch\n"
        "def lin_penalty(A):\n"
        "    A = np.asarray(A, dtype=float)\n"
        "    if A.ndim != 3:\n"
        "        raise ValueError(f'A must be (B, r, T), got {A.shape}')\n"
        "    A = torch.tensor(A, requires_grad=True)\n"
        "    M = A @ A.transpose(1, 2) - torch.eye(A.shape[1], dtype=torch.float64)\n"
        "    penalty = (torch.linalg.matrix_norm(M) ** 2).mean()\n"
        "    (grad,) = torch.autograd.grad(penalty, A)\n"
        "    return float(penalty), grad.numpy()\n",
        "torch",
    ),
]
