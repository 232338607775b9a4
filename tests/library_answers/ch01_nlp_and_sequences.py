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
]
