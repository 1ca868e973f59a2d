"""Where things live on disk, how cached results are keyed, and how files are written.

Below the project root (``CALIBRANK_ROOT`` overrides it): ``data/raw/``, ``data/cache/<kind>/``,
``runs/<profile>/`` and ``reports/<profile>/``. A reader never sees a half-written file: writes
go to a temporary name and are renamed (:func:`atomic_path`), and files read back have their
sha256 recorded last (:func:`atomic_recorded`, :func:`check_recorded`). :func:`sweep_temp` removes
dead writers' temporary files; concurrent builders take :func:`exclusive`.
``python -m calibrank.runs sweep [--started EPOCH] DIR...`` sweeps folders.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock

__all__ = [
    "project_root",
    "raw_dir",
    "cache_dir",
    "run_dir",
    "report_dir",
    "cache_key",
    "stable_hash",
    "atomic_path",
    "sha256_file",
    "DigestMismatch",
    "digest_path",
    "atomic_recorded",
    "record_digest",
    "check_recorded",
    "write_json",
    "read_json",
    "decode_error_position",
    "utf8_error_at",
    "owner_tag",
    "temp_owner",
    "sweep_temp",
    "lock_path",
    "exclusive",
    "LockHeld",
]

log = logging.getLogger(__name__)

#: When this process started using the package: temporary files without a writer that were
#: last written before it are leftovers of an earlier run.
RUN_STARTED = time.time()


def project_root() -> Path:
    """The project root: ``$CALIBRANK_ROOT`` if set, else the checkout this package lives in, else the cwd."""
    env = os.environ.get("CALIBRANK_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parent.parent.parent  # lib/calibrank/runs.py -> root
    if (here / "params").is_dir() and (here / "lib" / "calibrank").is_dir():
        return here
    return Path.cwd().resolve()


def raw_dir(dataset: str) -> Path:
    return project_root() / "data" / "raw" / dataset


def cache_dir(kind: str) -> Path:
    path = project_root() / "data" / "cache" / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_dir(profile: str, *parts: str) -> Path:
    path = project_root() / "runs" / profile
    for p in parts:
        path = path / p
    path.mkdir(parents=True, exist_ok=True)
    return path


def report_dir(profile: str) -> Path:
    path = project_root() / "reports" / profile
    path.mkdir(parents=True, exist_ok=True)
    return path


def stable_hash(obj: Any, length: int = 16) -> str:
    """A hash of a JSON-serialisable object that does not depend on dict order or the Python process."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


def cache_key(**parts: Any) -> str:
    """A readable, collision-safe file stem from named parts, e.g. ``corpus-chitchat_split-test_..._<hash>``.

    Every part goes into the hash; short scalar parts are also spelled out for humans.
    """
    readable = [f"{k}-{v}" for k, v in sorted(parts.items()) if isinstance(v, (str, int)) and len(str(v)) <= 24]
    stem = "_".join(readable).replace("/", "-").replace(" ", "")
    return f"{stem}_{stable_hash(parts)}" if stem else stable_hash(parts)


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``dest`` naming this process; renamed to ``dest`` on success, deleted on error."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{dest.name}.{owner_tag()}.", dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp_path, dest)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def sha256_file(path: str | os.PathLike) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class DigestMismatch(ValueError):
    """A file's bytes are not the ones recorded when it was written; the message names the file and the record."""


def digest_path(path: str | os.PathLike) -> Path:
    """Where the sha256 of ``path`` is recorded: ``<name>.sha256`` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".sha256")


def record_digest(path: str | os.PathLike, digest: str) -> Path:
    """Record ``digest`` (hex sha256 of ``path``'s bytes) beside ``path``, atomically; returns the record."""
    path = Path(path)
    dest = digest_path(path)
    with atomic_path(dest) as tmp:
        tmp.write_text(f"{digest}  {path.name}\n", encoding="utf-8")
    return dest


@contextlib.contextmanager
def atomic_recorded(dest: str | os.PathLike) -> Iterator[Path]:
    """:func:`atomic_path`, then the sha256 of the bytes recorded beside ``dest``, last (a match means a complete file)."""
    with atomic_path(dest) as tmp:
        yield tmp
        digest = sha256_file(tmp)
    record_digest(dest, digest)


def check_recorded(path: str | os.PathLike, data: bytes, expected: str | None = None,
                   record: str | os.PathLike | None = None) -> None:
    """Raise :class:`DigestMismatch` unless ``data`` (the bytes read from ``path``) has the sha256 recorded for it.

    The record is ``expected`` (a digest kept elsewhere, named by ``record``) or the ``.sha256`` file
    beside ``path``; what was checked is what the caller parses.
    """
    path = Path(path)
    where = Path(record) if record is not None else digest_path(path)
    if expected is None:
        try:
            text = where.read_text(encoding="utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            text = ""
        parts = text.split()
        if not parts or not re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            raise DigestMismatch(f"{path}: no sha256 was recorded for it ({where} is missing or unreadable): "
                                 f"its writer did not finish, or an older version wrote it")
        expected = parts[0]
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise DigestMismatch(f"{path}: sha256 {got} differs from {expected} recorded in {where} when it was "
                             f"written: the file changed since")


def write_json(dest: str | os.PathLike, obj: Any) -> Path:
    with atomic_path(dest) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return Path(dest)


def decode_error_position(data: bytes, exc: UnicodeDecodeError) -> str:
    """``line L, column C (byte B)`` of the first byte that is not UTF-8, for error messages."""
    start = exc.start
    line = data.count(b"\n", 0, start) + 1
    column = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return f"line {line}, column {column} (byte {start}, 0x{data[start]:02x})"


def utf8_error_at(path: str | os.PathLike) -> str:
    """Where the first non-UTF-8 byte of ``path`` lies: ``line L, column C (byte B, 0xXX)``."""
    offset = 0
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.end >= len(line) and exc.reason == "unexpected end of data" and not line.endswith(b"\n"):
                    return f"line {lineno}, column {exc.start + 1} (byte {offset + exc.start}): the file ends inside a character"
                return f"line {lineno}, column {exc.start + 1} (byte {offset + exc.start}, 0x{line[exc.start]:02x})"
            offset += len(line)
    return "an unknown position"


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in ``path``; a file that is not UTF-8 JSON raises :class:`json.JSONDecodeError` naming it and the line."""
    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError(f"{path}: not UTF-8 text at {decode_error_position(data, exc)}",
                                   data.decode("utf-8", errors="replace"), len(data[:exc.start].decode("utf-8", errors="replace"))) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise json.JSONDecodeError(f"{path}: not valid JSON ({exc.msg})", exc.doc, exc.pos) from None


# ----------------------------------------------------------------------------- temporary files


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "", os.uname().nodename) or "localhost"


def owner_tag(pid: int | None = None) -> str:
    """``pid<PID>@<host>``: the writer of a temporary file, as its name spells it."""
    return f"pid{os.getpid() if pid is None else pid}@{_host()}"


_OWNER = re.compile(r"\.pid(\d+)@([A-Za-z0-9-]+)\.")


def temp_owner(name: str) -> tuple[int, str] | None:
    """(pid, host) of the process that writes the temporary file ``name``; None when the name does not say."""
    found = _OWNER.findall(name)
    return (int(found[-1][0]), found[-1][1]) if found else None


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

    A ``.tmp-*`` file goes when its writer (:func:`owner_tag`) is a dead process of this host, or,
    naming no writer, when it was last written before ``started`` (default :data:`RUN_STARTED`).
    Files of live processes and other hosts stay, and so do lock files (:func:`exclusive`).
    """
    folder = Path(folder)
    started = RUN_STARTED if started is None else started
    host = _host()
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


# ----------------------------------------------------------------------------- locks


class LockHeld(RuntimeError):
    """Another process holds the lock of a result; the message names the lock file and the holder."""


def lock_path(dest: str | os.PathLike) -> Path:
    """The lock file of a result (a file or a folder): ``.<name>.lock`` beside it."""
    dest = Path(dest)
    return dest.with_name(f".{dest.name}.lock")


def _holder_path(lock: Path) -> Path:
    """Who holds ``lock``: ``<lock>.holder``, written by the holder (filelock may truncate the lock file itself)."""
    return lock.with_name(lock.name + ".holder")


def _holder(lock: Path) -> str:
    try:
        text = _holder_path(lock).read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        text = []
    if len(text) >= 3 and text[0].isdigit() and not (text[1] == _host() and not _alive(int(text[0]))):
        return f"process {text[0]} on {text[1]} (since {text[2]})"
    return "another process"  # none recorded yet, or the record of a holder that died


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
            raise LockHeld(f"{what}: {path} is held by {_holder(path)}; wait for it to finish, or stop it "
                           f"(a lock of a process that died is released by the kernel)") from None
    try:
        with atomic_path(_holder_path(path)) as tmp:
            tmp.write_text(f"{os.getpid()} {_host()} {time.strftime('%Y-%m-%dT%H:%M:%S')}\n", encoding="utf-8")
        _HELD.add(path)
        yield path
    finally:
        _HELD.discard(path)
        _holder_path(path).unlink(missing_ok=True)
        lock.release()


# ----------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """``sweep [--started EPOCH] DIR...`` (module docstring)."""

    parser = argparse.ArgumentParser(prog="python -m calibrank.runs", description="Temporary files of dead writers.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_sweep = sub.add_parser("sweep", help="remove temporary files of dead writers in DIR...")
    p_sweep.add_argument("dirs", nargs="+", metavar="DIR")
    p_sweep.add_argument("--started", type=float, default=None,
                         help="seconds since the epoch when this run started (default: now)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    for folder in args.dirs:
        for path in sweep_temp(folder, args.started):
            print(f"removed {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
