"""The path of a run request through its owners, without a daemon around them: the control
endpoint (daemon/dispatch.py Dispatcher: token, role, handler, cached reads, stops first) hands a
submission to the admission (daemon/admission.py RunAdmission: submit, check, accept), which hands
an accepted run to the runs (daemon/runs.py Runs: open the recording, start the run on the
driver). Each is built with only what it is handed; the sockets and pipes are fakes that keep what
was sent, so the tests read the messages, their order and their contents."""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest
import zmq

from robodyn.daemon import protocol as P
from robodyn.daemon.admission import RunAdmission
from robodyn.daemon.config import DaemonConfig
from robodyn.daemon.control_access import AccessControl
from robodyn.daemon.dispatch import DEFERRED, Dispatcher, LogsAfterReply, RateLimitedLog, ReplyChannel, RequestContext
from robodyn.daemon.intake import LargeRequests
from robodyn.daemon.runs import Runs
from robodyn.daemon.status import RobotState
from robodyn.daemon.supervision import Component
from robodyn.robot.loader import load_model
from robodyn.trajectory import PointToPointTrajectory

RATE_HZ = 1000.0


class Alive:
    pid = 1

    def is_alive(self) -> bool:
        return True


class Pipe:
    """A worker's pipe: what the main process sent, decoded."""

    def __init__(self):
        self.sent: list[dict] = []

    def send(self, data: bytes, flags: int = 0) -> None:
        self.sent.append(P.unpackb(data, max_bytes=1 << 30))


class Listing:
    def __init__(self):
        self.events: list[tuple] = []

    def index_opened(self, run_id, path):
        self.events.append(("opened", run_id))

    def index_closed(self, run_id, path, row):
        self.events.append(("closed", run_id))


class Parts:
    """RunAdmission and Runs wired as Daemon.__init__ wires them, around fakes of the rest."""

    def __init__(self, tmp_path, model):
        self.model = model
        self.driver, self.recorder = Component("driver", None, Alive(), True), Component("recorder", None, Alive(), True)
        self.robot = RobotState(self.driver)
        self.robot.on_ready({"description": {"rate_hz": RATE_HZ, "trajectory_modes": ["position"],
                                             "signals": [{"name": "q", "unit": "rad"}]},
                             "columns": [f"q{j}" for j in range(model.dof)], "layout": 1})
        self.q = (model.q_min + model.q_max) / 2  # the middle of every joint's range
        self.driver_pipe, self.recorder_pipe, self.listing = Pipe(), Pipe(), Listing()
        self.replies, self.errors = [], []
        self.request = RequestContext(envelope=[b"client"], rid="r1")
        cfg = DaemonConfig(data_dir=str(tmp_path), min_free_mb=0.0, ros2=False)
        self.runs = Runs(tmp_path, self.driver, self.recorder, self.driver_pipe, self.recorder_pipe, self.listing,
                         disarm=lambda reason: self.admission.disarm(reason),
                         pending_submission=lambda: self.admission.pending,
                         withdraw=lambda reason: self.admission.cancel_pending(reason),
                         changed=lambda: None, announce=lambda: None)
        self.admission = RunAdmission(model, cfg, tmp_path, self.robot, self.driver, self.recorder, self.runs,
                                      self.request, reply_later=lambda env, reply: self.replies.append(P.unpackb(reply)),
                                      count_error=self.errors.append, changed=lambda: None, announce=lambda: None)
        self.telemetry()

    def telemetry(self) -> None:
        """A fresh robot state from the driver at ``self.q``."""
        self.driver.last = {"q": self.q.tolist(), "sent_ns": time.monotonic_ns(), "seq": 10}

    def submit(self, q_goal) -> None:
        traj = PointToPointTrajectory(self.q, np.asarray(q_goal, float), 1.0)
        args = {"robot": self.model.name, "trajectory": traj.to_dict(robot=self.model.name)}
        assert self.admission.cmd_submit_run(args) is DEFERRED
        self.admission.pending.future.exception(timeout=300)  # an outer bound: the check's thread ends
        assert self.admission.checked()
        self.telemetry()  # the driver kept sending while the check ran (its first one loads the kernels)


@pytest.fixture(scope="module")
def model():
    return load_model("panda")


@pytest.fixture
def parts(tmp_path, model):
    p = Parts(tmp_path, model)
    p.admission.cmd_arm({})
    return p


def goal(parts):
    return parts.q + 0.05


def test_an_accepted_run_is_opened_then_started_when_its_file_is_open(parts):
    parts.submit(goal(parts))
    # the check is done, the client not yet answered: nothing reached a worker
    assert parts.recorder_pipe.sent == [] and parts.driver_pipe.sent == [] and parts.replies == []
    parts.admission.complete_submit()
    (reply,) = parts.replies
    assert reply["ok"], reply
    run_id = reply["result"]["run_id"]
    (opened,) = parts.recorder_pipe.sent
    assert opened["type"] == "open" and opened["run_id"] == run_id and opened["run"] == 1
    assert parts.driver_pipe.sent == []  # the driver gets the run only once its file is open
    assert parts.runs.current.id == run_id and parts.runs.current.state == "opening"
    assert parts.listing.events == [("opened", run_id)] and parts.admission.pending is None
    parts.runs.on_recorder({"type": "opened", "run": 1})
    (start,) = parts.driver_pipe.sent
    assert start["type"] == "start_run" and start["run_id"] == run_id and start["stops_seen"] == 0
    assert parts.runs.current.state == "starting"


def test_a_stop_served_while_the_file_opens_closes_the_run_instead_of_starting_it(parts):
    parts.submit(goal(parts))
    parts.admission.complete_submit()
    run = parts.runs.current
    parts.runs.on_driver_stop({"type": "stop_served", "cmd": "abort", "count": 1, "reason": "abort on the stop socket",
                               "served_ns": time.monotonic_ns()})
    parts.runs.on_recorder({"type": "opened", "run": run.number})
    assert parts.driver_pipe.sent == []
    (_, close) = parts.recorder_pipe.sent
    assert close["type"] == "close" and close["run"] == run.number and close["summary"]["status"] == "aborted"
    assert run.state == "finalizing" and run.abort_reason == "abort on the stop socket"


def test_a_robot_that_moved_during_the_check_is_refused_and_nothing_is_sent(parts):
    parts.submit(goal(parts))
    parts.q = parts.q + 0.1  # beyond HOLD_TOLERANCE on every joint
    parts.telemetry()
    parts.admission.complete_submit()
    (reply,) = parts.replies
    assert reply["error"]["code"] == P.E_UNAVAILABLE and "moved" in reply["error"]["message"]
    assert parts.errors == [P.E_UNAVAILABLE]
    assert parts.recorder_pipe.sent == [] and parts.driver_pipe.sent == [] and parts.runs.current is None


def test_a_fault_during_the_check_disarms_and_the_accepted_run_is_refused(parts):
    parts.submit(goal(parts))
    parts.runs.on_driver_stop({"type": "stop_served", "cmd": "disarm", "count": 1, "reason": "disarm on the stop socket",
                               "served_ns": time.monotonic_ns()})
    assert not parts.admission.armed and parts.admission.pending.cancelled == "disarm on the stop socket"
    parts.admission.complete_submit()
    (reply,) = parts.replies
    assert reply["error"]["code"] == P.E_CANCELLED
    assert parts.recorder_pipe.sent == [] and parts.driver_pipe.sent == []
    # the stop's own bookkeeping call through the control endpoint learns of the withdrawal
    assert parts.runs.cmd_abort({"stop": 1})["cancelled_submission"] is True


def test_a_run_submitted_after_a_stop_starts_with_that_stop_counted(parts):
    """The driver refuses a run sent on an older count of its stops than its own (rtloop.py): the
    start carries every stop this process has heard of, and a stop served before the submission
    does not abort the run."""
    parts.runs.on_driver_stop({"type": "stop_served", "cmd": "abort", "count": 3, "reason": "abort on the stop socket",
                               "served_ns": time.monotonic_ns()})
    parts.submit(goal(parts))
    parts.admission.complete_submit()
    parts.runs.on_recorder({"type": "opened", "run": 1})
    (start,) = parts.driver_pipe.sent
    assert start["stops_seen"] == 3 and not parts.runs.current.abort_requested


# ------------------------------------------------------------------ the control endpoint

TOKEN = "the-daemon-token"


class Router:
    """The control socket: frames queued for the dispatcher to read, the replies it sent (decoded)."""

    def __init__(self, *requests: tuple[bytes, bytes]):
        self.queued = [[zmq.Frame(identity), zmq.Frame(payload)] for identity, payload in requests]
        self.sent: list[tuple[bytes, dict]] = []

    def getsockopt(self, option) -> int:
        assert option == zmq.EVENTS
        return zmq.POLLIN if self.queued else 0

    def recv_multipart(self, copy: bool = True) -> list:
        return self.queued.pop(0)

    def send_multipart(self, frames: list, flags: int = 0) -> None:
        self.sent.append((bytes(frames[0]), P.unpackb(frames[-1])))


def control_endpoint(parts, router: Router, commands: dict) -> Dispatcher:
    """A Dispatcher wired as Daemon.__init__ wires it, around the parts and a fake socket."""
    refused = RateLimitedLog(logging.getLogger("robodyn.test"), what="refused requests")
    access_control = AccessControl(DaemonConfig(data_dir=".", ros2=False), TOKEN, "token-file", None, refused)
    return Dispatcher(router, zmq, access_control, ReplyChannel(router, zmq), parts.request, commands,
                      LargeRequests(lambda req: None), None, parts.robot, parts.runs, jobs=lambda: None,
                      dropped=RateLimitedLog(logging.getLogger("robodyn.test")), logs_after_reply=LogsAfterReply())


def test_a_submission_reaches_the_admission_through_the_dispatcher_and_is_answered_later(parts):
    dispatcher = control_endpoint(parts, Router(), {"submit_run": parts.admission.cmd_submit_run})
    traj = PointToPointTrajectory(parts.q, goal(parts), 1.0)
    args = {"robot": parts.model.name, "trajectory": traj.to_dict(robot=parts.model.name)}
    refused = P.unpackb(dispatcher.handle_payload(P.make_request("submit_run", args, rid=6)))
    assert refused["error"]["code"] == P.E_UNAUTHORISED and parts.admission.pending is None  # no token
    assert dispatcher.handle_payload(P.make_request("submit_run", args, rid=7, auth=TOKEN)) is None  # deferred
    assert parts.request.rid == 7 and parts.admission.pending is not None
    parts.admission.pending.future.exception(timeout=300)  # an outer bound: the check's thread ends
    assert parts.admission.checked()
    parts.telemetry()
    parts.admission.complete_submit()
    (reply,) = parts.replies
    assert reply["id"] == 7 and reply["ok"], reply
    assert [m["type"] for m in parts.recorder_pipe.sent] == ["open"]
    assert dispatcher.replies.errors == {P.E_UNAUTHORISED: 1}


def test_a_stop_is_handled_before_the_reads_that_came_in_before_it(parts):
    """The three reads were read off the socket first; the abort is answered first, the driver's
    pipe is read before each read and not before the stop, and the stop's latency says so."""
    drained = []
    router = Router(*[(b"observer%d" % i, P.make_request("status", rid=i, auth=TOKEN)) for i in range(3)],
                    (b"operator", P.make_request("abort", {"reason": "test"}, rid="stop")))
    dispatcher = control_endpoint(parts, router, {"status": lambda args: {"armed": True},
                                                  "abort": parts.runs.cmd_abort})
    dispatcher.serve(lambda: drained.append(len(router.sent)))
    assert [identity for identity, _ in router.sent] == [b"operator", b"observer0", b"observer1", b"observer2"]
    latency = router.sent[0][1]["result"]["latency"]
    assert latency["handled_since_received"] == 0 and latency["overtook"] == 3 and latency["received_seq"] == 4
    assert drained == [1, 2, 3]  # before each read, after the stop's reply
    assert dispatcher.stop_latency["count"] == 1 and dispatcher.requests_handled == 4


def test_a_cached_read_is_built_again_once_something_changed(parts):
    built = []
    dispatcher = control_endpoint(parts, Router(), {"status": lambda args: built.append(1) or {"n": len(built)},
                                                    "arm": parts.admission.cmd_arm})
    status = P.make_request("status", rid=1, auth=TOKEN)
    first, second = (P.unpackb(dispatcher.handle_payload(status)) for _ in range(2))
    assert first["result"] == second["result"] == {"n": 1} and dispatcher.read_cache_counts == {"hits": 1, "built": 1}
    dispatcher.replies.state_changed()  # a worker's event, an error counted, ...
    assert P.unpackb(dispatcher.handle_payload(status))["result"] == {"n": 2}
    dispatcher.handle_payload(P.make_request("arm", rid=2, auth=TOKEN))  # a command that is not a read
    assert P.unpackb(dispatcher.handle_payload(status))["result"] == {"n": 3}
    assert dispatcher.read_cache_counts == {"hits": 1, "built": 3}
