"""Algorithm 1 of Sennrich, Haddow and Birch (2016), as printed in the paper.

The reference that ``course_utils.bpe.train_bpe`` is tested against, and the
baseline of ``benchmarks/bpe.py``. Nobody here designed it: it recounts every
pair at every step and merges with a regular expression, exactly as published.
"""

from __future__ import annotations

import collections
import re

from course_utils.bpe import END_OF_WORD


def sennrich_algorithm_1(word_counts, num_merges, min_frequency=2):
    """The paper's reference code: recount every pair, merge with a regex.

    One change: ties go to the smallest pair (the paper's ``max`` takes the
    first in dict order), so the merge table is well defined.
    """

    def get_stats(vocab):
        pairs = collections.defaultdict(int)
        for word, freq in vocab.items():
            symbols = word.split()
            for i in range(len(symbols) - 1):
                pairs[symbols[i], symbols[i + 1]] += freq
        return pairs

    def merge_vocab(pair, v_in):
        v_out = {}
        bigram = re.escape(" ".join(pair))
        p = re.compile(r"(?<!\S)" + bigram + r"(?!\S)")
        for word in v_in:
            v_out[p.sub("".join(pair), word)] = v_in[word]
        return v_out

    vocab = {" ".join(word) + " " + END_OF_WORD: count for word, count in word_counts.items()}
    merges = []
    for _ in range(num_merges):
        pairs = get_stats(vocab)
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        if pairs[best] < min_frequency:
            break
        merges.append(best)
        vocab = merge_vocab(best, vocab)
    return merges, vocab
