"""``core_install``: what ``pip install calibrank`` (the core, no extras) costs a practitioner.

A fresh venv (``python -m venv``) gets ``pip install <checkout>``; the section records the
packages it pulled, the size of its site-packages, whether any package of the study's stack came
along, and the process CPU time (user + system, the median over fresh processes) of ``import calibrank``
and of ``calibrank --help`` and ``calibrank assess --help`` (the console script as a user runs it), beside
an interpreter that imports nothing. Targets: ``import calibrank`` within 0.2 s of CPU and ``calibrank
--help`` within 0.3 s, whole processes. Pip reads the lock (``PIP_CONSTRAINT``) as ``make`` exports it.
"""

from __future__ import annotations

import json
import resource
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
STUDY_STACK = (
    "torch",
    "transformers",
    "jupyterlab",
    "jupyter-client",
    "papermill",
    "snakemake",
    "nbconvert",
    "ipykernel",
    "seaborn",
    "sentence-transformers",
)


def _size_mb(folder: Path) -> float:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file()) / 1024**2


def _cpu_seconds(command: list[str], repeats: int) -> float:
    """The median process CPU time (user + system) of ``command`` over ``repeats`` fresh processes."""
    times = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
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
        listed = json.loads(
            subprocess.run(
                [str(python), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
            ).stdout
        )
        names = sorted(p["name"].lower() for p in listed)
        site = Path(
            subprocess.run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
        script = str(venv / "bin" / "calibrank")
        empty = _cpu_seconds([str(python), "-c", "pass"], repeats)
        calibrank_s = _cpu_seconds([str(python), "-c", "import calibrank"], repeats)
        help_s = _cpu_seconds([script, "--help"], repeats)
        assess_help_s = _cpu_seconds([script, "assess", "--help"], repeats)
        study = [n for n in names if n in STUDY_STACK]
    return {
        "packages": len(names),
        "names": names,
        "site_packages_mb": _size_mb(site),
        "install_seconds": install_s,
        "empty_interpreter_cpu_s": empty,
        "import_calibrank_cpu_s": calibrank_s,
        "help_cpu_s": help_s,
        "assess_help_cpu_s": assess_help_s,
        "study_packages": study,
        "targets": [
            target("study packages in the core install", len(study), "<=", 0),
            target("import calibrank, process CPU (s)", calibrank_s, "<=", 0.2),
            target("calibrank --help, process CPU (s)", help_s, "<=", 0.3),
            target("calibrank assess --help, process CPU (s)", assess_help_s, "<=", 0.3),
        ],
    }
