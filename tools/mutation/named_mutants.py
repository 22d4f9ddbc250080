"""Four mutants once found surviving `make test`, applied by hand and run against their tests.

    python tools/mutation/named_mutants.py [--root DIR]

Each mutant is a literal text replacement in one source file; the script applies it, runs the
named tests, restores the file and prints one JSON line per mutant: killed (the tests failed) or
survived. Use --root on a scratch copy of the tree (`git archive HEAD | tar -x -C DIR`, with the
top-level packages linked into DIR/robodyn/) so that a running mutation session is not disturbed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

MUTANTS = [
    ("WSO eq. 15 without the memory term (in the velocity function)", "identification/optimizers/wso.py",
     "return mu * (V + a1 * (gbest - X) * c1 + a2 * (remembered - X) * c2)",
     "return mu * (V + a1 * (gbest - X) * c1)",
     ["tests/identification/methods/test_wso.py", "tests/identification/excitation/test_optimizer_math.py"]),
    ("WSO eq. 15 without the memory term (the optimiser passes the shark's own position)",
     "identification/optimizers/wso.py",
     "V = wso_velocity(V, X, gbest, memory[nu], a1",
     "V = wso_velocity(V, X, gbest, X, a1",
     ["tests/identification/methods/test_wso.py", "tests/identification/excitation/test_optimizer_math.py"]),
    ("WSO eq. 28 multiplying by rand instead of dividing", "identification/optimizers/wso.py",
     "return (X + towards_best) / (2.0 * np.maximum(r, 1e-12))",
     "return (X + towards_best) * (2.0 * np.maximum(r, 1e-12))",
     ["tests/identification/methods/test_wso.py", "tests/identification/excitation/test_optimizer_math.py"]),
    ("ICPSO chaotic search disabled", "identification/optimizers/swarm.py",
     'if variant == "icpso" and opts.chaos_steps > 0 and is_premature(',
     'if False and variant == "icpso" and opts.chaos_steps > 0 and is_premature(',
     ["tests/identification/excitation/test_icpso_paper.py", "tests/identification/excitation/test_optimizers.py"]),
    ("combined calibration cut to one iteration", "calibration/methods.py",
     "for iterations in range(1, max_iterations + 1):",
     "for iterations in range(1, 2):",
     ["tests/calibration/test_identification.py"]),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args(argv)
    root = Path(args.root)
    status = 0
    for name, path, old, new, tests in MUTANTS:
        src = root / path
        text = src.read_text()
        if text.count(old) != 1:
            print(json.dumps({"mutant": name, "error": f"{path}: the original text is not found once"}))
            status = 1
            continue
        src.write_text(text.replace(old, new))
        try:
            t0 = time.monotonic()
            run = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                                 cwd=root, capture_output=True, text=True,
                                 env={**__import__("os").environ, "PYTHONDONTWRITEBYTECODE": "1"})
        finally:
            src.write_text(text)
        failed = [ln for ln in run.stdout.splitlines() if ln.startswith("FAILED")]
        print(json.dumps({"mutant": name, "file": path, "result": "killed" if run.returncode else "survived",
                          "tests": tests, "failing": failed[:3], "wall_s": round(time.monotonic() - t0, 1)}),
              flush=True)
        status |= run.returncode == 0
    return status


if __name__ == "__main__":
    sys.exit(main())
