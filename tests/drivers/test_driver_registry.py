"""The driver registry: a driver declared once (one class, one DriverSpec) shows up in the
registry's listing, passes the daemon's configuration, is listed by the command line and is
picked up by the shared contract test. A toy driver, registered only here, proves it; broken
copies of the toy prove that every contract check can fail."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass

import numpy as np
import pytest

from robodyn.drivers import registry
from robodyn.drivers.base import (NUMBER, ControlMode, Driver, DriverDescription, DriverOptions, JointState,
                                  Signal, load_robot, model_limits, option)
from robodyn.drivers.registry import DriverSpec, check_options, create_driver

from .test_driver_contract import (Factory, check_lifecycle, check_limits, check_stop, check_telemetry,
                                   contract_cases)


@dataclass
class ToyOptions(DriverOptions):
    driver = "toy"

    robot: str = option("panda", "model for joints and limits", types=(str,))
    rate_hz: float = option(250.0, "cycles per second of robot time", low=0.0, low_open=True, high=1000.0,
                            types=NUMBER)


class ToyDriver(Driver):
    """A kinematic arm: each accepted position target is where the joints are one period later."""

    kind = "toy"
    options_type = ToyOptions

    def __init__(self, options=None):
        super().__init__()
        self.cfg = cfg = self.parse_options(options)
        self.model = load_robot(cfg.robot)
        n = self.model.dof
        sig = (Signal("q", n, "rad"), Signal("qd", n, "rad/s"), Signal("tau", n, "N.m"))
        self._desc = DriverDescription(driver=self.kind, robot=self.model.name, joint_names=self.model.joint_names,
                                       limits=model_limits(self.model), rate_hz=float(cfg.rate_hz),
                                       control_modes=(ControlMode.POSITION.value,), signals=sig)
        self.state = JointState(self._desc)
        self.target = np.zeros(n)
        self.counts = {"reads": 0, "writes": 0, "refused": 0}

    def describe(self):
        return self._desc

    def _do_connect(self):
        q0 = 0.5 * (self.model.q_min + self.model.q_max)
        self.state.q[:] = q0
        self.target[:] = q0

    def _do_start(self, mode):
        self.target[:] = self.state.q

    def _do_read(self):
        period = 1.0 / self._desc.rate_hz
        np.subtract(self.target, self.state.q, out=self.state.qd)
        self.state.qd /= period
        self.state.q[:] = self.target
        self.state.robot_time += period
        self.counts["reads"] += 1
        return self.state

    def _do_write(self, command):
        self.target[:] = command.q
        self.counts["writes"] += 1

    def _refused_by_guard(self):
        self.counts["refused"] += 1

    def _do_stop(self):
        self.target[:] = self.state.q

    def _do_close(self):
        pass

    def diagnostics(self):
        return dict(self.counts)


TOY = DriverSpec("toy", ToyDriver, ToyOptions, "toy", "a kinematic arm for tests", needs_robot=False)


@pytest.fixture
def toy():
    registry.register(TOY)
    yield TOY
    registry.unregister("toy")


def test_a_registered_driver_is_in_the_listing_with_its_options(toy):
    assert "toy" in registry.driver_names()
    row = next(r for r in registry.listing() if r["name"] == "toy")
    assert row["extra"] == "toy" and row["description"] == "a kinematic arm for tests"
    rate = next(o for o in row["options"] if o["name"] == "rate_hz")
    assert rate["default"] == 250.0 and rate["limit"] == "in (0, 1000]"
    json.dumps(registry.listing())
    assert "toy      a kinematic arm for tests (pip install 'robodyn[toy]')" in registry.drivers_help()
    assert "rate_hz" in registry.options_help("toy") and "in (0, 1000]" in registry.options_help("toy")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(TOY)
    registry.unregister("toy")
    assert "toy" not in registry.driver_names()
    registry.register(TOY)


def test_options_are_checked_against_the_schema_in_one_line(toy):
    assert check_options("toy", {"rate_hz": 500}).rate_hz == 500
    with pytest.raises(ValueError) as e:
        check_options("toy", {"rate": 500})
    assert str(e.value) == ("driver options: unknown toy option(s) ['rate']; known: ['rate_hz', 'robot']")
    with pytest.raises(ValueError) as e:
        check_options("toy", {"rate_hz": 2000})
    assert str(e.value) == "driver.rate_hz: expected in (0, 1000], got 2000"
    with pytest.raises(ValueError) as e:
        check_options("toy", {"rate_hz": "fast"})
    assert str(e.value) == "driver.rate_hz: expected a number, got 'fast'"
    with pytest.raises(ValueError, match=r"driver: unknown kind 'kuka'; expected one of \[.*'toy'.*\]"):
        check_options("kuka", {})


@pytest.mark.parametrize("spec", registry.driver_specs(), ids=lambda s: s.name)
def test_every_built_in_driver_declares_a_consistent_schema(spec):
    """Each option says what it does, its default passes its own check, and `robot` is there (the
    daemon passes [robot].name as it): the schema is what the CLI and the config check show."""
    schema = spec.schema()
    assert "robot" in [o.name for o in schema]
    for o in schema:
        assert o.help, f"{spec.name}.{o.name} has no help"
        o.check(o.default)
        if o.low is not None or o.high is not None or o.choices:
            assert o.limit()
    assert spec.options_class().from_dict({}) == spec.options_class()()
    assert spec.description and spec.extra


def test_the_daemon_configuration_accepts_a_registered_driver(toy, tmp_path):
    from robodyn.daemon.config import load_config

    path = tmp_path / "daemon.toml"
    path.write_text('[robot]\nname = "panda"\ndriver = "toy"\n[driver]\nrate_hz = 500\n')
    cfg = load_config(path)
    assert cfg.driver == "toy" and cfg.driver_options == {"rate_hz": 500}
    # what the daemon's driver process builds from it (daemon/rtloop.py)
    d = create_driver(cfg.driver, {"robot": cfg.robot, **cfg.driver_options})
    assert isinstance(d, ToyDriver) and d.describe().rate_hz == 500


def test_the_daemon_configuration_refuses_an_unknown_driver_or_option(toy, tmp_path):
    from robodyn.daemon.config import load_config

    path = tmp_path / "daemon.toml"
    path.write_text('[robot]\nname = "panda"\ndriver = "toy"\n[driver]\nrate_hz = 5000\n')
    with pytest.raises(ValueError, match=r"driver.rate_hz: expected in \(0, 1000\], got 5000"):
        load_config(path)
    path.write_text('[robot]\nname = "panda"\ndriver = "kuka"\n')
    with pytest.raises(ValueError, match="unknown kind 'kuka'"):
        load_config(path)


def run_cli(*argv: str) -> str:
    from robodyn.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(list(argv))
        except SystemExit:
            pass
    return out.getvalue()


def test_the_command_line_lists_a_registered_driver(toy):
    assert "a kinematic arm for tests" in run_cli("daemon", "--help")
    rows = json.loads(run_cli("drivers", "--json"))
    assert any(r["name"] == "toy" and r["options"] for r in rows)


def test_the_contract_test_picks_up_a_registered_driver_and_it_passes(toy):
    assert "toy" in [case.values[0] for case in contract_cases()]
    assert not next(c for c in contract_cases() if c.values[0] == "toy").marks  # no peer needed
    factory = Factory("toy", {})
    try:
        check_lifecycle(factory)
        check_stop(factory)
        check_limits(factory)
        check_telemetry(factory, "toy")
    finally:
        factory.close_all()


# --------------------------------------------------------------------------- broken toys


class WritesBeforeConnect(ToyDriver):
    def write(self, command):
        if self._phase == "created":
            return self._do_write(command)
        return super().write(command)


class CloseNotIdempotent(ToyDriver):
    def close(self):
        if self._phase == "closed":
            raise RuntimeError("already closed")
        super().close()


class SendsBeforeTheGuard(ToyDriver):
    def write(self, command):
        if self._phase == "active" and self._guard is not None and self._guard.has_reference:
            self._do_write(command)
        return super().write(command)


class NeverSettles(ToyDriver):
    def _do_read(self):
        state = super()._do_read()
        if self._mode is not None:
            state.qd[0] += 0.1  # a drift that never dies out
        return state


class IgnoresTargets(ToyDriver):
    def _do_write(self, command):
        self.counts["writes"] += 1


class CountsNoRefusal(ToyDriver):
    def _refused_by_guard(self):
        pass


class ClockStands(ToyDriver):
    def _do_read(self):
        state = super()._do_read()
        state.robot_time = 1.0
        return state


class DiagnosticsChangeShape(ToyDriver):
    def diagnostics(self):
        return {**self.counts, **({"link": "up"} if self.lifecycle == "connected" else {})}


class StateNotInPlace(ToyDriver):
    def _do_read(self):
        state = super()._do_read()
        state.q = state.q.copy()  # a copy: what the recorder reads from values is stale
        return state


BROKEN = [
    (WritesBeforeConnect, check_lifecycle),
    (CloseNotIdempotent, check_lifecycle),
    (SendsBeforeTheGuard, check_limits),
    (CountsNoRefusal, check_limits),
    (NeverSettles, check_stop),
    (IgnoresTargets, check_stop),
    (ClockStands, check_telemetry),
    (DiagnosticsChangeShape, check_telemetry),
    (StateNotInPlace, check_telemetry),
]


@pytest.mark.parametrize("broken, check", BROKEN, ids=[b.__name__ for b, _ in BROKEN])
def test_every_contract_check_fails_on_a_driver_that_breaks_it(broken, check):
    name = "broken_toy"
    spec = DriverSpec(name, type(broken.__name__, (broken,), {"kind": name}), ToyOptions, "toy", "a broken toy",
                      needs_robot=False)
    registry.register(spec)
    factory = Factory(name, {})
    try:
        args = (factory, name) if check is check_telemetry else (factory,)
        with pytest.raises((AssertionError, pytest.fail.Exception, RuntimeError)):
            check(*args)
    finally:
        factory.close_all()
        registry.unregister(name)
