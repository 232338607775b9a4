"""Korean text in matplotlib figures, on a laptop, in CI and on Colab.

The NanumGothic font files come from the ``koreanize-matplotlib`` package
(installed, never downloaded). They are registered with matplotlib's font
manager at run time, so Colab needs no runtime restart. :func:`label_points`
writes words beside the points of a scatter plot without letting them overlap.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import warnings
from pathlib import Path
from typing import Any

__all__ = [
    "KOREAN_FONT",
    "korean_font_files",
    "label_points",
    "log_scale",
    "log_tick_label",
    "use_korean_font",
]

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


def log_tick_label(value: float) -> str:
    """A log axis's tick label: ``0.01``, ``0.1``, ``1``, ``10``, ``1000``, then ``1e4``, ``1e-4``.

    Powers of ten from 10⁻³ to 10³ are written out, the others as ``1e<exponent>``,
    one form for every tick (matplotlib's own formatter mixes ``1e4`` and ``1e+05``).
    """
    if value <= 0:
        return ""
    exponent = round(math.log10(value))
    if abs(exponent) <= 3 or not math.isclose(value, 10.0**exponent, rel_tol=1e-9):
        return f"{value:g}"  # written out, or not a power of ten: as Python writes it
    return f"1e{exponent}"


def log_scale(ax: Any, axis: str = "y") -> None:
    """Log scale with plain tick labels (``1e-5``) instead of mathtext ``10^{-5}``.

    Mathtext draws ``\\mathdefault`` tick labels in the text font, and NanumGothic
    has no minus sign (U+2212), so negative exponents would show as boxes.
    """
    from matplotlib.ticker import FuncFormatter

    if axis not in ("x", "y"):
        raise ValueError(f"axis must be 'x' or 'y', got {axis!r}")
    getattr(ax, f"set_{axis}scale")("log")
    getattr(ax, f"{axis}axis").set_major_formatter(
        FuncFormatter(lambda value, _position: log_tick_label(value))
    )


# Where a label may sit around its point, in points: near first, then farther out.
_LABEL_DIRECTIONS = [
    (1, 1, "left", "bottom"),
    (1, -1, "left", "top"),
    (-1, 1, "right", "bottom"),
    (-1, -1, "right", "top"),
    (0, 1, "center", "bottom"),
    (0, -1, "center", "top"),
    (1, 0, "left", "center"),
    (-1, 0, "right", "center"),
]
_LABEL_DISTANCES = (4, 12, 22)


def _overlap(a: Any, b: Any) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)


def label_points(ax: Any, points: Any, labels: list[str], **text_kwargs: Any) -> list[Any]:
    """Write ``labels[i]`` beside ``points[i]`` ``(N, 2)`` so that the labels do not overlap.

    Each label tries positions around its point, near ones first, and takes the
    first that covers no other label, no point and nothing outside the axes (or
    the least bad one). A label placed away from its point gets a thin leader
    line. Call it once the axes limits and the layout are final (after
    ``fig.tight_layout()``): the placement is measured on the drawn figure.
    Returns the annotations.
    """
    import numpy as np
    from matplotlib.transforms import Bbox

    xy = np.asarray(points, dtype=float)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"points must be (N, 2), got shape {xy.shape}")
    if isinstance(labels, str) or len(labels) != len(xy):
        raise ValueError(f"need one label per point: {len(xy)} points, got {labels!r}")
    figure = ax.figure
    renderer = figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    pixels = ax.transData.transform(xy)  # (N, 2) in display units
    marker = 4.0 * figure.dpi / 72  # half the side of the box kept free around a point
    dots = [Bbox.from_extents(x - marker, y - marker, x + marker, y + marker) for x, y in pixels]
    # The most crowded points choose first, while there is still room around them.
    crowding = np.sort(np.linalg.norm(pixels[:, None] - pixels[None], axis=-1), axis=1)[:, 1:4]
    order = np.argsort(crowding.sum(axis=1), kind="stable") if len(xy) > 1 else [0]
    placed: list[Any] = []
    annotations: dict[int, Any] = {}
    for i in order:
        best, best_cost = None, float("inf")
        for distance in _LABEL_DISTANCES:
            for dx, dy, ha, va in _LABEL_DIRECTIONS:
                offset = (dx * distance, dy * distance)
                probe = ax.annotate(
                    labels[i],
                    xy[i],
                    xytext=offset,
                    textcoords="offset points",
                    ha=ha,
                    va=va,
                    **text_kwargs,
                )
                box = probe.get_window_extent(renderer).expanded(1.05, 1.15)
                probe.remove()
                outside = box.width * box.height - _overlap(box, frame)
                cost = 100 * outside + sum(_overlap(box, other) for other in placed)
                cost += sum(_overlap(box, dot) for j, dot in enumerate(dots) if j != i)
                if cost < best_cost:
                    best, best_cost = (offset, ha, va, distance, box), cost
            if best_cost == 0:
                break
        offset, ha, va, distance, box = best  # type: ignore[misc]
        if distance > _LABEL_DISTANCES[0]:  # a leader line shows which point it names
            leader = {"arrowprops": {"arrowstyle": "-", "color": "0.6", "lw": 0.6}}
        else:
            leader = {}
        annotations[i] = ax.annotate(
            labels[i],
            xy[i],
            xytext=offset,
            textcoords="offset points",
            ha=ha,
            va=va,
            **leader,
            **text_kwargs,
        )
        placed.append(box)
    return [annotations[i] for i in range(len(xy))]
