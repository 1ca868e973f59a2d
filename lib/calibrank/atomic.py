"""Files written whole and read back checked: atomic writes, sha256 records, JSON, and the keys of cached results.

A reader never sees a half-written file: writes go to a temporary name that says which process
writes it (:func:`owner_tag`) and are renamed (:func:`atomic_path`); files read back have their
sha256 recorded last (:func:`atomic_recorded`, :func:`check_recorded`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "stable_hash",
    "cache_key",
    "atomic_path",
    "sha256_file",
    "DigestMismatch",
    "digest_path",
    "record_digest",
    "atomic_recorded",
    "check_recorded",
    "write_json",
    "decode_error_position",
    "utf8_error_at",
    "read_json",
    "host_name",
    "owner_tag",
    "temp_owner",
]


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


def check_recorded(
    path: str | os.PathLike, data: bytes, expected: str | None = None, record: str | os.PathLike | None = None
) -> None:
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
            raise DigestMismatch(
                f"{path}: no sha256 was recorded for it ({where} is missing or unreadable): "
                f"its writer did not finish, or an older version wrote it"
            )
        expected = parts[0]
    got = hashlib.sha256(data).hexdigest()
    if got != expected:
        raise DigestMismatch(
            f"{path}: sha256 {got} differs from {expected} recorded in {where} when it was "
            f"written: the file changed since"
        )


def write_json(dest: str | os.PathLike, obj: Any) -> Path:
    with atomic_path(dest) as tmp:
        tmp.write_text(
            json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
        )
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
        raise json.JSONDecodeError(
            f"{path}: not UTF-8 text at {decode_error_position(data, exc)}",
            data.decode("utf-8", errors="replace"),
            len(data[: exc.start].decode("utf-8", errors="replace")),
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise json.JSONDecodeError(f"{path}: not valid JSON ({exc.msg})", exc.doc, exc.pos) from None


def host_name() -> str:
    """This machine's name as a temporary file's name spells it (letters, digits and dashes)."""
    return re.sub(r"[^A-Za-z0-9-]", "", os.uname().nodename) or "localhost"


def owner_tag(pid: int | None = None) -> str:
    """``pid<PID>@<host>``: the writer of a temporary file, as its name spells it."""
    return f"pid{os.getpid() if pid is None else pid}@{host_name()}"


_OWNER = re.compile(r"\.pid(\d+)@([A-Za-z0-9-]+)\.")


def temp_owner(name: str) -> tuple[int, str] | None:
    """(pid, host) of the process that writes the temporary file ``name``; None when the name does not say."""
    found = _OWNER.findall(name)
    return (int(found[-1][0]), found[-1][1]) if found else None
