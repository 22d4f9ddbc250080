"""Nothing an observer asks can slow a stop: listings come from an in-memory index (no file read on
a request), are paged, heavy reads run in a worker with a per-client limit, and `abort`/`disarm`
are answered while clients flood `recordings`, `status` and `jobs`. Latencies are the daemon's own
measure (counts of requests, main-loop rounds and real-time loop periods on its clock), never a
wall-clock bound of the test."""

import pytest
from robodyn.daemon import protocol as P
from robodyn.daemon.client import DaemonError

from tests.daemon.conftest import DaemonProcess
from tests.daemon.reliability.observer_flood import (
    flood,
    make_jobs,
    make_recordings,
    wait_indexed,
)

RECORDINGS = 120
JOBS = 3000  # per request, a status summarizing them or a largest jobs page (MAX_PAGE rows) cost a period
CLIENTS = 5


@pytest.fixture(scope="module")
def crowded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("crowded")
    data = tmp / "data"
    ids = make_recordings(data / "recordings", RECORDINGS, indexed_fraction=0.5)
    make_jobs(data, JOBS)
    d = DaemonProcess(tmp, speed=1.0, data_dir=data, arm=False)
    d.ids = ids
    yield d
    d.stop()


def test_listing_is_paged_and_comes_from_the_index(crowded):
    c = crowded.client
    first = wait_indexed(c, RECORDINGS)  # half had no entry: indexed once, by the worker, at start
    assert [r["id"] for r in first["recordings"]] == crowded.ids
    assert all(r["samples"] == 20 and r["status"] == "completed" for r in first["recordings"])
    default = c.recordings_page()  # the old request: the newest page
    assert default["total"] == RECORDINGS and default["limit"] == P.DEFAULT_PAGE
    assert [r["id"] for r in default["recordings"]] == crowded.ids[-P.DEFAULT_PAGE:]
    assert default["next_offset"] is None
    page = c.recordings_page(limit=7, offset=14)
    assert [r["id"] for r in page["recordings"]] == crowded.ids[14:21] and page["next_offset"] == 21
    # the worker wrote the entries it built: the next start reads no recording at all
    assert all((crowded.data_dir / "recordings" / f"{rid}.index.json").exists() for rid in crowded.ids)
    # no file is read on a request: a recording overwritten behind the daemon's back is still
    # listed from its entry, while recording_info (which reads it, in the worker) reports the damage
    victim = crowded.data_dir / "recordings" / f"{crowded.ids[3]}.mcap"
    victim.write_bytes(b"not an mcap file any more")
    row = c.recordings_page(limit=1, offset=3)["recordings"][0]
    assert (row["id"], row["samples"], row["status"]) == (crowded.ids[3], 20, "completed")
    with pytest.raises(DaemonError) as err:
        c.recording_info(crowded.ids[3])
    assert err.value.code == "unavailable" and "could not read the recording" in err.value.message
    info = c.recording_info(crowded.ids[4])
    assert info["samples"] == 20 and info["units"]["q"] == "rad" and info["gaps"] == []


def test_the_recordings_command_pages_and_lists_everything_with_all(crowded, capsys):
    """`robodyn recordings` shows the newest page and says how many there are; --all walks the pages."""
    import json

    from robodyn.cli import main

    wait_indexed(crowded.client, RECORDINGS)
    base = ["recordings", "--endpoint", crowded.control]
    assert main(base) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"recordings {RECORDINGS - P.DEFAULT_PAGE + 1}..{RECORDINGS} of {RECORDINGS} " \
                     "(oldest first; --all or --offset for the others)"
    assert out[1].startswith("recording ") and len(out) == 2 + P.DEFAULT_PAGE
    assert main(base + ["--all", "--limit", "7", "--json"]) == 0  # 18 pages of 7, in order, none twice
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == crowded.ids
    assert main(base + ["--offset", "5", "--limit", "3", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == crowded.ids[5:8]
    assert main(base + ["--all", "--offset", "5"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("args, field", [({"limit": 0}, "args.limit"), ({"limit": 1001}, "args.limit"),
                                         ({"offset": -1}, "args.offset"), ({"limit": "10"}, "args.limit")])
def test_page_fields_are_validated_with_one_line(crowded, args, field):
    with pytest.raises(DaemonError) as err:
        crowded.client.call("recordings", **args)
    assert err.value.code == "invalid_args" and "\n" not in err.value.message
    assert (err.value.details or {}).get("field", field) == field and field.split(".")[1] in err.value.message


def test_status_and_jobs_do_not_grow_with_the_job_history(crowded):
    c = crowded.client
    jobs = c.status()["metrics"]["jobs"]
    assert jobs["counts"]["completed"] == JOBS and len(jobs["queued"]) <= 20
    page = c.call("jobs")
    assert page["total"] == JOBS and len(page["jobs"]) == P.DEFAULT_PAGE
    assert page["jobs"][-1]["job"] == f"job-20260101-000000-{JOBS - 1:06x}"
    assert len(c.jobs(limit=10, offset=5)) == 10


def test_heavy_reads_are_limited_per_client_busy_not_queued(crowded):
    """A client with a recording_info in flight gets `busy` for its next one, at once."""
    import zmq
    from robodyn.daemon import access

    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)  # one connection, two requests without waiting for the first reply
    s.setsockopt(zmq.LINGER, 0)
    s.connect(crowded.control)
    token = access.client_token(crowded.control)
    try:
        for k in (1, 2):
            s.send(P.make_request("recording_info", {"recording": crowded.ids[10 + k]}, rid=k, auth=token))
        replies = {}
        for _ in range(2):
            assert s.poll(60_000), "no reply in 60 s"
            reply = P.unpackb(s.recv())
            replies[reply["id"]] = reply
    finally:
        s.close()
        ctx.term()
    assert replies[1]["ok"] and replies[1]["result"]["samples"] == 20
    assert not replies[2]["ok"] and replies[2]["error"]["code"] == "busy"
    assert "\n" not in replies[2]["error"]["message"]


def test_stops_are_answered_at_once_while_observers_flood_listings(crowded, figure):
    wait_indexed(crowded.client, RECORDINGS)
    decoded_before = crowded.client.status()["control"]["request_cost_ms"].get("recording_info", {}).get("count", 0)
    result = flood(crowded.control, clients=CLIENTS, requests_per_client=120, stops=40, page=True)
    figure("observer flood", **result)
    assert result["flood_errors"] == {} and result["flood_requests"] > 0
    # the status page polled throughout, never lost the daemon, and showed every recording's
    # summary from the listing's index entries: neither it nor the observers made the daemon
    # decode a recording (no recording_info during the flood)
    page = result["status_page"]
    assert page["refreshes"] > 0 and page["connected"] == page["refreshes"] and page["error"] is None
    assert page["recordings_shown"] == page["recordings_with_summary"] == RECORDINGS
    assert result["request_cost_ms"].get("recording_info", {}).get("count", 0) == decoded_before
    # arm never refused: the driver's telemetry is read every loop round, whatever observers ask
    assert result["arm_refusals"] == {} and result["daemon"]["stale_refusals"] == 0
    # the mechanism, counted by the daemon's own sequence numbers: the loop reads the socket before
    # every request it handles and takes a stop first, so from a stop's receipt to its reply no
    # other request is handled, whatever is waiting; since the last moment the loop saw the socket
    # empty (before the stop came in) at most the one request in progress when it came; and the
    # stop is answered in the loop round that read it or the next
    assert result["stops"] == 40 and result["daemon"]["stop_latency"]["count"] >= 40
    assert result["received_seq_increasing"]
    assert result["max_handled_since_received"] == 0
    assert result["daemon"]["stop_latency"]["max_handled_since_received"] == 0
    assert result["max_requests_ahead"] <= 1 and result["max_rounds"] <= 1
    # What the daemon did for observers ahead of each stop, on its main thread's CPU clock in
    # periods of the real-time loop, is a figure, not a bound: the CPU time of the same work grows
    # with the host's load (cold caches, syscalls; median 0.21-0.53 of a period, max 0.64-1.73 in
    # runs at load average 9-25), so it is reported here and measured by
    # bench/reliability/observer_flood.py (docs/reliability.md). What the code controls is asserted:
    # every stop was measured, and observers' reads are served from cached bytes, not a status of
    # 3000 jobs or a page of 1000 rows built per request (more served from the cache than built).
    # The stop's guarantee is the driver's own stop socket (test_stop_socket.py); this test's stops
    # take the control endpoint on purpose.
    assert result["rate_hz"] == 1000.0
    assert result["stop_work_periods"]["count"] == 40
    cache = result["daemon"]["read_cache"]
    assert cache["hits"] > cache["built"] > 0


@pytest.mark.parametrize("config, field", [
    ({"processing": {"trim_s": "0.5"}}, "config.processing.trim_s"),
    ({"motor_couplings": "wrist"}, "config.motor_couplings"),
    ({"motor_couplings": [[0, 0, 0, 0, "1", 1, 0]]}, "config.motor_couplings[0]"),
    ({"rotor_inertia": "yes"}, "config.rotor_inertia"),
    ({"chunk_samples": 1.5}, "config.chunk_samples"),
    ({"processing": {"cutoff_hz": [5]}}, "config.processing.cutoff_hz"),
    # values, not only types: built as the worker builds it
    ({"method": "nonsense"}, "config.method"),
    ({"friction": "magic"}, "config.friction"),
    ({"processing": {"trim_s": -5}}, "config.processing.trim_s"),
    ({"processing": {"rloess_span": 2.0}}, "config.processing.rloess_span"),
    ({"chunk_samples": 5}, "config.chunk_samples"),
    ({"recording_weights": [0.0]}, "config.recording_weights"),
    ({"colour": "red"}, "config.colour"),
])
def test_identify_config_is_checked_at_submit_naming_the_field(crowded, config, field):
    """Refused at submit with one line naming the field: no job is queued to fail in the worker."""
    before = crowded.client.call("jobs", limit=1)["total"]
    with pytest.raises(DaemonError) as err:
        crowded.client.call("identify", recordings=[crowded.ids[0]], config=config)
    assert err.value.code == "invalid_args" and f"'{field}'" in err.value.message
    assert "\n" not in err.value.message and err.value.details.get("field") == "args.config"
    assert crowded.client.call("jobs", limit=1)["total"] == before


def test_a_well_typed_identify_config_passes_the_check_and_the_worker_builds_it():
    """What the check at submit passes, the worker builds (one list of fields for both)."""
    from robodyn.jobs.identification import _config_from_dict, check_config

    doc = {"method": "wls", "friction": "stribeck", "chunk_samples": 200, "rotor_inertia": False,
           "motor_couplings": [[0, 0, 0, 0, 0, 1, 0.5]], "friction_scales": [0.1] * 7,
           "recording_weights": "equal",
           "processing": {"trim_s": 1, "cutoff_hz": "auto", "rate_hz": None, "q_cutoff_hz": 20.0}}
    assert check_config(doc) is None
    config = _config_from_dict(doc)
    assert config.friction_scales == [0.1] * 7 and config.processing.trim_s == 1
    assert config.recording_weights == "equal" and config.motor_couplings == ((0, 0, 0, 0, 0, 1, 0.5),)


def test_cached_replies_are_the_bytes_of_the_plain_encoding():
    """A cached read's reply (header spliced onto the result's bytes, rows encoded one by one and
    kept) decodes to, and is byte for byte, what ok_reply gives: clients cannot tell them apart."""
    kept = {}

    def pack_row(row):
        return kept.setdefault(id(row), (row, P.packb(row)))[1]

    rows = [{"id": f"r{k}", "samples": k, "status": "completed", "lost": None} for k in range(1000)]
    for n in (0, 1, 15, 16, 1000):
        result = P.page_reply("recordings", rows[:n], 0, 1000, 1000)
        for rid in (None, 7, "a-string-id"):
            assert P.ok_reply_packed(rid, P.pack_result(result, pack_row)) == P.ok_reply(rid, result)
    nested = {f"k{k}": {"v": [1, 2.5, "x"]} for k in range(20)}  # a map of 16+ keys, no listing
    assert P.pack_result(nested, pack_row) == P.packb(nested)
    assert P.unpackb(P.ok_reply_packed(3, P.pack_result({"jobs": rows[:2], "total": 2}, pack_row))) == \
        {"v": P.PROTOCOL_VERSION, "id": 3, "ok": True, "result": {"jobs": rows[:2], "total": 2}}
