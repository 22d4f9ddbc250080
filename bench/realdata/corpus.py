"""bench/realdata corpus: public real logs of arms robodyn's defaults were not chosen on.

A declarative list, one :class:`Arm` per arm: where its files live (repository, pinned commit,
paths, sizes and SHA-256 of the blobs at that commit), how to read each run (a reader of
bench/realdata/readers.py and its column mapping), the robot model, the torque source and its
conventions, the licence and the hold-out splits the runs allow.

No data file is committed: bench/realdata/fetch.py copies them from a checkout or bare clone the
user provides into a cache folder. Only permissively licensed files could be committed, and even
those are fetched to keep the repository small; repositories without a licence are all rights
reserved, so their files are only ever read from the user's own copy.

Splits: ``time`` identifies on the first 60 % of a run and predicts the last 40 %; ``cross-run``
identifies on one run and predicts another run of the same arm.

Left out (see the survey): KUKA LWR4+ of kjyv/FloBaRoID (Git LFS pointers only), Barrett WAM of
amir-noohian/dynamics-estimation (2-DoF excitation, commanded effort, no licence).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TIME_SPLIT_FIT = 0.6  # first 60 % identifies, last 40 % is held out


@dataclass(frozen=True)
class SourceFile:
    path: str  # inside the repository, at the arm's commit
    size: int  # bytes of the blob
    sha256: str


@dataclass(frozen=True)
class Run:
    """One recording: ``reader`` names a function of readers.py, ``source`` its arguments (which
    file holds which signal, column names or indices, unit scales, gains)."""

    name: str
    reader: str
    source: dict
    note: str = ""


@dataclass(frozen=True)
class Split:
    kind: str  # "time" or "cross-run"
    fit: str  # run name
    held: str | None = None  # run name for cross-run; None for a time split

    @property
    def label(self) -> str:
        return f"time:{self.fit}" if self.kind == "time" else f"cross-run:{self.fit}->{self.held}"


@dataclass(frozen=True)
class Arm:
    name: str
    maker: str
    model: str
    dof: int
    repository: str  # owner/name on GitHub
    commit: str
    licence: str
    committable: bool  # permissive licence: the files could be committed (they are fetched all the same)
    rate_hz: float
    torque_source: str
    conventions: str  # units and signs
    gravity: str
    files: tuple[SourceFile, ...]
    runs: tuple[Run, ...]
    splits: tuple[Split, ...]
    robot_file: str | None  # URDF path inside the repository (one of ``files``), None when there is none
    robot_note: str = ""
    tip_link: str | None = None
    evaluate: bool = True  # False: declared for completeness, not scored (see ``why_not``)
    why_not: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repository}"

    def run(self, name: str) -> Run:
        for r in self.runs:
            if r.name == name:
                return r
        raise KeyError(f"{self.name}: no run named {name!r}; runs are {[r.name for r in self.runs]}")

    def file(self, path: str) -> SourceFile:
        for f in self.files:
            if f.path == path:
                return f
        raise KeyError(f"{self.name}: {path!r} is not one of its declared files")


F = SourceFile


def _names(prefix: str, n: int, start: int = 1, suffix: str = "") -> list[str]:
    return [f"{prefix}{k}{suffix}" for k in range(start, start + n)]


# --- KUKA KR300 Quantec Ultra --------------------------------------------------------------------

_KR300_DIR = "data/recorded_trajectories/2020-10-21 10s FF {} 08ms/data.mat"
# para.u of data.mat: gear ratios, motor side to joint side
KR300_GEAR = (1798 / 7, 1872 / 7, 757 / 3, 221.0, 239.61904762, 154.32313433)


def _kr300_run(letter: str) -> Run:
    deg = float(np.pi / 180)
    return Run(f"run_{letter}", "mat_struct", {
        "file": _KR300_DIR.format(letter), "struct": "rec", "time": "time_cont", "layout": "joints_by_samples",
        "q": {"field": "act_pos_mot_deg", "scale": deg},
        "qd": {"field": "act_vel_mot_deg_per_s", "scale": deg},
        "tau": {"field": "act_torque_abs_nm", "scale": list(KR300_GEAR)},
    }, note="q, qd from the motor encoders expressed at the joint (deg); tau the drives' motor torque "
            "times para.u")


KR300 = Arm(
    name="kr300", maker="KUKA", model="KR300 R2500 Quantec Ultra (300 kg payload)", dof=6,
    repository="JonasWeigand/Robot_Identification", commit="9e403c07d9dadbb391a9f3921e8d219f714636a8",
    licence="MIT (LICENSE, Copyright (c) 2021 Jonas Weigand)", committable=True, rate_hz=250.0,
    torque_source="motor torque reported by the drives, motor side (|tau| < 20 N.m); joint side = x para.u",
    conventions="deg and deg/s (scaled to rad), N.m motor side; positions RELATIVE to the start pose "
                "(every channel starts at 0)",
    gravity="the RTB model has base trotx(180 deg) (KUKA z-down); absolute start pose not stored",
    files=(
        F("LICENSE", 1070, "89caf54240d82ddd6b0594c97a65372da1172f965807ea5510ffac3d8483543d"),
        F(_KR300_DIR.format("A"), 1816588, "4c152c5b7f2c899731fdeebcf0d011cc103df72be19fac160caf47aa9b73ab75"),
        F(_KR300_DIR.format("B"), 1808746, "edeb35f65c4ec4bb697e757fc1e4e9668551b6fe7b2c3dbbb526d040dd8d5ce7"),
        F(_KR300_DIR.format("C"), 1815217, "c5d5688521ece941e6c4afd39643a01cd36ae8c7790342640277f8b15b5515b4"),
        F("robot_model/model_KUKA_Quantec_Ultra_KR300.m", 4742,
          "f2e75cc12d4e5cc74d69c0b4affb58c6c1908e52376c42993f86e6b1a1aa2dfb"),
    ),
    runs=(_kr300_run("A"), _kr300_run("B"), _kr300_run("C")),
    splits=(Split("time", "run_A"), Split("cross-run", "run_A", "run_B"), Split("cross-run", "run_A", "run_C")),
    robot_file=None,
    robot_note="no URDF: robot_model/model_KUKA_Quantec_Ultra_KR300.m is a Corke RTB SerialLink (DH, masses, "
               "CoMs, inertias, Jm, G); a model must be built from it, and the absolute start pose recovered "
               "(e.g. from the stored tau_g_all) before gravity can be modelled",
    evaluate=False, why_not="no loadable robot model (DH in MATLAB only) and positions relative to an unknown start pose",
    notes=("act_pos_se_deg (load-side encoders) exists for axes 1-3 only; axes 4-6 are zero",
           "closed-loop runs with feed-forward; stored at 250 Hz, likely decimated from the 1.25 kHz cycle",
           "data.mat also holds the model's tau_g_all, tau_a_all, tau_c_all, tau_ff_all (6 x 2501)"),
)

# --- Kinova Gen3 ----------------------------------------------------------------------------------

_KINOVA = "pyDynaMapp/data/kinova/{}"


def _kinova_run(name: str, path: str) -> Run:
    return Run(name, "csv_columns", {
        "files": {"main": _KINOVA.format(path)},
        "time": {"file": "main", "column": "Time", "scale": 0.001},  # a sample index at 1 kHz
        "q": {"file": "main", "columns": _names("Position", 7)},
        "qd": {"file": "main", "columns": _names("Velocity", 7)},
        # joint 7's torque sensor is not logged (Torque7 == 0): its current-based torque stands in
        "tau": {"file": "main", "columns": _names("Torque", 6) + ["TorqueCur7"]},
    })


KINOVA_GEN3 = Arm(
    name="kinova_gen3", maker="Kinova", model="Gen3 7-DoF", dof=7,
    repository="wissem01chiha/dynamic-identification", commit="3b3baefc69a0587fc82a19f43560dfdb020bb852",
    licence="MIT (LICENSE at this commit, Copyright (c) 2024 Wissem CHIHA; CC0-1.0 at HEAD, where the data "
            "is gone)", committable=True, rate_hz=1000.0,
    torque_source="joint torque sensors (Torque1..6); joint 7: TorqueCur7, Kinova's current-based torque "
                  "(the logged Torque7 is 0 throughout)",
    conventions="rad, rad/s, N.m; signs agree with the URDF's gravity torques on joints 2-6 (measured about "
                "1.3-1.6 x the URDF's); Time is a sample index",
    gravity="-z of the URDF base (gravity torques of the URDF match the measured signs)",
    files=(
        F("LICENSE", 1068, "00e74b25ccee6d0aa99396430d685f61f32b74973fc8bd7f1d1777854c5d18ba"),
        F(_KINOVA.format("identification_data/RecordTrajectory_quadratic.csv"), 2996662,
          "82b68faf7b12f73f83e82acb6b6660b5cae28c702058f58269c87718f7ee9ed7"),
        F(_KINOVA.format("validation_data/opti_traj_testing1.csv"), 3115452,
          "0c9229ae8882a43fb1aac59c1b527a0942a99dcb0fe2aed77e948091fe8bf274"),
        F(_KINOVA.format("validation_data/opti_traj_testing2.csv"), 1589618,
          "e8e27ef2f4943a3a5b3632c319731473747507e58a512b29adde48a9d4769440"),
        F("pyDynaMapp/robot/kinova/gen3.urdf", 6268, "798b384976d9e847f8896e29ac58b0581c1dbcb6bad2d5d8ed9474841b38e1f8"),
    ),
    runs=(_kinova_run("quadratic", "identification_data/RecordTrajectory_quadratic.csv"),
          _kinova_run("testing1", "validation_data/opti_traj_testing1.csv"),
          _kinova_run("testing2", "validation_data/opti_traj_testing2.csv")),
    splits=(Split("time", "quadratic"), Split("time", "testing1"), Split("cross-run", "quadratic", "testing1"),
            Split("cross-run", "testing1", "testing2")),
    robot_file="pyDynaMapp/robot/kinova/gen3.urdf",
    notes=("runs are short: 4.9 s, 4.7 s and 2.3 s",
           "the repository's 44f47d5 (MIT, Copyright 2022) has the same identification blobs under datasets/kinova/ "
           "and a 25.9 kB robots/kinovaGen3.urdf (it loads too)",
           "single-joint trapezoid runs (jointwise_motion/joint_{1..7}_trapez.csv) exist for friction; not declared"),
)

# --- PAL TIAGo arm + torso ------------------------------------------------------------------------

_TIAGO = "examples/tiago/data/identification/dynamic/tiago_{}.csv"
_TIAGO_JOINTS = ["torso_lift_joint"] + _names("arm_", 7, suffix="_joint")
# identification.py of the same commit: tau = reduction_ratio x kmotor x effort (torso: + 9.81 x its
# subtree mass, a constant the offset column absorbs)
TIAGO_GAINS = (1.0, 100 * 0.136, 100 * 0.136, 100 * -0.087, 100 * -0.087, 336 * -0.0613, 336 * -0.0613,
               336 * -0.0613)

TIAGO = Arm(
    name="tiago", maker="PAL Robotics", model="TIAGo arm (7 revolute) + prismatic torso", dof=8,
    repository="thanhndv212/figaroh-plus", commit="c3b5172849b744984b7181fd9d517c83fb4242e1",
    licence="Apache-2.0", committable=True, rate_hz=100.0,
    torque_source="motor current (A) x reduction x motor constant, gains from examples/tiago/identification.py",
    conventions="m / rad, m/s / rad/s; NEGATIVE motor constants on arm_3..7 (signs differ by joint); torso "
                "effort plus the constant 9.81 x subtree mass in the authors' script",
    gravity="-z; a mobile base, so the mounting may tilt",
    files=(
        F("LICENSE", 597, "8385e8dcd5f592c5edb8483436b7a90f3a6ce4105b91ef37c7bec4e063749c1b"),
        F(_TIAGO.format("position"), 1418146, "4297a60d434ee89f1f424ad0da8ec65bc00072ac57eb06b94966c0819fc2786d"),
        F(_TIAGO.format("velocity"), 1504041, "269f681ca7a9511ac1698bf027ddf601e3fdb49d7d397af4810ec839f136cd69"),
        F(_TIAGO.format("effort"), 494579, "12c635987705efade603426a600f5b315add7f580c720a4b84609dadb9d0a2e9"),
        F("examples/tiago/urdf/tiago_48_schunk.urdf", 72190,
          "e4412357e3ea141097acc835d81c4ac477f889ad99b05d2a9818ed9cdf9d12b6"),
    ),
    runs=(Run("run", "csv_columns", {
        "files": {"pos": _TIAGO.format("position"), "vel": _TIAGO.format("velocity"), "eff": _TIAGO.format("effort")},
        "time": {"file": "pos", "column": "t"},
        "q": {"file": "pos", "columns": [f"- {j}_position" for j in _TIAGO_JOINTS]},
        "qd": {"file": "vel", "columns": [f"- {j}_velocity" for j in _TIAGO_JOINTS]},
        "tau": {"file": "eff", "columns": [f"- {j}_effort" for j in _TIAGO_JOINTS], "scale": list(TIAGO_GAINS)},
    }),),
    splits=(Split("time", "run"),),
    robot_file="examples/tiago/urdf/tiago_48_schunk.urdf", tip_link="arm_7_link",
    robot_note="the URDF the authors' identification.py loads; the whole robot (base wheels, head, gripper)",
    notes=("wrist efforts arm_5..7 are almost constant (std 0.002-0.004 A): only the torso and joints 1-4 carry "
           "information", "the wrist is a coupled differential (tiago_config.yaml: has_coupled_wrist)",
           "timestamps are irregular (dt 10.0-12.3 ms)"),
)

# --- Rokae 7-DoF ----------------------------------------------------------------------------------

ROKAE = Arm(
    name="rokae", maker="Rokae", model="7-DoF collaborative arm, URDF 'AR5-5_07R-W4C4A2' (xMate ER Pro class in the "
                                    "collection code)", dof=7,
    repository="FrankJIE09/Dynamics_identification_Frank", commit="758dc8d6f78e63ecba0aac16d28255ae045f1d3c",
    licence="none (no LICENSE file: all rights reserved)", committable=False, rate_hz=50.0,
    torque_source="link-side joint torque from the xCore SDK real-time interface (joint torque sensors)",
    conventions="rad, rad/s, N.m; the logger's own ddq columns are ignored; the first row is a zero placeholder "
                "(all q = 0, tau2 = -26.6 N.m where the URDF gives -0.2) and is dropped",
    gravity="-z of the URDF base assumed; at row 3000 the measured tau2 (-5.1) and the URDF's gravity (+21.5) "
            "disagree in sign while at row 1500 they agree: check joint zero offsets",
    files=(
        F("src/config/dynamics_identification_data_real.csv", 837622,
          "1c58c840362a20bc00162f20e6c154dd40bae10e27f9b21bf2abd8b8cc50d578"),
        F("urdf/AR5-5_07R-W4C4A2.urdf", 12684, "db78c704bfb830c652310eb9a50c0760bbee9829493e403fadddff08ef0b080d"),
    ),
    runs=(Run("run", "csv_columns", {
        "files": {"main": "src/config/dynamics_identification_data_real.csv"},
        "skip_rows": 1,
        "time": {"file": "main", "column": "time"},
        "q": {"file": "main", "columns": _names("q", 7, 0)},
        "qd": {"file": "main", "columns": _names("dq", 7, 0)},
        "tau": {"file": "main", "columns": _names("tau", 7, 0)},
    }),),
    splits=(Split("time", "run"),),
    robot_file="urdf/AR5-5_07R-W4C4A2.urdf",
    notes=("the repository's *_mujoco.csv and scripts/dynamics_identification_data.csv are MuJoCo simulations",
           "one 60 s run: a time split is the only hold-out"),
)

# --- AIRBOT Play ----------------------------------------------------------------------------------

_AIRBOT = "examples/airbot_play/data/identification/{}"


def _airbot_run(name: str, folder: str, suffix: str = "") -> Run:
    return Run(name, "csv_columns", {
        "files": {"q": _AIRBOT.format(f"{folder}/identification_q_real{suffix}.csv"),
                  "tau": _AIRBOT.format(f"{folder}/identification_tau_real{suffix}.csv")},
        "rate_hz": 100.0,  # no time column; ts 0.01 in config/airbot_play_config.yaml
        "q": {"file": "q", "columns": _names("q", 6, 0)},
        "tau": {"file": "tau", "columns": _names("tau", 6)},
    })


AIRBOT_PLAY = Arm(
    name="airbot_play", maker="Discover Robotics", model="AIRBOT Play 6-DoF", dof=6,
    repository="liuyurong129/figaroh_kinova", commit="24b73fff9ddd174b1a57bab0bc0add112e1defac",
    licence="none (no LICENSE file: all rights reserved)", committable=False, rate_hz=100.0,
    torque_source="torque reported by the joint motors (presumably from current; the README does not say), "
                  "quantised in steps of 0.0147 N.m (joints 1-3) and 0.0049 N.m (joints 4-6)",
    conventions="rad, N.m; no velocity column (qd from the filtered q); signs agree with the URDF's gravity "
                "torques on joints 2, 3, 5",
    gravity="-z of the URDF base",
    files=(
        F(_AIRBOT.format("chirp_motion/identification_q_real.csv"), 348561,
          "85bfc46028d4d19a9983910e90d70a6db53c9e5f636cb2f4a880b7376c481306"),
        F(_AIRBOT.format("chirp_motion/identification_tau_real.csv"), 353017,
          "76b7e695fa078907a1a2023cc80fb98241f5822beae235f2b2715341f3666cd2"),
        F(_AIRBOT.format("chirp_motion/identification_q_real_loaded.csv"), 348562,
          "26c369b54c0589024506e86eb09764f895a5208ef4d7595a018a5ade1236eb0c"),
        F(_AIRBOT.format("chirp_motion/identification_tau_real_loaded.csv"), 349115,
          "93ac200793a435beb94a6e997f35abd670f8b3507a9e4787f08a335f0310206d"),
        F(_AIRBOT.format("trapezoidal_motion/identification_q_real.csv"), 324790,
          "3f8aa317784a2e0ea46ec4b7ad48b47272e28be5ad03002e1d7888f412c0776f"),
        F(_AIRBOT.format("trapezoidal_motion/identification_tau_real.csv"), 328543,
          "64d8ef9c9cb7606da833ca2e52949f24e961fcc5a80049ae49b3f86692991e4c"),
        F("examples/airbot_play/data/urdf/airbot_play_v3_0_gripper.urdf", 9608,
          "0dd3f923a465eaf7c4e7bec405c87ccdd406f50ced2202114bf774bb3691b0e1"),
    ),
    runs=(_airbot_run("chirp", "chirp_motion"), _airbot_run("trapezoid", "trapezoidal_motion"),
          Run(**{**_airbot_run("chirp_loaded", "chirp_motion", "_loaded").__dict__,
                 "note": "the chirp with a 0.48 kg payload (mass_load in the config): needs the payload in the model"})),
    splits=(Split("time", "chirp"), Split("cross-run", "chirp", "trapezoid")),
    robot_file="examples/airbot_play/data/urdf/airbot_play_v3_0_gripper.urdf",
    notes=("the *_simulation* files are simulated", "most meshes are >= 4 MiB and absent (not needed)"),
)

# --- Schunk 6-DoF (LWA 4P, to be confirmed) -------------------------------------------------------

_SCHUNK = "autoKoopman_codeocean/data/Robot/measurement_{}/{}.csv"


def _schunk_run(k: int) -> Run:
    return Run(f"measurement_{k}", "csv_columns", {
        "files": {"t": _SCHUNK.format(k, "time"), "x": _SCHUNK.format(k, "trajectory"), "u": _SCHUNK.format(k, "input")},
        "header": False,
        "rows": "shortest",  # input.csv has one row fewer: the input held over each interval
        "time": {"file": "t", "column": 0},
        "q": {"file": "x", "columns": list(range(6))},
        "qd": {"file": "x", "columns": list(range(6, 12))},
        "tau": {"file": "u", "columns": list(range(6))},
    })


SCHUNK = Arm(
    name="schunk", maker="Schunk", model="6-DoF arm (README: 'Schunk 6 DoF'; likely the LWA 4P, unconfirmed)", dof=6,
    repository="nikhilushinde/AutoKoopman", commit="6edafed221599dd75fd941af68865f7ad100cc08",
    licence="CC0-1.0 (autoKoopman_codeocean/data/LICENSE; the code is GPL-3.0)", committable=True, rate_hz=250.0,
    torque_source="COMMANDED motor torque: only 6 distinct input.csv blobs across 100 runs whose trajectories differ",
    conventions="rad, rad/s; torque units as commanded (N.m presumably)", gravity="unknown",
    files=(
        F("autoKoopman_codeocean/data/LICENSE", 6555, "36ffd9dc085d529a7e60e1276d73ae5a030b020313e6c5408593a6ae2af39673"),
        F(_SCHUNK.format(1, "time"), 5388, "0047c2d722c9a51cda5c42aeba634f7532ca81942b2a83e157be3c924a4ff214"),
        F(_SCHUNK.format(1, "trajectory"), 96681, "a27d6df3481e1659cd59d24cad747ce4452ff89914ce1ae0f234d557befbabcc"),
        F(_SCHUNK.format(1, "input"), 38517, "1f46b3008ffa1d2511c2cfea38288a079b38c8de777f9ffd003b60c5e2ef7b9e"),
        F(_SCHUNK.format(21, "time"), 4042, "3324d73425350d5b3af511e36bfdaa10c6e2830c3ae68d6162aa814ff8e6bf59"),
        F(_SCHUNK.format(21, "trajectory"), 72680, "184278aed363b2a881df15fda418fab0d77ed6b2354788fef68600d50df37bf7"),
        F(_SCHUNK.format(21, "input"), 27957, "44e23023430a8d5ee9f0cc1ec65c5ce959bfa1d5c0f52676d7bfe61f3e282510"),
    ),
    runs=(_schunk_run(1), _schunk_run(21)),
    splits=(Split("cross-run", "measurement_1", "measurement_21"),),
    robot_file=None,
    robot_note="no model in this repository; the LWA 4P xacro is in ipa320/schunk_modular_robotics "
               "(schunk_description/urdf/lwa4p/lwa4p.urdf.xacro at 96b98a3e6c68b06d8892da97bf93b42f25216418), "
               "xacro, not a URDF, inertials unchecked",
    evaluate=False, why_not="commanded, not measured, torque; no URDF",
    notes=("100 runs of 3.7 s; only measurements 1 and 21 (two different input groups) are declared",
           "joint 6 barely moves (0.03 rad)", "the data is not at the repository's HEAD; use this commit"),
)

ARMS: tuple[Arm, ...] = (KR300, KINOVA_GEN3, TIAGO, ROKAE, AIRBOT_PLAY, SCHUNK)


def arm(name: str) -> Arm:
    for a in ARMS:
        if a.name == name:
            return a
    raise KeyError(f"arm: unknown {name!r}; the corpus has {[a.name for a in ARMS]}")
