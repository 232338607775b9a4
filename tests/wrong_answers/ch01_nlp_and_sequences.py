"""Plausible wrong answers for ch01_nlp_and_sequences: each must lose its question's points and nothing else."""

WRONG = [
    (
        "q1",
        "def count_orderings",
        # n!: forgets that swapping two copies of the same token gives the same ordering.
        "def count_orderings(tokens):\n    return math.factorial(len(tokens))\n",
    ),
    (
        "q2",
        "def align",
        # Lines the strings up position by position: a valid alignment, but not a cheapest one.
        "def align(a, b):\n    return list(itertools.zip_longest(a, b))\n",
    ),
    (
        "q2",
        "def align",
        # The distance without the alignment: one pair holding both whole strings, padded with
        # (None, '') pairs so that the count of unequal pairs is the distance (an attacker's
        # answer from a review of the tests, 11-30: it passed before pairs had to be one character).
        "def align(a, b):\n"
        "    d = nltk_free_distance(a, b)\n"
        "    return [(c, c) for c in a] if d == 0 else [(a, b)] + [(None, '')] * (d - 1)\n"
        "\n"
        "def nltk_free_distance(a, b):\n"
        "    previous = list(range(len(b) + 1))\n"
        "    for i, x in enumerate(a, 1):\n"
        "        current = [i]\n"
        "        for j, y in enumerate(b, 1):\n"
        "            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))\n"
        "        previous = current\n"
        "    return previous[-1]\n",
    ),
    (
        "q3",
        "def fraction_less_likely",
        # Counts "at most as likely" instead of "less likely": the original ordering counts itself.
        "def fraction_less_likely(tokens, cond_log_prob):\n"
        "    def log_prob(sequence):\n"
        "        return sum(cond_log_prob(tuple(sequence[:t]), sequence[t]) for t in range(len(sequence)))\n"
        "\n"
        "    original = log_prob(tuple(tokens))\n"
        "    orderings = set(itertools.permutations(tokens))\n"
        "    return sum(log_prob(order) <= original for order in orderings) / len(orderings)\n",
    ),
    (
        "q4",
        "q4_answer",
        # Right about the identity and the Markov approximation, but thinks only the left-to-right order is exact.
        'q4_answer = {"b", "d"}\n',
    ),
    (
        "q5",
        "def jamo_edit_distance",
        # Plain Levenshtein: any two different syllables cost a whole substitution.
        "def jamo_edit_distance(a, b):\n    if not isinstance(a, str) or not isinstance(b, str):\n        raise TypeError('strings')\n    previous = [float(j) for j in range(len(b) + 1)]\n    for i, x in enumerate(a, 1):\n        current = [float(i)]\n        for j, y in enumerate(b, 1):\n            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))\n        previous = current\n    return previous[-1]\n",
    ),
    (
        "q6",
        "q6_answer",
        # Counts the contexts only, not (context, next token) pairs.
        "q6_answer = (1000**4, 1000**1)\n",
    ),
]
