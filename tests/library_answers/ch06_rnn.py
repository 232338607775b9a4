"""Library answers for ch06_rnn: torch's layers and ops composed into what no single call returns; the rules forbid torch."""

LIBRARY = [
    (
        "q1",
        "def jordan_step",
        # torch has no Jordan cell: two linear maps into the hidden layer and one out of it.
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def jordan_step(x, o_prev, W_xh, W_qh, b_h, W_hq, b_q):\n"
        "    t = lambda a: torch.from_numpy(np.asarray(a, dtype=float))\n"
        "    h = torch.tanh(F.linear(t(x), t(W_xh).T, t(b_h)) + F.linear(t(o_prev), t(W_qh).T))\n"
        "    return h.numpy(), F.linear(h, t(W_hq).T, t(b_q)).numpy()\n",
        "torch",
    ),
    (
        "q2",
        "def rnn_forward_with_resets",
        # torch.nn.RNN cannot reset mid-sequence: run it once per document, each from h0.
        "import torch\n"
        "def rnn_forward_with_resets(xs, h0, resets, W_xh, W_hh, b):\n"
        "    xs, h0, resets = np.asarray(xs, dtype=float), np.asarray(h0, dtype=float), np.asarray(resets, dtype=bool)\n"
        "    layer = torch.nn.RNN(W_xh.shape[0], W_xh.shape[1]).double()\n"
        "    T, B, H = xs.shape[0], xs.shape[1], W_xh.shape[1]\n"
        "    hs = np.zeros((T, B, H))\n"
        "    with torch.no_grad():\n"
        "        layer.weight_ih_l0.copy_(torch.from_numpy(W_xh.T))\n"
        "        layer.weight_hh_l0.copy_(torch.from_numpy(W_hh.T))\n"
        "        layer.bias_ih_l0.copy_(torch.from_numpy(np.asarray(b, dtype=float)))\n"
        "        layer.bias_hh_l0.zero_()\n"
        "        for row in range(B):\n"
        "            starts = sorted({0, *np.flatnonzero(resets[:, row]).tolist()}) + [T]\n"
        "            for start, end in zip(starts, starts[1:]):\n"
        "                out, _ = layer(torch.from_numpy(xs[start:end, row:row + 1]), torch.from_numpy(h0[None, row:row + 1]))\n"
        "                hs[start:end, row] = out[:, 0].numpy()\n"
        "    return hs, hs[-1]\n",
        "torch",
    ),
    (
        "q3",
        "def padded_birnn_forward",
        # pack_padded_sequence + nn.RNN(bidirectional=True) + pad_packed_sequence.
        "import torch\n"
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence\n"
        "def padded_birnn_forward(xs, lengths, h0, forward_params, backward_params):\n"
        "    I, H = forward_params[0].shape\n"
        "    layer = torch.nn.RNN(I, H, bidirectional=True).double()\n"
        "    xs = torch.from_numpy(np.asarray(xs, dtype=float))\n"
        "    with torch.no_grad():\n"
        "        for suffix, (W_xh, W_hh, b) in (('', forward_params), ('_reverse', backward_params)):\n"
        "            getattr(layer, 'weight_ih_l0' + suffix).copy_(torch.from_numpy(W_xh.T))\n"
        "            getattr(layer, 'weight_hh_l0' + suffix).copy_(torch.from_numpy(W_hh.T))\n"
        "            getattr(layer, 'bias_ih_l0' + suffix).copy_(torch.from_numpy(np.asarray(b, dtype=float)))\n"
        "            getattr(layer, 'bias_hh_l0' + suffix).zero_()\n"
        "        packed = pack_padded_sequence(xs, torch.as_tensor(np.asarray(lengths)), enforce_sorted=False)\n"
        "        out, h_n = layer(packed, torch.from_numpy(np.asarray(h0, dtype=float)))\n"
        "        out, _ = pad_packed_sequence(out, total_length=xs.shape[0])\n"
        "    return out.numpy(), h_n.numpy()\n",
        "torch",
    ),
    (
        "q4",
        "def top_p_thresholds",
        # TopPLogitsWarper only cuts at one top_p: sort and sum in torch instead.
        "import torch\n"
        "def top_p_thresholds(logits, temperature):\n"
        "    if not temperature > 0:\n"
        "        raise ValueError('temperature must be > 0')\n"
        "    probs = torch.softmax(torch.tensor(np.asarray(logits, dtype=float)) / temperature, dim=-1)\n"
        "    sorted_probs, order = probs.sort(descending=True)\n"
        "    before = sorted_probs.cumsum(0) - sorted_probs\n"
        "    return torch.empty_like(probs).scatter_(0, order, before).numpy()\n",
        "torch",
    ),
    (
        "q6",
        "def residual_rnn_forward",
        # One single-layer nn.RNN per layer, with the residual added between them.
        "import torch\n"
        "def residual_rnn_forward(xs, h0, layer_params):\n"
        "    below, finals = torch.from_numpy(np.asarray(xs, dtype=float)), []\n"
        "    with torch.no_grad():\n"
        "        for k, (W_xh, W_hh, b) in enumerate(layer_params):\n"
        "            layer = torch.nn.RNN(*W_xh.shape).double()\n"
        "            layer.weight_ih_l0.copy_(torch.from_numpy(W_xh.T))\n"
        "            layer.weight_hh_l0.copy_(torch.from_numpy(W_hh.T))\n"
        "            layer.bias_ih_l0.copy_(torch.from_numpy(np.asarray(b, dtype=float)))\n"
        "            layer.bias_hh_l0.zero_()\n"
        "            out, h_n = layer(below, torch.from_numpy(np.asarray(h0[k], dtype=float))[None])\n"
        "            below = out if k == 0 else out + below\n"
        "            finals.append(h_n[0])\n"
        "    return below.numpy(), torch.stack(finals).numpy()\n",
        "torch",
    ),
]
