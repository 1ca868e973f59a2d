"""A report folder written whole or not at all, one writer at a time.

The folder is built aside (``.tmp-<name>-<pid>`` beside it) and renamed into place once every
file is written; the previous report, if any, is moved away first and removed after. A
:class:`filelock.FileLock` beside the folder keeps two runs of one name from mixing their files;
under it, leftovers of a killed run (``.tmp-<name>-*``, ``.old-<name>-*``) are removed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

__all__ = ["publish"]


def publish(out: str | os.PathLike, write: Callable[[Path], None], *, timeout: float = 600.0) -> Path:
    """Call ``write(folder)`` on an empty folder, then put that folder at ``out``; returns ``out``.

    When ``write`` raises, nothing at ``out`` changes and the half-built folder is removed.
    """
    out = Path(out)
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(parent / f".{out.name}.lock"), timeout=timeout):
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
                    raise OSError(exc.errno, exc.strerror, str(out) + name[len(str(tmp)):]) from None
                raise
            if out.exists():
                os.replace(out, old)
            os.replace(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
    return out
