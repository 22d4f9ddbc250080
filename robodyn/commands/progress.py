"""Progress bars for long steps (tqdm, on stderr).

A bar shows only when a person is watching: stdout and stderr are both terminals and ``--json``
is off. Piped, redirected, under a service manager or with ``--json``, a command prints nothing
but its result on stdout; a step that can run for minutes (excitation design) still says on
stderr what it is doing every few seconds (:func:`lines`), since a silent minute looks like a hang.
The library functions report progress through callbacks; the adapters here turn those callbacks
into bar updates:

- :func:`stages`: ``progress(stage, fraction)`` of identification, model selection, scale-out, a
  run or a job waited for (without a bar: a line on stderr every 10 s);
- :func:`iterations`: the optimizers' per-iteration ``callback(Progress)`` (excitation design,
  metaheuristic identification), with the best fitness so far;
- :class:`Heartbeat`: a step that reports nothing while it runs (reading a large ROS 2 bag) still
  says on stderr what it is doing every :data:`QUIET_LINE_EVERY_S` seconds.
"""

from __future__ import annotations

import sys
import threading
import time


def wanted(args=None) -> bool:
    """A bar is drawn only for a person at a terminal, and never with --json."""
    if args is not None and getattr(args, "json", False):
        return False
    try:
        return sys.stdout.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


QUIET_LINE_EVERY_S = 10.0  # without a bar, a long step says where it is this often on stderr


class _NoBar:
    """Stands in for a bar when none is drawn (or tqdm is missing): every call does nothing, but
    :func:`stages` still writes a line on stderr every :data:`QUIET_LINE_EVERY_S` seconds."""

    n = 0
    total = None

    def __init__(self, desc: str = ""):
        self.desc = desc

    def update(self, n=1):
        self.n += n

    def refresh(self):
        pass

    def set_description_str(self, text, refresh=True):
        pass

    def set_postfix_str(self, text, refresh=True):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def drawn(b) -> bool:
    """Whether ``b`` is a bar on the terminal (not the stand-in of a piped or --json command)."""
    return not isinstance(b, _NoBar)


def none():
    """A bar that is never drawn (for a step that has nothing to count)."""
    return _NoBar()


def bar(args=None, *, total=None, desc: str = "", unit: str = "it"):
    """A tqdm bar on stderr when :func:`wanted`, else an object that ignores every call. Use it as
    a context manager so the line is cleared when the step ends."""
    if not wanted(args):
        return _NoBar(desc)
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a core dependency; a broken install still runs
        return _NoBar(desc)
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)


def lines(args, b, name: str):
    """``progress(text)`` of a long library step: the text becomes the bar's postfix when a bar is
    drawn, else one line ``NAME: TEXT`` on stderr (also with ``--json``: stdout keeps the JSON)."""

    def progress(text: str) -> None:
        if isinstance(b, _NoBar):
            print(f"{name}: {text}", file=sys.stderr, flush=True)
        else:
            b.set_postfix_str(text, refresh=True)

    return progress


def stages(b, clock=None, beat: "Heartbeat | None" = None):
    """``progress(stage, fraction)`` -> a percentage bar whose label is the current stage. Without
    a bar (piped, a service, --json), one line ``DESC: STAGE NN%`` on stderr once the step has run
    :data:`QUIET_LINE_EVERY_S` seconds, and again every as many: a wait of minutes never looks
    like a hang, and a short step prints nothing. With a :class:`Heartbeat` ``beat`` (a step whose
    stages may each run for minutes without a report), the stage becomes the heartbeat's text and
    the heartbeat writes the lines, on time whether or not a report came."""
    clock = clock or time.monotonic
    last = [clock()]

    def progress(stage: str, fraction: float) -> None:
        b.n = int(round(100 * max(0.0, min(1.0, float(fraction)))))
        if isinstance(b, _NoBar) and beat is not None:
            beat.text = f"{stage} {b.n}%"
            return
        if isinstance(b, _NoBar):
            now = clock()
            if now - last[0] >= QUIET_LINE_EVERY_S:
                last[0] = now
                print(f"{b.desc or 'progress'}: {stage} {b.n}%", file=sys.stderr, flush=True)
            return
        b.set_description_str(stage, refresh=False)
        b.refresh()

    return progress


def iterations(b, per_run: int | None = None, fitness_label: str = "best"):
    """An optimizer callback: the bar's position is the iteration (over all starts when ``per_run``
    is given), its postfix the best fitness so far. Never stops the run (returns None)."""

    def callback(p) -> None:
        b.n = int(p.iteration + (p.run * per_run if per_run else 0))
        b.set_postfix_str(f"{fitness_label} {p.best_fitness:.6g}", refresh=False)
        b.refresh()

    return callback


class Heartbeat:
    """While the ``with`` block runs, one line ``NAME: TEXT (N s)`` on stderr every ``every`` seconds
    from a daemon thread, bar or not: a step with no progress callback (reading a recording or a bag,
    which took minutes for a large bag) never looks like a hang, and a short one prints nothing.
    ``text`` may be changed inside the block (the file being read); ``lines`` counts what was printed."""

    def __init__(self, name: str, text: str = "", every: float = QUIET_LINE_EVERY_S, clock=time.monotonic):
        self.name, self.text, self.every, self.clock = name, text, every, clock
        self.lines = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="robodyn-heartbeat", daemon=True)

    def _wait(self) -> bool:
        """True when the block has ended (stop), False when ``every`` seconds have passed."""
        return self._stop.wait(self.every)

    def _run(self) -> None:
        while not self._wait():
            self.lines += 1
            print(f"{self.name}: {self.text} ({self.clock() - self._t0:.0f} s)", file=sys.stderr, flush=True)

    def __enter__(self):
        self._t0 = self.clock()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False
