import subprocess
import sys

from course_tools import doctor
from course_utils import text


def test_doctor_passes_on_a_complete_environment(capsys):
    assert doctor.run_doctor() == 0
    out = capsys.readouterr().out
    assert "Java / KoNLPy" in out and "한국어 글꼴" in out and "torch 장치" in out
    assert "Jupyter 강의 커널" in out and "gettext 카탈로그" in out
    assert "강의에 필요한 것이 모두 있습니다" in out


def test_doctor_speaks_english_with_a_flag(capsys):
    assert doctor.run_doctor(quick=True, english=True) == 0
    out = capsys.readouterr().out
    assert "korean font" in out and "torch device" in out and "Jupyter course kernel" in out
    assert "everything the course needs is here" in out
    assert not any("\uac00" <= c <= "\ud7a3" for line in out.splitlines()
                   for c in line.split("  ")[0])  # fmt: skip


def test_doctor_fails_and_names_the_fix_when_java_is_missing(monkeypatch, capsys):
    monkeypatch.setattr(text, "java_status", lambda: (False, "no `java` on PATH"))
    assert doctor.run_doctor(quick=True) == 1
    captured = capsys.readouterr()
    assert "apt-get install default-jdk" in captured.out and "고치는 법" in captured.out
    assert "Java / KoNLPy" in captured.err and "문제 1개" in captured.err


def test_doctor_reports_a_missing_package(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "PACKAGES", ("no-such-course-package",))
    assert doctor.run_doctor(quick=True) == 1
    assert "`make install`" in capsys.readouterr().out


def test_doctor_names_the_fix_for_jupyterlab_the_catalogues_and_chromium(monkeypatch):
    from course_utils import gettext_corpus

    monkeypatch.setattr(doctor, "PACKAGES", ("jupyterlab",))
    monkeypatch.setattr(doctor.importlib.metadata, "version", _not_installed)
    monkeypatch.setattr(gettext_corpus, "missing_packages", lambda *a, **k: ["iso-codes"])
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    checks = {c.name: c for c in doctor.run_checks(quick=True)}
    assert not checks["jupyterlab"].ok and "make install" in checks["jupyterlab"].fix
    gettext = checks["data: gettext catalogues"]
    assert not gettext.ok and gettext.required and "apt-get install iso-codes" in gettext.fix
    chromium = checks["chromium"]
    assert not chromium.ok and not chromium.required and "apt-get install chromium" in chromium.fix


def _not_installed(name):
    raise doctor.importlib.metadata.PackageNotFoundError(name)


def test_doctor_finds_a_kernel_of_another_python(monkeypatch, tmp_path):
    kernel = tmp_path / "share" / "jupyter" / "kernels" / "python3"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(
        '{"argv": ["/usr/bin/python3", "-m", "ipykernel_launcher"], "display_name": "Python 3"}'
    )
    monkeypatch.setattr(doctor.sys, "prefix", str(tmp_path))
    check = {c.name: c for c in doctor.run_checks(quick=True)}["course kernel"]
    assert not check.ok and "/usr/bin/python3" in check.detail and "make install" in check.fix


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
    assert "강의에 필요한 것이 모두 있습니다" in run.stdout


def test_doctor_subcommand_in_process(capsys):
    from course_tools.cli import main

    assert main(["doctor", "--quick"]) == 0
    assert "torch 장치" in capsys.readouterr().out
