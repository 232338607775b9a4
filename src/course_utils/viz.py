"""Korean text in matplotlib figures, on a laptop, in CI and on Colab.

The NanumGothic font files come from the ``koreanize-matplotlib`` package
(installed, never downloaded). They are registered with matplotlib's font
manager at run time, so Colab needs no runtime restart.
"""

from __future__ import annotations

import importlib.util
import logging
import warnings
from pathlib import Path
from typing import Any

__all__ = ["KOREAN_FONT", "korean_font_files", "log_scale", "use_korean_font"]

KOREAN_FONT = "NanumGothic"
# matplotlib's message when a character has no glyph: "Glyph 54620 (\N{...})
# missing from font(s) DejaVu Sans."
_MISSING_GLYPH = r"(?s).*Glyph .* missing from"


def korean_font_files() -> list[Path]:
    """The NanumGothic ``.ttf`` files shipped in the ``koreanize-matplotlib`` package.

    The package is located without importing it: its ``__init__`` imports
    ``distutils``, which Python 3.12 removed.
    """
    spec = importlib.util.find_spec("koreanize_matplotlib")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the Korean font package is missing: pip install koreanize-matplotlib "
            "(or run `make book` to set up the course environment)"
        )
    fonts = sorted(Path(next(iter(spec.submodule_search_locations))).glob("fonts/*.ttf"))
    if not fonts:
        raise FileNotFoundError("koreanize-matplotlib is installed but ships no .ttf files")
    return fonts


def use_korean_font(strict: bool = True) -> str:
    """Make matplotlib draw Korean; return the font family name.

    With ``strict`` (the book's setting) a missing glyph raises an error instead
    of silently drawing empty boxes, so a broken figure fails the build.
    """
    from matplotlib import font_manager, rcParams

    for path in korean_font_files():
        font_manager.fontManager.addfont(str(path))
    rcParams["font.family"] = KOREAN_FONT
    rcParams["axes.unicode_minus"] = False  # NanumGothic has no U+2212 minus sign
    if strict:
        warnings.filterwarnings("error", message=_MISSING_GLYPH, category=UserWarning)
        mathtext_log = logging.getLogger("matplotlib.mathtext")
        if not any(isinstance(h, _MissingMathGlyph) for h in mathtext_log.handlers):
            mathtext_log.addHandler(_MissingMathGlyph())
    return KOREAN_FONT


class _MissingMathGlyph(logging.Handler):
    """Mathtext only logs a missing glyph (and draws a box); make it an error."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "does not have a glyph" in message:
            raise RuntimeError(
                f"matplotlib mathtext: {message} Use course_utils.viz.log_scale(ax) for "
                "log axes instead of ax.set_yscale('log')."
            )


def log_scale(ax: Any, axis: str = "y") -> None:
    """Log scale with plain tick labels (``1e-05``) instead of mathtext ``10^{-5}``.

    Mathtext draws ``\\mathdefault`` tick labels in the text font, and NanumGothic
    has no minus sign (U+2212), so negative exponents would show as boxes.
    """
    from matplotlib.ticker import LogFormatter

    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    getattr(ax, f"set_{axis}scale")("log")
    getattr(ax, f"{axis}axis").set_major_formatter(LogFormatter(labelOnlyBase=True))
