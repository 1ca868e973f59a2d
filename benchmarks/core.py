"""``core_install``: what ``pip install calibrank`` (the core, no extras) costs a practitioner.

A fresh venv (``python -m venv``) gets ``pip install <checkout>``; the section records the
packages it pulled, the size of its site-packages, whether any package of the study's stack came
along, and the time of ``import calibrank`` (what loading a ``calibrator.json`` needs) and of
``import calibrank.cli`` (what the command loads), each the median over fresh interpreters less
that of an interpreter that imports nothing. Pip reads the lock (``PIP_CONSTRAINT``) as ``make``
exports it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import target

__all__ = ["SECTION", "STUDY_STACK", "bench_core"]

SECTION = "core_install"
STUDY_STACK = ("torch", "transformers", "jupyterlab", "jupyter-client", "papermill", "snakemake", "nbconvert",
               "ipykernel", "seaborn", "sentence-transformers")


def _size_mb(folder: Path) -> float:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file()) / 1024**2


def _import_seconds(python: Path, code: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([str(python), "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_core(repo: Path, *, repeats: int = 7) -> dict[str, Any]:
    """Install the core of ``repo`` into a fresh venv and measure it (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        start = time.perf_counter()
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(repo)], check=True, capture_output=True)
        install_s = time.perf_counter() - start
        listed = json.loads(subprocess.run([str(python), "-m", "pip", "list", "--format=json"], check=True,
                                           capture_output=True, text=True).stdout)
        names = sorted(p["name"].lower() for p in listed)
        site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        empty = _import_seconds(python, "pass", repeats)
        calibrank_s = _import_seconds(python, "import calibrank", repeats) - empty
        cli_s = _import_seconds(python, "import calibrank.cli", repeats) - empty
        study = [n for n in names if n in STUDY_STACK]
    return {"packages": len(names), "names": names, "site_packages_mb": _size_mb(site), "install_seconds": install_s,
            "import_calibrank_s": calibrank_s, "import_cli_s": cli_s, "study_packages": study,
            "targets": [target("study packages in the core install", len(study), "<=", 0),
                        target("import calibrank (s)", calibrank_s, "<=", 1.0)]}
