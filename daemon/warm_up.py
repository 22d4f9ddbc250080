"""The daemon's start-up warm-up of the validation kernels (numba), judged by progress.

At start the daemon must have validation's kernels compiled before it reports ready: compiled
later, in the validation thread, a compile holds the GIL and the main loop for seconds
(daemon/motion.py :func:`warm_up_validation`). They are compiled in a child process, into numba's
cache, so the main loop keeps its heartbeat meanwhile; the main process then loads them.

- **Progress, not a fixed bound.** A cold compile takes about 25 s on an idle 2-core host and
  several minutes on a busy one. The child is waited for as long as it is alive and gains CPU time
  (it is compiling); it is given up on when it has gained none for :data:`STALL_S` (wedged), or at
  the hard cap ``[daemon].warm_up_limit_s`` (default :data:`DEFAULT_LIMIT_S`). Given up on, the
  daemon starts all the same and the first validation compiles (as without a warm-up). Every
  :data:`REPORT_S` a status line goes to the log and to systemd, with ``EXTEND_TIMEOUT_USEC`` so a
  start that is progressing is not killed by ``TimeoutStartSec``.
- **The child dies with the daemon** (:func:`tie_to_parent`): SIGKILL on the parent's death via
  prctl(PR_SET_PDEATHSIG) on Linux, and a thread that watches the parent's pid elsewhere. A daemon
  killed during start-up leaves no compiler running.
- **A warm cache needs no child** (:class:`CacheMarker`). After a warm-up the main process records
  what the kernels it loaded depend on: numba's and llvmlite's versions, Python's, the host CPU
  (name and features, as numba's cache keys on them), the ``NUMBA_*`` settings, the SHA-256, size
  and mtime of the source of every loaded robodyn module (numba's index keys on the last two), and
  the size and mtime of each kernel's numba cache files. The next start that finds all of it unchanged loads the kernels in the
  main process directly (about 1 s) instead of starting a child (an interpreter, the imports, the
  same load). Should the load compile anyway (numba's own cache-miss counters say so), the marker
  is removed and the next start warms up in a child again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from robodyn.robot.model import RobotModel

log = logging.getLogger("robodyn.daemon")

RATE_HZ = 1000.0  # any rate compiles the same kernels
DEFAULT_LIMIT_S = 1800.0  # the hard cap, [daemon].warm_up_limit_s
STALL_S = 120.0  # alive but no CPU time gained for this long: wedged
REPORT_S = 10.0  # a status line while waiting
EXTEND_S = 3 * REPORT_S  # how far each status line extends systemd's start time-out
PARENT_POLL_S = 0.5  # the fallback parent watch's period (no prctl)
MARKER_NAME = "robodyn-validation-kernels.json"


# --------------------------------------------------------------------------- dying with the parent


def die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux PR_SET_PDEATHSIG; the
    parent is the *thread* that started it, so start children from a thread that lives as long as
    the parent process). Also usable as ``preexec_fn``. False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL)) == 0
    except (OSError, AttributeError):
        return False


def tie_to_parent(parent_pid: int) -> None:
    """Make this process die when ``parent_pid`` (its parent) dies, however it dies: SIGKILL from
    the kernel (:func:`die_with_parent`), else a daemon thread that polls the parent's pid. If the
    parent is already gone (it died before this ran), exit at once."""
    tied = die_with_parent()
    if os.getppid() != parent_pid:  # the parent died before the tie was made
        os._exit(1)
    if not tied:
        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(PARENT_POLL_S)
            os._exit(1)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def warm_up_in_child(model: RobotModel, rate_hz: float, parent_pid: int) -> None:
    """:func:`warm_up_validation` in a child process tied to the daemon: numba writes what it
    compiled to its cache, so the main process loads the kernels instead of compiling them."""
    tie_to_parent(parent_pid)
    from .motion import warm_up_validation

    warm_up_validation(model, rate_hz)


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a process so far, from /proc (Linux); None where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


# --------------------------------------------------------------------------- the warm cache's marker


def _numba_dispatchers() -> list:
    """Every numba dispatcher of robodyn code in this process that has compiled or loaded a version
    and has a cache (one without compiles in every process: nothing to record). Found among all
    live objects, so a kernel held in a closure or a table counts as well as a module's."""
    import gc

    from numba.core.dispatcher import Dispatcher

    found = []
    for obj in gc.get_objects():
        # by the object's own type: isinstance() on a dead weak proxy among them raises ReferenceError
        if (issubclass(type(obj), Dispatcher) and obj.signatures and getattr(obj.stats, "cache_path", None)
                and str(getattr(obj.py_func, "__module__", "")).startswith("robodyn")):
            found.append(obj)
    return found


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _host() -> dict:
    import llvmlite
    import llvmlite.binding as llvm
    import numba

    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__, "python": sys.version,
            "cpu": llvm.get_host_cpu_name(), "cpu_features": llvm.get_host_cpu_features().flatten(),
            "numba_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("NUMBA_")}}


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _cache_files(dispatchers) -> dict:
    """Size and mtime of each dispatcher's numba index file and its data files; where numba's
    layout is not as expected, of every cache file in the dispatcher's cache folder."""
    paths = set()
    for d in dispatchers:
        try:
            index = Path(d._cache._cache_file._index_path)  # numba's own name for this function's index
            paths.add(index)
            paths.update(index.parent.glob(index.name[: -len(".nbi")] + ".*.nbc"))
        except AttributeError:
            paths.update(Path(d.stats.cache_path).glob("*.nb[ic]"))
    return {str(p): _stamp(p) for p in sorted(paths)}


def default_marker_dir() -> Path:
    """Beside numba's cache: NUMBA_CACHE_DIR when set, else this package's __pycache__."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    return Path(configured) if configured else Path(__file__).resolve().parent / "__pycache__"


class CacheMarker:
    """Whether numba's cache holds the validation kernels for ``model_key``, as this host would
    compile them from this source (see the module docstring)."""

    def __init__(self, model_key: str, folder: Path | None = None):
        self.model_key = model_key
        self.path = (folder or default_marker_dir()) / MARKER_NAME

    def _read(self) -> dict:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def is_warm(self) -> bool:
        entry = self._read().get(self.model_key)
        if not isinstance(entry, dict):
            return False
        try:
            if entry.get("host") != _host():
                return False
            # numba's index keys on each source's size and mtime: a touched file is a stale entry
            if any([_sha256(Path(p)), *_stamp(Path(p))] != list(rec) for p, rec in entry["sources"].items()):
                return False
            files = entry["cache_files"]
            return bool(files) and all(_stamp(Path(p)) == stamp for p, stamp in files.items())
        except (OSError, KeyError, TypeError, AttributeError):
            return False

    def record(self) -> bool:
        """After the kernels were loaded in this process: write the marker (atomically). False when
        there is nothing to record or the folder is not writable (the next start warms up again)."""
        dispatchers = _numba_dispatchers()
        if not dispatchers:
            return False
        sources = {}
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None) if name.startswith("robodyn") else None
            if file and file.endswith(".py"):
                path = Path(file).resolve()
                sources[str(path)] = [_sha256(path), *_stamp(path)]
        entry = {"host": _host(), "sources": sources,
                 "cache_files": _cache_files(dispatchers)}
        doc = self._read()
        doc[self.model_key] = entry
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(doc))
            os.replace(tmp, self.path)
            return True
        except OSError as exc:
            log.info("could not record the warm numba cache in %s: %s", self.path, exc)
            return False

    def forget(self) -> None:
        doc = self._read()
        if doc.pop(self.model_key, None) is not None:
            try:
                tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(doc))
                os.replace(tmp, self.path)
            except OSError:
                pass


def compiled_in_this_process() -> list[str]:
    """The robodyn kernels numba compiled here instead of loading them from its cache."""
    return sorted(f"{d.py_func.__module__}.{d.py_func.__qualname__}" for d in _numba_dispatchers()
                  if sum(d.stats.cache_misses.values()) > 0)


# --------------------------------------------------------------------------- the child, watched


class WarmUp:
    """The warm-up of one daemon start: a child (unless the cache is known warm), polled from the
    start-up loop with :meth:`poll`; :meth:`finish` loads the kernels in the main process."""

    def __init__(self, model: RobotModel, limit_s: float = DEFAULT_LIMIT_S, marker: CacheMarker | None = None,
                 clock=time.monotonic, cpu=cpu_seconds, status=None):
        self.model = model
        self.limit_s = float(limit_s)
        self.marker = marker if marker is not None else CacheMarker(f"{model.name}/{model.dof}")
        self.clock = clock
        self.cpu = cpu
        self.status = status or (lambda text: None)  # also hears each status line (systemd)
        self.child = None
        self.skipped = False
        self.outcome = ""  # "", "done", "failed", "stalled", "over the limit", "abandoned"

    def start(self) -> None:
        if self.marker.is_warm():
            self.skipped = True
            self.outcome = "done"
            log.info("validation kernels: numba's cache is warm for this source and host; no warm-up child")
            return
        child = multiprocessing.get_context("spawn").Process(
            target=warm_up_in_child, args=(self.model, RATE_HZ, os.getpid()), name="robodyn-warm-up", daemon=True)
        child.start()
        # the pid: an operator (or a test) can tell this child from the workers
        log.info("compiling the validation kernels in a child process, pid %d", child.pid)
        self.watch(child)

    def watch(self, child) -> None:
        """Judge ``child`` (a started process: is_alive, pid, exitcode, join, kill) from now on."""
        self.child = child
        now = self.clock()
        self.started = now
        self.progress_at = now
        self.last_cpu = None
        self.next_report = now + REPORT_S

    @property
    def running(self) -> bool:
        return self.child is not None and not self.outcome

    def poll(self) -> bool:
        """Judge the child once; True while it is still running (keep waiting)."""
        if not self.running:
            return False
        if not self.child.is_alive():
            self.child.join()
            self.outcome = "done" if self.child.exitcode == 0 else "failed"
            return False
        now = self.clock()
        used = self.cpu(self.child.pid)
        if used is None or self.last_cpu is None or used > self.last_cpu:
            self.progress_at = now  # unknown CPU time counts as progress: the hard cap still holds
        self.last_cpu = used
        waited = now - self.started
        if now - self.progress_at > STALL_S:
            self._give_up("stalled", f"no CPU time gained for {now - self.progress_at:.0f} s")
            return False
        if waited > self.limit_s:
            self._give_up("over the limit", f"still compiling after {waited:.0f} s ([daemon].warm_up_limit_s "
                                            f"= {self.limit_s:.0f})")
            return False
        if now >= self.next_report:
            self.next_report = now + REPORT_S
            cpu = "" if used is None else f", {used:.0f} s of CPU"
            line = (f"compiling the validation kernels in a child process ({waited:.0f} s{cpu}; "
                    f"limit {self.limit_s:.0f} s)")
            log.info(line)
            self.status(line)
        return True

    def _give_up(self, outcome: str, why: str) -> None:
        self.kill()
        self.outcome = outcome
        log.warning("gave up the validation kernels' warm-up (%s); the first validation compiles them", why)

    def kill(self, outcome: str | None = None) -> None:
        if self.child is not None and self.child.is_alive():
            self.child.kill()
            self.child.join(5.0)
            log.info("killed the warm-up child, pid %d", self.child.pid)
        if outcome is not None and not self.outcome:
            self.outcome = outcome

    def finish(self) -> None:
        """Load the kernels in this process once the child has compiled them (or the cache was warm),
        then keep the marker true: written after a child's compile, removed if the load compiled."""
        if self.outcome != "done":
            if self.outcome == "failed":
                log.warning("compiling the validation kernels in advance failed (exit code %s)", self.child.exitcode)
            return
        from .motion import warm_up_validation

        warm_up_validation(self.model, RATE_HZ)  # from numba's cache now
        compiled = compiled_in_this_process()
        if compiled:
            log.warning("numba compiled %d validation kernel(s) in the main process instead of loading them (%s); "
                        "the next start warms up in a child", len(compiled), ", ".join(compiled[:3]))
            self.marker.forget()
        elif not self.skipped:
            self.marker.record()
