"""The Makefile's graph for ``make report PROFILE=smoke``, read from a dry run (``make -n``) in a throw-away root.

``report``'s recipe calls ``$(MAKE)`` (setup, then ``-j index``), so make runs that recipe line even under ``-n``
(with ``-n`` passed down to the sub-makes, which only print). The line also runs ``python -m calibrank.eta``, which
times training steps: here ``BIN`` (the Makefile's ``.venv/bin``) points to a folder whose ``python`` is the
project's except for ``-m calibrank.eta``, so the dry run executes nothing but the Makefile's own queries
(``calibrank.config``, ``calibrank.grid``, ``calibrank.runs``) and ``calibrank.config check``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OLD = (946684800, 946684800)  # 2000-01-01: older than the .venv's install stamp


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """(root, stdout) of ``make -n report PROFILE=smoke`` in a root with the Makefile, params and notebooks only."""
    root = tmp_path_factory.mktemp("make-graph") / "project"
    root.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        (root / name).write_bytes((REPO / name).read_bytes())
        os.utime(root / name, OLD)
    for folder in ("params", "notebooks"):
        (root / folder).mkdir()
        for f in (REPO / folder).iterdir():
            (root / folder / f.name).write_bytes(f.read_bytes())
            os.utime(root / folder / f.name, OLD)
    (root / ".venv").symlink_to(REPO / ".venv")
    stub = root.parent / "bin"
    stub.mkdir()
    (stub / "python").write_text('#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "calibrank.eta" ]; then exit 0; fi\n'
                                 f'exec "{REPO / ".venv" / "bin" / "python"}" "$@"\n')
    (stub / "python").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k not in ("PROFILE", "DATASET", "JOBS")}
    proc = subprocess.run(["make", "--no-print-directory", "-n", "report", "PROFILE=smoke", f"BIN={stub}"], cwd=root,
                          env=dict(env, CALIBRANK_ROOT=str(root)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root, proc.stdout


def _query(root: Path, module: str, *args: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, check=True,
                         env=dict(os.environ, CALIBRANK_ROOT=str(root))).stdout
    return out.split()


def _notebook_runs(dry: str) -> list[tuple[str, str]]:
    """(notebook, step) of each papermill run the dry run lists, in its order."""
    runs = []
    for m in re.finditer(r"tmp=reports/smoke/\.tmp-([\w-]+)\.pid.*?papermill notebooks/(\w+)\.ipynb \"\$tmp\"", dry, re.S):
        runs.append((m.group(2), m.group(1)))
    return runs


def test_report_runs_each_notebook_once_and_notebook_03_once_per_training_run(dry_run):
    root, dry = dry_run
    runs = _notebook_runs(dry)
    assert len(runs) == dry.count("papermill notebooks/")  # every papermill line was matched
    per_notebook = Counter(nb for nb, _ in runs)
    train_runs = _query(root, "calibrank.config", "train-runs", "smoke")
    # 09_assess runs on a user's run (make assess), not in the study's report
    notebooks = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb") if p.stem != "09_assess")
    assert notebooks == ["01_data", "02_negatives", "03_train", "04_calibration", "05_risk_aware", "06_nota",
                         "07_efficiency", "08_beyond"]
    assert per_notebook == {**{nb: 1 for nb in notebooks}, "03_train": len(train_runs)}
    assert sorted(step for nb, step in runs if nb == "03_train") == sorted(f"03_train-{r}" for r in train_runs)
    assert all(step == nb for nb, step in runs if nb != "03_train")
    for run in train_runs:  # each 03 run gets its own parameters
        assert f"calibrank.config run-params smoke {run})" in dry
    # data flow: 01 before 02 before every 03 run before the analyses; 07 (timings) after every other notebook
    order = [step for _, step in runs]
    assert order[:2] == ["01_data", "02_negatives"]
    assert set(order[2:2 + len(train_runs)]) == {f"03_train-{r}" for r in train_runs}
    assert set(order[2 + len(train_runs):]) == {"04_calibration", "05_risk_aware", "06_nota", "08_beyond", "07_efficiency"}
    assert order[-1] == "07_efficiency"


def test_report_trains_each_further_ensemble_member_as_its_own_step(dry_run):
    root, dry = dry_run
    members = [m for tok in _query(root, "calibrank.grid", "members", "smoke") for m in tok.split("=")[1].split(",")]
    assert members  # the smoke profile has an ensemble
    listed = re.findall(r"calibrank\.grid train smoke ensemble (\w+) --seed (\d+) --member (\d+)", dry)
    assert sorted(f"ensemble-{c}-seed{s}-member{m}" for c, s, m in listed) == sorted(members)


def test_report_converts_every_step_to_html_and_ends_with_the_index(dry_run):
    root, dry = dry_run
    train_runs = _query(root, "calibrank.config", "train-runs", "smoke")
    steps = {step for _, step in _notebook_runs(dry)}
    html = re.findall(r"jupyter nbconvert --log-level WARN --to html reports/smoke/([\w-]+)\.ipynb", dry)
    assert Counter(html) == Counter(steps) and len(html) == 7 + len(train_runs)
    assert dry.count("-m calibrank.report smoke") == 1
    index = dry.index("-m calibrank.report smoke")
    assert all(m.start() < index for m in re.finditer(r"jupyter nbconvert", dry))  # the index comes after every page
    # report: setup, the profile check, the estimate, then the graph above as `index`, in parallel
    assert re.search(r"calibrank\.config check smoke && \\\n\{ \S+ -m calibrank\.eta smoke --jobs \d+", dry)
    assert re.search(r"make --no-print-directory -j\d+ index PROFILE=smoke JOBS=\d+", dry)


def test_a_dry_run_makes_nothing_but_the_makefiles_own_list_of_predictions(dry_run):
    root, _ = dry_run
    inputs = {"Makefile", "pyproject.toml", "constraints.txt", ".venv"} | {f"{d}/{f.name}" for d in ("params", "notebooks")
                                                                         for f in (REPO / d).iterdir()}
    files = set()
    for folder, dirs, names in os.walk(root):  # never into the .venv link
        files |= {str((Path(folder) / n).relative_to(root)) for n in names + [d for d in dirs if d == ".venv"]}
    # make remakes the makefiles it includes even under -n: the cached Predictions list of the profile
    assert files - inputs == {"build/make/predictions-smoke.mk"}


def _make_elsewhere(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k not in ("PROFILE", "DATASET", "JOBS")}
    return subprocess.run(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "-n", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_make_from_another_folder_says_where_to_run_it(tmp_path):
    """`make -f <checkout>/Makefile` from another folder would write .venv, runs/ and reports/ there: an error
    names the command that runs it in the checkout, before anything is read or written."""
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "elsewhere.yaml").write_text("profile: elsewhere\n")
    for goal in ("report", "test"):
        bad = _make_elsewhere(tmp_path, goal, "PROFILE=smoke")
        assert bad.returncode != 0
        assert f"run make in the checkout: make -C {REPO} {goal}" in bad.stderr
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["elsewhere.yaml", "params"]
