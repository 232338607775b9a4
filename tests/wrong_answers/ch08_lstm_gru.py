"""Plausible wrong answers for ch08_lstm_gru: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def peephole_lstm_step",
        # Lets the output gate peek at the old cell C_(t-1), like the other two gates, instead of the new C_t.
        "def peephole_lstm_step(x, h, c, W_ih, W_hh, b_ih, b_hh, p_i, p_f, p_o):\n"
        "    a_i, a_f, a_g, a_o = np.split(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh, 4, axis=-1)\n"
        "    i, f, o = sigmoid(a_i + p_i * c), sigmoid(a_f + p_f * c), sigmoid(a_o + p_o * c)\n"
        "    c_new = f * c + i * np.tanh(a_g)\n"
        "    return o * np.tanh(c_new), c_new\n",
    ),
    (
        "q2",
        "def gru_step_original",
        # Copies the chapter's (PyTorch) GRU: the reset gate multiplies H W_hn + b_hn after the product.
        "def gru_step_original(x, h, W_ih, W_hh, b_ih, b_hh):\n"
        "    x_r, x_z, x_n = np.split(x @ W_ih.T + b_ih, 3, axis=-1)\n"
        "    h_r, h_z, h_n = np.split(h @ W_hh.T + b_hh, 3, axis=-1)\n"
        "    r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)\n"
        "    n = np.tanh(x_n + r * h_n)\n"
        "    return (1 - z) * n + z * h\n",
    ),
    (
        "q3",
        "def lstm_parameter_count",
        # Counts the projection in each layer but feeds the next layer D·H inputs instead of D·P.
        "def lstm_parameter_count(input_size, hidden_size, num_layers, bidirectional, proj_size):\n"
        "    if proj_size < 0 or proj_size >= hidden_size:\n"
        "        raise ValueError('bad proj_size')\n"
        "    directions = 2 if bidirectional else 1\n"
        "    state_size = proj_size or hidden_size\n"
        "    total = 0\n"
        "    for layer in range(num_layers):\n"
        "        layer_input = input_size if layer == 0 else directions * hidden_size\n"
        "        total += directions * (4 * hidden_size * (layer_input + state_size + 2) + proj_size * hidden_size)\n"
        "    return total\n",
    ),
    (
        "q4",
        "def cell_path_gradients",
        # Right dc, but dh forgets the derivative of tanh: O_T ⊙ dc instead of O_T ⊙ (1 - tanh²(C_T)) ⊙ dc.
        "def cell_path_gradients(xs, c0, W_ih, b_ih, b_hh):\n"
        "    a_i, a_f, a_g, a_o = np.split(xs @ W_ih.T + b_ih + b_hh, 4, axis=-1)\n"
        "    dc = np.prod(sigmoid(a_f), axis=0)\n"
        "    return dc, sigmoid(a_o[-1]) * dc\n",
    ),
    (
        "q5",
        "q5_answer",
        # Misses that closing the output gate leaves the cell state alone.
        'q5_answer = {"a"}\n',
    ),
    (
        "q6",
        "def combine_perplexities",
        # Weights the chunks by their length but averages the perplexities, not their logarithms.
        "def combine_perplexities(perplexities, counts):\n"
        "    if len(perplexities) != len(counts) or len(counts) == 0:\n"
        "        raise ValueError('lengths')\n"
        "    if any(int(n) != n or n < 1 for n in counts) or any(p < 1 for p in perplexities):\n"
        "        raise ValueError('values')\n"
        "    ppl = sum(n * p for p, n in zip(perplexities, counts)) / sum(counts)\n"
        "    return float(ppl), float(np.log2(ppl))\n",
    ),
]
