"""The student's side of grading: runs inside the sandbox, never in the grader.

Started as ``python -I -m course_tools.runner``. It speaks the :mod:`course_tools.wire`
protocol on the stdin/stdout it was started with, and moves everything the
student's code prints to stderr (which the grader reads, keeping a bounded tail).
It holds the notebook's namespace in an IPython shell and answers four requests:

- ``run``: execute one cell; reply whether it raised;
- ``lookup``: the value of a name (plain data, or a handle for anything else);
- ``call``: call a handle with plain arguments; reply with the plain result or
  the exception's type and message;
- ``getattr``: an attribute of a handle.

Functions the grader passes as arguments arrive as stubs; calling one sends a
``callback`` request back and waits for its plain result. The comparison with
the reference answers never happens here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
from typing import Any, BinaryIO

from course_tools import wire

__all__ = ["Runner", "main"]


class Runner:
    """One notebook namespace served over a pair of binary streams."""

    def __init__(self, proto_in: BinaryIO, proto_out: BinaryIO, namespace: Any) -> None:
        self._in, self._out = proto_in, proto_out
        self._namespace = namespace  # an IPython shell, or a plain dict for exec
        self._refs: dict[int, Any] = {}

    # -- the wire -----------------------------------------------------------
    def _read_exactly(self, n: int) -> bytes:
        # An unbuffered pipe returns at most what it holds (64 KiB): read until n bytes arrive.
        parts, need = [], n
        while need:
            chunk = self._in.read(need)
            if not chunk:
                raise EOFError("the grader closed the connection")
            parts.append(chunk)
            need -= len(chunk)
        return b"".join(parts)

    def send(self, op: str, value: Any = None, **fields: Any) -> None:
        # Whatever the student's value does while it is encoded (a __len__ that raises, an
        # int too long to print), the grader gets a reply: a "raise" that names the problem.
        try:
            structure, blobs = wire.encode(value, self._to_ref)
            frame = wire.pack({"op": op, "v": structure, **fields}, blobs)
        except BaseException as error:
            message = f"cannot send the result: {type(error).__name__}: {str(error)[:500]}"
            frame = wire.pack({"op": "raise", "type": "WireError", "message": message}, [])
        self._out.write(frame)
        self._out.flush()

    def receive(self) -> tuple[dict[str, Any], Any]:
        structure, blobs = wire.read_frame(self._read_exactly)
        if not isinstance(structure, dict) or not isinstance(structure.get("op"), str):
            raise wire.WireError("a request must be a dict with an 'op'")
        value = wire.decode(structure.get("v"), blobs, self._from_ref)
        return structure, value

    def _to_ref(self, obj: Any) -> dict[str, Any]:
        ref = len(self._refs) + 1
        self._refs[ref] = obj
        return {"$h": ref, "type": type(obj).__qualname__[:80], "callable": callable(obj)}

    def _from_ref(self, marker: dict[str, Any]) -> Any:
        if "$h" in marker:
            try:
                return self._refs[marker["$h"]]
            except (KeyError, TypeError):
                raise wire.WireError(f"unknown handle {marker['$h']!r}") from None
        if "$cb" in marker and isinstance(marker["$cb"], int):
            return self._callback_stub(marker["$cb"])
        raise wire.WireError(f"unknown marker {sorted(marker)[:3]}")

    def _callback_stub(self, number: int) -> Any:
        def callback(*args: Any, **kwargs: Any) -> Any:
            self.send("callback", [list(args), kwargs], cb=number)
            while True:
                header, value = self.receive()
                if header["op"] == "value":
                    return value
                if header["op"] == "raise":
                    raise wire.exception_from(header, RuntimeError)
                self._serve_one(header, value)  # a nested request while we wait

        callback.__name__ = callback.__qualname__ = f"grader_function_{number}"
        return callback

    # -- requests -----------------------------------------------------------
    def _globals(self) -> dict[str, Any]:
        namespace = self._namespace
        return namespace if isinstance(namespace, dict) else namespace.user_ns

    def run_cell(self, source: str) -> str | None:
        """Execute one cell; the error it raised as ``"Type: message"``, or None."""
        namespace = self._namespace
        if isinstance(namespace, dict):
            try:
                exec(compile(source, "<cell>", "exec"), namespace)
            except BaseException as error:  # the student's exception, reported, not fatal
                return _describe(error)
            return None
        result = namespace.run_cell(source, store_history=False, silent=True)
        raised = result.error_before_exec or result.error_in_exec
        return None if raised is None else _describe(raised)

    def _serve_one(self, header: dict[str, Any], value: Any) -> None:
        op = header["op"]
        if op == "run":
            self.send("done", None, error=self.run_cell(str(value)))
        elif op == "lookup":
            namespace = self._globals()
            if not isinstance(value, str) or value not in namespace:
                self.send("missing")
            else:
                self.send("value", namespace[value])
        elif op in ("call", "getattr"):
            try:
                target = self._refs[header["ref"]]
                if op == "call":
                    args, kwargs = value
                    result = target(*args, **kwargs)
                else:
                    result = getattr(target, str(value))
            except BaseException as error:  # the student's code raised: report it
                self.send("raise", None, type=type(error).__name__[:80], message=str(error)[:2000])
                return
            self.send("value", result)
        else:
            raise wire.WireError(f"unknown request {op!r}")

    def serve(self) -> None:
        """Answer requests until the grader closes the connection."""
        self.send("ready")
        while True:
            try:
                header, value = self.receive()
            except EOFError:
                return
            self._serve_one(header, value)
            for stream in (sys.stdout, sys.stderr):  # what the cell printed, before any kill
                with contextlib.suppress(Exception):
                    stream.flush()


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:300]


def _limit(kind: int, value: int) -> None:
    _soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    # `time import x` would run as %time without automagic's % : the read of the rules
    # (course_tools.rules) sees only what Python and IPython's explicit magics mean.
    config.InteractiveShell.automagic = False
    return InteractiveShell(config=config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_tools.runner")
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--max-processes", type=int, default=0)
    parser.add_argument("--rules", default="", help="JSON: {hidden: [...]}")
    args = parser.parse_args(argv)

    # The protocol keeps the original stdin/stdout; the student's prints go to stderr.
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)

    # Limits for everything started from here, set before any student code runs.
    _limit(resource.RLIMIT_AS, args.memory_mb * 1024 * 1024)
    _limit(resource.RLIMIT_CORE, 0)
    if args.max_processes:
        _limit(resource.RLIMIT_NPROC, args.max_processes)

    if args.rules:  # before any student code: the hidden modules' imports refused
        from course_tools import rules

        rules.install_in_runner(json.loads(args.rules).get("hidden", []))
    shell = _shell()
    # A module the notebook writes into its working folder is not importable: code that the
    # cells do not show cannot come in that way (and no submission needs modules of its own).
    for entry in ("", ".", os.getcwd()):
        while entry in sys.path:
            sys.path.remove(entry)
    runner = Runner(proto_in, proto_out, shell)
    with contextlib.suppress(EOFError, BrokenPipeError):
        runner.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
