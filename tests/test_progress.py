from course_utils.progress import progress, progress_enabled


def test_progress_is_silent_when_tqdm_is_disabled(monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert not progress_enabled()
    assert list(progress(range(3), "quiet")) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_progress_shows_a_bar_otherwise(monkeypatch, capsys):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert progress_enabled()
    assert list(progress(range(3), "loud")) == [0, 1, 2]
    assert "loud" in capsys.readouterr().err


def test_false_like_values_keep_bars_on(monkeypatch):
    for value in ("0", "false", "No", ""):
        monkeypatch.setenv("TQDM_DISABLE", value)
        assert progress_enabled()
