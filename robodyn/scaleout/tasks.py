"""What a worker runs: :func:`execute` turns a JobSpec into a JobResult, whatever executor sent it.

One handler per job kind; each takes the payload with its Refs already resolved and returns a
JSON-ready document:

    identify          robot, recordings (files) or data (Ref to a list of SampledData), config
                      -> the robodyn.identification result document (pipeline.identify)
    excitation-start  model (name or Ref), request (Ref to a DesignRequest), runs (start indices)
                      -> the optimizer result of those starts (designer.optimize_starts)
    population        fitness (Ref to a population fitness), X (candidates, rows)
                      -> fitness of each row
    calibrate         measurements, loaded (CSV files, or Refs to shipped files: batch.ship_file), options (robot, method, ...: the options of
                      `robodyn calibrate identify` as JSON, see calibration.workflow.IdentifyOptions)
                      -> the calibration result document `robodyn calibrate identify` writes
"""

from __future__ import annotations

import pickle
import tempfile
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

from .jobs import JobResult, JobSpec, Ref, worker_name

# A worker keeps the last few resolved objects: the population tasks of one optimisation all use
# the same fitness, and loading it again for every generation would undo the point of a Ref.
_CACHE: OrderedDict = OrderedDict()
CACHE_ENTRIES = 4


def load_ref(ref: Ref):
    if ref.key in _CACHE:
        _CACHE.move_to_end(ref.key)
        return _CACHE[ref.key]
    if isinstance(ref.handle, str):  # the local pool's file
        with open(ref.handle, "rb") as fh:
            obj = pickle.load(fh)
    elif hasattr(ref.handle, "load"):  # an in-process executor's object
        obj = ref.handle.load()
    else:  # a Ray object reference: zero-copy for numpy buffers in the node's object store
        import ray

        obj = ray.get(ref.handle)
    _CACHE[ref.key] = obj
    while len(_CACHE) > CACHE_ENTRIES:
        _CACHE.popitem(last=False)
    return obj


def resolve(value):
    """The payload with every Ref replaced by its object."""
    if isinstance(value, Ref):
        return load_ref(value)
    if isinstance(value, dict):
        return {k: resolve(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(resolve(v) for v in value)
    return value


def _model(ref_or_name):
    from robodyn.robot.loader import load_model

    return load_model(ref_or_name) if isinstance(ref_or_name, str) else ref_or_name


def run_identify(p: dict) -> dict:
    from robodyn.jobs.identification import _config_from_dict  # the daemon's parser of the same JSON config
    from robodyn.identification.data import load_dataset
    from robodyn.identification.pipeline import identify

    model = _model(p["robot"])
    if ("data" in p) == ("recordings" in p):
        raise ValueError("identify: give either recordings (files) or data (a stored list of datasets)")
    if "data" in p:
        datasets = list(p["data"])
        sources = list(p.get("sources") or [f"data[{k}]" for k in range(len(datasets))])
    else:
        datasets = [load_dataset(path, drive_gains=p.get("drive_gains"), model=model) for path in p["recordings"]]
        sources = [str(path) for path in p["recordings"]]
    result = identify(model, datasets, _config_from_dict(p.get("config")), sources=sources,
                      preprocessed=bool(p.get("preprocessed", False)))
    return result.to_dict()


def optimize_result_doc(res) -> dict:
    return {**res.to_dict(), "history": [float(h) for h in res.history]}


def run_excitation_start(p: dict) -> dict:
    from robodyn.identification.excitation.designer import optimize_starts

    return optimize_result_doc(optimize_starts(_model(p["model"]), p["request"], list(p["runs"])))


def run_population(p: dict) -> list:
    X = np.atleast_2d(np.asarray(p["X"], float))
    F = np.asarray(p["fitness"](X), float).reshape(X.shape[0])
    return F.tolist()


def run_calibrate(p: dict) -> dict:
    """The fleet's calibration is `robodyn calibrate identify` per robot: the same library call with
    the same options, and the document the command writes (through JSON, as the file holds it)."""
    from robodyn.calibration.result_file import json_ready
    from robodyn.calibration.workflow import IdentifyOptions, identify_calibration

    if "args" in p:
        raise ValueError("calibrate: 'args' (command-line options) is no longer read; give 'options', a JSON object "
                         'such as {"robot": "ur5_li2023", "method": "combined"}')
    with tempfile.TemporaryDirectory(prefix="robodyn-calibrate-") as tmp:
        measurements, loaded = (materialize(p.get(k), tmp) for k in ("measurements", "loaded"))
        opts = IdentifyOptions.from_dict({**(p.get("options") or {}), "loaded": loaded})
        return json_ready(identify_calibration(measurements, opts).doc)


def materialize(value, directory):
    """A file path as given, or a shipped file (batch.ship_file: name and bytes) written into
    ``directory`` under its own name (the calibration reads files, and names them in messages)."""
    if not isinstance(value, dict):
        return value
    if set(value) != {"file", "bytes"} or not isinstance(value["bytes"], bytes):
        raise ValueError("calibrate: a shipped file is {file: name, bytes: content}")
    name = Path(str(value["file"])).name
    if name in ("", ".", ".."):
        raise ValueError(f"calibrate: shipped file name {value['file']!r} is not a file name")
    path = Path(directory) / name
    if path.exists():  # the measurements and the loaded set under one name: keep both
        path = Path(directory) / f"loaded-{name}"
    path.write_bytes(value["bytes"])
    return str(path)


HANDLERS = {"identify": run_identify, "excitation-start": run_excitation_start, "population": run_population,
            "calibrate": run_calibrate}


def execute(spec: JobSpec, attempt: int) -> JobResult:
    """Run one job. An exception of the job becomes a failed result (it would fail the same way on
    any worker); only the loss of the worker itself is left to the driver's retry policy."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        value, ok, error = HANDLERS[spec.kind](resolve(spec.payload)), True, None
    except Exception as exc:  # noqa: BLE001 - reported in the result, never swallowed
        value, ok, error = None, False, f"{type(exc).__name__}: {exc}"
    return JobResult(spec.job_id, spec.kind, ok, value, error, attempt, time.perf_counter() - t0, worker_name(),
                     time.process_time() - c0)
