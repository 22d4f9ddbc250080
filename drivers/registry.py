"""Driver kinds by name, imported lazily so a missing optional extra only matters when chosen."""

from __future__ import annotations

import importlib

from .base import Driver, check_description

# kind -> (module, class, pip extra that provides its client library)
DRIVERS = {
    "sim": ("robodyn.drivers.sim", "SimulatedRobot", "sim"),
    "franka": ("robodyn.drivers.franka", "FrankaDriver", "franka"),
    "ur": ("robodyn.drivers.ur", "URDriver", "ur"),
}


def create_driver(kind: str, options: dict) -> Driver:
    """Build (not connect) a driver; raise ValueError with one sentence on what to fix."""
    if kind not in DRIVERS:
        raise ValueError(f"driver: unknown kind {kind!r}; expected one of {sorted(DRIVERS)}")
    module_name, cls_name, extra = DRIVERS[kind]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise ValueError(f"driver: the {kind} driver is not part of this installation yet") from None
        raise ValueError(f"driver: the {kind} driver needs {exc.name}; install it with "
                         f"pip install 'robodyn[{extra}]'") from None
    driver = getattr(module, cls_name)(options)
    check_description(driver.describe())
    return driver
