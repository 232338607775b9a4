"""자연어 처리를 위한 딥러닝: the course book's helper package.

Modules mirror the book's chapters (see each module's docstring):

- ``device``   : device selection (cuda → mps → cpu) and seeding, used everywhere
- ``text``     : 2장 텍스트 전처리와 토큰화 — cleaning, tokenizers, Korean morphemes
- ``vocab``    : 2장 — vocabulary with special tokens, encode/decode
- ``bpe``      : 2장 — byte-pair encoding (BPE) trained from scratch
- ``datasets`` : corpora bundled with KoNLPy and gensim (no network)
- ``viz``      : Korean fonts for matplotlib
- ``doctor``   : ``python -m course_utils doctor`` environment report
- ``grading``  : ``python -m course_utils grade`` batch grading with otter-grader
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
