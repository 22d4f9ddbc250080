"""Benchmark: robodyn's regressor against pinocchio's C++ loop, pinocchio from Python, and the floor.

Panda with rotor inertia and viscous, Coulomb and offset friction (98 columns), one thread unless
stated, all figures from one run, medians of ``--repeats`` timings after a warm-up (CPU time of
the timing thread for single-threaded figures, so that other processes on a shared machine inflate
them less; wall time for the all-threads figure). Prints JSON.

What is timed
-------------
* ``robodyn_dense``: ``regressor()`` filling the public (N*7, 98) sample-major array, zeros included.
* ``robodyn_base_layout``: the same regressor evaluated on the 69 base columns that each joint's
  row can reach, written once into the tile layout the normal equations consume
  (``gram_blocks(..., accumulate=False)``): what identification actually evaluates.
* ``robodyn_normal_equations``: that evaluation plus the per-joint Gram products (``gram_blocks``).
* ``pinocchio_cpp_store`` / ``pinocchio_cpp_compute``: ``pinocchio::computeJointTorqueRegressor``
  (7 x 70, no rotor or friction columns) in a C++ loop compiled here at -O3 -march=native against
  the headers of the installed ``pin`` wheel (source: pinocchio_loop.cpp beside this file), copying
  each sample's regressor into one (N*7, 70) array, or only reading one entry of it.
* ``pinocchio_python``: the same function called per sample from Python into a (N*7, 70) array.
The C++ reference is checked: its torque for the last sample (regressor x pinocchio's own
parameters) must equal robodyn's RNEA.

The floor
---------
FLOPs per sample are counted from the kernel's source (every +, -, * in the per-lane loops of
``_sincos``, ``_lanes_link``, ``_ten``, ``_lanes_carry_ten``; index arithmetic excluded) times how
often each runs per sample (sin/cos and the link recursion once per joint, ``_ten`` once per
(joint, link) pair the row needs, the carry once per pair beyond the joint's own link). For Panda:
about 4.5 kFLOP for the dense regressor. Bytes per sample: the dense output writes 7 x 98 x 8 =
5488 B (and reads 3 x 7 x 8 = 168 B of states); the base layout's tile stays in L2, so it has no
memory floor. Two machine rates are measured in the same run: the single-core DGEMM rate of
OpenBLAS (a subprocess with one BLAS thread; the best any code reaches with AVX-512 FMAs here)
and the write bandwidth of filling an array as large as the dense output (numpy ``fill``).
floor = max(FLOPs / DGEMM rate, bytes / write bandwidth); ``fraction_of_floor`` = floor / time.
``gram_gflops_1thread`` (the Gram products alone: normal equations minus base layout) shows what
Numba's code reaches on pure fused multiply-adds here: LLVM vectorises it with 256-bit registers,
half the width OpenBLAS's DGEMM uses; on a core that executes 512-bit instructions as two 256-bit
halves (AMD Zen 4) both reach about the same rate, elsewhere about half the DGEMM rate is this
code's own ceiling.
The normal equations' floor (``normal_equations_fraction_of_floor``) adds to the base layout's FLOPs
the fewest the Gram products can take: a triangle of n(n+1) FLOPs per sample for each joint's block
of n rows (its base columns, torque and ones, unpadded). ``blas_syrk_gflops_1thread_same_blocks``
times OpenBLAS's DSYRK on blocks of those shapes (1024-sample tiles, one thread), the library
alternative to the Numba Gram kernel; ``gram_gflops_needed_for_goal`` is the rate the Gram products
would need for the normal equations to reach 5x pinocchio's C++ loop beside the measured base layout.

    python bench/regressor/run.py [--samples 100000] [--repeats 5] [--pin-samples 20000]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

FRESH_PROCESS = r"""
import time
t0 = time.perf_counter()
import numpy as np
from robodyn.robot.loader import load_model
from robodyn.identification.regressor import ColumnSpec, regressor
model = load_model("panda")
spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
q = np.zeros((1000, 7))
t1 = time.perf_counter()
regressor(model, q, q, q, spec)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""

ALLOCATIONS = r"""
import numpy as np
from numba.core.runtime import rtsys
from robodyn.robot.loader import load_model
from robodyn.identification.regressor import ColumnSpec, regressor
model = load_model("panda")
spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
counts = []
for n in (1000, 100000):
    q = np.random.default_rng(0).normal(size=(n, 7))
    out = np.empty((n * 7, 98))
    regressor(model, q, q, q, spec, out=out, threads=1)
    before = rtsys.get_allocation_stats().alloc
    regressor(model, q, q, q, spec, out=out, threads=1)
    counts.append(rtsys.get_allocation_stats().alloc - before)
print(counts[0], counts[1])
"""

DGEMM = r"""
import time, numpy as np
a = np.random.default_rng(0).normal(size=(1536, 1536))
a @ a
runs = []
for _ in range(5):
    t = time.thread_time()
    a @ a
    runs.append(time.thread_time() - t)
print(2 * 1536**3 / sorted(runs)[2] / 1e9)
"""

SYRK = r"""
import sys, time, numpy as np
from scipy.linalg.blas import dsyrk
rows, samples, tile = [int(x) for x in sys.argv[1].split(",")], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
Z = [np.asfortranarray(rng.normal(size=(r, tile))) for r in rows]
G = [np.zeros((r, r), order="F") for r in rows]
def run():
    for _ in range(samples // tile):
        for z, g in zip(Z, G):
            dsyrk(1.0, z, 1.0, g, overwrite_c=1)
run()
runs = []
for _ in range(3):
    t = time.thread_time()
    run()
    runs.append(time.thread_time() - t)
print(sum(r * (r + 1) for r in rows) * (samples // tile) * tile / sorted(runs)[1] / 1e9)
"""

BOOST_DEFINES = ("BOOST_MPL_LIMIT_LIST_SIZE=30", "BOOST_MPL_LIMIT_VECTOR_SIZE=30",
                 "BOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "BOOST_FUSION_INVOKE_MAX_ARITY=12")


def timed(fn, repeats, clock=time.thread_time):
    """Seconds of each of ``repeats`` calls after one untimed warm-up call (first touch of the
    output pages, caches). Single-threaded figures use the calling thread's CPU time, which
    another process on the same core does not inflate; the all-threads figure uses wall time."""
    fn()
    times = []
    for _ in range(repeats):
        t = clock()
        fn()
        times.append(clock() - t)
    return times


def flops_of(fn) -> int:
    """+, -, * (and their augmented forms, and unary minus) in a function's source, index
    arithmetic and the _U(...) offset casts excluded."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn.py_func if hasattr(fn, "py_func") else fn)))
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            skip.update(id(n) for n in ast.walk(node.slice))
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("_U", "range", "max", "min", "abs"):
            skip.update(id(n) for n in ast.walk(node))
    count = 0
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            count += 1
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            count += 1
    return count


def regressor_flops_per_sample(model, plan) -> dict:
    from robodyn.identification import regressor as R

    n = model.dof
    ten = flops_of(R._ten)
    unit = flops_of(R._lanes_unit_ten) + ten
    carry = flops_of(R._lanes_carry_ten) + ten
    link = flops_of(R._lanes_link)
    sincos = flops_of(R._sincos)
    pairs = sum(int(plan.last[i]) - i + 1 for i in range(n) if plan.last[i] >= i)
    own = sum(1 for i in range(n) if plan.last[i] >= i)
    revolute = int(np.sum(model.joint_types == 0))
    total = revolute * sincos + n * link + own * unit + (pairs - own) * carry
    return {"total": total, "per_call": {"sincos": sincos, "link": link, "unit_motion_and_ten": unit,
                                         "carry_and_ten": carry}, "pairs": pairs}


def compile_reference(cxx: str) -> tuple[Path | None, str]:
    """Build pinocchio_loop.cpp against the pin wheel's headers (cached by source, flags, versions)."""
    import pinocchio as pin

    prefix = Path(pin.__file__).resolve()
    while prefix.name != "cmeel.prefix" and prefix != prefix.parent:
        prefix = prefix.parent
    include = prefix / "include"
    if not (include / "pinocchio").is_dir():
        return None, f"pinocchio headers not found under {include}"
    if not (include / "eigen3" / "Eigen").is_dir():
        return None, "Eigen headers not found (pip install 'robodyn[bench]' installs cmeel-eigen)"
    flags = ["-O3", "-march=native", "-DNDEBUG", "-std=c++17"] + [f"-D{d}" for d in BOOST_DEFINES]
    source = (HERE / "pinocchio_loop.cpp").read_bytes()
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    key = hashlib.sha256(source + " ".join(flags).encode() + version.encode() + pin.__version__.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "robodyn" / "bench-regressor" / key
    binary = cache / "pinocchio_loop"
    if not binary.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cache / "pinocchio_loop.tmp"
        cmd = [cxx, *flags, f"-I{include}", f"-I{include / 'eigen3'}", str(HERE / "pinocchio_loop.cpp"), "-o", str(tmp),
               f"-L{prefix / 'lib'}", f"-Wl,-rpath,{prefix / 'lib'}", "-lpinocchio_default"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return None, "compile failed: " + p.stderr[-2000:]
        tmp.rename(binary)
    return binary, f"{version}; {' '.join(flags)}"


def chain_text(model) -> str:
    lines = [str(model.dof)]
    for i in range(model.dof):
        F = model.fixed[i]
        numbers = list(F[:3, :3].ravel()) + list(F[:3, 3]) + list(model.inertial[i])
        lines.append(" ".join([str(int(model.joint_types[i]))] + [repr(float(x)) for x in numbers]))
    lines.append(" ".join(repr(float(x)) for x in model.gravity))
    return "\n".join(lines) + "\n"


def run_reference(binary, model, q, qd, qdd, repeats, store, algorithm="regressor") -> dict:
    with tempfile.TemporaryDirectory(prefix="robodyn-bench-") as tmp:
        (Path(tmp) / "chain.txt").write_text(chain_text(model))
        np.concatenate([q.ravel(), qd.ravel(), qdd.ravel()]).tofile(Path(tmp) / "states.bin")
        p = subprocess.run([str(binary), str(Path(tmp) / "chain.txt"), str(Path(tmp) / "states.bin"), str(q.shape[0]),
                            str(repeats), str(int(store)), algorithm], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--pin-samples", type=int, default=20_000, help="pinocchio from Python is timed on this many")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    import numba

    from robodyn.identification.base_params import base_parameters
    from robodyn.identification.regressor import ColumnSpec, _plan, gram_blocks, regressor
    from robodyn.robot.dynamics import inverse_dynamics
    from robodyn.robot.loader import load_model

    model = load_model("panda")
    spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
    base = base_parameters(model, spec)
    rng = np.random.default_rng(0)
    N = args.samples
    q = rng.uniform(model.q_min, model.q_max, size=(N, 7))
    qd = rng.normal(size=(N, 7))
    qdd = rng.normal(size=(N, 7))
    tau = rng.normal(size=(N, 7))
    out = np.empty((N * 7, spec.per_joint * 7))
    regressor(model, q[:100], qd[:100], qdd[:100], spec)  # compile / load the cache
    gram_blocks(model, q[:100], qd[:100], qdd[:100], tau[:100], spec, base.independent)

    us = lambda runs: statistics.median(runs) / N * 1e6  # noqa: E731
    all_threads = numba.config.NUMBA_NUM_THREADS
    runs = {
        "robodyn_dense_1thread": timed(lambda: regressor(model, q, qd, qdd, spec, out=out, threads=1), args.repeats),
        "robodyn_dense_all_threads_wall": timed(lambda: regressor(model, q, qd, qdd, spec, out=out,
                                                                  threads=all_threads), args.repeats, time.perf_counter),
        "robodyn_base_layout_1thread": timed(lambda: gram_blocks(model, q, qd, qdd, tau, spec, base.independent,
                                                                 accumulate=False), args.repeats),
        "robodyn_normal_equations_1thread": timed(lambda: gram_blocks(model, q, qd, qdd, tau, spec, base.independent),
                                                  args.repeats),
    }
    fill_runs = timed(lambda: out.fill(0.0), args.repeats)
    result = {
        "benchmark": "regressor", "robot": "panda", "columns": spec.per_joint * 7, "base_columns": base.count,
        "samples": N, "threads_all": all_threads, "repeats": args.repeats,
        "load_average_1min_at_start": os.getloadavg()[0],
        **{f"{k}_us_per_sample": us(v) for k, v in runs.items()},
    }

    # the floor
    dense_plan = _plan(model, spec)
    base_plan = _plan(model, spec, base.independent, "gram")
    flops = regressor_flops_per_sample(model, dense_plan)
    flops_base = regressor_flops_per_sample(model, base_plan)
    # the Gram products as the kernel performs them: the upper triangle of each joint's block of
    # m rows (its base columns, torque and ones; no padding rows), m(m+1)/2 multiply-adds a sample
    gram_flops = int(sum((len(c) + 2) * (len(c) + 3) for c in base_plan.columns))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    dgemm = float(subprocess.run([sys.executable, "-c", DGEMM], capture_output=True, text=True, env=env,
                                 check=True).stdout)
    bytes_dense = 7 * 98 * 8 + 3 * 7 * 8
    write_gbs = out.nbytes / statistics.median(fill_runs) / 1e9
    floor_dense = max(flops["total"] / (dgemm * 1e3), bytes_dense / (write_gbs * 1e3))  # us
    floor_base = flops_base["total"] / (dgemm * 1e3)
    result.update({
        "flops_per_sample_dense": flops["total"], "flops_per_sample_base_layout": flops_base["total"],
        "flops_per_call": flops["per_call"], "bytes_written_per_sample_dense": bytes_dense,
        "machine_dgemm_gflops_1core": dgemm, "machine_write_gb_per_s": write_gbs,
        "floor_dense_us_per_sample": floor_dense, "floor_base_layout_us_per_sample": floor_base,
        "dense_fraction_of_floor": floor_dense / result["robodyn_dense_1thread_us_per_sample"],
        "base_layout_fraction_of_floor": floor_base / result["robodyn_base_layout_1thread_us_per_sample"],
        "gram_flops_per_sample": gram_flops,
        "gram_gflops_1thread": gram_flops / max(result["robodyn_normal_equations_1thread_us_per_sample"]
                                                - result["robodyn_base_layout_1thread_us_per_sample"], 1e-9) / 1e3,
        "dense_gflops_1thread": flops["total"] / result["robodyn_dense_1thread_us_per_sample"] / 1e3,
        "base_layout_gflops_1thread": flops_base["total"] / result["robodyn_base_layout_1thread_us_per_sample"] / 1e3,
    })
    # The normal equations against the floor: the base-layout regressor's FLOPs plus the fewest
    # the Gram products can take (a triangle, n(n+1) FLOPs per sample for a block of n rows: each
    # joint's base columns, its torque and a column of ones, no padding), at the DGEMM rate.
    gram_min = int(sum((len(c) + 2) * (len(c) + 3) for c in base_plan.columns))
    ne_us = result["robodyn_normal_equations_1thread_us_per_sample"]
    floor_ne = (flops_base["total"] + gram_min) / (dgemm * 1e3)
    # OpenBLAS's DSYRK on the same per-joint blocks (tiles of 1024 samples, one thread): the
    # library alternative to the Numba Gram kernel, measured rather than assumed
    env_syrk = dict(env)
    syrk = float(subprocess.run([sys.executable, "-c", SYRK, ",".join(str(len(c) + 2) for c in base_plan.columns),
                                 str(N), "1024"], capture_output=True, text=True, env=env_syrk, check=True).stdout)
    result.update({
        "gram_flops_per_sample_minimum": gram_min,
        "flops_per_sample_normal_equations": flops_base["total"] + gram_min,
        "floor_normal_equations_us_per_sample": floor_ne,
        "normal_equations_fraction_of_floor": floor_ne / ne_us,
        "blas_syrk_gflops_1thread_same_blocks": syrk,
        "blas_syrk_gram_us_per_sample": gram_min / syrk / 1e3,
    })

    try:
        import pinocchio as pin

        from robodyn.robot.urdf import model_to_urdf
    except ImportError:
        result["pinocchio"] = "not installed (pip install 'robodyn[bench]')"
        pin = None
    if pin is not None:
        pm = pin.buildModelFromXML(model_to_urdf(model))
        pd = pm.createData()
        M = min(args.pin_samples, N)
        pin_out = np.empty((M * 7, 70))

        def run_pin():
            for k in range(M):
                pin_out[7 * k: 7 * k + 7] = pin.computeJointTorqueRegressor(pm, pd, q[k], qd[k], qdd[k])

        pin_py = statistics.median(timed(run_pin, max(1, args.repeats // 2))) / M * 1e6
        result.update({"pinocchio_version": pin.__version__, "pinocchio_columns": 70,
                       "pinocchio_python_samples": M, "pinocchio_python_us_per_sample": pin_py,
                       "speedup_dense_vs_pinocchio_python": pin_py / result["robodyn_dense_1thread_us_per_sample"]})
        cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
        binary, how = compile_reference(cxx) if cxx else (None, "no C++ compiler")
        if binary is None:
            result["pinocchio_cpp"] = how
        else:
            store = run_reference(binary, model, q, qd, qdd, args.repeats, True)
            compute = run_reference(binary, model, q, qd, qdd, args.repeats, False)
            truth = inverse_dynamics(model, q[-1:], qd[-1:], qdd[-1:])[0]
            check = float(np.max(np.abs(np.array(store["tau_last"]) - truth)) / np.max(np.abs(truth)))
            if check > 1e-10:
                raise SystemExit(f"pinocchio C++ reference disagrees with the RNEA ({check:.1e}): not comparable")
            cpp_store = statistics.median(store["seconds"]) / N * 1e6
            cpp_compute = statistics.median(compute["seconds"]) / N * 1e6
            result.update({
                "pinocchio_cpp_build": how, "pinocchio_cpp_check_relative_tau_error": check,
                "pinocchio_cpp_store_us_per_sample": cpp_store, "pinocchio_cpp_compute_us_per_sample": cpp_compute,
                "speedup_dense_vs_pinocchio_cpp_store": cpp_store / result["robodyn_dense_1thread_us_per_sample"],
                "speedup_base_layout_vs_pinocchio_cpp_compute":
                    cpp_compute / result["robodyn_base_layout_1thread_us_per_sample"],
                "speedup_normal_equations_vs_pinocchio_cpp_compute":
                    cpp_compute / result["robodyn_normal_equations_1thread_us_per_sample"],
                "goal_speedup_vs_pinocchio_cpp": 5.0, "goal_fraction_of_floor": 0.5,
            })
            # what the 5x goal asks of the Gram products, given the base-layout regressor as measured
            gram_budget = cpp_compute / 5.0 - result["robodyn_base_layout_1thread_us_per_sample"]
            result["normal_equations_us_per_sample_for_goal"] = cpp_compute / 5.0
            result["gram_gflops_needed_for_goal"] = (result["gram_flops_per_sample"] / gram_budget / 1e3
                                                     if gram_budget > 0 else None)

    env = dict(os.environ)
    fresh = []
    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, env=env, check=True)
        fresh.append([float(x) for x in p.stdout.split()])
    result["fresh_process_import_s_median"] = statistics.median(f[0] for f in fresh)
    result["fresh_process_first_call_s_median"] = statistics.median(f[1] for f in fresh)
    result["goal_first_call_s"] = 1.0
    env["NUMBA_NRT_STATS"] = "1"
    p = subprocess.run([sys.executable, "-c", ALLOCATIONS], capture_output=True, text=True, env=env, check=True)
    small, large = (int(x) for x in p.stdout.split())
    result["numba_allocations_1k_samples"] = small
    result["numba_allocations_100k_samples"] = large
    result["per_sample_allocation"] = large > small
    result["load_average_1min_at_end"] = os.getloadavg()[0]
    result["runs_s"] = runs
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
