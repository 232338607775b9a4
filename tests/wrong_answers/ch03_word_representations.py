"""Plausible wrong answers for ch03_word_representations: each must lose its question's points and nothing else."""

# q6's right threshold and exp(PMI) table, which both wrong counts below start from.
_SHIFT_RATIOS = (
    "def shift_threshold(counts, w, c):\n"
    "    counts = np.asarray(counts, dtype=float)\n"
    "    ratio = counts[w, c] * counts.sum() / (counts[w].sum() * counts[:, c].sum())\n"
    "    return float(max(ratio, 1.0))\n"
    "\n"
    "\n"
    "def zeroed_by_shift(counts, k):\n"
    "    counts = np.asarray(counts, dtype=float)\n"
    "    ratio = counts * counts.sum() / np.outer(counts.sum(axis=1), counts.sum(axis=0))\n"
)

WRONG = [
    (
        "q1",
        "def bag_of_words",
        # Marks which words occur (a set of words) instead of counting them: repeats count once.
        "def bag_of_words(ids, vocab_size):\n"
        "    vector = np.zeros(vocab_size, dtype=np.float32)\n"
        "    vector[list(set(ids))] = 1.0\n"
        "    return vector\n",
    ),
    (
        "q2",
        "def top_k_cosine",
        # Ranks by the dot product, forgetting to divide by the lengths.
        "def top_k_cosine(query, vectors, k):\n    return [int(i) for i in np.argsort(-(np.asarray(vectors) @ np.asarray(query)))[:k]]\n",
    ),
    (
        "q3",
        "def storage_bytes",
        # Takes the chapter's "CSR stores the values and where they are" literally and forgets indptr.
        "def storage_bytes(N, V, D):\n"
        '    return {"dense": 4 * N * V, "csr": 4 * N + 4 * N, "embedding": 4 * V * D, "ids": 8 * N}\n',
    ),
    (
        "q4",
        "def embedding_grad",
        # Fancy-index assignment: a word looked up twice keeps only its last gradient row.
        "def embedding_grad(ids, grad_out, vocab_size):\n"
        "    grad_out = np.asarray(grad_out, dtype=float)\n"
        "    grad = np.zeros((vocab_size, grad_out.shape[1]))\n"
        "    grad[np.asarray(ids)] += grad_out\n"
        "    return grad\n",
    ),
    (
        "q5",
        "q5_answer",
        # Gets the geometry right but forgets the dense float32 storage is V * 4 bytes.
        'q5_answer = {"a", "b"}\n',
    ),
    (
        "q6",
        "def shift_threshold",
        # Counts every nonzero-count cell that SPPMI_k leaves at 0, also those the clip at k = 1
        # had already zeroed (PMI <= 0): the shift did not remove them.
        _SHIFT_RATIOS + "    return int(np.sum((counts > 0) & (ratio <= k)))\n",
    ),
    (
        "q6",
        "def shift_threshold",
        # Counts the cells whose PMI is below log k, not at it: the question counts PMI = log k
        # as zeroed (SPPMI_k = max(0, 0) = 0). Found by a review of the tests (11-30), when no
        # test had a cell exactly at its threshold.
        _SHIFT_RATIOS + "    return int(np.sum((ratio > 1) & (ratio < k)))\n",
    ),
    (
        "q7",
        "def tfidf_augmented",
        # Divides by the largest count in the whole corpus, not in the document: a document whose
        # own counts are small gets tf' near 0.5 for every word.
        "def tfidf_augmented(documents):\n"
        "    terms = sorted({t for doc in documents for t in doc})\n"
        "    tf = np.array([[doc.count(t) for t in terms] for doc in documents], dtype=float)\n"
        "    idf = np.log((1 + len(documents)) / (1 + (tf > 0).sum(axis=0))) + 1\n"
        "    matrix = np.where(tf > 0, 0.5 + 0.5 * tf / tf.max(), 0.0) * idf\n"
        "    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True), terms\n",
    ),
    (
        "q8",
        "q8_answer",
        # PMI 0, so dot product 0: forgets the k noise samples shift the optimum.
        "q8_answer = 0.0\n",
    ),
]
