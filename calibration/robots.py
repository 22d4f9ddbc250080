"""The robots a calibration runs on: the calibration models shipped in calibration/data (``ur5_li2023``,
``heavy6``), any built-in robot, or a model file; and the optional [calibration] table of a TOML model."""

from __future__ import annotations

from pathlib import Path

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

from robodyn.robot.loader import builtin_model_names, load_model, model_from_toml
from robodyn.robot.model import RobotModel

DATA_DIR = Path(__file__).parent / "data"
UR5_LI2023_MODEL = DATA_DIR / "ur5_li2023.toml"  # the UR5 in Li et al. 2023's frames (their Table 2)



def _local_name(ref: str) -> str:
    return str(ref).lower()


def robot_path(ref: str) -> Path | None:
    local = DATA_DIR / f"{_local_name(ref)}.toml"
    if local.exists():
        return local
    p = Path(ref)
    return p if p.suffix.lower() == ".toml" and p.exists() else None


def calibration_model_names() -> list[str]:
    """The calibration models shipped in calibration/data (``heavy6``, ``ur5_li2023``)."""
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def accepted_robot_names() -> list[str]:
    """Every name ``--robot`` accepts: the calibration models here and the built-in robots."""
    return sorted(set(calibration_model_names()) | set(builtin_model_names()))


def load_robot(ref: str) -> RobotModel:
    """A calibration model shipped here (``ur5_li2023``), a built-in robot or a model file."""
    local = DATA_DIR / f"{_local_name(ref)}.toml"
    if local.exists():
        return model_from_toml(local)
    p = Path(str(ref))
    if not p.suffix and not p.exists() and _local_name(ref) not in builtin_model_names():
        raise ValueError(f"--robot: unknown model {str(ref)!r}; accepted names are "
                         f"{', '.join(accepted_robot_names())}, or a .toml/.urdf model file")
    return load_model(ref)


def same_robot(stated: str, given: str) -> bool:
    """Whether a measurement file's stated robot is the robot given: the same reference, the same
    file name, or the same model name (a model file is known by the name inside it, not its path)."""
    if robot_reference(stated) == robot_reference(given) or Path(stated).name == Path(given).name:
        return True
    names = set()
    for ref in (stated, given):
        try:
            names.add(load_robot(ref).name)
        except (ValueError, OSError):
            names.add(Path(ref).stem if Path(ref).suffix else str(ref))
    return len(names) == 1


def robot_reference(ref: str) -> str:
    """What to store in result files: a name stays a name, a file becomes an absolute path."""
    p = Path(ref)
    if (DATA_DIR / f"{_local_name(ref)}.toml").exists():
        return _local_name(ref)
    if not p.suffix:
        return str(ref)
    return str(p.resolve())


def calibration_metadata(ref: str) -> dict:
    """The optional [calibration] table of a TOML model (free_parameters, floor_z)."""
    path = robot_path(ref)
    if path is None:
        return {}
    with open(path, "rb") as fh:
        meta = tomllib.load(fh).get("calibration", {})
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: [calibration] must be a table")
    return meta
