"""Progress bars for long loops: visible in notebooks and terminals, silent in the book build.

``tqdm.auto`` draws a widget in Jupyter, but its notebook bar ignores
``TQDM_DISABLE``; a widget in a built page would make the page load
require.js and the widget manager from a CDN. The book build sets
``TQDM_DISABLE=1`` (see the Makefile), and :func:`progress` honours it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["progress", "progress_enabled"]

T = TypeVar("T")


def progress_enabled() -> bool:
    """False when ``TQDM_DISABLE`` is set to anything but ``0``/``false``/empty."""
    value = os.environ.get("TQDM_DISABLE", "").strip().lower()
    return value in ("", "0", "false", "no")


def progress(
    iterable: Iterable[T], desc: str | None = None, total: int | None = None
) -> Iterator[T]:
    """Wrap ``iterable`` in a tqdm bar unless progress bars are disabled."""
    if not progress_enabled():
        return iter(iterable)
    from tqdm.auto import tqdm

    return iter(tqdm(iterable, desc=desc, total=total, leave=False))
