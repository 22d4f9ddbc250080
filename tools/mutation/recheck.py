"""Re-run the survivors of a mutation session against the tests as they are now.

    python tools/mutation/recheck.py MODULE_PATH --root COPY [--workdir DIR]

Applies each surviving mutant's diff (from the session database) to the scratch copy COPY
(see named_mutants.py for how to make one), runs the module's test command there, restores the
file and prints one JSON line per survivor: killed now, or still surviving.
"""
import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module")
    ap.add_argument("--root", required=True)
    ap.add_argument("--workdir", default="/tmp/robodyn-mutation")
    args = ap.parse_args(argv)
    cfg = run.tomllib.loads((run.HERE / "modules.toml").read_text())
    module = next(m for m in cfg["module"] if m["path"] == args.module)
    name = args.module.replace("/", ".").removesuffix(".py")
    summary = run._summary(Path(args.workdir) / f"{name}.sqlite", args.module, run._equivalents())
    root = Path(args.root)
    src = root / args.module
    original = src.read_text()
    for s in summary["survivors"]:
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as fh:
            fh.write(s["diff"] + "\n")
        subprocess.run(["patch", "-s", "-p0", str(src), fh.name], check=True)
        try:
            res = subprocess.run(shlex.split(run._test_command(module, 600)), cwd=root, capture_output=True, text=True)
        finally:
            src.write_text(original)
        failed = [ln for ln in res.stdout.splitlines() if ln.startswith("FAILED")]
        print(json.dumps({"line": s["line"], "operator": s["operator"], "source": s["source"],
                          "now": "killed" if res.returncode else "survived", "failing": failed[:2]}), flush=True)


if __name__ == "__main__":
    main()
