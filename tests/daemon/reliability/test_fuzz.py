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
