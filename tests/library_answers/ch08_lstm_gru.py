"""Library answers for ch08_lstm_gru: torch's ``LSTMCell``, ``GRUCell``, ``nn.LSTM`` and autograd, and SciPy's weighted geometric mean, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def peephole_lstm_step",
        "import torch\n"
        "def peephole_lstm_step(x, h, c, W_ih, W_hh, b_ih, b_hh, p_i, p_f, p_o):\n"
        "    def tensor(v):\n"
        "        return torch.tensor(np.asarray(v, dtype=float))\n"
        "    x, h, c = tensor(x), tensor(h), tensor(c)\n"
        "    I, H = x.shape[-1], h.shape[-1]\n"
        "    zero = torch.zeros(H, H, dtype=torch.float64)\n"
        "    # the peepholes as extra input columns of an nn.LSTMCell: C_(t-1) into i and f, C_t into o\n"
        "    peep_old = torch.cat([torch.diag(tensor(p_i)), torch.diag(tensor(p_f)), zero, zero])\n"
        "    peep_new = torch.cat([zero, zero, zero, torch.diag(tensor(p_o))])\n"
        "    cell = torch.nn.LSTMCell(I + 2 * H, H).double()\n"
        "    with torch.no_grad():\n"
        "        cell.weight_ih.copy_(torch.cat([tensor(W_ih), peep_old, peep_new], dim=1))\n"
        "        cell.weight_hh.copy_(tensor(W_hh))\n"
        "        cell.bias_ih.copy_(tensor(b_ih))\n"
        "        cell.bias_hh.copy_(tensor(b_hh))\n"
        "        _, c_new = cell(torch.cat([x, c, torch.zeros_like(c)], dim=1), (h, c))\n"
        "        h_new, c_new = cell(torch.cat([x, c, c_new], dim=1), (h, c))\n"
        "    return h_new.numpy(), c_new.numpy()\n",
        "torch",
    ),
    (
        "q2",
        "def gru_step_original",
        "import torch\n"
        "def gru_step_original(x, h, W_ih, W_hh, b_ih, b_hh):\n"
        "    def tensor(v):\n"
        "        return torch.tensor(np.asarray(v, dtype=float))\n"
        "    x, h, W_ih, W_hh, b_ih, b_hh = (tensor(v) for v in (x, h, W_ih, W_hh, b_ih, b_hh))\n"
        "    I, H = x.shape[-1], h.shape[-1]\n"
        "    r = torch.sigmoid(x @ W_ih[:H].T + b_ih[:H] + h @ W_hh[:H].T + b_hh[:H])\n"
        "    # an nn.GRUCell that reads R ⊙ H_(t-1) as extra input through W_hn, with b_hn outside the reset gate\n"
        "    cell = torch.nn.GRUCell(I + H, H).double()\n"
        "    with torch.no_grad():\n"
        "        extra = torch.zeros(3 * H, H, dtype=torch.float64)\n"
        "        extra[2 * H :] = W_hh[2 * H :]\n"
        "        cell.weight_ih.copy_(torch.cat([W_ih, extra], dim=1))\n"
        "        cell.bias_ih.copy_(torch.cat([b_ih[: 2 * H], b_ih[2 * H :] + b_hh[2 * H :]]))\n"
        "        weight_hh, bias_hh = W_hh.clone(), b_hh.clone()\n"
        "        weight_hh[2 * H :], bias_hh[2 * H :] = 0, 0\n"
        "        cell.weight_hh.copy_(weight_hh)\n"
        "        cell.bias_hh.copy_(bias_hh)\n"
        "        return cell(torch.cat([x, r * h], dim=1), h).numpy()\n",
        "torch",
    ),
    (
        "q3",
        "def lstm_parameter_count",
        "import torch\n"
        "def lstm_parameter_count(input_size, hidden_size, num_layers, bidirectional, proj_size):\n"
        "    layer = torch.nn.LSTM(input_size, hidden_size, num_layers=num_layers, bidirectional=bidirectional, proj_size=proj_size)\n"
        "    return sum(p.numel() for p in layer.parameters())\n",
        "torch",
    ),
    (
        "q4",
        "def cell_path_gradients",
        "import torch\n"
        "def cell_path_gradients(xs, c0, W_ih, b_ih, b_hh):\n"
        "    xs = torch.tensor(np.asarray(xs, dtype=float))\n"
        "    T, B, I = xs.shape\n"
        "    H = np.shape(c0)[-1]\n"
        "    layer = torch.nn.LSTM(I, H).double()\n"
        "    with torch.no_grad():\n"
        "        layer.weight_ih_l0.copy_(torch.tensor(np.asarray(W_ih, dtype=float)))\n"
        "        layer.weight_hh_l0.zero_()\n"
        "        layer.bias_ih_l0.copy_(torch.tensor(np.asarray(b_ih, dtype=float)))\n"
        "        layer.bias_hh_l0.copy_(torch.tensor(np.asarray(b_hh, dtype=float)))\n"
        "    c = torch.tensor(np.asarray(c0, dtype=float))[None].requires_grad_(True)\n"
        "    _, (h_T, c_T) = layer(xs, (torch.zeros(1, B, H, dtype=torch.float64), c))\n"
        "    # the Jacobians are diagonal, so the gradient of the sum is the diagonal\n"
        "    (dc,) = torch.autograd.grad(c_T.sum(), c, retain_graph=True)\n"
        "    (dh,) = torch.autograd.grad(h_T.sum(), c)\n"
        "    return dc[0].numpy(), dh[0].numpy()\n",
        "torch",
    ),
    (
        "q6",
        "def combine_perplexities",
        "from scipy.stats import gmean\n"
        "def combine_perplexities(perplexities, counts):\n"
        "    if len(perplexities) != len(counts) or len(counts) == 0:\n"
        "        raise ValueError('perplexities and counts must be non-empty lists of the same length')\n"
        "    if any(int(n) != n or n < 1 for n in counts):\n"
        "        raise ValueError(f'counts must be positive integers, got {list(counts)}')\n"
        "    if any(p < 1 for p in perplexities):\n"
        "        raise ValueError(f'perplexities must be >= 1, got {list(perplexities)}')\n"
        "    # the whole text's perplexity is the count-weighted geometric mean of the pieces'\n"
        "    ppl = float(gmean(np.asarray(perplexities, dtype=float), weights=np.asarray(counts, dtype=float)))\n"
        "    return ppl, float(np.log2(ppl))\n",
        "scipy",
    ),
]
