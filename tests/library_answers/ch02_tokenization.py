"""Library answers for ch02_tokenization: NLTK's wordpunct spans, the course's BPE and the Unigram model of Hugging Face tokenizers, which the rules forbid."""

LIBRARY = [
    (
        "q1",
        "def punct_tokenize_spans",
        "from nltk.tokenize import WordPunctTokenizer\n"
        "def punct_tokenize_spans(text):\n"
        "    spans = list(WordPunctTokenizer().span_tokenize(text))\n"
        "    ends = [0] + [end for _, end in spans]\n"
        "    return [(text[s:e], s, e, text[ends[i]:s]) for i, (s, e) in enumerate(spans)]\n",
        "nltk",
    ),
    (
        "q2",
        "def bpe_encode_word",
        "from course_utils.bpe import BPE\n"
        "def bpe_encode_word(word, merges):\n"
        "    return BPE([tuple(pair) for pair in merges]).encode_word(word)\n",
        "course_utils",
    ),
    (
        "q3",
        "def unigram_segment",
        "from tokenizers.models import Unigram\n"
        "def unigram_segment(word, log_probs):\n"
        "    # The unknown piece scores (lowest score - 10): with -1e9 it only wins where no known pieces split the word.\n"
        "    model = Unigram([('<unk>', -1e9), *log_probs.items()], unk_id=0)\n"
        "    tokens = model.tokenize(word)\n"
        "    if any(token.id == 0 for token in tokens):\n"
        "        raise ValueError(f'{word!r} cannot be split into known pieces')\n"
        "    return [token.value for token in tokens]\n",
        "tokenizers",
    ),
]


# Questions no library answers: nothing installed returns the marginal likelihood of a word
# under a unigram model (the sum over every segmentation); SentencePiece and tokenizers give
# the best segmentation, samples or n-best lists.
NO_LIBRARY_ANSWER = {"q5": "no library computes the sum over every segmentation"}
