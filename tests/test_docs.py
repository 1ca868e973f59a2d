"""The public API's docstrings: each has an example that runs, and the API page builds without a warning.

The page is what ``make docs`` builds (the Makefile's ``DOC_MODULES``), with pdoc's warnings as errors.
"""

from __future__ import annotations

import doctest
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PUBLIC = {
    "calibrank.assess.deploy.calibrator": [
        "Calibrator",
        "Calibrator.predict_proba",
        "Calibrator.keep",
        "Calibrator.confidence",
        "Calibrator.abstain",
        "Calibrator.shortlist",
        "Calibrator.save",
        "Calibrator.load",
        "Calibrator.to_dict",
        "Calibrator.from_dict",
    ],
    "calibrank.assess.deploy.fit": ["fit_calibrator"],
    "calibrank.assess.deploy.certify": ["certify"],
    "calibrank.assess.deploy.watch": ["shift_test", "estimate", "Fingerprint", "query_summaries"],
    "calibrank.assess.engine": ["assess", "Assessment"],
    "calibrank.assess.options": ["Options", "Settings"],
    "calibrank.assess.api": ["fit", "evaluate", "Report"],
    "calibrank.assess.command": ["run", "report"],
    "calibrank.assess.read.trec": ["read_runs", "read_qrels"],
    "calibrank.assess.read.score_tables": [
        "read_table",
        "from_dataframe",
        "from_ranx",
        "from_arrays",
        "from_ir_measures",
    ],
    "calibrank.assess.read.load": ["load"],
    "calibrank.assess.read.scored": ["ScoredRun"],
    "calibrank.assess.read.rows": ["Qrels"],
    "calibrank.metrics.calibration": [
        "ece",
        "ece_debiased",
        "mce",
        "brier",
        "nll",
        "calibration_metrics",
        "reliability_curve",
    ],
    "calibrank.metrics.ranking": [
        "recall_at_k",
        "average_precision",
        "ndcg_at_k",
        "reciprocal_rank",
        "rank_of_relevant",
        "per_query_ranking",
        "ranking_metrics",
    ],
}


def doc_modules() -> list[str]:
    """The Makefile's ``DOC_MODULES`` (continuation lines joined)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    found = re.search(r"^DOC_MODULES\s*:?=(.*)$", text, re.MULTILINE)
    assert found, "Makefile: no DOC_MODULES line (the modules of `make docs`)"
    return found.group(1).split()


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_examples_run(module):
    mod = importlib.import_module(module)
    tests = {t.name.removeprefix(f"{module}."): t for t in doctest.DocTestFinder().find(mod)}
    missing = [name for name in PUBLIC[module] if name not in tests or not tests[name].examples]
    assert not missing, f"{module}: no Examples in the docstring of {missing}"
    report: list[str] = []
    runner = doctest.DocTestRunner()
    for test in tests.values():
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def test_documented_modules_are_built():
    modules = doc_modules()
    assert "calibrank" in modules
    assert set(PUBLIC) - {"calibrank.assess.read.rows"} <= set(modules)


def test_api_page_builds_without_warnings(tmp_path):
    out = tmp_path / "docs"
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-m", "pdoc", "--docformat", "numpy", "-o", str(out), *doc_modules()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = out / "calibrank" / "assess" / "deploy" / "calibrator.html"
    assert page.is_file(), sorted(p.name for p in out.rglob("*.html"))
    html = page.read_text(encoding="utf-8")
    assert 'id="Calibrator.predict_proba"' in html
    assert '<h6 id="examples">Examples</h6>' in html  # numpydoc sections rendered, not shown as plain text
