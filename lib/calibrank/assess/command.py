"""One assessment from its options to its folder: the inputs read, the calibrator fitted, the page written.

:func:`run` returns the :class:`~calibrank.assess.engine.Assessment` (the notebook and the Python
API stop there); :func:`report` also writes ``index.html``, ``calibrator.json`` and
``tables/*.csv`` into the report folder, whole or not at all (:func:`calibrank.assess.publish.publish`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from .engine import Assessment, assess
from .load import Inputs, load
from .options import Options
from .page import render
from .publish import publish

__all__ = ["report", "run"]


def run(options: Options) -> tuple[Assessment, Inputs]:
    """Read the inputs of ``options`` and assess them."""
    inputs = load(**options.inputs())
    return assess(inputs.test, inputs.valid, notes=inputs.notes, inputs=options.validation_files(),
                  **options.fitting()), inputs


def report(options: Options) -> Path:
    """:func:`run`, then the report folder at ``options.out``; returns its ``index.html``."""
    assessment, inputs = run(options)
    paths = [p for p in (*options.run, *options.valid_run, options.qrels, options.valid_qrels, options.table,
                         options.valid_table, options.checkpoint, options.queries, options.valid_queries) if p]
    shown = {k: (Path(v).name if isinstance(v, str) and k in ("qrels", "valid_qrels", "table", "valid_table",
                                                               "checkpoint", "queries", "valid_queries", "out")
                 else [Path(x).name for x in v] if k in ("run", "valid_run") else v)
             for k, v in asdict(options).items()}
    page = render(assessment, name=options.name, notes=inputs.notes, paths=paths, options=shown)

    def write(folder: Path) -> None:
        assessment.save(folder / "tables")
        assessment.calibrator.save(folder / "calibrator.json")
        (folder / "index.html").write_text(page, encoding="utf-8")

    return publish(options.out, write) / "index.html"
