"""10 000 random and malformed frames on the control endpoint: the daemon stays alive, every
frame gets an error reply or is dropped with a log line, and the robot never moves."""

import re
import time

import pytest

from robodyn.daemon import security
from tests.daemon.conftest import DaemonProcess

from .scenarios import fuzz
from .schema_fuzz import ARM_TOKEN

FRAMES = 10_000
# the daemon's rate limit on dropped-message warnings (daemon/server.py: RateLimitedLog(log, window_s=5.0),
# burst 5): at most 5 lines one by one per window of at least 5 s, the rest in one summary line
DROPPED_LOG_WINDOW_S = 5.0
DROPPED_LOG_BURST = 5


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    # armed, but `arm` needs a token the fuzzer does not have: its random `arm` / `disarm`
    # requests exercise that path too, and no junk trajectory can ever be accepted anyway
    d = DaemonProcess(tmp_path_factory.mktemp("fuzz"), arm=False,
                      extra_config=f'[safety]\nrequire_arm = true\narm_token_sha256 = "{security.token_hash(ARM_TOKEN)}"\n')
    yield d
    d.stop()
    assert d.proc.returncode == 0


def dropped_in_log(text: str) -> int:
    single = text.count("dropped a control message with")
    summed = sum(int(n) for n in re.findall(r"(\d+) more dropped control messages", text))
    return single + summed


def test_fuzzing_the_control_endpoint(daemon, figure):
    before = daemon.commands()
    t0 = time.monotonic()
    result = fuzz(daemon.control, FRAMES)  # raises if any frame goes unanswered
    assert daemon.proc.poll() is None
    assert "internal" not in result["error_codes"], result  # no handler crashed on any input
    st = daemon.client.status()
    assert st["control"]["dropped"] == result["multi_frame"]
    deadline = time.monotonic() + 60  # the rate-limited summary line comes at the end of its window
    while dropped_in_log(daemon.log_text()) < result["multi_frame"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert dropped_in_log(daemon.log_text()) == result["multi_frame"]
    # no journal flood: at most `burst` lines one by one per window of the rate limit, counted against
    # the windows this test spanned (a loaded host takes longer and so may log a few more windows)
    windows = int((time.monotonic() - t0) // DROPPED_LOG_WINDOW_S) + 2
    assert daemon.log_text().count("dropped a control message with") <= DROPPED_LOG_BURST * windows
    after = daemon.commands()
    assert after["starts"] == before["starts"] and after["writes"] == before["writes"]
    assert st["safety"]["armed"] is False
    assert daemon.client.ping()["protocol"] == 1
    figure(f"{FRAMES} fuzz frames: all answered, daemon alive, robot never commanded",
           seconds=round(result["seconds"], 1), error_codes=result["error_codes"], ok_replies=result["ok_replies"],
           dropped_multi_frame=result["multi_frame"])


SCHEMA_EXAMPLES = 1_500  # CI; bench/reliability/run.py sends 100 000


def test_schema_fuzzing_every_reply_is_an_error_naming_the_field(daemon, figure):
    """Property (hypothesis, from the protocol schema): one field of a valid request made
    invalid (wrongly typed, nested, oversized, out of range, unknown, missing) always gets a
    well-formed error reply naming that field, never `internal`, and the robot never moves."""
    from .schema_fuzz import run_property

    before = daemon.commands()
    result = run_property(daemon.control, SCHEMA_EXAMPLES)
    assert result["frames"] >= SCHEMA_EXAMPLES and result["internal"] == 0, result
    assert daemon.proc.poll() is None
    after = daemon.commands()
    assert after["starts"] == before["starts"] and after["writes"] == before["writes"]
    figure(f"{result['frames']} schema-fuzzed frames: every reply an error naming the field, 0 internal",
           seconds=round(result["seconds"], 1), kinds=result["kinds"], codes=result["codes"])


def _red_team_documents() -> dict:
    """The red team's submissions: (document, field the reply must name, text the message must hold)."""
    from .schema_fuzz import READY_Q, fourier_document

    huge_coefficient = fourier_document(2)
    huge_coefficient["params"]["a"][3][1] = 1e308
    far_start = {"family": "point_to_point", "dof": 7,
                 "params": {"q_start": [1e300] * 7, "q_end": list(READY_Q), "duration": 2.0}}
    tiny_wf = fourier_document(2)
    tiny_wf["params"]["wf"] = 1e-300
    period_typo = fourier_document(2)
    period_typo["params"].pop("periods")
    period_typo["params"]["period"] = 3
    # one joint per part: 1001 parts stay under the daemon's cap on elements per request (10 000 do not)
    rest = {"family": "point_to_point", "params": {"q_start": [0.0], "q_end": [0.0], "duration": 0.01}}
    many_parts = {"family": "sequence", "params": {"parts": [rest] * 1001}}
    return {
        "coefficient 1e308": (huge_coefficient, "args.trajectory.params.a",
                              "params.a: 1e+308 at [3][1] is outside [-1000, 1000] rad/s"),
        "q_start 1e300": (far_start, "args.trajectory.params.q_start",
                          "params.q_start: 1e+300 at [0] is outside [-100, 100] rad"),
        "wf 1e-300": (tiny_wf, "args.trajectory.params.wf", "params.wf: 1e-300 is outside [0.0001, 100] rad/s"),
        "periods misspelled": (period_typo, "args.trajectory.params.period",
                               "params.period: unknown field of family 'fourier'; did you mean 'periods'?"),
        "1001 parts": (many_parts, "args.trajectory.params.parts", "params.parts: 1001 parts is outside [1, 1000]"),
    }


@pytest.mark.parametrize("name", list(_red_team_documents()))
def test_the_red_teams_trajectories_are_refused_naming_the_field_and_the_limit(daemon, name):
    """Before: `internal` (a coefficient of 1e308), "not enough disk space" (q_start = 1e300, from
    a move to the start of 1e300 rad), "(34, 'Numerical result out of range')" (wf = 1e-300), a
    misspelled `periods` ignored (the run lasted a third of what was written), any number of
    parts accepted (10 000 took seconds to parse). Now the parse refuses each, before any estimate, naming the field and the limit."""
    import msgpack

    from robodyn.daemon import access

    doc, field, text = _red_team_documents()[name]
    before = daemon.commands()
    # the access token before the arguments: a large request is authorised before its body is read
    frame = {"v": 1, "id": 3, "cmd": "submit_run", "auth": access.client_token(daemon.control),
             "args": {"robot": "panda", "trajectory": doc}}
    reply = daemon.client.call_raw(msgpack.packb(frame, use_bin_type=True), timeout=120.0)
    err = reply["error"]
    assert err["code"] == "invalid_trajectory", err
    assert err["message"].startswith(f"trajectory: {text}"), err["message"]
    assert err["details"]["field"] == field and "\n" not in err["message"]
    after = daemon.commands()
    assert after["starts"] == before["starts"] and after["writes"] == before["writes"]
