"""Daemon configuration (TOML). With no file the daemon drives a simulated Panda on loopback.

Example (every key optional)::

    [daemon]
    control = "tcp://127.0.0.1:47770"    # ROUTER, requests / replies
    state = "tcp://127.0.0.1:47771"      # PUB, state stream (served by the publisher process). Default:
                                         # an ipc:// socket beside the access token (only this user; with
                                         # CurveZMQ: tcp://127.0.0.1:47771). TCP without CurveZMQ: any
                                         # local account can read the stream (a warning at start)
    max_subscribers = 32                 # state-stream connections; more are refused at handshake
    data_dir = "~/.local/share/robodyn"  # recordings go to <data_dir>/recordings
    warm_up_limit_s = 1800               # start-up waits for the validation kernels' compile while it
                                         # progresses (CPU time gained), at most this long; then it
                                         # starts without (the first validation compiles them)

    [robot]
    name = "panda"        # model: built-in name or a .toml / .urdf file
    driver = "sim"        # one of `robodyn drivers` (drivers/registry.py): sim | franka | ur

    [driver]              # options of the chosen driver: `robodyn drivers NAME`
    speed = 1.0           # sim: 1 = real time, 0 = as fast as possible
    seed = 0

    [loop]
    rt_priority = 0       # SCHED_FIFO priority of the driver process (0: leave the scheduler alone)
    publish_interval_ms = 0.5  # a state batch goes out on the first cycle at least this long after the
                               # previous one (or when 256 samples wait): one sample per batch in
                               # real time at 1 kHz, larger batches when the sim runs faster
    settle_s = 0.2        # hold after the trajectory ends before braking

    [recorder]
    block_ms = 50         # recorder writes and flushes a block at least this often (crash loss bound)
    compression = "zstd"  # zstd | lz4 | none
    ros2 = true           # also write ROS 2 channels (/joint_states, /tf, /robot_description) for Foxglove / ROS 2

    [security]            # remote access (docs/installation.md); without it: loopback only
    curve_secret_key = "/etc/robodyn/keys/daemon.key_secret"  # enables CurveZMQ on both endpoints
    clients = { alice = "<40-char Z85 public key>" }       # allow-list: name -> public key
    operators = ["alice"]  # optional: only these clients may arm and submit (default: any allowed client)
    submitters = ["bob"]   # optional: these clients may also submit runs and identification jobs
    # without curve_secret_key: every request but abort/disarm/ping needs the daemon's access token
    # (daemon/access.py), written at start to $XDG_RUNTIME_DIR/robodyn/<endpoint>.token (0600)
    token_file = "/run/robodyn/token"  # optional: elsewhere (its directory must exist, be ours)
    token_file_mode = 0o640            # 0o600 (default: this user only) or 0o640 (its group too)

    [jobs]
    runner = "daemon"     # "service": robodyn-worker.service runs identification jobs (own cgroup)

    [safety]
    require_arm = true    # motion needs `robodyn arm` (default: true, for every driver)
    arm_token_sha256 = "" # optional: `robodyn arm` must present the token with this SHA-256
    max_run_s = 7200      # longest trajectory accepted (s): bounds validation time and file size
    max_validation_cost = 3e9  # samples x terms the limit check may evaluate (duration x 2 rate x terms)
    min_free_mb = 64      # a run is refused unless its estimated file size + this much is free
    supervisor_silence_s = 0.5  # while a run moves the robot, the driver ramps it to rest and ends
                          # the run (aborted, daemon disarmed) once the main process, its supervisor,
                          # has sent it nothing for this long (0.1..5 s; it sends every 25 ms, its
                          # loop wakes at least every 50 ms). Time the main process spent runnable
                          # but waiting for a CPU is not counted: an overloaded host is not a frozen
                          # supervisor. Stopped (SIGSTOP) or stuck on its CPU, all of it counts
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

DEFAULT_CONTROL = "tcp://127.0.0.1:47770"
DEFAULT_STATE = "tcp://127.0.0.1:47771"
# [safety].supervisor_silence_s: twice the main loop's longest idle gap (its 50 ms poll) at least,
# so that an idle supervisor is never taken for a silent one; a robot left unsupervised for
# more than a few seconds is not supervised
SUPERVISOR_SILENCE_RANGE_S = (0.1, 5.0)


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "robodyn"


@dataclass
class DaemonConfig:
    control: str = DEFAULT_CONTROL
    state: str = ""  # "": resolve_state's default
    max_subscribers: int = 32
    warm_up_limit_s: float = 1800.0  # daemon/warm_up.py DEFAULT_LIMIT_S
    data_dir: str = field(default_factory=lambda: str(default_data_dir()))
    robot: str = "panda"
    driver: str = "sim"
    driver_options: dict = field(default_factory=lambda: {"speed": 1.0})
    rt_priority: int = 0
    publish_interval_ms: float = 0.5
    settle_s: float = 0.2
    block_ms: float = 50.0
    compression: str = "zstd"
    ros2: bool = True  # ROS 2 channels for Foxglove / ROS 2 tools besides the lossless msgpack blocks
    curve_secret_key: str = ""
    clients: dict = field(default_factory=dict)
    operators: list = field(default_factory=list)
    submitters: list = field(default_factory=list)
    token_file: str = ""  # "" -> daemon/access.py default_token_dir()
    token_file_mode: int = 0o600
    require_arm: bool | None = None  # None: required (an operator arms even a simulator: same habits)
    arm_token_sha256: str = ""
    max_run_s: float = 7200.0
    # validation budget: samples (duration x rate x 2) x terms per sample (trajectory + torque); a
    # 2 h run of a 5-harmonic Fourier+quintic Panda excitation costs 2.3e9 (bench/reliability)
    max_validation_cost: float = 3e9
    min_free_mb: float = 64.0
    # the driver stops motion when the main process is silent this long (rtloop.py SupervisorWatch)
    supervisor_silence_s: float = 0.5
    jobs_runner: str = "daemon"  # "service": robodyn-worker.service runs the identification jobs

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "DaemonConfig":
        return cls(**d)

    @property
    def recordings_dir(self) -> Path:
        return Path(self.data_dir).expanduser() / "recordings"

    @property
    def arming_required(self) -> bool:
        """Motion needs an operator's `arm` for every driver, the simulator included (the same
        habits on a simulated and a real robot), unless [safety].require_arm = false."""
        return True if self.require_arm is None else bool(self.require_arm)

    @property
    def curve(self) -> bool:
        return bool(self.curve_secret_key)


_SECTIONS = {
    "daemon": {"control": str, "state": str, "data_dir": str, "max_subscribers": int,
               "warm_up_limit_s": (int, float)},
    "robot": {"name": str, "driver": str},
    "loop": {"rt_priority": int, "publish_interval_ms": (int, float), "settle_s": (int, float)},
    "recorder": {"block_ms": (int, float), "compression": str, "ros2": bool},
    "security": {"curve_secret_key": str, "clients": dict, "operators": list, "submitters": list,
                 "token_file": str, "token_file_mode": int},
    "jobs": {"runner": str},
    "safety": {"require_arm": bool, "arm_token_sha256": str, "max_run_s": (int, float), "min_free_mb": (int, float),
               "max_validation_cost": (int, float), "supervisor_silence_s": (int, float)},
}


def load_config(path: str | Path | None = None, overrides: dict | None = None) -> DaemonConfig:
    """Read a TOML file (or nothing) and validate every key; ValueError names the bad key."""
    doc: dict = {}
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        try:
            doc = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: not valid TOML: {exc}") from None
    unknown = set(doc) - set(_SECTIONS) - {"driver"}
    if unknown:
        raise ValueError(f"config: unknown section(s) {sorted(unknown)}; expected {sorted([*_SECTIONS, 'driver'])}")
    cfg = DaemonConfig()
    for section, keys in _SECTIONS.items():
        table = doc.get(section, {})
        if not isinstance(table, dict):
            raise ValueError(f"config: [{section}] must be a table")
        bad = set(table) - set(keys)
        if bad:
            raise ValueError(f"config: unknown key(s) {sorted(bad)} in [{section}]; expected {sorted(keys)}")
        for key, typ in keys.items():
            if key in table:
                value = table[key]
                if (isinstance(value, bool) and typ is not bool) or not isinstance(value, typ):
                    raise ValueError(f"config: [{section}].{key} has the wrong type ({type(value).__name__})")
                attr = {"name": "robot"}.get(key, key) if section == "robot" else key
                attr = "jobs_runner" if section == "jobs" else attr
                setattr(cfg, attr, value)
    if "driver" in doc:
        if not isinstance(doc["driver"], dict):
            raise ValueError("config: [driver] must be a table of driver options")
        cfg.driver_options = dict(doc["driver"])
    for key, value in (overrides or {}).items():
        if value is not None:
            setattr(cfg, key, value)
    if "driver" not in doc and cfg.driver != "sim":  # the default options are the simulator's
        cfg.driver_options = {}
    cfg.state = resolve_state(cfg)
    check_config(cfg)
    return cfg


def resolve_state(cfg: DaemonConfig) -> str:
    """The state stream's endpoint: the configured one, else an ipc socket beside the access
    token (daemon/access.py: only who may read the token can connect), else, with CurveZMQ
    (no token file; remote subscribers), DEFAULT_STATE."""
    if cfg.state:
        return cfg.state
    if cfg.curve:
        return DEFAULT_STATE
    from .access import state_socket_path

    return f"ipc://{state_socket_path(cfg.control, cfg.token_file)}"


def state_stream_open(cfg: DaemonConfig) -> bool:
    """True when any local account can read the state stream: TCP without CurveZMQ."""
    return cfg.state.startswith("tcp://") and not cfg.curve


def check_config(cfg: DaemonConfig) -> None:
    for name in ("control", "state"):
        ep = getattr(cfg, name)
        if not (ep.startswith("tcp://") or ep.startswith("ipc://")):
            raise ValueError(f"config: [daemon].{name} must be a tcp:// or ipc:// endpoint, got {ep!r}")
    if not 1 <= cfg.max_subscribers <= 1000:
        raise ValueError(f"config: [daemon].max_subscribers must be in [1, 1000], got {cfg.max_subscribers}")
    if not 0 <= cfg.warm_up_limit_s <= 86400:
        raise ValueError(f"config: [daemon].warm_up_limit_s must be in [0, 86400], got {cfg.warm_up_limit_s}")
    if not 0 <= cfg.rt_priority <= 99:
        raise ValueError(f"config: [loop].rt_priority must be 0..99, got {cfg.rt_priority}")
    if not 0 < cfg.publish_interval_ms <= 50:
        raise ValueError(f"config: [loop].publish_interval_ms must be in (0, 50], got {cfg.publish_interval_ms}")
    if not 0 <= cfg.settle_s <= 10:
        raise ValueError(f"config: [loop].settle_s must be in [0, 10], got {cfg.settle_s}")
    if not 1 <= cfg.block_ms <= 100:
        raise ValueError(f"config: [recorder].block_ms must be in [1, 100] (the crash-loss bound), got {cfg.block_ms}")
    if cfg.compression not in ("zstd", "lz4", "none"):
        raise ValueError(f"config: [recorder].compression must be zstd, lz4 or none, got {cfg.compression!r}")
    check_security(cfg)
    if cfg.jobs_runner not in ("daemon", "service"):
        raise ValueError(f"config: [jobs].runner must be 'daemon' or 'service', got {cfg.jobs_runner!r}")
    if not 1 <= cfg.max_run_s <= 86400:
        raise ValueError(f"config: [safety].max_run_s must be in [1, 86400], got {cfg.max_run_s}")
    if not 1e6 <= cfg.max_validation_cost <= 1e12:
        raise ValueError(f"config: [safety].max_validation_cost must be in [1e6, 1e12], got {cfg.max_validation_cost}")
    if cfg.min_free_mb < 0:
        raise ValueError(f"config: [safety].min_free_mb must be >= 0, got {cfg.min_free_mb}")
    low, high = SUPERVISOR_SILENCE_RANGE_S
    if not low <= cfg.supervisor_silence_s <= high:
        raise ValueError(f"config: [safety].supervisor_silence_s must be in [{low:g}, {high:g}] s, "
                         f"got {cfg.supervisor_silence_s}")
    token = cfg.arm_token_sha256
    if token and (len(token) != 64 or any(c not in "0123456789abcdefABCDEF" for c in token)):
        raise ValueError("config: [safety].arm_token_sha256 must be 64 hex digits "
                         "(printf %s TOKEN | sha256sum)")
    # the driver and its options against the driver's declared schema, without importing the
    # driver or its client library (drivers/registry.py): refused here, not in the driver process
    from robodyn.drivers.registry import check_options

    try:
        check_options(cfg.driver, {"robot": cfg.robot, **cfg.driver_options})
    except ValueError as exc:
        raise ValueError(f"config: {exc}") from None


def check_security(cfg: DaemonConfig) -> None:
    """Loopback unless CurveZMQ is configured with a non-empty allow-list; keys well formed."""
    from .security import _check_z85, is_loopback_endpoint

    for name in ("control", "state"):
        ep = getattr(cfg, name)
        if not is_loopback_endpoint(ep) and not cfg.curve:
            raise ValueError(f"config: [daemon].{name} = {ep!r} is reachable from other hosts; remote access "
                             "needs CurveZMQ: set [security].curve_secret_key and [security].clients "
                             "(see docs/installation.md), or bind to 127.0.0.1")
    for client, key in cfg.clients.items():
        if not isinstance(key, str):
            raise ValueError(f"config: [security].clients.{client} must be a public key string")
        _check_z85(key, f"config: [security].clients.{client}")
    if cfg.curve and not cfg.clients:
        raise ValueError("config: [security].curve_secret_key is set but [security].clients is empty: "
                         "no client could connect")
    for role in ("operators", "submitters"):
        names = getattr(cfg, role)
        unknown = [o for o in names if o not in cfg.clients]
        if unknown:
            raise ValueError(f"config: [security].{role} {unknown} are not in [security].clients")
        if names and not cfg.curve:
            raise ValueError(f"config: [security].{role} needs CurveZMQ (clients are identified by their key)")
    if cfg.token_file_mode not in (0o600, 0o640):
        raise ValueError(f"config: [security].token_file_mode must be 0o600 or 0o640, got {cfg.token_file_mode:#o}")
    if cfg.token_file and not Path(cfg.token_file).expanduser().is_absolute():
        raise ValueError(f"config: [security].token_file must be an absolute path, got {cfg.token_file!r}")
    if cfg.submitters and not cfg.operators:
        raise ValueError("config: [security].submitters needs [security].operators (without operators every "
                         "allowed client may arm and submit)")
