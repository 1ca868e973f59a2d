"""A report folder written whole or not at all, one writer at a time.

The folder is built aside (``.tmp-<name>-<pid>`` beside it) and renamed into place once every
file is written; the previous report, if any, is moved away first and removed after. A
:class:`filelock.FileLock` keeps two runs writing one folder from mixing their files; it lives in the
temporary folder, keyed by the report's absolute path, so nothing is left beside the user's report. A
writer that finds another says so on one line and waits a bounded time; under the lock, leftovers of a
killed run (``.tmp-<name>-*``, ``.old-<name>-*``) are removed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock, Timeout

from calibrank.assess.errors import AssessError
from calibrank.atomic import stable_hash

__all__ = ["lock_path", "publish"]


def lock_path(out: str | os.PathLike) -> str:
    """The lock serialising the writers of report folder ``out``: in the temporary folder, named by a hash of
    ``out``'s absolute path, so it is shared by every writer of that folder and never left beside it."""
    digest = stable_hash(os.path.abspath(out), 24)
    return os.path.join(tempfile.gettempdir(), f"calibrank-report-{digest}.lock")


def publish(out: str | os.PathLike, write: Callable[[Path], None], *, timeout: float = 120.0) -> Path:
    """Call ``write(folder)`` on an empty folder, then put that folder at ``out``; returns ``out``.

    When ``write`` raises, nothing at ``out`` changes and the half-built folder is removed. When another
    writer holds ``out``, one line says so and this one waits up to ``timeout`` seconds, then gives up with
    an :class:`~calibrank.assess.errors.AssessError` (nothing written).
    """
    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    lock = FileLock(lock_path(out))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        print(f"calibrank: {out} is being written by another calibrank; waiting up to {timeout:.0f} s", file=sys.stderr)
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise AssessError(
                f"{out}: still being written by another calibrank after {timeout:.0f} s; nothing was "
                "written (run again when it is done, or choose another --out)"
            ) from None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        for stale in list(parent.glob(f".tmp-{out.name}-*")) + list(parent.glob(f".old-{out.name}-*")):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = parent / f".tmp-{out.name}-{os.getpid()}"
        old = parent / f".old-{out.name}-{os.getpid()}"
        try:
            tmp.mkdir()
            try:
                write(tmp)
            except OSError as exc:  # name the file where it was to go, not the folder it was built in
                name = str(exc.filename or "")
                if name.startswith(str(tmp)):
                    raise OSError(exc.errno, exc.strerror, str(out) + name[len(str(tmp)) :]) from None
                raise
            if out.exists():
                os.replace(out, old)
            os.replace(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
    finally:
        lock.release()
    return out
