"""Copy the corpus's files (bench/realdata/corpus.py) from a git checkout or bare clone into a cache.

For each arm, every declared file is taken from the arm's pinned commit with
``git --git-dir DIR show COMMIT:PATH``, checked against the size and SHA-256 recorded in
corpus.py, and written to ``CACHE/<arm>/<path>``. One line per arm: found, or missing with the
reason, and its licence note. Nothing is downloaded: DIR is a clone the user made (a work tree's
``.git`` is found by itself) or a bare snapshot.

    .venv/bin/python bench/realdata/fetch.py --arm kinova_gen3 --from-git ~/src/dynamic-identification
    .venv/bin/python bench/realdata/fetch.py --mirrors /work/.mirror      # owner+name/repo for every arm
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402

DEFAULT_CACHE = Path.home() / ".cache" / "robodyn" / "corpus"


def git_dir(directory: Path) -> Path:
    """The git directory of a work tree (its .git) or of a bare clone (itself)."""
    return directory / ".git" if (directory / ".git").exists() else directory


def blob(gitdir: Path, commit: str, path: str) -> bytes:
    done = subprocess.run(["git", "--git-dir", str(gitdir), "show", f"{commit}:{path}"], capture_output=True)
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise LookupError(reason[-1] if reason else f"git show {commit}:{path} failed")
    return done.stdout


def cached_path(cache: Path, arm: corpus.Arm, path: str) -> Path:
    return cache / arm.name / path


def verify(data: bytes, expected: corpus.SourceFile) -> str | None:
    """None when ``data`` is the declared file, else what differs."""
    if len(data) != expected.size:
        return f"{expected.path}: {len(data)} bytes, expected {expected.size}"
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected.sha256:
        return f"{expected.path}: sha256 {digest[:12]}..., expected {expected.sha256[:12]}..."
    return None


def cached(cache: Path, arm: corpus.Arm) -> list[str]:
    """Problems with the cached copy of ``arm`` (empty when every file is there and verified)."""
    problems = []
    for f in arm.files:
        p = cached_path(cache, arm, f.path)
        if not p.exists():
            problems.append(f"{f.path}: not in the cache")
            continue
        bad = verify(p.read_bytes(), f)
        if bad:
            problems.append(bad)
    return problems


def fetch_arm(arm: corpus.Arm, source: Path, cache: Path) -> list[str]:
    """Copy every file of ``arm`` from the git directory ``source``; the problems found (none: all copied)."""
    gitdir = git_dir(source)
    if not gitdir.exists():
        return [f"{source}: no such directory"]
    problems = []
    for f in arm.files:
        try:
            data = blob(gitdir, arm.commit, f.path)
        except LookupError as exc:
            problems.append(f"{f.path}: {exc}")
            continue
        bad = verify(data, f)
        if bad:
            problems.append(bad)
            continue
        target = cached_path(cache, arm, f.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return problems


def status_line(arm: corpus.Arm, problems: list[str]) -> str:
    licence = f"licence: {arm.licence}" + ("" if arm.committable else "; never commit or redistribute")
    if not problems:
        return f"{arm.name}: found ({len(arm.files)} files, {arm.repository}@{arm.commit[:10]}); {licence}"
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{arm.name}: missing: {problems[0]}{more}; {licence}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, default=DEFAULT_CACHE, help=f"cache folder (default {DEFAULT_CACHE})")
    p.add_argument("--arm", action="append", default=[], help="an arm of corpus.py (repeat with --from-git)")
    p.add_argument("--from-git", action="append", default=[], type=Path,
                   help="a clone or bare git directory of that arm's repository, one per --arm")
    p.add_argument("--mirrors", type=Path,
                   help="a folder of bare snapshots named owner+name/repo (the project's fetch of public "
                        "repositories): every arm whose repository is there")
    args = p.parse_args(argv)
    if len(args.arm) != len(args.from_git):
        print(f"--arm/--from-git: give them in pairs ({len(args.arm)} --arm, {len(args.from_git)} --from-git)")
        return 2
    sources: dict[str, Path] = {}
    for name, directory in zip(args.arm, args.from_git):
        try:
            sources[corpus.arm(name).name] = directory
        except KeyError as exc:
            print(f"--arm: {exc.args[0]}")
            return 2
    if args.mirrors:
        for a in corpus.ARMS:
            mirror = args.mirrors / a.repository.replace("/", "+") / "repo"
            sources.setdefault(a.name, mirror)
    missing = 0
    for a in corpus.ARMS:
        if a.name in sources:
            problems = fetch_arm(a, sources[a.name], args.dir)
        else:
            problems = cached(args.dir, a)
            if problems and not any(cached_path(args.dir, a, f.path).exists() for f in a.files):
                problems = [f"no source given (--arm {a.name} --from-git DIR, a clone of {a.url}) and nothing cached"]
        missing += bool(problems)
        print(status_line(a, problems))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
