"""Plausible wrong answers for ch09_seq2seq: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def effective_reference_lengths",
        # Breaks a tie between two equally close references toward the longer one.
        "def effective_reference_lengths(hypotheses, references):\n"
        "    if len(hypotheses) != len(references) or len(hypotheses) == 0:\n"
        "        raise ValueError('lengths')\n"
        "    ref_lengths = []\n"
        "    for hypothesis, refs in zip(hypotheses, references):\n"
        "        if len(refs) == 0:\n"
        "            raise ValueError('no reference')\n"
        "        ref_lengths.append(min((len(ref) for ref in refs), key=lambda n: (abs(n - len(hypothesis)), -n)))\n"
        "    c, r = sum(len(h) for h in hypotheses), sum(ref_lengths)\n"
        "    if c >= r:\n"
        "        return ref_lengths, 1.0\n"
        "    return ref_lengths, math.exp(1 - r / c) if c > 0 else 0.0\n",
    ),
    (
        "q2",
        "def teacher_forcing_inputs",
        # Right inputs, but the mean divides the masked sum by B·T, counting the padding positions.
        "def teacher_forcing_inputs(targets):\n"
        "    targets = np.asarray(targets)\n"
        "    if targets.ndim != 2:\n"
        "        raise ValueError('targets must be (B, T)')\n"
        "    inputs = np.concatenate([np.full((len(targets), 1), SOS), targets[:, :-1]], axis=1)\n"
        "    return np.where(targets == PAD, PAD, inputs)\n"
        "\n"
        "\n"
        "def masked_cross_entropy(logits, targets, reduction='mean'):\n"
        "    logits, targets = np.asarray(logits, dtype=float), np.asarray(targets)\n"
        "    if logits.ndim != 3 or targets.ndim != 2 or logits.shape[:2] != targets.shape:\n"
        "        raise ValueError('shapes')\n"
        "    if reduction not in ('mean', 'sum', 'none'):\n"
        "        raise ValueError('reduction')\n"
        "    shifted = logits - logits.max(axis=-1, keepdims=True)\n"
        "    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))\n"
        "    nll = -np.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]\n"
        "    nll = np.where(targets != PAD, nll, 0.0)\n"
        "    if reduction == 'none':\n"
        "        return nll\n"
        "    return float(nll.sum()) if reduction == 'sum' else float(nll.mean())\n",
    ),
    (
        "q3",
        "def beam_search_step",
        # Forgets the finished mask: a finished beam is extended with every token like the others.
        "def beam_search_step(scores, log_probs, finished, beam_size):\n"
        "    scores, log_probs = np.asarray(scores, dtype=float), np.asarray(log_probs, dtype=float)\n"
        "    finished = np.asarray(finished, dtype=bool)\n"
        "    if log_probs.ndim != 2 or scores.shape != (len(log_probs),) or finished.shape != scores.shape:\n"
        "        raise ValueError('shapes')\n"
        "    if beam_size < 1:\n"
        "        raise ValueError('beam_size')\n"
        "    K, V = log_probs.shape\n"
        "    totals = (scores[:, None] + log_probs).ravel()\n"
        "    order = np.argsort(-totals, kind='stable')[:beam_size]\n"
        "    parents, tokens = order // V, order % V\n"
        "    return parents, tokens, totals[order], finished[parents] | (tokens == EOS)\n",
    ),
    (
        "q4",
        "def choose_hypothesis",
        # Copies the chapter's penalty, length ** alpha, instead of GNMT's ((5 + length) / 6) ** alpha.
        "def choose_hypothesis(log_prob_sums, lengths, alpha):\n"
        "    sums, lengths = np.asarray(log_prob_sums, dtype=float), np.asarray(lengths)\n"
        "    if sums.ndim != 1 or sums.shape != lengths.shape or len(sums) == 0:\n"
        "        raise ValueError('lengths')\n"
        "    if np.any(lengths < 1) or np.any(lengths != np.round(lengths)) or np.any(sums > 0) or alpha < 0:\n"
        "        raise ValueError('values')\n"
        "    normalized = sums / lengths**alpha\n"
        "    return int(np.argmax(normalized)), normalized\n",
    ),
    (
        "q5",
        "q5_answer",
        # Names the mismatch but not the teacher-forcing ratio that narrows it.
        'q5_answer = {"c"}\n',
    ),
    (
        "q6",
        "def chrf_table",
        # Keeps every order: an order with no n-grams gets precision and recall 0 (not nan), and P, R average over all 6.
        "def chrf_table(hypothesis, reference, beta=2.0):\n"
        "    if not isinstance(hypothesis, str) or not isinstance(reference, str):\n"
        "        raise TypeError('strings')\n"
        "    hyp, ref = ''.join(hypothesis.split()), ''.join(reference.split())\n"
        "    precisions, recalls = np.zeros(6), np.zeros(6)\n"
        "    for n in range(1, 7):\n"
        "        h = Counter(hyp[i : i + n] for i in range(len(hyp) - n + 1))\n"
        "        r = Counter(ref[i : i + n] for i in range(len(ref) - n + 1))\n"
        "        m = sum((h & r).values())\n"
        "        precisions[n - 1] = m / sum(h.values()) if h else 0.0\n"
        "        recalls[n - 1] = m / sum(r.values()) if r else 0.0\n"
        "    p, r = precisions.mean(), recalls.mean()\n"
        "    score = 100 * (1 + beta**2) * p * r / (beta**2 * p + r) if p + r else 0.0\n"
        "    return precisions, recalls, score\n",
    ),
]
