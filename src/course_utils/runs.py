"""The chapters' experiments, run once: one result cache and one pool of worker processes.

Chapters 9–12 train models that a chapter, its claims test and a later
chapter all need. A trained result is kept under ``~/.cache/nlp-course`` (or
the folder in ``COURSE_CACHE``; ``COURSE_CACHE=off`` always computes) in a
file named by :func:`recipe_key`: a hash of the package's source code, torch's
version, the thread count, the device and the recipe, so a changed recipe or a
changed line of code never reuses an old result. Files are written under a
temporary name and renamed, so a crash never leaves half a file; a folder that
cannot be written is warned about, and the result is computed again next time.

:func:`worker_pool` starts the processes that train several such results at
once, one per core, each single-threaded like the chapter (the thread count
is part of the key, so a worker's result is the one the chapter would load).
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import warnings
from collections.abc import Callable, Hashable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch

from course_utils.checks import check_int

__all__ = [
    "CACHE_ENV",
    "background_workers",
    "cache_folder",
    "cache_path",
    "cached",
    "load_result",
    "recipe_key",
    "save_result",
    "wait_for",
    "will_produce",
    "worker_pool",
]

CACHE_ENV = "COURSE_CACHE"  # a folder for trained results, or "off"
PACKAGE = Path(__file__).resolve().parent


def cache_folder() -> Path | None:
    """Where results are kept: ``COURSE_CACHE``, else ``~/.cache/nlp-course``; None when off."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() in ("off", "0", "false", "no"):
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "nlp-course"


def _package_digest() -> bytes:
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes())
    return digest.digest()


def recipe_key(kind: str, recipe: object) -> str:
    """What decides a result: the package's code, torch, the threads, the device, the recipe.

    ``recipe`` is anything whose ``repr`` names everything else the result
    depends on (frozen dataclasses of settings, a digest of the data).
    """
    from course_utils.device import get_device

    digest = hashlib.sha256(_package_digest())
    digest.update(
        f"{torch.__version__}|{torch.get_num_threads()}|{get_device().type}|{kind}|{recipe!r}".encode()
    )
    return digest.hexdigest()[:24]


def cache_path(kind: str, recipe: object) -> Path | None:
    """The file that keeps ``kind``'s result for ``recipe``; None when the cache is off."""
    folder = cache_folder()
    return None if folder is None else folder / f"{kind}-{recipe_key(kind, recipe)}.pt"


def load_result(path: Path | None, map_location: str | torch.device = "cpu") -> Any:
    """The result kept at ``path``, or None when there is none (or the cache is off)."""
    if path is None or not path.is_file():
        return None
    return torch.load(path, map_location=map_location, weights_only=True)


def save_result(path: Path | None, result: Any) -> None:
    """Keep ``result`` (tensors and plain values) at ``path``, atomically; warn if it cannot."""
    if path is None:
        return
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(result, partial)
        partial.replace(path)  # never a half-written file under the final name
    except OSError as error:  # a read-only home: compute again next time, but say why
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        warnings.warn(f"could not keep the result in {path.parent}: {error}", stacklevel=3)


def cached(
    kind: str, recipe: object, compute: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], bool]:
    """``compute()``'s result, kept by ``(kind, recipe)``; also whether it came from the cache."""
    path = cache_path(kind, recipe)
    saved = load_result(path)
    if saved is not None:
        return saved, True
    result = compute()
    save_result(path, result)
    return result, False


def background_workers() -> int:
    """How many worker processes may train meanwhile: 0 on a GPU, one core or no cache."""
    from course_utils.device import get_device

    cores = os.cpu_count() or 1
    if cores < 2 or get_device().type != "cpu" or cache_folder() is None:
        return 0
    return cores


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """``workers`` processes started fresh ("spawn": a forked child of a process that already
    runs torch threads can hang)."""
    check_int(workers, "workers")
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


#: What background work will produce, by key: the function that waits for it.
_PENDING: dict[Hashable, Callable[[], None]] = {}


def will_produce(key: Hashable, wait: Callable[[], None]) -> None:
    """Say that work running in the background will put ``key``'s result in the cache.

    Whoever needs that result calls :func:`wait_for` first, so that it loads
    the result instead of computing it a second time beside the worker.
    """
    _PENDING[key] = wait


def wait_for(key: Hashable) -> None:
    """Wait for the background work that :func:`will_produce` announced for ``key``, if any."""
    wait = _PENDING.pop(key, None)
    if wait is not None:
        wait()
