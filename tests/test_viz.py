import io
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.text import Text

from course_utils import viz


@pytest.fixture(autouse=True)
def _restore_matplotlib():
    with warnings.catch_warnings(), matplotlib.rc_context():
        yield
    plt.close("all")


def test_korean_renders_without_missing_glyph_warnings():
    viz.use_korean_font()
    fig, ax = plt.subplots()
    ax.set_title("한국어 제목과 음수 -1")
    ax.set_xlabel("형태소 빈도 순위")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig.savefig(io.BytesIO(), format="png")


def test_strict_mode_turns_a_missing_glyph_into_an_error():
    viz.use_korean_font(strict=True)
    fig, ax = plt.subplots()
    ax.set_title("emoji 😀")
    with pytest.raises(UserWarning, match="missing from font"):
        fig.savefig(io.BytesIO(), format="png")


def test_font_files_ship_in_a_package():
    files = viz.korean_font_files()
    assert any(f.name == "NanumGothic.ttf" for f in files)


def test_missing_font_package_names_the_fix(monkeypatch):
    monkeypatch.setattr(viz.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install koreanize-matplotlib"):
        viz.korean_font_files()


def test_log_axis_with_negative_exponents_needs_log_scale_and_strict_mode_catches_it():
    viz.use_korean_font(strict=True)
    fig, ax = plt.subplots()
    ax.plot([1e-6, 1.0, 1e3])
    ax.set_yscale("log")  # mathtext tick labels: 10^{-6} in a font without U+2212
    with pytest.raises(RuntimeError, match="log_scale"):
        fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([1e-6, 1.0, 1e3])
    viz.log_scale(ax)
    fig.savefig(io.BytesIO(), format="png")
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "1e-4" in labels and not any("\u2212" in label for label in labels)
    with pytest.raises(ValueError, match="axis must be"):
        viz.log_scale(ax, axis="z")
    plt.close(fig)


def test_log_tick_labels_write_small_powers_out_and_the_rest_in_one_e_form():
    labels = [viz.log_tick_label(10.0**k) for k in range(-6, 7)]
    assert labels == [
        "1e-6", "1e-5", "1e-4", "0.001", "0.01", "0.1", "1", "10", "100", "1000", "1e4", "1e5", "1e6",
    ]  # fmt: skip
    assert viz.log_tick_label(3e-7) == "3e-07"  # not a power of ten: as Python writes it
    assert viz.log_tick_label(0.0) == ""


def test_label_points_keeps_crowded_labels_apart_and_inside_the_axes():
    viz.use_korean_font(strict=True)
    rng = np.random.default_rng(0)
    points = np.r_[rng.normal(size=(6, 2)) * 0.2, rng.normal(size=(6, 2))]  # a tight cluster
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.scatter(points[:, 0], points[:, 1])
    ax.margins(0.15)
    fig.tight_layout()
    annotations = viz.label_points(ax, points, [f"word{i} (단어)" for i in range(12)])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(a, renderer) for a in annotations]  # the text, no leader
    frame = ax.get_window_extent(renderer)
    assert [a.get_text() for a in annotations] == [f"word{i} (단어)" for i in range(12)]
    assert [tuple(a.xy) for a in annotations] == [tuple(p) for p in points]
    overlapping = [(i, j) for i in range(12) for j in range(i) if boxes[i].overlaps(boxes[j])]
    assert overlapping == []
    assert all(frame.contains(b.x0, b.y0) and frame.contains(b.x1, b.y1) for b in boxes)


def test_label_points_needs_one_label_per_point():
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"points must be \(N, 2\)"):
        viz.label_points(ax, np.zeros((3, 3)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="one label per point: 3 points"):
        viz.label_points(ax, np.zeros((3, 2)), ["a", "b"])
