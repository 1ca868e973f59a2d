"""Where things live on disk: the project root and its data, cache, run and report folders.

Below the project root (``CALIBRANK_ROOT`` overrides it): ``data/raw/``, ``data/cache/<kind>/``,
``runs/<profile>/`` and ``reports/<profile>/``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["project_root", "raw_dir", "cache_dir", "run_dir", "report_dir"]


def project_root() -> Path:
    """The project root: ``$CALIBRANK_ROOT`` if set, else the checkout this package lives in, else the cwd."""
    env = os.environ.get("CALIBRANK_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parents[3]  # lib/calibrank/study/paths.py -> root
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
