"""The logits cache of a trained model (``<model folder>/logits/<key>.npz``): read and written whole.

:meth:`calibrank.study.model.rankers.base.Ranker._timed_logits` keys a file by the queries, the scoring
settings and the scoring code; a file is used only when it is the bytes recorded beside it
(:func:`calibrank.atomic.atomic_recorded`), so an interrupted or edited file is scored again.
"""

from __future__ import annotations

import io
import logging
import zipfile
from pathlib import Path

import numpy as np

from calibrank.atomic import atomic_recorded, check_recorded

__all__ = ["read_logits", "write_logits"]

log = logging.getLogger(__name__)


def read_logits(path: Path, n_pairs: int) -> tuple[np.ndarray, float] | None:
    """The logits ``[S, n_pairs]`` and seconds cached in ``path``; None when there is no sound file there
    (missing; not the bytes recorded beside it; not a readable .npz of that shape), logged unless missing."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        check_recorded(path, data)
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            logits, seconds = z["logits"], float(z["seconds"])
        if logits.ndim != 2 or logits.shape[1] != n_pairs:
            raise ValueError(f"{path}: logits of shape {logits.shape}, expected [S, {n_pairs}]")
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:
        log.warning("%s: the cached logits are not used (%s); scoring again", path, str(exc).removeprefix(f"{path}: "))
        return None
    return logits, seconds


def write_logits(path: Path, logits: np.ndarray, seconds: float) -> None:
    """Write the logits ``[S, N]`` and the seconds their scoring took to ``path``, atomically, its sha256 recorded beside it."""
    with atomic_recorded(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, logits=logits, seconds=np.float64(seconds))
