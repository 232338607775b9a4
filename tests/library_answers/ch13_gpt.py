"""Library answers for ch13_gpt: torch (a GPT-2 block with scaled_dot_product_attention; the DPO
losses with logsigmoid), transformers' logits processors and GPT2LMHeadModel (on the meta device),
course_utils.gpt's completion_targets with torch's cross_entropy, and peft's LoRA, which the rules
forbid. q8 is conceptual (a value, no library answer).
"""

LIBRARY = [
    (
        "q1",
        "def gpt2_block",
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def gpt2_block(x, weights, nhead, past=None):\n"
        "    x = torch.as_tensor(np.asarray(x, dtype=float))\n"
        "    w = {k: torch.as_tensor(np.asarray(v, dtype=float)) for k, v in weights.items()}\n"
        "    if x.dim() != 2:\n"
        "        raise ValueError('x must be (T, d)')\n"
        "    T, d = x.shape\n"
        "    if tuple(w['attn.c_attn.weight'].shape) != (d, 3 * d) or d % nhead:\n"
        "        raise ValueError('bad shapes')\n"
        "    dk = d // nhead\n"
        "    qkv = F.layer_norm(x, (d,), w['ln_1.weight'], w['ln_1.bias'], 1e-5) @ w['attn.c_attn.weight'] + w['attn.c_attn.bias']\n"
        "    q, k, v = (t.reshape(T, nhead, dk).transpose(0, 1) for t in qkv.split(d, dim=-1))\n"
        "    if past is not None:\n"
        "        pk, pv = (torch.as_tensor(np.asarray(a, dtype=float)) for a in past)\n"
        "        if pk.dim() != 3 or pk.shape != pv.shape or pk.shape[0] != nhead or pk.shape[2] != dk:\n"
        "            raise ValueError('bad past')\n"
        "        k, v = torch.cat([pk, k], dim=1), torch.cat([pv, v], dim=1)\n"
        "    t = k.shape[1] - T\n"
        "    allowed = torch.ones(T, t + T, dtype=torch.bool).tril(t)\n"
        "    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed).transpose(0, 1).reshape(T, d)\n"
        "    h = x + out @ w['attn.c_proj.weight'] + w['attn.c_proj.bias']\n"
        "    u = F.layer_norm(h, (d,), w['ln_2.weight'], w['ln_2.bias'], 1e-5) @ w['mlp.c_fc.weight'] + w['mlp.c_fc.bias']\n"
        "    y = h + F.gelu(u, approximate='tanh') @ w['mlp.c_proj.weight'] + w['mlp.c_proj.bias']\n"
        "    return y.numpy(), (k.numpy(), v.numpy())\n",
        "torch",
    ),
    (
        "q2",
        "def filter_logits",
        "import torch\n"
        "from transformers.generation.logits_process import TopKLogitsWarper, TopPLogitsWarper\n"
        "def filter_logits(logits, top_k=None, top_p=None, min_tokens_to_keep=1):\n"
        "    logits = np.asarray(logits, dtype=float)\n"
        "    if logits.ndim != 2:\n"
        "        raise ValueError('logits must be (B, V)')\n"
        "    keep = min_tokens_to_keep\n"
        "    if not (isinstance(keep, int) and keep >= 1):\n"
        "        raise ValueError('min_tokens_to_keep')\n"
        "    scores = torch.tensor(logits)\n"
        "    ids = torch.zeros(len(logits), 1, dtype=torch.long)\n"
        "    if top_k is not None:\n"
        "        scores = TopKLogitsWarper(top_k, min_tokens_to_keep=keep)(ids, scores)\n"
        "    if top_p is not None:\n"
        "        scores = TopPLogitsWarper(top_p, min_tokens_to_keep=keep)(ids, scores)\n"
        "    return scores.numpy()\n",
        "transformers",
    ),
    (
        "q3",
        "def repetition_penalty",
        "import torch\n"
        "from transformers.generation.logits_process import NoRepeatNGramLogitsProcessor, RepetitionPenaltyLogitsProcessor\n"
        "def _tensors(logits, previous):\n"
        "    logits, previous = np.asarray(logits, dtype=float), np.asarray(previous)\n"
        "    if logits.ndim != 2 or previous.ndim != 2 or len(logits) != len(previous):\n"
        "        raise ValueError('logits (B, V) and previous (B, T)')\n"
        "    return torch.tensor(logits), torch.tensor(previous, dtype=torch.long)\n"
        "def repetition_penalty(logits, previous, penalty):\n"
        "    scores, ids = _tensors(logits, previous)\n"
        "    return RepetitionPenaltyLogitsProcessor(float(penalty))(ids, scores).numpy()\n"
        "def ban_repeated_ngrams(logits, previous, n):\n"
        "    scores, ids = _tensors(logits, previous)\n"
        "    return NoRepeatNGramLogitsProcessor(n)(ids, scores).numpy()\n",
        "transformers",
    ),
    (
        "q4",
        "def gpt2_parameter_count",
        "import torch\n"
        "from transformers import GPT2Config, GPT2LMHeadModel\n"
        "def gpt2_parameter_count(vocab_size, n_positions, n_embd, n_layer, n_inner=None, tied=True):\n"
        "    for value in (vocab_size, n_positions, n_embd, n_layer, 1 if n_inner is None else n_inner):\n"
        "        if not (isinstance(value, int) and value >= 1):\n"
        "            raise ValueError('sizes must be positive ints')\n"
        "    config = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=n_embd, n_layer=n_layer, n_head=1,\n"
        "                        n_inner=n_inner, tie_word_embeddings=tied, bos_token_id=None, eos_token_id=None)\n"
        "    with torch.device('meta'):\n"
        "        model = GPT2LMHeadModel(config)\n"
        "    return sum(p.numel() for p in model.parameters())\n"
        "def kv_cache_bytes(num_layers, num_heads, head_dim, seq_len, batch_size=1, num_kv_heads=None, bytes_per_value=2):\n"
        "    kv = num_heads if num_kv_heads is None else num_kv_heads\n"
        "    for value in (num_layers, num_heads, head_dim, seq_len, batch_size, kv, bytes_per_value):\n"
        "        if not (isinstance(value, int) and value >= 1):\n"
        "            raise ValueError('sizes must be positive ints')\n"
        "    if num_heads % kv:\n"
        "        raise ValueError('num_kv_heads must divide num_heads')\n"
        "    dtype = {1: torch.int8, 2: torch.float16, 4: torch.float32, 8: torch.float64}[bytes_per_value]\n"
        "    with torch.device('meta'):\n"
        "        one = torch.empty(batch_size, kv, seq_len, head_dim, dtype=dtype)\n"
        "    return 2 * num_layers * one.numel() * one.element_size()\n",
        "transformers",
    ),
    (
        "q5",
        "def sft_targets",
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from course_utils.gpt import completion_targets\n"
        "def sft_targets(ids, prompt_lengths, pad_id=None):\n"
        "    try:\n"
        "        inputs, targets = completion_targets(torch.tensor(np.asarray(ids), dtype=torch.long),\n"
        "                                             torch.tensor(np.asarray(prompt_lengths)), pad_id)\n"
        "    except (TypeError, IndexError) as error:\n"
        "        raise ValueError(str(error)) from None\n"
        "    return inputs.numpy(), targets.numpy()\n"
        "def sft_loss(logits, targets, reduction='token'):\n"
        "    logits, targets = torch.tensor(np.asarray(logits, dtype=float)), torch.tensor(np.asarray(targets), dtype=torch.long)\n"
        "    if logits.dim() != 3 or targets.shape != logits.shape[:2] or reduction not in ('token', 'sequence'):\n"
        "        raise ValueError('bad shapes or reduction')\n"
        "    if not bool((targets != -100).any(dim=1).all()):\n"
        "        raise ValueError('a row has nothing to score')\n"
        "    if reduction == 'token':\n"
        "        return float(F.cross_entropy(logits.flatten(0, 1), targets.flatten()))\n"
        "    return float(torch.stack([F.cross_entropy(l, t) for l, t in zip(logits, targets)]).mean())\n",
        "course_utils",
    ),
    (
        "q6",
        "def sequence_logprobs",
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def sequence_logprobs(logits, targets):\n"
        "    logits, targets = torch.tensor(np.asarray(logits, dtype=float)), torch.tensor(np.asarray(targets), dtype=torch.long)\n"
        "    if logits.dim() != 3 or targets.shape != logits.shape[:2]:\n"
        "        raise ValueError('logits (B, T, V) and targets (B, T)')\n"
        "    picked = F.log_softmax(logits, dim=-1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]\n"
        "    return (picked * (targets != -100)).sum(dim=1).numpy()\n"
        "def dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.1, loss_type='sigmoid', label_smoothing=0.0):\n"
        "    c, r, rc, rr = (torch.tensor(np.asarray(a, dtype=float)) for a in (chosen, rejected, ref_chosen, ref_rejected))\n"
        "    if any(t.dim() != 1 or t.shape != c.shape for t in (c, r, rc, rr)) or len(c) == 0:\n"
        "        raise ValueError('four (B,) arrays')\n"
        "    if not beta > 0 or not 0 <= label_smoothing < 0.5:\n"
        "        raise ValueError('beta or label_smoothing')\n"
        "    m = (c - rc) - (r - rr)\n"
        "    if loss_type == 'sigmoid':\n"
        "        losses = -(1 - label_smoothing) * F.logsigmoid(beta * m) - label_smoothing * F.logsigmoid(-beta * m)\n"
        "    elif loss_type == 'hinge':\n"
        "        losses = torch.relu(1 - beta * m)\n"
        "    elif loss_type == 'ipo':\n"
        "        losses = (m - 1 / (2 * beta)) ** 2\n"
        "    else:\n"
        "        raise ValueError(f'unknown loss_type {loss_type!r}')\n"
        "    return float(losses.mean())\n",
        "torch",
    ),
    (
        "q7",
        "def lora_parameter_count",
        "import warnings\n"
        "import peft\n"
        "import torch\n"
        "from transformers import GPT2Config, GPT2LMHeadModel\n"
        "def lora_parameter_count(n_embd, n_layer, targets, r, n_inner=None):\n"
        "    if isinstance(targets, str) or not targets:\n"
        "        raise ValueError('targets must be a non-empty list')\n"
        "    names = ('attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj')\n"
        "    if any(not any(n == t or n.endswith('.' + t) for n in names) for t in targets):\n"
        "        raise ValueError('a target matches no layer')\n"
        "    config = GPT2Config(vocab_size=2, n_positions=2, n_embd=n_embd, n_layer=n_layer, n_head=1, n_inner=n_inner,\n"
        "                        bos_token_id=None, eos_token_id=None)\n"
        "    with warnings.catch_warnings():\n"
        "        warnings.simplefilter('ignore')\n"
        "        with torch.device('meta'):  # shapes only\n"
        "            model = peft.get_peft_model(GPT2LMHeadModel(config), peft.LoraConfig(r=r, target_modules=list(targets)))\n"
        "    return model.get_nb_trainable_parameters()[0]\n"
        "def merge_lora(weight, lora_A, lora_B, alpha, rslora=False):\n"
        "    W, A, B = (torch.tensor(np.asarray(a, dtype=float)) for a in (weight, lora_A, lora_B))\n"
        "    if W.dim() != 2 or A.dim() != 2 or B.dim() != 2 or A.shape[1] != W.shape[0] or tuple(B.shape) != (W.shape[1], A.shape[0]):\n"
        "        raise ValueError('weight (in, out), lora_A (r, in), lora_B (out, r)')\n"
        "    r = A.shape[0]\n"
        "    scaling = alpha / r ** 0.5 if rslora else alpha / r\n"
        "    return (W + peft.utils.transpose(B @ A, True) * scaling).numpy()\n",
        "peft",
    ),
]
