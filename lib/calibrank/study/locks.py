"""One writer at a time, and the leftovers of writers that died: locks and the sweep of temporary files.

Concurrent builders of one file take :func:`exclusive` (a :class:`filelock.FileLock` beside it);
:func:`sweep_temp` removes the temporary files of dead writers (named by
:func:`calibrank.atomic.owner_tag`). ``python -m calibrank.study.locks sweep [--started EPOCH] DIR...``
sweeps folders.

A run of the workflow holds :func:`run_lock_path` for its profile while it runs
(:mod:`calibrank.study.pipeline.launch`), and snakemake keeps lock files of its own under ``.snakemake/locks/`` of
the project root, which a run that was killed leaves behind. :func:`workflow_writers` finds who may still own them
(the holders of the runs' locks, and snakemake processes working in the root), :func:`stale_lock_files` the ones
whose owner is dead.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import filelock

from calibrank.atomic import atomic_path, host_name, temp_owner

__all__ = [
    "sweep_temp",
    "LockHeld",
    "lock_path",
    "exclusive",
    "holder",
    "run_lock_path",
    "Writer",
    "workflow_writers",
    "workflow_lock_files",
    "lock_profiles",
    "stale_lock_files",
]


log = logging.getLogger(__name__)


#: When this process started using the package: temporary files without a writer that were
#: last written before it are leftovers of an earlier run.
RUN_STARTED = time.time()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def sweep_temp(folder: str | os.PathLike, started: float | None = None) -> list[Path]:
    """Remove the leftovers of dead writers in ``folder``; return what was removed.

    A ``.tmp-*`` file goes when its writer (:func:`calibrank.atomic.owner_tag`) is a dead process of this host, or,
    naming no writer, when it was last written before ``started`` (default :data:`RUN_STARTED`).
    Files of live processes and other hosts stay, and so do lock files (:func:`exclusive`).
    """
    folder = Path(folder)
    started = RUN_STARTED if started is None else started
    host = host_name()
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except FileNotFoundError:
        return removed
    for path in entries:
        name = path.name
        if name.startswith(".tmp-") and path.is_file():
            owner = temp_owner(name)
            if owner is not None:
                stale = owner[1] == host and not _alive(owner[0])
            else:
                try:
                    stale = path.stat().st_mtime < started
                except FileNotFoundError:
                    continue
            if stale:
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


class LockHeld(RuntimeError):
    """Another process holds the lock of a result; the message names the lock file and the holder."""


def lock_path(dest: str | os.PathLike) -> Path:
    """The lock file of a result (a file or a folder): ``.<name>.lock`` beside it."""
    dest = Path(dest)
    return dest.with_name(f".{dest.name}.lock")


def _holder_path(lock: Path) -> Path:
    """Who holds ``lock``: ``<lock>.holder``, written by the holder (filelock may truncate the lock file itself)."""
    return lock.with_name(lock.name + ".holder")


def holder(lock: str | os.PathLike) -> tuple[int, str, str] | None:
    """(pid, host, since) of the live holder of ``lock`` (a :func:`lock_path`) as it recorded itself; None when none
    is recorded, or the record is of a process of this host that died (its lock then released by the kernel)."""
    try:
        text = _holder_path(Path(lock)).read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        text = []
    if len(text) >= 3 and text[0].isdigit() and not (text[1] == host_name() and not _alive(int(text[0]))):
        return int(text[0]), text[1], text[2]
    return None


def _holder(lock: Path) -> str:
    found = holder(lock)
    return f"process {found[0]} on {found[1]} (since {found[2]})" if found else "another process"


_HELD: set[Path] = set()


@contextlib.contextmanager
def exclusive(dest: str | os.PathLike, *, what: str | None = None, wait: bool | float = True) -> Iterator[Path]:
    """Hold the exclusive lock of the result ``dest`` (a file or folder) for the ``with`` block; yield the lock file.

    A :class:`filelock.FileLock` on :func:`lock_path`: the kernel releases the lock of a process that
    dies, and the lock file stays after release (removing it would let two processes hold the lock).
    ``wait``: True waits as long as the holder works, a number at most that many seconds, False not
    at all; without the lock, :class:`LockHeld` names the lock file and its holder. The caller
    re-checks for the result after acquiring. A lock this process already holds raises ``RuntimeError``.
    """
    path = lock_path(dest).resolve()
    what = what or str(dest)
    if path in _HELD:
        raise RuntimeError(f"{what}: this process already holds {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        try:
            if wait is False:
                raise
            log.warning("%s: waiting for %s, which holds %s", what, _holder(path), path)
            lock.acquire(timeout=-1 if wait is True else float(wait), poll_interval=0.05)
        except filelock.Timeout:
            raise LockHeld(
                f"{what}: {path} is held by {_holder(path)}; wait for it to finish, or stop it "
                f"(a lock of a process that died is released by the kernel)"
            ) from None
    try:
        with atomic_path(_holder_path(path)) as tmp:
            tmp.write_text(f"{os.getpid()} {host_name()} {time.strftime('%Y-%m-%dT%H:%M:%S')}\n", encoding="utf-8")
        _HELD.add(path)
        yield path
    finally:
        _HELD.discard(path)
        _holder_path(path).unlink(missing_ok=True)
        lock.release()


def run_lock_path(root: str | os.PathLike, profile: str) -> Path:
    """``runs/<profile>/.workflow.lock`` under ``root``: held by a run of the profile's workflow while it runs, the
    lock of ``runs/<profile>/workflow`` (:func:`exclusive`)."""
    return lock_path(Path(root) / "runs" / profile / "workflow")


@dataclasses.dataclass(frozen=True)
class Writer:
    """A live process that may write a profile's results: ``what`` it is, its ``pid`` and the ``profile`` it runs (None
    when it does not say)."""

    what: str
    pid: int
    profile: str | None
    since: str = ""


def _snakemakes(root: Path) -> list[Writer]:
    """Live snakemake processes of this user whose working folder is ``root`` (Linux: read from ``/proc``)."""
    out = []
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            if not any(Path(a).name == "snakemake" for a in args) or Path(os.readlink(entry / "cwd")) != root:
                continue
        except OSError:  # gone meanwhile, or another user's
            continue
        profile = next((a.split("=", 1)[1] for a in args if a.startswith("profile=")), None)
        out.append(Writer("snakemake", int(entry.name), profile))
    return out


def workflow_writers(root: str | os.PathLike) -> list[Writer]:
    """Who may still own snakemake's lock files in ``root``: the live holders of every profile's
    :func:`run_lock_path` (another host's holder counts as live) and the live snakemake processes working there."""
    root = Path(root).resolve()
    out = []
    for lock in sorted(root.glob("runs/*/.workflow.lock")):
        found = holder(lock)
        if found is not None and found[0] != os.getpid():
            out.append(Writer("a run of the workflow", found[0], lock.parent.name, found[2]))
    return out + _snakemakes(root)


def workflow_lock_files(root: str | os.PathLike) -> list[Path]:
    """Snakemake's lock files in ``root`` (``.snakemake/locks/<n>.input.lock`` and ``<n>.output.lock``)."""
    return sorted((Path(root) / ".snakemake" / "locks").glob("*.lock"))


def lock_profiles(path: str | os.PathLike, root: str | os.PathLike) -> set[str]:
    """The profiles whose files a snakemake lock file lists (``runs/<profile>/...``, ``reports/<profile>/...``)."""
    root, out = Path(root).resolve(), set()
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        p = Path(line.strip())
        if p.is_absolute():
            if not p.is_relative_to(root):
                continue
            p = p.relative_to(root)
        if len(p.parts) > 2 and p.parts[0] in ("runs", "reports"):
            out.add(p.parts[1])
    return out


def stale_lock_files(root: str | os.PathLike) -> tuple[list[Path], list[Writer]]:
    """Snakemake's lock files in ``root`` whose owner is dead, and the live writers (:func:`workflow_writers`).

    With no live writer every lock file is stale. Otherwise a file is stale when the profiles it lists are run by
    none of them; a snakemake process that names no profile may own any, so then none is."""
    files, live = workflow_lock_files(root), workflow_writers(root)
    if not live:
        return files, live
    running = {w.profile for w in live}
    if None in running:
        return [], live
    return [f for f in files if (named := lock_profiles(f, root)) and not named & running], live


def main(argv: list[str] | None = None) -> int:
    """``sweep [--started EPOCH] DIR...`` (module docstring)."""

    parser = argparse.ArgumentParser(
        prog="python -m calibrank.study.locks", description="Temporary files of dead writers."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_sweep = sub.add_parser("sweep", help="remove temporary files of dead writers in DIR...")
    p_sweep.add_argument("dirs", nargs="+", metavar="DIR")
    p_sweep.add_argument(
        "--started", type=float, default=None, help="seconds since the epoch when this run started (default: now)"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for folder in args.dirs:
        for path in sweep_temp(folder, args.started):
            print(f"removed {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
