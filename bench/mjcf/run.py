"""MJCF export round trip: MuJoCo's mj_inverse on the exported file against robodyn's prediction of the
same result (own-model: this measures the export, not the model's accuracy).

Data: the simulated Panda of bench/metaheuristics (RNEA with the assumed rotor inertias, 20 s at 100 Hz,
0.5 N.m noise) plus viscous 0.3 qd and Coulomb 0.2 sgn(qd) per joint; `robodyn identify --method consistent`;
`robodyn export-mjcf`; then a rest-to-rest Fourier trajectory (seed 7, 100 Hz), 200 random states, and the
identification recording itself at the states `robodyn predict` evaluates (``on_identification_data``:
the rigid body, the file as written where frictionloss is saturated, and per joint what MJCF cannot
hold, sized there; ``urdf_on_identification_data``: the same for the exported URDF in pinocchio's RNEA).

    .venv/bin/python bench/mjcf/run.py [--out FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

import numpy as np

from robodyn.cli import main
from robodyn.identification.comparison_data import ASSUMED_PANDA_ROTOR_INERTIA, simulated_recording
from robodyn.identification.data import load_dataset
from robodyn.identification.mjcf_export import check_mjcf_on_states, verify_mjcf
from robodyn.identification.base_params import BaseParameters
from robodyn.identification.urdf_export import check_urdf_on_states, export_urdf, identification_states
from robodyn.identification.regressor import sample_states
from robodyn.robot.loader import load_model
from robodyn.identification.comparison_data import excitation


def run() -> dict:
    panda = load_model("panda")
    d = simulated_recording(panda, seed=0, seconds=20.0, rate_hz=100.0, noise=0.5,
                            rotor_inertia=np.array(ASSUMED_PANDA_ROTOR_INERTIA))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        np.savez(tmp / "rec.npz", t=d.t, q=d.q, qd=d.qd, tau=d.tau + 0.3 * d.qd + 0.2 * np.sign(d.qd))
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["identify", str(tmp / "rec.npz"), "--robot", "panda", "--method", "consistent",
                         "--cutoff", "0", "--velocity", "measured", "--out", str(tmp / "result.json")]) == 0
            assert main(["export-mjcf", str(tmp / "result.json"), "--out", str(tmp / "panda.xml")]) == 0
        doc = json.loads((tmp / "result.json").read_text())
        text = (tmp / "panda.xml").read_text()
        states = identification_states(panda, doc, load_dataset(tmp / "rec.npz", model=panda))
    # the random rest-to-rest Fourier excitation of the comparison (wf = 0.6 rad/s, two periods)
    period = 2 * np.pi / 0.6
    _t, q, qd, qdd, _ = excitation(panda, 7, seconds=2 * period, amplitude=0.25, period=period).sample(100)
    out = {"data": "plant: simulated Panda (RNEA, assumed rotor inertias, 0.5 N.m noise, viscous 0.3, Coulomb 0.2)",
           "trajectory": verify_mjcf(text, panda, doc, q, qd, qdd),
           "random_states": verify_mjcf(text, panda, doc, *sample_states(panda, 200, seed=3)),
           "on_identification_data": check_mjcf_on_states(text, panda, doc, states),
           "urdf_on_identification_data": check_urdf_on_states(
               export_urdf(panda, doc["consistent"], BaseParameters.from_dict(doc["base"])), panda, doc, states)}
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="JSON file (default: stdout)")
    args = ap.parse_args()
    result = run()
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
