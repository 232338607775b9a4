"""Library answers for ch09_seq2seq: sacrebleu's BLEU, chrF and n-gram counter, torch's ``cross_entropy(ignore_index=...)``, stable sort and tensor ops, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def effective_reference_lengths",
        "import sacrebleu\n"
        "def effective_reference_lengths(hypotheses, references):\n"
        "    if len(hypotheses) != len(references) or len(hypotheses) == 0:\n"
        "        raise ValueError('need one non-empty reference set per hypothesis, and at least one hypothesis')\n"
        "    if any(len(refs) == 0 for refs in references):\n"
        "        raise ValueError('every sentence needs at least one reference')\n"
        "    # sentence_bleu's ref_len is the closest reference length of one sentence\n"
        "    ref_lengths = [\n"
        "        sacrebleu.sentence_bleu(' '.join(h), [' '.join(ref) for ref in refs], tokenize='none').ref_len\n"
        "        for h, refs in zip(hypotheses, references)\n"
        "    ]\n"
        "    # corpus_bleu takes reference streams; a sentence with fewer references has None in the rest\n"
        "    most = max(len(refs) for refs in references)\n"
        "    streams = [[' '.join(refs[j]) if j < len(refs) else None for refs in references] for j in range(most)]\n"
        "    bleu = sacrebleu.corpus_bleu([' '.join(h) for h in hypotheses], streams, tokenize='none', force=True)\n"
        "    return ref_lengths, bleu.bp\n",
        "sacrebleu",
    ),
    (
        "q2",
        "def teacher_forcing_inputs",
        "import torch\n"
        "import torch.nn.functional as F\n"
        "def teacher_forcing_inputs(targets):\n"
        "    targets = torch.as_tensor(np.asarray(targets))\n"
        "    if targets.dim() != 2:\n"
        "        raise ValueError(f'targets must be (B, T), got {tuple(targets.shape)}')\n"
        "    start = torch.full((targets.shape[0], 1), SOS, dtype=targets.dtype)\n"
        "    return torch.cat([start, targets[:, :-1]], dim=1).masked_fill(targets == PAD, PAD).numpy()\n"
        "def masked_cross_entropy(logits, targets, reduction='mean'):\n"
        "    logits = torch.as_tensor(np.asarray(logits, dtype=float))\n"
        "    targets = torch.as_tensor(np.asarray(targets)).long()\n"
        "    if logits.dim() != 3 or targets.dim() != 2 or tuple(logits.shape[:2]) != tuple(targets.shape):\n"
        "        raise ValueError(f'logits must be (B, T, V) and targets (B, T), got {tuple(logits.shape)} and {tuple(targets.shape)}')\n"
        "    if reduction not in ('mean', 'sum', 'none'):\n"
        "        raise ValueError(f\"reduction must be 'mean', 'sum' or 'none', got {reduction!r}\")\n"
        "    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=PAD, reduction=reduction)\n"
        "    if reduction == 'none':\n"
        "        return loss.reshape(targets.shape).numpy()\n"
        "    return float(loss)\n",
        "torch",
    ),
    (
        "q3",
        "def beam_search_step",
        "import torch\n"
        "def beam_search_step(scores, log_probs, finished, beam_size):\n"
        "    scores = torch.as_tensor(np.asarray(scores, dtype=float))\n"
        "    log_probs = torch.as_tensor(np.asarray(log_probs, dtype=float))\n"
        "    finished = torch.as_tensor(np.asarray(finished, dtype=bool))\n"
        "    if log_probs.dim() != 2 or tuple(scores.shape) != (log_probs.shape[0],) or finished.shape != scores.shape:\n"
        "        raise ValueError(f'scores (K,), log_probs (K, V), finished (K,) expected, got {tuple(scores.shape)}, {tuple(log_probs.shape)}, {tuple(finished.shape)}')\n"
        "    if isinstance(beam_size, bool) or int(beam_size) != beam_size or beam_size < 1:\n"
        "        raise ValueError(f'beam_size must be an int >= 1, got {beam_size!r}')\n"
        "    K, V = log_probs.shape\n"
        "    # a finished beam's only continuation is <pad>, at no cost\n"
        "    stay = torch.full((V,), -torch.inf, dtype=torch.float64)\n"
        "    stay[PAD] = 0.0\n"
        "    candidates = scores[:, None] + torch.where(finished[:, None], stay, log_probs)  # (K, V)\n"
        "    allowed = (~finished[:, None] | (torch.arange(V) == PAD)).flatten()  # (K·V,)\n"
        "    index = torch.arange(K * V)[allowed]\n"
        "    # a stable sort keeps ties in (parent, token) order\n"
        "    totals, order = torch.sort(candidates.flatten()[allowed], descending=True, stable=True)\n"
        "    totals, best = totals[: int(beam_size)], index[order[: int(beam_size)]]\n"
        "    parents, tokens = best // V, best % V\n"
        "    return parents.numpy(), tokens.numpy(), totals.numpy(), (finished[parents] | (tokens == EOS)).numpy()\n",
        "torch",
    ),
    (
        "q4",
        "def choose_hypothesis",
        "import torch\n"
        "def choose_hypothesis(log_prob_sums, lengths, alpha):\n"
        "    sums = torch.as_tensor(np.asarray(log_prob_sums, dtype=float))\n"
        "    lengths = torch.as_tensor(np.asarray(lengths, dtype=float))\n"
        "    if sums.dim() != 1 or sums.shape != lengths.shape or len(sums) == 0:\n"
        "        raise ValueError('log_prob_sums and lengths must be non-empty 1-D lists of the same length')\n"
        "    if bool((lengths < 1).any()) or not torch.equal(lengths, lengths.round()):\n"
        "        raise ValueError(f'lengths must be positive integers, got {lengths.tolist()}')\n"
        "    if bool((sums > 0).any()):\n"
        "        raise ValueError(f'log-probability sums must be <= 0, got {sums.tolist()}')\n"
        "    if alpha < 0:\n"
        "        raise ValueError(f'alpha must be >= 0, got {alpha}')\n"
        "    normalized = sums / ((5 + lengths) / 6) ** alpha\n"
        "    return int(torch.argmax(normalized)), normalized.numpy()  # argmax returns the first maximum\n",
        "torch",
    ),
    (
        "q6",
        "def chrf_table",
        "import sacrebleu\n"
        "from sacrebleu.metrics.helpers import extract_all_char_ngrams\n"
        "def chrf_table(hypothesis, reference, beta=2.0):\n"
        "    if not isinstance(hypothesis, str) or not isinstance(reference, str):\n"
        "        raise TypeError('hypothesis and reference must be str')\n"
        "    # sacrebleu's own n-gram counter (whitespace removed), then its score with the same beta\n"
        "    precisions, recalls = np.full(6, np.nan), np.full(6, np.nan)\n"
        "    pairs = zip(extract_all_char_ngrams(hypothesis, 6), extract_all_char_ngrams(reference, 6))\n"
        "    for n, (h, r) in enumerate(pairs):\n"
        "        if h and r:\n"
        "            m = sum((h & r).values())\n"
        "            precisions[n], recalls[n] = m / sum(h.values()), m / sum(r.values())\n"
        "    score = sacrebleu.CHRF(beta=beta).sentence_score(hypothesis, [reference]).score\n"
        "    return precisions, recalls, score\n",
        "sacrebleu",
    ),
]
