"""Download recipes for the published corpora: ``python -m calibrank.study.data.download DATASET [--dest DIR] [--force]``.

Each recipe fetches the Google Drive file that the first paper's code (Penha & Hauff,
``transformer_rankers``) downloads and installs the files :mod:`.published` expects under
``data/raw/<dataset>``: ``msdialog`` (a tar.gz of ``train``/``valid``/``test.tsv``), ``mantis`` (the
newer Drive file, else the older 7z of ``data_*_easy.tsv``; members matched by name, every TSV
checked to start with a 0/1 label) and ``udc_dstc8`` (a zip of the DSTC8 task-1 Ubuntu JSON).

The published files carry no checksums, so the first download is trusted and ``SHA256SUMS`` is
written beside the files; every later ``fetch`` verifies it. Everything is extracted into a
``.tmp-download-*`` folder and moved into place, so a failure leaves nothing half-written; a
network failure exits with code 2 and one paragraph on stderr.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import gdown
import py7zr
import requests

from calibrank import atomic
from calibrank.study import paths
from calibrank.study.data.published import PUBLISHED, SUMS, check_sums, expected_files, homepage, read_sums
from calibrank.study.data.schema import DataError

__all__ = ["SUMS", "DownloadFailed", "Member", "Recipe", "recipe", "fetch", "drive_url", "main", "verify"]

TIMEOUT = (10.0, 60.0)  # seconds: (connect, between bytes)


class DownloadFailed(RuntimeError):
    """A dataset could not be fetched; the message is a one-paragraph explanation for the user."""


class _BadArchive(Exception):
    """The downloaded file is not an archive holding the expected files."""


@dataclass(frozen=True)
class Member:
    """One file to take from the archive: its role (key of ``expected_files``) and how to find it."""

    role: str
    names: tuple[str, ...]  # accepted base names, preferred first
    pattern: str = ""  # fallback regex on the lower-cased base name, used if it matches exactly one member


@dataclass(frozen=True)
class Recipe:
    name: str
    drive_ids: tuple[str, ...]
    members: tuple[Member, ...]
    sha256: tuple[tuple[str, str], ...] = ()  # (drive id, sha256 of the file Drive serves) where known


def _write_sums(dest: Path, targets: dict[str, Path]) -> None:
    lines = [f"{atomic.sha256_file(p)}  {p.name}" for p in sorted(targets.values(), key=lambda q: q.name)]
    with atomic.atomic_path(dest / SUMS) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")


def verify(name: str, dest: Path | None = None) -> dict[str, str]:
    """Check a dataset's installed files against their ``SHA256SUMS``; ``{file name: sha256}``.

    Raises DownloadFailed naming the first file that is missing or differs, with both hashes.
    (:func:`calibrank.study.data.published.load_published` makes the same check whenever it reads them.)
    """
    dest = Path(dest) if dest is not None else paths.raw_dir(name)
    sums_path = dest / SUMS
    try:
        recorded = read_sums(sums_path)
        for fname in recorded:
            if not (dest / fname).is_file():
                raise DownloadFailed(
                    f"{dest / fname}: listed in {sums_path} but missing; rerun `make data DATASET={name}`"
                )
        check_sums(name, [dest / fname for fname in recorded], dest)
    except DataError as exc:
        raise DownloadFailed(str(exc)) from None
    return recorded


def recipe(name: str) -> Recipe:
    """The download recipe of a published dataset (ValueError for an unknown name)."""
    if name == "msdialog":
        return Recipe(
            name,
            ("1R_c8b7Yi0wChA_du3eKDtnOGuYTqVhnY",),
            tuple(Member(s, (f"{s}.tsv",)) for s in ("train", "valid", "test")),
        )
    if name == "mantis":
        tsv = r"(?!.*lookup).*\.tsv"
        return Recipe(
            name,
            ("17Uj9EwyGGCk9w_LIqDjlTx1y4MU7xxPv", "1nf_JRR7zIcCLrzvL_vRsuzBxDcD_3g6N"),
            (
                Member("train", ("data_train_easy.tsv", "train.tsv"), rf"(?=.*train){tsv}"),
                Member("valid", ("data_dev_easy.tsv", "valid.tsv", "dev.tsv"), rf"(?=.*(dev|valid)){tsv}"),
                Member("test", ("data_test_easy.tsv", "test.tsv"), rf"(?=.*test){tsv}"),
            ),
        )
    if name == "udc_dstc8":
        return Recipe(
            name,
            ("1Ypu-tIu4nT3rZ86bcqAx-lKeNomyve5N",),
            (Member("train", ("task-1.ubuntu.train.json",)), Member("dev", ("task-1.ubuntu.dev.json",))),
        )
    raise ValueError(f"unknown published dataset {name!r}; known: {', '.join(PUBLISHED)}")


def drive_url(file_id: str) -> str:
    return f"https://drive.google.com/uc?id={file_id}"


def fetch(name: str, dest: Path | None = None, *, force: bool = False, quiet: bool = False) -> dict[str, Path]:
    """Download and install a dataset's files into ``dest``; returns them by role. Raises DownloadFailed."""
    rec = recipe(name)
    dest = Path(dest) if dest is not None else paths.raw_dir(name)
    targets = expected_files(name, dest)
    if not force and all(p.is_file() for p in targets.values()):
        if (dest / SUMS).is_file():
            verify(name, dest)
        else:
            _write_sums(dest, targets)  # put in place by hand: trusted now, checked from now on
        return targets
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-download-", dir=dest))
    problems: list[str] = []
    try:
        for file_id in rec.drive_ids:
            archive = tmp / "archive"
            try:
                gdown.download(id=file_id, output=str(archive), quiet=quiet, use_cookies=False, timeout=TIMEOUT)
            except gdown.exceptions.FileURLRetrievalError as exc:  # Drive answered but will not serve the file
                problems.append(f"{drive_url(file_id)}: Google Drive refused the file ({_short(exc)})")
                continue
            except (requests.exceptions.RequestException, gdown.exceptions.DownloadError) as exc:
                raise DownloadFailed(_offline_message(name, drive_url(file_id), dest, targets, exc)) from None
            except OSError as exc:
                raise DownloadFailed(
                    f"Could not download {name}: writing to {tmp} failed ({_short(exc)}); nothing was installed in {dest}."
                ) from None
            pinned = dict(rec.sha256).get(file_id)
            if pinned is not None and atomic.sha256_file(archive) != pinned:
                problems.append(
                    f"{drive_url(file_id)}: sha256 {atomic.sha256_file(archive)} differs from the pinned {pinned}"
                )
                archive.unlink(missing_ok=True)
                continue
            try:
                staged = _extract(archive, rec, tmp / "staged", targets)
            except _BadArchive as exc:
                problems.append(f"{drive_url(file_id)}: {exc}")
                archive.unlink(missing_ok=True)
                continue
            for role, path in staged.items():
                os.replace(path, targets[role])
            _write_sums(dest, targets)
            return targets
        raise DownloadFailed(
            f"Could not download {name}: "
            + "; ".join(problems)
            + f". Nothing was installed in {dest}. "
            + _manual(name, dest, targets)
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if created and dest.is_dir() and not any(dest.iterdir()):
            dest.rmdir()


def _short(exc: BaseException, limit: int = 240) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _manual(name: str, dest: Path, targets: dict[str, Path]) -> str:
    files = ", ".join(p.name for p in targets.values())
    return (
        f"Run `make data DATASET={name}` on a machine with internet access and copy the files ({files}) "
        f"into {dest}, or download the dataset by hand from its original home, {homepage(name)}, "
        f"and place the files there under those names."
    )


def _offline_message(name: str, url: str, dest: Path, targets: dict[str, Path], exc: BaseException) -> str:
    return (
        f"Could not download {name}: {url} is unreachable ({_short(exc)}); this machine may have no "
        f"internet access. Nothing was written to {dest}. " + _manual(name, dest, targets)
    )


def _archive_kind(path: Path) -> str:
    with path.open("rb") as handle:
        head = handle.read(512)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(b"7z\xbc\xaf\x27\x1c"):
        return "7z"
    if tarfile.is_tarfile(path):
        return "tar"
    if head.lstrip().lower().startswith((b"<!doctype html", b"<html")):
        raise _BadArchive(
            "Google Drive sent a web page instead of the file (download quota exceeded or access denied?)"
        )
    raise _BadArchive(f"the downloaded file is not a zip, 7z or tar archive (starts with {head[:16]!r})")


def _listing(path: Path, kind: str) -> list[str]:
    if kind == "zip":
        with zipfile.ZipFile(path) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
    elif kind == "7z":
        with py7zr.SevenZipFile(path) as sz:
            names = [i.filename for i in sz.list() if not i.is_directory]
    else:
        with tarfile.open(path) as tf:
            names = [m.name for m in tf.getmembers() if m.isfile()]
    return [n for n in names if not n.startswith("__MACOSX/") and not Path(n).name.startswith("._")]


def _choose(names: list[str], member: Member) -> str:
    for wanted in member.names:
        hits = [n for n in names if Path(n).name == wanted]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise _BadArchive(f"several archive members named {wanted!r} ({', '.join(hits)})")
    if member.pattern:
        hits = [n for n in names if re.fullmatch(member.pattern, Path(n).name.lower())]
        if len(hits) == 1:
            return hits[0]
    shown = ", ".join(sorted(names)[:20]) or "nothing"
    raise _BadArchive(
        f"no archive member for {member.role} (expected {' or '.join(member.names)}); the archive holds {shown}"
    )


def _extract(archive: Path, rec: Recipe, out: Path, targets: dict[str, Path]) -> dict[str, Path]:
    """Extract the recipe's members into ``out`` under their canonical names; check their format."""
    try:
        kind = _archive_kind(archive)
        names = _listing(archive, kind)
        chosen = {m.role: _choose(names, m) for m in rec.members}
        out.mkdir(parents=True, exist_ok=True)
        staged = {role: out / targets[role].name for role in chosen}
        if kind == "7z":
            raw = out / "7z"
            with py7zr.SevenZipFile(archive) as sz:
                sz.extract(path=raw, targets=list(chosen.values()))
            for role, member in chosen.items():
                os.replace(raw / member, staged[role])
        elif kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                for role, member in chosen.items():
                    with zf.open(member) as src, staged[role].open("wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
        else:
            with tarfile.open(archive) as tf:
                for role, member in chosen.items():
                    extracted = tf.extractfile(member)
                    if extracted is None:  # pragma: no cover - only regular files are listed
                        raise _BadArchive(f"archive member {member} is not a regular file")
                    with extracted, staged[role].open("wb") as dst:
                        shutil.copyfileobj(extracted, dst, 1 << 20)
    except (zipfile.BadZipFile, tarfile.TarError, py7zr.exceptions.Bad7zFile, EOFError) as exc:
        raise _BadArchive(f"the archive is damaged ({_short(exc)})") from None
    for role, path in staged.items():
        _check_format(path, chosen[role])
    return staged


def _check_format(path: Path, member: str) -> None:
    """A cheap look at the first line: TSV rows start with a 0/1 label, DSTC8 files with a JSON list."""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        first = ""
        for line in handle:
            if line.strip():
                first = line
                break
    if path.suffix == ".json":
        ok = first.lstrip().startswith("[")
        expected = "a JSON list of examples"
    else:
        ok = first.split("\t", 1)[0] in ("0", "1") and first.count("\t") >= 2
        expected = "rows 'label<TAB>utterance...<TAB>candidate' with label 0 or 1"
    if not ok:
        raise _BadArchive(
            f"archive member {member} is not in the expected format ({expected}); its first line is {first[:60]!r}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m calibrank.study.data.download", description="Download a published response ranking corpus."
    )
    parser.add_argument("dataset", choices=PUBLISHED)
    parser.add_argument("--dest", type=Path, default=None, help="destination folder (default: data/raw/<dataset>)")
    parser.add_argument("--force", action="store_true", help="download even if the files are already there")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        files = fetch(args.dataset, args.dest, force=args.force, quiet=args.quiet)
    except DownloadFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for role, path in files.items():
        print(f"{args.dataset} {role}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
