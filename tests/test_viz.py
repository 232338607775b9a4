import io
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

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
    assert "1e-04" in labels and not any("\u2212" in label for label in labels)
    with pytest.raises(ValueError, match="axis must be"):
        viz.log_scale(ax, axis="z")
    plt.close(fig)
