"""Every driver, declared once: its name, class, the pip extra its client library comes with, its
options' schema and one line on what it drives.

``create_driver``, the daemon's configuration check, the command line and the docs read this
table. A driver's class is imported only when the driver is built, so a missing optional extra
matters only when that driver is chosen. Its options class lives in a module that does not need
the extra, so options are checked on any host.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .base import Driver, DriverOptions, OptionSpec, check_description


@dataclass(frozen=True)
class DriverSpec:
    name: str  # [robot].driver
    driver: str | type  # "module:Class", or the class itself
    options: str | type  # "module:Class" of its DriverOptions dataclass (importable without the extra)
    extra: str  # pip install 'robodyn[extra]' provides its client library
    description: str  # one line
    needs_robot: bool = True  # False: runs on any host with no robot or peer (the simulator)

    def driver_class(self) -> type[Driver]:
        """The driver's class; ValueError with one sentence when its module or client library is missing."""
        if isinstance(self.driver, type):
            return self.driver
        module_name, _, cls_name = self.driver.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                raise ValueError(f"driver: the {self.name} driver is not part of this installation yet") from None
            raise ValueError(f"driver: the {self.name} driver needs {exc.name}; install it with "
                             f"pip install 'robodyn[{self.extra}]'") from None
        return getattr(module, cls_name)

    def options_class(self) -> type[DriverOptions]:
        if isinstance(self.options, type):
            return self.options
        module_name, _, cls_name = self.options.partition(":")
        return getattr(importlib.import_module(module_name), cls_name)

    def schema(self) -> tuple[OptionSpec, ...]:
        return self.options_class().schema()


_REGISTRY: dict[str, DriverSpec] = {}


def register(spec: DriverSpec) -> DriverSpec:
    """Add a driver. Its name must be new (``unregister`` first to replace one)."""
    if spec.name in _REGISTRY:
        raise ValueError(f"driver: {spec.name!r} is already registered")
    if not spec.name.isidentifier():
        raise ValueError(f"driver: name {spec.name!r} must be one word (letters, digits, _)")
    if not spec.description or "\n" in spec.description:
        raise ValueError(f"driver {spec.name}: the description is one line")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def driver_specs() -> list[DriverSpec]:
    """Every registered driver, in registration order (the built-in ones first)."""
    return list(_REGISTRY.values())


def driver_names() -> list[str]:
    return list(_REGISTRY)


def get_spec(kind: str) -> DriverSpec:
    if kind not in _REGISTRY:
        raise ValueError(f"driver: unknown kind {kind!r}; expected one of {sorted(_REGISTRY)}")
    return _REGISTRY[kind]


def check_options(kind: str, options: dict | None) -> DriverOptions:
    """The driver's options, checked against its schema without importing the driver or its client
    library; ValueError with one line naming the option and its limit."""
    spec = get_spec(kind)
    options_type = spec.options_class()
    if "robot" not in {s.name for s in options_type.schema()}:  # the daemon passes [robot].name as it
        raise ValueError(f"driver {kind}: its options have no 'robot'")
    return options_type.from_dict(options)


def create_driver(kind: str, options: dict | None) -> Driver:
    """Build (not connect) a driver; raise ValueError with one sentence on what to fix."""
    spec = get_spec(kind)
    cls = spec.driver_class()
    config = check_options(kind, options)
    driver = cls(config)
    check_description(driver.describe())
    return driver


def listing() -> list[dict]:
    """The drivers as JSON-ready rows: name, extra, description, options (name, default, limit, help)."""
    rows = []
    for spec in driver_specs():
        try:
            options = [{"name": o.name, "default": o.default, "limit": o.limit(), "help": o.help}
                       for o in spec.schema()]
        except ImportError as exc:  # an options module that is itself missing: say so, list the rest
            options = [{"name": "?", "default": None, "limit": "", "help": f"options unavailable: {exc}"}]
        rows.append({"name": spec.name, "extra": spec.extra, "description": spec.description, "options": options})
    return rows


def drivers_help() -> str:
    """One line per driver, for `robodyn daemon --help` and `robodyn drivers`."""
    return "\n".join(f"  {s.name:<8} {s.description} (pip install 'robodyn[{s.extra}]')" for s in driver_specs())


def options_help(kind: str) -> str:
    """One line per option of one driver: name, default, accepted values, what it does."""
    lines = []
    for o in get_spec(kind).schema():
        limit = f"; {o.limit()}" if o.limit() else ""
        lines.append(f"  {o.name:<24} default {o.default!r}{limit}: {o.help}")
    return "\n".join(lines)


register(DriverSpec("sim", "robodyn.drivers.sim:SimulatedRobot", "robodyn.drivers.sim:SimConfig", "sim",
                    "simulated robot: any built-in model, seeded plant, sensor noise and friction",
                    needs_robot=False))
register(DriverSpec("franka", "robodyn.drivers.franka:FrankaDriver", "robodyn.drivers.franka_control:FrankaConfig",
                    "franka", "Franka Emika Panda / FR3 over FCI (pylibfranka)"))
register(DriverSpec("ur", "robodyn.drivers.ur:URDriver", "robodyn.drivers.ur_stream:URConfig", "ur",
                    "Universal Robots e-Series / CB3 over RTDE (ur_rtde, servoJ)"))
