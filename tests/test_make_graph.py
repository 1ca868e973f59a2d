"""The Makefile: the user's goals and the checks of their arguments (the graph of runs is ``workflow/Snakefile``).

Read from dry runs (``make -n``) in a throw-away root holding the Makefile, params, notebooks and workflow/ with
the installed ``.venv``: ``make report`` checks the profile, estimates, then runs snakemake on every core with the
thread policy below; ``make test`` runs the unit tests and every notebook step under nbval in a root of its own; a
value that is not a known name is refused before anything runs it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
OLD = (946684800, 946684800)  # 2000-01-01: older than the .venv's install stamp


@pytest.fixture
def make_root(tmp_path) -> Path:
    """A project root for ``make``: the Makefile, params, notebooks, workflow/ and the installed .venv, nothing made."""
    root = tmp_path / "project"
    root.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, root / name)
        os.utime(root / name, OLD)
    for folder in ("params", "notebooks", "workflow"):
        shutil.copytree(REPO / folder, root / folder)
    # the checkout's .venv, or the one running the tests (a second checkout of the same project has none of its own)
    (root / ".venv").symlink_to(REPO / ".venv" if (REPO / ".venv").is_dir() else Path(sys.prefix))
    return root


def _env(root: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MAKE") and k not in ("PROFILE", "DATASET", "REPORT_JOBS")
    }
    return dict(env, CALIBRANK_ROOT=str(root))


def _make(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *args], cwd=root, env=_env(root), capture_output=True, text=True, timeout=120
    )


def _files(root: Path) -> set[str]:
    out = set()
    for folder, dirs, names in os.walk(root):  # never into the .venv link
        out |= {str((Path(folder) / n).relative_to(root)) for n in names + [d for d in dirs if d == ".venv"]}
    return out


@pytest.mark.parametrize(
    "args, jobs", [(["PROFILE=smoke"], None), (["PROFILE=smoke", "REPORT_JOBS=1"], 1), (["PROFILE=paper"], 1)]
)
def test_report_checks_the_profile_estimates_and_runs_snakemake(make_root, args, jobs):
    before = _files(make_root)
    proc = _make(make_root, "-n", "report", *args)
    assert proc.returncode == 0, proc.stderr
    profile = args[0].split("=")[1]
    cores = int(subprocess.run(["nproc"], env=_env(make_root), capture_output=True, text=True, check=True).stdout)
    jobs = jobs or min(cores, 4)  # steps side by side: the cores up to 4; the paper profile one at a time
    threads = max(1, cores // jobs)
    lines = proc.stdout.splitlines()
    assert lines[0] == f".venv/bin/python -m calibrank.study.settings.config check {profile}"
    # snakemake runs under the launcher, which holds the profile's run lock, recovers the lock of a killed run and
    # estimates the run's time first (an estimate that cannot be made never stops the run)
    launch, snakemake = lines[1].split(" -- ")
    assert re.fullmatch(
        rf"\.venv/bin/python -m calibrank\.study\.pipeline\.launch {profile} --started \d+ --estimate "
        rf"--jobs {jobs} --cores {cores}",
        launch,
    )
    assert snakemake == (
        f".venv/bin/snakemake -s workflow/Snakefile --workflow-profile workflow/profiles/local "
        f"--cores {cores} --config profile={profile} threads={threads}"
    )
    assert len(lines) == 3 and lines[2].startswith('echo "report: reports/')
    assert _files(make_root) == before  # a dry run runs nothing


@pytest.mark.parametrize(
    "value", ["smoke $(touch x)", "smoke;touch x", "$(shell touch x)", "smoke $$(touch x)", "../smoke", "nosuch", "%"]
)
def test_make_refuses_a_profile_or_dataset_that_is_not_a_known_name(make_root, value):
    proc = _make(make_root, "-n", "report", f"PROFILE={value}")
    assert proc.returncode != 0 and "PROFILE: expected one of " in proc.stderr and proc.stdout == ""
    listed = proc.stderr.split("expected one of ", 1)[1].split(" (params", 1)[0].split()
    assert sorted(listed) == sorted(p.stem for p in (REPO / "params").glob("*.yaml"))
    proc = _make(make_root, "-n", "data", f"DATASET={value}")
    assert proc.returncode != 0 and "DATASET: expected one of msdialog mantis udc_dstc8" in proc.stderr
    assert not (make_root / "x").exists()


@pytest.mark.parametrize("value", ["0", "1;touch x", "$(shell touch x)", "2 3", "-1"])
def test_make_refuses_report_jobs_that_is_not_a_whole_number(make_root, value):
    proc = _make(make_root, "-n", "report", "PROFILE=smoke", f"REPORT_JOBS={value}")
    assert proc.returncode != 0 and "REPORT_JOBS: expected a whole number of at least 1" in proc.stderr
    assert not (make_root / "x").exists()


def test_one_step_is_a_snakemake_target_and_its_name_is_checked(make_root):
    proc = _make(make_root, "-n", "nb-03_train-sngp-chitchat", "PROFILE=smoke")
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.splitlines()[-1]
    assert " reports/smoke/03_train-sngp-chitchat.html --cores " in command
    assert command.endswith(" --config profile=smoke threads=" + proc.stdout.split("threads=")[1].split()[0])
    # the command as make runs it, as a snakemake dry run: the step is a target, not a config value
    done = subprocess.run(
        f"{command} -n", shell=True, cwd=make_root, env=_env(make_root), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "03_train-sngp-chitchat" in done.stdout + done.stderr and "07_efficiency" not in done.stdout + done.stderr
    # the step and the steps it reads run one after the other: each takes every core, not cores / jobs
    from test_workflow import _jobs

    cores = int(command.split("--cores ")[1].split()[0])
    jobs = _jobs(done.stdout + done.stderr)
    assert {name: jobs[name]["threads"] for name in jobs if name not in ("html", "all")} == {
        name: cores for name in ("01_data", "02_negatives", "train-sngp-chitchat-seed0", "03_train-sngp-chitchat")
    }
    assert all(f"OMP_NUM_THREADS={cores} " in jobs[name]["shell"] for name in jobs if name not in ("html", "all"))
    for goal in ("nb-x;touch x", "nb-$(shell touch x)"):
        proc = _make(make_root, "-n", goal, "PROFILE=smoke")
        assert proc.returncode != 0 and "a step's name is made of letters, digits, _ and -" in proc.stderr
        assert proc.stdout == "" and not (make_root / "x").exists()


def test_make_report_prints_a_profile_error_first_and_alone(make_root):
    # the .venv is installed and newer than the setup files: `make report` runs no setup here
    assert _make(make_root, "-q", ".venv/.calibrank-installed").returncode == 0
    raw = yaml.safe_load((make_root / "params" / "smoke.yaml").read_text())
    raw["profile"] = "broken"
    raw["training"]["epochz"] = 2
    (make_root / "params" / "broken.yaml").write_text(yaml.safe_dump(raw))
    before = _files(make_root)
    proc = _make(make_root, "report", "PROFILE=broken")
    assert proc.returncode != 0
    assert proc.stdout == ""
    first = proc.stderr.strip().splitlines()[0]
    assert "broken.yaml" in first and "epochz" in first
    assert _files(make_root) == before  # nothing estimated, nothing run


def test_make_test_runs_the_unit_tests_and_every_notebook_step_in_its_own_root(make_root):
    proc = _make(make_root, "-n", "test")
    assert proc.returncode == 0, proc.stderr
    dry = proc.stdout
    assert (
        "rm -rf build/nbval build/test-root && mkdir -p build/nbval build/test-root && cp -r params build/test-root/"
        in dry
    )
    # one prepared notebook per notebook step of the smoke profile (training jobs, "-", are the 03 notebooks' own)
    assert ".venv/bin/python -m calibrank.study.pipeline.grid steps smoke | while read -r step notebook params" in dry
    assert ".venv/bin/papermill --prepare-only notebooks/$notebook.ipynb build/nbval/$step.ipynb $params" in dry
    assert (
        f"CALIBRANK_ROOT={make_root}/build/test-root TQDM_DISABLE=1 .venv/bin/python -m pytest tests build/nbval "
        "--nbval-lax --nbval-current-env -p no:cacheprovider"
    ) in dry


def _make_elsewhere(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and k not in ("PROFILE", "DATASET")}
    return subprocess.run(
        ["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "-n", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


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


def _planned(root: Path, command: str) -> set[str]:
    """The rules a printed snakemake command would run, from its dry run's job stats."""
    done = subprocess.run(
        f"{command} -n", shell=True, cwd=root, env=_env(root), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    stats = done.stdout.split("Job stats:")[1].split("\n\n")[0] if "Job stats:" in done.stdout else ""
    return {line.split()[0] for line in stats.splitlines()[3:] if line.strip() and line.split()[0] != "total"}


def test_the_advice_for_a_damaged_query_set_runs_the_step_that_writes_it(make_root, monkeypatch):
    """A truncated query set's error names a command that makes it again: run as a dry run in a tree where every
    output of 01 and 02 exists and is newer than its inputs, the command plans 02 (``make nb-02_negatives`` alone
    plans nothing there)."""
    import pyarrow.parquet as pq

    from calibrank.study.data import DataError
    from calibrank.study.data.io import write_queries
    from calibrank.study.data.querysets import load_query_set, query_set_specs
    from calibrank.study.pipeline import grid
    from calibrank.study.settings.config import load_config
    from rankfix import learnable_queries

    monkeypatch.setenv("CALIBRANK_ROOT", str(make_root))
    cfg = load_config("smoke")
    spec = query_set_specs(cfg)[0]
    proc = _make(make_root, "-n", "nb-02_negatives", "PROFILE=smoke")
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.splitlines()[-1]
    assert _planned(make_root, command)  # nothing made yet: the first dry run plans (and keys the code)
    # 01 and 02 made, each file newer than what it reads (their code keys, written by the dry run, included)
    stamp = max(p.stat().st_mtime for p in (make_root / "runs" / "smoke" / "code").iterdir())
    for step in grid.steps(cfg)[:2]:
        for out in [*step.outputs, f"reports/smoke/{step.name}.html"]:
            path = make_root / out
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_text("{}")
            stamp += 0.001
            os.utime(path, (stamp, stamp))
    path = write_queries(make_root / grid.steps(cfg)[1].outputs[1], learnable_queries(6, spec.k, seed=0))
    os.utime(path, (stamp, stamp))
    time.sleep(max(0.0, stamp + 0.1 - time.time()))
    assert "02_negatives" not in _planned(make_root, command)  # "Nothing to be done": the old advice does nothing
    pq.write_table(pq.read_table(path).slice(1), path)  # a query dropped: truncated, still a Parquet file
    with pytest.raises(DataError) as err:
        load_query_set(cfg, spec.corpus, spec.split, spec.sampler, spec.k)
    advice = re.search(r"`([^`]+)`\s*$", str(err.value)).group(1)
    assert "nb-02_negatives PROFILE=smoke" in advice
    *before, last = advice.split(" && ")
    for part in before:  # what comes before make runs as it is (removing the damaged file)
        assert subprocess.run(part, shell=True, cwd=make_root, env=_env(make_root), timeout=60).returncode == 0
    assert last.startswith("make ")
    proc = _make(make_root, "-n", *shlex.split(last)[1:])
    assert proc.returncode == 0, proc.stderr
    assert "02_negatives" in _planned(make_root, proc.stdout.splitlines()[-1])
