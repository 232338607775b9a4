"""Shared fixtures. Paths are relative to the repository root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from course_tools import exercises

ROOT = Path(__file__).resolve().parents[1]
BUILD_HTML = ROOT / "_build" / "html"

# The sentinel strings that the exercise masters put only inside solutions and
# hidden tests: if one of them shows up in a student notebook or the site, a
# solution leaked.
SOLUTION_SENTINEL = "SOLUTION_ONLY_SENTINEL_7Q2X"
HIDDEN_SENTINEL = "HIDDEN_TEST_SENTINEL_7Q2X"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def built_site() -> Path:
    """The built book; `make test` builds it first (strictly) before running pytest."""
    if not (BUILD_HTML / "index.html").is_file():
        message = "the book is not built: run `make book` (or `make test`, which builds it first)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return BUILD_HTML


@pytest.fixture(scope="session")
def sandbox():
    """The grading sandbox; skipped without bubblewrap on a student's machine, fatal in CI."""
    from course_tools.sandbox import SandboxUnavailable, isolation

    try:
        return isolation()
    except SandboxUnavailable as error:
        if os.environ.get("CI"):
            pytest.fail(f"the grading sandbox cannot start: {error}")
        pytest.skip(f"the grading sandbox cannot start here: {error}")


@pytest.fixture(scope="session")
def assignments(tmp_path_factory):
    """``otter assign`` output per chapter: dist/ from `make test`, or built here."""
    built = {}
    for master in exercises.masters(ROOT):
        dist = ROOT / exercises.DIST_DIR / master.stem
        try:
            zip_path = exercises.autograder_zip(dist)
            built[master.stem] = exercises.Assignment(
                master.stem, dist / "student" / f"{master.stem}.ipynb",
                dist / "autograder" / f"{master.stem}.ipynb", zip_path,
            )  # fmt: skip
        except FileNotFoundError:
            # the solutions are graded in tests/test_grading.py: otter need not run them here
            built[master.stem] = exercises.assign(
                master, tmp_path_factory.mktemp(master.stem), run_tests=False
            )
    return built


@pytest.fixture(scope="module")
def one_torch_thread():
    """9장 and 10장's setting, ``torch.set_num_threads(1)``, for one test module, then restored."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
