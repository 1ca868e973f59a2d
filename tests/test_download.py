"""Download recipes, without the network: gdown.download is replaced by fakes that fail or copy a local archive."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import gdown
import py7zr
import pytest
import requests

from calibrank.study.data import download
from calibrank.study.data.published import load_published

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parent.parent


def _tree(path: Path) -> list[str]:
    """The dataset files under ``path`` (the checksum file apart: tests of it look at it themselves)."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.name != download.SUMS) if path.exists() else []


class FakeDrive:
    """Stands in for gdown.download: serves local files by Drive id, or raises what it was given."""

    def __init__(self, served: dict[str, Path | BaseException]) -> None:
        self.served = served
        self.calls: list[dict] = []

    def __call__(self, url=None, output=None, quiet=False, id=None, timeout=None, **kwargs):  # noqa: A002 - gdown's names
        self.calls.append({"id": id, "output": output, "timeout": timeout, **kwargs})
        assert timeout is not None, "downloads must have a network timeout"
        what = self.served[id]
        if isinstance(what, BaseException):
            Path(output + ".part").write_bytes(b"partial")  # gdown leaves partial files behind on failure
            raise what
        Path(output).write_bytes(what.read_bytes())
        return output


@pytest.fixture
def drive(monkeypatch):
    def install(served: dict[str, Path | BaseException]) -> FakeDrive:
        fake = FakeDrive(served)
        monkeypatch.setattr(gdown, "download", fake)
        return fake

    return install


def _tar_gz(dest: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(dest, "w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return dest


def _zip(dest: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(dest, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return dest


def _7z(dest: Path, members: dict[str, bytes], scratch: Path) -> Path:
    scratch.mkdir()
    with py7zr.SevenZipFile(dest, "w") as sz:
        for name, data in members.items():
            src = scratch / name.replace("/", "_")
            src.write_bytes(data)
            sz.write(src, arcname=name)
    return dest


def _fixture(name: str, file: str) -> bytes:
    return (FIXTURES / name / file).read_bytes()


MSD_ID, UDC_ID = download.recipe("msdialog").drive_ids[0], download.recipe("udc_dstc8").drive_ids[0]
MANTIS_NEW, MANTIS_OLD = download.recipe("mantis").drive_ids


# ---------------------------------------------------------------- offline


@pytest.mark.parametrize(
    "error",
    [
        requests.exceptions.ConnectionError("Failed to resolve 'drive.google.com'"),
        requests.exceptions.ConnectTimeout("timed out"),
        gdown.exceptions.DownloadError("Failed to download after 0 retries"),
    ],
)
def test_offline_exits_2_with_one_clear_paragraph(tmp_path, drive, capsys, error):
    fake = drive({MSD_ID: error})
    dest = tmp_path / "raw" / "msdialog"
    assert download.main(["msdialog", "--dest", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().count("\n") == 0  # one paragraph
    assert "msdialog" in err and f"https://drive.google.com/uc?id={MSD_ID}" in err
    assert str(dest) in err
    assert "make data DATASET=msdialog" in err and "ciir.cs.umass.edu" in err and "by hand" in err
    assert len(fake.calls) == 1
    assert not dest.exists()  # the folder we created is gone again, and nothing is in it


def test_offline_leaves_existing_dest_untouched(tmp_path, drive, capsys):
    dest = tmp_path / "udc"
    dest.mkdir()
    (dest / "notes.txt").write_text("mine")
    drive({UDC_ID: requests.exceptions.ConnectionError("no route to host")})
    assert download.main(["udc_dstc8", "--dest", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "udc_dstc8" in err and "github.com/dstc8-track2/NOESIS-II" in err
    assert _tree(dest) == ["notes.txt"]


def test_offline_mantis_does_not_try_the_second_id(tmp_path, drive, capsys):
    fake = drive(
        {
            MANTIS_NEW: requests.exceptions.ConnectionError("down"),
            MANTIS_OLD: requests.exceptions.ConnectionError("down"),
        }
    )
    assert download.main(["mantis", "--dest", str(tmp_path / "m")]) == 2
    assert [c["id"] for c in fake.calls] == [MANTIS_NEW]
    assert "guzpenha.github.io/MANtIS" in capsys.readouterr().err


def test_module_runs_as_a_script():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    done = subprocess.run(
        [sys.executable, "-m", "calibrank.study.data.download", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0
    assert "msdialog" in done.stdout and "udc_dstc8" in done.stdout


def test_unknown_dataset_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        download.main(["ubuntu_v1"])
    assert info.value.code == 2
    with pytest.raises(ValueError, match="msdialog"):
        download.recipe("ubuntu_v1")


# ---------------------------------------------------------------- recipes on local archives


def test_msdialog_tar_gz(tmp_path, drive, capsys):
    archive = _tar_gz(
        tmp_path / "MSDialog.tar.gz",
        {f"MSDialog/{s}.tsv": _fixture("msdialog", f"{s}.tsv") for s in ("train", "valid", "test")},
    )
    drive({MSD_ID: archive})
    dest = tmp_path / "dest"
    assert download.main(["msdialog", "--dest", str(dest), "--quiet"]) == 0
    assert _tree(dest) == ["test.tsv", "train.tsv", "valid.tsv"]
    for s in ("train", "valid", "test"):
        assert (dest / f"{s}.tsv").read_bytes() == _fixture("msdialog", f"{s}.tsv")
    assert len(load_published("msdialog", dest)["train"]) == 3


def test_mantis_old_7z_after_drive_refuses_the_new_id(tmp_path, drive):
    members = {
        f"data_{a}_easy.tsv": _fixture("mantis", f"{b}.tsv")
        for a, b in (("train", "train"), ("dev", "valid"), ("test", "test"))
    }
    members.update({f"data_{a}_easy_lookup.txt": b"lookup\n" for a in ("train", "dev", "test")})
    archive = _7z(tmp_path / "response_ranking_dataset_easy.7z", members, tmp_path / "scratch")
    fake = drive(
        {
            MANTIS_NEW: gdown.exceptions.FileURLRetrievalError("Too many users have viewed or downloaded this file"),
            MANTIS_OLD: archive,
        }
    )
    dest = tmp_path / "dest"
    files = download.fetch("mantis", dest, quiet=True)
    assert [c["id"] for c in fake.calls] == [MANTIS_NEW, MANTIS_OLD]
    assert _tree(dest) == ["test.tsv", "train.tsv", "valid.tsv"]
    assert files["valid"].read_bytes() == _fixture("mantis", "valid.tsv")
    assert {k: len(v) for k, v in load_published("mantis", dest).items()} == {"train": 3, "valid": 1, "test": 2}


def test_mantis_new_zip_with_plain_names(tmp_path, drive):
    archive = _zip(
        tmp_path / "mantis.zip", {f"mantis/{s}.tsv": _fixture("mantis", f"{s}.tsv") for s in ("train", "valid", "test")}
    )
    fake = drive({MANTIS_NEW: archive})
    dest = tmp_path / "dest"
    download.fetch("mantis", dest, quiet=True)
    assert [c["id"] for c in fake.calls] == [MANTIS_NEW]
    assert (dest / "test.tsv").read_bytes() == _fixture("mantis", "test.tsv")


def test_mantis_member_in_wrong_format_falls_back(tmp_path, drive):
    processed = b"context\tresponse\nWhy?\tBecause.\n"
    new = _zip(tmp_path / "new.zip", {f"{s}.tsv": processed for s in ("train", "valid", "test")})
    old = _7z(
        tmp_path / "old.7z",
        {
            f"data_{a}_easy.tsv": _fixture("mantis", f"{b}.tsv")
            for a, b in (("train", "train"), ("dev", "valid"), ("test", "test"))
        },
        tmp_path / "s",
    )
    drive({MANTIS_NEW: new, MANTIS_OLD: old})
    dest = tmp_path / "dest"
    download.fetch("mantis", dest, quiet=True)
    assert (dest / "train.tsv").read_bytes() == _fixture("mantis", "train.tsv")


def test_udc_zip(tmp_path, drive):
    members = {
        f"ubuntu/task-1.ubuntu.{s}.json": _fixture("udc_dstc8", f"task-1.ubuntu.{s}.json") for s in ("train", "dev")
    }
    members["ubuntu/task-1.ubuntu.test.blind.json"] = b"[]"
    members["ubuntu-task-1.txt"] = b"readme"
    drive({UDC_ID: _zip(tmp_path / "ubuntu.zip", members)})
    dest = tmp_path / "dest"
    assert download.main(["udc_dstc8", "--dest", str(dest), "--quiet"]) == 0
    assert _tree(dest) == ["task-1.ubuntu.dev.json", "task-1.ubuntu.train.json"]
    assert [len(v) for v in load_published("udc_dstc8", dest).values()] == [2, 1, 2]


def test_archive_without_a_member_fails_cleanly(tmp_path, drive, capsys):
    archive = _tar_gz(
        tmp_path / "MSDialog.tar.gz",
        {f"MSDialog/{s}.tsv": _fixture("msdialog", f"{s}.tsv") for s in ("train", "valid")},
    )
    drive({MSD_ID: archive})
    dest = tmp_path / "dest"
    assert download.main(["msdialog", "--dest", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "no archive member for test" in err and "MSDialog/train.tsv" in err and "Traceback" not in err
    assert not dest.exists()


def test_web_page_instead_of_archive(tmp_path, drive, capsys):
    page = tmp_path / "page.html"
    page.write_text("<!DOCTYPE html><html><body>Google Drive - Quota exceeded</body></html>")
    drive({UDC_ID: page})
    dest = tmp_path / "dest"
    dest.mkdir()
    assert download.main(["udc_dstc8", "--dest", str(dest)]) == 2
    assert "web page" in capsys.readouterr().err
    assert _tree(dest) == []


def test_files_already_there_are_not_downloaded_again(tmp_path, drive):
    fake = drive({})
    dest = tmp_path / "dest"
    dest.mkdir()
    for s in ("train", "valid", "test"):
        (dest / f"{s}.tsv").write_bytes(_fixture("mantis", f"{s}.tsv"))
    assert download.main(["mantis", "--dest", str(dest)]) == 0
    assert fake.calls == []


# ---------------------------------------------------------------- checksums
def test_installed_files_get_checksums_that_later_runs_verify(tmp_path, drive):
    import hashlib

    archive = _tar_gz(
        tmp_path / "MSDialog.tar.gz",
        {f"MSDialog/{s}.tsv": _fixture("msdialog", f"{s}.tsv") for s in ("train", "valid", "test")},
    )
    fake = drive({MSD_ID: archive})
    dest = tmp_path / "dest"
    assert download.main(["msdialog", "--dest", str(dest), "--quiet"]) == 0
    sums = (dest / download.SUMS).read_text().splitlines()
    assert sums == [
        f"{hashlib.sha256((dest / f).read_bytes()).hexdigest()}  {f}" for f in ("test.tsv", "train.tsv", "valid.tsv")
    ]
    calls = len(fake.calls)
    assert (
        download.main(["msdialog", "--dest", str(dest), "--quiet"]) == 0 and len(fake.calls) == calls
    )  # verified, kept
    with open(dest / "valid.tsv", "ab") as fh:  # changed after installation
        fh.write(b"1\textra\n")
    with pytest.raises(
        download.DownloadFailed, match=r"valid\.tsv: sha256 [0-9a-f]{64} differs from [0-9a-f]{64} recorded"
    ):
        download.fetch("msdialog", dest)


def test_a_pinned_archive_checksum_refuses_another_file(tmp_path, drive, monkeypatch):
    archive = _tar_gz(
        tmp_path / "MSDialog.tar.gz",
        {f"MSDialog/{s}.tsv": _fixture("msdialog", f"{s}.tsv") for s in ("train", "valid", "test")},
    )
    drive({MSD_ID: archive})
    real = download.recipe
    monkeypatch.setattr(download, "recipe", lambda name: dataclasses.replace(real(name), sha256=((MSD_ID, "0" * 64),)))
    dest = tmp_path / "dest"
    with pytest.raises(download.DownloadFailed, match="differs from the pinned 0000"):
        download.fetch("msdialog", dest, quiet=True)
    assert _tree(dest) == [] and not (dest / download.SUMS).exists()


def test_files_put_in_place_by_hand_are_recorded_then_checked(tmp_path, drive):
    drive({})
    dest = tmp_path / "dest"
    dest.mkdir()
    for s in ("train", "valid", "test"):
        (dest / f"{s}.tsv").write_bytes(_fixture("mantis", f"{s}.tsv"))
    download.fetch("mantis", dest)
    assert set(download.verify("mantis", dest)) == {"train.tsv", "valid.tsv", "test.tsv"}
    (dest / "test.tsv").unlink()
    (dest / "test.tsv").write_bytes(b"0\tx\n")
    with pytest.raises(download.DownloadFailed, match=r"test\.tsv: sha256"):
        download.fetch("mantis", dest)
