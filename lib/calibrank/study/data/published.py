"""The published response ranking corpora of the first paper: where their files live and how to load them.

Below ``root`` (default ``data/raw/<name>``): ``train.tsv``, ``valid.tsv``, ``test.tsv`` for
``msdialog`` and ``mantis`` (:mod:`.tsv`); ``task-1.ubuntu.train.json`` and ``.dev.json`` for
``udc_dstc8`` (:mod:`.dstc8`), whose dev file is split in halves into valid and test, as the
first paper's code did (DSTC8 released no labelled test file). :func:`load_published` checks
every file against the ``SHA256SUMS`` that ``make data`` wrote; a folder without one is read
with a warning.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from calibrank import atomic
from calibrank.study import paths
from calibrank.study.data.dstc8 import read_dstc8
from calibrank.study.data.schema import DataError, Example
from calibrank.study.data.tsv import read_tsv

__all__ = [
    "PUBLISHED",
    "SPLITS",
    "SUMS",
    "expected_files",
    "homepage",
    "load_published",
    "missing_hint",
    "read_sums",
    "check_sums",
]

log = logging.getLogger(__name__)

SUMS = "SHA256SUMS"
"""The checksum file beside a dataset's installed files (``sha256sum`` format)."""

PUBLISHED = ("msdialog", "mantis", "udc_dstc8")
SPLITS = ("train", "valid", "test")

_HOMEPAGES = (
    ("msdialog", "https://ciir.cs.umass.edu/downloads/msdialog/"),
    ("mantis", "https://guzpenha.github.io/MANtIS/"),
    ("udc_dstc8", "https://github.com/dstc8-track2/NOESIS-II"),
)


def _check(name: str) -> None:
    if name not in PUBLISHED:
        raise ValueError(f"unknown published dataset {name!r}; known: {', '.join(PUBLISHED)}")


def homepage(name: str) -> str:
    """The original home of a published dataset (where to get it by hand)."""
    _check(name)
    return dict(_HOMEPAGES)[name]


def expected_files(name: str, root: Path | None = None) -> dict[str, Path]:
    """The files a dataset needs, by role: ``train``/``valid``/``test`` (TSV) or ``train``/``dev`` (DSTC8)."""
    _check(name)
    root = Path(root) if root is not None else paths.raw_dir(name)
    if name == "udc_dstc8":
        return {"train": root / "task-1.ubuntu.train.json", "dev": root / "task-1.ubuntu.dev.json"}
    return {split: root / f"{split}.tsv" for split in SPLITS}


def missing_hint(name: str, missing: list[Path]) -> str:
    """The message for missing dataset files: which ones, and how to get them."""
    where = missing[0].parent if missing else paths.raw_dir(name)
    return (
        f"{name}: missing {', '.join(str(p) for p in missing)}. "
        f"Run `make data DATASET={name}` on a machine with internet access (and copy {where} here), "
        f"or place the files there by hand, downloaded from the dataset's original home: {homepage(name)}"
    )


def read_sums(path: Path) -> dict[str, str]:
    """``{file name: sha256}`` from a ``SHA256SUMS`` file; a malformed line is a :class:`DataError` naming it."""
    recorded: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if len(parts) != 2 or not re.fullmatch(r"[0-9a-f]{64}", parts[0]):
            raise DataError(f"{path}:{lineno}: expected '<sha256>  <file name>', got {line!r}")
        recorded[parts[1].lstrip("*")] = parts[0]
    return recorded


def check_sums(name: str, paths: list[Path], root: Path) -> None:
    """Check ``paths`` (files of dataset ``name`` in ``root``) against ``root/SHA256SUMS``.

    Raises :class:`DataError` naming the first file that is not listed or whose sha256 differs
    from the recorded one; without a ``SHA256SUMS`` the files are not checked (a warning says so).
    """
    sums_path = Path(root) / SUMS
    if not sums_path.is_file():
        log.warning(
            "%s: no %s beside the files of %s, so they are read unchecked; `make data DATASET=%s` records "
            "their sha256 (files placed by hand too)",
            root,
            SUMS,
            name,
            name,
        )
        return
    recorded = read_sums(sums_path)
    for path in paths:
        expected = recorded.get(path.name)
        if expected is None:
            raise DataError(f"{path}: not listed in {sums_path}; rerun `make data DATASET={name}` to record it")
        got = atomic.sha256_file(path)
        if got != expected:
            raise DataError(
                f"{path}: sha256 {got} differs from {expected} recorded in {sums_path} when it was "
                f"installed (changed or truncated since?); download it again with "
                f"`python -m calibrank.study.data.download {name} --force`"
            )


def load_published(name: str, root: Path | None = None) -> dict[str, list[Example]]:
    """The ``train``, ``valid`` and ``test`` examples of a published dataset (true responses only).

    Every file is checked against the dataset's ``SHA256SUMS`` before it is read (:func:`check_sums`).
    """
    files = expected_files(name, root)
    missing = [p for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(missing_hint(name, missing))
    check_sums(name, list(files.values()), next(iter(files.values())).parent)
    if name == "udc_dstc8":
        dev = read_dstc8(files["dev"], name, split="dev")
        half = len(dev) // 2
        return {"train": read_dstc8(files["train"], name, split="train"), "valid": dev[:half], "test": dev[half:]}
    return {split: read_tsv(files[split], name, split) for split in SPLITS}
