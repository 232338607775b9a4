"""Plain data across the sandbox wall: the only thing grader and student code exchange.

A message is a dict of plain values: ``None``, ``bool``, ``int``, ``float``,
``complex``, ``str``, ``bytes``, lists, tuples, sets, dicts (also with tuple
keys, and ``Counter``), NumPy arrays of numbers, booleans or strings, and torch
tensors (sent as such arrays). Nothing is pickled: the structure travels as
JSON and every array as its raw bytes with a dtype from a short allow-list, so
decoding can build nothing but these types.

What is not plain data never crosses. The student's side replaces it by a
*handle* (a number naming the object, which stays in the sandbox); the
grader's side replaces a function it passes by a *callback* number. Both sides
get a decoder hook for these.

Frame: ``<Q total>`` then ``<I json length>``, the JSON, ``<I blob count>`` and
each blob as ``<Q length>`` + bytes. A frame over ``MAX_FRAME`` bytes is refused
on both sides.
"""

from __future__ import annotations

import base64
import builtins
import json
import re
import struct
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = [
    "MAX_FRAME", "WireError", "decode", "encode", "exception_from", "pack", "read_frame", "unpack",
]  # fmt: skip

MAX_FRAME = 64 * 1024 * 1024  # a message, arrays included
MAX_JSON = 16 * 1024 * 1024  # its structure
MAX_NODES = 1_000_000  # values in its structure (list items, dict entries, …)
MAX_DEPTH = 64
MAX_INT_BITS = 4096  # Python refuses to print ints over 4,300 digits (about 14,000 bits)
MAX_SOURCE = 4 * 1024 * 1024  # one cell's source, in UTF-8 bytes: the grader runs nothing larger
MAX_MESSAGE = 2000  # characters of an exception's message that cross
MAX_SAME_HASH = 16  # keys of one set or dict that share a hash (more is a collision attack)
# Numbers, booleans and fixed-width strings, in an explicit byte order: no
# object, structured or void dtypes (those could carry code or pointers).
_DTYPE = re.compile(r"^(\|b1|[<>|][iuf][1248]|[<>]f16|[<>]c(8|16|32)|[<>]U\d{1,6}|\|S\d{1,6})$")


class WireError(ValueError):
    """A value that cannot be sent, or a frame that is not a valid message."""


def _tensor_type() -> Any:
    # Only a torch that is already imported can have made the value: never import it here.
    # (Another thread may be halfway through importing it: then it has made no tensor yet.)
    return getattr(sys.modules.get("torch"), "Tensor", None)


def encode(
    value: Any, to_ref: Callable[[Any], dict[str, Any]] | None = None
) -> tuple[Any, list[bytes]]:
    """``(json-able structure, blobs)`` for ``value``.

    ``to_ref`` turns a value that is not plain data into a JSON-able marker (a
    handle or a callback); without it such a value raises :class:`WireError`.
    """
    blobs: list[bytes] = []

    def array(a: np.ndarray) -> dict[str, Any]:
        if a.dtype.kind == "O":
            raise WireError("an object array is not plain data")
        a = np.ascontiguousarray(a)
        dtype = a.dtype.str
        if not _DTYPE.match(dtype):
            raise WireError(f"arrays of dtype {a.dtype} cannot be sent")
        blobs.append(a.tobytes())
        return {"$a": len(blobs) - 1, "dtype": dtype, "shape": list(a.shape)}

    def enc(v: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"nested deeper than {MAX_DEPTH} levels")
        if v is None or isinstance(v, (bool, str)):
            return str(v) if isinstance(v, str) and type(v) is not str else v
        if isinstance(v, (int, np.integer)):
            if int(v).bit_length() > MAX_INT_BITS:
                raise WireError(
                    f"an integer of {int(v).bit_length()} bits is over the {MAX_INT_BITS}-bit "
                    "limit for a value sent to the grader"
                )
            return int(v)
        if isinstance(v, (float, np.floating)):
            return {"$f": repr(float(v))}
        if isinstance(v, (complex, np.complexfloating)):
            return {"$c": [repr(v.real), repr(v.imag)]}
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, (bytes, bytearray)):
            return {"$b": base64.b64encode(bytes(v)).decode("ascii")}
        if isinstance(v, np.ndarray):
            if v.dtype.kind == "O" and to_ref is not None:
                return {"$l": [enc(x, depth + 1) for x in v.tolist()]}
            return array(v)
        tensor = _tensor_type()
        if tensor is not None and isinstance(v, tensor):
            return {"$T": array(v.detach().cpu().resolve_conj().resolve_neg().numpy())}
        if isinstance(v, list):
            return [enc(x, depth + 1) for x in v]
        if isinstance(v, tuple):
            return {"$t": [enc(x, depth + 1) for x in v]}
        if isinstance(v, (set, frozenset)):
            return {"$s": [enc(x, depth + 1) for x in v]}
        if isinstance(v, dict):
            kind = "counter" if isinstance(v, Counter) else "dict"
            items = [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in v.items()]
            return {"$d": items, "kind": kind}
        if to_ref is not None:
            if isinstance(v, (range, Iterator)) or type(v).__name__.startswith("dict_"):
                # Generators, map/zip objects, ranges, dict views: their items, as a list.
                return [enc(x, depth + 1) for x in v]
            return to_ref(v)
        raise WireError(f"{type(v).__name__} is not plain data and cannot be sent")

    return enc(value, 0), blobs


def decode(
    structure: Any, blobs: list[bytes], from_ref: Callable[[dict[str, Any]], Any] | None = None
) -> Any:
    """The value that :func:`encode` produced ``(structure, blobs)`` from."""
    torch_mod: list[Any] = []

    def array(spec: dict[str, Any]) -> np.ndarray:
        index, dtype, shape = spec.get("$a"), spec.get("dtype"), spec.get("shape")
        if not (isinstance(index, int) and 0 <= index < len(blobs)):
            raise WireError("array refers to a missing blob")
        if not (isinstance(dtype, str) and _DTYPE.match(dtype)):
            raise WireError(f"refused array dtype {dtype!r}")
        if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)):
            raise WireError("array shape must be a list of sizes")
        dt = np.dtype(dtype)
        count = 1
        for n in shape:
            count *= n
        if count * dt.itemsize != len(blobs[index]):
            raise WireError("array size does not match its bytes")
        return np.frombuffer(blobs[index], dtype=dt).reshape(shape).copy()

    def number(text: Any) -> float:
        if not isinstance(text, str) or len(text) > 40:
            raise WireError("malformed float")
        return float(text)

    def dec(s: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise WireError(f"nested deeper than {MAX_DEPTH} levels")
        if s is None or isinstance(s, (bool, int, str)):
            return s
        if isinstance(s, list):
            return [dec(x, depth + 1) for x in s]
        if not isinstance(s, dict) or len(s) == 0:
            raise WireError(f"unexpected {type(s).__name__} in a message")
        if "$f" in s:
            return number(s["$f"])
        if "$c" in s:
            re_, im = s["$c"]
            return complex(number(re_), number(im))
        if "$b" in s:
            return base64.b64decode(s["$b"], validate=True)
        if "$a" in s:
            return array(s)
        if "$T" in s:
            if not torch_mod:
                try:
                    import torch

                    torch_mod.append(torch.from_numpy)
                except ImportError:  # where the rules hide torch, a tensor arrives as an array
                    torch_mod.append(lambda a: a)
            return torch_mod[0](array(s["$T"]))
        if "$l" in s:
            return np.array([dec(x, depth + 1) for x in s["$l"]], dtype=object)
        if "$t" in s:
            return tuple(dec(x, depth + 1) for x in s["$t"])
        if "$s" in s:
            return set(_distinct_hashes([dec(x, depth + 1) for x in s["$s"]]))
        if "$d" in s:
            pairs = [(dec(k, depth + 1), dec(v, depth + 1)) for k, v in s["$d"]]
            _distinct_hashes([k for k, _ in pairs])
            return Counter(dict(pairs)) if s.get("kind") == "counter" else dict(pairs)
        if from_ref is not None:
            return from_ref(s)
        raise WireError(f"unknown marker {sorted(s)[:3]} in a message")

    try:
        return dec(structure, 0)
    except WireError:
        raise
    except (TypeError, ValueError, RecursionError, MemoryError) as error:
        raise WireError(f"malformed message: {type(error).__name__}: {error}") from None


def _distinct_hashes(keys: list[Any]) -> list[Any]:
    """``keys``, unless too many share a hash: building a set of those takes quadratic time."""
    if len(keys) > MAX_SAME_HASH:
        counts = Counter(hash(k) for k in keys)
        if counts.most_common(1)[0][1] > MAX_SAME_HASH:
            raise WireError(f"more than {MAX_SAME_HASH} keys share one hash value")
    return keys


def _scrub(structure: Any) -> Any:
    """The JSON structure with lone surrogates replaced, if it is small and shallow enough."""
    nodes = 0
    stack: list[tuple[Any, int]] = [(structure, 0)]
    while stack:
        value, depth = stack.pop()
        nodes += 1 + (len(value) if isinstance(value, (list, dict)) else 0)
        if nodes > MAX_NODES:
            raise WireError(f"more than {MAX_NODES} values in one message")
        if depth > MAX_DEPTH:
            raise WireError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, str):
                    value[index] = _clean_text(item)
                else:
                    stack.append((item, depth + 1))
        elif isinstance(value, dict):
            for key in list(value):
                item = value[key]
                if isinstance(item, str):
                    value[key] = _clean_text(item)
                else:
                    stack.append((item, depth + 1))
    return _clean_text(structure) if isinstance(structure, str) else structure


def _clean_text(text: str) -> str:
    # JSON can carry "\ud800" (half of a UTF-16 pair), which is not text: make it U+FFFD.
    if text.isascii() or not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def pack(structure: Any, blobs: list[bytes]) -> bytes:
    """One frame holding ``structure`` (JSON) and ``blobs``."""
    # ASCII JSON: a lone surrogate in a string (not text, but Python allows it) still travels.
    head = json.dumps(structure, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    parts = [struct.pack("<I", len(head)), head, struct.pack("<I", len(blobs))]
    for blob in blobs:
        parts += [struct.pack("<Q", len(blob)), blob]
    body = b"".join(parts)
    if len(body) > MAX_FRAME:
        raise WireError(f"message of {len(body)} bytes is over the {MAX_FRAME}-byte limit")
    return struct.pack("<Q", len(body)) + body


def unpack(body: bytes) -> tuple[Any, list[bytes]]:
    """``(structure, blobs)`` from a frame's body (after its 8-byte length)."""
    try:
        (head_len,) = struct.unpack_from("<I", body, 0)
        if head_len > MAX_JSON:
            raise WireError(f"message structure over the {MAX_JSON}-byte limit")
        head = body[4 : 4 + head_len]
        if len(head) != head_len:
            raise WireError("truncated frame")
        structure = _scrub(json.loads(head.decode("utf-8")))
        offset = 4 + head_len
        (count,) = struct.unpack_from("<I", body, offset)
        offset += 4
        blobs = []
        for _ in range(count):
            (size,) = struct.unpack_from("<Q", body, offset)
            offset += 8
            if offset + size > len(body):
                raise WireError("truncated frame")
            blobs.append(body[offset : offset + size])
            offset += size
    except WireError:
        raise
    except (struct.error, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise WireError(f"malformed frame: {type(error).__name__}: {error}") from None
    if offset != len(body):
        raise WireError("trailing bytes after a frame")
    return structure, blobs


def read_frame(read_exactly: Callable[[int], bytes]) -> tuple[Any, list[bytes]]:
    """Read one frame with ``read_exactly(n)`` (which returns n bytes or raises)."""
    (size,) = struct.unpack("<Q", read_exactly(8))
    if size > MAX_FRAME:
        raise WireError(f"frame of {size} bytes is over the {MAX_FRAME}-byte limit")
    return unpack(read_exactly(size))


_BUILTIN_ERRORS = {
    name: obj
    for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, Exception)
}


def exception_from(reply: dict[str, Any], fallback: type[Exception]) -> Exception:
    """The exception a ``raise`` reply names: a builtin type of that name, else ``fallback``.

    Only the type's name and the message cross the wall; a student's own exception
    class arrives as ``fallback("Name: message")``.
    """
    name = str(reply.get("type", "Exception"))[:80]
    message = str(reply.get("message", ""))[:MAX_MESSAGE]
    kind = _BUILTIN_ERRORS.get(name)
    if kind is not None:
        try:
            return kind(message)
        except Exception:  # a builtin that wants other arguments
            pass
    return fallback(f"{name}: {message}")
