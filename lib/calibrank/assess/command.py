"""One assessment from its options to its folder: the inputs read, the calibrator fitted, the page written.

:func:`run` returns the :class:`~calibrank.assess.engine.Assessment` (the notebook and the Python
API stop there); :func:`report` also writes ``index.html``, ``calibrator.json`` and
``tables/*.csv`` into the report folder, whole or not at all (:func:`calibrank.assess.page.publish.publish`).
"""

from __future__ import annotations

from pathlib import Path

from calibrank.assess.engine import Assessment, assess
from calibrank.assess.options import Options
from calibrank.assess.page.publish import publish
from calibrank.assess.page.render import render
from calibrank.assess.read.load import Inputs, load

__all__ = ["report", "run"]


def run(options: Options) -> tuple[Assessment, Inputs]:
    """Read the inputs of ``options`` and assess them, writing nothing.

    What ``calibrank assess`` does short of the report folder: :func:`calibrank.assess.read.load.load`
    then :func:`calibrank.assess.engine.assess`, with the validation files hashed into the
    calibrator's provenance.

    Parameters
    ----------
    options : Options
        The checked options of one assessment.

    Returns
    -------
    assessment : Assessment
        Every table and the fitted calibrator.
    inputs : Inputs
        The test and validation runs as read, with notes on how they were split and judged.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> tmp = tempfile.TemporaryDirectory()
    >>> table = pathlib.Path(tmp.name, "scores.csv")
    >>> rng = np.random.default_rng(0)
    >>> rows = [f"q{q},d{c},{3 * (c == 0) + rng.normal():.4f},{int(c == 0)}" for q in range(80) for c in range(10)]
    >>> _ = table.write_text("qid,docid,score,label\\n" + "\\n".join(rows) + "\\n")
    >>> assessment, inputs = run(Options(table=str(table), n_resamples=50))
    >>> len(inputs.valid.qids), len(inputs.test.qids)                   # a seeded half each
    (40, 40)
    >>> assessment.calibrator.fitted_on["inputs"][0]["file"]
    'scores.csv'
    >>> tmp.cleanup()
    """
    inputs = load(**options.inputs())
    return assess(
        inputs.test, inputs.valid, options.settings(), notes=inputs.notes, inputs=options.validation_files()
    ), inputs


def report(options: Options) -> Path:
    """Assess the inputs of ``options`` and write the report folder at ``options.out``.

    The folder holds ``index.html`` (the page), ``calibrator.json`` (what to deploy) and
    ``tables/*.csv``; it is written whole or not at all, so a failed run never leaves half a
    report.

    Parameters
    ----------
    options : Options
        The checked options of one assessment (``options.out``: the folder).

    Returns
    -------
    Path
        The report's ``index.html``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> tmp = tempfile.TemporaryDirectory()
    >>> table = pathlib.Path(tmp.name, "scores.csv")
    >>> rng = np.random.default_rng(0)
    >>> rows = [f"q{q},d{c},{3 * (c == 0) + rng.normal():.4f},{int(c == 0)}" for q in range(80) for c in range(10)]
    >>> _ = table.write_text("qid,docid,score,label\\n" + "\\n".join(rows) + "\\n")
    >>> page = report(Options(table=str(table), n_resamples=50, out=f"{tmp.name}/report"))
    >>> sorted(p.name for p in page.parent.iterdir())
    ['calibrator.json', 'index.html', 'tables']
    >>> tmp.cleanup()
    """
    name, out = options.name, options.out
    if name is None or out is None:  # Options fills both where it is built (Options._check_name)
        raise TypeError("options: expected Options with its name and out filled in")
    assessment, inputs = run(options)
    page = render(assessment, name=name, notes=inputs.notes, paths=options.input_files())

    def write(folder: Path) -> None:
        assessment.save(folder / "tables")
        assessment.calibrator.save(folder / "calibrator.json")
        (folder / "index.html").write_text(page, encoding="utf-8")

    return publish(out, write) / "index.html"
