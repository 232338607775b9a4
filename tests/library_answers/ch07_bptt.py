"""Library answers for ch07_bptt: torch autograd, ``torch.nn.utils``' clipping and an ``nn.RNN`` truncation experiment, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def bptt_step",
        "import torch\n"
        "def bptt_step(dh, h, h_prev, x, W_hh):\n"
        "    def tensor(v):\n"
        "        return torch.tensor(np.asarray(v, dtype=float))\n"
        "    x, W_hh, h_prev = tensor(x), tensor(W_hh).requires_grad_(True), tensor(h_prev).requires_grad_(True)\n"
        "    W_xh = torch.zeros(x.shape[1], W_hh.shape[0], dtype=torch.float64, requires_grad=True)\n"
        "    # a bias that makes tanh(A_t) the given H_t, so autograd sees the same step\n"
        "    b = (torch.atanh(tensor(h)) - x @ W_xh - h_prev @ W_hh).detach()\n"
        "    a = x @ W_xh + h_prev @ W_hh + b\n"
        "    a.retain_grad()\n"
        "    torch.tanh(a).backward(tensor(dh))\n"
        "    return a.grad.numpy(), W_xh.grad.numpy(), W_hh.grad.numpy(), h_prev.grad.numpy()\n",
        "torch",
    ),
    (
        "q2",
        "def leaky_rnn_backward",
        "import torch\n"
        "def leaky_rnn_backward(xs, h0, W_xh, W_hh, b, alpha, dhs):\n"
        "    def leaf(v):\n"
        "        return torch.tensor(np.asarray(v, dtype=float), requires_grad=True)\n"
        "    xs, dhs = torch.tensor(np.asarray(xs, dtype=float)), torch.tensor(np.asarray(dhs, dtype=float))\n"
        "    h0, W_xh, W_hh, b = leaf(h0), leaf(W_xh), leaf(W_hh), leaf(b)\n"
        "    h, loss = h0, 0.0\n"
        "    for t in range(len(xs)):\n"
        "        h = (1 - alpha) * h + alpha * torch.tanh(xs[t] @ W_xh + h @ W_hh + b)\n"
        "        loss = loss + (dhs[t] * h).sum()\n"
        "    grads = torch.autograd.grad(loss, [W_xh, W_hh, b, h0], allow_unused=True, materialize_grads=True)\n"
        "    return tuple(g.numpy() for g in grads)\n",
        "torch",
    ),
    (
        "q3",
        "def clip_by_global_norm",
        "import torch\n"
        "def _as_params(grads):\n"
        "    params = []\n"
        "    for g in grads:\n"
        "        p = torch.zeros(np.shape(g), dtype=torch.float64, requires_grad=True)\n"
        "        p.grad = torch.tensor(np.asarray(g, dtype=float))\n"
        "        params.append(p)\n"
        "    return params\n"
        "def clip_by_global_norm(grads, max_norm):\n"
        "    params = _as_params(grads)\n"
        "    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)\n"
        "    return [p.grad.numpy() for p in params], float(norm)\n"
        "def clip_by_value(grads, clip_value):\n"
        "    params = _as_params(grads)\n"
        "    torch.nn.utils.clip_grad_value_(params, clip_value)\n"
        "    return [p.grad.numpy() for p in params]\n",
        "torch",
    ),
    (
        "q4",
        "def tbptt_gradient_mask",
        "import torch\n"
        "def tbptt_gradient_mask(T, k1, k2):\n"
        "    if k1 < 1 or k2 < k1:\n"
        "        raise ValueError(f'need 1 <= k1 <= k2, got k1={k1}, k2={k2}')\n"
        "    # measure it: run an nn.RNN block by block, detaching before each graph, and ask autograd\n"
        "    with torch.random.fork_rng():\n"
        "        torch.manual_seed(0)\n"
        "        rnn = torch.nn.RNN(2, 4).double()\n"
        "        x = torch.randn(T, 1, 2, dtype=torch.float64)\n"
        "    mask = np.zeros((T, T), dtype=bool)\n"
        "    for block_start in range(0, T, k1):\n"
        "        block_end = min(block_start + k1, T)\n"
        "        graph_start = max(0, block_start - (k2 - k1))\n"
        "        with torch.no_grad():\n"
        "            state = rnn(x[:graph_start])[1] if graph_start > 0 else None\n"
        "        inputs = x.clone().requires_grad_(True)\n"
        "        out, _ = rnn(inputs[graph_start:block_end], state)\n"
        "        for t in range(block_start, block_end):\n"
        "            (grad,) = torch.autograd.grad(out[t - graph_start].sum(), inputs, retain_graph=True)\n"
        "            mask[t] = grad.abs().sum(dim=(1, 2)).numpy() > 0\n"
        "    return mask\n",
        "torch",
    ),
]
