"""One run of a profile's workflow at a time, and a run that follows a killed one recovers by itself.

    python -m calibrank.study.pipeline.launch PROFILE --started EPOCH [--estimate --jobs J --cores C] -- SNAKEMAKE...

``make report`` and ``make nb-STEP`` run snakemake through this. It first takes the profile's run lock
(:func:`calibrank.study.locks.run_lock_path`, a lock the kernel releases when its holder dies) without waiting:
while another run of the profile is alive, one line says so, with its process id, and the exit status is 2; nothing
was written (the estimate, ``eta.json``, included). Holding it, it removes what a killed run left: snakemake's lock
files whose owner is dead (:func:`calibrank.study.locks.stale_lock_files`), with ``snakemake --unlock`` when no
writer at all is alive in the project root, one line saying so. Then ``--estimate`` runs
:mod:`calibrank.study.pipeline.eta` (an estimate that cannot be made is said and the run goes on), and snakemake runs
with ``CALIBRANK_RUN_START`` set, for the progress lines; the exit status is snakemake's. A model removed from the
cache since its training step ran (:func:`calibrank.study.pipeline.grid.stale_markers`) is said on one line and its
training step is forced (``--forcerun``): it runs again, and so does every step after it that the run asks for, so
that no notebook step finds the model missing.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from calibrank.study.locks import LockHeld, exclusive, holder, lock_profiles, run_lock_path, stale_lock_files
from calibrank.study.paths import project_root
from calibrank.study.pipeline import grid

__all__ = ["WorkflowLocked", "recover", "launch", "main"]

PROG = "python -m calibrank.study.pipeline.launch"


class WorkflowLocked(LockHeld):
    """Snakemake's lock names the profile's files and a live process may own it; the message names that process."""


def recover(root: Path, profile: str, snakemake: Sequence[str]) -> str | None:
    """Remove snakemake's lock files in ``root`` that a dead run left; the line that says what was done, or None when
    there was nothing to do. Called while holding the run lock of ``profile``.

    No writer alive: ``snakemake --unlock`` (the command ``snakemake`` with ``--unlock``) removes them all. Writers
    alive (another profile's run): the files of dead runs only. A file of this profile that a live writer may own
    (a snakemake working in the root that names no profile, or this one) is a :class:`LockHeld` naming it."""
    stale, live = stale_lock_files(root)
    files = [f for f in stale if f.exists()]
    if not live and files:
        done = subprocess.run([*snakemake, "--unlock"], cwd=root, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"snakemake --unlock failed (exit {done.returncode}): {(done.stderr or done.stdout)[-2000:]}"
            )
        return (
            f"workflow: the lock of snakemake was left by a run that died ({len(files)} lock files, no writer alive "
            f"in {root}); unlocked it"
        )
    for path in files:
        path.unlink(missing_ok=True)
    kept = [f for f in (root / ".snakemake" / "locks").glob("*.lock") if profile in lock_profiles(f, root)]
    if kept:
        owner = next((w for w in live if w.profile in (None, profile)), live[0])
        raise WorkflowLocked(
            f"the workflow's lock ({kept[0].relative_to(root)}) names this profile's files and "
            f"{owner.what}, process {owner.pid}, is working in {root}: wait for it to finish, or stop it"
        )
    if files:
        return f"workflow: removed {len(files)} lock files of snakemake runs that died (other runs are alive)"
    return None


def _force_stale_models(profile: str, snakemake: Sequence[str]) -> list[str]:
    """``snakemake`` with ``--forcerun`` of the training step of each model whose folder was removed (before
    ``--config``, which takes every word after it), each said on one line."""
    stale = grid.stale_markers(profile)
    for name, folder in stale:
        shown = folder.relative_to(project_root()) if folder.is_relative_to(project_root()) else folder
        print(
            f"workflow: train-{name}: {shown} holds no trained model any more; its training step runs again",
            file=sys.stderr,
            flush=True,
        )
    if not stale:
        return list(snakemake)
    at = snakemake.index("--config") if "--config" in snakemake else len(snakemake)
    return [*snakemake[:at], "--forcerun", *(f"train-{name}" for name, _ in stale), *snakemake[at:]]


def _run(command: Sequence[str], env: dict[str, str]) -> int:
    """Run ``command`` as a child and wait for it: an interrupt from the terminal reaches it (the same process group)
    and this process waits for it to stop; a termination sent to this process alone is passed on."""
    child = subprocess.Popen(list(command), env=env)

    def forward(signum, _frame):
        child.send_signal(signum)

    previous = {
        sig: signal.signal(sig, handler)
        for sig, handler in ((signal.SIGINT, signal.SIG_IGN), (signal.SIGTERM, forward), (signal.SIGHUP, forward))
    }
    try:
        status = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status if status >= 0 else 128 - status


def launch(profile: str, snakemake: Sequence[str], *, started: float, estimate: dict | None = None) -> int:
    """Run ``snakemake`` for ``profile`` holding its run lock (module docstring); the exit status."""
    root = project_root()
    if not snakemake:
        print(f"{PROG}: no snakemake command after --", file=sys.stderr)
        return 2
    lock = run_lock_path(root, profile)
    try:
        with exclusive(root / "runs" / profile / "workflow", what=f"the run of {profile}", wait=False):
            line = recover(root, profile, snakemake)
            if line:
                print(line, file=sys.stderr, flush=True)
            snakemake = _force_stale_models(profile, snakemake)
            env = dict(os.environ, CALIBRANK_RUN_START=f"{started:.0f}")
            if estimate is not None:
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "calibrank.study.pipeline.eta",
                        profile,
                        "--jobs",
                        str(estimate["jobs"]),
                        "--cores",
                        str(estimate["cores"]),
                        "--started",
                        f"{started:.0f}",
                    ],
                    env=env,
                    check=False,
                )  # an estimate that cannot be made is said; the run goes on
            return _run(snakemake, env)
    except WorkflowLocked as exc:
        print(f"workflow: {exc}", file=sys.stderr)
        return 2
    except LockHeld:
        found = holder(lock)
        who = (
            f"process {found[0]} on {found[1]}, since {found[2]}" if found else "a process that has not said which yet"
        )
        stop = f" (kill {found[0]})" if found else ""
        print(
            f"workflow: a run of profile {profile} is already running ({who}); wait for it to finish, or stop it{stop}",
            file=sys.stderr,
        )
        return 2


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.study.pipeline.launch PROFILE --started EPOCH [--estimate --jobs J --cores C] -- CMD...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[args.index("--") + 1 :] if "--" in args else []
    own = args[: args.index("--")] if "--" in args else args
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("profile", help="params/<profile>.yaml")
    p.add_argument("--started", type=float, required=True, help="when the run started, seconds since the epoch")
    p.add_argument("--estimate", action="store_true", help="estimate the run's time first (eta.json)")
    p.add_argument("--jobs", type=int, default=1, help="steps side by side (for the estimate)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores of this machine (for the estimate)")
    a = p.parse_args(own)
    return launch(
        a.profile, command, started=a.started, estimate={"jobs": a.jobs, "cores": a.cores} if a.estimate else None
    )


if __name__ == "__main__":
    raise SystemExit(main())
