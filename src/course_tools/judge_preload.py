"""What every grading judge starts with: the forkserver imports this module once, and each
judge is a fork of it (:func:`course_tools.grading._judge_context`).

It imports :data:`course_tools.grading.JUDGE_PRELOAD` with :func:`course_tools.grading.preload`,
which leaves out a library that fails to import (multiprocessing would skip only an
``ImportError``, and any other error would stop the forkserver and with it every judge).
Then :func:`gc.freeze` moves everything imported out of the garbage collector's sight, so
that a collection in a judge does not copy the shared pages into the judge's memory, which
counts against the submission's cap. Importing it anywhere else does the same there.
"""

from __future__ import annotations

import gc

from course_tools.grading import JUDGE_PRELOAD, preload

#: Each preloaded module that failed, with its error.
FAILED: dict[str, str] = preload(JUDGE_PRELOAD)

gc.freeze()
