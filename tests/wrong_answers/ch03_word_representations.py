"""Plausible wrong answers for ch03_word_representations: each must lose its question's points and nothing else."""

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
        # "Orthogonal, so the distance is 0": confuses the dot product with the distance.
        'q5_answer = "a"\n',
    ),
]
