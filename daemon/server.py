"""The daemon's main process: control endpoint, run manager, supervision of the two workers.

Processes::

    main      ROUTER (control, public)  PAIR<->driver  PAIR<->recorder   run manager, validation
    driver    the real-time loop (rtloop.py)     PUB state stream (public tcp + internal ipc)
              its stop socket (stop_socket.py): abort / disarm served by the loop itself
    recorder  SUB on the internal ipc stream     writes <data_dir>/recordings/<run_id>.mcap

A run: ``submit_run`` is validated in this process (admission.py: trajectory parse, robot, every
limit of the trajectory and of the move from the current position) and rejected with the violated limit, joint and time before
anything is sent to the driver process. Accepted: the recorder opens the file, then the driver
process executes move -> trajectory -> settle -> brake, then the recorder finalizes and the run
summary is kept. Clients poll ``run_status``; no request ever blocks the loop: the limit check of
a long trajectory (seconds) runs on a validation thread and ``submit_run`` is answered when it is
done, while the loop keeps serving ``status`` and ``abort``.

Safety (docs/reliability.md): motion needs the daemon to be armed by an operator (``arm``); any
fault disarms it (a worker process dying or hanging, a driver error, a recording that cannot be
written). A dead or hung worker is restarted; the run in progress is reported aborted.
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from robodyn.robot.loader import load_model

from . import access, security
from .admission import RunAdmission, prepare_request
from .config import DaemonConfig, resolve_state, state_stream_open
from .control_access import AccessControl
from .dispatch import TRANSPORT_MAX_BYTES, Dispatcher, LogsAfterReply, RateLimitedLog, ReplyChannel, RequestContext
from .heavy import HeavyReads
from .intake import LargeRequests
from robodyn.private_files import make_private_dir
from .logs import setup_logging
from .priority import GcPauses, default_scheduler, main_priority, realtime_io_threads, set_main_realtime
from robodyn.recording.index import RecordingIndex
from .runs import Runs
from .sdnotify import Notifier
from .status import RobotState, StatusReport
from .supervisor_watch import AliveBeacon
from .supervision import Component, MainLoop, StartAbandoned, Workers

log = logging.getLogger("robodyn.daemon")

GIL_SWITCH_INTERVAL_S = 0.0002


class Daemon:
    """The main process. It builds its parts and hands each what it needs: arming and the
    admission of runs (admission.py RunAdmission: submit, check, accept), the runs from their
    recording's opening to their summary and the history (runs.py Runs), the robot's newest state
    and the status report (status.py RobotState, StatusReport), heavy reads off the main process
    and the recordings' listing (heavy.py HeavyReads), the control endpoint (dispatch.py
    Dispatcher, with control_access.py AccessControl and the ReplyChannel every part replies
    through), the worker processes and the main loop (supervision.py Workers, MainLoop). It keeps
    what it made (the sockets, the runtime directory, the token) and removes it in :meth:`close`.

    ``extensions``: callables ``register(daemon)`` that add commands with
    :meth:`add_command` (the command line passes the identification job runner,
    ``robodyn.jobs.identification.register``; the daemon itself knows no such module)."""

    def __init__(self, cfg: DaemonConfig, extensions: Iterable[Callable[["Daemon"], None]] = ()):
        import zmq

        self.zmq = zmq
        if not cfg.state:  # a config made in code, not by load_config
            cfg.state = resolve_state(cfg)
        self.cfg = cfg
        self.model = load_model(cfg.robot)
        self.recordings_dir = cfg.recordings_dir
        make_private_dir(self.recordings_dir)  # 0700 whatever the umask (private_files.py)
        # systemd's RuntimeDirectory= when there is one; mkdtemp makes it private (0700), which is
        # what guards the internal ipc pipes
        self.runtime_dir = tempfile.mkdtemp(prefix="robodyn-", dir=os.environ.get("RUNTIME_DIRECTORY") or None)
        self.endpoints = {"driver_pipe": f"ipc://{self.runtime_dir}/driver", "publisher_pipe":
                          f"ipc://{self.runtime_dir}/publisher", "recorder_pipe":
                          f"ipc://{self.runtime_dir}/recorder", "state_ipc": f"ipc://{self.runtime_dir}/state"}
        # the main loop's word to the driver that it runs (supervisor_watch.AliveBeacon)
        self.endpoints["supervisor_alive"] = f"{self.runtime_dir}/alive"
        self.alive_beacon = AliveBeacon(self.endpoints["supervisor_alive"], writer=True)
        self.ctx = zmq.Context()
        # the loop thread just under the driver's real-time loop, so that no ordinary process on the
        # host delays a stop (daemon/priority.py). Tried here, before the first socket starts
        # ZeroMQ's I/O thread (which gets the priority only if the host allows it), then given up
        # until the loop starts serving (serve_forever): start-up's work (the workers' spawning,
        # loading the validation kernels, a full garbage collection) runs on the default scheduler
        wanted = main_priority(cfg.rt_priority)
        realtime, self.main_scheduler = set_main_realtime(wanted)
        self.main_rt_priority = wanted if realtime else 0
        if realtime:
            realtime_io_threads(self.ctx, zmq, wanted)
            default_scheduler()
        elif wanted:
            log.warning("main loop on the %s: a stop may wait for the host's scheduler (give the daemon "
                        "CAP_SYS_NICE or an RLIMIT_RTPRIO of %d)", self.main_scheduler, wanted)
        self.zap = None
        if cfg.curve:
            _public, secret = security.read_secret_key(cfg.curve_secret_key)
            # the handler must exist before the first curve socket binds, or libzmq admits anyone
            self.zap = security.ZapHandler(self.ctx, cfg.clients)
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.setsockopt(zmq.MAXMSGSIZE, TRANSPORT_MAX_BYTES)
        self.handshakes = None
        if cfg.curve:
            security.make_curve_server(self.router, secret)
            self.handshakes = security.HandshakeMonitor(self.router, "control")
        self.router.bind(cfg.control)
        # deferred replies, error counts and the cached reads' invalidation, shared by every part
        self.replies = ReplyChannel(self.router, zmq)
        # bound first: a daemon that cannot bind never overwrites the token of the one that did
        self.token, self.token_path = None, None
        if not cfg.curve:
            self.token_path = access.token_path(cfg.control, cfg.token_file)
            self.token = access.new_token()
            try:
                access.write_token(self.token_path, self.token, cfg.token_file_mode, private_dir=not cfg.token_file)
            except Exception:
                self.ctx.destroy(linger=0)
                shutil.rmtree(self.runtime_dir, ignore_errors=True)
                raise
        # the stop socket, bound by the driver process (stop_socket.py), beside the token: after the
        # control endpoint, so that it is this daemon's
        self.stop_path = None
        try:
            path = access.stop_socket_path(cfg.control, cfg.token_file)
            access.prepare_stop_dir(path, private_dir=not cfg.token_file)
            self.stop_path, self.endpoints["stop_socket"] = path, str(path)
        except (ValueError, OSError) as exc:
            log.warning("no stop socket (stops go through the control endpoint): %s", exc)
        self.logs_after_reply = LogsAfterReply()
        log.addFilter(self.logs_after_reply)
        self.refused_auth = RateLimitedLog(log, window_s=10.0, what="requests refused for no or a wrong access token")
        self.access_control = AccessControl(cfg, self.token, self.token_path, self.zap, self.refused_auth)
        self.driver_pipe = self.ctx.socket(zmq.PAIR)
        self.driver_pipe.bind(self.endpoints["driver_pipe"])
        self.recorder_pipe = self.ctx.socket(zmq.PAIR)
        self.recorder_pipe.bind(self.endpoints["recorder_pipe"])
        self.publisher_pipe = self.ctx.socket(zmq.PAIR)
        self.publisher_pipe.bind(self.endpoints["publisher_pipe"])
        from .publisher import publisher_process_main
        from .recorder import recorder_process_main
        from .rtloop import driver_process_main

        self.driver = Component("driver", driver_process_main)
        self.recorder = Component("recorder", recorder_process_main)
        # republishes the stream to clients: not part of any run, so its failure neither aborts
        # a run nor disarms; it is restarted like the others
        self.publisher = Component("publisher", publisher_process_main)
        self.robot = RobotState(self.driver)  # what the driver last said about the robot (status.py)
        self.started = time.monotonic()
        self.notifier = Notifier()
        self.dropped = RateLimitedLog(log, window_s=5.0)
        self.gc_pauses = GcPauses()  # the collector's pauses are work a stop can wait behind
        gc.callbacks.append(self.gc_pauses)
        # listed from memory, never by reading the files (recording/index.py)
        self.recording_index = RecordingIndex(self.recordings_dir)
        self.recording_index.load()
        # frames over request_decoding.INLINE_DECODE_BYTES: decoded on threads (intake.py); what such a
        # thread prepared for the handler of the request being dispatched (a parsed trajectory)
        self.large_requests = LargeRequests(prepare_request)
        # a thread decoding a large request or validating a trajectory gives the GIL back to this
        # loop within this long of the loop asking for it (CPython's default is 5 ms: five periods
        # of a 1 kHz robot that a stop would wait)
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        self.request = RequestContext()  # the request being handled: set by the dispatch (dispatch.py)
        # heavy reads in a worker process, and the recordings' listing (heavy.py)
        self.heavy_reads = HeavyReads(self.recording_index, self.recordings_dir, self.request,
                                      lambda: self.runs.current, reply_later=self.replies.reply_later,
                                      count_error=self.replies.count_error, state_changed=self.replies.state_changed)
        # a run: admitted (admission.py: submit, check, accept), then run (runs.py: its recording
        # opened, the run started, its events to its summary). Each is handed what it needs; the
        # two name each other through the callables below (a stop withdraws a submission, a fault
        # disarms)
        self.runs = Runs(self.recordings_dir, self.driver, self.recorder, self.driver_pipe, self.recorder_pipe,
                         self.heavy_reads, disarm=lambda reason: self.admission.disarm(reason),
                         pending_submission=lambda: self.admission.pending,
                         withdraw=lambda reason: self.admission.cancel_pending(reason),
                         changed=self.replies.state_changed, announce=self._announce)
        self.admission = RunAdmission(self.model, cfg, self.recordings_dir, self.robot, self.driver, self.recorder,
                                      self.runs, self.request, reply_later=self.replies.reply_later,
                                      count_error=self.replies.count_error, changed=self.replies.state_changed,
                                      announce=self._announce)
        self.status_report = StatusReport(cfg, self.model, self.robot, self.driver, self.recorder, self.publisher,
                                          self.runs, self.admission, self.heavy_reads, self.recording_index,
                                          self.request, started=self.started, role_of=self.access_control.role_of,
                                          zap=self.zap, handshakes=self.handshakes, loop_report=self._loop_report,
                                          jobs=lambda: getattr(self, "job_manager", None))
        commands = {
            "ping": self.status_report.cmd_ping, "status": self.status_report.cmd_status,
            "describe": self.status_report.cmd_describe,
            "submit_run": self.admission.cmd_submit_run, "run_status": self.runs.cmd_run_status,
            "abort": self.runs.cmd_abort, "runs": self.runs.cmd_runs, "recordings": self.heavy_reads.cmd_recordings,
            "recording_info": self.heavy_reads.cmd_recording_info,
            "arm": self.admission.cmd_arm, "disarm": self.admission.cmd_disarm,
        }
        # the control endpoint: reads a request, checks its sender and role, calls its handler
        self.dispatcher = Dispatcher(self.router, zmq, self.access_control, self.replies, self.request, commands,
                                     self.large_requests, self.recording_index, self.robot, self.runs,
                                     jobs=lambda: getattr(self, "job_manager", None), dropped=self.dropped,
                                     logs_after_reply=self.logs_after_reply)
        # the worker processes (spawned, heard, watched, restarted) and the loop that polls their
        # pipes and the control socket (supervision.py)
        self.workers = Workers(zmq, cfg, self.model, self.endpoints, self.driver, self.recorder, self.publisher,
                               self.driver_pipe, self.recorder_pipe, self.publisher_pipe, self.alive_beacon,
                               self.robot, self.runs, self.admission, self.recording_index,
                               changed=self.replies.state_changed)
        self.loop = MainLoop(zmq, self.router, self.zap, self.handshakes, self.workers, self.dispatcher,
                             self.admission, self.runs, self.heavy_reads, self.notifier, self.dropped,
                             changed=self.replies.state_changed, model=self.model,
                             warm_up_limit_s=cfg.warm_up_limit_s, main_rt_priority=self.main_rt_priority,
                             status_line=self._status_line)
        for register in extensions:
            register(self)

    def add_command(self, name: str, args: dict, handler) -> None:
        """For an extension: register a request handler ``handler(args) -> dict`` (raise
        ProtocolError on errors); see :meth:`Dispatcher.add_command`."""
        self.dispatcher.add_command(name, args, handler)

    def _loop_report(self) -> dict:
        """The control endpoint's and the main loop's counters, for ``status`` (status.py)."""
        return {**self.dispatcher.report(), "main_scheduler": self.main_scheduler,
                "gc_pauses": self.gc_pauses.report(), "gc_frozen_objects": self.loop.gc_frozen}

    def _announce(self) -> None:
        """The status line to systemd (armed or not, the run in progress)."""
        self.notifier.status(self._status_line())

    def _status_line(self) -> str:
        run = self.runs.current
        return (f"{'ARMED' if self.admission.armed else 'disarmed'}; robot {self.model.name} via {self.cfg.driver}; "
                + (f"run {run.id} {run.state}" if run else "idle"))

    def start(self) -> None:
        """The workers spawned and ready, the validation kernels compiled (:meth:`MainLoop.start`)."""
        self.loop.start()

    def serve_forever(self) -> None:
        """The main loop until a stop is asked and no run is left (:meth:`MainLoop.serve_forever`),
        then everything closed."""
        self.loop.serve_forever()
        self.close()

    def request_shutdown(self, *_args) -> None:
        self.loop.request_shutdown()

    def close(self) -> None:
        """The workers stopped and everything this process made removed: the sockets, the
        runtime directory, the token."""
        log.removeFilter(self.logs_after_reply)
        if self.gc_pauses in gc.callbacks:
            gc.callbacks.remove(self.gc_pauses)
        self.heavy_reads.close()
        if self.zap is not None:
            self.zap.close()
            self.handshakes.close()
        self.workers.stop()
        if self.cfg.state.startswith("ipc://"):  # the publisher's socket (libzmq leaves the file);
            # removed while this daemon still holds the control endpoint, so no successor's yet
            Path(self.cfg.state[len("ipc://"):]).unlink(missing_ok=True)
        if self.stop_path is not None:  # the driver's stop socket, likewise
            self.stop_path.unlink(missing_ok=True)
        self.alive_beacon.close()
        self.ctx.destroy(linger=0)
        self.dispatcher.close()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)
        if self.token is not None:
            access.remove_token(self.token_path, self.token)

    def defer_to_worker(self, fn, *args, finish, what: str):
        """For an extension's command handler: see :meth:`HeavyReads.defer_to_worker`."""
        return self.heavy_reads.defer_to_worker(fn, *args, finish=finish, what=what)


def run_daemon(cfg: DaemonConfig, extensions: Iterable[Callable[[Daemon], None]] = (),
               log_setup: Callable[[], None] = setup_logging) -> int:
    """Run the daemon until SIGTERM/SIGINT. ``extensions``: see :class:`Daemon`; ``log_setup``
    sets up the process's logging (text by default; the command line passes its JSON one)."""
    log_setup()
    daemon = Daemon(cfg, extensions)
    signal.signal(signal.SIGTERM, daemon.request_shutdown)
    signal.signal(signal.SIGINT, daemon.request_shutdown)
    try:
        daemon.start()
    except StartAbandoned as exc:  # SIGTERM/SIGINT while starting: a clean stop, nothing left running
        log.info("%s", exc)
        daemon.request_shutdown()
        daemon.close()
        return 0
    except Exception:
        daemon.request_shutdown()
        daemon.close()
        raise
    log.info("ready: control %s, state %s, robot %s (%s), recordings in %s, %s", cfg.control, cfg.state, cfg.robot,
             cfg.driver, daemon.recordings_dir,
             "CurveZMQ" if cfg.curve else f"loopback, access token in {daemon.token_path}",
             extra={"fields": {"event": "ready", "arming_required": cfg.arming_required}})
    if state_stream_open(cfg):
        log.warning("the state stream %s is loopback TCP without CurveZMQ: every local account can read the "
                    "joint states (leave [daemon].state unset for an ipc socket only this user reaches)", cfg.state)
    print(f"robodyn daemon ready: control {cfg.control}, state {cfg.state}, robot {cfg.robot} "
          f"({cfg.driver}), recordings in {daemon.recordings_dir}", flush=True)
    daemon.serve_forever()  # sends READY=1 to systemd before its first poll
    if any(t.is_alive() for t in daemon.admission.validation_threads):
        # a withdrawn submission's limit check is still computing on a daemon thread; finalizing
        # the interpreter under it can abort the process, so leave without finalization
        log.info("exiting while a withdrawn validation is still running")
        logging.shutdown()
        sys.stdout.flush()
        os._exit(0)
    return 0
