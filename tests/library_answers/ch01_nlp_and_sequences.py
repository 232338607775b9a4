"""Library answers for ch01_nlp_and_sequences: SciPy's factorials, NLTK's alignment and the course's chain rule, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def count_orderings",
        "from scipy.special import factorial\n"
        "def count_orderings(tokens):\n"
        "    result = int(factorial(len(tokens), exact=True))\n"
        "    for count in Counter(tokens).values():\n"
        "        result //= int(factorial(count, exact=True))\n"
        "    return result\n",
        "scipy",
    ),
    (
        "q2",
        "def align",
        "import nltk\n"
        "def align(a, b):\n"
        "    path = nltk.edit_distance_align(a, b)  # [(0, 0), ..., (len(a), len(b))]\n"
        "    pairs = []\n"
        "    for (i0, j0), (i, j) in zip(path, path[1:]):\n"
        "        pairs.append((a[i - 1] if i > i0 else None, b[j - 1] if j > j0 else None))\n"
        "    return pairs\n",
        "nltk",
    ),
    (
        "q3",
        "def fraction_less_likely",
        "from course_utils.natural_language import chain_rule_log_prob\n"
        "def fraction_less_likely(tokens, cond_log_prob):\n"
        "    original = chain_rule_log_prob(tuple(tokens), cond_log_prob)\n"
        "    orderings = set(itertools.permutations(tokens))\n"
        "    lower = sum(chain_rule_log_prob(order, cond_log_prob) < original - 1e-9 for order in orderings)\n"
        "    return lower / len(orderings)\n",
        "course_utils",
    ),
    (
        "q5",
        "def jamo_edit_distance",
        "import networkx as nx\n"
        "def jamo_edit_distance(a, b):\n"
        "    if not isinstance(a, str) or not isinstance(b, str):\n"
        "        raise TypeError('strings')\n"
        "    def cost(x, y):\n"
        "        if x == y:\n"
        "            return 0.0\n"
        "        sx, sy = ord(x) - 0xAC00, ord(y) - 0xAC00\n"
        "        if not (0 <= sx < 11172 and 0 <= sy < 11172):\n"
        "            return 1.0\n"
        "        jx = (sx // 588, sx % 588 // 28, sx % 28)\n"
        "        jy = (sy // 588, sy % 588 // 28, sy % 28)\n"
        "        return sum(p != q for p, q in zip(jx, jy)) / 3\n"
        "    graph = nx.grid_2d_graph(len(a) + 1, len(b) + 1, create_using=nx.DiGraph)\n"
        "    for i in range(len(a)):\n"
        "        for j in range(len(b)):\n"
        "            graph.add_edge((i, j), (i + 1, j + 1), weight=cost(a[i], b[j]))\n"
        "    graph.remove_edges_from([(u, v) for u, v in graph.edges if v < u])\n"
        "    return float(nx.dijkstra_path_length(graph, (0, 0), (len(a), len(b)), weight=lambda u, v, d: d.get('weight', 1.0)))\n",
        "networkx",
    ),
]
