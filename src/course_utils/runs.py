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
:class:`Jobs` runs independent experiments the same way, returning their
results to the chapter (4장's, and 8장's, which keep them with :func:`cached`).
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import warnings
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import torch

from course_utils.checks import check_int

__all__ = [
    "CACHE_ENV",
    "Jobs",
    "background_workers",
    "cache_folder",
    "cache_path",
    "cached",
    "load_result",
    "on_threads",
    "pending",
    "recipe_key",
    "save_result",
    "single_threaded",
    "wait_all",
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


def recipe_key(kind: str, recipe: object, any_threads: bool = False) -> str:
    """What decides a result: the package's code, torch, the threads, the device, the recipe.

    ``recipe`` is anything whose ``repr`` names everything else the result
    depends on (frozen dataclasses of settings, a digest of the data). With
    ``any_threads`` the thread count is left out: a record of what a chapter
    computed, read back by a later chapter that runs on another thread count.
    """
    from course_utils.device import get_device

    threads = "any" if any_threads else torch.get_num_threads()
    digest = hashlib.sha256(_package_digest())
    digest.update(f"{torch.__version__}|{threads}|{get_device().type}|{kind}|{recipe!r}".encode())
    return digest.hexdigest()[:24]


def cache_path(kind: str, recipe: object, any_threads: bool = False) -> Path | None:
    """The file that keeps ``kind``'s result for ``recipe``; None when the cache is off."""
    folder = cache_folder()
    key = recipe_key(kind, recipe, any_threads)
    return None if folder is None else folder / f"{kind}-{key}.pt"


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


def _spare_cores() -> int:
    """The CPU cores worker processes may use: 0 on a GPU or with one core."""
    from course_utils.device import get_device

    cores = os.cpu_count() or 1
    return cores if cores >= 2 and get_device().type == "cpu" else 0


def background_workers() -> int:
    """How many worker processes may train into the cache meanwhile: 0 on a GPU, one core or
    no cache."""
    return 0 if cache_folder() is None else _spare_cores()


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """``workers`` processes started fresh ("spawn": a forked child of a process that already
    runs torch threads can hang)."""
    check_int(workers, "workers")
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


#: What background work will produce, by key: the function that waits for it.
_PENDING: dict[Hashable, Callable[[], Any]] = {}


def will_produce(key: Hashable, wait: Callable[[], Any]) -> None:
    """Say that work running in the background will produce ``key``'s result.

    Whoever needs that result calls :func:`wait_for` first, so that it loads
    the result (from the cache, or as ``wait`` returns it) instead of computing
    it a second time beside the worker.
    """
    _PENDING[key] = wait


def pending(key: Hashable) -> bool:
    """Whether background work announced with :func:`will_produce` will produce ``key``."""
    return key in _PENDING


def wait_for(key: Hashable) -> Any:
    """Wait for the background work that :func:`will_produce` announced for ``key``, if any;
    what its ``wait`` returns (None when nothing was announced)."""
    wait = _PENDING.pop(key, None)
    return None if wait is None else wait()


def wait_all(futures: Sequence[Future[Any]], desc: str | None = None) -> None:
    """Wait until every future is done, with a progress bar while any is running.

    Errors are not raised here: ``future.result()`` raises a worker's error.
    """
    from course_utils.progress import progress

    if any(not future.done() for future in futures):
        for _ in progress(as_completed(futures), desc, total=len(futures)):
            pass


def on_threads(threads: int, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` with torch on ``threads`` threads, restored afterwards.

    A run gives the same numbers here and in a worker process of :class:`Jobs`.
    """
    check_int(threads, "threads")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return function(*args)
    finally:
        torch.set_num_threads(before)


def single_threaded(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` with torch on one thread, restored afterwards."""
    return on_threads(1, function, *args)


def lower_priority(niceness: int) -> None:
    """Raise this process's niceness to ``niceness`` (POSIX; an unprivileged process's niceness
    only rises, so a worker lowered once stays lowered)."""
    if hasattr(os, "setpriority") and os.getpriority(os.PRIO_PROCESS, 0) < niceness:
        os.setpriority(os.PRIO_PROCESS, 0, niceness)


def _in_worker(threads: int, niceness: int, function: Callable[..., Any], *args: Any) -> Any:
    lower_priority(niceness)  # this worker's lower priority
    os.environ["TQDM_DISABLE"] = "1"  # a worker's bars would go to the terminal, not the notebook
    return on_threads(threads, function, *args)


class Jobs:
    """Independent jobs ``(function, args)``, each run on ``threads`` torch threads (one).

    On a CPU with two cores or more and at least ``least`` jobs (two), worker
    processes (one per core, or ``workers``, at most one per job) start them all
    at once, ``nice`` steps below this process's priority, and this process goes
    on meanwhile; :meth:`results` waits for the ones it needs. Elsewhere (a GPU,
    one core) :meth:`results` runs them here, one by one. Either way a job's
    result is the same: each job is seeded by its arguments and runs on the same
    number of threads.
    """

    def __init__(
        self,
        jobs: Sequence[tuple[Callable[..., Any], tuple[Any, ...]]],
        workers: int | None = None,
        threads: int = 1,
        nice: int = 0,
        least: int = 2,
    ) -> None:
        self.jobs = list(jobs)
        self.threads = check_int(threads, "threads")
        check_int(least, "least")
        self._results: dict[int, Any] = {}
        self._futures: dict[int, Future[Any]] = {}
        self._pool: ProcessPoolExecutor | None = None
        cores = _spare_cores()
        if workers is not None:
            cores = min(cores, check_int(workers, "workers"))
        if cores and len(self.jobs) >= least:
            niceness = min(os.nice(0) + nice, 19) if hasattr(os, "nice") else 0
            self._pool = worker_pool(min(cores, len(self.jobs)))
            for i, (function, args) in enumerate(self.jobs):
                self._futures[i] = self._pool.submit(_in_worker, threads, niceness, function, *args)

    @property
    def in_background(self) -> bool:
        """Whether worker processes run the jobs."""
        return self._pool is not None

    def results(self, indices: Sequence[int], desc: str | None = None) -> list[Any]:
        """The results of the jobs at ``indices``, in that order (a progress bar while waiting)."""
        for i in indices:
            if not 0 <= i < len(self.jobs):
                raise IndexError(f"job index {i} is outside 0 … {len(self.jobs) - 1}")
        wait_all([self._futures[i] for i in indices if i in self._futures], desc)
        for i in indices:
            if i in self._results:
                continue
            if i in self._futures:
                self._results[i] = self._futures.pop(i).result()
            else:
                function, args = self.jobs[i]
                self._results[i] = on_threads(self.threads, function, *args)
        if self._pool is not None and not self._futures:
            self._pool.shutdown()
            self._pool = None
        return [self._results[i] for i in indices]
