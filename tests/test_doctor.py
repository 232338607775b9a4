import subprocess
import sys

from course_tools import doctor
from course_utils import text


def test_doctor_passes_on_a_complete_environment(capsys):
    assert doctor.run_doctor() == 0
    out = capsys.readouterr().out
    assert "java / KoNLPy" in out and "korean font" in out and "torch device" in out


def test_doctor_fails_and_names_the_fix_when_java_is_missing(monkeypatch, capsys):
    monkeypatch.setattr(text, "java_status", lambda: (False, "no `java` on PATH"))
    assert doctor.run_doctor(quick=True) == 1
    captured = capsys.readouterr()
    assert "apt-get install default-jdk" in captured.out
    assert "java / KoNLPy" in captured.err


def test_doctor_reports_a_missing_package(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "PACKAGES", ("no-such-course-package",))
    assert doctor.run_doctor(quick=True) == 1
    assert "run `make book`" in capsys.readouterr().out


def test_doctor_reports_the_grading_sandbox_and_its_fix(monkeypatch):
    from course_tools import sandbox

    checks = {c.name: c for c in doctor.run_checks(quick=True)}
    assert checks["grading sandbox"].ok and "bwrap" in checks["grading sandbox"].detail
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    check = {c.name: c for c in doctor.run_checks(quick=True)}["grading sandbox"]
    assert not check.ok and not check.required and "apt-get install bubblewrap" in check.fix


def test_doctor_reports_a_bad_device_setting(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "tpu")
    checks = {c.name: c for c in doctor.run_checks(quick=True)}
    assert not checks["torch device"].ok and "COURSE_DEVICE" in checks["torch device"].fix


def test_doctor_command_line():
    run = subprocess.run(
        [sys.executable, "-m", "course_utils", "doctor", "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "everything the course needs is here" in run.stdout


def test_doctor_subcommand_in_process(capsys):
    from course_tools.cli import main

    assert main(["doctor", "--quick"]) == 0
    assert "torch device" in capsys.readouterr().out
