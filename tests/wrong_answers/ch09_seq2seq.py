"""Plausible wrong answers for ch09_seq2seq: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def corpus_brevity_penalty",
        # Breaks a tie between two equally close references toward the longer one.
        "def corpus_brevity_penalty(hypotheses, references):\n"
        "    if len(hypotheses) != len(references) or len(hypotheses) == 0:\n"
        "        raise ValueError('lengths')\n"
        "    c = r = 0\n"
        "    for hypothesis, refs in zip(hypotheses, references):\n"
        "        if len(refs) == 0:\n"
        "            raise ValueError('no reference')\n"
        "        c += len(hypothesis)\n"
        "        r += min((len(ref) for ref in refs), key=lambda n: (abs(n - len(hypothesis)), -n))\n"
        "    if c >= r:\n"
        "        return c, r, 1.0\n"
        "    return c, r, math.exp(1 - r / c) if c > 0 else 0.0\n",
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
        "def sentence_chrf",
        # Averages the per-order F scores instead of taking one F of the averaged precision and recall.
        "def sentence_chrf(hypothesis, reference):\n"
        "    if not isinstance(hypothesis, str) or not isinstance(reference, str):\n"
        "        raise TypeError('strings')\n"
        "    hyp, ref = ''.join(hypothesis.split()), ''.join(reference.split())\n"
        "    scores = []\n"
        "    for n in range(1, 7):\n"
        "        h = Counter(hyp[i : i + n] for i in range(len(hyp) - n + 1))\n"
        "        r = Counter(ref[i : i + n] for i in range(len(ref) - n + 1))\n"
        "        if h and r:\n"
        "            m = sum((h & r).values())\n"
        "            p, c = m / sum(h.values()), m / sum(r.values())\n"
        "            scores.append(5 * p * c / (4 * p + c) if p + c else 0.0)\n"
        "    return 100 * sum(scores) / len(scores) if scores else 0.0\n",
    ),
]
