"""The published response ranking corpora of the first paper: where their files live and how to load them.

Canonical layout below ``root`` (default ``runs.raw_dir(name)`` = ``<project>/data/raw/<name>``):

- ``msdialog`` and ``mantis``: ``train.tsv``, ``valid.tsv``, ``test.tsv`` (read by :mod:`.tsv`);
- ``udc_dstc8``: ``task-1.ubuntu.train.json`` and ``task-1.ubuntu.dev.json`` (read by :mod:`.dstc8`).
  DSTC8 released no labelled test file, so, as the first paper's code did, ``valid`` is the
  first half and ``test`` the second half of the dev file's examples that have a correct answer
  (``n // 2`` examples in valid, the rest in test).

``make data DATASET=<name>`` (:mod:`.download`) fetches the files into that layout.
"""

from __future__ import annotations

from pathlib import Path

from .. import runs
from .dstc8 import read_dstc8
from .schema import Example
from .tsv import read_tsv

__all__ = ["PUBLISHED", "SPLITS", "expected_files", "homepage", "load_published", "missing_hint"]

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
    root = Path(root) if root is not None else runs.raw_dir(name)
    if name == "udc_dstc8":
        return {"train": root / "task-1.ubuntu.train.json", "dev": root / "task-1.ubuntu.dev.json"}
    return {split: root / f"{split}.tsv" for split in SPLITS}


def missing_hint(name: str, paths: list[Path]) -> str:
    """The message for missing dataset files: which ones, and how to get them."""
    where = paths[0].parent if paths else runs.raw_dir(name)
    return (
        f"{name}: missing {', '.join(str(p) for p in paths)}. "
        f"Run `make data DATASET={name}` on a machine with internet access (and copy {where} here), "
        f"or place the files there by hand, downloaded from the dataset's original home: {homepage(name)}"
    )


def load_published(name: str, root: Path | None = None) -> dict[str, list[Example]]:
    """The ``train``, ``valid`` and ``test`` examples of a published dataset (true responses only)."""
    files = expected_files(name, root)
    missing = [p for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(missing_hint(name, missing))
    if name == "udc_dstc8":
        dev = read_dstc8(files["dev"], name, split="dev")
        half = len(dev) // 2
        return {"train": read_dstc8(files["train"], name, split="train"), "valid": dev[:half], "test": dev[half:]}
    return {split: read_tsv(files[split], name, split) for split in SPLITS}
