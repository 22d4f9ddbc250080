"""The driver contract: one small lifecycle every robot driver implements.

Modelled on ros2_control's hardware interface::

    describe()          what the robot is: joints, limits, native rate, control modes, signals+units
    connect()           open the link to the robot (or build the simulator); state can be read after
    start(mode)         claim a control mode ("position" or "torque"): brakes open, commands accepted
    read()  -> state    block until the robot's next cycle and return its state
    write(command)      the command for the coming cycle (only between start and stop)
    stop()              stop commanding: the robot holds still (brakes / protective hold)
    close()             release the link

Between ``connect`` and ``start`` a driver streams state without commanding (monitor mode): the
daemon always reads, so the live stream works while no run is active.

Data ownership: ``read()`` returns the driver's own preallocated :class:`JointState`; its arrays
are overwritten by the next ``read()``. A caller that keeps a sample copies it. ``write()`` copies
what it needs out of the caller's :class:`JointCommand`. Neither allocates per cycle, so the 1 kHz
loop stays free of garbage.

Errors are typed so the daemon reacts to the cause, not to a message string:
:class:`ConnectionLost`, :class:`ProtectiveStop` (alias :data:`Reflex`), :class:`LimitViolation`.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from dataclasses import MISSING, asdict, dataclass, field, fields
from enum import Enum
from typing import ClassVar

import numpy as np

# Signals every driver must provide, so the daemon can hold, track and record any robot.
REQUIRED_SIGNALS = ("q", "qd", "tau")


class ControlMode(str, Enum):
    POSITION = "position"  # joint position (+ velocity / acceleration feedforward), robot's own impedance
    TORQUE = "torque"  # joint torque on top of the robot's own gravity compensation


# --------------------------------------------------------------------------- errors


class DriverError(Exception):
    """Base of every error a driver raises. ``state`` holds the last states seen, if any."""

    def __init__(self, message: str, state: dict | None = None):
        super().__init__(message)
        self.state = state or {}


class ConnectionLost(DriverError):
    """The link to the robot broke (network, controller restart, simulator gone)."""


class ProtectiveStop(DriverError):
    """The robot stopped itself: a reflex (Franka), protective or safety stop (UR)."""


Reflex = ProtectiveStop


class LimitViolation(DriverError):
    """The driver refused a command outside the robot's limits (the last guard before motion).

    Not to be confused with :class:`robodyn.limits.LimitViolation`, which rejects a whole
    trajectory before it ever reaches a driver.
    """


class LifecycleError(DriverError):
    """A lifecycle call out of order, e.g. ``write`` before ``start``."""


# --------------------------------------------------------------------------- description


@dataclass(frozen=True)
class Signal:
    name: str
    width: int  # values per sample (usually one per joint)
    unit: str
    description: str = ""


@dataclass(frozen=True)
class DriverDescription:
    driver: str  # driver kind, e.g. "sim", "franka", "ur"
    robot: str  # robot model name
    joint_names: tuple[str, ...]
    limits: dict  # LIMIT_FIELDS name -> list per joint
    rate_hz: float  # native control / streaming rate
    control_modes: tuple[str, ...]
    signals: tuple[Signal, ...]
    info: dict = field(default_factory=dict)  # driver-specific facts (versions, seeds, gains)
    # the modes in which write() tracks a command's q, qd, qdd (the daemon runs trajectories only
    # in these); in the others it applies command.tau as given (the simulator's raw torque mode)
    trajectory_modes: tuple[str, ...] = (ControlMode.POSITION.value,)

    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def width(self) -> int:
        return sum(s.width for s in self.signals)

    def columns(self) -> list[str]:
        """Flat column names of a sample: ``q1..qn``, ``qd1..qdn``, ... in signal order."""
        cols = []
        for s in self.signals:
            cols += [s.name] if s.width == 1 else [f"{s.name}{i + 1}" for i in range(s.width)]
        return cols

    def offsets(self) -> dict[str, slice]:
        out, start = {}, 0
        for s in self.signals:
            out[s.name] = slice(start, start + s.width)
            start += s.width
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["joint_names"] = list(self.joint_names)
        d["control_modes"] = list(self.control_modes)
        d["trajectory_modes"] = list(self.trajectory_modes)
        d["signals"] = [asdict(s) for s in self.signals]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DriverDescription":
        return cls(driver=d["driver"], robot=d["robot"], joint_names=tuple(d["joint_names"]),
                   limits=dict(d["limits"]), rate_hz=float(d["rate_hz"]),
                   control_modes=tuple(d["control_modes"]),
                   signals=tuple(Signal(**s) for s in d["signals"]), info=dict(d.get("info", {})),
                   trajectory_modes=tuple(d.get("trajectory_modes", (ControlMode.POSITION.value,))))


def check_description(desc: DriverDescription) -> None:
    """Raise ValueError if a driver's description breaks the contract."""
    names = [s.name for s in desc.signals]
    missing = [s for s in REQUIRED_SIGNALS if s not in names]
    if missing:
        raise ValueError(f"driver {desc.driver}: missing required signal(s) {missing}")
    if len(set(names)) != len(names):
        raise ValueError(f"driver {desc.driver}: duplicate signal names {names}")
    for s in REQUIRED_SIGNALS:
        if next(x for x in desc.signals if x.name == s).width != desc.dof:
            raise ValueError(f"driver {desc.driver}: signal {s} must have one value per joint")
    unknown = set(desc.control_modes) - {m.value for m in ControlMode}
    if unknown:
        raise ValueError(f"driver {desc.driver}: unknown control mode(s) {sorted(unknown)}")
    if not set(desc.trajectory_modes) <= set(desc.control_modes):
        raise ValueError(f"driver {desc.driver}: trajectory mode(s) {sorted(set(desc.trajectory_modes) - set(desc.control_modes))} "
                         f"are not among its control modes {list(desc.control_modes)}")
    if not desc.rate_hz > 0:
        raise ValueError(f"driver {desc.driver}: rate_hz must be > 0")


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class OptionSpec:
    """One driver option: its default, what values it takes and one line on what it does.

    A number option (or each number of a list, or each value of a table) lies within
    ``[low, high]``; ``low_open`` makes the lower bound exclusive (``> low``)."""

    name: str
    default: object
    help: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple = ()
    types: tuple = ()  # accepted Python types; () accepts anything

    def limit(self) -> str:
        """The accepted values, as a phrase: ``one of 'a', 'b'``, ``in [0, 0.5]``, ``> 0``."""
        if self.choices:
            return "one of " + ", ".join(repr(c) if isinstance(c, str) else f"{c:g}" for c in self.choices)
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"<= {self.high:g}"
        return ""

    def check(self, value) -> None:
        """Raise ValueError with one line naming the option and its limit."""
        if value is None and self.default is None:
            return
        names = [_TYPE_NAMES.get(t, t.__name__) for t in self.types if not (t is int and float in self.types)]
        kinds = " or ".join(dict.fromkeys(names))
        if self.types and (not isinstance(value, self.types) or (isinstance(value, bool) and bool not in self.types)):
            raise ValueError(f"driver.{self.name}: expected {kinds}, got {value!r}")
        if self.choices:
            if value not in self.choices:
                raise ValueError(f"driver.{self.name}: expected {self.limit()}, got {value!r}")
            return
        items = value.items() if isinstance(value, dict) else \
            enumerate(value) if isinstance(value, (list, tuple)) else ((None, value),)
        for key, x in items:
            if self.low is None and self.high is None:
                break
            where = f" [{key}]" if key is not None else ""
            if isinstance(x, bool) or not isinstance(x, (int, float)):
                raise ValueError(f"driver.{self.name}{where}: expected a number {self.limit()}, got {x!r}")
            below = x <= self.low if self.low_open else x < self.low if self.low is not None else False
            above = self.high is not None and x > self.high
            if below or above or x != x:  # x != x: NaN
                raise ValueError(f"driver.{self.name}{where}: expected {self.limit()}, got {x!r}")


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list",
               tuple: "a list", dict: "a table", type(None): "nothing"}


def option(default=None, help: str = "", *, low: float | None = None, high: float | None = None,
           low_open: bool = False, choices: tuple = (), types: tuple = (), factory=None):
    """A field of a :class:`DriverOptions` dataclass with its schema (see :class:`OptionSpec`)."""
    meta = {"option": dict(help=help, low=low, high=high, low_open=low_open, choices=tuple(choices),
                           types=tuple(types))}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


NUMBER = (int, float)
NUMBERS = (int, float, list, tuple)  # one value for every joint, or one per joint


class DriverOptions:
    """Base of a driver's options dataclass: fields made with :func:`option` are its schema.

    ``from_dict`` refuses an unknown option naming it and the accepted ones, checks each value
    against its type and range (one line naming the option and the limit), then calls
    :meth:`check` for what depends on several options. Every driver has a ``robot`` option: the
    daemon passes ``[robot].name`` as it."""

    driver: ClassVar[str] = "driver"  # the driver's registered name, for messages

    @classmethod
    def schema(cls) -> tuple[OptionSpec, ...]:
        out = []
        for f in fields(cls):
            default = f.default_factory() if f.default is MISSING and f.default_factory is not MISSING else f.default
            out.append(OptionSpec(f.name, default, **f.metadata.get("option", {})))
        return tuple(out)

    @classmethod
    def from_dict(cls, d: dict | None):
        d = dict(d or {})
        known = sorted(f.name for f in fields(cls))
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(f"driver options: unknown {cls.driver} option(s) {unknown}; known: {known}")
        for spec in cls.schema():
            if spec.name in d:
                spec.check(d[spec.name])
        cfg = cls(**d)
        cfg.check()
        return cfg

    def check(self) -> None:
        """Checks across options; raise ValueError with one line."""


def load_robot(name: str, dof: int | None = None, arm: str = ""):
    """The robot model a driver describes; ``dof``: the only joint count this driver's arm has."""
    from robodyn.robot.loader import load_model

    model = load_model(name)
    if dof is not None and model.dof != dof:
        raise ValueError(f"driver.robot: a {arm} arm has {dof} joints, model {name!r} has {model.dof}")
    return model


def model_limits(model) -> dict:
    """A model's limits as a description's ``limits`` (LIMIT_FIELDS name -> list per joint)."""
    from robodyn.robot.model import LIMIT_FIELDS

    return {f: getattr(model, f).tolist() for f in LIMIT_FIELDS}


# --------------------------------------------------------------------------- state and command


class JointState:
    """One sample, preallocated once and filled in place by ``read()``.

    ``values`` is the flat sample in the description's signal order; ``q``, ``qd``, ``tau`` (and
    any other signal through :meth:`signal`) are views into it, never copies.
    """

    def __init__(self, desc: DriverDescription):
        self.values = np.zeros(desc.width)
        self.robot_time = 0.0  # s, the robot's own clock
        self._views = {name: self.values[sl] for name, sl in desc.offsets().items()}
        self.q = self._views["q"]
        self.qd = self._views["qd"]
        self.tau = self._views["tau"]

    def signal(self, name: str) -> np.ndarray:
        return self._views[name]


class JointCommand:
    """The command for one cycle, preallocated by its owner (the daemon's loop).

    Position mode uses ``q`` (and ``qd``, ``qdd`` as feedforward); torque mode uses ``tau``.
    """

    def __init__(self, dof: int):
        self.q = np.zeros(dof)
        self.qd = np.zeros(dof)
        self.qdd = np.zeros(dof)
        self.tau = np.zeros(dof)


# --------------------------------------------------------------------------- the contract


# The first target after start may differ from the measured position by one period at full speed
# plus this much (rad or m): measurement noise, settling and sag, not a jump. The daemon accepts a
# run while the robot stays this close to where the run was planned from (daemon.motion).
START_STATE_TOLERANCE = 0.02
STEP_SPEED_MARGIN = 1.05  # on qd_max: sampled trajectories validated at qd_max stay well inside


class CommandGuard:
    """The last check before a tracked position target reaches a driver: within one control
    period, no target may be further from the previous period's target (for the first period,
    from the measured start state) than the joint velocity limit allows.

    Trajectories are validated as a whole before a run (``robodyn.limits``); this catches what
    bypasses that, such as a script calling ``write`` directly or a corrupted command. A period
    ends at ``read()`` (every driver's read waits for the next sample), so several writes in one
    period are each checked against the same reference. Only a target the driver accepted becomes
    the reference. Holding the previous target always passes, so a stop is never refused.
    No allocation per call."""

    def __init__(self, desc: DriverDescription):
        self.qd_max = np.asarray(desc.limits["qd_max"], float)
        n = self.qd_max.shape[0]
        self.step_max = STEP_SPEED_MARGIN * self.qd_max / float(desc.rate_hz)
        self.names = desc.joint_names
        self.period_ms = 1e3 / float(desc.rate_hz)
        self.reference = np.zeros(n)  # previous period's accepted target, or the start state
        self.sent = np.zeros(n)  # the last target accepted in this period
        self.has_reference = False
        self.sent_this_period = False
        self.from_start = False
        self._limit = np.zeros(n)
        self._step = np.zeros(n)
        self._over = np.zeros(n, dtype=bool)

    def forget(self) -> None:
        self.has_reference = False
        self.sent_this_period = False

    def start_from(self, measured_q: np.ndarray) -> None:
        np.copyto(self.reference, measured_q)
        np.add(self.step_max, START_STATE_TOLERANCE, out=self._limit)
        self.has_reference = True
        self.from_start = True
        self.sent_this_period = False

    def period_ended(self) -> None:
        """At every read: the last accepted target becomes the next period's reference."""
        if self.sent_this_period:
            np.copyto(self.reference, self.sent)
            if self.from_start:
                np.copyto(self._limit, self.step_max)
                self.from_start = False
            self.sent_this_period = False

    def check(self, q: np.ndarray) -> None:
        if not self.has_reference:
            raise LifecycleError("write: read() the robot's state after start() before the first command "
                                 "(the first target is checked against the measured start state)")
        if q.shape != self.reference.shape:
            raise LimitViolation(f"position target: expected {self.reference.shape[0]} values, got shape {q.shape}")
        over = self._over
        np.isfinite(q, out=over)
        if not over.all():
            j = int(np.argmin(over))
            raise LimitViolation(f"position target on {self.names[j]}: non-finite value {q[j]}; nothing was sent")
        step = self._step
        np.subtract(q, self.reference, out=step)
        np.abs(step, out=step)
        np.greater(step, self._limit, out=over)
        if over.any():
            j = int(np.argmax(over))
            source = "the measured start state" if self.from_start else "the previous period's target"
            raise LimitViolation(f"position target on {self.names[j]} jumps {step[j]:.6g} from {source}; at most "
                                 f"{self._limit[j]:.6g} per {self.period_ms:g} ms period (qd_max "
                                 f"{self.qd_max[j]:.6g}); nothing was sent")

    def accepted(self, q: np.ndarray) -> None:
        np.copyto(self.sent, q)
        self.sent_this_period = True


class Driver(ABC):
    """Abstract robot driver. Subclasses implement the ``_do_*`` hooks; the public methods
    enforce the lifecycle order so every driver fails the same way on misuse."""

    kind: ClassVar[str] = ""  # the registered name (drivers/registry.py)
    options_type: ClassVar[type] = DriverOptions  # the driver's options dataclass

    def __init__(self):
        self._phase = "created"  # created -> connected -> active -> connected -> closed
        self._mode: ControlMode | None = None
        self._guard: CommandGuard | None = None
        self._guard_active = False  # in a trajectory mode: every write goes through the guard

    @classmethod
    def parse_options(cls, options) -> DriverOptions:
        """The driver's options from a dict (checked against their schema), None (the defaults) or
        an options object (taken as it is)."""
        if isinstance(options, cls.options_type):
            return options
        return cls.options_type.from_dict(options)

    # A client library's call that blocks in C++ while holding the GIL (no other Python thread runs
    # meanwhile) is made inside ``with self.holding_the_gil():``. The process that runs the driver
    # may set it: the daemon's driver process does, so that the kernel ends the process there if
    # the daemon dies during its start-up (daemon/main_process.py). By default it does nothing.
    holding_the_gil = staticmethod(contextlib.nullcontext)

    @abstractmethod
    def describe(self) -> DriverDescription: ...

    def connect_step(self) -> str:
        """What :meth:`connect` does, as a phrase for the log ("while connecting to ...")."""
        return "while connecting to the robot"

    @property
    def mode(self) -> ControlMode | None:
        return self._mode

    @property
    def lifecycle(self) -> str:
        return self._phase

    def connect(self) -> None:
        if self._phase != "created":
            raise LifecycleError(f"connect: driver is {self._phase}, expected created")
        self._do_connect()
        self._phase = "connected"

    def start(self, mode: ControlMode | str) -> None:
        mode = ControlMode(mode)
        if self._phase != "connected":
            raise LifecycleError(f"start: driver is {self._phase}, expected connected")
        if mode.value not in self.describe().control_modes:
            raise LifecycleError(f"start: {self.describe().driver} driver has no {mode.value} mode")
        self._do_start(mode)
        self._mode = mode
        self._phase = "active"
        desc = self.describe()
        self._guard_active = mode.value in desc.trajectory_modes
        # built at every start: a reconnect may have changed the rate or the limits
        self._guard = CommandGuard(desc) if self._guard_active else None

    def read(self) -> JointState:
        if self._phase not in ("connected", "active"):
            raise LifecycleError(f"read: driver is {self._phase}, expected connected or active")
        state = self._do_read()
        guard = self._guard
        if self._guard_active:
            if guard.has_reference:
                guard.period_ended()
            else:
                guard.start_from(state.q)  # the first read after start is the start state
        return state

    def write(self, command: JointCommand) -> None:
        if self._phase != "active":
            raise LifecycleError(f"write: driver is {self._phase}; call start(mode) first")
        if not self._guard_active:
            self._do_write(command)
            return
        try:
            self._guard.check(command.q)
        except LimitViolation:
            self.guard_refusals += 1
            self._refused_by_guard()
            raise
        self._do_write(command)
        self._guard.accepted(command.q)  # only a target the driver took is a reference

    guard_refusals = 0  # targets the command guard refused (never sent)

    def _reconnected(self) -> None:
        """For a driver's own ``reconnect()``: connected again, idle, no control session."""
        self._mode = None
        self._guard_active = False
        self._guard = None
        self._phase = "connected"

    def _refused_by_guard(self) -> None:
        """Hook: a driver that counts refused commands in its own log counts this one too."""

    def stop(self) -> None:
        if self._phase == "active":
            self._do_stop()
            self._mode = None
            self._guard_active = False
            self._phase = "connected"

    def close(self) -> None:
        if self._phase in ("active",):
            self.stop()
        if self._phase != "closed":
            self._do_close()
            self._phase = "closed"

    def diagnostics(self) -> dict:
        """Driver-specific counters for status and tests (JSON-ready). Not called per cycle."""
        return {}

    @abstractmethod
    def _do_connect(self) -> None: ...

    @abstractmethod
    def _do_start(self, mode: ControlMode) -> None: ...

    @abstractmethod
    def _do_read(self) -> JointState: ...

    @abstractmethod
    def _do_write(self, command: JointCommand) -> None: ...

    @abstractmethod
    def _do_stop(self) -> None: ...

    @abstractmethod
    def _do_close(self) -> None: ...
