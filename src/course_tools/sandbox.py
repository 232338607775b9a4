"""The sandbox a submission runs in, and the grader's end of the wire to it.

One submission = one :class:`Session`: a ``course_tools.runner`` process inside
bubblewrap (``bwrap``) with

- new PID, network, IPC, UTS (and, when not root, user) namespaces: it sees
  only its own processes and has no network; killing it kills everything it
  started, whatever it did with sessions, process groups or descriptors;
- a read-only view of the Python installation, the virtual environment and the
  course packages, a private ``/tmp`` of bounded size, and nothing else: no
  repository, no exercise masters, no autograder zip, no other submission;
- a non-root user: when the grader runs as root, a separate unprivileged uid
  per parallel job; otherwise uid 65534 in its own user namespace;
- memory capped for the submission as a whole and a process-count cap, through
  a cgroup (v2, or v1's memory and pids hierarchies) where one is writable; the
  per-process address-space cap ``RLIMIT_AS`` always.

Without cgroups the bound is ``max_processes × memory_mb``. The time limit is
the grader's: every wait on the sandbox has a deadline, and output is kept as a
bounded tail.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_tools import wire

__all__ = [
    "Isolation",
    "JudgeGroup",
    "Limits",
    "RemoteEnvironment",
    "RemoteObject",
    "SandboxStopped",
    "SandboxUnavailable",
    "Session",
    "isolation",
]

MISSING = object()
# When the grader is root, each submission runs as a uid of its own, drawn from this range:
# nothing a submission leaves with its uid (kernel keyrings, process counts) reaches another.
FIRST_UID = 200_000_000
UID_RANGE = 1 << 24


@dataclass(frozen=True)
class Limits:
    """What one submission may use."""

    timeout_s: float = 300.0  # seconds of the submission's own code (cells and calls)
    memory_mb: int = 4096  # for the submission as a whole (and per process)
    max_processes: int = 64  # tasks (processes and threads) at once
    tmp_mb: int = 512  # its private /tmp
    output_kb: int = 64  # the tail of its output that is kept
    startup_s: float = 60.0  # starting the sandbox and the runner


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start here; the message says why and how to fix it."""


class SandboxStopped(BaseException):
    """The submission's process ran out of time, died, or broke the protocol.

    A ``BaseException`` so that neither a test's ``except Exception`` nor
    otter's test runner can swallow it.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


# --------------------------------------------------------------------------
# cgroups
# --------------------------------------------------------------------------
CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path for a v1 controller, or for v2 with ``""``."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (controller == "" and controllers == "") or controller in controllers.split(","):
            return path
    return None


def _writable_dir(path: Path) -> bool:
    probe = path / f"course-probe-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


@dataclass(frozen=True)
class CgroupLayout:
    """Where this process may make child cgroups: one v2 folder, or one per v1 controller."""

    version: str  # "v2" or "v1"
    parents: dict[str, Path]  # controller → parent folder ("memory", "pids", optionally "cpu")


def _cgroup_layout() -> CgroupLayout | None:
    """The cgroups a submission can be capped with here, or None (rlimits only)."""
    v2_path = _own_cgroup("")
    for mount in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        if v2_path is None or not (mount / "cgroup.controllers").is_file():
            continue
        parent = mount / v2_path.lstrip("/")
        try:
            enabled = set((parent / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        if {"memory", "pids"} <= enabled and _writable_dir(parent):
            wanted = ("memory", "pids", "cpu")
            return CgroupLayout("v2", {c: parent for c in wanted if c in enabled})
    parents: dict[str, Path] = {}
    for controller in ("memory", "pids", "cpu"):
        path = _own_cgroup(controller)
        if path is None:
            continue
        folder = CGROUP_ROOT / controller / path.lstrip("/")
        if (folder / "cgroup.procs").is_file() and _writable_dir(folder):
            parents[controller] = folder
    if {"memory", "pids"} <= set(parents):
        return CgroupLayout("v1", parents)
    return None


class Cgroup:
    """One submission's cgroups: memory and process caps, an equal CPU share, and its members.

    Every submission gets the same CPU weight, so one that forks 64 busy
    processes slows the others no more than one busy process would.
    """

    prefix = "course-grade"

    def __init__(self, layout: CgroupLayout, limits: Limits) -> None:
        name = f"{self.prefix}-{uuid.uuid4().hex[:12]}"
        self.version = layout.version
        self.dirs = {controller: parent / name for controller, parent in layout.parents.items()}
        for directory in set(self.dirs.values()):
            directory.mkdir()
        memory = str(limits.memory_mb * 1024 * 1024)
        if self.version == "v2":
            (self.dirs["memory"] / "memory.max").write_text(memory)
            with contextlib.suppress(OSError):
                (self.dirs["memory"] / "memory.swap.max").write_text("0")
        else:
            (self.dirs["memory"] / "memory.limit_in_bytes").write_text(memory)
            with contextlib.suppress(OSError):  # only with swap accounting
                (self.dirs["memory"] / "memory.memsw.limit_in_bytes").write_text(memory)
        (self.dirs["pids"] / "pids.max").write_text(str(limits.max_processes))

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in sorted(set(self.dirs.values()))]

    def pids(self) -> list[int]:
        found: set[int] = set()
        for path in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found |= {int(p) for p in Path(path).read_text().split()}
        return sorted(found)

    def _memory_stat(self, name: str) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int((self.dirs["memory"] / name).read_text())
        return None

    def peak_memory_mb(self) -> float | None:
        """The most memory the submission held at once (processes, /tmp and caches)."""
        name = "memory.peak" if self.version == "v2" else "memory.max_usage_in_bytes"
        peak = self._memory_stat(name)
        return None if peak is None else peak / 2**20

    def oom_killed(self) -> bool:
        memory = self.dirs["memory"]
        shared = memory.parent.name.startswith(JudgeGroup.prefix)  # the cap it shares
        return oom_killed_in(memory) or (shared and oom_killed_in(memory.parent))

    def remove(self, wait_s: float = 5.0) -> bool:
        """Remove the cgroup once it is empty; False if something still runs in it (or it stays)."""
        deadline = time.monotonic() + wait_s
        while self.pids() and time.monotonic() < deadline:
            if self.version == "v2":
                with contextlib.suppress(OSError):
                    (self.dirs["pids"] / "cgroup.kill").write_text("1")
            time.sleep(0.02)
        empty = not self.pids()
        for directory in set(self.dirs.values()):
            try:
                directory.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                empty = False
        return empty


class JudgeGroup(Cgroup):
    """One memory cap for a submission and the grader's work for it.

    The judge (the process that runs a submission's tests and decodes what the
    submission sends back) moves into ``<group>/judge``, and the submission's own
    cgroup is made beside it (:attr:`layout`), so that what the submission makes
    the judge hold counts in the same ``memory_mb`` as the submission itself.
    """

    prefix = "course-judge"

    def __init__(self, layout: CgroupLayout, limits: Limits) -> None:
        super().__init__(layout, limits)
        self.judge = {c: d / "judge" for c, d in self.dirs.items()}
        try:
            (self.dirs["pids"] / "pids.max").write_text("max")  # the sandbox's own cap applies
            if self.version == "v2":
                enabled = " ".join(f"+{c}" for c in layout.parents)
                (self.dirs["memory"] / "cgroup.subtree_control").write_text(enabled)
            for directory in set(self.judge.values()):
                directory.mkdir()
            for directory in sorted(set(self.judge.values())):
                (directory / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:  # this machine lets us make cgroups but not move into them
            for directory in [*set(self.judge.values()), *set(self.dirs.values())]:
                with contextlib.suppress(OSError):
                    directory.rmdir()
            raise
        self.layout = CgroupLayout(self.version, dict(self.dirs))

    def cleanup_dirs(self) -> list[str]:
        """Its folders, children first, for whoever removes them once the judge is gone."""
        return [str(d) for d in sorted(set(self.judge.values()))] + [
            str(d) for d in sorted(set(self.dirs.values()))
        ]


def oom_killed_in(memory_dir: Path) -> bool:
    """Whether the memory cgroup at ``memory_dir`` (v1 or v2) has killed a process."""
    for events in ("memory.events", "memory.oom_control"):
        with contextlib.suppress(OSError, ValueError):
            for line in (memory_dir / events).read_text().splitlines():
                key, value = line.split()
                if key == "oom_kill" and int(value) > 0:
                    return True
    return False


# --------------------------------------------------------------------------
# seccomp: system calls a notebook never needs, refused inside the sandbox
# --------------------------------------------------------------------------
# Namespaces and mounts (a new user namespace would let it mount a tmpfs past the /tmp
# cap, and is the kernel's largest attack surface), kernel keyrings, tracing, BPF, perf
# and io_uring (its operations bypass the system-call filter). clone3 answers ENOSYS, so
# the C library falls back to clone, whose flags a filter can read; clone with a
# namespace flag is refused.
_SECCOMP_ARCHES = {
    # machine: (AUDIT_ARCH, clone, clone3, refused system calls)
    "x86_64": (0xC000003E, 56, 435, {
        "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
        "keyctl": 250, "add_key": 248, "request_key": 249, "ptrace": 101, "bpf": 321,
        "perf_event_open": 298, "userfaultfd": 323, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsmount": 432, "mount_setattr": 442,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    }),
    "aarch64": (0xC00000B7, 220, 435, {
        "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
        "keyctl": 219, "add_key": 217, "request_key": 218, "ptrace": 117, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsmount": 432, "mount_setattr": 442,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    }),
}  # fmt: skip
_CLONE_NAMESPACES = (
    0x7E020080  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
)
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_EPERM, _ENOSYS = 1, 38


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The classic-BPF seccomp filter for this CPU (``struct sock_filter`` array), or None."""
    import platform
    import struct

    arch = _SECCOMP_ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, clone, clone3, refused = arch
    ld, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    program: list[tuple[int, int, int, int]] = [
        (ld, 0, 0, 4),  # seccomp_data.arch
        (jeq, 1, 0, audit_arch),
        (ret, 0, 0, _RET_ERRNO | _EPERM),  # another ABI (x32, 32-bit): refuse
        (ld, 0, 0, 0),  # seccomp_data.nr
        (jge, 0, 1, 0x40000000),
        (ret, 0, 0, _RET_ERRNO | _EPERM),  # x32 system calls
    ]
    for number in sorted(refused.values()):
        program += [(jeq, 0, 1, number), (ret, 0, 0, _RET_ERRNO | _EPERM)]
    program += [
        (jeq, 0, 1, clone3),
        (ret, 0, 0, _RET_ERRNO | _ENOSYS),
        (jeq, 0, 3, clone),
        (ld, 0, 0, 16),  # low 32 bits of args[0]: clone's flags
        (jset, 0, 1, _CLONE_NAMESPACES),
        (ret, 0, 0, _RET_ERRNO | _EPERM),
        (ret, 0, 0, _RET_ALLOW),
    ]
    return b"".join(struct.pack("<HBBI", *instruction) for instruction in program)


@contextlib.contextmanager
def _seccomp_fd(program: bytes | None) -> Iterator[int | None]:
    """A readable file descriptor holding ``program`` (bwrap's ``--seccomp FD``)."""
    if program is None:
        yield None
        return
    fd = os.memfd_create("course-seccomp", 0)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# the isolation this machine offers
# --------------------------------------------------------------------------
BWRAP_FIX = (
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: "
    "`sudo dnf install bubblewrap`). Grading runs students' code; it refuses to do so "
    "outside the sandbox unless you pass --unsafe for a trusted local check."
)


def _python_dirs() -> list[Path]:
    """What the runner needs to see: the interpreter, the environment, the course packages."""
    import course_tools
    import course_utils

    dirs = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    dirs |= {Path(sys.base_exec_prefix)}
    for module in (course_tools, course_utils):
        dirs.add(Path(module.__file__).resolve().parent.parent)  # type: ignore[arg-type]
    if os.environ.get("JAVA_HOME"):
        dirs.add(Path(os.environ["JAVA_HOME"]))
    return sorted(d for d in dirs if d.is_dir() and not _under(d, Path("/usr")))


def _under(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True


@dataclass
class Isolation:
    """How sessions are started here: ``bwrap`` (with or without a cgroup) or ``unsafe``."""

    mode: str  # "bwrap" or "unsafe"
    cgroup: CgroupLayout | None
    bwrap: str | None
    root: bool
    visible: list[Path]

    @property
    def description(self) -> str:
        """What the CSV's ``sandbox`` column says."""
        if self.mode == "unsafe":
            parts = ["UNSAFE: no sandbox (--unsafe)"]
        else:
            parts = ["bwrap", "a uid per submission" if self.root else "userns uid 65534"]
            parts.append("seccomp" if seccomp_program() is not None else "no seccomp on this CPU")
        if self.cgroup is None:
            parts.append("rlimits only")
        else:
            parts.append(f"cgroup {self.cgroup.version} ({'+'.join(self.cgroup.parents)})")
        return ", ".join(parts)

    def shown(self) -> list[Path]:
        """Every folder the sandbox shows (read-only): the system's and the course's."""
        system = [Path("/usr"), Path("/etc")]
        system += [Path("/") / n for n in ("bin", "sbin", "lib", "lib32", "lib64", "libx32")]
        return [p for p in system if p.exists()] + list(self.visible)

    def check_secrets(self, secrets: list[Path]) -> None:
        """Refuse to grade when a secret (answers, submissions) lies inside a folder it shows."""
        if self.mode == "unsafe":
            return
        for secret in secrets:
            for folder in self.shown():
                if _under(secret, folder):
                    raise SandboxUnavailable(
                        f"{secret} lies inside {folder}, which the sandbox must show to student "
                        "code; move it elsewhere"
                    )

    def bwrap_command(
        self,
        uid: int,
        limits: Limits,
        seccomp_fd: int | None = None,
        hide: list[tuple[str, Path]] | None = None,
    ) -> list[str]:
        """The bwrap command line; ``hide`` lists folders and files to mount empty (the rules)."""
        assert self.bwrap is not None
        command = [self.bwrap, "--die-with-parent", "--new-session", "--clearenv"]
        if seccomp_fd is not None:
            command += ["--seccomp", str(seccomp_fd)]
        if self.root:
            # Root sets up the mounts, then the runner drops to its own uid (below).
            command += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
            command += ["--unshare-cgroup-try"]
        else:
            command += ["--unshare-all", "--uid", "65534", "--gid", "65534"]
        command += ["--ro-bind", "/usr", "/usr"]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            top = Path("/") / name
            if top.is_symlink():
                command += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                command += ["--ro-bind", str(top), str(top)]
        # No /proc: a student's code needs none, and its mountinfo would name the host's paths.
        command += ["--ro-bind", "/etc", "/etc", "--dev", "/dev"]
        command += ["--perms", "1777", "--size", str(limits.tmp_mb * 1024 * 1024)]
        command += ["--tmpfs", "/tmp", "--perms", "0777", "--dir", "/tmp/home"]
        made: set[Path] = {Path("/"), Path("/tmp"), Path("/usr")}
        for folder in self.visible:
            for parent in reversed(folder.parents):
                if parent not in made:
                    command += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
            command += ["--ro-bind", str(folder), str(folder)]
            made.add(folder)
        for folder in _foreign_site_packages():
            command += ["--perms", "0555", "--tmpfs", str(folder), "--remount-ro", str(folder)]
        for kind, path in hide or []:
            if kind == "dir":
                command += ["--perms", "0555", "--tmpfs", str(path), "--remount-ro", str(path)]
            else:
                command += ["--ro-bind", "/dev/null", str(path)]
        command += ["--chdir", "/tmp"]
        for key, value in _sandbox_env(limits).items():
            command += ["--setenv", key, value]
        if self.root:
            command += [
                "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
            ]  # fmt: skip
        return command


def _foreign_site_packages() -> list[Path]:
    """Package folders the sandbox would show but this environment does not use.

    The base interpreter's ``site-packages`` (bound because the interpreter is) and the
    system's ``dist-packages`` may hold second copies of what the rules hide (a scipy of
    the base Python, say): they are mounted empty. Folders on this process's
    ``sys.path`` (the virtual environment's own) stay.
    """
    ours = {Path(p).resolve() for p in sys.path if p and Path(p).exists()}
    found: set[Path] = set()
    for root in {
        Path(sys.base_prefix),
        Path(sys.base_exec_prefix),
        Path("/usr"),
        Path("/usr/local"),
    }:
        for pattern in ("lib/python3*/site-packages", "lib/python3*/dist-packages"):
            found |= {p for p in root.glob(pattern) if p.is_dir()}
    return sorted(p for p in found if p.resolve() not in ours and not p.is_symlink())


def _sandbox_env(limits: Limits) -> dict[str, str]:
    env = {
        "HOME": "/tmp/home",
        "TMPDIR": "/tmp",
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "TQDM_DISABLE": "1",
        "COURSE_DEVICE": "cpu",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    # OpenBLAS needs these on some processors (see the machine notes); JAVA_HOME for KoNLPy.
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "JAVA_HOME"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def isolation(unsafe: bool = False, limits: Limits | None = None) -> Isolation:
    """The strongest isolation this machine offers, checked by starting one sandbox.

    Raises :class:`SandboxUnavailable` (with the fix) when bubblewrap is missing or
    cannot create its namespaces, unless ``unsafe`` is set.
    """
    limits = limits or Limits()
    root = os.geteuid() == 0
    layout = _cgroup_layout()
    if unsafe:
        return Isolation("unsafe", layout, None, root, [])
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {BWRAP_FIX}")
    if root and not Path("/usr/bin/setpriv").is_file():
        raise SandboxUnavailable(
            "setpriv (util-linux) is missing: `sudo apt-get install util-linux`"
        )
    found = Isolation("bwrap", layout, bwrap, root, _python_dirs())
    program = seccomp_program()
    with _seccomp_fd(program) as fd:
        probe = [
            *found.bwrap_command(FIRST_UID, limits, fd),
            *(sys.executable, "-I", "-c", "import course_tools"),
        ]
        try:
            run = subprocess.run(
                probe,
                capture_output=True,
                text=True,
                timeout=limits.startup_s,
                pass_fds=() if fd is None else (fd,),
            )
        except subprocess.TimeoutExpired:
            raise SandboxUnavailable(
                "bwrap did not start a Python within the start-up limit"
            ) from None
    if run.returncode != 0:
        message = (run.stderr or run.stdout).strip().splitlines()[-1:] or ["no output"]
        hint = (
            "user namespaces may be disabled (Debian/Ubuntu: `sudo sysctl -w "
            "kernel.unprivileged_userns_clone=1`, or on Ubuntu 24.04 an AppArmor profile for "
            "bwrap), or run the grader as root"
        )
        raise SandboxUnavailable(f"bwrap could not start the sandbox ({message[0]}): {hint}")
    return found


# --------------------------------------------------------------------------
# a session: one submission's runner, and the wire to it
# --------------------------------------------------------------------------
# Joins the cgroup(s), asks to be killed when the grader that started it dies
# (PR_SET_PDEATHSIG; bwrap's --die-with-parent then takes the sandbox with it), and
# execs the sandbox: all in the child itself (preexec_fn is unsafe in a threaded grader).
_LAUNCH = (
    "import ctypes, json, os, signal, sys; spec = json.loads(sys.argv[1])\n"
    "for path in spec['procs']:\n"
    "    with open(path, 'w') as handle: handle.write(str(os.getpid()))\n"
    "try:\n"
    "    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))\n"
    "except (AttributeError, OSError):\n"
    "    pass\n"
    "if os.getppid() != spec['parent']:\n"
    "    sys.exit(1)  # the grader is already gone\n"
    "os.execv(spec['argv'][0], spec['argv'])\n"
)


class RemoteObject:
    """A student's object that stays in the sandbox; calls and attributes go over the wire."""

    __slots__ = ("_ref", "_session", "_type")

    def __init__(self, session: Session, ref: int, type_name: str) -> None:
        self._session, self._ref, self._type = session, ref, type_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.request("call", [list(args), kwargs], ref=self._ref)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._session.request("getattr", name, ref=self._ref)

    def __repr__(self) -> str:
        return f"<student {self._type}>"


class RemoteEnvironment:
    """The notebook's globals as otter's test runner reads them (``env.get(name)``)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def get(self, name: str, default: Any = None) -> Any:
        value = self._session.lookup(name)
        return default if value is MISSING else value

    def __getitem__(self, name: str) -> Any:
        value = self._session.lookup(name)
        if value is MISSING:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._session.lookup(name) is not MISSING


class Session:
    """One submission's sandboxed runner, with a time budget for everything it runs."""

    def __init__(
        self,
        how: Isolation,
        limits: Limits,
        rules: dict[str, list[str]] | None = None,
        hide: list[tuple[str, Path]] | None = None,
    ) -> None:
        """``rules``: ``{"hidden": [...]}`` for the runner; ``hide``: what
        bwrap mounts empty (:func:`course_tools.rules.hidden_paths` of the hidden names)."""
        self.how, self.limits = how, limits
        self.rules, self.hide = rules, hide or []
        self.uid = FIRST_UID + secrets.randbelow(UID_RANGE)
        self.remaining = float(limits.timeout_s)
        self.where = "start-up"
        self.output_bytes = 0
        self._tail = bytearray()
        # The grader's functions a test passed, by number; they die with their test.
        self._callbacks: dict[int, Callable[..., Any]] = {}
        self._next_callback = 0
        self._cgroup: Cgroup | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._dead: SandboxStopped | None = None

    # -- life cycle ----------------------------------------------------------
    def __enter__(self) -> Session:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _runner_argv(self) -> list[str]:
        argv = [sys.executable, "-I", "-m", "course_tools.runner"]
        argv += ["--memory-mb", str(self.limits.memory_mb)]
        # Without a pids cgroup, RLIMIT_NPROC stands in: per uid, so only where the uid is
        # the sandbox's own (a uid per job, or a user namespace).
        if self._cgroup is None and self.how.mode == "bwrap":
            argv += ["--max-processes", str(self.limits.max_processes)]
        if self.rules:
            argv += ["--rules", json.dumps(self.rules)]
        return argv

    def start(self) -> None:
        if self.how.cgroup is not None:
            self._cgroup = Cgroup(self.how.cgroup, self.limits)
        with _seccomp_fd(seccomp_program() if self.how.mode == "bwrap" else None) as fd:
            if self.how.mode == "bwrap":
                argv = self.how.bwrap_command(self.uid, self.limits, fd, self.hide)
                argv += self._runner_argv()
                cwd, env = "/", {"PATH": "/usr/bin:/bin"}
            else:
                self._scratch = tempfile.TemporaryDirectory(prefix="course-unsafe-")
                argv, cwd = self._runner_argv(), self._scratch.name
                env = {**_sandbox_env(self.limits), "HOME": cwd, "TMPDIR": cwd}
            spec = {
                "procs": self._cgroup.procs_files if self._cgroup else [],
                "argv": argv,
                "parent": os.getpid(),
            }
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-c", _LAUNCH, json.dumps(spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=() if fd is None else (fd,),
            )
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            assert stream is not None
            flags = fcntl.fcntl(stream.fileno(), fcntl.F_GETFL)
            fcntl.fcntl(stream.fileno(), fcntl.F_SETFL, flags | os.O_NONBLOCK)
        budget, self.remaining = self.remaining, self.limits.startup_s
        try:
            header, _ = self._receive()
            if header.get("op") != "ready":
                raise SandboxStopped("protocol", "the runner did not start")
        finally:
            self.remaining = budget

    def close(self) -> dict[str, Any]:
        """Kill everything the submission started; what became of it."""
        info: dict[str, Any] = {"oom": False, "left_running": False, "peak_memory_mb": None}
        process = self._process
        if process is not None:
            if process.poll() is None:
                if self.how.mode == "unsafe":
                    # The group leader is not reaped yet, so its pgid cannot be reused.
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(process.pid, signal.SIGKILL)
                process.kill()  # bwrap's PID namespace dies with it
            process.wait()
            info["returncode"] = process.returncode
            self._drain_output()
            for stream in (process.stdin, process.stdout, process.stderr):
                with contextlib.suppress(OSError):
                    stream.close()  # type: ignore[union-attr]
        if self._cgroup is not None:
            info["oom"] = self._cgroup.oom_killed()
            info["peak_memory_mb"] = self._cgroup.peak_memory_mb()
            info["left_running"] = not self._cgroup.remove()
        if self._scratch is not None:
            with contextlib.suppress(OSError):
                self._scratch.cleanup()
        return info

    # -- output --------------------------------------------------------------
    @property
    def cgroup_dirs(self) -> list[str]:
        """The submission's cgroup folders, for whoever cleans up if this process dies."""
        return [str(d) for d in set(self._cgroup.dirs.values())] if self._cgroup else []

    @property
    def output(self) -> str:
        """The last ``output_kb`` KiB the submission printed."""
        text = self._tail.decode("utf-8", errors="replace")
        if self.output_bytes > len(self._tail):
            text = f"[... {self.output_bytes - len(self._tail)} bytes left out ...]\n" + text
        return text

    def _drain_output(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        fd = self._process.stderr.fileno()
        limit = self.limits.output_kb * 1024
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except (BlockingIOError, OSError):
                return
            if not chunk:
                return
            self.output_bytes += len(chunk)
            self._tail += chunk
            if len(self._tail) > limit:
                del self._tail[:-limit]

    # -- the wire, with deadlines ---------------------------------------------
    def _stop(self, kind: str, detail: str) -> SandboxStopped:
        self._dead = SandboxStopped(kind, detail)
        return self._dead

    def _wait(self, fd: int, event: int, deadline: float) -> None:
        assert self._process is not None and self._process.stderr is not None
        poller = select.poll()
        poller.register(fd, event)
        poller.register(self._process.stderr.fileno(), select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                # Past the deadline: time out only if the sandbox has not answered. (The grader
                # itself may have been slow to look: that is not the submission's time.)
                if fd in dict(poller.poll(0)):
                    return
                raise self._stop("timeout", self.where)
            ready = dict(poller.poll(min(left, 1.0) * 1000))
            if self._process.stderr.fileno() in ready:
                self._drain_output()
            if fd in ready:
                return

    def _timed(self, action: Callable[[float], Any]) -> Any:
        if self._dead is not None:
            raise self._dead
        start = time.monotonic()
        try:
            return action(start + max(self.remaining, 0.0))
        finally:
            self.remaining -= time.monotonic() - start

    def _write(self, frame: bytes, deadline: float) -> None:
        assert self._process is not None and self._process.stdin is not None
        fd = self._process.stdin.fileno()
        view = memoryview(frame)
        while view:
            self._wait(fd, select.POLLOUT, deadline)
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                continue
            except (BrokenPipeError, OSError):
                raise self._died() from None
            view = view[written:]

    def _read_exactly(self, n: int, deadline: float) -> bytes:
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        parts, need = [], n
        while need:
            self._wait(fd, select.POLLIN, deadline)
            try:
                chunk = os.read(fd, min(need, 1 << 20))
            except BlockingIOError:
                continue
            if not chunk:
                raise self._died()
            parts.append(chunk)
            need -= len(chunk)
        return b"".join(parts)

    def _died(self) -> SandboxStopped:
        assert self._process is not None
        try:
            code = self._process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if self._cgroup is not None and self._cgroup.oom_killed():
            return self._stop("memory", self.where)
        if code is not None and code < 0:
            how = f"killed by signal {-code} ({signal.Signals(-code).name})"
        elif code is not None:
            how = f"exit status {code}"
        else:
            how = "its output closed"
        return self._stop("crashed", f"{self.where}: the process ended ({how})")

    def _receive(self) -> tuple[dict[str, Any], Any]:
        def read(deadline: float) -> tuple[Any, list[bytes]]:
            return wire.read_frame(lambda n: self._read_exactly(n, deadline))

        try:
            structure, blobs = self._timed(read)
            if not isinstance(structure, dict) or not isinstance(structure.get("op"), str):
                raise wire.WireError("a reply must be a dict with an 'op'")
            # Decoding what the submission sent is charged to it, like its own time.
            value = self._timed(lambda _: wire.decode(structure.get("v"), blobs, self._from_ref))
        except wire.WireError as error:
            raise self._stop("protocol", f"{self.where}: {error}") from None
        return structure, value

    def _send(self, op: str, value: Any = None, **fields: Any) -> None:
        structure, blobs = wire.encode(value, self._to_ref)  # our own values: errors are ours
        frame = wire.pack({"op": op, "v": structure, **fields}, blobs)
        self._timed(lambda deadline: self._write(frame, deadline))

    def _to_ref(self, obj: Any) -> dict[str, Any]:
        if isinstance(obj, RemoteObject) and obj._session is self:
            return {"$h": obj._ref}
        if callable(obj):
            number, self._next_callback = self._next_callback, self._next_callback + 1
            self._callbacks[number] = obj
            return {"$cb": number}
        raise wire.WireError(f"{type(obj).__name__} is not plain data and cannot be sent")

    def _from_ref(self, marker: dict[str, Any]) -> Any:
        ref = marker.get("$h")
        if not isinstance(ref, int):
            raise wire.WireError(f"unknown marker {sorted(marker)[:3]}")
        return RemoteObject(self, ref, str(marker.get("type", "object"))[:80])

    def request(self, op: str, value: Any = None, **fields: Any) -> Any:
        """Send a request; answer callbacks until its reply; return the reply's value."""
        self._send(op, value, **fields)
        while True:
            header, reply = self._receive()
            kind = header["op"]
            if kind == "callback":
                self._answer_callback(header, reply)
                continue
            if kind == "raise":
                raise wire.exception_from(header, StudentError)
            if kind == "missing":
                return MISSING
            if kind == "done":
                error = header.get("error")
                return None if error is None else str(error)[:300]
            if kind == "value":
                return reply
            raise self._stop("protocol", f"{self.where}: unexpected reply {kind!r}")

    def end_test(self) -> None:
        """A question's tests are done: the functions they passed can no longer be called."""
        self._callbacks.clear()

    def _answer_callback(self, header: dict[str, Any], payload: Any) -> None:
        number = header.get("cb")
        if not isinstance(number, int) or number not in self._callbacks:
            # A test's function kept past its test (or a number never given): refused.
            message = "채점기의 함수는 그 함수를 건넨 테스트가 끝나면 더 부를 수 없습니다"
            self._send("raise", None, type="RuntimeError", message=message)
            return
        try:
            args, kwargs = payload
            result = self._callbacks[number](*args, **dict(kwargs))
        except SandboxStopped:
            raise
        except Exception as error:  # the test's own function raised: tell the student's code
            self._send("raise", None, type=type(error).__name__, message=str(error)[:2000])
            return
        self._send("value", result)

    # -- what the grader asks --------------------------------------------------
    def run_cell(self, source: str) -> str | None:
        """Run one cell; its error as ``"Type: message"``, or None."""
        return self.request("run", source)

    def lookup(self, name: str) -> Any:
        return self.request("lookup", name)


class StudentError(Exception):
    """An exception of the student's code whose type is not a builtin one."""
