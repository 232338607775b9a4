"""Plausible wrong answers for ch07_bptt: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def bptt_step",
        # Sends the gradient back through W_hh instead of its transpose (the shapes still fit: W_hh is square).
        "def bptt_step(dh, h, h_prev, x, W_hh):\n"
        "    da = dh * (1 - h**2)\n"
        "    return da, x.T @ da, h_prev.T @ da, da @ W_hh\n",
    ),
    (
        "q2",
        "def leaky_rnn_backward",
        # Copies the chapter's tanh derivative 1 - H_t² onto the leaky state H_t instead of using tanh(A_t).
        "def leaky_rnn_backward(xs, h0, W_xh, W_hh, b, alpha, dhs):\n"
        "    hs = [h0]\n"
        "    for x in xs:\n"
        "        hs.append((1 - alpha) * hs[-1] + alpha * np.tanh(x @ W_xh + hs[-1] @ W_hh + b))\n"
        "    dW_xh, dW_hh, db = np.zeros_like(W_xh), np.zeros_like(W_hh), np.zeros_like(b)\n"
        "    from_future = np.zeros_like(h0)\n"
        "    for t in range(len(xs) - 1, -1, -1):\n"
        "        dh = dhs[t] + from_future\n"
        "        da = dh * alpha * (1 - hs[t + 1] ** 2)\n"
        "        dW_xh += xs[t].T @ da\n"
        "        dW_hh += hs[t].T @ da\n"
        "        db += da.sum(axis=0)\n"
        "        from_future = (1 - alpha) * dh + da @ W_hh.T\n"
        "    return dW_xh, dW_hh, db, from_future\n",
    ),
    (
        "q3",
        "def clip_by_global_norm",
        # Clips every array by its own norm instead of the joint norm.
        "def clip_by_global_norm(grads, max_norm):\n"
        "    norms = [float(np.linalg.norm(g)) for g in grads]\n"
        "    clipped = [g * min(1.0, max_norm / (n + 1e-6)) for g, n in zip(grads, norms)]\n"
        "    return clipped, float(np.sqrt(sum(n**2 for n in norms)))\n"
        "\n"
        "\n"
        "def clip_by_value(grads, clip_value):\n"
        "    return [np.clip(g, -clip_value, clip_value) for g in grads]\n",
    ),
    (
        "q3",
        "def clip_by_global_norm",
        # Right norm clipping, but clipping by value forgets the lower bound -c (the public example has no value below -1).
        "def clip_by_global_norm(grads, max_norm):\n"
        "    norm = float(np.sqrt(sum(float(np.sum(np.square(g))) for g in grads)))\n"
        "    scale = min(1.0, max_norm / (norm + 1e-6))\n"
        "    return [np.asarray(g) * scale for g in grads], norm\n"
        "\n"
        "\n"
        "def clip_by_value(grads, clip_value):\n"
        "    return [np.minimum(g, clip_value) for g in grads]\n",
    ),
    (
        "q4",
        "def tbptt_gradient_mask",
        # A sliding window: every loss reaches back k2 steps from its own step, instead of the whole block
        # reaching back to the same start.
        "def tbptt_gradient_mask(T, k1, k2):\n"
        "    if k1 < 1 or k2 < k1:\n"
        "        raise ValueError('need 1 <= k1 <= k2')\n"
        "    t, s = np.indices((T, T))\n"
        "    return (s <= t) & (s > t - k2)\n",
    ),
    (
        "q5",
        "q5_answer",
        # Reads the index 10 as the distance: ten steps back instead of twenty.
        "q5_answer = 0.9 ** 10\n",
    ),
    (
        "q6",
        "q6_answer",
        # Off by one step: 49 multiplications instead of 50.
        "q6_answer = 1000 ** (1 / 49)\n",
    ),
]
