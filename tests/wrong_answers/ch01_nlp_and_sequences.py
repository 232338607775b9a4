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
]
