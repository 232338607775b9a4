"""Library answers for ch04_word2vec: NLTK's skipgrams, torch's autograd and Adagrad, and gensim's 3CosMul and n-grams, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def skipgram_pairs",
        "from nltk.util import skipgrams\n"
        "def skipgram_pairs(ids, window):\n"
        "    forward = list(skipgrams(range(len(ids)), 2, window - 1))  # (i, j), 1 <= j - i <= window\n"
        "    return [(ids[i], ids[j]) for i, j in sorted(forward + [(j, i) for i, j in forward])]\n",
        "nltk",
    ),
    (
        "q2",
        "def cbow_loss_and_grad",
        "import torch\n"
        "from torch.nn.functional import logsigmoid\n"
        "def cbow_loss_and_grad(v_context, u_o, u_neg):\n"
        "    v_context = torch.tensor(np.asarray(v_context, dtype=float), requires_grad=True)\n"
        "    u_o, u_neg = (torch.as_tensor(np.asarray(a, dtype=float)) for a in (u_o, u_neg))\n"
        "    h = v_context.mean(dim=0)\n"
        "    loss = -logsigmoid(u_o @ h) - logsigmoid(-(u_neg @ h)).sum()\n"
        "    loss.backward()\n"
        "    return loss.item(), v_context.grad.numpy()\n",
        "torch",
    ),
    (
        "q3",
        "def softmax_grads",
        "import torch\n"
        "def softmax_grads(v_c, U, o):\n"
        "    v_c = torch.tensor(np.asarray(v_c, dtype=float), requires_grad=True)\n"
        "    U = torch.tensor(np.asarray(U, dtype=float), requires_grad=True)\n"
        "    torch.nn.functional.cross_entropy((U @ v_c)[None, :], torch.tensor([int(o)])).backward()\n"
        "    return v_c.grad.numpy(), U.grad.numpy()\n",
        "torch",
    ),
    (
        "q4",
        "def analogy_ranks",
        "from gensim.models import KeyedVectors\n"
        "def analogy_ranks(a, b, c, gold, words, vectors):\n"
        "    if gold in (a, b, c):\n"
        "        raise ValueError(gold)\n"
        "    vectors = np.asarray(vectors, dtype=float)\n"
        "    keyed = KeyedVectors(vectors.shape[1], dtype=np.float64)\n"
        "    keyed.add_vectors(list(words), vectors)\n"
        "    result = {}\n"
        "    for name, method in (('3CosAdd', keyed.most_similar), ('3CosMul', keyed.most_similar_cosmul)):\n"
        "        ranked = [w for w, _ in method(positive=[b, c], negative=[a], topn=len(words))]\n"
        "        result[name] = (ranked[0], ranked.index(gold) + 1)\n"
        "    return result\n",
        "gensim",
    ),
    (
        "q6",
        "def fasttext_sgns_grads",
        "import torch\n"
        "from gensim.models.fasttext_inner import compute_ngrams_bytes\n"
        "from torch.nn.functional import logsigmoid\n"
        "def fasttext_sgns_grads(word, own, table, u_o, u_neg, row_of, min_n=3, max_n=6):\n"
        "    rows = [int(row_of(g.decode('utf-8'))) for g in compute_ngrams_bytes(word, min_n, max_n)]\n"
        "    own = torch.tensor(np.asarray(own, dtype=float), requires_grad=True)\n"
        "    table = torch.tensor(np.asarray(table, dtype=float), requires_grad=True)\n"
        "    u_o, u_neg = (torch.as_tensor(np.asarray(a, dtype=float)) for a in (u_o, u_neg))\n"
        "    h = (own + table[rows].sum(dim=0)) / (len(rows) + 1)\n"
        "    loss = -logsigmoid(u_o @ h) - logsigmoid(-(u_neg @ h)).sum()\n"
        "    loss.backward()\n"
        "    return loss.item(), own.grad.numpy(), table.grad.numpy()\n",
        "torch",
    ),
    (
        "q7",
        "def glove_adagrad_pass",
        "import torch\n"
        "def glove_adagrad_pass(W, W_context, b, b_context, rows, cols, counts, lr=0.05, x_max=100.0, alpha=0.75):\n"
        "    params = [torch.tensor(np.asarray(a, dtype=float), requires_grad=True) for a in (W, W_context, b, b_context)]\n"
        "    tW, tWc, tb, tbc = params\n"
        "    optimizer = torch.optim.Adagrad(params, lr=lr, initial_accumulator_value=1.0, eps=1e-10)\n"
        "    for i, j, x in zip(np.asarray(rows).tolist(), np.asarray(cols).tolist(), np.asarray(counts, dtype=float).tolist()):\n"
        "        optimizer.zero_grad()\n"
        "        weight = (x / x_max) ** alpha if x < x_max else 1.0\n"
        "        loss = weight * (tW[i] @ tWc[j] + tb[i] + tbc[j] - np.log(x)) ** 2\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "    return tuple(p.detach().numpy() for p in params)\n",
        "torch",
    ),
]
