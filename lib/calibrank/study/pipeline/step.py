"""Run one notebook step of the workflow: ``python -m calibrank.study.pipeline.step PROFILE STEP``.

The step's notebook (:func:`calibrank.study.pipeline.grid.steps`: its parameters, its executed notebook) runs under
papermill into a temporary name that holds this process's id (:func:`calibrank.atomic.owner_tag`), renamed into
place when every cell ran. Before it runs: the temporary files of writers that died are swept
(:func:`calibrank.study.locks.sweep_temp`), and every model the step loads must be the one its training step wrote
(:func:`calibrank.study.pipeline.grid.loaded_model_problem`): a notebook step never trains a model.

A step that fails keeps what papermill executed beside its notebook, ``<step>.failed.ipynb`` (snakemake removes the
outputs of a failed step, and a temporary file would be swept), and says why on one line, last: a damaged or missing
input (:data:`INPUT_ERRORS`: the message names the file and the command that makes it again) as that line alone, any
other error after the traceback of the cell that raised it. Exit status 0, 1 (the notebook failed) or 2 (the step
cannot run: a model it loads is missing, an unknown step).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import traceback
from pathlib import Path

import papermill

from calibrank.atomic import owner_tag
from calibrank.study.locks import sweep_temp
from calibrank.study.paths import project_root
from calibrank.study.pipeline.grid import Step, loaded_model_problem, steps
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.config import load_config

__all__ = ["INPUT_ERRORS", "failed_path", "run_step", "main"]

#: The errors that say an input is missing or damaged, each with a message of one line that names the file and a
#: command that makes it again (:mod:`calibrank.study.data.querysets`, :mod:`calibrank.study.analysis.exports`, the
#: model cache's records): shown alone, without the traceback that carried them out of the notebook.
INPUT_ERRORS = ("DataError", "MissingStepError", "TableFileError", "DigestMismatch", "ConfigError")

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class StepError(RuntimeError):
    """The step cannot run or its notebook failed; the message is the one line to print."""

    def __init__(self, message: str, status: int = 1, details: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.details = details


def failed_path(profile: str, step: str) -> Path:
    """``reports/<profile>/<step>.failed.ipynb``: what papermill executed of a step that failed."""
    return project_root() / "reports" / profile / f"{step}.failed.ipynb"


def _one_line(text: str) -> str:
    return " ".join(_ANSI.sub("", str(text)).split())


def run_step(profile: str, name: str, *, notebooks: str | os.PathLike | None = None) -> Path:
    """Run the notebook step ``name`` of ``profile`` (module docstring); return its executed notebook.

    Raises :class:`StepError` with the line to print when it cannot run or its notebook fails.
    """
    cfg = load_config(profile)
    found = {s.name: s for s in steps(cfg) if s.notebook}
    if name not in found:
        raise StepError(
            f"step {name!r}: not a notebook step of profile {profile!r} "
            f"(python -m calibrank.study.pipeline.grid steps {profile} lists them)",
            2,
        )
    step: Step = found[name]
    problem = loaded_model_problem(cfg, step)
    if problem is not None:
        raise StepError(f"{name}: {problem}", 2)
    root = project_root()
    folder = Path(notebooks) if notebooks is not None else root / "notebooks"
    dest = root / step.outputs[0]
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_temp(dest.parent)
    tmp = dest.with_name(f".tmp-{name}.{owner_tag()}.ipynb")
    failed = failed_path(profile, name)

    try:
        papermill.execute_notebook(
            str(folder / f"{step.notebook}.ipynb"),
            str(tmp),
            parameters=step.parameters,
            cwd=str(folder),
            log_output=True,
            progress_bar=False,
        )
    except Exception as exc:  # the notebook failed (a cell raised, the kernel died): keep what ran
        failed.unlink(missing_ok=True)
        if tmp.exists():
            os.replace(tmp, failed)
        kept = f" (the notebook as it ran: {failed.relative_to(root)})" if failed.exists() else ""
        if not isinstance(exc, papermill.PapermillExecutionError):
            raise StepError(
                f"{name}: {type(exc).__name__}: {_one_line(exc)}{kept}", details=traceback.format_exc()
            ) from None
        if exc.ename in INPUT_ERRORS:
            raise StepError(f"{name}: {_one_line(exc.evalue)}{kept}") from None
        raise StepError(
            f"{name}: {exc.ename}: {_one_line(exc.evalue)} (cell {exc.exec_count}){kept}",
            details=_ANSI.sub("", "\n".join(exc.traceback or [])),
        ) from None
    except BaseException:  # interrupted: nothing kept
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, dest)
    failed.unlink(missing_ok=True)
    return dest


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.study.pipeline.step PROFILE STEP [--notebooks DIR]`` (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m calibrank.study.pipeline.step", description=__doc__.split("\n\n")[0])
    p.add_argument("profile", help="params/<profile>.yaml")
    p.add_argument("step", help="a notebook step of the profile, e.g. 04_calibration or 03_train-bert-chitchat")
    p.add_argument(
        "--notebooks", type=Path, help="the folder of the notebooks (default: notebooks/ of the project root)"
    )
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # papermill's lines and the cells' output
    try:
        run_step(a.profile, a.step, notebooks=a.notebooks)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StepError as exc:
        if exc.details:
            print(exc.details, file=sys.stderr)
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return exc.status
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
