"""The core's version ranges, proven: its tests in a venv that holds the core alone.

``python tests/ranges.py lowest``: every dependency of ``[project.dependencies]`` at the lowest version its
range allows (``numpy>=1.26`` installs numpy 1.26.0). ``python tests/ranges.py numpy1``: whatever pip picks
beside ``numpy<2``, as a user pinned to numpy 1 gets. Each installs ``.[test]`` (the core and the test
oracles, no study) into ``build/ranges-<name>`` from PyPI and runs the tests marked ``core``
(tests/conftest.py) there, against the installed package rather than the checkout. ``make test`` runs both.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from conftest import CORE_TESTS  # noqa: E402 (the list of the core's test files lives beside its marker)

#: what each venv pins beyond the core's own ranges
PINS = {"lowest": None, "numpy1": ["numpy<2"]}


def lowest_pins() -> list[str]:
    """``name==X`` for every ``name>=X`` of the core's dependencies; a dependency without a lower bound is refused."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    pins = []
    for dep in deps:
        m = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*(?:\[[^]]*\])?\s*([^;]*)", dep)
        low = re.search(r">=\s*([0-9][^,\s]*)", m.group(2)) if m else None
        if low is None:
            raise SystemExit(f"pyproject.toml: dependency {dep!r} has no lower bound; expected name>=version")
        pins.append(f"{m.group(1)}=={low.group(1)}")
    return pins


def core_files() -> list[str]:
    """The test files marked ``core`` (tests/conftest.py's ``CORE_TESTS``)."""
    return [str(REPO / "tests" / name) for name in sorted(CORE_TESTS)]


def main(name: str) -> int:
    if name not in PINS:
        print(f"ranges: expected one of {', '.join(PINS)}, got {name!r}", file=sys.stderr)
        return 2
    venv = REPO / "build" / f"ranges-{name}"
    constraints = venv.with_suffix(".txt")
    venv.parent.mkdir(parents=True, exist_ok=True)
    pins = lowest_pins() if PINS[name] is None else PINS[name]
    constraints.write_text("\n".join(pins) + "\n", encoding="utf-8")
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CALIBRANK_ROOT")}
    env["PIP_CONSTRAINT"] = str(constraints)  # instead of the study's lock
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--only-binary",
            ":all:",
            "--upgrade",
            "--force-reinstall",
            "--no-deps",
            f"{REPO}",
        ],
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # drop a stale calibrank first
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"{REPO}[test]"], env=env)
    if done.returncode:
        return done.returncode
    listed = subprocess.run(
        [str(python), "-m", "pip", "freeze"], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    core = {p.split("==")[0].lower() for p in lowest_pins()}
    print(f"ranges {name}: " + " ".join(p for p in listed if p.split("==")[0].lower() in core), flush=True)
    return subprocess.run(
        # only the core's test files: the others import the study at collection
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "core and not slow", *core_files()],
        env=env,
        cwd=REPO,
    ).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
