# ruff: noqa: UP031, UP036 - this script must also run on old Pythons to say "too old".
"""Check what pip cannot install before `make` builds the environment.

Python 3.10 or newer, a Java runtime (for KoNLPy) and npm; a note when bubblewrap,
which only grading needs, or the Korean gettext catalogues, which only the seq2seq
chapters' corpus reads, are missing. Runs with any Python 3.
"""

import os
import shutil
import subprocess
import sys

problems = []
if sys.version_info < (3, 10):
    problems.append(
        "Python 3.10 or newer is needed (found %d.%d): install it and run "
        "`make PYTHON=python3.11 book`" % sys.version_info[:2]
    )
java = shutil.which("java")
if java is None:
    problems.append(
        "a Java runtime is needed for KoNLPy: Debian/Ubuntu `sudo apt-get install "
        "default-jdk`, macOS `brew install openjdk`, Windows: install a JDK and set JAVA_HOME"
    )
else:
    run = subprocess.run([java, "-version"], capture_output=True, text=True)
    if run.returncode != 0:
        problems.append("`java -version` failed: reinstall the Java runtime (%s)" % java)
if shutil.which("npm") is None:
    problems.append(
        "npm is needed once, to vendor MathJax for offline equations: install Node.js "
        "(Debian/Ubuntu `sudo apt-get install npm`, macOS `brew install node`)"
    )
if shutil.which("bwrap") is None:
    # Not a problem for reading or building the book: only grading runs students' code.
    print(
        "note: bubblewrap (bwrap) is not installed; grading students' notebooks and its tests "
        "need it (Debian/Ubuntu `sudo apt-get install bubblewrap`)",
        file=sys.stderr,
    )
try:  # the package's own list; any failure here only skips this note
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from course_utils.gettext_corpus import install_command, missing_packages

    korean_catalogues = missing_packages()
except Exception:
    korean_catalogues = []
if korean_catalogues:
    # Not a problem either: the seq2seq chapters' English→Korean corpus needs them.
    print(
        "note: the Korean translations of %s are not installed; the English-Korean corpus "
        "of the seq2seq chapters reads them. %s"
        % (", ".join(korean_catalogues), install_command(korean_catalogues)),
        file=sys.stderr,
    )
if problems:
    print("Missing prerequisites:", file=sys.stderr)
    for problem in problems:
        print("  - " + problem, file=sys.stderr)
    sys.exit(1)
print("prerequisites ok: Python %d.%d, java, npm" % sys.version_info[:2])
