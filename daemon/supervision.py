"""Supervision of the daemon's three worker processes (driver, recorder, publisher) and the main
loop. :class:`Workers`: spawning them, their health (a dead or a hung worker is restarted; losing
the driver or the recorder disarms and ends the run in progress) and the messages they send.
:class:`MainLoop`: start-up (the workers and the validation kernels' warm-up) and the loop that
polls the control socket and the workers' pipes and hands each thing it reads to its owner.

Both are built by :class:`robodyn.daemon.server.Daemon`, which owns the sockets, and handed what
they need: what a worker says about a run goes to the run's owner (runs.Runs), a fault disarms
(admission.RunAdmission), a request goes to the dispatcher (dispatch.Dispatcher).
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import time
from dataclasses import dataclass, field

from . import protocol as P
from .priority import realtime_python_threads, set_main_realtime
from .supervisor_watch import SUPERVISOR_ALIVE, SUPERVISOR_ALIVE_S
from .schedstat import process_run_delay_s
from .warm_up import WarmUp

log = logging.getLogger("robodyn.daemon")

STARTUP_TIMEOUT_S = 60.0
HEALTH_CHECK_S = 0.2
SHUTDOWN_TIMEOUT_S = 10.0
# a worker that is alive but silent this long is wedged: killed and restarted like a dead one
# (telemetry comes every 0.1 s, recorder statistics every 0.5 s). The time it spent runnable but
# waiting for a CPU does not count: on an overloaded host a starved worker is not a wedged one,
# and killing it (a loaded CI host: a recorder opening a file, silent 5.2 s) lost the run
HANG_TIMEOUT_S = 5.0
# silence shorter than this is not looked into (no read of the worker's scheduler statistics)
SILENCE_NOTICED_S = 1.0
# "supervisor alive" messages sent to the driver since it last sent anything: beyond this many
# (5 s of them) none is sent until it speaks, so that a driver that reads nothing for long (a
# starved one is not killed) never has so many queued that a run's start or an abort, which wait
# for room in the pipe, would wait
SUPERVISOR_ALIVE_UNANSWERED_MAX = int(5.0 / SUPERVISOR_ALIVE_S)
# each warm-up status line extends systemd's start time-out (TimeoutStartSec) by this much: a start
# that is still compiling is progressing; one that stops reporting is not
EXTEND_START_S = 30.0


class StartAbandoned(Exception):
    """SIGTERM or SIGINT came during start-up: stop starting, leave nothing running."""


@dataclass
class Component:
    """A worker process and what we last heard from it."""

    name: str
    target: object
    process: object = None
    ready: bool = False
    pid: int | None = None
    last: dict = field(default_factory=dict)  # last telemetry / stats
    last_time: float = 0.0
    restarts: int = 0
    exit_code: int | None = None
    # (last_time, run delay when its silence was first looked at): the start of the starvation
    # that the present silence is excused by (daemon/schedstat.py)
    silence_base: tuple | None = None
    starvation_logged: bool = False

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()


def wedged(comp: Component, now: float) -> bool:
    """Silent for HANG_TIMEOUT_S of its own time: wall time since its last message, less the
    time it waited runnable for a CPU meanwhile (counted from when the silence was first looked
    at, so a little starvation before that counts against it). Without scheduler statistics,
    wall time alone."""
    silence = now - comp.last_time
    if silence <= SILENCE_NOTICED_S:
        comp.silence_base, comp.starvation_logged = None, False
        return False
    delay = process_run_delay_s(comp.process.pid)
    if comp.silence_base is None or comp.silence_base[0] != comp.last_time:
        comp.silence_base, comp.starvation_logged = (comp.last_time, delay), False
    base = comp.silence_base[1]
    starved = delay - base if delay is not None and base is not None else 0.0
    if silence - starved > HANG_TIMEOUT_S:
        log.error("%s process %d silent for %.1f s (%.1f s of it waiting for a CPU); killing it", comp.name,
                  comp.pid, silence, starved, extra={"fields": {"component": comp.name, "event": "hang",
                                                                "silent_s": round(silence, 2),
                                                                "starved_s": round(starved, 2)}})
        return True
    if silence > HANG_TIMEOUT_S and not comp.starvation_logged:
        comp.starvation_logged = True
        log.warning("%s process %d silent for %.1f s, %.1f s of it waiting for a CPU: the host is "
                    "overloaded; not killed", comp.name, comp.pid, silence, starved,
                    extra={"fields": {"component": comp.name, "event": "starved"}})
    return False


class Workers:
    """The three worker processes and their pipes: spawned, heard, watched, restarted, stopped.
    Built with what they need: ``cfg`` (handed to each worker) and the ``endpoints`` they connect
    to, the model (a driver's joint count is checked against it), the worker handles and their
    pipes, the beacon the driver watches (supervisor_watch.AliveBeacon), and the parts a worker's
    word goes to: the robot's newest state (status.RobotState), the runs (runs.Runs: a run's
    events, a worker lost in a run), the admission (admission.RunAdmission: a fault disarms), the
    recordings' index and ``changed()`` (cached reads are out of date)."""

    def __init__(self, zmq, cfg, model, endpoints: dict, driver: Component, recorder: Component,
                 publisher: Component, driver_pipe, recorder_pipe, publisher_pipe, alive_beacon, robot, runs,
                 admission, recording_index, *, changed):
        self.zmq, self.cfg, self.model, self.endpoints = zmq, cfg, model, endpoints
        self.driver, self.recorder, self.publisher = driver, recorder, publisher
        self.driver_pipe, self.recorder_pipe, self.publisher_pipe = driver_pipe, recorder_pipe, publisher_pipe
        self.alive_beacon, self.robot, self.runs, self.admission = alive_beacon, robot, runs, admission
        self.recording_index, self.changed = recording_index, changed
        self.orphaned_recordings: list[str] = []  # cut by a recorder death: its successor repairs them
        self.supervisor_alive_unanswered = 0  # see SUPERVISOR_ALIVE_UNANSWERED_MAX

    def tell_driver_alive(self) -> None:
        """The driver stops a moving robot on its own when the main loop falls silent (rtloop.py
        SupervisorWatch); never blocks: a message that finds no room is not sent. The beacon in
        shared memory is the word that counts on a loaded host (supervisor_watch.AliveBeacon)."""
        self.alive_beacon.bump()
        if not self.driver.ready or self.supervisor_alive_unanswered >= SUPERVISOR_ALIVE_UNANSWERED_MAX:
            return
        try:
            self.driver_pipe.send(SUPERVISOR_ALIVE, self.zmq.NOBLOCK)
        except self.zmq.Again:
            return
        self.supervisor_alive_unanswered += 1

    def spawn(self, comp: Component) -> None:
        ctx = multiprocessing.get_context("spawn")
        endpoints = dict(self.endpoints)
        if comp is self.recorder:  # files of runs whose recorder died: repaired at once on start
            endpoints["repair_now"] = list(self.orphaned_recordings)
        comp.process = ctx.Process(target=comp.target, args=(self.cfg.to_dict(), endpoints),
                                   name=f"robodyn-{comp.name}", daemon=False)
        comp.ready = False
        comp.process.start()
        comp.pid = comp.process.pid
        log.info("started %s process pid %d", comp.name, comp.pid)

    def spawn_all(self) -> None:
        self.spawn(self.driver)
        self.spawn(self.recorder)
        self.spawn(self.publisher)

    def all_ready(self) -> bool:
        return self.driver.ready and self.recorder.ready and self.publisher.ready

    def check_started(self) -> None:
        """Raises RuntimeError for a worker that exited before it reported ready."""
        for comp in (self.driver, self.recorder, self.publisher):
            if comp.process is not None and not comp.process.is_alive() and not comp.ready:
                reason = comp.last.get("fatal") or f"exit code {comp.process.exitcode}"
                raise RuntimeError(f"{comp.name} failed to start: {reason}")

    def pipes(self) -> tuple:
        return self.driver_pipe, self.recorder_pipe, self.publisher_pipe

    def receive(self, sock) -> bool:
        """One message from ``sock`` to its handler, if ``sock`` is a worker's pipe (False if not)."""
        if sock is self.driver_pipe:
            self.on_driver(P.unpackb(sock.recv()))
        elif sock is self.recorder_pipe:
            self.on_recorder(P.unpackb(sock.recv()))
        elif sock is self.publisher_pipe:
            self.on_publisher(P.unpackb(sock.recv()))
        else:
            return False
        return True

    def drain(self, sock) -> bool:
        """Every message waiting on ``sock`` to its handler, if ``sock`` is a worker's pipe (False
        if not)."""
        if sock is self.driver_pipe:
            while self.driver_pipe.poll(0):
                self.on_driver(P.unpackb(self.driver_pipe.recv()))
        elif sock is self.recorder_pipe:
            while self.recorder_pipe.poll(0):
                self.on_recorder(P.unpackb(self.recorder_pipe.recv()))
        elif sock is self.publisher_pipe:
            while self.publisher_pipe.poll(0):
                self.on_publisher(P.unpackb(self.publisher_pipe.recv()))
        else:
            return False
        return True

    def drain_driver(self) -> None:
        """Everything the driver sent so far (ZMQ_EVENTS: no poller made per call; this runs
        before every request that is not a stop)."""
        pipe, pollin = self.driver_pipe, self.zmq.POLLIN
        while pipe.getsockopt(self.zmq.EVENTS) & pollin:
            self.on_driver(P.unpackb(pipe.recv()))

    def drain_pipes(self) -> None:
        self.drain_driver()
        while self.recorder_pipe.poll(0):
            self.on_recorder(P.unpackb(self.recorder_pipe.recv()))
        while self.publisher_pipe.poll(0):
            self.on_publisher(P.unpackb(self.publisher_pipe.recv()))

    def check_health(self, restart: bool) -> None:
        """A dead or wedged worker: its run ended, the daemon disarmed (driver, recorder), and
        restarted unless ``restart`` is False (the daemon is stopping)."""
        # judge silence only on what is really unread: a slow request handler must not make a
        # healthy worker look hung
        self.drain_pipes()
        now = time.monotonic()
        for comp in (self.driver, self.recorder, self.publisher):
            if comp.process is None:
                continue
            if comp.process.is_alive():
                if comp.ready and comp.last_time and wedged(comp, now):
                    # alive, silent and not for want of a CPU: wedged. SIGKILL, then the death path
                    # below restarts it
                    comp.process.kill()
                    comp.process.join(2.0)
                else:
                    continue
            if comp.process.is_alive():
                continue
            comp.exit_code = comp.process.exitcode
            self.changed()
            log.error("%s process %s died (exit code %s)", comp.name, comp.pid, comp.exit_code,
                      extra={"fields": {"component": comp.name, "event": "died", "exit_code": comp.exit_code}})
            comp.process = None
            comp.ready = False
            comp.last_time = 0.0
            if comp is self.publisher:  # clients lose their stream for a moment; the robot nothing
                if restart:
                    comp.restarts += 1
                    self.spawn(comp)
                continue
            self.admission.disarm(f"{comp.name} process died (exit code {comp.exit_code})")
            if comp is self.recorder:
                cut = self.runs.on_recorder_lost(comp.exit_code)
                if cut is not None:  # its successor repairs the file at once
                    self.orphaned_recordings = (self.orphaned_recordings + [cut])[-100:]
            else:
                self.runs.on_driver_lost(comp.exit_code, int(self.driver.last.get("seq", 0)))
            if restart:
                comp.restarts += 1
                self.spawn(comp)

    def stop(self) -> None:
        """Each worker told to shut down, waited for, and terminated (killed, if it never reported
        ready) when it does not stop."""
        for comp, pipe in ((self.driver, self.driver_pipe), (self.recorder, self.recorder_pipe),
                           (self.publisher, self.publisher_pipe)):
            if comp.alive:
                try:
                    pipe.send(P.packb({"type": "shutdown"}), self.zmq.NOBLOCK)
                except self.zmq.Again:
                    # a worker still in its start-up (importing, compiling, connecting) has not
                    # connected its pipe yet, and a blocking send waits until it does: minutes on a
                    # loaded host, for good if it hangs. It has no run; it is terminated below
                    pass
        for comp in (self.driver, self.recorder, self.publisher):
            if comp.process is not None:
                comp.process.join(5.0)
                if comp.process.is_alive():
                    log.warning("%s did not stop in 5 s; terminating", comp.name)
                    comp.process.terminate()
                    comp.process.join(2.0)
                if comp.process.is_alive() and not comp.ready:
                    # never reported ready, so no run and no open recording: nothing is lost, while
                    # a child left alive would hold this process at exit (multiprocessing joins it)
                    log.warning("%s, still in its start-up, did not stop; killing it", comp.name)
                    comp.process.kill()
                    comp.process.join(2.0)

    # ----------------------------------------------------------------- worker messages

    def on_driver(self, msg: dict) -> None:
        self.supervisor_alive_unanswered = 0
        kind = msg.get("type")
        if kind != "telemetry":  # an event: cached reads are out of date
            self.changed()
        if kind == "telemetry":
            self.driver.last = msg
            self.driver.last_time = time.monotonic()
            self.runs.on_progress(msg["progress"])
        elif kind == "stop_served":
            self.runs.on_driver_stop(msg)
        elif kind == "ready":
            self.driver.ready = True
            self.driver.pid = msg["pid"]
            self.runs.on_driver_ready()
            self.robot.on_ready(msg)
            description = msg["description"]
            if description["joint_names"] and len(description["joint_names"]) != self.model.dof:
                log.error("driver reports %d joints, model %s has %d", len(description["joint_names"]),
                          self.model.name, self.model.dof)
            log.info("driver ready: %s %s at %g Hz (%s)", description["driver"], description["robot"],
                     description["rate_hz"], msg.get("scheduler"))
        elif kind == "run_event":
            self.runs.on_run_event(msg)
        elif kind in ("fatal", "driver_error"):
            self.driver.last = dict(self.driver.last, fatal=msg.get("message"))
            log.error("driver: %s", msg.get("message"), extra={"fields": {"component": "driver", "event": kind}})
            self.admission.disarm(f"driver error: {msg.get('message')}")

    def on_recorder(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind != "stats":  # an event: cached reads are out of date
            self.changed()
        if kind == "stats":
            self.recorder.last = msg
            self.recorder.last_time = time.monotonic()
        elif kind == "ready":
            self.recorder.ready = True
            self.recorder.pid = msg["pid"]
            for path in msg.get("repaired", []):
                log.warning("finalized an unfinished recording left by a crash: %s", path,
                            extra={"fields": {"event": "recording_repaired", "component": "recorder"}})
        elif kind == "indexed":  # a file repaired by the recorder: its listing entry
            self.recording_index.put(msg["row"])
        elif kind in ("opened", "open_failed", "closed", "close_failed", "write_failed"):
            if kind == "closed" and msg.get("written"):
                # the closed file's bytes count for the next run's disk estimate (admission.py)
                self.recorder.last = dict(self.recorder.last,
                                          throughput=dict(self.recorder.last.get("throughput") or {}, **msg["written"]))
            self.runs.on_recorder(msg)  # the run's recording: opened (the run starts), closed, failed

    def on_publisher(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind != "stats":  # an event: cached reads are out of date
            self.changed()
        if kind == "stats":
            self.publisher.last = msg
            self.publisher.last_time = time.monotonic()
        elif kind == "ready":
            self.publisher.ready = True
            self.publisher.pid = msg["pid"]
        elif kind == "fatal":
            self.publisher.last = dict(self.publisher.last, fatal=msg.get("message"))
            log.error("publisher: %s", msg.get("message"), extra={"fields": {"component": "publisher",
                                                                            "event": "fatal"}})


class MainLoop:
    """The main process's loop. It polls the control socket, the workers' pipes and the CurveZMQ
    handlers' sockets and hands what it reads to the part that owns it: requests to the
    dispatcher (dispatch.Dispatcher), a worker's messages to the workers (:class:`Workers`), a
    finished limit check to the admission (admission.RunAdmission), finished heavy reads to
    heavy.HeavyReads; it watches the workers' health, tells the driver it is alive and sends the
    heartbeats to systemd (``notifier``). It keeps no run state: on a stop (:meth:`request_shutdown`)
    it withdraws a pending submission and aborts the run in progress (runs.Runs) and ends when
    no run is left. ``status_line()``: the daemon's one-line state for systemd."""

    def __init__(self, zmq, router, zap, handshakes, workers: Workers, dispatcher, admission, runs, heavy_reads,
                 notifier, dropped, *, changed, model, warm_up_limit_s: float, main_rt_priority: int, status_line):
        self.zmq, self.router, self.zap, self.handshakes = zmq, router, zap, handshakes
        self.workers, self.dispatcher, self.admission, self.runs = workers, dispatcher, admission, runs
        self.heavy_reads, self.notifier, self.dropped, self.changed = heavy_reads, notifier, dropped, changed
        self.model, self.warm_up_limit_s = model, warm_up_limit_s
        self.main_rt_priority, self.status_line = main_rt_priority, status_line
        self.running = True
        self.gc_frozen = 0  # objects of the start-up moved out of the collector's reach (serve_forever)

    def request_shutdown(self, *_args) -> None:
        self.running = False

    def start(self) -> None:
        """Spawn the workers and wait until both report ready (or one reports a fatal error), and the
        validation kernels are compiled (daemon/warm_up.py). Raises StartAbandoned on SIGTERM/SIGINT."""
        workers = self.workers
        workers.spawn_all()
        # validation's numba kernels are compiled in a child (into numba's cache) while the workers
        # start; compiled in this process they would hold the GIL, and so this loop, for seconds
        warm = WarmUp(self.model, self.warm_up_limit_s,
                      status=lambda line: self.notifier.send(f"EXTEND_TIMEOUT_USEC={int(EXTEND_START_S * 1e6)}",
                                                             f"STATUS={line}"))
        warm.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        poller = self._poller()
        try:
            while True:
                workers_ready = workers.all_ready()
                if not warm.poll() and workers_ready:
                    break
                if not self.running:
                    raise StartAbandoned("start-up abandoned during the validation kernels' warm-up: asked to stop"
                                         if warm.running else "start-up abandoned: asked to stop")
                if not workers_ready and time.monotonic() > deadline:
                    raise RuntimeError("driver or recorder did not start within "
                                       f"{STARTUP_TIMEOUT_S:.0f} s")
                self.notifier.heartbeat()  # a slow robot connection is not a wedged daemon
                for sock, _ in poller.poll(100):
                    if workers.receive(sock):
                        continue
                    if sock is getattr(self.zap, "socket", None):
                        self.zap.serve_pending()
                workers.check_started()
        except BaseException:
            warm.kill("abandoned")
            raise
        if warm.outcome == "done":
            warm.finish()  # loads the kernels from numba's cache
            # the workers kept sending meanwhile: read it all, or the first `arm` would find the
            # driver's telemetry older than TELEMETRY_STALE_S (seen on a loaded host) and refuse
            workers.drain_pipes()
        else:  # validation still works; its first call compiles in the validation thread
            warm.finish()

    def _poller(self):
        poller = self.zmq.Poller()
        poller.register(self.router, self.zmq.POLLIN)
        for pipe in self.workers.pipes():
            poller.register(pipe, self.zmq.POLLIN)
        if self.zap is not None:
            poller.register(self.zap.socket, self.zmq.POLLIN)
            poller.register(self.handshakes.socket, self.zmq.POLLIN)
        return poller

    def serve_forever(self) -> None:
        """Serve until :meth:`request_shutdown` and then until no run is left (or
        SHUTDOWN_TIMEOUT_S); the daemon closes its sockets after (server.Daemon.close)."""
        poller = self._poller()
        dispatcher, workers = self.dispatcher, self.workers
        next_health = next_alive = time.monotonic()
        shutdown_deadline = None
        # everything made at start-up (the model, numba's and the libraries' objects, the recording
        # index, the job rows) is kept for good: moved out of the collector's generations, so that a
        # full collection that falls inside a request scans only what was made since (one took 149
        # ms under the observer flood before, work a stop would have waited behind)
        dispatcher.warm_rows()
        gc.collect()
        gc.freeze()
        self.gc_frozen = gc.get_freeze_count()  # walks the list: counted once, here
        if self.main_rt_priority:  # just under the driver from now on (daemon/priority.py), with the
            # Python threads alive now (the jobs' supervisor): they hold the GIL now and then
            set_main_realtime(self.main_rt_priority)
            realtime_python_threads(self.main_rt_priority)
        self.notifier.ready(self.status_line())
        while True:
            # when a stop command came in, for its latency (dispatch.py): the last moment the control
            # queue was seen empty. A request that woke a poll on an empty queue came in during the
            # poll: its wait is counted from the poll's start, with the CPU and run-queue clocks read
            # there, so the delay between its arrival and this thread running again (the host's
            # scheduler) is in it, and the poll's sleep before it is told apart (dispatch.py)
            poll_start, poll_cpu, poll_delay = time.monotonic(), time.thread_time(), dispatcher.run_delay()
            empty_before = not dispatcher.waiting and not dispatcher.control_readable()
            ready = poller.poll(0 if dispatcher.waiting else 50)
            dispatcher.count_round()
            if not any(sock is self.router for sock, _ in ready):
                dispatcher.control_empty(time.monotonic())
            elif empty_before:
                dispatcher.control_empty(poll_start, poll_cpu, poll_delay, in_poll=True)
            if dispatcher.waiting and not any(sock is self.router for sock, _ in ready):
                dispatcher.serve(workers.drain_driver)  # the rest of the last round's requests
            for sock, _ in ready:
                if sock is self.router:
                    dispatcher.serve(workers.drain_driver)
                elif workers.drain(sock):
                    pass
                elif self.zap is not None and sock is self.zap.socket:
                    self.zap.serve_pending()
                    self.changed()  # `status.security` counts them
                elif self.handshakes is not None and sock is self.handshakes.socket:
                    self.handshakes.serve_pending()
                    self.changed()
            if self.admission.checked():
                workers.drain_driver()  # it compares the robot's newest state with the validated one
                self.admission.complete_submit()
            dispatcher.complete_large()  # large requests their threads have decoded (dispatch.py)
            self.heavy_reads.complete()
            now = time.monotonic()
            if now >= next_health:
                next_health = now + HEALTH_CHECK_S
                workers.check_health(restart=self.running)
                self.dropped.flush()
            # the heartbeats come from this loop only: if it wedges, systemd restarts the service,
            # and the driver ramps a moving robot to rest before that
            self.notifier.heartbeat()
            if now >= next_alive:
                next_alive = now + SUPERVISOR_ALIVE_S
                workers.tell_driver_alive()
            if not self.running:
                if shutdown_deadline is None:
                    shutdown_deadline = now + SHUTDOWN_TIMEOUT_S
                    self.notifier.stopping("stopping: bringing any motion to rest, finalizing the recording")
                    log.info("shutting down", extra={"fields": {"run_id": getattr(self.runs.current, "id", "-")}})
                    self.admission.cancel_pending("the daemon is shutting down")
                    if self.runs.current is not None:
                        self.runs.abort_current("daemon shutting down")
                if self.runs.current is None or now > shutdown_deadline:
                    break
