"""The local set-up of the README: JupyterLab serves the course with the course kernel.

A real ``jupyter lab`` server is started from the virtual environment (no
browser, a random token, a free port); the test asks it, over its REST API,
for the kernel specs, starts the course kernel through it and runs code in
that kernel over the server's websocket, as the lab front end does. The code
imports ``course_utils`` from this checkout and runs an exercise notebook's
set-up cell.
"""

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not (BIN / "jupyter-lab").exists():
        pytest.fail("JupyterLab is not installed: run make install (requirements.txt lists it)")
    token = secrets.token_hex(16)
    runtime = tmp_path_factory.mktemp("jupyter-runtime")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_NO_CONFIG": "1"}
    base = ""

    def get(path: str) -> tuple[int, bytes]:
        request = urllib.request.Request(base + path, headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()

    def post(path: str, body: dict) -> dict:
        request = urllib.request.Request(
            base + path, data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    # The free port can be taken by another test (they run in parallel) before the server
    # binds it: with no port retries the server then stops, and starts again on another.
    for attempt in range(3):
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen(
            [str(BIN / "jupyter-lab"), "--no-browser", f"--port={port}", "--ip=127.0.0.1",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={ROOT}", *(["--allow-root"] if os.geteuid() == 0 else [])],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while server.poll() is None and time.monotonic() < deadline:
            try:
                get("/api/status")
                break
            except OSError:
                time.sleep(0.3)
        else:
            server.kill()
            problem = server.stderr.read().decode()[-2000:]
            if "already in use" in problem and attempt < 2:
                continue
            pytest.fail("jupyter lab did not start: " + problem)
        break
    yield {"get": get, "post": post, "port": port, "token": token}
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    shutil.rmtree(runtime, ignore_errors=True)


def _run(lab, kernel_id: str, code: str, timeout: float = 120) -> tuple[str, list[str]]:
    """Execute ``code`` in the server's kernel over its websocket; stdout and error names."""
    import websocket

    url = f"ws://127.0.0.1:{lab['port']}/api/kernels/{kernel_id}/channels?token={lab['token']}"
    ws = websocket.create_connection(url, timeout=timeout)
    try:
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                       "session": uuid.uuid4().hex, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False},
        }))  # fmt: skip
        out, errors = [], []
        while True:
            message = json.loads(ws.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind == "error":
                errors.append(content["ename"])
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out), errors
    finally:
        ws.close()


def test_lab_serves_its_front_end_and_the_course_kernel(lab):
    status, page = lab["get"]("/lab")
    assert status == 200 and b"JupyterLab" in page
    _, body = lab["get"]("/api/kernelspecs")
    specs = json.loads(body)["kernelspecs"]
    course = specs["python3"]["spec"]
    assert course["display_name"] == "Python 3 (NLP 강의)"
    assert Path(course["argv"][0]).parent.absolute() == BIN.absolute()  # the course's .venv


def test_a_kernel_started_by_the_lab_runs_an_exercise_set_up_cell(lab):
    kernel = lab["post"]("/api/kernels", {"name": "python3"})
    notebook = json.loads((ROOT / "notebooks" / "ch01_nlp_and_sequences.ipynb").read_text())
    setup = next(
        "".join(cell["source"]) for cell in notebook["cells"]
        if cell["cell_type"] == "code" and "grader" in "".join(cell["source"])
    )  # fmt: skip
    out, errors = _run(lab, kernel["id"], f"import os\nos.chdir({str(ROOT / 'notebooks')!r})")
    assert errors == []
    out, errors = _run(lab, kernel["id"], setup)
    assert errors == [], out
    out, errors = _run(lab, kernel["id"], "import course_utils, sys\nprint(course_utils.__file__)")
    assert errors == [] and Path(out.strip()).resolve().is_relative_to(ROOT / "src")
