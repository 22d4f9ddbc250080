"""Fill numba's cache before a test session, one kernel family per process, two at a time.

On a fresh clone every numba kernel is compiled by whichever test first calls it. When that test
also runs a real-time peer (a UR controller or franky-sim at SCHED_FIFO beside the daemon's own
driver), the compile gets what those leave of a 2-core host: the daemon's validation kernels, 27 s
on an idle core, took over 180 s there and the daemon was not ready in time. Compiling them first,
with the host to themselves, costs the same CPU once and nothing in later tests (each later process
loads the kernels from the cache, about a second).

    python -m robodyn.tools.testing.precompile        # both families, in parallel
    python -m robodyn.tools.testing.precompile validation
"""

from __future__ import annotations

import subprocess
import sys
import time

FAMILIES = ("validation", "identification")


def validation() -> None:
    """Both RNEA builds (parallel and serial), through the daemon's own start-up warm-up; the
    simulated plant's kernels."""
    from robodyn.daemon.motion import warm_up_validation

    from robodyn.robot.loader import load_model

    warm_up_validation(load_model("panda"), 1000.0)
    # and the simulated plant's physics-step kernels, which its driver loads when it connects
    from robodyn.simulation.plant_kernels import load_kernels

    load_kernels(7)


def identification() -> None:
    """The regressor, Gram and prediction kernels, through the default identification of a short
    synthetic excitation. The torques are random: the fit is meaningless here, and RNEA stays out
    of this process (its two builds share one cache entry, and the serial one, compiled last by
    :func:`validation`, is the one the daemon has always loaded)."""
    import numpy as np
    from robodyn.identification.pipeline import (
        IdentificationConfig,
        identify,
        predict_base,
    )
    from robodyn.identification.signals import SampledData
    from robodyn.robot.loader import load_model
    from robodyn.trajectory import FourierTrajectory

    model = load_model("panda")
    n = model.dof
    rng = np.random.default_rng(0)
    traj = FourierTrajectory(0.6, (model.q_min + model.q_max) / 2, 0.1 * rng.normal(size=(n, 4)),
                             0.1 * rng.normal(size=(n, 4)), periods=1)
    t, q, qd, qdd, _ = traj.sample(200)
    tau = rng.normal(size=q.shape)
    result = identify(model, [SampledData(t, q, tau, qd, qdd)], IdentificationConfig())
    predict_base(model, result.base, result.values, q, qd, qdd)


def main(argv: list[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        print(f"precompile: unknown kernel family {unknown[0]!r} (expected one of {list(FAMILIES)})", file=sys.stderr)
        return 2
    if len(names) == 1:
        globals()[names[0]]()
        return 0
    start = time.monotonic()
    procs = {n: subprocess.Popen([sys.executable, "-m", "robodyn.tools.testing.precompile", n]) for n in names}
    failed = [n for n, p in procs.items() if p.wait() != 0]
    print(f"precompile: numba kernels of {', '.join(names)} in the cache ({time.monotonic() - start:.1f} s)"
          + (f"; failed: {', '.join(failed)} (they compile where first used)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
