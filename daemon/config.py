"""Daemon configuration (TOML). With no file the daemon drives a simulated Panda on loopback.

Example (every key optional)::

    [daemon]
    control = "tcp://127.0.0.1:47770"    # ROUTER, requests / replies
    state = "tcp://127.0.0.1:47771"      # PUB, state stream
    data_dir = "~/.local/share/robodyn"  # recordings go to <data_dir>/recordings

    [robot]
    name = "panda"        # model: built-in name or a .toml / .urdf file
    driver = "sim"        # sim | franka | ur

    [driver]              # options of the chosen driver (sim: see drivers/sim.py SimConfig)
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


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "robodyn"


@dataclass
class DaemonConfig:
    control: str = DEFAULT_CONTROL
    state: str = DEFAULT_STATE
    data_dir: str = field(default_factory=lambda: str(default_data_dir()))
    robot: str = "panda"
    driver: str = "sim"
    driver_options: dict = field(default_factory=lambda: {"speed": 1.0})
    rt_priority: int = 0
    publish_interval_ms: float = 0.5
    settle_s: float = 0.2
    block_ms: float = 50.0
    compression: str = "zstd"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "DaemonConfig":
        return cls(**d)

    @property
    def recordings_dir(self) -> Path:
        return Path(self.data_dir).expanduser() / "recordings"


_SECTIONS = {
    "daemon": {"control": str, "state": str, "data_dir": str},
    "robot": {"name": str, "driver": str},
    "loop": {"rt_priority": int, "publish_interval_ms": (int, float), "settle_s": (int, float)},
    "recorder": {"block_ms": (int, float), "compression": str},
}


def load_config(path: str | Path | None = None, overrides: dict | None = None) -> DaemonConfig:
    """Read a TOML file (or nothing) and validate every key; ValueError names the bad key."""
    doc: dict = {}
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"config file {path} does not exist")
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
                if isinstance(value, bool) or not isinstance(value, typ):
                    raise ValueError(f"config: [{section}].{key} has the wrong type ({type(value).__name__})")
                attr = {"name": "robot"}.get(key, key) if section == "robot" else key
                setattr(cfg, attr, value)
    if "driver" in doc:
        if not isinstance(doc["driver"], dict):
            raise ValueError("config: [driver] must be a table of driver options")
        cfg.driver_options = dict(doc["driver"])
    elif cfg.driver != "sim":
        cfg.driver_options = {}
    for key, value in (overrides or {}).items():
        if value is not None:
            setattr(cfg, key, value)
    check_config(cfg)
    return cfg


def check_config(cfg: DaemonConfig) -> None:
    for name in ("control", "state"):
        ep = getattr(cfg, name)
        if not (ep.startswith("tcp://") or ep.startswith("ipc://")):
            raise ValueError(f"config: [daemon].{name} must be a tcp:// or ipc:// endpoint, got {ep!r}")
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
