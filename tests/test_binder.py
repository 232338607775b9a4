"""Binder: the files a BinderHub (repo2docker) builds the course from, in ``binder/``.

There is no Docker here, so repo2docker cannot run. What is checked instead is each step
it would take, on this machine:

- ``apt.txt`` names the packages the course's own checks ask for (Java, the Korean font,
  the gettext catalogues' packages and Ubuntu's language packs, from
  ``course_utils.gettext_corpus``), and each one but Ubuntu's language packs is a real
  package (installed here, or known to apt);
- ``requirements.txt`` is the course's requirements with torch from PyTorch's CPU index,
  and this environment satisfies it; ``runtime.txt`` names this Python;
- ``postBuild`` runs in a fresh virtual environment holding only the requirements (this
  environment's, so that nothing is downloaded): it installs the course's own packages
  from a copy of the repository, non-editable as on Binder, and the course kernel; there
  an exercise notebook's set-up cell and a check run, and a chapter's helpers import,
  from the installed package and not from the repository.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import ROOT
from packaging.requirements import Requirement

BINDER = ROOT / "binder"


def _lines(path: Path) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


def test_apt_txt_has_what_the_course_checks_for():
    from course_utils.gettext_corpus import GETTEXT_PACKAGES, UBUNTU_LANGUAGE_PACKS

    packages = _lines(BINDER / "apt.txt")
    assert len(packages) == len(set(packages))
    always_there = {"coreutils", "grep", "sed", "tar", "bash", "libc-l10n"}  # Ubuntu: langpacks
    wanted = {"default-jre-headless", "fonts-nanum", *UBUNTU_LANGUAGE_PACKS}
    wanted |= set(GETTEXT_PACKAGES) - always_there
    assert set(packages) == wanted
    if shutil.which("dpkg-query") is None or shutil.which("apt-cache") is None:
        pytest.skip("not a Debian machine: cannot look the packages up")
    for package in sorted(set(packages) - set(UBUNTU_LANGUAGE_PACKS)):  # those are Ubuntu's
        status = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
        ).stdout
        policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True)
        candidate = re.search(r"Candidate: (\S+)", policy.stdout)
        known = status == "install ok installed" or (candidate and candidate[1] != "(none)")
        assert known, f"{package}: neither installed here nor known to apt"


def test_requirements_are_the_courses_with_torch_for_the_cpu_and_this_environment_meets_them():
    lines = _lines(BINDER / "requirements.txt")
    assert lines == [
        "--extra-index-url https://download.pytorch.org/whl/cpu",
        "torch==2.13.0+cpu",
        "-r ../requirements.txt",
    ]
    torch = Requirement("torch==2.13.0+cpu")
    assert torch.specifier.contains(version("torch"))
    for line in _lines(ROOT / "requirements.txt"):  # the root file is what -r reads
        requirement = Requirement(line)
        assert requirement.specifier.contains(version(requirement.name), prereleases=True), line
    assert _lines(BINDER / "runtime.txt") == [f"python-{sys.version_info[0]}.{sys.version_info[1]}"]


def test_post_build_installs_the_course_into_a_fresh_environment(tmp_path):
    import json

    # A copy of the repository as Binder clones it (the files git keeps; none it ignores).
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    repo = tmp_path / "repo"
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    # A fresh environment that sees this one's requirements (a path line in a .pth file,
    # which adds the folder but runs none of its own .pth files: the course's editable
    # install here stays invisible), as if pip had installed binder/requirements.txt.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "requirements.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PIP_NO_INDEX": "1",  # nothing is downloaded
        "PIP_NO_BUILD_ISOLATION": "0",  # setuptools from the requirements, not from PyPI
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    run = subprocess.run(
        ["bash", str(repo / "binder" / "postBuild")],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Successfully installed course-utils" in run.stdout, run.stdout[-3000:]
    assert "Java / KoNLPy" in run.stdout  # the doctor's report is in the build log
    kernel = json.loads((venv / "share/jupyter/kernels/python3/kernel.json").read_text())
    assert kernel["display_name"] == "Python 3 (NLP 강의)"
    assert Path(kernel["argv"][0]).parent == venv / "bin"

    # In a folder of its own, as JupyterLab runs an exercise: the set-up cell, then a check.
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(repo / "notebooks" / "ch01_nlp_and_sequences.ipynb", work)
    script = (
        "import course_tools, course_utils\n"
        "from course_utils.viz import use_korean_font\n"
        "from course_tools.student import Grader\n"
        "use_korean_font()\n"
        "grader = Grader('ch01_nlp_and_sequences')\n"
        "def count_orderings(tokens): ...\n"
        "print(course_utils.__file__)\n"
        "print(course_tools.__file__)\n"
        "print(repr(grader.check('q1')))\n"
    )
    check = subprocess.run(
        [python, "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert check.returncode == 0, check.stderr[-3000:]
    lines = check.stdout.splitlines()
    installed = str(Path(site).resolve())
    assert lines[0].startswith(installed) and lines[1].startswith(installed), lines[:2]
    assert "아직 채우지 않은 답: count_orderings" in check.stdout
