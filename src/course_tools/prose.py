"""Prose that cannot contradict its cells: the book's convention, in code.

A number in a chapter's sentence that a cell computed is never typed: the cell
glues it and the sentence inserts it when the book is built::

    glue_values(rnn_ppl=rnn_ppl, kn4_ppl=kn["4-그램"])   # in the cell
    ... 퍼플렉서티는 {glue:text}`rnn_ppl:.2f`입니다 ...     # in the prose

A sentence about an outcome ("A beats B", "the loss falls") is checked where
the numbers are, with its tolerance, so that the build fails the day the
output stops saying it::

    claim(rnn_ppl < kn4_ppl, "RNN이 4-그램보다 낫다")

The cells that only glue and check carry the tag ``remove-cell`` (or
``hide-cell`` to fold them): readers see the prose and the outputs, not the
bookkeeping. ``tests/test_prose.py`` checks that every glued name a sentence
uses is glued in its chapter and that no decimal, percentage or ratio is typed
into the prose without a citation.
"""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["ClaimError", "ClaimWarning", "claim", "glue_values"]


class ClaimError(AssertionError):
    """A sentence of the book no longer agrees with the output it describes."""


class ClaimWarning(UserWarning):
    """A sentence written for the default run does not hold in a larger run."""


def _plain(value: Any) -> Any:
    # NumPy and torch scalars print as "np.float64(…)", which glue:text cannot format.
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "ndim", 0) == 0:
        value = item()
    if isinstance(value, bool) or not isinstance(value, (numbers.Number, str)):
        raise TypeError(
            f"glue a number or a str (what the sentence shows), got {type(value).__name__}"
        )
    return value


#: ``myst_nb.ext.glue.GLUE_PREFIX``: the prefix of a hidden glued value's MIME types.
GLUE_PREFIX = "application/papermill.record/"


def _glue(name: str, value: Any) -> None:
    # What ``myst_nb.glue(name, value, display=False)`` publishes, written here because
    # importing ``myst_nb.ext.glue`` imports nbformat and with it jsonschema's format
    # checkers, whose rfc3987 grammar alone takes 3 s to build in every chapter's kernel.
    # tests/test_prose.py checks that both publish the same display data.
    from IPython.core.formatters import format_display_data
    from IPython.display import display

    bundle, metadata = format_display_data(value)
    metadata["scrapbook"] = {"name": name, "mime_prefix": GLUE_PREFIX}
    display({GLUE_PREFIX + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)


def glue_values(**values: Any) -> None:
    """Glue each value under its name for ``{glue:text}`name:format``` in the prose."""
    for name, value in values.items():
        _glue(name, _plain(value))


def claim(condition: object, statement: str) -> None:
    """Fail the build with ``statement`` unless ``condition`` holds.

    The prose describes the default run (``COURSE_RUN=small``), the one the
    published book is built with. In a larger run (``COURSE_RUN=large``, or a
    machine with a GPU) the outcomes may differ: a claim that no longer holds
    is then a :class:`ClaimWarning` that says so, not an error that stops the
    notebook.
    """
    import warnings

    import numpy as np

    from course_utils.device import run_size

    if not isinstance(condition, (bool, np.bool_)):
        raise TypeError(f"claim needs a bool condition, got {type(condition).__name__}")
    if condition:
        return
    size = run_size()
    if size == "small":
        raise ClaimError(f"the text says {statement!r}, but the output does not")
    warnings.warn(
        f"이 문장은 기본 실행(COURSE_RUN=small)의 출력을 두고 쓴 것이라, 이 실행({size})에서는 "
        f"성립하지 않습니다: {statement!r}",
        ClaimWarning,
        stacklevel=2,
    )
