"""A read-only view of the daemon for the operator's viewers (Foxglove bridge, status page).

The viewers run outside the real-time process and must never move the robot. They talk to the
daemon only through :class:`ReadOnlyClient`, which forwards the daemon's read commands and has no
way to send the others: ``submit_run``, ``arm``, ``disarm``, ``abort`` and ``identify`` stay on the
authenticated control socket, used by `robodyn run` / `robodyn arm` and friends.
"""

from __future__ import annotations

from typing import Iterator

from robodyn.daemon import protocol as P

from .client import Client, CurveKeys

# the daemon's commands that only report state (docs/protocol.md); everything else changes it
READ_ONLY_COMMANDS = frozenset({"ping", "status", "describe", "run_status", "runs", "recordings",
                                "recording_info", "jobs", "job_status", "pull"})
# recordings / recording_info / pull read files in the daemon: they get the client library's longer timeouts
SLOW_COMMANDS = {"recordings": 30.0, "recording_info": 30.0, "pull": 30.0}


class ReadOnlyClient:
    """The daemon's read commands and its state stream; nothing that moves, arms or queues work."""

    def __init__(self, endpoint: str | None = None, timeout: float = 5.0, curve: CurveKeys | None = None):
        self._client = Client(endpoint, timeout=timeout, curve=curve)
        self.endpoint = self._client.endpoint

    def call(self, cmd: str, **args) -> dict:
        if cmd not in READ_ONLY_COMMANDS:
            raise PermissionError(f"{cmd!r} is not a read-only daemon command; viewers may only send "
                                  f"{sorted(READ_ONLY_COMMANDS)}")
        timeout = max(self._client.timeout, SLOW_COMMANDS.get(cmd, 0.0))
        return self._client.call(cmd, timeout=timeout, **args)

    def status(self) -> dict:
        return self.call("status")

    def describe(self) -> dict:
        return self.call("describe")

    def runs(self, limit: int = 50) -> list[dict]:
        return self.call("runs", limit=limit)["runs"]

    def recordings(self) -> list[dict]:
        """The daemon's default page of recordings (the newest); :meth:`listing_page` and
        :meth:`every` for more."""
        return self.call("recordings")["recordings"]

    def recording_info(self, recording: str) -> dict:
        return self.call("recording_info", recording=recording)

    def jobs(self) -> list[dict]:
        """The daemon's default page of jobs (the newest); :meth:`listing_page` and :meth:`every`
        for more."""
        return self.call("jobs")["jobs"]

    def listing_page(self, cmd: str, limit: int | None = None, offset: int | None = None) -> dict:
        """One page of a listing (``recordings`` or ``jobs``) with the daemon's ``total`` and
        ``next_offset``; without ``offset`` the newest page."""
        args = {k: v for k, v in (("limit", limit), ("offset", offset)) if v is not None}
        return self.call(cmd, **args)

    def every(self, cmd: str) -> Iterator[dict]:
        """Every entry of a listing, oldest first, a page of the daemon's largest size at a time
        (each call is as bounded as any page; a lookup by id must not stop at the newest page)."""
        offset: int | None = 0
        while offset is not None:
            reply = self.listing_page(cmd, P.MAX_PAGE, offset)
            yield from reply[cmd]
            offset = reply.get("next_offset")

    def job_status(self, job: str) -> dict:
        return self.call("job_status", job=job)

    def pull(self, job: str) -> dict:
        return self.call("pull", job=job)["result"]

    def stream(self, endpoint: str, timeout: float = 1.0, events: bool = True) -> Iterator[dict]:
        """State batches and run events from the daemon's PUB stream (a SUB socket: receive only)."""
        return self._client.stream(endpoint, timeout=timeout, events=events)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "ReadOnlyClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def phase_name(code: int) -> str:
    return P.PHASE_NAMES.get(int(code), f"phase {int(code)}")


def run_progress(run: dict | None) -> dict | None:
    """Where a run is, from a `run_status` / `status.run` document: its state, the fraction of the
    trajectory executed (0 during the move to the start), the fraction of the move to the start,
    and one line of text."""
    if not run:
        return None
    p = run.get("progress") or {}
    state = run.get("state")
    traj_total = int(p.get("trajectory_samples") or run.get("trajectory_samples") or 0)
    move_total = int(p.get("move_samples") or run.get("move_samples") or 0)
    traj_index = int(p.get("trajectory_index") or 0)
    move_index = int(p.get("move_index") or 0)
    finished = state in ("completed", "aborted", "failed")
    summary = run.get("summary") or {}
    if finished and summary.get("executed_samples") is not None:
        traj_index = int(summary["executed_samples"])
    fraction = min(1.0, traj_index / traj_total) if traj_total else 0.0
    move_fraction = min(1.0, move_index / move_total) if move_total else 0.0
    if state == "move_to_start":
        text = f"moving to the start: {100 * move_fraction:.0f} %"
    elif state in ("execute", "settle", "stopping", "finalizing") or finished:
        text = f"{100 * fraction:.1f} % of {float(run.get('duration_s') or 0.0):.1f} s"
    else:
        text = str(state)
    return {"run_id": run.get("run_id"), "state": state, "fraction": fraction, "move_fraction": move_fraction,
            "trajectory_index": traj_index, "trajectory_samples": traj_total, "text": text}
