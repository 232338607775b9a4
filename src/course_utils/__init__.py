"""자연어 처리를 위한 딥러닝: the course book's helper package.

Modules mirror the book's chapters (see each module's docstring):

- ``device``   : device selection (cuda → mps → cpu), seeding and the COURSE_RUN size knob
- ``progress`` : progress bars that stay quiet in the book build
- ``gradcheck``: finite-difference gradient checks
- ``natural_language``: 1장 자연어와 시퀀스 데이터 — bag of words, edit distance, Zipf, chain rule
- ``text``     : 2장 텍스트 전처리와 토큰화 — cleaning, tokenizers, Korean morphemes
- ``vocab``    : 2장 — vocabulary with special tokens, encode/decode
- ``bpe``      : 2장 — byte-pair encoding (BPE) trained from scratch
- ``word_vectors``: 3장 단어 표현 — one-hot vectors, cosine similarity, embedding lookup, PCA
- ``count_vectors``: 3장 — TF-IDF, co-occurrence counts, PPMI and truncated SVD (LSA)
- ``word2vec`` : 4장 Word2Vec — skip-gram and CBOW with negative sampling in NumPy
- ``subword_vectors``: 4장 — fastText's character n-grams and GloVe's objective
- ``autoregressive``: 5장 시퀀스 모델 — the autoregressive model AR(τ)
- ``ngram``    : 5장 — n-gram language models with Kneser–Ney smoothing
- ``sequences``: 5–8장 — windows and batches of sequence data
- ``rnn``      : 6장 순환 신경망 — the recurrent layer from scratch and a language model on top
- ``bptt``     : 7장 BPTT — backpropagation through time by hand, vanishing and exploding gradients
- ``lstm``     : 8장 LSTM과 GRU — gated cells from scratch, equal to torch's
- ``seq2seq``  : 9장 Seq2seq — encoder-decoder, teacher forcing, greedy/beam/sampling decoding
- ``bleu``     : 9장 — BLEU from scratch, equal to sacrebleu's
- ``translation_data``: 9–10장 — a generated English→Korean corpus with gold alignments
- ``translation_lexicon``: 9–10장 — its lexicon, Hangul syllables and verb conjugation
- ``gettext_corpus``: 9–10장 — English→Korean pairs from the Debian packages' Korean translations
- ``attention``: 10장 어텐션 — Bahdanau's and Luong's attention, masking, alignments
- ``self_attentive``: 10장 — Lin et al.'s structured self-attentive sentence embedding
- ``transformer``: 11장 트랜스포머 — scaled dot-product and multi-head attention, layers, KV cache
- ``wordpiece``: 12장 BERT — the basic tokenizer, WordPiece, and training a WordPiece vocabulary
- ``bert``     : 12장 — the BERT encoder and its heads, loading real weights, MLM and NSP inputs
- ``datasets`` : corpora bundled with KoNLPy and gensim (no network)
- ``viz``      : Korean fonts for matplotlib
- ``train``    : the shared training loop (gradient clipping, history, NaN guard) for 6장 onwards
- ``runs``     : the result cache and the worker processes of the chapters that train (9장 onwards)
- ``checks``   : argument checks shared by the modules
- ``experiments``: each chapter's stated experiments (``experiments/chNN_*.py``), apart from
  the code it teaches

The course's machinery (exercise build, grading, the doctor, the command line
behind ``python -m course_utils``) lives in the sibling package ``course_tools``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
