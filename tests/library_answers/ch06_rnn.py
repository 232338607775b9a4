"""Library answers for ch06_rnn: torch's own RNN and transformers' top-p, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def rnn_step",
        "import torch\n"
        "def rnn_step(x, h, W_xh, W_hh, b):\n"
        "    cell = torch.nn.RNNCell(W_xh.shape[0], W_xh.shape[1]).double()\n"
        "    with torch.no_grad():\n"
        "        cell.weight_ih.copy_(torch.from_numpy(W_xh.T))\n"
        "        cell.weight_hh.copy_(torch.from_numpy(W_hh.T))\n"
        "        cell.bias_ih.copy_(torch.from_numpy(np.asarray(b, dtype=float)))\n"
        "        cell.bias_hh.zero_()\n"
        "        return cell(torch.from_numpy(x), torch.from_numpy(h)).numpy()\n",
        "torch",
    ),
    (
        "q2",
        "def rnn_forward",
        "import torch\n"
        "def rnn_forward(xs, h0, W_xh, W_hh, b):\n"
        "    layer = torch.nn.RNN(W_xh.shape[0], W_xh.shape[1]).double()\n"
        "    with torch.no_grad():\n"
        "        layer.weight_ih_l0.copy_(torch.from_numpy(W_xh.T))\n"
        "        layer.weight_hh_l0.copy_(torch.from_numpy(W_hh.T))\n"
        "        layer.bias_ih_l0.copy_(torch.from_numpy(np.asarray(b, dtype=float)))\n"
        "        layer.bias_hh_l0.zero_()\n"
        "        out, h_n = layer(torch.from_numpy(np.asarray(xs)), torch.from_numpy(h0)[None])\n"
        "    return out.numpy(), h_n[0].numpy()\n",
        "torch",
    ),
    (
        "q3",
        "def birnn_forward",
        "import torch\n"
        "def birnn_forward(xs, h0, forward_params, backward_params):\n"
        "    I, H = forward_params[0].shape\n"
        "    layer = torch.nn.RNN(I, H, bidirectional=True).double()\n"
        "    with torch.no_grad():\n"
        "        for suffix, (W_xh, W_hh, b) in (('', forward_params), ('_reverse', backward_params)):\n"
        "            getattr(layer, 'weight_ih_l0' + suffix).copy_(torch.from_numpy(W_xh.T))\n"
        "            getattr(layer, 'weight_hh_l0' + suffix).copy_(torch.from_numpy(W_hh.T))\n"
        "            getattr(layer, 'bias_ih_l0' + suffix).copy_(torch.from_numpy(np.asarray(b, dtype=float)))\n"
        "            getattr(layer, 'bias_hh_l0' + suffix).zero_()\n"
        "        out, h_n = layer(torch.from_numpy(np.asarray(xs)), torch.from_numpy(np.asarray(h0)))\n"
        "    return out.numpy(), h_n.numpy()\n",
        "torch",
    ),
    (
        "q4",
        "def top_p_probabilities",
        "import torch\n"
        "from transformers import TopPLogitsWarper\n"
        "def top_p_probabilities(logits, temperature, top_p):\n"
        "    if not temperature > 0:\n"
        "        raise ValueError('temperature must be > 0')\n"
        "    if not 0 < top_p <= 1:\n"
        "        raise ValueError('top_p must be in (0, 1]')\n"
        "    scores = torch.tensor(np.asarray(logits, dtype=float))[None] / temperature\n"
        "    if top_p < 1:\n"
        "        scores = TopPLogitsWarper(top_p)(None, scores)\n"
        "    return torch.softmax(scores, dim=-1)[0].numpy()\n",
        "transformers",
    ),
    (
        "q6",
        "def stacked_rnn_forward",
        "import torch\n"
        "def stacked_rnn_forward(xs, h0, layer_params):\n"
        "    I, H = layer_params[0][0].shape\n"
        "    layer = torch.nn.RNN(I, H, num_layers=len(layer_params)).double()\n"
        "    with torch.no_grad():\n"
        "        for k, (W_xh, W_hh, b) in enumerate(layer_params):\n"
        "            getattr(layer, f'weight_ih_l{k}').copy_(torch.from_numpy(W_xh.T))\n"
        "            getattr(layer, f'weight_hh_l{k}').copy_(torch.from_numpy(W_hh.T))\n"
        "            getattr(layer, f'bias_ih_l{k}').copy_(torch.from_numpy(np.asarray(b, dtype=float)))\n"
        "            getattr(layer, f'bias_hh_l{k}').zero_()\n"
        "        out, h_n = layer(torch.from_numpy(np.asarray(xs)), torch.from_numpy(np.asarray(h0)))\n"
        "    return out.numpy(), h_n.numpy()\n",
        "torch",
    ),
]
