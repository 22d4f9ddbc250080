"""The daemon's data is its account's alone: recordings, their index entries and identification
jobs are made in 0700 folders as 0600 files, whatever the process's umask (a daemon started from a
shell has 0022: every other account would read every recording where the home folder can be
entered). Existing folders with wider modes are narrowed at start (:func:`tighten_dir`).

Only permission bits are ever removed here: a folder the operator made narrower stays so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: str | Path, exist_ok: bool = True) -> Path:
    """``path`` and each missing parent created 0700 (``mkdir(parents=True)`` would give the
    parents the umask's mode); an existing one is left as it is. FileExistsError when ``path``
    exists and not ``exist_ok``."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists() and probe.parent != probe:  # bounded by the path's depth
        missing.append(probe)
        probe = probe.parent
    if not missing and not exist_ok:
        raise FileExistsError(f"{path} exists")
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:  # made meanwhile by another process
            if directory == path and not exist_ok:
                raise
            continue
        os.chmod(directory, DIR_MODE)  # a umask such as 0277 must not narrow it below the owner's rwx
    return path


def tighten_dir(path: str | Path) -> int | None:
    """Make ``path`` private: created 0700 when missing, group and world bits removed when it has
    any. Returns the mode it had when it was narrowed (for the caller's one log line), else None."""
    path = make_private_dir(path)
    st = os.stat(path)
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077:
        return None
    os.chmod(path, mode & 0o700)
    return mode


def open_private(path: str | Path, exclusive: bool = True) -> BinaryIO:
    """``path`` opened for writing as a 0600 file (``exclusive``: FileExistsError when it exists,
    like ``open(path, "xb")``; otherwise truncated, its mode narrowed to 0600). Never follows a
    symlink at ``path``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_EXCL if exclusive else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # the umask may have narrowed it; an existing file may be wider
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def write_private_atomic(path: str | Path, data: bytes, temporary: str | Path | None = None,
                         fsync: bool = True) -> None:
    """Write ``data`` to ``path`` as a 0600 file atomically: a temporary file in the same folder
    (``temporary``, default ``.<name>.<pid>.tmp``), then a rename. ``fsync``: on the disk before
    the rename (a crash leaves the old file or the new one)."""
    path = Path(path)
    tmp = Path(temporary) if temporary is not None else path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open_private(tmp, exclusive=False) as fh:
        fh.write(data)
        if fsync:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
