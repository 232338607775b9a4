"""The plain-data wire between the grader and the sandbox: exact round trips, refusals."""

from __future__ import annotations

import io
import os
import threading
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from course_tools import runner, wire


def _round_trip(value):
    structure, blobs = wire.encode(value)
    frame = wire.pack(structure, blobs)
    back_structure, back_blobs = wire.unpack(frame[8:])
    return wire.decode(back_structure, back_blobs)


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3) | st.tuples(st.text(max_size=2)), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(plain)
def test_plain_values_cross_unchanged_with_their_types(value):
    back = _round_trip(value)
    assert back == value and repr(back) == repr(value)


def test_arrays_tensors_counters_and_special_numbers_cross_exactly():
    values = [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.array([[True, False]]),
        np.array(["가나", "b"]),
        np.zeros((0, 3), dtype=np.int64),
        Counter({("a", "b"): 3}),
        {1, 2},
        b"\x00\xff",
        complex(1, -2),
        float("nan"),
        float("-inf"),
        np.float32(0.1),
        np.int16(-7),
    ]
    for value in values:
        back = _round_trip(value)
        if isinstance(value, np.ndarray):
            assert back.dtype == value.dtype and back.shape == value.shape
            assert np.array_equal(back, value)
        elif isinstance(value, float) and value != value:
            assert back != back
        elif isinstance(value, np.generic):  # NumPy scalars arrive as Python numbers
            assert back == value and type(back) is type(value.item())
        else:
            assert back == value and type(back) is type(value)
    tensor = torch.arange(6, dtype=torch.float64).reshape(2, 3).requires_grad_()
    back = _round_trip(tensor * 2)
    assert isinstance(back, torch.Tensor) and torch.equal(back, tensor.detach() * 2)


@pytest.mark.parametrize(
    "value",
    [object(), np.array([object()], dtype=object), np.zeros(2, dtype=[("a", "<f8")]), lambda: 1],
)
def test_what_is_not_plain_data_is_refused(value):
    with pytest.raises(wire.WireError):
        wire.encode(value)


@pytest.mark.parametrize(
    ("structure", "blobs", "message"),
    [
        ({"$a": 0, "dtype": "|O8", "shape": [1]}, [b"\0" * 8], "dtype"),
        ({"$a": 0, "dtype": "<f8", "shape": [2]}, [b"\0" * 8], "does not match"),
        ({"$a": 3, "dtype": "<f8", "shape": [1]}, [], "missing blob"),
        ({"$x": 1}, [], "unknown marker"),
        (1.5, [], "unexpected float"),
        ({"$f": "1" * 100}, [], "malformed float"),
        ({"$d": [[1]]}, [], "malformed"),
    ],
)
def test_malformed_messages_are_refused_without_building_anything(structure, blobs, message):
    with pytest.raises(wire.WireError, match=message):
        wire.decode(structure, blobs)


def test_deep_nesting_and_oversized_frames_are_refused():
    deep: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.WireError, match="nested deeper"):
        wire.encode(deep)
    with pytest.raises(wire.WireError, match="over the"):
        wire.read_frame(lambda n: (wire.MAX_FRAME + 1).to_bytes(8, "little") if n == 8 else b"")
    with pytest.raises(wire.WireError, match="truncated frame"):
        wire.unpack(b"\xff\xff\xff\x00garbage")
    with pytest.raises(wire.WireError, match="malformed frame"):
        wire.unpack(b"\x05\x00\x00\x00{bad}\x00\x00\x00\x00")
    frame = wire.pack({"op": "x"}, [])
    with pytest.raises(wire.WireError, match="trailing"):
        wire.unpack(frame[8:] + b"!")


def test_exceptions_cross_as_a_builtin_type_or_the_fallback():
    error = wire.exception_from({"type": "ValueError", "message": "bad"}, RuntimeError)
    assert type(error) is ValueError and str(error) == "bad"
    error = wire.exception_from({"type": "MyError", "message": "x"}, RuntimeError)
    assert type(error) is RuntimeError and str(error) == "MyError: x"
    error = wire.exception_from({"type": "UnicodeDecodeError", "message": "x"}, RuntimeError)
    assert type(error) is RuntimeError  # a builtin that wants more arguments


def test_the_runner_serves_cells_lookups_calls_and_callbacks_in_process():
    """The student's side, driven over real pipes without a sandbox."""
    to_runner_r, to_runner_w = os.pipe()
    from_runner_r, from_runner_w = os.pipe()
    served = runner.Runner(
        os.fdopen(to_runner_r, "rb", buffering=0), os.fdopen(from_runner_w, "wb", buffering=0), {}
    )
    thread = threading.Thread(target=served.serve, daemon=True)
    thread.start()
    send = os.fdopen(to_runner_w, "wb", buffering=0)
    receive = os.fdopen(from_runner_r, "rb", buffering=0)

    def read_exactly(n):
        data = receive.read(n)
        assert len(data) == n
        return data

    def ask(op, value=None, **fields):
        structure, blobs = wire.encode(value, lambda f: {"$cb": 0})
        send.write(wire.pack({"op": op, "v": structure, **fields}, blobs))
        structure, blobs = wire.read_frame(read_exactly)
        return structure, wire.decode(structure.get("v"), blobs, lambda marker: marker)

    assert wire.read_frame(read_exactly)[0]["op"] == "ready"
    assert (
        ask("run", "def f(x, cb):\n    return cb(x) * 2\nclass C: pass\nc = C()")[0]["error"]
        is None
    )
    assert ask("run", "1/0")[0]["error"] == "ZeroDivisionError: division by zero"
    assert ask("lookup", "nope")[0]["op"] == "missing"
    assert ask("run", "answer = ('b', 3.5)")[0]["error"] is None
    assert ask("lookup", "answer") == (
        {"op": "value", "v": {"$t": ["b", {"$f": "3.5"}]}},
        ("b", 3.5),
    )
    header, handle = ask("lookup", "f")
    assert header["op"] == "value" and handle["type"] == "function"
    header, obj = ask("lookup", "c")
    assert obj["type"] == "C" and obj["callable"] is False
    # Calling f with a callback: the runner asks back, we answer, it finishes.
    header, payload = ask("call", [[21, print], {}], ref=handle["$h"])
    assert header["op"] == "callback" and payload == [[21], {}]
    send.write(wire.pack({"op": "value", "v": 4}, []))
    structure, blobs = wire.read_frame(read_exactly)
    assert structure["op"] == "value" and wire.decode(structure["v"], blobs) == 8
    header, _ = ask("call", [[1], {}], ref=handle["$h"])
    assert header["op"] == "raise" and header["type"] == "TypeError"
    header, _ = ask("getattr", "missing_attribute", ref=obj["$h"])
    assert header["op"] == "raise" and header["type"] == "AttributeError"
    header, _ = ask("call", [[], {}], ref=999)
    assert header["op"] == "raise" and header["type"] == "KeyError"
    send.close()
    thread.join(5)
    assert not thread.is_alive()


def test_keys_built_to_collide_are_refused_before_hashing_them_into_a_set():
    colliding = [k * ((1 << 61) - 1) for k in range(1, 200)]  # all hash to 0
    assert len({hash(k) for k in colliding}) == 1
    for value in ({"$s": colliding}, {"$d": [[k, 0] for k in colliding]}):
        with pytest.raises(wire.WireError, match="share one hash"):
            wire.decode(value, [])
    assert wire.decode({"$s": list(range(1000))}, []) == set(range(1000))


def test_lone_surrogates_become_replacement_characters():
    frame = wire.pack({"op": "done", "error": "\ud800 and \U0001f600", "v": ["x\udfff"]}, [])
    structure, _ = wire.unpack(frame[8:])
    assert structure["error"] == "\ufffd and \U0001f600" and structure["v"] == ["x\ufffd"]
    structure["error"].encode("utf-8")  # writable anywhere


def test_messages_with_too_many_values_are_refused():
    too_many = wire.pack({"op": "value", "v": [0] * (wire.MAX_NODES + 1)}, [])
    with pytest.raises(wire.WireError, match="values in one message"):
        wire.unpack(too_many[8:])


def test_the_seccomp_filter_is_built_for_known_cpus_only():
    from course_tools.sandbox import seccomp_program

    for machine in ("x86_64", "aarch64"):
        program = seccomp_program(machine)
        assert program is not None and len(program) % 8 == 0 and len(program) // 8 < 80
    assert seccomp_program("riscv64") is None


def test_the_runner_reads_a_request_larger_than_a_pipe_holds():
    """A request over 64 KiB arrives over an unbuffered pipe in pieces; the runner waits for all."""
    to_runner_r, to_runner_w = os.pipe()
    served = runner.Runner(os.fdopen(to_runner_r, "rb", buffering=0), io.BytesIO(), {})
    big = np.arange(200_000, dtype=np.float64)  # 1.6 MB
    structure, blobs = wire.encode(big, lambda f: {"$cb": 0})
    frame = wire.pack({"op": "run", "v": structure}, blobs)
    assert len(frame) > 1 << 16

    def write_all() -> None:
        with os.fdopen(to_runner_w, "wb", buffering=0) as pipe:
            pipe.write(frame)  # a blocking pipe takes it in pieces as the runner reads

    writer = threading.Thread(target=write_all, daemon=True)
    writer.start()
    header, value = served.receive()
    writer.join()
    assert header["op"] == "run"
    assert np.array_equal(value, big)
