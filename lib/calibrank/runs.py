"""Where things live on disk, how cached results are keyed, and how files are written.

Layout below the project root (``CALIBRANK_ROOT`` overrides it):

- ``data/raw/<dataset>/``      downloaded research datasets (``make data DATASET=...``)
- ``data/cache/<kind>/``       cached derived data (negatives, embeddings), shared by profiles
- ``runs/<profile>/``          artefacts of one profile's run (query sets, predictions, metrics)
- ``reports/<profile>/``       executed notebooks and HTML

Every write goes to a temporary file in the destination folder and is renamed over the
destination only once complete, so a reader never sees a half-written file: an interrupted
write leaves the old file (or none) and a stray ``.tmp-*`` file that nothing reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "project_root",
    "raw_dir",
    "cache_dir",
    "run_dir",
    "report_dir",
    "cache_key",
    "stable_hash",
    "atomic_path",
    "write_json",
    "read_json",
]


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
    """Yield a temporary path beside ``dest``; on success rename it to ``dest``, on error delete it."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{dest.name}.", dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o644)  # mkstemp creates 0600; results are meant to be shared
        os.replace(tmp_path, dest)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_json(dest: str | os.PathLike, obj: Any) -> Path:
    with atomic_path(dest) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return Path(dest)


def read_json(path: str | os.PathLike) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))
