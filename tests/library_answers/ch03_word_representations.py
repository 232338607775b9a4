"""Library answers for ch03_word_representations: torch's one-hot, cosine and embedding autograd, the course's word and count vectors, and scikit-learn's counts, row normalization and idf, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def bag_of_words",
        "import torch\n"
        "def bag_of_words(ids, vocab_size):\n"
        "    ids = torch.as_tensor(np.asarray(ids, dtype=np.int64))\n"
        "    return torch.nn.functional.one_hot(ids, vocab_size).sum(0).to(torch.float32).numpy()\n",
        "torch",
    ),
    (
        "q2",
        "def top_k_cosine",
        "import torch\n"
        "def top_k_cosine(query, vectors, k):\n"
        "    vectors = torch.as_tensor(np.asarray(vectors, dtype=float))\n"
        "    query = torch.as_tensor(np.asarray(query, dtype=float))\n"
        "    scores = torch.nn.functional.cosine_similarity(vectors, query[None, :])\n"
        "    return torch.argsort(scores, descending=True)[:k].tolist()\n",
        "torch",
    ),
    (
        "q3",
        "def storage_bytes",
        "from course_utils.word_vectors import matrix_bytes, one_hot, one_hot_sparse\n"
        "def storage_bytes(N, V, D):\n"
        "    ids = np.zeros(N, dtype=np.int64)  # any ids: one 1 per row either way\n"
        "    return {\n"
        "        'dense': matrix_bytes(one_hot(ids, V)),\n"
        "        'csr': matrix_bytes(one_hot_sparse(ids, V)),\n"
        "        'embedding': matrix_bytes(np.zeros((V, D), dtype=np.float32)),\n"
        "        'ids': matrix_bytes(ids),\n"
        "    }\n",
        "course_utils",
    ),
    (
        "q4",
        "def embedding_grad",
        "import torch\n"
        "def embedding_grad(ids, grad_out, vocab_size):\n"
        "    grad_out = torch.as_tensor(np.asarray(grad_out, dtype=float))\n"
        "    embedding = torch.nn.Embedding(vocab_size, grad_out.shape[1]).double()\n"
        "    embedding(torch.as_tensor(np.asarray(ids, dtype=np.int64))).backward(grad_out)\n"
        "    return embedding.weight.grad.numpy()\n",
        "torch",
    ),
    (
        "q6",
        "def shift_threshold",
        "from course_utils.count_vectors import ppmi\n"
        "def shift_threshold(counts, w, c):\n"
        "    # PPMI = max(PMI, 0), so exp(PPMI) = max(exp(PMI), 1): the smallest k with PMI - log k <= 0\n"
        "    return float(np.exp(ppmi(np.asarray(counts, dtype=float))[w, c]))\n"
        "\n"
        "\n"
        "def zeroed_by_shift(counts, k):\n"
        "    counts = np.asarray(counts, dtype=float)\n"
        "    positive = ppmi(counts).toarray() > 0\n"
        "    return int((positive & (ppmi(counts, k=k).toarray() == 0)).sum())\n",
        "course_utils",
    ),
    (
        "q7",
        "def tfidf_augmented",
        "from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer\n"
        "from sklearn.preprocessing import normalize\n"
        "def tfidf_augmented(documents):\n"
        "    vectorizer = CountVectorizer(analyzer=lambda d: d)\n"
        "    counts = vectorizer.fit_transform(documents).astype(float)\n"
        "    augmented = normalize(counts, norm='max')  # tf / max tf per document, zeros stay out\n"
        "    augmented.data = 0.5 + 0.5 * augmented.data\n"
        "    matrix = TfidfTransformer().fit(counts).transform(augmented).toarray()\n"
        "    return matrix, [str(t) for t in vectorizer.get_feature_names_out()]\n",
        "sklearn",
    ),
]
