"""The main process's bookkeeping of stops the driver served from its stop socket (daemon/runs.py
``Runs.on_driver_stop`` and the driver's refusal of a run sent before a stop): which run and which
submission a stop targets, and that nothing moves on a word older than a stop."""

from types import SimpleNamespace

from pathlib import Path

from robodyn.daemon.runs import Run, Runs


class Book(Runs):
    """Runs alone, with what it calls on the rest of the daemon recorded."""

    def __init__(self):
        self.pending = None
        self.sent, self.closed, self.disarmed, self.cancelled = [], [], [], []
        super().__init__(Path("/nowhere"), None, None, None, None, None, disarm=self.disarmed.append,
                         pending_submission=lambda: self.pending, withdraw=self.cancelled.append,
                         changed=lambda: None, announce=lambda: None)

    def send_start(self, run):
        self.sent.append((run.id, self.driver_stops_seen))

    def close_recording(self, run, status):
        self.closed.append((run.id, status))


def _run(number: int, requested: float) -> Run:
    return Run(id=f"run-{number}", number=number, robot="panda", mode="position", label="", trajectory={}, move={},
               duration=1.0, move_duration=0.5, trajectory_samples=1000, move_samples=500, path="/nowhere",
               state="starting", requested=requested)


def _stop(count: int, served_s: float, cmd: str = "abort", run_id=None) -> dict:
    return {"type": "stop_served", "cmd": cmd, "count": count, "seen_seq": 7, "acted_seq": 7,
            "in_socket_periods": 0.2, "sent_periods": 0.3, "arrived_since_previous_cycle": True,
            "reason": f"{cmd} by test", "run": 0, "run_id": run_id, "requested_run_id": None,
            "served_ns": int(served_s * 1e9), "acted": run_id is not None, "sender": "uid 0 (pid 1)"}


def _stale_refusal(run: Run, stops_served: int) -> dict:
    return {"type": "run_event", "event": "refused", "run": run.number, "run_id": run.id, "stale_stop": True,
            "stops_served": stops_served, "reason": "a stop came in on the stop socket before this run started"}


def test_a_run_sent_before_the_stop_is_aborted_not_started():
    book = Book()
    book.current = run = _run(1, requested=10.0)
    book.on_driver_stop(_stop(1, served_s=11.0))  # the driver was idle: the start was still on its way
    assert run.abort_requested and run.abort_reason == "abort by test" and book.driver_stops_seen == 1
    book.on_run_event(_stale_refusal(run, 1))
    assert book.closed == [("run-1", "aborted")] and book.sent == [] and book.disarmed == []


def test_a_run_submitted_after_the_stop_is_sent_again_on_the_new_count():
    book = Book()
    book.current = run = _run(2, requested=12.0)
    book.on_driver_stop(_stop(1, served_s=11.0))  # served before this run's submission: not its target
    assert not run.abort_requested
    book.on_run_event(_stale_refusal(run, 1))
    assert book.sent == [("run-2", 1)] and book.closed == []


def test_a_lost_stop_event_still_aborts_the_refused_run():
    book = Book()
    book.current = run = _run(3, requested=12.0)
    book.on_run_event(_stale_refusal(run, 2))  # the driver served 2 stops, this process heard of none
    assert book.closed == [("run-3", "aborted")] and book.sent == [] and book.driver_stops_seen == 2


def test_disarm_disarms_and_withdraws_only_submissions_made_before_it():
    book = Book()
    book.pending = SimpleNamespace(started=5.0, cancelled=None)
    book.on_driver_stop(_stop(1, served_s=6.0, cmd="disarm"))
    assert book.disarmed == ["disarm by test"] and book.cancelled == ["disarm by test"]
    book.pending = SimpleNamespace(started=8.0, cancelled=None)
    book.on_driver_stop(_stop(2, served_s=7.0, cmd="disarm"))
    assert len(book.cancelled) == 1 and len(book.disarmed) == 2
    assert book.driver_stops["count"] == 2 and book.driver_stops["same_cycle"] == 2


def test_a_stop_of_another_run_leaves_the_current_one():
    book = Book()
    book.current = run = _run(4, requested=1.0)
    book.on_driver_stop(_stop(1, served_s=2.0, run_id="run-3"))
    assert not run.abort_requested


def test_the_stops_own_abort_call_learns_of_the_submission_it_withdrew_once():
    """The client asks the control endpoint after a stop the driver served with nothing moving,
    naming the stop by its count; by then the submission the stop withdrew may be gone from
    ``pending`` (its check ended): the answer still says it was withdrawn, once, to that call
    only; another client's abort, or a call naming another stop, is not told."""
    book = Book()
    book.pending = SimpleNamespace(started=5.0, cancelled=None)
    book.on_driver_stop(_stop(1, served_s=6.0))
    assert book.cancelled == ["abort by test"]
    book.pending = None  # the checking thread saw the withdrawal and the submission was answered
    assert "cancelled_submission" not in book.cmd_abort({})  # another client's abort
    assert "cancelled_submission" not in book.cmd_abort({"stop": 2})
    first = book.cmd_abort({"stop": 1})
    assert first["cancelled_submission"] is True and first["aborted"] is None
    assert "cancelled_submission" not in book.cmd_abort({"stop": 1})
    # a submission made after the stop is not its target
    book.pending = SimpleNamespace(started=9.0, cancelled=None)
    book.on_driver_stop(_stop(2, served_s=8.0))
    assert book.cancelled == ["abort by test"] and book.withdrawn_by_driver_stop == set()
    book.pending = None
    assert "cancelled_submission" not in book.cmd_abort({"stop": 2})
    # two stops in a row, each withdrawing a submission: each follow-up learns of its own
    for count, started in ((3, 10.0), (4, 12.0)):
        book.pending = SimpleNamespace(started=started, cancelled=None)
        book.on_driver_stop(_stop(count, served_s=started + 1))
    book.pending = None
    assert book.cmd_abort({"stop": 4})["cancelled_submission"] and book.cmd_abort({"stop": 3})["cancelled_submission"]
