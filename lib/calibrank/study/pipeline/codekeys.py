"""The code each step of the graph of runs reaches, as a small file per step that the workflow reads.

A step's key (:func:`calibrank.study.codekey.code_hash`) covers what the step runs: a notebook's code cells or
``python -m calibrank.study.pipeline.train``, and, for a step of one ranker, that ranker's training and scoring code
from the same roots as its model key (its ``fit``, ``predict``, ``_train``, ``_timed_logits`` and its loss
function). Code chosen at run time is not followed from the rest: the loss functions
(:mod:`calibrank.study.model.losses`) and the table of ranker classes (``calibrank.study.model.rankers:ranker_class``, which imports them by name), so a
step of ``bert`` does not reach the focal loss. :func:`write` rewrites ``runs/<profile>/code/<step>.key``
only when the key changes: its mtime, which snakemake and :mod:`calibrank.study.pipeline.schedule` compare with
the step's outputs, moves only then (an edit to a comment reruns nothing). The workflow and the estimate
call :func:`calibrank.study.pipeline.schedule.refresh_code`, which runs ``python -m calibrank.study.pipeline.codekeys
PROFILE`` only when a source file, notebook or params file changed since the keys were last written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from calibrank.atomic import atomic_path
from calibrank.study import codekey
from calibrank.study.model.rankers import ranker_from_config
from calibrank.study.paths import project_root
from calibrank.study.pipeline.grid import INDEX, Step, code_path
from calibrank.study.pipeline.grid import steps as grid_steps
from calibrank.study.pipeline.schedule import code_sources
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.config import load_config
from calibrank.study.settings.schema import Config

__all__ = ["step_keys", "write", "main"]

_OPAQUE = ("calibrank.study.model.losses",)
_RANKERS = "calibrank.study.model.rankers:ranker_class"
_METHODS = ("fit", "fit_member", "predict", "predict_many", "_train", "_timed_logits")


def _notebook_code(path: Path) -> str:
    """The code cells of a notebook, one script (empty when the notebook is missing)."""
    if not path.exists():
        return ""
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    return "\n".join(
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c.get("cell_type") == "code"
    )


def _ranker_roots(cfg: Config, ranker: str) -> list:
    """The roots of a ranker's model key: its training and scoring members and its loss function."""
    r = ranker_from_config(cfg, ranker, models_dir=Path("unused"), device="cpu")
    loss = r.training_loss()
    return [(type(r), m) for m in _METHODS if hasattr(type(r), m)] + ([loss] if loss is not None else [])


def step_keys(cfg: Config, steps: Sequence[Step], notebooks: Path) -> dict[str, str]:
    """``{step name: key}`` for ``steps`` and the index (:data:`calibrank.study.pipeline.grid.INDEX`); ``notebooks``: the
    folder of the notebooks they run."""
    keys, rankers = {}, {}
    for step in steps:
        ranker = step.model.ranker if step.model else step.parameters.get("ranker")
        if step.model:
            roots = ["calibrank.study.pipeline.train"]
        else:
            roots = [
                codekey.source_module(
                    "calibrank", f"<notebook {step.notebook}>", _notebook_code(notebooks / f"{step.notebook}.ipynb")
                )
            ]
        if ranker:
            roots += rankers.setdefault(ranker, _ranker_roots(cfg, ranker))
        keys[step.name] = codekey.code_hash(*roots, opaque=(*_OPAQUE, *([_RANKERS] if ranker else [])))
    keys[INDEX] = codekey.code_hash("calibrank.study.pipeline.report", opaque=_OPAQUE)
    return keys


def _write(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it holds it already; True when written."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except OSError:
        pass
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return True


def write(cfg: Config, notebooks: Path) -> list[str]:
    """Compute every step's key and write the key files whose key changed, then the sources' stamp
    (:func:`calibrank.study.pipeline.schedule.code_sources`); the names whose key changed."""
    root, steps = project_root(), grid_steps(cfg)
    sources = code_sources(cfg, notebooks)  # before reading them: a file edited meanwhile is read again next time
    keys = step_keys(cfg, steps, notebooks)
    changed = [name for name, key in keys.items() if _write(root / code_path(cfg.profile, name), key + "\n")]
    _write(root / code_path(cfg.profile, INDEX).parent / ".sources", sources)
    return changed


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.study.pipeline.codekeys PROFILE [--notebooks DIR]``: bring the profile's code keys up to date."""
    p = argparse.ArgumentParser(
        prog="python -m calibrank.study.pipeline.codekeys", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("profile", help="params/<profile>.yaml")
    p.add_argument(
        "--notebooks", type=Path, help="the folder of the notebooks (default: notebooks/ of the project root)"
    )
    a = p.parse_args(argv)
    try:
        cfg = load_config(a.profile)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    write(cfg, a.notebooks if a.notebooks is not None else project_root() / "notebooks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
