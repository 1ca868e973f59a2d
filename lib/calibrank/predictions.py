"""The Predictions container every ranker returns.

For one ranker on one query set: ``qids [Q]``; ``labels [Q, K]`` (0/1); ``probs [Q, K]``, the
probability of relevance that calibration is measured on; ``samples [S, Q, K]``, S joint draws
of its predictive distribution (1 for a deterministic model, T dropout passes, M ensemble
members, or GP draws joint over a query's candidates, so covariances are real); optional
``mask [Q, K]`` for padded lists of different lengths (a padded slot holds zeros and is left out
by every analysis) and ``docids [Q, K]``. ``mean``, ``var`` and ``cov`` are population moments
of ``samples``, as the first paper's code used.

On disk: ``<name>.npz`` and a ``<name>.json`` sidecar (ranker, params, seed, data hash,
timings), both atomic, the sidecar last and checked against the arrays.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from calibrank.atomic import atomic_path, read_json, sha256_file, write_json

__all__ = ["Predictions", "PredictionsError", "logit"]

_EPS = 1e-7


class PredictionsError(ValueError):
    """Malformed or mismatched Predictions; the message names the file or the field."""


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.log(p) - np.log1p(-p)


@dataclass(frozen=True)
class Predictions:
    qids: np.ndarray
    labels: np.ndarray
    probs: np.ndarray
    samples: np.ndarray
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    mask: np.ndarray | None = None
    docids: np.ndarray | None = None

    def __post_init__(self) -> None:
        qids = np.asarray(self.qids).astype(str)
        labels = np.asarray(self.labels)
        probs = np.asarray(self.probs, dtype=np.float64)
        samples = np.asarray(self.samples, dtype=np.float64)
        where = self.meta.get("name", "predictions")
        if qids.ndim != 1:
            raise PredictionsError(f"{where}: qids must be 1-D, got shape {qids.shape}")
        q = qids.shape[0]
        if labels.ndim != 2 or labels.shape[0] != q:
            raise PredictionsError(f"{where}: labels must be [Q={q}, K], got shape {labels.shape}")
        if probs.shape != labels.shape:
            raise PredictionsError(f"{where}: probs shape {probs.shape} != labels shape {labels.shape}")
        if samples.ndim != 3 or samples.shape[1:] != labels.shape or samples.shape[0] < 1:
            raise PredictionsError(
                f"{where}: samples must be [S>=1, {q}, {labels.shape[1]}], got shape {samples.shape}"
            )
        if not np.isin(labels, (0, 1)).all():
            raise PredictionsError(f"{where}: labels must be 0 or 1")
        for name, arr in (("probs", probs), ("samples", samples)):
            bad = ~np.isfinite(arr) | (arr < 0) | (arr > 1)
            if bad.any():
                raise PredictionsError(
                    f"{where}: {name} must be probabilities in [0, 1]; {int(bad.sum())} values are not "
                    f"(first: {float(arr[bad].flat[0])!r})"
                )
        if len(set(qids.tolist())) != q:
            raise PredictionsError(f"{where}: qids are not unique")
        mask = self._checked_mask(where, labels, probs, samples)
        docids = None
        if self.docids is not None:
            docids = np.asarray(self.docids).astype(str)
            if docids.shape != labels.shape:
                raise PredictionsError(f"{where}: docids shape {docids.shape} != labels shape {labels.shape}")
            if mask is not None and (docids[~mask] != "").any():
                raise PredictionsError(f"{where}: a padded slot (mask False) must have docid ''")
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "docids", docids)
        object.__setattr__(self, "qids", qids)
        object.__setattr__(self, "labels", labels.astype(np.int8))
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "samples", samples)

    def _checked_mask(
        self, where: str, labels: np.ndarray, probs: np.ndarray, samples: np.ndarray
    ) -> np.ndarray | None:
        if self.mask is None:
            return None
        mask = np.asarray(self.mask)
        if mask.shape != labels.shape or mask.dtype != bool:
            raise PredictionsError(
                f"{where}: mask must be a bool array of shape {labels.shape}, got {mask.dtype} {mask.shape}"
            )
        if not mask.any(axis=1).all():
            first = int(np.flatnonzero(~mask.any(axis=1))[0])
            raise PredictionsError(f"{where}: query {first} has no candidate (its mask row is all False)")
        pad = ~mask
        if labels[pad].any() or probs[pad].any() or samples[:, pad].any():
            raise PredictionsError(f"{where}: padded slots (mask False) must hold label 0, probability 0 and sample 0")
        return mask

    # ------------------------------------------------------------------ list lengths
    @property
    def valid(self) -> np.ndarray:
        """[Q, K] True where a query has a candidate (all True without a mask)."""
        return np.ones(self.labels.shape, dtype=bool) if self.mask is None else self.mask

    @property
    def lengths(self) -> np.ndarray:
        """[Q] number of candidates of each query."""
        return self.valid.sum(axis=1)

    @property
    def ragged(self) -> bool:
        """True when queries have different numbers of candidates."""
        return self.mask is not None and not self.mask.all()

    # ------------------------------------------------------------------ derived moments
    @property
    def n_samples(self) -> int:
        return int(self.samples.shape[0])

    @property
    def mean(self) -> np.ndarray:
        """[Q, K] mean over samples."""
        return self.samples.mean(axis=0)

    @property
    def var(self) -> np.ndarray:
        """[Q, K] population variance over samples (0 for a deterministic ranker)."""
        return self.samples.var(axis=0)

    @property
    def cov(self) -> np.ndarray:
        """[Q, K, K] population covariance between the candidates of each query."""
        centred = self.samples - self.samples.mean(axis=0, keepdims=True)
        return np.einsum("sqi,sqj->qij", centred, centred) / self.n_samples

    # ------------------------------------------------------------------ I/O
    def save(self, path: str | os.PathLike) -> Path:
        """Write ``path`` (``.npz``) and its ``.json`` sidecar atomically; returns the npz path."""
        path = Path(path).with_suffix(".npz")
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                # dict[str, Any]: numpy's stub types savez's **kwds beside allow_pickle (bool), which arrays are not
                arrays: dict[str, Any] = {
                    "qids": self.qids,
                    "labels": self.labels,
                    "probs": self.probs,
                    "samples": self.samples,
                }
                arrays.update((k, v) for k, v in (("mask", self.mask), ("docids", self.docids)) if v is not None)
                np.savez(fh, **arrays)
        meta = dict(self.meta)
        meta["shape"] = {"S": self.n_samples, "Q": int(self.labels.shape[0]), "K": int(self.labels.shape[1])}
        meta["npz_sha256"] = sha256_file(path)
        write_json(path.with_suffix(".json"), meta)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> Predictions:
        path = Path(path).with_suffix(".npz")
        side = path.with_suffix(".json")
        for p in (path, side):
            if not p.exists():
                raise FileNotFoundError(f"{p}: no such Predictions file")
        try:
            meta = read_json(side)
        except ValueError as exc:  # names the file and the line
            raise PredictionsError(f"{exc}; rerun the notebook that wrote it") from None
        if not isinstance(meta, dict):
            raise PredictionsError(
                f"{side}: expected a JSON object (the sidecar of {path.name}), got {type(meta).__name__}"
            )
        if meta.get("npz_sha256") not in (None, sha256_file(path)):
            raise PredictionsError(
                f"{path}: the arrays are not the ones its sidecar {side.name} describes (a write was interrupted?)"
            )
        try:
            with np.load(path, allow_pickle=False) as z:
                missing = {"qids", "labels", "probs", "samples"} - set(z.files)
                if missing:
                    raise PredictionsError(f"{path}: missing arrays {sorted(missing)}")
                arrays = {k: z[k] for k in ("qids", "labels", "probs", "samples", "mask", "docids") if k in z.files}
        except PredictionsError:
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise PredictionsError(
                f"{path}: not a readable .npz file ({type(exc).__name__}: {exc}); rerun the notebook that wrote it"
            ) from None
        shape = meta.get("shape", {})
        got = {"S": arrays["samples"].shape[0], "Q": arrays["labels"].shape[0], "K": arrays["labels"].shape[1]}
        if shape and shape != got:
            raise PredictionsError(f"{path}: arrays {got} disagree with sidecar {shape} (a write was interrupted?)")
        meta.setdefault("name", str(path))
        meta["path"] = str(path)  # where it was read from: errors about it name the file
        return cls(**arrays, meta=meta)

    @property
    def source(self) -> str:
        """The file it was read from, else its name: what an error about it should say."""
        return str(self.meta.get("path") or self.meta.get("name") or "predictions")

    def check_aligned(self, other: Predictions) -> None:
        """Raise unless ``other`` covers the same queries, candidates and labels, from the same data
        (the sidecars' ``data_hash`` where both have one), for paired comparisons. Errors name both files."""
        a, b = self.source, other.source
        ha, hb = self.meta.get("data_hash"), other.meta.get("data_hash")
        if ha and hb and ha != hb:
            raise PredictionsError(
                f"{a} and {b} were computed on different data (data_hash {ha} vs {hb}): "
                "they cannot be compared query by query; rerun the older one"
            )
        if self.labels.shape != other.labels.shape:
            raise PredictionsError(f"{a} has shape {self.labels.shape} but {b} has {other.labels.shape}")
        if not np.array_equal(self.qids, other.qids):
            raise PredictionsError(f"{a} and {b} cover different qids (or a different order)")
        if not np.array_equal(self.labels, other.labels):
            raise PredictionsError(f"{a} and {b} disagree on labels")
        if not np.array_equal(self.valid, other.valid):
            raise PredictionsError(f"{a} and {b} have different list lengths")
        if self.docids is not None and other.docids is not None and not np.array_equal(self.docids, other.docids):
            raise PredictionsError(f"{a} and {b} hold different candidates (docids differ)")
